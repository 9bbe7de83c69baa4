/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Loads and attaches the BPF objects of bpf/ as one unit: picks tp_btf or
 * raw_tp per kernel, shares the ring buffer and filter maps between objects,
 * and exposes the filter and drop counters to user space.
 */
#ifndef LATSPLIT_USER_LOADER_H
#define LATSPLIT_USER_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <bpf/libbpf.h>

struct ls_bpf;

/* record --sock-hooks */
enum { LS_SOCK_HOOKS_AUTO, LS_SOCK_HOOKS_SOCKET, LS_SOCK_HOOKS_SYSCALLS };

struct ls_bpf_opts {
	bool track_all;
	size_t ringbuf_bytes; /* power of two, >= page size */
	unsigned int capture_bytes; /* payload prefix per socket I/O, <= 4096 */
	bool no_sock;               /* skip the socket-I/O domain */
	int sock_hooks; /* LS_SOCK_HOOKS_*: where socket I/O is read */
	/* Load the engine probes: they attach to the files below at start and
	 * to those tracked processes map later (ls_bpf_probe_file). */
	bool engine;
	/* Files with latsplit USDT probes (liblatsplit-engine.so, engines that
	 * include engine.h); probes attach in every process that maps them. */
	const char *engine_paths[8];
	int nengine_paths;
	/* libcuda files for the uprobe fallback (processes without the shim). */
	const char *cuda_paths[4];
	int ncuda_paths;
	unsigned int sample_freq; /* cpu-clock samples per second per CPU; 0: off */
	bool sample_all;          /* sample every process, not only tracked ones */
	bool offcpu_stacks;       /* stacks of tracked threads when they block */
	unsigned long long kstack_min_ns; /* their kernel stacks: when the block ends, if this long (0: at its start) */
	unsigned int ustack_bytes; /* --call-graph dwarf: user stack bytes copied; 0: off */
	unsigned int stack_entries; /* distinct stacks the stack map holds; 0: 16384 */
	unsigned int eh_rows; /* --call-graph eh: unwind table rows the kernel holds; 0: off */
	ring_buffer_sample_fn on_record;
	void *ctx;
};

/* On failure returns negative errno and a one-line reason in err. */
int ls_bpf_start(struct ls_bpf **out, const struct ls_bpf_opts *opts, char *err, size_t errlen);
/* enum ls_source bits of what got attached. */
unsigned long long ls_bpf_sources(const struct ls_bpf *b);
/* A line naming optional sources that could not be attached, or "". */
const char *ls_bpf_missing(const struct ls_bpf *b);

/* Probes that attach per file, in every process that maps the file: the
 * TLS uprobes on libssl (SSL_read, SSL_read_ex, SSL_write, SSL_write_ex),
 * the engine USDT probes (liblatsplit-engine.so, the CUPTI shim, engines
 * built with engine.h), the libcuda uprobe fallback. */
enum ls_probe_kind { LS_PROBE_TLS, LS_PROBE_ENGINE, LS_PROBE_CUDA, LS_PROBE_KINDS };
extern const char *const ls_probe_kind_name[LS_PROBE_KINDS];
#define LS_PROBE_MAX_FILES 16 /* per kind */
/* Attaches a kind's probes to one regular file (a container's through
 * /proc/PID/root), each file (dev, inode) tried once. Probes attached, 0
 * when the file was tried before, or -errno (-ENOENT: none found in it,
 * -ENOTSUP: that kind's programs are not loaded). */
int ls_bpf_probe_file(struct ls_bpf *b, enum ls_probe_kind kind, const char *path);
int ls_bpf_track_pid(struct ls_bpf *b, pid_t pid);
int ls_bpf_track_port(struct ls_bpf *b, unsigned short port, bool user);
/* Consumes the ring buffer for up to timeout_ms. Returns records or -errno. */
int ls_bpf_poll(struct ls_bpf *b, int timeout_ms);
/* Per-CPU reservation failures; returns the total, fills per_cpu[ncpu]. */
unsigned long long ls_bpf_drops(struct ls_bpf *b, unsigned long long *per_cpu, int ncpu);
int ls_bpf_ncpus(void);
/* Walks the stack map: first call with *have = false. Fills ips (innermost
 * first), returns how many, 0 when done. */
int ls_bpf_stack_next(struct ls_bpf *b, __u32 *id, bool *have, unsigned long long *ips, int max);
/* Where the Python frame walker looks in tgid (ctx: the struct ls_bpf). */
/* --call-graph eh (struct ls_eh_ops's): rows [at, at + n) of the unwind
 * table map; a process's mappings (NULL: forget it); the pids whose stacks
 * met no mapping since the last call (at most max). */
int ls_bpf_eh_rows(void *ctx, __u32 at, const struct ls_eh_row *rows, __u32 n);
int ls_bpf_eh_pages(void *ctx, __u32 at, const __u32 *pages, __u32 n);
int ls_bpf_eh_proc(void *ctx, __u32 pid, const struct ls_eh_proc *p);
int ls_bpf_eh_missed(struct ls_bpf *b, __u32 *pids, int max);
int ls_bpf_py_set(void *ctx, __u32 tgid, const struct ls_py_proc *pp);
unsigned long long ls_bpf_stack_errors(struct ls_bpf *b);
/* Data segments' arrivals still held for a read at the end (the reads
 * never came): each to cb as its tcp_probe record; returns how many. */
int ls_bpf_held_arrivals(struct ls_bpf *b, int (*cb)(void *ctx, void *rec, size_t size), void *ctx);
/* --offcpu-kernel-min-us: blocks that ended sooner, their ns, and blocks
 * whose kernel stack was taken when they ended. */
void ls_bpf_kstack_stats(struct ls_bpf *b, unsigned long long out[3]);
/* Retransmission attempts of known connections that sent nothing (where
 * the kernel's tracepoint passes the result: 6.18's does). */
unsigned long long ls_bpf_retrans_failed(struct ls_bpf *b);
/* Attaches the syscall programs' backups (sock.bpf.c: faultable syscall
 * tracepoints) once the kernel has skipped runs of the syscall programs:
 * 1 when attached now, 0 when not needed or done before, -1 on failure. */
int ls_bpf_sys_backups(struct ls_bpf *b);
/* Runs the kernel skipped, summed over every loaded program (recursion
 * misses); the program that skipped most in top (its count in *top_n). */
unsigned long long ls_bpf_prog_skips(struct ls_bpf *b, char *top, size_t toplen,
				     unsigned long long *top_n);
void ls_bpf_stop(struct ls_bpf *b);
/* Starts detaching every program (in the background: each detach waits for
 * the kernel, ~0.1 s for a perf-event uprobe), so that what follows the
 * end of tracing (stacks, symbols, the capture's end) overlaps it; nothing
 * may poll or attach after it. Maps stay readable until ls_bpf_stop, which
 * waits for it. */
void ls_bpf_detach(struct ls_bpf *b);

#endif
