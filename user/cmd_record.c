// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit record`: attach, track the chosen processes and ports, and
 * stream every event into a capture file until the duration elapses, the
 * command exits, or SIGINT/SIGTERM. Always ends the file with a trailer.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "cli.h"
#include "loader.h"
#include "probe.h"
#include "proc.h"
#include "grow.h"
#include "http.h"
#include "redact.h"
#include "symbolize.h"

#define MAX_PIDS 256
#define MAX_PORTS 64
#define FLUSH_NS 200000000ull   /* a frame at least every 200 ms */
#define DROPS_NS 1000000000ull  /* drop counters into the capture every 1 s */
#define CHECKPOINT_NS 5000000000ull /* stacks and their symbols every 5 s */
#define MAX_DURATION_S 31536000 /* -d: a year; larger values overflowed the ns deadline */

struct recorder {
	struct ls_writer *w;
	struct ls_bpf *bpf;
	struct ls_symbolizer *sym;
	/* (pid, stack id) pairs seen, as a set: key + 1, 0 = empty slot */
	__u64 *uses;
	size_t nuses, capuses;
	__u32 last_pid; /* the last pid whose mappings are known: most events repeat it */
	__u64 per_type[LS_REC_MAX];
	__u64 events;
	__u64 request_heads; /* reads that began with a whole HTTP request line */
	/* processes announced: tracked at start or met listening on a followed
	 * port; the -p targets, and how many of them still run */
	pid_t *known;
	size_t nknown, capknown;
	const unsigned long *targets;
	int ntargets, targets_alive;
	__u64 start_ts;
	int write_err;
	/* checkpoints: stack ids written (bitmap), (pid, address) symbolized
	 * (sorted) */
	__u64 *written;
	size_t capwritten;
	struct ls_sym_addr *done;
	size_t ndone, capdone;
	ino_t w_ino; /* the file written, to tell if another recorder replaced it */
	dev_t w_dev;
	_Alignas(8) unsigned char procbuf[LS_PROC_INFO_MAX];
	/* per open connection: what redaction must carry from one syscall's
	 * payload to the next (a credential value or a body cut between them) */
	struct stream_state *streams;
	size_t capstreams, nstreams;
	bool capture_bodies;
	/* a socket I/O record, copied to redact credentials before the write */
	_Alignas(8) unsigned char iobuf[sizeof(struct ls_ev_sock_io) + LS_IO_MAX_CAPTURE + 8];
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: latsplit record [-o FILE] [-d SECONDS] [-p PID[,PID...]] [--port N[,N...]]\n"
		"                       [--ringbuf MB] [--capture-bytes N] [-z LEVEL] [-v] [-- COMMAND [ARGS...]]\n\n"
		"Captures scheduler, TCP, socket I/O, engine-event, GPU and stack events of the\n"
		"tracked processes into FILE.\n"
		"Tracked: the processes named with -p and their descendants, COMMAND and its\n"
		"children, and the owners of --port listeners; with none of these, everything.\n\n"
		"  -o, --output FILE    capture file (default latsplit.data; an existing one\n"
		"                       is kept as FILE.old)\n"
		"  -d, --duration SEC   stop after SEC seconds (default: until COMMAND exits or\n"
		"                       SIGINT/SIGTERM)\n"
		"  -p, --pid PID        track PID and its descendants (repeatable)\n"
		"      --port N         track TCP connections on local port N (repeatable)\n"
		"      --ringbuf MB     BPF ring buffer size, power of two (default 8)\n"
		"      --no-sock        no socket I/O (syscall) tracing: TCP and scheduler only\n"
		"  -F, --freq HZ        on-CPU stack samples per second per CPU (default 49; 0: off)\n"
		"  -a, --all-cpus       sample every process, not only the tracked ones\n"
		"      --no-offcpu      no stacks when tracked threads block (off-CPU)\n"
		"      --no-symbolize   keep raw stack addresses; do not symbolize at the end\n"
		"      --stack-entries N  distinct stacks kept (stack map size, default 16384,\n"
		"                       at most 262144; ~1 KiB of kernel memory each; stacks\n"
		"                       beyond it are counted, not captured)\n"
		"      --debug-dir DIR  debug files of stripped binaries: DIR/.build-id/ and\n"
		"                       DIR/<path>/<debuglink> (default /usr/lib/debug)\n"
		"      --no-engine      no engine-event or GPU-shim probes (USDT uprobes cost a\n"
		"                       trap per event; T_sched is then inferred)\n"
		"      --engine-lib PATH  a file with latsplit engine probes (repeatable; default:\n"
		"                       liblatsplit-engine.so beside latsplit, in /usr/local/lib\n"
		"                       and /usr/lib)\n"
		"      --cuda-lib PATH  libcuda for the uprobe fallback (repeatable; default: the\n"
		"                       system libcuda.so.1 if present)\n"
		"      --capture-bytes N  payload prefix kept per socket read/write, 0..4096\n"
		"                       (default 1024: HTTP heads and SSE events)\n"
		"      --capture-bodies keep request and response bodies (prompts, completions);\n"
		"                       by default only heads and framing are kept, bodies\n"
		"                       become '*' (credentials are redacted either way)\n"
		"  -z, --zlib-level N   compression level 1..9 (default 1)\n"
		"  -v, --verbose        libbpf and verifier messages\n"
		"  -h, --help           this help\n");
}

static int add_list(const char *cmd, const char *arg, unsigned long max, unsigned long *vals,
		    int *n, int cap, const char *what)
{
	char *copy = strdup(arg), *save = NULL;
	int added = 0;

	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long v;

		if (!ls_parse_uint(tok, max, &v) || v == 0 || *n >= cap) {
			ls_err(cmd, "bad %s '%s' (expected 1..%lu, at most %d)", what, tok, max, cap);
			free(copy);
			return -1;
		}
		vals[(*n)++] = v;
		added++;
	}
	free(copy);
	if (!added) { /* "--port ," once meant: no filter, every process */
		ls_err(cmd, "bad %s list '%s' (expected 1..%lu, comma-separated)", what, arg, max);
		return -1;
	}
	return 0;
}

/* A regular file that starts with the ELF magic. */
static bool is_elf(const char *path)
{
	struct stat st;
	char magic[4];
	int fd;
	bool ok;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	ok = read(fd, magic, 4) == 4 && !memcmp(magic, "\177ELF", 4);
	close(fd);
	return ok;
}

struct stream_state {
	__u64 conn_id; /* 0: free slot */
	bool in_secret[2];
	struct ls_body_conn body;
};

static size_t stream_slot(size_t cap, __u64 id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

/* The redaction state of a connection, created on first use. */
static struct stream_state *stream_get(struct recorder *r, __u64 id)
{
	size_t h;

	if ((r->nstreams + 1) * 2 > r->capstreams) {
		size_t nc = r->capstreams ? r->capstreams * 2 : 1024;
		struct stream_state *ns = calloc(nc, sizeof(*ns));
		if (!ns)
			return NULL;
		for (size_t i = 0; i < r->capstreams; i++) {
			if (!r->streams[i].conn_id)
				continue;
			for (h = stream_slot(nc, r->streams[i].conn_id); ns[h].conn_id; h = (h + 1) & (nc - 1))
				;
			ns[h] = r->streams[i];
		}
		free(r->streams);
		r->streams = ns;
		r->capstreams = nc;
	}
	for (h = stream_slot(r->capstreams, id); r->streams[h].conn_id; h = (h + 1) & (r->capstreams - 1))
		if (r->streams[h].conn_id == id)
			return &r->streams[h];
	memset(&r->streams[h], 0, sizeof(r->streams[h]));
	r->streams[h].conn_id = id;
	r->nstreams++;
	return &r->streams[h];
}

/* A connection ended: its state goes (later entries of its probe run shift
 * back, so lookups stay correct without tombstones). */
static void stream_drop(struct recorder *r, __u64 id)
{
	size_t i, j, mask = r->capstreams - 1;

	if (!r->capstreams)
		return;
	for (i = stream_slot(r->capstreams, id); r->streams[i].conn_id; i = (i + 1) & mask)
		if (r->streams[i].conn_id == id)
			break;
	if (!r->streams[i].conn_id)
		return;
	for (j = i;;) {
		j = (j + 1) & mask;
		if (!r->streams[j].conn_id)
			break;
		size_t k = stream_slot(r->capstreams, r->streams[j].conn_id);
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			r->streams[i] = r->streams[j];
			i = j;
		}
	}
	r->streams[i].conn_id = 0;
	r->nstreams--;
}

static void write_record(struct recorder *r, const struct ls_hdr *h)
{
	int err = ls_writer_append(r->w, h);

	if (err && !r->write_err)
		r->write_err = err;
}

static void write_proc_info(struct recorder *r, pid_t pid)
{
	if (ls_proc_info(pid, ls_now_ns(), r->procbuf) > 0)
		write_record(r, (struct ls_hdr *)r->procbuf);
}

static __u64 use_key(__u32 pid, __s32 id)
{
	return ((__u64)pid << 32 | (__u32)id) + 1;
}

/* Adds key to the set of used stacks (linear probing, at most half full).
 * Bounded by the stack map's entries per process, however long the run. */
static void use_add(struct recorder *r, __u64 key)
{
	size_t h;

	if ((r->nuses + 1) * 2 > r->capuses) {
		size_t nc = r->capuses ? r->capuses * 2 : 4096;
		__u64 *nu = calloc(nc, sizeof(*nu));
		if (!nu)
			return;
		for (size_t i = 0; i < r->capuses; i++) {
			if (!r->uses[i])
				continue;
			for (h = (r->uses[i] * 0x9e3779b97f4a7c15ull) >> 20 & (nc - 1); nu[h]; h = (h + 1) & (nc - 1))
				;
			nu[h] = r->uses[i];
		}
		free(r->uses);
		r->uses = nu;
		r->capuses = nc;
	}
	for (h = (key * 0x9e3779b97f4a7c15ull) >> 20 & (r->capuses - 1); r->uses[h];
	     h = (h + 1) & (r->capuses - 1))
		if (r->uses[h] == key)
			return;
	r->uses[h] = key;
	r->nuses++;
}

/* The executable mappings of every process with stacks, with build-ids, so
 * the capture can be symbolized elsewhere (or later, after --no-symbolize).
 * At the end, not in the consumer: a live process's maps are read again
 * first (libraries loaded since its first stack). */
static void write_mappings(struct recorder *r)
{
	_Alignas(8) unsigned char buf[sizeof(struct ls_rec_mapping) + 4096];
	struct ls_rec_mapping *e = (void *)buf;
	struct ls_sym_mapping sm;
	pid_t pid;

	for (size_t p = 0; !ls_sym_process(r->sym, p, &pid); p++) {
		ls_sym_add_process(r->sym, pid); /* fails, harmlessly, once it exited */
		for (size_t i = 0; !ls_sym_mapping(r->sym, pid, i, &sm); i++) {
			size_t n = strnlen(sm.path, 4095) + 1;
			int idn;
			memset(e, 0, sizeof(*e));
			e->h.type = LS_REC_MAPPING;
			e->h.size = sizeof(*e) + n;
			e->h.ts = ls_now_ns();
			e->h.pid = e->h.tid = pid;
			e->start = sm.start;
			e->end = sm.end;
			e->pgoff = sm.pgoff;
			if (sm.file && (idn = ls_sym_build_id(r->sym, sm.file, e->build_id,
							     sizeof(e->build_id))) > 0)
				e->build_id_len = idn;
			e->path_len = n;
			memcpy(e + 1, sm.path, n - 1);
			((char *)(e + 1))[n - 1] = '\0';
			write_record(r, &e->h);
		}
	}
}

/* A stack seen in pid: read its mappings while the process lives, and
 * remember the stack for symbolization at the end. */
static void use_stack(struct recorder *r, __u32 pid, __s32 ustack, __s32 kstack)
{
	if (ustack >= 0 && pid && r->sym && pid != r->last_pid) {
		if (!ls_sym_has_process(r->sym, pid))
			ls_sym_add_process(r->sym, pid);
		r->last_pid = pid;
	}
	if (ustack >= 0)
		use_add(r, use_key(pid, ustack));
	if (kstack >= 0)
		use_add(r, use_key(0, kstack)); /* kernel stacks: pid 0 */
}

static bool known_pid(struct recorder *r, pid_t pid, bool add)
{
	for (size_t i = 0; i < r->nknown; i++)
		if (r->known[i] == pid)
			return true;
	if (add) {
		GROW(r->known, r->nknown, r->capknown);
		r->known[r->nknown++] = pid;
	}
	return false;
}

/* What the consumer learns about the tracked set: a process that starts
 * listening on a followed port (tracked by BPF from that instant), and the
 * exit of a -p target. */
static void watch_targets(struct recorder *r, const struct ls_hdr *h)
{
	if (h->type == LS_EV_TCP_STATE) {
		const struct ls_ev_tcp_state *e = (const void *)h;
		char comm[LS_COMM_LEN + 1] = "?", path[64];
		FILE *f;

		if (e->newstate != 10 /* LISTEN */ || !h->pid || known_pid(r, h->pid, true))
			return;
		write_proc_info(r, h->pid);
		snprintf(path, sizeof(path), "/proc/%u/comm", h->pid);
		if ((f = fopen(path, "re"))) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = '\0';
			fclose(f);
		}
		fprintf(stderr, "latsplit record: pid %u (%s) listens on :%u: tracking it\n", h->pid,
			comm, e->t.sport);
	} else if (h->type == LS_EV_PROC_EXIT && ((const struct ls_ev_proc_exit *)h)->group_dead) {
		for (int i = 0; i < r->ntargets; i++)
			if (r->targets[i] == h->pid) {
				r->targets_alive--;
				fprintf(stderr, "latsplit record: pid %u exited (exit code %d)\n",
					h->pid, ((const struct ls_ev_proc_exit *)h)->exit_code >> 8);
			}
	}
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct recorder *r = ctx;
	const struct ls_hdr *h = data;

	if (size < sizeof(*h) || h->size > size)
		return 0;
	if (h->type == LS_EV_SOCK_IO && h->size >= sizeof(struct ls_ev_sock_io) &&
	    h->size <= sizeof(r->iobuf)) {
		/* Header values that carry credentials never reach the file. */
		struct ls_ev_sock_io *e = (void *)r->iobuf;
		size_t n;

		memcpy(r->iobuf, h, h->size);
		n = e->cap_len < h->size - sizeof(*e) ? e->cap_len : h->size - sizeof(*e);
		struct stream_state *ss = stream_get(r, e->conn_id);
		bool resp = e->dir == LS_IO_OUT;
		if (e->dir == LS_IO_IN &&
		    ls_http_starts_message(LS_HTTP_REQUEST, (const uint8_t *)(e + 1), n))
			r->request_heads++;
		if (ss) {
			ls_redact_http((uint8_t *)(e + 1), n, &ss->in_secret[resp]);
			if (n < e->bytes) /* the rest of this I/O is not in the capture */
				ss->in_secret[resp] = false;
			if (!r->capture_bodies)
				ls_scrub_body(&ss->body, resp, (uint8_t *)(e + 1), n, e->bytes);
		} else {
			bool none = false; /* out of memory: credentials still go */
			ls_redact_http((uint8_t *)(e + 1), n, &none);
		}
		h = &e->h;
	}
	write_record(r, h);
	if (h->type == LS_EV_TCP_STATE || h->type == LS_EV_PROC_EXIT)
		watch_targets(r, h);
	else if (h->type == LS_EV_TCP_DESTROY)
		stream_drop(r, ((const struct ls_ev_tcp_destroy *)h)->conn_id);
	r->events++;
	if (h->type < LS_REC_MAX)
		r->per_type[h->type]++;
	if (h->type == LS_EV_SAMPLE) {
		const struct ls_ev_sample *e = data;
		use_stack(r, h->pid, e->ustack, e->kstack);
	} else if (h->type == LS_EV_SCHED_SWITCH) {
		const struct ls_ev_sched_switch *e = data;
		if (e->prev_ustack >= 0 || e->prev_kstack >= 0)
			use_stack(r, h->pid, e->prev_ustack, e->prev_kstack);
	} else if (h->type == LS_EV_GPU_LAUNCH) {
		const struct ls_ev_gpu_launch *e = data;
		use_stack(r, h->pid, e->ustack, -1);
	}
	/* Process table: a new process, or a new program image. */
	if (h->type == LS_EV_PROC_FORK) {
		const struct ls_ev_proc_fork *e = data;
		if (e->child_pid == e->child_tid && e->child_pid != h->pid)
			write_proc_info(r, e->child_pid);
	} else if (h->type == LS_EV_PROC_EXEC) {
		write_proc_info(r, h->pid);
	}
	return 0;
}

struct stack_copy {
	__s32 id;
	int n;
	unsigned long long ips[LS_STACK_DEPTH];
};

static int copy_cmp(const void *a, const void *b)
{
	const struct stack_copy *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* The stack map into the capture, then every address of every used stack
 * symbolized, so the capture reports the same on another machine. */
static int addr_cmp(const void *a, const void *b)
{
	const struct ls_sym_addr *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ip > y->ip) - (x->ip < y->ip);
}

static void write_sym(struct recorder *r, __u32 pid, __u64 ip)
{
	char name[512];
	_Alignas(8) unsigned char sbuf[sizeof(struct ls_rec_sym) + sizeof(name)];
	struct ls_rec_sym *sy = (void *)sbuf;
	size_t nl;

	ls_sym_resolve(r->sym, pid, ip, name, sizeof(name));
	nl = strlen(name) + 1;
	memset(sy, 0, sizeof(*sy));
	sy->h.type = LS_REC_SYM;
	sy->h.size = sizeof(*sy) + nl;
	sy->h.ts = ls_now_ns();
	sy->h.pid = pid;
	sy->ip = ip;
	sy->name_len = nl;
	memcpy(sy + 1, name, nl);
	write_record(r, &sy->h);
}

/* The stack map into the capture, and every address of every used stack
 * symbolized, so the capture reports the same on another machine. A
 * checkpoint: called every CHECKPOINT_NS while recording and at the end, it
 * writes only stacks and symbols not written yet, so a recording killed
 * with SIGKILL keeps the stacks of all but its last seconds. */
static void write_stacks(struct recorder *r, bool symbolize)
{
	unsigned long long ips[LS_STACK_DEPTH];
	_Alignas(8) unsigned char buf[sizeof(struct ls_rec_stack) + sizeof(ips)];
	struct ls_rec_stack *st = (void *)buf;
	__u32 id = 0;
	bool have = false;
	int n;
	/* id -> its addresses, for symbolization */
	size_t cap = 0, nst = 0;
	struct stack_copy *all = NULL;

	while ((n = ls_bpf_stack_next(r->bpf, &id, &have, ips, LS_STACK_DEPTH)) > 0) {
		GROW(all, nst, cap);
		all[nst].id = id;
		all[nst].n = n;
		memcpy(all[nst].ips, ips, n * sizeof(ips[0]));
		nst++;
		if (id < r->capwritten * 64 && r->written[id / 64] >> (id % 64) & 1)
			continue; /* ids are never reused: its addresses are already there */
		if (id >= r->capwritten * 64) {
			size_t nc = (id / 64 + 1) * 2;
			__u64 *nw = realloc(r->written, nc * sizeof(*nw));
			if (!nw)
				break;
			memset(nw + r->capwritten, 0, (nc - r->capwritten) * sizeof(*nw));
			r->written = nw;
			r->capwritten = nc;
		}
		r->written[id / 64] |= 1ull << (id % 64);
		memset(st, 0, sizeof(*st));
		st->h.type = LS_REC_STACK;
		st->h.size = sizeof(*st) + n * sizeof(__u64);
		st->h.ts = ls_now_ns();
		st->id = id;
		st->nips = n;
		memcpy(st + 1, ips, n * sizeof(__u64));
		write_record(r, &st->h);
	}
	if (symbolize && r->sym && r->nuses && nst) {
		struct ls_sym_addr *addrs = NULL;
		size_t na = 0, capa = 0;

		/* every (process, address) of a used stack, once */
		qsort(all, nst, sizeof(*all), copy_cmp);
		for (size_t i = 0; i < r->capuses; i++) {
			if (!r->uses[i])
				continue;
			__u64 use = r->uses[i] - 1;
			struct stack_copy key = {.id = (__s32)(__u32)use};
			const struct stack_copy *found = bsearch(&key, all, nst, sizeof(*all), copy_cmp);

			for (int j = 0; found && j < found->n; j++) {
				GROW(addrs, na, capa);
				addrs[na++] = (struct ls_sym_addr){(__u32)(use >> 32), found->ips[j]};
			}
		}
		na = ls_sym_addr_unique(addrs, na);
		/* less those a checkpoint already wrote; then they are done too */
		size_t nd = r->ndone;
		for (size_t i = 0; i < na; i++) {
			if (nd && bsearch(&addrs[i], r->done, nd, sizeof(*r->done), addr_cmp))
				continue;
			write_sym(r, addrs[i].pid, addrs[i].ip);
			GROW(r->done, r->ndone, r->capdone);
			r->done[r->ndone++] = addrs[i];
		}
		if (r->ndone > nd)
			qsort(r->done, r->ndone, sizeof(*r->done), addr_cmp);
		free(addrs);
	}
	free(all);
}

static void write_drops(struct recorder *r)
{
	int ncpu = ls_bpf_ncpus();
	size_t size;
	struct ls_rec_drops *d;

	if (ncpu <= 0 || ncpu > LS_MAX_CPUS)
		return;
	size = sizeof(*d) + ncpu * sizeof(__u64);
	d = calloc(1, size);
	if (!d)
		return;
	d->h.type = LS_REC_DROPS;
	d->h.size = size;
	d->h.ts = ls_now_ns();
	d->ncpu = ncpu;
	d->total = ls_bpf_drops(r->bpf, (unsigned long long *)(d + 1), ncpu);
	d->stack_errors = ls_bpf_stack_errors(r->bpf);
	write_record(r, &d->h);
	free(d);
}

/* Tracks pids and all their current descendants. Returns how many. */
static int track_tree(struct recorder *r, const unsigned long *pids, int npids, bool *tracked_out)
{
	size_t n;
	pid_t *all = ls_proc_list(&n);
	pid_t *ppid = calloc(n ? n : 1, sizeof(pid_t));
	bool *in = calloc(n ? n : 1, sizeof(bool));
	int count = 0;
	bool grew = true;

	for (size_t i = 0; i < n; i++) {
		ppid[i] = ls_proc_ppid(all[i]);
		for (int k = 0; k < npids; k++)
			in[i] |= (unsigned long)all[i] == pids[k];
	}
	while (grew) {
		grew = false;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; !in[i] && j < n; j++)
				if (in[j] && ppid[i] == all[j])
					in[i] = grew = true;
	}
	for (size_t i = 0; i < n; i++) {
		if (!in[i])
			continue;
		ls_bpf_track_pid(r->bpf, all[i]);
		write_proc_info(r, all[i]);
		known_pid(r, all[i], true);
		/* Its listeners are followed: whoever listens there next (a
		 * restart) is tracked too. */
		__u16 ports[MAX_PORTS];
		int np = ls_proc_listen_ports(all[i], ports, MAX_PORTS);
		for (int k = 0; k < np; k++)
			ls_bpf_track_port(r->bpf, ports[k], true);
		count++;
	}
	if (tracked_out)
		*tracked_out = count > 0;
	free(all);
	free(ppid);
	free(in);
	return count;
}

/* Owners of listeners on the given ports become tracked pids. */
static int port_owners(const unsigned long *ports, int nports, unsigned long *pids, int *npids)
{
	size_t n;
	pid_t *all = ls_proc_list(&n);

	for (size_t i = 0; i < n; i++) {
		__u16 lp[MAX_PORTS];
		int k = ls_proc_listen_ports(all[i], lp, MAX_PORTS);

		for (int a = 0; a < k; a++)
			for (int b = 0; b < nports; b++)
				if (lp[a] == ports[b] && *npids < MAX_PIDS)
					pids[(*npids)++] = all[i];
	}
	free(all);
	return 0;
}

/* liblatsplit-engine.so and liblatsplit-cupti.so beside the latsplit
 * binary, then in the usual libdirs. self[] holds the paths found beside. */
static int default_engine_paths(const char **paths, char self[2][4096])
{
	static const char *const dirs[] = {
		"/usr/local/lib/liblatsplit-engine.so", "/usr/lib/liblatsplit-engine.so",
		"/usr/local/lib/liblatsplit-cupti.so", "/usr/lib/liblatsplit-cupti.so"};
	static const char *const libs[] = {"liblatsplit-engine.so", "liblatsplit-cupti.so"};
	int k = 0;

	for (int i = 0; i < 2; i++) {
		ssize_t n = readlink("/proc/self/exe", self[i], sizeof(self[i]) - 32);
		char *slash;

		if (n <= 0)
			continue;
		self[i][n] = '\0';
		slash = strrchr(self[i], '/');
		if (!slash)
			continue;
		strcpy(slash + 1, libs[i]);
		if (!access(self[i], R_OK))
			paths[k++] = self[i];
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!access(dirs[i], R_OK))
			paths[k++] = dirs[i];
	return k;
}

static pid_t spawn_waiting(char **argv, int *go_fd)
{
	int pfd[2];
	pid_t pid;

	pid_t parent = getpid();

	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char c;

		close(pfd[1]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		/* the command never outlives a killed recorder (perf record does
		 * the same): no orphan left running */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127); /* the recorder died before prctl */
		if (read(pfd[0], &c, 1) != 1)
			_exit(127); /* recorder failed before starting us */
		execvp(argv[0], argv);
		fprintf(stderr, "latsplit record: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[0]);
	*go_fd = pfd[1];
	return pid;
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

static void print_summary(const struct recorder *r, const char *path, __u64 dur_ns,
			  const struct ls_writer_stats *ws, unsigned long long drops, int level)
{
	fprintf(stderr, "latsplit record: %.2f s, %llu events written to %s\n", dur_ns / 1e9,
		(unsigned long long)r->events, path);
	fprintf(stderr, "  by type:");
	for (int t = 1; t < LS_EV_KERNEL_MAX; t++)
		if (r->per_type[t])
			fprintf(stderr, " %s=%llu", ls_type_name(t), (unsigned long long)r->per_type[t]);
	fprintf(stderr, "\n  %.2f MB raw -> %.2f MB on disk (%.1fx, zlib %d), %llu frames, %.1f bytes/event\n",
		ws->raw_bytes / 1e6, ws->file_bytes / 1e6,
		ws->file_bytes ? (double)ws->raw_bytes / ws->file_bytes : 0.0, level,
		(unsigned long long)ws->frames,
		ws->records ? (double)ws->file_bytes / ws->records : 0.0);
	fprintf(stderr, "  ring-buffer drops: %llu; writer stalls: %llu (%.1f ms)\n", drops,
		(unsigned long long)ws->stalls, ws->stall_ns / 1e6);
	if (drops)
		fprintf(stderr,
			"latsplit record: warning: %llu events lost (BPF ring buffer full): raise "
			"--ringbuf or narrow with -p/--port\n",
			drops);
}

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'}, {"duration", required_argument, NULL, 'd'},
		{"pid", required_argument, NULL, 'p'},    {"port", required_argument, NULL, 'P'},
		{"ringbuf", required_argument, NULL, 'm'}, {"zlib-level", required_argument, NULL, 'z'},
		{"verbose", no_argument, NULL, 'v'},      {"help", no_argument, NULL, 'h'},
		{"capture-bytes", required_argument, NULL, 'C'},
		{"no-sock", no_argument, NULL, 'N'},
		{"engine-lib", required_argument, NULL, 'E'},
		{"cuda-lib", required_argument, NULL, 'L'},
		{"freq", required_argument, NULL, 'F'},   {"all-cpus", no_argument, NULL, 'a'},
		{"no-offcpu", no_argument, NULL, 'O'},    {"no-symbolize", no_argument, NULL, 'S'},
		{"debug-dir", required_argument, NULL, 'D'},
		{"stack-entries", required_argument, NULL, 'K'},
		{"no-engine", no_argument, NULL, 'G'},
		{"capture-bodies", no_argument, NULL, 'B'},
		{}};
	const char *path = "latsplit.data", *debug_dir = NULL;
	double duration = 0;
	unsigned long pids[MAX_PIDS], ports[MAX_PORTS], ringbuf_mb = 8, level = 1, stack_entries = 0,
		      capture_bytes = 1024;
	int npids = 0, nports = 0, opt, go_fd = -1, rc = 1;
	bool verbose = false, no_sock = false, no_engine = false, sample_all = false, offcpu = true,
	     symbolize = true;
	unsigned long freq = 49;
	const char *engine_paths[8], *cuda_paths[4];
	int nengine_paths = 0, ncuda_paths = 0;
	char self_lib[2][4096];
	char err[512], old[4096];
	struct recorder r = {0};
	struct ls_file_hdr hdr;
	pid_t child = -1;
	int child_status = 0;
	bool child_done = false, child_killed = false; /* killed: by us, at the end */

	optind = 1;
	while ((opt = getopt_long(argc, argv, "+o:d:p:m:z:F:avh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			path = optarg;
			break;
		case 'd':
			if (!ls_parse_double(optarg, &duration) || !(duration > 0) ||
			    duration > MAX_DURATION_S) {
				ls_err("record", "-d %s: expected seconds, more than 0 and at most %d "
				       "(a year), e.g. 3 or 0.5", optarg, MAX_DURATION_S);
				return EXIT_USAGE;
			}
			break;
		case 'p':
			if (add_list("record", optarg, 4194304, pids, &npids, MAX_PIDS, "pid"))
				return EXIT_USAGE;
			break;
		case 'P':
			if (add_list("record", optarg, 65535, ports, &nports, MAX_PORTS, "port"))
				return EXIT_USAGE;
			break;
		case 'm':
			if (!ls_parse_uint(optarg, 4096, &ringbuf_mb) || !ringbuf_mb ||
			    (ringbuf_mb & (ringbuf_mb - 1))) {
				ls_err("record", "bad --ringbuf '%s' (MB, a power of two up to 4096)",
				       optarg);
				return EXIT_USAGE;
			}
			break;
		case 'z':
			if (!ls_parse_uint(optarg, 9, &level) || !level) {
				ls_err("record", "bad zlib level '%s' (1..9)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'C':
			if (!ls_parse_uint(optarg, LS_IO_MAX_CAPTURE, &capture_bytes)) {
				ls_err("record", "bad --capture-bytes '%s' (0..%d)", optarg,
				       LS_IO_MAX_CAPTURE);
				return EXIT_USAGE;
			}
			break;
		case 'v':
			verbose = true;
			break;
		case 'N':
			no_sock = true;
			break;
		case 'F':
			if (!ls_parse_uint(optarg, 10000, &freq)) {
				ls_err("record", "bad --freq '%s' (samples per second, 0..10000)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'a':
			sample_all = true;
			break;
		case 'O':
			offcpu = false;
			break;
		case 'S':
			symbolize = false;
			break;
		case 'G':
			no_engine = true;
			break;
		case 'B':
			r.capture_bodies = true;
			break;
		case 'K':
			if (!ls_parse_uint(optarg, 1u << 18, &stack_entries) || !stack_entries) {
				ls_err("record", "--stack-entries %s: expected 1..262144", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'D':
			if (access(optarg, R_OK | X_OK) || strlen(optarg) > 200) {
				ls_err("record", "--debug-dir %s: %s", optarg,
				       strlen(optarg) > 200 ? "path too long (200 bytes at most)"
							    : strerror(errno));
				return EXIT_USAGE;
			}
			debug_dir = optarg;
			break;
		case 'L':
			if (!is_elf(optarg)) {
				ls_err("record", "--cuda-lib %s: %s", optarg,
				       access(optarg, R_OK) ? strerror(errno)
							    : "not an ELF shared object (expected libcuda.so.1)");
				return EXIT_USAGE;
			}
			if (ncuda_paths < 4)
				cuda_paths[ncuda_paths++] = optarg;
			break;
		case 'E':
			if (!is_elf(optarg)) {
				ls_err("record", "--engine-lib %s: %s", optarg,
				       access(optarg, R_OK) ? strerror(errno)
							    : "not an ELF shared object (expected "
							      "liblatsplit-engine.so or an engine with its probes)");
				return EXIT_USAGE;
			}
			if (nengine_paths < 8)
				engine_paths[nengine_paths++] = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	struct stat osb;
	if (lstat(path, &osb) == 0 && !S_ISREG(osb.st_mode)) {
		ls_err("record", "-o %s: not a regular file (%s); name a new or regular file", path,
		       S_ISDIR(osb.st_mode)   ? "a directory"
		       : S_ISLNK(osb.st_mode) ? "a symbolic link"
		       : S_ISCHR(osb.st_mode) || S_ISBLK(osb.st_mode) ? "a device"
		       : S_ISFIFO(osb.st_mode) ? "a FIFO"
					       : "a special file");
		return EXIT_USAGE;
	}
	for (int i = 0; i < npids; i++)
		if (!ls_proc_alive(pids[i])) {
			ls_err("record", "no process with pid %lu", pids[i]);
			return EXIT_USAGE;
		}
	if (ls_check_privileges(err, sizeof(err))) {
		ls_err("record", "%s", err);
		return 1;
	}
	ls_libbpf_verbose(verbose);

	bool have_cmd = optind < argc;
	bool track_all = !npids && !nports && !have_cmd;
	int ntargets = npids;
	if (nports)
		port_owners(ports, nports, pids, &npids);
	for (int i = 0; i < nports; i++) {
		bool owned = false;
		for (int k = ntargets; k < npids; k++) {
			__u16 lp[MAX_PORTS];
			int nl = ls_proc_listen_ports(pids[k], lp, MAX_PORTS);
			for (int j = 0; j < nl; j++)
				owned |= lp[j] == ports[i];
		}
		if (!owned)
			fprintf(stderr, "latsplit record: no process listens on :%lu; waiting for one\n",
				ports[i]);
	}
	r.targets = pids;
	r.ntargets = r.targets_alive = ntargets;

	if (no_engine)
		nengine_paths = 0;
	else if (!nengine_paths)
		nengine_paths = default_engine_paths(engine_paths, self_lib);
	struct ls_bpf_opts bo = {.track_all = track_all,
				 .ringbuf_bytes = ringbuf_mb << 20,
				 .capture_bytes = capture_bytes,
				 .no_sock = no_sock,
				 .sample_freq = freq,
				 .sample_all = sample_all,
				 .offcpu_stacks = offcpu,
				 .stack_entries = stack_entries,
				 .nengine_paths = nengine_paths,
				 .on_record = on_record,
				 .ctx = &r};
	for (int i = 0; i < nengine_paths; i++)
		bo.engine_paths[i] = engine_paths[i];
	if (!ncuda_paths) {
		static const char *const sys[] = {"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
						  "/usr/lib64/libcuda.so.1", "/usr/lib/libcuda.so.1"};
		for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]) && ncuda_paths < 4; i++)
			if (!access(sys[i], R_OK))
				cuda_paths[ncuda_paths++] = sys[i];
	}
	for (int i = 0; i < ncuda_paths; i++)
		bo.cuda_paths[i] = cuda_paths[i];
	bo.ncuda_paths = ncuda_paths;
	if (ls_bpf_start(&r.bpf, &bo, err, sizeof(err))) {
		ls_err("record", "%s", err);
		return 1;
	}
	if (ls_bpf_missing(r.bpf)[0])
		fprintf(stderr, "latsplit record: not available on this kernel: %s\n",
			ls_bpf_missing(r.bpf));

	/* Keep an existing capture as .old, like perf: only a regular file.
	 * Anything else at the path (a device such as /dev/null, a directory,
	 * a FIFO, a symlink) is refused, checked before anything is attached. */
	struct stat sb;
	if (lstat(path, &sb) == 0) {
		if (!S_ISREG(sb.st_mode)) {
			ls_err("record", "-o %s: no longer a regular file; not replaced", path);
			goto out;
		}
		snprintf(old, sizeof(old), "%s.old", path);
		if (rename(path, old)) {
			ls_err("record", "%s exists and cannot be renamed to %s: %s", path, old,
			       strerror(errno));
			goto out;
		}
	}
	ls_file_hdr_init(&hdr, argc + 1, argv - 1);
	hdr.sources = ls_bpf_sources(r.bpf) | (offcpu ? LS_SRC_OFFCPU : 0);
	r.sym = ls_sym_new();
	if (r.sym && debug_dir)
		ls_sym_set_debug_dir(r.sym, debug_dir);
	hdr.track_all = track_all;
	struct ls_writer_opts wo = {.zlib_level = level};
	int e = ls_writer_open(&r.w, path, &hdr, &wo);
	if (e) {
		ls_err("record", "cannot create %s: %s", path, strerror(-e));
		goto out;
	}
	if (stat(path, &sb) == 0) {
		r.w_ino = sb.st_ino;
		r.w_dev = sb.st_dev;
	}

	for (int i = 0; i < nports; i++)
		ls_bpf_track_port(r.bpf, ports[i], true);
	if (have_cmd) {
		child = spawn_waiting(argv + optind, &go_fd);
		if (child < 0) {
			ls_err("record", "cannot start %s: %s", argv[optind], strerror(errno));
			goto close_out;
		}
		unsigned long cp = child;
		track_tree(&r, &cp, 1, NULL);
	}
	if (npids)
		track_tree(&r, pids, npids, NULL);
	if (track_all) {
		size_t n;
		pid_t *all = ls_proc_list(&n);
		for (size_t i = 0; i < n; i++)
			write_proc_info(&r, all[i]);
		free(all);
	}

	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL); /* a closed terminal: stop cleanly, trailer included */
	r.start_ts = ls_now_ns();
	if (go_fd >= 0) {
		if (write(go_fd, "g", 1) != 1)
			ls_err("record", "cannot start the command: %s", strerror(errno));
		close(go_fd);
		go_fd = -1;
	}
	if (verbose && ls_bpf_engine_paths(r.bpf)[0])
		fprintf(stderr, "latsplit record: engine probes in %s\n", ls_bpf_engine_paths(r.bpf));
	if (verbose && ls_bpf_cuda_paths(r.bpf)[0])
		fprintf(stderr, "latsplit record: libcuda uprobes in %s\n", ls_bpf_cuda_paths(r.bpf));
	fprintf(stderr, "latsplit record: recording %s to %s%s\n",
		track_all ? "all processes" : "tracked processes", path,
		duration ? "" : " (Ctrl-C to stop)");

	__u64 end_ts = duration ? r.start_ts + (__u64)(duration * 1e9) : 0;
	__u64 last_flush = r.start_ts, last_drops = r.start_ts, last_ckpt = r.start_ts;
	while (!stop_signal) {
		int n = ls_bpf_poll(r.bpf, 50);
		__u64 now = ls_now_ns();

		if (n < 0 && n != -EINTR) {
			ls_err("record", "reading the ring buffer: %s", strerror(-n));
			break;
		}
		if (now - last_drops >= DROPS_NS) {
			write_drops(&r);
			last_drops = now;
		}
		if (now - last_ckpt >= CHECKPOINT_NS) {
			write_stacks(&r, symbolize);
			last_ckpt = now;
		}
		if (now - last_flush >= FLUSH_NS) {
			ls_writer_flush(r.w);
			last_flush = now;
		}
		if (r.write_err) {
			ls_err("record", "writing %s: %s", path, strerror(-r.write_err));
			break;
		}
		if (end_ts && now >= end_ts)
			break;
		if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
			child_done = true;
			break;
		}
		/* Like perf record -p: when every target is gone, stop, unless a
		 * --port is followed (a restart may come) or a command runs. */
		if (r.ntargets && r.targets_alive <= 0 && !nports && child < 0) {
			fprintf(stderr, "latsplit record: every -p process exited; stopping\n");
			break;
		}
	}
	/* Events already in the ring buffer belong to the capture. */
	ls_bpf_poll(r.bpf, 0);
	if (child > 0 && !child_done) {
		kill(child, SIGTERM);
		waitpid(child, &child_status, 0);
		child_done = child_killed = true;
		ls_bpf_poll(r.bpf, 0);
	}
	__u64 stop_ts = ls_now_ns(); /* tracing ends; stacks and symbols follow */
	write_drops(&r);
	write_stacks(&r, symbolize);
	if (r.sym)
		write_mappings(&r);
	unsigned long long stack_errs = ls_bpf_stack_errors(r.bpf);
	if (stack_errs)
		fprintf(stderr,
			"latsplit record: warning: %llu stacks not captured (stack map full or "
			"collisions): raise --stack-entries, lower -F or record for less time\n",
			stack_errs);

	struct ls_rec_stats st = {0};
	struct ls_writer_stats ws;
	__u64 now = ls_now_ns();
	unsigned long long drops = ls_bpf_drops(r.bpf, NULL, 0);

	ls_writer_stats(r.w, &ws);
	st.h.type = LS_REC_STATS;
	st.h.size = sizeof(st);
	st.h.ts = now;
	st.start_ts = r.start_ts;
	st.end_ts = stop_ts;
	st.events = r.events;
	st.ringbuf_drops = drops;
	st.writer_stalls = ws.stalls;
	st.writer_stall_ns = ws.stall_ns;
	for (int t = 0; t < 32 && t < LS_REC_MAX; t++)
		st.per_type[t] = r.per_type[t];
	e = ls_writer_close(r.w, &st.h, &ws);
	r.w = NULL;
	if (e) {
		ls_err("record", "writing %s: %s", path, strerror(-e));
		goto out;
	}
	print_summary(&r, path, stop_ts - r.start_ts, &ws, drops, (int)level);
	if (!track_all)
		fprintf(stderr, "  HTTP requests read by tracked processes: %llu%s\n",
			(unsigned long long)r.request_heads,
			r.request_heads ? "" : " (see latsplit report for why)");
	rc = 0;
	/* like perf record: the command's own status is record's */
	if (child_done && WIFEXITED(child_status)) {
		rc = WEXITSTATUS(child_status);
		if (rc == 127)
			ls_err("record", "the command could not be started (exit 127)");
		else if (rc)
			fprintf(stderr, "latsplit record: the command exited with status %d\n", rc);
	} else if (child_done && WIFSIGNALED(child_status) && !child_killed) {
		rc = 128 + WTERMSIG(child_status);
		fprintf(stderr, "latsplit record: the command was killed by signal %d\n",
			WTERMSIG(child_status));
	}
	replaced_warning(path, r.w_ino, r.w_dev);
	goto out;
close_out:
	ls_writer_close(r.w, NULL, NULL);
out:
	if (go_fd >= 0)
		close(go_fd);
	ls_bpf_stop(r.bpf);
	ls_sym_free(r.sym);
	free(r.uses);
	free(r.known);
	free(r.written);
	free(r.done);
	free(r.streams);
	return rc;
}
