/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The recorder's units (see DESIGN.md §3): the ring-buffer consumer that
 * writes every record into the capture (credentials and bodies redacted on
 * the way, stacks and symbols checkpointed, the tracked set watched), and
 * process tracking (the -p trees, --port owners, the command started).
 * cmd_record.c parses flags and wires these together.
 */
#ifndef LATSPLIT_RECORD_RECORDER_H
#define LATSPLIT_RECORD_RECORDER_H

#include <stdbool.h>
#include <sys/types.h>

#include "capture.h"
#include "idmap.h"
#include "loader.h"
#include "python.h"
#include "unwind.h"
#include "ehtab.h"
#include "evring.h"
#include "proc.h"
#include "symbolize.h"

#define LS_MAX_PIDS 256
#define LS_MAX_PORTS 64

/* A live consumer of the records a recording keeps. */
struct ls_tap {
	void (*record)(void *ctx, const struct ls_hdr *rec);
	void *ctx;
};

/* One recording's state. */
struct ls_recorder {
	struct ls_writer *w; /* NULL: no file (latsplit top) */
	struct ls_tap taps[4];
	int ntaps;
	struct ls_bpf *bpf;
	struct ls_symbolizer *sym;
	struct ls_py *py; /* Python frames: interpreters found, frames to name */
	struct ls_unwinder *unwind; /* --call-graph dwarf; NULL: frame pointers only */
	struct ls_eh *eh;	    /* --call-graph eh: the kernel's unwind tables */
	/* stacks the kernel unwound by table, their frames, the frames found by
	 * frame pointer there, and where walks stopped (LS_UNWIND_*) */
	__u64 eh_stacks, eh_frames, eh_fp_frames, eh_stopped[4];
	/* addresses of unwound stacks, to symbolize at the next checkpoint */
	struct ls_sym_addr *unwound;
	size_t nunwound, capunwound;
	/* (pid, stack id) pairs seen, as a set: key + 1, 0 = empty slot */
	__u64 *uses;
	size_t nuses, capuses;
	__u32 last_pid; /* the last pid whose mappings are known: most events repeat it */
	__u64 per_type[LS_REC_MAX];
	__u64 xmit_folded; /* transmissions carried by a write's sock_io record (ABI 5) */
	__u64 arrivals_folded; /* segment arrivals carried by a read's sock_io record (ABI 6) */
	__u64 wakeups_folded; /* wakeups carried by the switch-in's sched_switch record (ABI 7) */
	__u64 arrivals_unread; /* arrivals held to the end (no read took them): own records */
	__u64 events;
	__u64 request_heads; /* reads that began with a whole HTTP request line */
	__u64 h2_lost;       /* HTTP/2 connections whose frames could not be followed */
	/* TLS plaintext (SSL_read/SSL_write records) tied to no connection:
	 * not written, counted */
	__u64 tls_untied;
	__u64 tls_calls; /* tied and kept */
	struct ls_idmap tids; /* tid -> struct tid_io: its last socket I/O */
	struct ls_idmap ssls; /* (pid, SSL *) key -> conn_id */
	char h2_lost_why[96]; /* the first one's reason */
	/* processes announced: tracked at start or met listening on a followed
	 * port; the -p targets, and how many of them still run */
	pid_t *known;
	size_t nknown, capknown;
	/* processes forked or exec'd since the session last looked (for the
	 * files probes attach to); at most LS_PROC_NEW_MAX, the rest counted */
	struct ls_proc_new {
		pid_t pid, ppid;
	} *proc_new;
	size_t nproc_new, capproc_new;
	unsigned long long proc_new_lost;
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
	_Alignas(8) unsigned char nsbuf[LS_PROC_NS_MAX];
	/* per open connection: what redaction must carry from one syscall's
	 * payload to the next (a credential value or a body cut between them) */
	struct ls_idmap streams; /* conn_id -> struct stream_state */
	bool capture_bodies;
	bool symbolize; /* name stack addresses at checkpoints (off: --no-symbolize) */
	/* a socket I/O record, copied to redact credentials before the write */
	_Alignas(8) unsigned char iobuf[sizeof(struct ls_ev_sock_io) + LS_IO_MAX_CAPTURE +
					LS_IO_MAX_SEGS * sizeof(struct ls_io_seg)];
	uint8_t h2_probe[LS_IO_MAX_CAPTURE]; /* a payload gathered to test for HTTP/2 frames */
	uint8_t h2_join[2 * LS_IO_MAX_CAPTURE]; /* a held header frame and what follows it */
	size_t nheld;          /* records held back for the rest of a header frame */
	__u64 oldest_held;     /* the oldest one's time (when nheld) */
	struct ls_evrings evr; /* the engines' event rings (engine.h) */
};


/* The ring buffer's callback: one record into the capture. */
int ls_recorder_on_record(void *ctx, void *data, size_t size);
/* A process's table entry (pid, ppid, comm, exe, redacted cmdline), built in
 * r->procbuf. false when the process is gone. */
/* A record user space made (ctx: the recorder) into the capture and the
 * live taps. */
void ls_recorder_write(void *ctx, const struct ls_hdr *h);
bool ls_recorder_proc_info(struct ls_recorder *r, pid_t pid);
/* Whether pid was announced already (add: and remember it). */
bool ls_recorder_known_pid(struct ls_recorder *r, pid_t pid, bool add);
#define LS_PROC_NEW_MAX 65536
/* Stacks and their symbols not written yet (a checkpoint; also the end). */
void ls_recorder_stacks(struct ls_recorder *r, bool symbolize);
/* The executable mappings, with build-ids, of every process with stacks. */
void ls_recorder_mappings(struct ls_recorder *r);
/* The per-CPU ring-buffer drop counters, cumulative. */
void ls_recorder_drops(struct ls_recorder *r);
/* Writes the records held back for the rest of an HTTP/2 header frame
 * that are older than `before` (all: UINT64_MAX), their tails starred. */
void ls_recorder_flush_held(struct ls_recorder *r, __u64 before);
void ls_recorder_free(struct ls_recorder *r);

/* Tracks pids and all their current descendants, their listeners followed.
 * Returns how many. */
int ls_track_tree(struct ls_recorder *r, const unsigned long *pids, int npids, bool *tracked_out);
/* Owners of listeners on the given ports are appended to pids. */
int ls_port_owners(const unsigned long *ports, int nports, unsigned long *pids, int *npids);
/* liblatsplit-engine.so and liblatsplit-cupti.so beside latsplit, then in
 * the usual libdirs; self[] holds the paths found beside. */
int ls_default_engine_paths(const char **paths, char self[2][4096]);
/* Forks argv, held until a byte is written to *go_fd (so it is tracked
 * from its first instruction); it dies with the recorder. */
pid_t ls_spawn_waiting(char **argv, int *go_fd);

#endif
