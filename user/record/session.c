// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One recording (see session.h): attach (record/loader.c), track the chosen
 * processes and ports (record/tracking.c), stream every event into a capture
 * file through the consumer (record/recorder.c) and the live analysis, until
 * the duration elapses, the command exits, or SIGINT/SIGTERM/SIGHUP. Always
 * ends the file with a trailer.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "export/otlp.h"
#include "grow.h"
#include "live.h"
#include "otlp_recv.h"
#include "probe.h"
#include "proc.h"
#include "session.h"

#define FLUSH_NS 200000000ull   /* a frame at least every 200 ms */
#define DROPS_NS 1000000000ull  /* drop counters into the capture every 1 s */
#define BACKUP_NS 20000000ull   /* skipped syscall-program runs, eh table misses: every 20 ms */
#define SCAN_NS 100000000ull    /* new processes' probe files looked for every 100 ms */
#define EVRING_NS 10000000ull   /* the engines' event rings read every 10 ms */
#define CHECKPOINT_NS 5000000000ull /* stacks and their symbols every 5 s */
#define LIVE_TICK_NS 250000000ull /* live analysis clock, flight-recorder dumps */

struct ls_session {
	struct ls_rec_opts *o;
	struct ls_recorder r;
	struct ls_file_hdr hdr;
	struct ls_live live;
	struct ls_otlp *otlp;
	struct ls_otlp_recv *otlp_recv; /* --otlp-receive */
	struct ls_top_window recent; /* top's screen */
	bool track_all;
	int ntargets; /* -p's (the --port owners follow them in o->pids) */
	pid_t child;
	int go_fd, child_status;
	bool child_done, child_killed; /* killed: by us, at the end */
	char target[256];              /* what is tracked, in words */
	char self_lib[2][4096];
	struct termios tio_old;
	bool raw_tty;
	unsigned long shown; /* top's snapshots */
	__u64 stop_ts;
	/* tracked processes whose maps probe_scan reads: since when, how often */
	struct scan_seen {
		pid_t pid;
		unsigned scans;
		__u64 since;
	} *scan_seen;
	size_t nscan_seen, capscan_seen;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* Another `record -o` of the same path moved this capture to PATH.old while
 * it was written: say where the data is, not a name that now holds another. */
static void replaced_warning(const char *path, ino_t ino, dev_t dev)
{
	struct stat st;
	char old[4096];

	if (!ino || (stat(path, &st) == 0 && st.st_ino == ino && st.st_dev == dev))
		return;
	snprintf(old, sizeof(old), "%s.old", path);
	if (stat(old, &st) == 0 && st.st_ino == ino && st.st_dev == dev)
		fprintf(stderr, "latsplit record: warning: %s was replaced while recording (another "
				"record -o %s?); this capture is now %s\n", path, path, old);
	else
		fprintf(stderr, "latsplit record: warning: %s was moved or removed while recording; "
				"this capture is no longer there\n", path);
}

static void print_summary(const struct ls_recorder *r, const char *path, __u64 dur_ns,
			  const struct ls_writer_stats *ws, unsigned long long drops, int level)
{
	fprintf(stderr, "latsplit record: %.2f s, %llu events written to %s\n", dur_ns / 1e9,
		(unsigned long long)r->events, path);
	fprintf(stderr, "  by type:");
	for (int t = 1; t < LS_EV_KERNEL_MAX; t++)
		if (r->per_type[t])
			fprintf(stderr, " %s=%llu", ls_type_name(t), (unsigned long long)r->per_type[t]);
	if (r->arrivals_folded || r->arrivals_unread) /* emit by exception, as below */
		fprintf(stderr, "; tcp_probe carried by the read's sock_io: %llu (held to the end, "
			"never read: %llu)",
			(unsigned long long)r->arrivals_folded, (unsigned long long)r->arrivals_unread);
	if (r->xmit_folded) /* emit by exception: one record, not two */
		fprintf(stderr, "; tcp_xmit carried by the write's sock_io: %llu",
			(unsigned long long)r->xmit_folded);
	if (r->wakeups_folded)
		fprintf(stderr, "; sched_wakeup carried by the switch-in's sched_switch: %llu",
			(unsigned long long)r->wakeups_folded);
	fprintf(stderr, "\n  %.2f MB raw -> %.2f MB on disk (%.1fx, zlib %d), %llu frames, %.1f bytes/event\n",
		ws->raw_bytes / 1e6, ws->file_bytes / 1e6,
		ws->file_bytes ? (double)ws->raw_bytes / ws->file_bytes : 0.0, level,
		(unsigned long long)ws->frames,
		ws->records ? (double)ws->file_bytes / ws->records : 0.0);
	fprintf(stderr, "  ring-buffer drops: %llu; writer stalls: %llu (%.1f ms)\n", drops,
		(unsigned long long)ws->stalls, ws->stall_ns / 1e6);
	if (r->per_type[LS_EV_ENGINE_RING] || r->evr.read)
		fprintf(stderr, "  engine events read from the engines' rings: %llu; lost (overwritten "
				"before read): %llu; rings whose process ended or exec'd first: %llu "
				"(its last events may be missing); refused (not a ring): %llu; met "
				"after a ring's worth of events (earlier ones may be missing): %llu\n",
			r->evr.read, r->evr.lost, r->evr.gone, r->evr.bad, r->evr.met_late);
	if (r->unwind) {
		const struct ls_unwind_stats *u = ls_unwind_stats(r->unwind);
		fprintf(stderr,
			"  user stacks unwound by DWARF: %llu, %.1f frames each, %.1f us each (%.0f "
			"stacks/s); stopped short: %llu at a frame without CFI, %llu at the end of "
			"the copied stack, %llu failed\n",
			u->stacks, u->stacks ? (double)u->frames / u->stacks : 0.0,
			u->stacks ? u->ns / 1e3 / u->stacks : 0.0, u->ns ? u->stacks * 1e9 / u->ns : 0.0,
			u->stopped[LS_UNWIND_NO_CFI], u->stopped[LS_UNWIND_STACK_END],
			u->stopped[LS_UNWIND_ERROR]);
	}
	if (r->eh) {
		const struct ls_eh_stats *e = ls_eh_stats(r->eh);
		fprintf(stderr,
			"  user stacks unwound in the kernel by table: %llu distinct, %.1f frames each "
			"(%llu by frame pointer); stopped short: %llu at a frame without a rule, %llu "
			"at the depth limit, %llu failed; tables: %llu files, %llu rows, %.1f ms to "
			"build, %llu files without one%s%s%s\n",
			(unsigned long long)r->eh_stacks,
			r->eh_stacks ? (double)r->eh_frames / r->eh_stacks : 0.0,
			(unsigned long long)r->eh_fp_frames,
			(unsigned long long)r->eh_stopped[LS_UNWIND_NO_CFI],
			(unsigned long long)r->eh_stopped[LS_UNWIND_STACK_END],
			(unsigned long long)r->eh_stopped[LS_UNWIND_ERROR], e->files, e->rows,
			e->build_ns / 1e6, e->no_table, e->rows_full ? " (table map full)" : "",
			e->procs_over ? " (process map full: some processes by frame pointers)" : "",
			e->maps_over ? " (processes with over 64 mapped files: the smallest tables "
				       "left out)" : "");
	}
	if (r->py && ls_py_unnamed(r->py))
		fprintf(stderr, "  Python frames that could not be named (process memory unreadable): "
				"%llu\n", ls_py_unnamed(r->py));
	if (r->py && ls_py_over_budget(r->py))
		fprintf(stderr, "  Python frames named without a line, or not at all, because a traced "
				"process reached the recorder's memory budget (code objects, line "
				"tables): %llu\n", ls_py_over_budget(r->py));
	if (r->proc_new_lost)
		fprintf(stderr, "  new processes whose mappings were not looked at for probe files (more "
				"than %d forks and execs within 0.1 s): %llu\n",
			LS_PROC_NEW_MAX, r->proc_new_lost);
	if (ls_sym_dropped(r->sym))
		fprintf(stderr, "  symbols not kept: the symbolizer's budget for symbol tables (192 MiB) "
				"was reached: %llu (their addresses show as [unknown])\n",
			(unsigned long long)ls_sym_dropped(r->sym));
	if (drops)
		fprintf(stderr,
			"latsplit record: warning: %llu events lost (BPF ring buffer full): raise "
			"--ringbuf or narrow with -p/--port\n",
			drops);
}

/* What is tracked, in words (top's header). */
static void target_words(char *buf, size_t len, const unsigned long *pids, int npids,
			 const unsigned long *ports, int nports, char **cmd)
{
	int n = 0;

	buf[0] = '\0';
	if (cmd)
		n += snprintf(buf + n, len - n, "%s", cmd[0]);
	for (int i = 0; i < npids && n < (int)len; i++)
		n += snprintf(buf + n, len - n, "%spid %lu", n ? ", " : "", pids[i]);
	for (int i = 0; i < nports && n < (int)len; i++)
		n += snprintf(buf + n, len - n, "%sport %lu", n ? ", " : "", ports[i]);
	if (!buf[0])
		snprintf(buf, len, "all processes");
}

static void checkpoint_stacks(void *ctx)
{
	struct ls_recorder *r = ctx;

	ls_recorder_stacks(r, r->symbolize);
}

/* Privileges, signals, the --port owners, then every BPF source attached.
 * 0, or -1 (said why). */
static int attach(struct ls_session *s)
{
	struct ls_rec_opts *o = s->o;
	struct ls_recorder *r = &s->r;
	char err[512];

	if (ls_check_privileges(err, sizeof(err))) {
		ls_err("record", "%s", err);
		return -1;
	}
	ls_libbpf_verbose(o->verbose);
	/* Before anything is loaded: a Ctrl-C or TERM during start-up (seconds
	 * of BPF loading) must stop record, not be lost. A background job of a
	 * script starts with SIGINT ignored, and `make demo` once waited
	 * forever on a record that had ignored its INT. */
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL); /* a closed terminal: stop cleanly, trailer included */

	s->track_all = !o->npids && !o->nports && !o->command;
	s->ntargets = o->npids;
	if (o->nports)
		ls_port_owners(o->ports, o->nports, o->pids, &o->npids);
	for (int i = 0; i < o->nports; i++) {
		bool owned = false;
		for (int k = s->ntargets; k < o->npids; k++) {
			__u16 lp[LS_MAX_PORTS];
			int nl = ls_proc_listen_ports(o->pids[k], lp, LS_MAX_PORTS);
			for (int j = 0; j < nl; j++)
				owned |= lp[j] == o->ports[i];
		}
		if (!owned)
			fprintf(stderr, "latsplit record: no process listens on :%lu; waiting for one\n",
				o->ports[i]);
	}
	r->targets = o->pids;
	r->ntargets = r->targets_alive = s->ntargets;

	if (o->no_engine)
		o->nengine_paths = 0;
	else if (!o->nengine_paths)
		o->nengine_paths = ls_default_engine_paths(o->engine_paths, s->self_lib);
	struct ls_bpf_opts bo = {.track_all = s->track_all,
				 .ringbuf_bytes = o->ringbuf_mb << 20,
				 .capture_bytes = o->capture_bytes,
				 .no_sock = o->no_sock,
				 .sock_hooks = o->sock_hooks,
				 .sample_freq = o->freq,
				 .sample_all = o->sample_all,
				 .offcpu_stacks = o->offcpu,
				 .kstack_min_ns = o->kstack_min_us * 1000ull,
				 .ustack_bytes = (unsigned)o->ustack_bytes,
				 .eh_rows = (o->freq || o->offcpu) ? (unsigned)o->eh_rows : 0,
				 .stack_entries = o->stack_entries,
				 .engine = !o->no_engine,
				 .nengine_paths = o->nengine_paths,
				 .on_record = ls_recorder_on_record,
				 .ctx = r};
	for (int i = 0; i < o->nengine_paths; i++)
		bo.engine_paths[i] = o->engine_paths[i];
	if (!o->ncuda_paths) {
		static const char *const sys[] = {"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
						  "/usr/lib64/libcuda.so.1", "/usr/lib/libcuda.so.1"};
		for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]) && o->ncuda_paths < 4; i++)
			if (!access(sys[i], R_OK))
				o->cuda_paths[o->ncuda_paths++] = sys[i];
	}
	for (int i = 0; i < o->ncuda_paths; i++)
		bo.cuda_paths[i] = o->cuda_paths[i];
	bo.ncuda_paths = o->ncuda_paths;
	int e = ls_bpf_start(&r->bpf, &bo, err, sizeof(err));
	if (e && bo.eh_rows && !o->eh_asked &&
	    (strstr(err, "BPF programs") || strstr(err, "shared BPF maps"))) {
		/* the default's table walk does not load here: frame pointers */
		fprintf(stderr, "latsplit record: user stacks by frame pointers only: the unwind-table "
				"walk or its maps do not load here (%s; --call-graph fp skips them)\n", err);
		bo.eh_rows = 0;
		o->eh_rows = 0;
		e = ls_bpf_start(&r->bpf, &bo, err, sizeof(err));
	}
	if (e) {
		ls_err("record", "%s", err);
		return -1;
	}
	if (ls_bpf_missing(r->bpf)[0])
		fprintf(stderr, "latsplit record: not available on this kernel: %s\n",
			ls_bpf_missing(r->bpf));
	if (o->verbose)
		fprintf(stderr, "latsplit record: uprobes (libssl, libcuda) as %s\n",
			ls_uprobe_multi() ? "uprobe_multi links"
			: LS_HAVE_UPROBE_MULTI
			? "perf-event links (this kernel has no uprobe_multi: Linux < 6.6; "
			  "released after exit by a latsplit-detach process)"
			: "perf-event links (built with libbpf < 1.3: no uprobe_multi; "
			  "released after exit by a latsplit-detach process)");
	return 0;
}

/* A kind's probes on one file: said once per file attached, or why not
 * (pid: the process found mapping it, 0 for the system's or a given one;
 * shown: the path as that process maps it). */
static void probe_attach(struct ls_session *s, enum ls_probe_kind kind, const char *path,
			 const char *shown, pid_t pid)
{
	int n = ls_bpf_probe_file(s->r.bpf, kind, path);
	char whose[64] = "";

	if (pid && strcmp(path, shown)) /* a container's, or replaced on disk since */
		snprintf(whose, sizeof(whose), " (the file pid %d maps, not the host's)", pid);
	else if (pid)
		snprintf(whose, sizeof(whose), " (mapped by pid %d)", pid);
	if (n > 0 && kind == LS_PROBE_TLS)
		fprintf(stderr, "latsplit record: TLS plaintext through %s%s (%d of SSL_read, SSL_read_ex, "
			"SSL_write, SSL_write_ex)\n", shown, whose, n);
	else if (n > 0 && (pid || s->o->verbose))
		fprintf(stderr, "latsplit record: %s probes in %s%s (%d)\n",
			kind == LS_PROBE_ENGINE ? "engine" : "libcuda", shown, whose, n);
	else if (n == -ENOENT && pid)
		fprintf(stderr, "latsplit record: pid %d maps %s, which has no %s\n", pid, shown,
			kind == LS_PROBE_TLS ? "SSL_read or SSL_write (stripped or static libssl): its TLS "
					       "stays unread"
			: kind == LS_PROBE_ENGINE ? "latsplit USDT probes: its engine events stay unseen"
						  : "cuLaunchKernel or cuMemcpy symbols");
	else if (n == -ENOSPC && pid)
		fprintf(stderr, "latsplit record: pid %d maps %s, one %s file more than the %d probed: "
			"not probed\n", pid, shown, ls_probe_kind_name[kind], LS_PROBE_MAX_FILES);
}

/* When a tracked process's maps are read for the files probes attach to,
 * in ns after it was first seen: a few times while it starts (Python
 * imports ssl or loads the engine library after exec, a container brings
 * its own), then never: reading /proc/PID/maps holds the process's mmap
 * lock, and its allocator's mmap waits on the reader. */
static const __u64 scan_at[] = {0,           100000000ull,  300000000ull,  600000000ull,
				1000000000ull, 2000000000ull, 4000000000ull, 15000000000ull};

static struct scan_seen *scan_entry(struct ls_session *s, pid_t pid, bool add, __u64 now)
{
	for (size_t j = 0; j < s->nscan_seen; j++)
		if (s->scan_seen[j].pid == pid)
			return &s->scan_seen[j];
	if (!add)
		return NULL;
	GROW(s->scan_seen, s->nscan_seen, s->capscan_seen);
	s->scan_seen[s->nscan_seen] = (struct scan_seen){.pid = pid, .since = now};
	return &s->scan_seen[s->nscan_seen++];
}

/* Probe files the tracked processes map, wherever they live (a container's
 * root too): the system's libssl at start, then the libssl, engine library,
 * CUPTI shim and libcuda of each process announced (targets, listeners, the
 * command), and of each process they fork or exec (when every process is
 * traced: of those whose parent is looked at), on scan_at's schedule from
 * its fork or exec. A process done with its schedule and gone is dropped. */
static void probe_scan(struct ls_session *s, bool first)
{
	static const char *const sys[] = {
		"/usr/lib/x86_64-linux-gnu/libssl.so.3", "/usr/lib/aarch64-linux-gnu/libssl.so.3",
		"/usr/lib64/libssl.so.3", "/usr/lib/libssl.so.3", "/usr/lib/x86_64-linux-gnu/libssl.so.1.1"};
	const size_t nsched = sizeof(scan_at) / sizeof(scan_at[0]);
	struct ls_proc_lib libs[6];
	struct ls_recorder *r = &s->r;
	bool tls = !s->o->no_sock && !s->o->no_tls && (ls_bpf_sources(r->bpf) & LS_SRC_SOCK_IO);

	if (first && tls)
		for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
			if (!access(sys[i], R_OK))
				probe_attach(s, LS_PROBE_TLS, sys[i], sys[i], 0);
	__u64 now = ls_now_ns();
	for (size_t i = 0; i <= r->nknown; i++) {
		pid_t pid = i < r->nknown ? r->known[i] : s->child;
		if (pid > 0)
			scan_entry(s, pid, true, now);
	}
	for (size_t i = 0; i < r->nproc_new; i++) {
		const struct ls_proc_new *pn = &r->proc_new[i];
		struct scan_seen *t = scan_entry(s, pn->pid, false, now);
		if (!t && (!s->track_all || (pn->ppid && scan_entry(s, pn->ppid, false, now))))
			t = scan_entry(s, pn->pid, true, now);
		if (t && !pn->ppid) /* a new image: its own libraries, from its start */
			t->since = now, t->scans = 0;
	}
	r->nproc_new = 0;
	for (size_t i = 0; i < s->nscan_seen; i++) {
		struct scan_seen *t = &s->scan_seen[i];
		if (t->scans >= nsched || now - t->since < scan_at[t->scans])
			continue;
		t->scans++;
		int n = ls_proc_probe_libs(t->pid, libs, (int)(sizeof(libs) / sizeof(libs[0])));
		for (int k = 0; k < n; k++) {
			enum ls_probe_kind kind = libs[k].kind == LS_PROC_LIB_SSL	? LS_PROBE_TLS
						  : libs[k].kind == LS_PROC_LIB_ENGINE ? LS_PROBE_ENGINE
										 : LS_PROBE_CUDA;
			if (kind == LS_PROBE_TLS && !tls)
				continue;
			probe_attach(s, kind, libs[k].path, libs[k].shown, t->pid);
		}
	}
	for (size_t i = 0; i < s->nscan_seen;) /* done with and gone */
		if (s->scan_seen[i].scans >= nsched && !ls_proc_alive(s->scan_seen[i].pid))
			s->scan_seen[i] = s->scan_seen[--s->nscan_seen];
		else
			i++;
}

/* The live analysis and its sinks: metrics and top (live.c), the flight
 * recorder's trigger, OTLP export. 0, or -1 (said why). */
static int start_live(struct ls_session *s)
{
	struct ls_rec_opts *o = s->o;
	struct ls_sink more[LS_LIVE_SINKS - 1];
	size_t nmore = 0;
	char err[512];

	if (o->top) {
		s->recent.window_ns = 10000000000ull;
		more[nmore++] = ls_top_sink(&s->recent);
	}
	if (o->flight_s)
		more[nmore++] = ls_flight_sink(&o->flight);
	if (o->otlp_url) {
		if (!(s->otlp = ls_otlp_new(o->otlp_url, err, sizeof(err)))) {
			ls_err("record", "%s", err);
			return -1;
		}
		more[nmore++] = ls_otlp_sink(s->otlp);
	}
	if (ls_live_init(&s->live, &s->hdr, more, nmore, err, sizeof(err))) {
		ls_err("record", "%s", err);
		return -1;
	}
	s->r.taps[s->r.ntaps++] = (struct ls_tap){ls_live_record, &s->live};
	if (o->metrics && ls_live_serve(&s->live, o->metrics, err, sizeof(err))) {
		ls_err("record", "%s", err);
		return -1;
	}
	return 0;
}

/* The capture file (an existing one kept as .old), its header, the
 * symbolizer and stack namers, the flight recorder, the live analysis.
 * 0, or -1 (said why). */
static int open_outputs(struct ls_session *s, int argc, char **argv)
{
	struct ls_rec_opts *o = s->o;
	struct ls_recorder *r = &s->r;
	const char *path = o->path;
	char old[4096], err[512];
	struct stat sb;

	/* Keep an existing capture as .old, like perf: only a regular file.
	 * Anything else at the path (a device such as /dev/null, a directory,
	 * a FIFO, a symlink) is refused, checked before anything is attached. */
	if (path && lstat(path, &sb) == 0) {
		if (!S_ISREG(sb.st_mode)) {
			ls_err("record", "-o %s: no longer a regular file; not replaced", path);
			return -1;
		}
		snprintf(old, sizeof(old), "%s.old", path);
		if (rename(path, old)) {
			ls_err("record", "%s exists and cannot be renamed to %s: %s", path, old,
			       strerror(errno));
			return -1;
		}
	}
	ls_file_hdr_init(&s->hdr, argc + 1, argv - 1);
	s->hdr.sources = ls_bpf_sources(r->bpf) | (o->offcpu ? LS_SRC_OFFCPU : 0) |
			 (o->otlp_receive ? LS_SRC_OTLP_RECV : 0);
	r->symbolize = o->symbolize;
	r->capture_bodies = o->capture_bodies;
	r->sym = ls_sym_new();
	if ((o->freq || o->offcpu) && o->symbolize) {
		if (r->sym) /* kernel stacks to name: read off the draining thread */
			ls_sym_prefetch_kernel(r->sym);
		/* interpreters found as processes are announced; their frames
		 * can only be named while they live */
		r->py = ls_py_new(ls_bpf_py_set, r->bpf);
	}
	if (o->ustack_bytes && (o->freq || o->offcpu))
		r->unwind = ls_unwind_new();
	if (o->eh_rows && (o->freq || o->offcpu)) {
		struct ls_eh_ops ops = {ls_bpf_eh_rows, ls_bpf_eh_pages, ls_bpf_eh_proc, r->bpf};
		r->eh = ls_eh_new(&ops, (__u32)o->eh_rows, (__u32)o->eh_rows / 2);
	}
	if (r->sym && o->debug_dir)
		ls_sym_set_debug_dir(r->sym, o->debug_dir);
	s->hdr.track_all = s->track_all;
	struct ls_writer_opts wo = {.zlib_level = o->level};
	int e = path ? ls_writer_open(&r->w, path, &s->hdr, &wo) : 0;
	if (e) {
		ls_err("record", "cannot create %s: %s", path, strerror(-e));
		return -1;
	}
	if (path && stat(path, &sb) == 0) {
		r->w_ino = sb.st_ino;
		r->w_dev = sb.st_dev;
	}
	if (o->flight_s) {
		ls_flight_init(&o->flight, &s->hdr, err, sizeof(err));
		r->taps[r->ntaps++] = (struct ls_tap){ls_flight_record, &o->flight};
	}
	if (o->otlp_receive &&
	    !(s->otlp_recv = ls_otlp_recv_start(o->otlp_receive, s->hdr.realtime_ns,
						s->hdr.monotonic_ns, err, sizeof(err)))) {
		ls_err("record", "%s", err);
		return -1;
	}
	return o->live_on ? start_live(s) : 0;
}

/* Engine spans received since the last look go into the capture. */
static void take_spans(struct ls_session *s)
{
	if (s->otlp_recv)
		ls_otlp_recv_take(s->otlp_recv, ls_recorder_write, &s->r);
}

/* The ports followed, the command started (held until everything is
 * attached), the processes tracked; then the command goes. 0, or -1. */
static int start_targets(struct ls_session *s)
{
	struct ls_rec_opts *o = s->o;
	struct ls_recorder *r = &s->r;

	/* before any probe attaches: a ring's slots are written only while an
	 * agent is attached, so those from here on belong to this recording */
	r->evr.since = ls_now_ns();
	for (int i = 0; i < o->nports; i++)
		ls_bpf_track_port(r->bpf, o->ports[i], true);
	if (o->command) {
		s->child = ls_spawn_waiting(o->command, &s->go_fd);
		if (s->child < 0) {
			ls_err("record", "cannot start %s: %s", o->command[0], strerror(errno));
			return -1;
		}
		unsigned long cp = s->child;
		ls_track_tree(r, &cp, 1, NULL);
	}
	if (o->npids)
		ls_track_tree(r, o->pids, o->npids, NULL);
	if (s->track_all) {
		size_t n;
		pid_t *all = ls_proc_list(&n);
		for (size_t i = 0; i < n; i++)
			ls_recorder_proc_info(r, all[i]);
		free(all);
	}
	probe_scan(s, true);
	r->start_ts = ls_now_ns();
	if (s->go_fd >= 0 && stop_signal) { /* stopped while starting: the command never runs */
		kill(s->child, SIGKILL);
		close(s->go_fd);
		s->go_fd = -1;
	}
	if (s->go_fd >= 0) {
		if (write(s->go_fd, "g", 1) != 1)
			ls_err("record", "cannot start the command: %s", strerror(errno));
		close(s->go_fd);
		s->go_fd = -1;
	}
	if (!o->top)
		fprintf(stderr, "latsplit record: recording %s to %s%s%s%s\n",
			s->track_all ? "all processes" : "tracked processes", o->path ? o->path : "no file",
			o->flight_s ? " (flight recorder on)" : "", o->metrics ? " (metrics served)" : "",
			o->duration ? "" : " (Ctrl-C to stop)");
	target_words(s->target, sizeof(s->target), o->pids, s->ntargets, o->ports, o->nports,
		     o->command);
	return 0;
}

/* top's screen, once. false: the snapshots asked for are shown. */
static bool show_top(struct ls_session *s, __u64 now)
{
	const struct ls_top_opts *top = s->o->top;
	struct ls_live *l = &s->live;
	struct ls_top_status ts = {.target = s->target,
				   .elapsed_s = (now - s->r.start_ts) / 1e9,
				   .in_flight = ls_analysis_in_flight(&l->a),
				   .drops = ls_bpf_drops(s->r.bpf, NULL, 0),
				   .stacks_lost = ls_bpf_stack_errors(s->r.bpf),
				   .total_requests = l->a.n,
				   .have_gpu = ls_timeline_has_gpu(l->a.tl),
				   .have_sched = ls_timeline_has_sched(l->a.tl),
				   .have_engine = ls_timeline_has_engine(l->a.tl),
				   .clear = s->raw_tty};

	ls_top_expire(&s->recent, l->a.now);
	ls_top_render(stdout, &s->recent, &ts);
	if (top->count && ++s->shown >= top->count)
		return false;
	if (!s->raw_tty)
		fputs("\n", stdout);
	return true;
}

/* Why the loop stops, other than a signal: q, a write error, the duration,
 * the command's exit, every -p target gone. */
static bool keep_going(struct ls_session *s, __u64 now, __u64 end_ts)
{
	struct ls_recorder *r = &s->r;
	char c;

	if (s->raw_tty && read(0, &c, 1) == 1 && (c == 'q' || c == 'Q'))
		return false;
	if (r->write_err) {
		ls_err("record", "writing %s: %s", s->o->path, strerror(-r->write_err));
		return false;
	}
	if (end_ts && now >= end_ts)
		return false;
	if (s->child > 0 && waitpid(s->child, &s->child_status, WNOHANG) == s->child) {
		s->child_done = true;
		return false;
	}
	/* Like perf record -p: when every target is gone, stop, unless a
	 * --port is followed (a restart may come) or a command runs. */
	if (r->ntargets && r->targets_alive <= 0 && !s->o->nports && s->child < 0) {
		fprintf(stderr, "latsplit record: every -p process exited; stopping\n");
		return false;
	}
	return true;
}

/* The poll loop and its timers: drop counters, stack checkpoints, frame
 * flushes, the live clock, top's screen. */
/* --call-graph eh: the processes whose stacks met no table (new ones, or
 * an address outside the mappings last read) get their tables. */
static void eh_scan(struct ls_session *s, __u64 now)
{
	struct ls_recorder *r = &s->r;
	__u32 pids[256];
	int n;

	if (!r->eh)
		return;
	n = ls_bpf_eh_missed(r->bpf, pids, 256);
	for (int i = 0; i < n; i++)
		ls_eh_missed(r->eh, (pid_t)pids[i], now);
}

static void run(struct ls_session *s)
{
	struct ls_rec_opts *o = s->o;
	struct ls_recorder *r = &s->r;
	__u64 start = r->start_ts, last_tick = start, last_top = start, last_flush = start,
	      last_drops = start, last_ckpt = start, last_backup = start, last_scan = start,
	      last_evr = start;
	__u64 top_every = o->top ? (__u64)(o->top->interval_s * 1e9) : 0;
	__u64 end_ts = o->duration ? start + (__u64)(o->duration * 1e9) : 0;

	s->raw_tty = o->top && !o->top->count && isatty(0) && !tcgetattr(0, &s->tio_old);
	if (s->raw_tty) { /* q quits; no echo */
		struct termios t = s->tio_old;
		t.c_lflag &= ~(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		tcsetattr(0, TCSANOW, &t);
	}
	while (!stop_signal) {
		int n = ls_bpf_poll(r->bpf, 50);
		__u64 now = ls_now_ns();

		if (n < 0 && n != -EINTR) {
			ls_err("record", "reading the ring buffer: %s", strerror(-n));
			break;
		}
		take_spans(s);
		if (now - last_evr >= EVRING_NS) {
			ls_evrings_poll(&r->evr, ls_recorder_on_record, r);
			last_evr = now;
		}
		if (now - last_scan >= SCAN_NS) {
			probe_scan(s, false);
			last_scan = now;
		}
		if (now - last_backup >= BACKUP_NS) { /* two bpf_obj_get_info calls */
			eh_scan(s, now); /* and one map key lookup */
			int bk = ls_bpf_sys_backups(r->bpf);

			if (bk && !o->top)
				fprintf(stderr, "latsplit record: the kernel skips runs of the syscall "
						"programs (faultable syscall tracepoints): %s\n",
					bk > 0 ? "backup programs attached" : "backup programs failed to attach");
			last_backup = now;
		}
		if (now - last_drops >= DROPS_NS) {
			ls_recorder_drops(r);
			if (r->sym)
				ls_sym_poll_jit(r->sym);
			last_drops = now;
		}
		if (now - last_ckpt >= CHECKPOINT_NS) {
			ls_recorder_stacks(r, o->symbolize);
			last_ckpt = now;
		}
		if (now - last_flush >= FLUSH_NS) {
			if (r->w)
				ls_writer_flush(r->w);
			last_flush = now;
		}
		if (o->live_on && now - last_tick >= LIVE_TICK_NS) {
			ls_live_tick(&s->live, now, ls_bpf_drops(r->bpf, NULL, 0), ls_bpf_stack_errors(r->bpf));
			if (o->flight_s)
				ls_flight_tick(&o->flight, checkpoint_stacks, r);
			last_tick = now;
		}
		if (o->top && now - last_top >= top_every) {
			last_top = now;
			if (!show_top(s, now))
				break;
		}
		if (!keep_going(s, now, end_ts))
			break;
	}
}

/* Tracing ends: what is in the ring, the command stopped, stacks and
 * symbols, the live analysis drained, and what each part counted. */
static void stop_tracing(struct ls_session *s)
{
	struct ls_rec_opts *o = s->o;
	struct ls_recorder *r = &s->r;
	struct ls_flight *f = &o->flight;
	char err[512];

	ls_bpf_poll(r->bpf, 0); /* events already in the ring buffer belong to the capture */
	ls_evrings_poll(&r->evr, ls_recorder_on_record, r); /* and in the engines' rings */
	if (s->child > 0 && !s->child_done) {
		/* SIGTERM, then SIGKILL if it is still there 3 s later: a command
		 * may ignore SIGTERM (unshare --fork waits for its child with
		 * SIGTERM ignored; a namespace's pid 1 has no default action) */
		kill(s->child, SIGTERM);
		int i = 0;
		pid_t w;
		while ((w = waitpid(s->child, &s->child_status, WNOHANG)) == 0 && i++ < 300) {
			ls_bpf_poll(r->bpf, 10);
		}
		if (w == 0) {
			fprintf(stderr, "latsplit record: the command (pid %d) did not end within 3 s of "
				"SIGTERM: killed\n", s->child);
			kill(s->child, SIGKILL);
			waitpid(s->child, &s->child_status, 0);
		}
		s->child_done = s->child_killed = true;
		ls_bpf_poll(r->bpf, 0);
		ls_evrings_poll(&r->evr, ls_recorder_on_record, r);
	}
	if (s->raw_tty)
		tcsetattr(0, TCSANOW, &s->tio_old);
	if (s->otlp_recv) { /* what came before the end belongs to the capture */
		ls_otlp_recv_stop(s->otlp_recv);
		take_spans(s);
		ls_otlp_recv_summary(s->otlp_recv, err, sizeof(err));
		fprintf(stderr, "latsplit record: %s\n", err);
	}
	s->stop_ts = ls_now_ns(); /* tracing ends; stacks and symbols follow */
	/* arrivals held for reads that never came: theirs, as tcp_probe
	 * records (a read in the last moments may fold one too: then it is
	 * in the capture twice, which the analysis reads as one) */
	r->arrivals_unread += ls_bpf_held_arrivals(r->bpf, ls_recorder_on_record, r);
	ls_bpf_detach(r->bpf);
	/* the rings' last events: none come after the detach (the semaphore
	 * is 0), those before it are the capture's as the probes' were */
	ls_evrings_poll(&r->evr, ls_recorder_on_record, r);
	ls_recorder_flush_held(r, UINT64_MAX);
	ls_recorder_drops(r);
	ls_recorder_stacks(r, o->symbolize);
	if (r->sym)
		ls_recorder_mappings(r);
	unsigned long long stack_errs = ls_bpf_stack_errors(r->bpf);
	if (stack_errs)
		fprintf(stderr,
			"latsplit record: warning: %llu stacks not captured (stack map full or "
			"collisions): raise --stack-entries, lower -F or record for less time\n",
			stack_errs);
	char top[32];
	unsigned long long top_n, skips = ls_bpf_prog_skips(r->bpf, top, sizeof(top), &top_n);
	if (skips) /* the kernel's count: events never made */
		fprintf(stderr,
			"latsplit record: warning: the kernel skipped %llu runs of latsplit's programs "
			"(most: %s, %llu): a run that meets its own unfinished run on a CPU (a "
			"preempted one, where tracepoints are faultable) is not made\n",
			skips, top, top_n);
	if (o->live_on) {
		/* what waits is split now (and may still trigger a dump) */
		ls_live_finish(&s->live);
		if (o->flight_s)
			ls_flight_tick(f, checkpoint_stacks, r);
		if (!o->top)
			fprintf(stderr, "latsplit record: live: %zu requests split%s%llu scrapes%s%llu "
					"HTTP connection errors (clients gone, timed out or over the "
					"limit)\n",
				s->live.a.n, o->metrics ? ", " : "; ", (unsigned long long)s->live.scrapes,
				o->metrics ? ", " : "; ", (unsigned long long)s->live.http_errors);
		if (s->otlp) {
			ls_otlp_summary(s->otlp, err, sizeof(err));
			fprintf(stderr, "latsplit record: %s\n", err);
		}
	}
	if (o->flight_s)
		fprintf(stderr,
			"latsplit record: flight recorder: %llu dumps written%s%s, %llu triggers "
			"suppressed (--max-dumps-per-hour %u), %llu frames evicted early by the "
			"memory cap, %zu frames (%.1f MB) held at the end\n",
			(unsigned long long)f->dumps, f->dumps ? ", last " : "",
			f->dumps ? f->last_path : "", (unsigned long long)f->suppressed,
			f->max_per_hour, (unsigned long long)f->evicted_frames,
			f->nf - f->f0, f->bytes / 1e6);
}

/* The capture's trailer (its stats record) and the summary. 0, or 1. */
static int close_capture(struct ls_session *s)
{
	struct ls_rec_opts *o = s->o;
	struct ls_recorder *r = &s->r;
	struct ls_rec_stats st = {0};
	struct ls_writer_stats ws = {0};
	__u64 now = ls_now_ns();
	unsigned long long drops = ls_bpf_drops(r->bpf, NULL, 0);
	int e;

	if (!r->w) {
		if (!o->top)
			fprintf(stderr, "latsplit record: %.2f s, %llu events, no capture file; "
				"ring-buffer drops: %llu\n",
				(s->stop_ts - r->start_ts) / 1e9, (unsigned long long)r->events, drops);
		return 0;
	}
	ls_writer_stats(r->w, &ws);
	st.h.type = LS_REC_STATS;
	st.h.size = sizeof(st);
	st.h.ts = now;
	st.start_ts = r->start_ts;
	st.end_ts = s->stop_ts;
	st.events = r->events;
	st.ringbuf_drops = drops;
	st.writer_stalls = ws.stalls;
	st.writer_stall_ns = ws.stall_ns;
	for (int t = 0; t < 32 && t < LS_REC_MAX; t++)
		st.per_type[t] = r->per_type[t];
	e = ls_writer_close(r->w, &st.h, &ws);
	r->w = NULL;
	if (e) {
		ls_err("record", "writing %s: %s", o->path, strerror(-e));
		return 1;
	}
	print_summary(r, o->path, s->stop_ts - r->start_ts, &ws, drops, (int)o->level);
	if (!s->track_all)
		fprintf(stderr, "  HTTP requests read by tracked processes: %llu%s\n",
			(unsigned long long)r->request_heads,
			r->request_heads ? "" : " (see latsplit report for why)");
	if (r->h2_lost)
		fprintf(stderr, "  HTTP/2 connections whose frames could not be followed (their bytes "
			"after that point starred): %llu; the first: %s\n",
			(unsigned long long)r->h2_lost, r->h2_lost_why);
	if (r->tls_calls || r->tls_untied)
		fprintf(stderr, "  TLS plaintext reads and writes: %llu tied to their connection, %llu to "
			"none (not kept)\n", (unsigned long long)r->tls_calls,
			(unsigned long long)r->tls_untied);
	unsigned long long ks[3];
	ls_bpf_kstack_stats(r->bpf, ks);
	if (ks[0] || ks[2])
		fprintf(stderr,
			"  off-CPU kernel stacks: %llu blocks of %lu us or more unwound when they ended; "
			"%llu shorter (%.3f s in all) kept their user stack only "
			"(--offcpu-kernel-min-us)\n",
			ks[2], o->kstack_min_us, ks[0], ks[1] / 1e9);
	unsigned long long rf = ls_bpf_retrans_failed(r->bpf);
	if (rf)
		fprintf(stderr, "  TCP retransmission attempts of followed connections that sent nothing "
			"(the kernel's result; not counted as retransmits): %llu\n", rf);
	replaced_warning(o->path, r->w_ino, r->w_dev);
	return 0;
}

/* Like perf record: the command's own status is record's. */
static int command_status(const struct ls_session *s, int rc)
{
	if (s->child_done && WIFEXITED(s->child_status)) {
		rc = WEXITSTATUS(s->child_status);
		if (rc == 127)
			ls_err("record", "the command could not be started (exit 127)");
		else if (rc)
			fprintf(stderr, "latsplit record: the command exited with status %d\n", rc);
	} else if (s->child_done && WIFSIGNALED(s->child_status) && !s->child_killed) {
		rc = 128 + WTERMSIG(s->child_status);
		fprintf(stderr, "latsplit record: the command was killed by signal %d\n",
			WTERMSIG(s->child_status));
	}
	return rc;
}

int ls_session_run(struct ls_rec_opts *o, int argc, char **argv)
{
	struct ls_session *s = calloc(1, sizeof(*s));
	int rc = 1;

	if (!s) {
		ls_err("record", "out of memory");
		return 1;
	}
	s->o = o;
	s->child = -1;
	s->go_fd = -1;
	if (attach(s))
		goto out;
	if (open_outputs(s, argc, argv) || start_targets(s)) {
		if (s->r.w)
			ls_writer_close(s->r.w, NULL, NULL);
		s->r.w = NULL;
		goto out;
	}
	run(s);
	stop_tracing(s);
	rc = close_capture(s);
	if (!rc)
		rc = command_status(s, 0);
out:
	if (s->go_fd >= 0)
		close(s->go_fd);
	if (o->live_on)
		ls_live_free(&s->live);
	ls_otlp_free(s->otlp);
	ls_otlp_recv_free(s->otlp_recv);
	ls_top_free(&s->recent);
	ls_flight_free(&o->flight);
	ls_bpf_stop(s->r.bpf);
	ls_sym_free(s->r.sym);
	ls_recorder_free(&s->r);
	free(s->scan_seen);
	free(s);
	return rc;
}
