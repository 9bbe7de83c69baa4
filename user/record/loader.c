// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * BPF loader (see loader.h). Order: open every source's skeleton (the
 * `sources` table), set rodata and map sizes, choose one program per
 * tracepoint, load the first object, reuse its shared maps in the others,
 * load the tracepoint sources, attach, then start the others.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "latsplit/capture.h"
#include "latsplit/events.h"
#include "loader.h"
#include "probe.h"
#include "maps.skel.h"
#include "sched.skel.h"
#include "net.skel.h"
#include "sock.skel.h"
#include "engine.skel.h"
#include "gpu.skel.h"
#include "profile.skel.h"

struct tp {
	const char *name;
	struct bpf_program *btf, *raw;
	unsigned long long source;
	bool required;
	struct bpf_link *link;
};

#define MAX_TPS 16

/* sources[]'s entries */
enum {
	SOURCE_MAPS,
	SOURCE_SCHED,
	SOURCE_TCP,
	SOURCE_SOCK,
	SOURCE_ENGINE,
	SOURCE_GPU,
	SOURCE_PROFILE,
	NSOURCES
};

struct ls_bpf {
	struct maps_bpf *maps; /* the shared maps (bpf/maps.bpf.c) */
	struct sched_bpf *sched;
	struct net_bpf *net;
	struct sock_bpf *sock;
	struct engine_bpf *engine;
	bool engine_ready; /* loaded: files attach as processes map them */
	struct bpf_link *engine_links[10 * LS_PROBE_MAX_FILES];
	int nengine_links;
	struct profile_bpf *profile;
	struct bpf_link *sample_links[LS_MAX_CPUS];
	int nsample_links;
	struct gpu_bpf *gpu;
	bool gpu_ready;
	struct bpf_link *gpu_links[60 * 4];
	int ngpu_links;
	struct bpf_link *sock_links[32];
	int nsock_links;
	/* the tracked_tgids bitmap, mapped on first use (ls_bpf_track_pid) */
	__u64 *tgid_bits;
	bool sys_backups; /* ls_bpf_sys_backups tried */
	bool sock_tp;     /* socket I/O from the socket tracepoints (--sock-hooks) */
	/* uprobes (libssl, libcuda) attach as uprobe_multi links */
	bool multi;
	/* ls_bpf_detach's thread, running (else everything detaches on stop) */
	pthread_t detacher;
	bool detaching;
	/* TLS: 9 links per libssl file (5 entries, 4 returns) */
	struct bpf_link *tls_links[9 * LS_PROBE_MAX_FILES];
	int ntls_links;
	/* every file probes were tried on, by dev/inode, once each */
	struct {
		dev_t dev;
		ino_t ino;
		enum ls_probe_kind kind;
	} probe_files[LS_PROBE_MAX_FILES * LS_PROBE_KINDS];
	int nprobe_files;
	struct ring_buffer *rb;
	struct tp tps[MAX_TPS];
	int ntps;
	unsigned long long sources;
	char missing[512];
	/* each source's load (load_sources): 0, or a negative errno */
	int load_rc[NSOURCES];
};

#define TP(skel, tpname, src, req)                                                         \
	(struct tp)                                                                        \
	{                                                                                  \
		.name = #tpname, .btf = (skel)->progs.tpname##_btf,                        \
		.raw = (skel)->progs.tpname##_raw, .source = (src), .required = (req)      \
	}

static void table(struct ls_bpf *b)
{
	struct tp *t = b->tps;

	t[b->ntps++] = TP(b->sched, sched_switch, LS_SRC_SCHED, true);
	t[b->ntps++] = TP(b->sched, sched_wakeup, LS_SRC_SCHED, true);
	t[b->ntps++] = TP(b->sched, sched_wakeup_new, LS_SRC_SCHED, true);
	t[b->ntps++] = TP(b->sched, sched_process_fork, LS_SRC_PROC, true);
	t[b->ntps++] = TP(b->sched, sched_process_exec, LS_SRC_PROC, true);
	t[b->ntps++] = TP(b->sched, sched_process_exit, LS_SRC_PROC, true);
	t[b->ntps++] = TP(b->net, inet_sock_set_state, LS_SRC_TCP_STATE, true);
	t[b->ntps++] = TP(b->net, tcp_retransmit_skb, LS_SRC_TCP_RETRANS, false);
	t[b->ntps++] = TP(b->net, tcp_retransmit_synack, LS_SRC_TCP_SYNACK, false);
	t[b->ntps++] = TP(b->net, tcp_probe, LS_SRC_TCP_PROBE, false);
	t[b->ntps++] = TP(b->net, tcp_send_reset, LS_SRC_TCP_RESET, false);
	t[b->ntps++] = TP(b->net, tcp_receive_reset, LS_SRC_TCP_RESET, false);
	t[b->ntps++] = TP(b->net, tcp_destroy_sock, LS_SRC_TCP_DESTROY, false);
	t[b->ntps++] = TP(b->net, net_dev_start_xmit, LS_SRC_TCP_XMIT, false);
}

/* Sets a `const volatile` variable of obj's .rodata by name, from its BTF.
 * Returns false when the object has no such variable. */
static bool set_rodata(struct bpf_object *obj, const char *name, const void *val, size_t size)
{
	const struct btf *btf = bpf_object__btf(obj);
	struct bpf_map *m;
	void *data = NULL;
	size_t len = 0;

	bpf_object__for_each_map(m, obj) {
		const char *mn = bpf_map__name(m);
		size_t ml = strlen(mn);
		if (ml >= 7 && !strcmp(mn + ml - 7, ".rodata"))
			data = (void *)bpf_map__initial_value(m, &len); /* the mmap skeletons write */
	}
	int id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;
	if (!data || id < 0)
		return false;
	const struct btf_type *sec = btf__type_by_id(btf, id);
	const struct btf_var_secinfo *vs = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *var = btf__type_by_id(btf, vs->type);
		if (strcmp(btf__name_by_offset(btf, var->name_off), name) || vs->size != size ||
		    vs->offset + size > len)
			continue;
		memcpy((char *)data + vs->offset, val, size);
		return true;
	}
	return false;
}

/* The rodata every domain shares (common.bpf.h), set in one place for every
 * object: a new domain cannot forget one (and trace the agent itself). */
static void set_shared_rodata(struct bpf_object *const *objs, int n, const struct ls_bpf_opts *o)
{
	bool track_all = o->track_all;
	__u32 self = getpid();
	__u64 wakeup = o->ringbuf_bytes / 4;

	for (int i = 0; i < n; i++) {
		set_rodata(objs[i], "track_all", &track_all, sizeof(track_all));
		set_rodata(objs[i], "self_tgid", &self, sizeof(self));
		set_rodata(objs[i], "wakeup_bytes", &wakeup, sizeof(wakeup));
	}
}

/* Appends an item to a ", "-separated line (truncated if full). */
static void __attribute__((format(printf, 3, 4)))
append_item(char *line, size_t cap, const char *fmt, ...)
{
	size_t off = strlen(line);
	va_list ap;

	if (off && off + 2 < cap) {
		strcpy(line + off, ", ");
		off += 2;
	}
	va_start(ap, fmt);
	vsnprintf(line + off, cap - off, fmt, ap);
	va_end(ap);
}

/* An optional source this kernel or host does not offer. */
#define note_missing(b, ...) append_item((b)->missing, sizeof((b)->missing), __VA_ARGS__)

/* The socket-I/O programs with backups, in sock.bpf.c's HOOK_* order: the
 * first program of hook k and its backup. */
#define NHOOKS 5
static void sock_hooks(const struct ls_bpf *b, struct bpf_program *first[NHOOKS],
		       struct bpf_program *backup[NHOOKS])
{
	const typeof(b->sock->progs) *p = &b->sock->progs;

	first[0] = p->sys_enter, backup[0] = p->sys_enter_2;
	first[1] = p->sys_exit, backup[1] = p->sys_exit_2;
	first[2] = p->tcp_send_begin, backup[2] = p->tcp_send_begin_2;
	first[3] = p->sock_send_end, backup[3] = p->sock_send_end_2;
	first[4] = p->sock_recv_end, backup[4] = p->sock_recv_end_2;
}

/* Is p a backup (attached by attach_sys_backups, not at start)? */
static bool sock_backup(const struct ls_bpf *b, const struct bpf_program *p)
{
	struct bpf_program *first[NHOOKS], *backup[NHOOKS];

	sock_hooks(b, first, backup);
	for (int k = 0; k < NHOOKS; k++)
		if (p == backup[k])
			return true;
	return false;
}

/* Where socket I/O is read (record --sock-hooks): the socket tracepoints
 * where the kernel has them and tp_btf programs load (choose_programs
 * said), else the raw syscall ones. */
static int choose_sock_hooks(struct ls_bpf *b, const struct ls_bpf_opts *opts, char *err,
			     size_t errlen)
{
	bool has = ls_btf_has_tracepoint("sock_send_length") &&
		   ls_btf_has_tracepoint("sock_recv_length"),
	     btf = b->sources & LS_SRC_ATTACH_TP_BTF;

	if (opts->sock_hooks == LS_SOCK_HOOKS_SOCKET && !opts->no_sock && !(has && btf)) {
		snprintf(err, errlen,
			 "--sock-hooks socket: %s; use --sock-hooks syscalls or auto",
			 has ? "tp_btf programs do not load here (see latsplit check)"
			     : "this kernel has no sock_send_length/sock_recv_length tracepoints "
			       "(Linux >= 6.3)");
		return -ENOTSUP;
	}
	b->sock_tp = opts->sock_hooks == LS_SOCK_HOOKS_SOCKET ||
		     (opts->sock_hooks == LS_SOCK_HOOKS_AUTO && has && btf);
	if (!b->sock)
		return 0;
	struct bpf_program *first[NHOOKS], *backup[NHOOKS];
	/* where the kernel has it, a TCP write begins before its segments leave */
	bool begins = b->sock_tp && ls_btf_has_tracepoint("tcp_sendmsg_locked");
	/* the programs of the hooks chosen (sock.bpf.c's HOOK_* order) */
	bool want[NHOOKS] = {!b->sock_tp, !b->sock_tp, begins, b->sock_tp, b->sock_tp};

	sock_hooks(b, first, backup);
	for (int k = 0; k < NHOOKS; k++) {
		bpf_program__set_autoload(first[k], want[k]);
		bpf_program__set_autoload(backup[k], want[k]);
	}
	b->sock->rodata->send_begins = begins;
	return 0;
}

/* Chooses tp_btf, raw_tp or nothing for each tracepoint. */
static int choose_programs(struct ls_bpf *b, char *err, size_t errlen)
{
	/* LATSPLIT_FORCE_RAW_TP=1: the raw_tp programs even where tp_btf
	 * loads, as a kernel without it gets them (tests run that fallback) */
	const char *force = getenv("LATSPLIT_FORCE_RAW_TP");
	bool use_btf = !(force && *force && strcmp(force, "0")) &&
		       ls_probe_tp_btf("sched_switch") == 0;

	for (int i = 0; i < b->ntps; i++) {
		struct tp *t = &b->tps[i];
		bool exists = ls_btf_has_tracepoint(t->name);

		bpf_program__set_autoload(t->btf, exists && use_btf);
		bpf_program__set_autoload(t->raw, exists && !use_btf);
		if (exists)
			continue;
		if (t->required) {
			snprintf(err, errlen,
				 "tracepoint %s not found in kernel BTF; latsplit needs Linux >= 5.8 "
				 "with the sched and sock tracepoints",
				 t->name);
			return -ENOENT;
		}
		note_missing(b, "%s", t->name);
	}
	if (use_btf)
		b->sources |= LS_SRC_ATTACH_TP_BTF;
	else /* the thread switched back in is a BTF pointer only there */
		note_missing(b, "time asleep inside socket writes (needs tp_btf)");
	return 0;
}

/* Every map of `dst` that `src` also defines (same name) uses src's fd, so
 * all objects feed one ring buffer and share one filter. */
static int share_maps(struct bpf_object *dst, const struct bpf_object *src)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, dst) {
		const struct bpf_map *s = bpf_object__find_map_by_name(src, bpf_map__name(m));
		const char *name = bpf_map__name(m);
		int e;

		/* rodata/bss/data are per object, never shared. */
		if (!s || strchr(name, '.'))
			continue;
		e = bpf_map__reuse_fd(m, bpf_map__fd(s));
		if (e)
			return e;
	}
	return 0;
}

static int attach_sys_backups(struct ls_bpf *b);

/* The socket-I/O domain: the raw sys_enter and sys_exit tracepoints, or
 * the socket tracepoints (b->sock_tp; no tracefs needed either way).
 * Optional: without it, TCP and scheduler events still flow. */
static void start_sock(struct ls_bpf *b, const struct ls_bpf_opts *opts)
{
	struct bpf_program *p;
	int e;

	(void)opts;
	e = b->load_rc[SOURCE_SOCK];
	if (e) {
		note_missing(b, "socket I/O (load: %s)", strerror(-e));
		return;
	}
	bpf_object__for_each_program(p, b->sock->obj) {
		if (bpf_program__type(p) == BPF_PROG_TYPE_KPROBE || !bpf_program__autoload(p))
			continue; /* the libssl uprobes: per file (ls_bpf_tls_attach); the hooks not chosen */
		if (sock_backup(b, p))
			continue; /* backups: ls_bpf_sys_backups, once the kernel skips runs */
		struct bpf_link *l = bpf_program__attach(p);

		if (!l || b->nsock_links == (int)(sizeof(b->sock_links) / sizeof(b->sock_links[0]))) {
			bpf_link__destroy(l);
			note_missing(b, "%s", bpf_program__name(p));
			continue;
		}
		b->sock_links[b->nsock_links++] = l;
		if (p == b->sock->progs.sock_recv_end) /* what the capture says is what ran */
			b->sources |= LS_SRC_SOCK_TP;
	}
	if (b->nsock_links)
		b->sources |= LS_SRC_SOCK_IO;
	/* a kernel whose tracepoints run BPF faultable (7.x: its BTF has
	 * trace_call_bpf_faultable) skips runs of a preempted syscall program,
	 * and there the socket tracepoints' programs run preemptible too: the
	 * backups from the start, not from the first misses */
	const struct btf *btf = ls_vmlinux_btf();

	if (b->nsock_links && btf &&
	    btf__find_by_name_kind(btf, "trace_call_bpf_faultable", BTF_KIND_FUNC) > 0 &&
	    attach_sys_backups(b) < 0)
		note_missing(b, "sys_enter_2/sys_exit_2 (backups for faultable syscall tracepoints)");
}

/* A uprobe (or return uprobe) on function fn of a file: a uprobe_multi
 * link of one function where the kernel has them (see ls_bpf.multi). */
static struct bpf_link *attach_uprobe(const struct ls_bpf *b, struct bpf_program *p,
				      const char *path, const char *fn, bool ret)
{
#if LS_HAVE_UPROBE_MULTI
	if (b->multi) {
		LIBBPF_OPTS(bpf_uprobe_multi_opts, m, .retprobe = ret);
		return bpf_program__attach_uprobe_multi(p, -1, path, fn, &m);
	}
#else
	(void)b;
#endif
	LIBBPF_OPTS(bpf_uprobe_opts, o, .func_name = fn, .retprobe = ret);
	return bpf_program__attach_uprobe_opts(p, -1, path, 0, &o);
}

/* An entry uprobe and a return uprobe on one function of a file, appended
 * to links (room for both checked by the caller): true when both attached;
 * neither is kept otherwise. */
static bool attach_pair(const struct ls_bpf *b, struct bpf_program *enter,
			struct bpf_program *exit, const char *path, const char *fn,
			struct bpf_link **links, int *n)
{
	struct bpf_link *l1 = attach_uprobe(b, enter, path, fn, false);
	struct bpf_link *l2 = l1 ? attach_uprobe(b, exit, path, fn, true) : NULL;

	if (!l1 || !l2) {
		bpf_link__destroy(l1);
		return false;
	}
	links[(*n)++] = l1;
	links[(*n)++] = l2;
	return true;
}

/* The TLS uprobes on one libssl file: functions attached. */
static int attach_tls(struct ls_bpf *b, const char *path)
{
	const struct {
		struct bpf_program *enter;
		const char *fn;
	} fns[] = {
		{b->sock->progs.ssl_read_enter, "SSL_read"},
		{b->sock->progs.ssl_read_ex_enter, "SSL_read_ex"},
		{b->sock->progs.ssl_write_enter, "SSL_write"},
		{b->sock->progs.ssl_write_ex_enter, "SSL_write_ex"},
	};
	int attached = 0;

	for (size_t f = 0; f < sizeof(fns) / sizeof(fns[0]); f++) /* room: LS_PROBE_MAX_FILES */
		attached += attach_pair(b, fns[f].enter, b->sock->progs.ssl_exit, path, fns[f].fn,
					b->tls_links, &b->ntls_links);
	if (attached && b->ntls_links < (int)(sizeof(b->tls_links) / sizeof(b->tls_links[0]))) {
		struct bpf_link *l = attach_uprobe(b, b->sock->progs.ssl_handshake_enter, path,
						   "SSL_do_handshake", false);
		if (l)
			b->tls_links[b->ntls_links++] = l;
	}
	return attached;
}

/* Whether process_vm_readv may read tracked processes: not when Yama's
 * ptrace_scope is 3 (no attach, not even by root). */
static bool ring_readable(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int v = 0;

	if (!f)
		return true;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v != 3;
}

/* The engine USDT probes (provider "latsplit") in one file: probes attached. */
static int attach_engine(struct ls_bpf *b, const char *path)
{
	const int maxl = (int)(sizeof(b->engine_links) / sizeof(b->engine_links[0]));
	struct bpf_program *p;
	int attached = 0;

	bpf_object__for_each_program(p, b->engine->obj) {
		struct bpf_link *l;

		if (b->nengine_links == maxl)
			break;
		/* the event ring is read with process_vm_readv: where Yama
		 * forbids that to everyone, the events stay probes */
		if (!strcmp(bpf_program__name(p), "event_ring") && !ring_readable())
			continue;
		l = bpf_program__attach_usdt(p, -1, path, "latsplit", bpf_program__name(p), NULL);
		if (!l)
			continue;
		b->engine_links[b->nengine_links++] = l;
		attached++;
	}
	return attached;
}

static int attach_cuda(struct ls_bpf *b, const char *path);

const char *const ls_probe_kind_name[LS_PROBE_KINDS] = {"TLS", "engine", "libcuda"};

int ls_bpf_probe_file(struct ls_bpf *b, enum ls_probe_kind kind, const char *path)
{
	struct stat st;
	int n;

	if (kind >= LS_PROBE_KINDS)
		return -EINVAL;
	if (!(kind == LS_PROBE_TLS ? (b->sources & LS_SRC_SOCK_IO)
				   : kind == LS_PROBE_ENGINE ? b->engine_ready : b->gpu_ready))
		return -ENOTSUP;
	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode)) /* a path a traced process names: never a FIFO to block on */
		return -EINVAL;
	for (int i = 0; i < b->nprobe_files; i++)
		if (b->probe_files[i].dev == st.st_dev && b->probe_files[i].ino == st.st_ino &&
		    b->probe_files[i].kind == kind)
			return 0;
	if (b->nprobe_files == (int)(sizeof(b->probe_files) / sizeof(b->probe_files[0])))
		return -ENOSPC;
	int per_kind = 0;
	for (int i = 0; i < b->nprobe_files; i++)
		per_kind += b->probe_files[i].kind == kind;
	if (per_kind == LS_PROBE_MAX_FILES)
		return -ENOSPC;
	n = kind == LS_PROBE_TLS ? attach_tls(b, path)
	    : kind == LS_PROBE_ENGINE ? attach_engine(b, path)
				       : attach_cuda(b, path);
	b->probe_files[b->nprobe_files].dev = st.st_dev;
	b->probe_files[b->nprobe_files].ino = st.st_ino;
	b->probe_files[b->nprobe_files].kind = kind;
	b->nprobe_files++; /* tried once, whatever came of it */
	if (!n)
		return -ENOENT;
	if (kind == LS_PROBE_CUDA)
		b->sources |= LS_SRC_GPU_UPROBE;
	return n;
}

/* The engine domain: USDT probes in each given file, for every process
 * that maps it, and in the files tracked processes map as they appear
 * (ls_bpf_probe_file). */
static void start_engine(struct ls_bpf *b, const struct ls_bpf_opts *opts)
{
	int e = b->load_rc[SOURCE_ENGINE];

	if (e) {
		note_missing(b, "engine events (load: %s)", strerror(-e));
		return;
	}
	b->engine_ready = true;
	/* the probes are ready for any engine library a process maps */
	b->sources |= LS_SRC_ENGINE;
	for (int i = 0; i < opts->nengine_paths; i++)
		ls_bpf_probe_file(b, LS_PROBE_ENGINE, opts->engine_paths[i]);
}

/* The libcuda uprobe fallback on one file: each program pair on each symbol
 * name the driver exports for it (versioned and plain). Symbols attached. */
static int attach_cuda(struct ls_bpf *b, const char *path)
{
	const struct {
		struct bpf_program *enter, *exit;
		const char *syms[3];
	} fns[] = {
		{b->gpu->progs.cuMemcpyHtoD_enter, b->gpu->progs.cuMemcpyHtoD_exit,
		 {"cuMemcpyHtoD_v2", "cuMemcpyHtoD"}},
		{b->gpu->progs.cuMemcpyDtoH_enter, b->gpu->progs.cuMemcpyDtoH_exit,
		 {"cuMemcpyDtoH_v2", "cuMemcpyDtoH"}},
		{b->gpu->progs.cuMemcpyHtoDAsync_enter, b->gpu->progs.cuMemcpyHtoDAsync_exit,
		 {"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync"}},
		{b->gpu->progs.cuMemcpyDtoHAsync_enter, b->gpu->progs.cuMemcpyDtoHAsync_exit,
		 {"cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync"}},
		{b->gpu->progs.cuLaunchKernel_enter, b->gpu->progs.cuLaunchKernel_exit,
		 {"cuLaunchKernel"}},
		{b->gpu->progs.cuLaunchKernelEx_enter, b->gpu->progs.cuLaunchKernelEx_exit,
		 {"cuLaunchKernelEx"}},
		{b->gpu->progs.cuGraphLaunch_enter, b->gpu->progs.cuGraphLaunch_exit,
		 {"cuGraphLaunch"}},
		{b->gpu->progs.cuStreamSynchronize_enter, b->gpu->progs.cuStreamSynchronize_exit,
		 {"cuStreamSynchronize"}},
		{b->gpu->progs.cuCtxSynchronize_enter, b->gpu->progs.cuCtxSynchronize_exit,
		 {"cuCtxSynchronize_v2", "cuCtxSynchronize"}},
		{b->gpu->progs.cuEventSynchronize_enter, b->gpu->progs.cuEventSynchronize_exit,
		 {"cuEventSynchronize"}},
	};
	const int maxl = (int)(sizeof(b->gpu_links) / sizeof(b->gpu_links[0]));
	int attached = 0;

	for (size_t f = 0; f < sizeof(fns) / sizeof(fns[0]); f++) {
		for (int k = 0; k < 3 && fns[f].syms[k] && b->ngpu_links + 2 <= maxl; k++)
			attached += attach_pair(b, fns[f].enter, fns[f].exit, path, fns[f].syms[k],
						b->gpu_links, &b->ngpu_links);
	}
	return attached;
}

/* The libcuda uprobe fallback, loaded when the host has a driver (a
 * container's processes map the host's libcuda, bind-mounted by the
 * NVIDIA runtime: the same file; another file one maps is attached as it
 * appears). */
static void start_gpu_uprobes(struct ls_bpf *b, const struct ls_bpf_opts *opts)
{
	int e = b->load_rc[SOURCE_GPU];

	if (e) {
		note_missing(b, "libcuda uprobes (load: %s)", strerror(-e));
		return;
	}
	b->gpu_ready = true;
	for (int p = 0; p < opts->ncuda_paths; p++)
		ls_bpf_probe_file(b, LS_PROBE_CUDA, opts->cuda_paths[p]);
}

/* cpu-clock sampling on every CPU, the profile program on each event. */
static void start_sampling(struct ls_bpf *b, const struct ls_bpf_opts *opts)
{
	int ncpu = libbpf_num_possible_cpus(), e;

	e = b->load_rc[SOURCE_PROFILE];
	if (e) {
		note_missing(b, "CPU sampling (load: %s)", strerror(-e));
		return;
	}
	for (int cpu = 0; cpu < ncpu && cpu < LS_MAX_CPUS; cpu++) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.size = sizeof(attr),
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.sample_freq = opts->sample_freq,
			.freq = 1,
		};
		int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		struct bpf_link *l;

		if (fd < 0)
			continue; /* offline CPU */
		l = bpf_program__attach_perf_event(b->profile->progs.do_sample, fd);
		if (!l) {
			close(fd);
			continue;
		}
		b->sample_links[b->nsample_links++] = l;
	}
	if (b->nsample_links)
		b->sources |= LS_SRC_SAMPLES;
}

int ls_bpf_py_set(void *ctx, __u32 tgid, const struct ls_py_proc *pp)
{
	struct ls_bpf *b = ctx;

	return bpf_map_update_elem(bpf_map__fd(b->sched->maps.py_procs), &tgid, pp, BPF_ANY) ? -errno
											       : 0;
}

/* Entries [at, at + n) of an array map, in batches where the kernel has
 * them. 0, or a negative errno. */
static int array_set(int fd, __u32 at, const void *vals, size_t size, __u32 n)
{
	__u32 *keys = malloc(n * sizeof(*keys));
	__u32 done = 0;

	if (!keys)
		return -ENOMEM;
	for (__u32 i = 0; i < n; i++)
		keys[i] = at + i;
	while (done < n) {
		__u32 cnt = n - done;

		if (bpf_map_update_batch(fd, keys + done, (const char *)vals + done * size, &cnt, NULL)) {
			/* a kernel without batch updates on arrays: one at a time */
			for (; done < n; done++)
				if (bpf_map_update_elem(fd, &keys[done], (const char *)vals + done * size,
							BPF_ANY))
					break;
			break;
		}
		done += cnt;
	}
	free(keys);
	return done == n ? 0 : -errno;
}

int ls_bpf_eh_rows(void *ctx, __u32 at, const struct ls_eh_row *rows, __u32 n)
{
	struct ls_bpf *b = ctx;

	return array_set(bpf_map__fd(b->sched->maps.eh_rows), at, rows, sizeof(*rows), n);
}

int ls_bpf_eh_pages(void *ctx, __u32 at, const __u32 *pages, __u32 n)
{
	struct ls_bpf *b = ctx;

	return array_set(bpf_map__fd(b->sched->maps.eh_pages), at, pages, sizeof(*pages), n);
}

int ls_bpf_eh_proc(void *ctx, __u32 pid, const struct ls_eh_proc *p)
{
	struct ls_bpf *b = ctx;
	int fd = bpf_map__fd(b->sched->maps.eh_procs);

	if (!p)
		return bpf_map_delete_elem(fd, &pid) ? -errno : 0;
	return bpf_map_update_elem(fd, &pid, p, BPF_ANY) ? -errno : 0;
}

int ls_bpf_eh_missed(struct ls_bpf *b, __u32 *pids, int max)
{
	int fd = bpf_map__fd(b->sched->maps.eh_missed), n = 0;
	__u32 key, next;
	bool have = false;

	while (n < max && !bpf_map_get_next_key(fd, have ? &key : NULL, &next)) {
		pids[n++] = next;
		key = next;
		have = true;
	}
	for (int i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &pids[i]);
	return n;
}

int ls_bpf_stack_next(struct ls_bpf *b, __u32 *id, bool *have, unsigned long long *ips, int max)
{
	int fd = bpf_map__fd(b->sched->maps.stacks);
	__u64 val[LS_STACK_DEPTH];
	__u32 next;

	for (;;) {
		if (bpf_map_get_next_key(fd, *have ? id : NULL, &next))
			return 0;
		*id = next;
		*have = true;
		if (bpf_map_lookup_elem(fd, &next, val))
			continue;
		int n = 0;
		while (n < LS_STACK_DEPTH && n < max && val[n]) {
			ips[n] = val[n];
			n++;
		}
		if (n)
			return n;
	}
}

/* A per-CPU u64 map's entry `key` summed over CPUs (each CPU's value in
 * per_cpu[ncpu] when given); 0 when it cannot be read. */
static unsigned long long percpu_sum(const struct bpf_map *m, __u32 key,
				     unsigned long long *per_cpu, int ncpu)
{
	int n = libbpf_num_possible_cpus();
	__u64 vals[n > 0 ? n : 1];
	unsigned long long total = 0;

	if (!m || n <= 0 || bpf_map__lookup_elem(m, &key, sizeof(key), vals, sizeof(vals), 0))
		return 0;
	for (int i = 0; i < n; i++) {
		total += vals[i];
		if (per_cpu && i < ncpu)
			per_cpu[i] = vals[i];
	}
	return total;
}

unsigned long long ls_bpf_stack_errors(struct ls_bpf *b)
{
	return percpu_sum(b->sched->maps.stack_errs, 0, NULL, 0);
}

int ls_bpf_held_arrivals(struct ls_bpf *b, int (*cb)(void *ctx, void *rec, size_t size), void *ctx)
{
	struct bpf_map *m = b->maps->maps.conns;
	size_t vsize = bpf_map__value_size(m);
	_Alignas(8) unsigned char val[256];
	struct ls_ev_tcp_probe e;
	__u64 key, next;
	int n = 0, fd = bpf_map__fd(m);
	bool first = true;

	/* conn_val ends with the held tcp_probe record (common.bpf.h) */
	if (vsize > sizeof(val) || vsize < sizeof(e))
		return 0;
	while (!bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, val))
			continue;
		memcpy(&e, val + vsize - sizeof(e), sizeof(e));
		if (!e.h.ts || e.h.type != LS_EV_TCP_PROBE || e.h.size != sizeof(e))
			continue;
		cb(ctx, &e, sizeof(e));
		n++;
	}
	return n;
}

unsigned long long ls_bpf_retrans_failed(struct ls_bpf *b)
{
	return b->net ? percpu_sum(b->net->maps.retrans_failed, 0, NULL, 0) : 0;
}

void ls_bpf_kstack_stats(struct ls_bpf *b, unsigned long long out[3])
{
	for (__u32 k = 0; k < 3; k++)
		out[k] = percpu_sum(b->sched->maps.kstack_stats, k, NULL, 0);
}


/* Each skeleton's open, object and destroy, for the table below. */
#define SKELETON(d)                                                                        \
	static int d##_open(struct ls_bpf *b)                                              \
	{                                                                                  \
		return (b->d = d##_bpf__open()) ? 0 : -errno;                              \
	}                                                                                  \
	static struct bpf_object *d##_obj(const struct ls_bpf *b)                          \
	{                                                                                  \
		return b->d ? b->d->obj : NULL;                                            \
	}                                                                                  \
	static void d##_destroy(struct ls_bpf *b)                                          \
	{                                                                                  \
		d##_bpf__destroy(b->d);                                                    \
	}                                                                                  \
	static int d##_load(struct ls_bpf *b)                                              \
	{                                                                                  \
		return d##_bpf__load(b->d);                                                \
	}
SKELETON(maps)
SKELETON(sched)
SKELETON(net)
SKELETON(sock)
SKELETON(engine)
SKELETON(gpu)
SKELETON(profile)

/* Each domain's own rodata and map sizes (the shared ones are set for all
 * by set_shared_rodata). */
/* The shared maps' sizes (the owner creates them). */
static void maps_configure(struct ls_bpf *b, const struct ls_bpf_opts *o)
{
	bpf_map__set_max_entries(b->maps->maps.events, o->ringbuf_bytes);
	bpf_map__set_max_entries(b->maps->maps.eh_rows, o->eh_rows ? o->eh_rows : 1);
	bpf_map__set_max_entries(b->maps->maps.eh_pages, o->eh_rows ? o->eh_rows / 2 : 1);
	if (o->stack_entries) {
		bpf_map__set_max_entries(b->maps->maps.stacks, o->stack_entries);
		bpf_map__set_max_entries(b->maps->maps.eh_ids, o->stack_entries);
	}
}

static void sched_configure(struct ls_bpf *b, const struct ls_bpf_opts *o)
{
	b->sched->rodata->want_stacks = o->offcpu_stacks;
	b->sched->rodata->kstack_min_ns = o->kstack_min_ns;
	b->sched->rodata->ustack_bytes = o->ustack_bytes;
	b->sched->rodata->eh_unwind = o->eh_rows != 0;
	b->sched->rodata->want_io = !o->no_sock;
}

/* The uprobe programs of an object (libssl's, libcuda's: type kprobe) load
 * for uprobe_multi links where the kernel and libbpf have them: such a link
 * detaches with its own RCU wait, which parallel detaches share, while a
 * perf-event uprobe's detach holds the kernel's event mutex through its
 * wait (~100 ms each, one after another: 9 per libssl file). */
static void uprobes_multi(const struct ls_bpf *b, struct bpf_object *obj)
{
#if LS_HAVE_UPROBE_MULTI
	struct bpf_program *p;

	if (!b->multi)
		return;
	bpf_object__for_each_program(p, obj)
		if (bpf_program__type(p) == BPF_PROG_TYPE_KPROBE)
			bpf_program__set_expected_attach_type(p, BPF_TRACE_UPROBE_MULTI);
#else
	(void)b;
	(void)obj;
#endif
}

/* A data segment's arrival waits for the read that takes its bytes only
 * where the reads are recorded (net.bpf.c). */
static void net_configure(struct ls_bpf *b, const struct ls_bpf_opts *o)
{
	b->net->rodata->hold_arrivals = !o->no_sock;
	b->net->rodata->retrans_err_arg = ls_btf_tracepoint_args("tcp_retransmit_skb") >= 3;
}

static void sock_configure(struct ls_bpf *b, const struct ls_bpf_opts *o)
{
	b->sock->rodata->capture_bytes = o->capture_bytes;
	uprobes_multi(b, b->sock->obj);
}

static void gpu_configure(struct ls_bpf *b, const struct ls_bpf_opts *o)
{
	(void)o;
	uprobes_multi(b, b->gpu->obj);
}

static void engine_configure(struct ls_bpf *b, const struct ls_bpf_opts *o)
{
	b->engine->rodata->ustack_bytes = o->ustack_bytes;
	b->engine->rodata->want_stacks = o->offcpu_stacks || o->sample_freq;
}

static void profile_configure(struct ls_bpf *b, const struct ls_bpf_opts *o)
{
	b->profile->rodata->sample_all = o->sample_all;
	b->profile->rodata->ustack_bytes = o->ustack_bytes;
	b->profile->rodata->eh_unwind = o->eh_rows != 0;
}

/* Which optional sources this recording loads (their start attaches them) */
static bool sock_wanted(const struct ls_bpf_opts *o)
{
	return !o->no_sock;
}

static bool engine_wanted(const struct ls_bpf_opts *o)
{
	return o->engine;
}

static bool gpu_wanted(const struct ls_bpf_opts *o)
{
	return o->ncuda_paths > 0;
}

static bool profile_wanted(const struct ls_bpf_opts *o)
{
	return o->sample_freq != 0;
}

/* The sources: a new one is one entry here, its bpf/<name>.bpf.c (the
 * skeleton, SKELETON above and a field of struct ls_bpf) and its record
 * types and decoder. The first owns the maps every other reuses (one ring
 * buffer, one filter; bpf/maps.bpf.c, no programs). Every source `wanted`
 * (NULL: always) is loaded by load_sources. `tracepoints`: its programs attached from table() (a load
 * failure is fatal); else `start` attaches it, and what fails is noted as
 * missing. */
static const struct source {
	const char *name;
	int (*open)(struct ls_bpf *b);
	struct bpf_object *(*obj)(const struct ls_bpf *b);
	int (*load)(struct ls_bpf *b);
	void (*destroy)(struct ls_bpf *b);
	void (*configure)(struct ls_bpf *b, const struct ls_bpf_opts *o);
	bool (*wanted)(const struct ls_bpf_opts *o);
	void (*start)(struct ls_bpf *b, const struct ls_bpf_opts *o);
	bool tracepoints;
} sources[NSOURCES] = {
	[SOURCE_MAPS] = {"shared maps", maps_open, maps_obj, maps_load, maps_destroy, maps_configure,
			 NULL, NULL, false},
	[SOURCE_SCHED] = {"sched", sched_open, sched_obj, sched_load, sched_destroy, sched_configure, NULL,
			  NULL, true},
	[SOURCE_TCP] = {"TCP", net_open, net_obj, net_load, net_destroy, net_configure, NULL, NULL,
			true},
	[SOURCE_SOCK] = {"socket I/O", sock_open, sock_obj, sock_load, sock_destroy, sock_configure,
			 sock_wanted, start_sock, false},
	[SOURCE_ENGINE] = {"engine", engine_open, engine_obj, engine_load, engine_destroy,
			   engine_configure, engine_wanted, start_engine, false},
	[SOURCE_GPU] = {"GPU", gpu_open, gpu_obj, gpu_load, gpu_destroy, gpu_configure, gpu_wanted,
			start_gpu_uprobes, false},
	[SOURCE_PROFILE] = {"profile", profile_open, profile_obj, profile_load, profile_destroy,
			    profile_configure, profile_wanted, start_sampling, false},
};

/* Opens and configures every source's object. 0, or a negative errno with
 * the reason. */
static int open_sources(struct ls_bpf *b, const struct ls_bpf_opts *opts, char *err, size_t errlen)
{
	struct bpf_object *objs[NSOURCES];

	int e;

	for (size_t i = 0; i < NSOURCES; i++)
		if ((e = sources[i].open(b))) {
			snprintf(err, errlen, "opening BPF objects (%s): %s", sources[i].name,
				 strerror(-e));
			return e;
		}
	for (size_t i = 0; i < NSOURCES; i++)
		objs[i] = sources[i].obj(b);
	set_shared_rodata(objs, NSOURCES, opts);
	for (size_t i = 0; i < NSOURCES; i++)
		if (sources[i].configure)
			sources[i].configure(b, opts);
	return 0;
}

struct load_job {
	struct ls_bpf *b;
	size_t i;
};

static void *load_main(void *arg)
{
	struct load_job *j = arg;

	j->b->load_rc[j->i] = sources[j->i].load(j->b);
	return NULL;
}

/* Loads the map owner, shares its maps with every other object, then loads
 * every other source wanted, each in a thread of its own (the verifier's
 * work is per object; one after another they took ~0.2 s). 0, or a negative
 * errno with the reason (a tracepoint source's failure). */
static int load_sources(struct ls_bpf *b, const struct ls_bpf_opts *opts, char *err, size_t errlen)
{
	struct bpf_object *owner = sources[0].obj(b);
	struct load_job jobs[NSOURCES];
	pthread_t th[NSOURCES];
	bool threaded[NSOURCES] = {0};
	int e = sources[0].load(b);

	if (e) {
		snprintf(err, errlen, "creating the shared BPF maps: %s", strerror(-e));
		return e;
	}
	for (size_t i = 1; i < NSOURCES; i++)
		if ((e = share_maps(sources[i].obj(b), owner))) {
			snprintf(err, errlen, "sharing BPF maps: %s", strerror(-e));
			return e;
		}
	for (size_t i = 1; i < NSOURCES; i++) {
		if (sources[i].wanted && !sources[i].wanted(opts))
			continue;
		jobs[i] = (struct load_job){b, i};
		threaded[i] = !pthread_create(&th[i], NULL, load_main, &jobs[i]);
		if (!threaded[i])
			load_main(&jobs[i]);
	}
	for (size_t i = 1; i < NSOURCES; i++)
		if (threaded[i])
			pthread_join(th[i], NULL);
	for (size_t i = 1; i < NSOURCES; i++)
		if (sources[i].tracepoints && (e = b->load_rc[i])) {
			snprintf(err, errlen,
				 "loading %s BPF programs: %s (run with -v for the verifier log)",
				 sources[i].name, strerror(-e));
			return e;
		}
	return 0;
}

int ls_bpf_start(struct ls_bpf **out, const struct ls_bpf_opts *opts, char *err, size_t errlen)
{
	struct ls_bpf *b = calloc(1, sizeof(*b));
	int e;

	if (!b)
		return -ENOMEM;
	if (!ls_vmlinux_btf()) {
		snprintf(err, errlen,
			 "no BTF at /sys/kernel/btf/vmlinux: needs a kernel built with "
			 "CONFIG_DEBUG_INFO_BTF=y (Linux >= 5.8)");
		free(b);
		return -ENOENT;
	}
	b->multi = ls_uprobe_multi();
	if ((e = open_sources(b, opts, err, errlen)))
		goto fail;
	table(b);
	e = choose_programs(b, err, errlen);
	if (!e)
		e = choose_sock_hooks(b, opts, err, errlen);
	if (e)
		goto fail;
	if ((e = load_sources(b, opts, err, errlen)))
		goto fail;
	for (int i = 0; i < b->ntps; i++) {
		struct tp *t = &b->tps[i];
		struct bpf_program *p = bpf_program__autoload(t->btf) ? t->btf : t->raw;

		if (!bpf_program__autoload(p))
			continue;
		t->link = bpf_program__attach(p);
		if (!t->link) {
			e = -errno;
			if (t->required) {
				snprintf(err, errlen, "attaching %s: %s", t->name, strerror(-e));
				goto fail;
			}
			continue;
		}
		b->sources |= t->source;
	}
	for (size_t i = 0; i < NSOURCES; i++)
		if (sources[i].start && (!sources[i].wanted || sources[i].wanted(opts)))
			sources[i].start(b, opts);
	b->rb = ring_buffer__new(bpf_map__fd(b->sched->maps.events), opts->on_record, opts->ctx,
				 NULL);
	if (!b->rb) {
		e = -errno;
		snprintf(err, errlen, "ring buffer: %s", strerror(errno));
		goto fail;
	}
	*out = b;
	return 0;
fail:
	ls_bpf_stop(b);
	return e < 0 ? e : -e;
}

unsigned long long ls_bpf_sources(const struct ls_bpf *b)
{
	return b->sources;
}

const char *ls_bpf_missing(const struct ls_bpf *b)
{
	return b->missing;
}

int ls_bpf_track_pid(struct ls_bpf *b, pid_t pid)
{
	if (pid <= 0 || (unsigned long)pid >= LS_TGID_WORDS * 64ul)
		return -EINVAL;
	if (!b->tgid_bits) {
		void *m = mmap(NULL, LS_TGID_WORDS * sizeof(__u64), PROT_READ | PROT_WRITE,
			       MAP_SHARED, bpf_map__fd(b->maps->maps.tracked_tgids), 0);
		if (m == MAP_FAILED)
			return -errno;
		b->tgid_bits = m;
	}
	/* the kernel sets and clears bits of the same words (forks, exits) */
	__atomic_fetch_or(&b->tgid_bits[pid / 64], 1ull << (pid % 64), __ATOMIC_RELAXED);
	return 0;
}

int ls_bpf_track_port(struct ls_bpf *b, unsigned short port, bool user)
{
	__u32 key = port;
	__u8 val = user ? LS_PORT_USER : LS_PORT_AUTO;

	return bpf_map__update_elem(b->sched->maps.tracked_ports, &key, sizeof(key), &val,
				    sizeof(val), BPF_ANY);
}

int ls_bpf_poll(struct ls_bpf *b, int timeout_ms)
{
	int n = ring_buffer__poll(b->rb, timeout_ms);

	/* Producers skip wakeups until a quarter of the ring is full, so
	 * drain whatever is there whether or not we were woken. */
	if (n >= 0) {
		int m = ring_buffer__consume(b->rb);
		n = m < 0 ? m : n + m;
	}
	return n;
}

int ls_bpf_ncpus(void)
{
	return libbpf_num_possible_cpus();
}

unsigned long long ls_bpf_drops(struct ls_bpf *b, unsigned long long *per_cpu, int ncpu)
{
	return percpu_sum(b->sched->maps.drops, 0, per_cpu, ncpu);
}

/* A program's recursion misses (0 where the kernel does not say). */
static unsigned long long prog_misses(struct bpf_program *p)
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);
	int fd = bpf_program__fd(p);

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    len < offsetof(struct bpf_prog_info, recursion_misses) + sizeof(info.recursion_misses))
		return 0;
	return info.recursion_misses;
}

/* The backups of the socket-I/O programs loaded (the chosen hooks),
 * attached once: 1, or -1 on failure. */
static int attach_sys_backups(struct ls_bpf *b)
{
	struct bpf_program *first[NHOOKS], *backup[NHOOKS];
	int max = (int)(sizeof(b->sock_links) / sizeof(b->sock_links[0]));

	b->sys_backups = true; /* tried once */
	sock_hooks(b, first, backup);
	for (int k = 0; k < NHOOKS; k++) {
		if (!bpf_program__autoload(backup[k]))
			continue;
		struct bpf_link *l = b->nsock_links < max ? bpf_program__attach(backup[k]) : NULL;

		if (!l)
			return -1;
		b->sock_links[b->nsock_links++] = l;
	}
	return 1;
}

int ls_bpf_sys_backups(struct ls_bpf *b)
{
	struct bpf_program *first[NHOOKS], *backup[NHOOKS];
	bool missed = false;

	if (b->sys_backups || !b->sock || !(b->sources & LS_SRC_SOCK_IO) || b->detaching)
		return 0;
	sock_hooks(b, first, backup);
	for (int k = 0; k < NHOOKS; k++)
		missed |= prog_misses(first[k]) > 0;
	return missed ? attach_sys_backups(b) : 0;
}

unsigned long long ls_bpf_prog_skips(struct ls_bpf *b, char *top, size_t toplen,
				     unsigned long long *top_n)
{
	unsigned long long total = 0;

	*top_n = 0;
	if (toplen)
		top[0] = '\0';
	for (size_t i = 0; i < NSOURCES; i++) {
		struct bpf_object *obj = sources[i].obj(b);
		struct bpf_program *p;

		if (!obj)
			continue;
		bpf_object__for_each_program(p, obj) {
			unsigned long long m = prog_misses(p), cov = 0;

			/* a backup's misses lose nothing by themselves: what was
			 * lost is the first's misses it did not make up for */
			if (b->sock && sock_backup(b, p))
				continue;
			if (b->sock) {
				struct bpf_program *first[NHOOKS], *backup[NHOOKS];

				sock_hooks(b, first, backup);
				for (int k = 0; k < NHOOKS; k++)
					if (p == first[k])
						cov = percpu_sum(b->sock->maps.sys_covered, k, NULL, 0);
			}
			m = m > cov ? m - cov : 0;
			total += m;
			if (m > *top_n) {
				*top_n = m;
				snprintf(top, toplen, "%s", bpf_program__name(p));
			}
		}
	}
	return total;
}

/* One thing to let go of at the end: a link to destroy, or (link NULL) a
 * duplicate of a kernel link's fd to close. */
struct teardown {
	struct bpf_link *link;
	int fd;
};

struct detach_job {
	struct teardown *items;
	int n, stride, first;
};

static void *detach_main(void *arg)
{
	struct detach_job *j = arg;

	for (int i = j->first; i < j->n; i += j->stride) {
		if (j->items[i].link)
			bpf_link__destroy(j->items[i].link);
		else
			close(j->items[i].fd);
	}
	return NULL;
}

/* Lets go of the items from several threads at once. Each uprobe link's
 * detach waits for an RCU grace period in the kernel (~70-110 ms here), one
 * after the other when done in a loop: 35 engine probes took 2.8 s. Waits
 * from parallel threads share grace periods. */
static void teardown_all(struct teardown *items, int n)
{
	enum { MAX_THREADS = 16 };
	pthread_t th[MAX_THREADS];
	struct detach_job jobs[MAX_THREADS];
	int nt = n < MAX_THREADS ? n : MAX_THREADS, started = 0;

	for (int t = 1; t < nt; t++) {
		jobs[t] = (struct detach_job){items, n, nt, t};
		if (pthread_create(&th[t], NULL, detach_main, &jobs[t]))
			break;
		started = t;
	}
	/* this thread takes slot 0, and any slot a thread was not started for */
	for (int t = 0; t < nt; t++) {
		if (t && t <= started)
			continue;
		jobs[t] = (struct detach_job){items, n, nt, t};
		detach_main(&jobs[t]);
	}
	for (int t = 1; t <= started; t++)
		pthread_join(th[t], NULL);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* This process's BPF link fds whose info want() takes, up to max, into
 * fds[], in ascending order. */
static int link_fds(bool (*want)(const struct bpf_link_info *info, const void *arg), const void *arg,
		    int *fds, int max)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while (n < max && (de = readdir(d))) {
		char path[64], target[32];
		struct bpf_link_info info = {0};
		__u32 len = sizeof(info);
		int fd = atoi(de->d_name);
		ssize_t tl;

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		tl = readlink(path, target, sizeof(target) - 1);
		if (tl <= 0)
			continue;
		target[tl] = 0;
		/* only links: a map's or program's info would be read as a link's */
		if (strcmp(target, "anon_inode:bpf_link") || bpf_obj_get_info_by_fd(fd, &info, &len) ||
		    !want(&info, arg))
			continue;
		fds[n++] = fd;
	}
	closedir(d);
	qsort(fds, (size_t)n, sizeof(*fds), cmp_int);
	return n;
}

#if LS_HAVE_UPROBE_MULTI
static bool is_uprobe_multi(const struct bpf_link_info *info, const void *arg)
{
	(void)arg;
	return info->type == BPF_LINK_TYPE_UPROBE_MULTI;
}
#endif

/* Duplicates of this process's uprobe_multi link fds, up to max, into
 * items[] (as fds to close). A USDT link hides its kernel link from the API;
 * with a duplicate open, libbpf's own close of that link only drops a
 * reference, and the release (the grace period) happens when the duplicate
 * is closed, in parallel with the rest. */
static int dup_multi_links(struct teardown *items, int max)
{
#if LS_HAVE_UPROBE_MULTI
	int fds[max], n = link_fds(is_uprobe_multi, NULL, fds, max), ndup = 0;

	for (int i = 0; i < n; i++) {
		int dup = fcntl(fds[i], F_DUPFD_CLOEXEC, 0);

		if (dup >= 0)
			items[ndup++] = (struct teardown){NULL, dup};
	}
	return ndup;
#else
	(void)items;
	(void)max;
	return 0;
#endif
}

/* The ids of the loaded programs that run as uprobes (type kprobe: the
 * engine's USDT, libssl's, libcuda's and the CUPTI shim's probes). */
struct prog_ids {
	__u32 id[64];
	int n;
};

static bool is_uprobe_perf_link(const struct bpf_link_info *info, const void *arg)
{
	const struct prog_ids *ids = arg;

	if (info->type != BPF_LINK_TYPE_PERF_EVENT)
		return false;
	for (int i = 0; i < ids->n; i++)
		if (ids->id[i] == info->prog_id)
			return true;
	return false;
}

static void uprobe_prog_ids(const struct ls_bpf *b, struct prog_ids *ids)
{
	struct bpf_object *objs[] = {b->engine ? b->engine->obj : NULL, b->gpu ? b->gpu->obj : NULL,
				     b->sock ? b->sock->obj : NULL};
	struct bpf_program *p;

	ids->n = 0;
	for (size_t o = 0; o < sizeof(objs) / sizeof(objs[0]); o++) {
		if (!objs[o])
			continue;
		bpf_object__for_each_program(p, objs[o]) {
			struct bpf_prog_info info = {0};
			__u32 len = sizeof(info);

			if (bpf_program__type(p) == BPF_PROG_TYPE_KPROBE && bpf_program__fd(p) >= 0 &&
			    ids->n < (int)(sizeof(ids->id) / sizeof(ids->id[0])) &&
			    !bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
				ids->id[ids->n++] = info.id;
		}
	}
}

/* The helper process of hand_over_uprobes: it keeps only keep[] (sorted,
 * wait_fd among them), waits for EOF on wait_fd, then closes the rest of
 * keep[] one after another (write_fd: the pipe's other end, closed). Only
 * async-signal-safe calls: it is a fork of a threaded process. */
static void __attribute__((noreturn)) release_later(const int *keep, int n, int wait_fd, int write_fd)
{
	int nul = open("/dev/null", O_RDWR), from = 3;
	char c;
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;

	/* record's handlers would make it ignore a kill */
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	prctl(PR_SET_NAME, "latsplit-detach");
	for (int fd = 0; fd < 3 && nul >= 0; fd++)
		dup2(nul, fd);
	/* the rest goes now: the capture file, a --metrics port, maps */
	for (int i = 0; i < n; i++) {
		if (keep[i] > from)
			close_range((unsigned)from, (unsigned)keep[i] - 1, 0);
		from = keep[i] + 1;
	}
	close_range((unsigned)from, ~0u, 0);
	close(write_fd); /* (so the EOF does not wait on us, whatever close_range did) */
	while (read(wait_fd, &c, 1) < 0 && errno == EINTR)
		;
	for (int i = 0; i < n; i++)
		close(keep[i]);
	_exit(0);
}

/* A perf-event uprobe's release waits for RCU grace periods in the kernel
 * with its event mutex held: ~80 ms each here, one after another whatever the
 * thread, and a default recording has ~26 of them (libssl, the engine's and
 * the CUPTI shim's probes): ~1.5 s of every record's exit. Where uprobes are
 * such links (no uprobe_multi: libbpf < 1.3 or Linux < 6.6), a helper
 * process, "latsplit-detach", takes them over: ours then only drop
 * references, and it releases them once ours are gone (EOF on the pipe
 * returned: its write end, to close then; -1: nothing handed over). The
 * probes stay attached ~2 s after record exits; what they emit nobody reads. */
static int hand_over_uprobes(const struct ls_bpf *b)
{
	struct prog_ids ids;
	int keep[1024], n, pfd[2];
	pid_t pid;

	uprobe_prog_ids(b, &ids);
	n = ids.n ? link_fds(is_uprobe_perf_link, &ids, keep, (int)(sizeof(keep) / sizeof(keep[0])) - 1) : 0;
	if (!n || pipe2(pfd, O_CLOEXEC))
		return -1;
	keep[n++] = pfd[0];
	qsort(keep, (size_t)n, sizeof(*keep), cmp_int);
	pid = fork();
	if (pid == 0) {
		if (fork())
			_exit(0); /* the helper is orphaned: no zombie of ours */
		release_later(keep, n, pfd[0], pfd[1]);
	}
	close(pfd[0]);
	if (pid < 0) {
		close(pfd[1]);
		return -1;
	}
	waitpid(pid, NULL, 0);
	return pfd[1];
}

/* Every link, destroyed, the arrays emptied. The USDT links (engine and
 * CUPTI-shim probes) are destroyed one after another first: each gives its
 * spec ids back to the object's USDT manager, which is not thread-safe (two
 * at once: free(): invalid pointer). Their kernel links' releases, held
 * back by duplicates (dup_multi_links), then run in parallel with the rest. */
static void *detach_all(void *arg)
{
#define LINKS(m) (sizeof(((struct ls_bpf *)0)->m) / sizeof(struct bpf_link *))
	enum {
		MAX_ITEMS = 2 * (MAX_TPS + LINKS(sock_links) + LINKS(gpu_links) + LINKS(sample_links) +
				 LINKS(tls_links) + LINKS(engine_links))
	};
#undef LINKS
	struct teardown all[MAX_ITEMS];
	struct ls_bpf *b = arg;
	int n = b->nengine_links ? dup_multi_links(all, MAX_ITEMS / 2) : 0;
	int release_fd = b->multi ? -1 : hand_over_uprobes(b);

	for (int i = 0; i < b->nengine_links; i++)
		bpf_link__destroy(b->engine_links[i]);
	for (int i = 0; i < b->ntps; i++)
		all[n++] = (struct teardown){b->tps[i].link, -1};
	for (int i = 0; i < b->nsock_links; i++)
		all[n++] = (struct teardown){b->sock_links[i], -1};
	for (int i = 0; i < b->ngpu_links; i++)
		all[n++] = (struct teardown){b->gpu_links[i], -1};
	for (int i = 0; i < b->ntls_links; i++)
		all[n++] = (struct teardown){b->tls_links[i], -1};
	for (int i = 0; i < b->nsample_links; i++)
		all[n++] = (struct teardown){b->sample_links[i], -1};
	teardown_all(all, n);
	if (release_fd >= 0)
		close(release_fd);
	for (int i = 0; i < b->ntps; i++)
		b->tps[i].link = NULL;
	b->nsock_links = b->nengine_links = b->ngpu_links = b->ntls_links = b->nsample_links = 0;
	return NULL;
}

void ls_bpf_detach(struct ls_bpf *b)
{
	if (!b || b->detaching)
		return; /* (done synchronously before: the link arrays are empty) */
	b->detaching = !pthread_create(&b->detacher, NULL, detach_all, b);
	if (!b->detaching)
		detach_all(b);
}

void ls_bpf_stop(struct ls_bpf *b)
{
	if (!b)
		return;
	if (b->detaching)
		pthread_join(b->detacher, NULL);
	else
		detach_all(b);
	ring_buffer__free(b->rb);
	if (b->tgid_bits)
		munmap(b->tgid_bits, LS_TGID_WORDS * sizeof(__u64));
	for (size_t i = NSOURCES; i-- > 0;)
		sources[i].destroy(b);
	free(b);
}
