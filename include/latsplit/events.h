/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The event ABI: the one definition of every record that crosses from the
 * kernel (bpf/) to user space (user/), and of the side records user space adds
 * to a capture. Every record starts with struct ls_hdr; `size` is the whole
 * record in bytes, so a reader can skip types it does not know. Fixed-size,
 * explicit widths, little-endian as produced. Bump LS_ABI_VERSION on any
 * incompatible change; add new types at the end of their range.
 *
 * Included by BPF C (after vmlinux.h, which provides __u8..__u64) and by user
 * space (which gets them from <linux/types.h>).
 */
#ifndef LATSPLIT_EVENTS_H
#define LATSPLIT_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define LS_ABI_VERSION 7
/* The oldest ABI this build reads: 4 differs only in that its sock_io
 * records never carry a folded transmission (their `xmit` is zero); 4 and
 * 5 in that their sock_io records end at `xmit` (LS_SOCK_IO_SIZE_V5: the
 * reader widens them, no arrival folded); 4 to 6 in that their
 * sched_switch records end at `next_comm` (LS_SCHED_SWITCH_SIZE_V6: the
 * reader widens them, no wakeup folded). */
#define LS_ABI_VERSION_MIN 4

#define LS_COMM_LEN 16
#define LS_FILENAME_LEN 128
/* Frames per stack in the shared stack map (kernel and user alike). */
#define LS_STACK_DEPTH 127
/* Words of the tracked_tgids bitmap: one bit per tgid up to Linux's
 * PID_MAX_LIMIT (4M on 64-bit). */
#define LS_TGID_WORDS (4194304 / 64)
/* Values of the tracked_ports filter map. */
#define LS_PORT_USER 1 /* followed: named with --port, or a -p process's listener at start */
#define LS_PORT_AUTO 2 /* a tracked process listens on it: dropped when it closes */

/* Record types. 1..127 come from the kernel, 128.. from user space. */
enum ls_type {
	LS_EV_SCHED_SWITCH = 1,
	LS_EV_SCHED_WAKEUP = 2,
	LS_EV_SCHED_WAKEUP_NEW = 3,
	LS_EV_PROC_FORK = 4,
	LS_EV_PROC_EXEC = 5,
	LS_EV_PROC_EXIT = 6,
	LS_EV_TCP_STATE = 7,
	LS_EV_TCP_RETRANS = 8,
	LS_EV_TCP_PROBE = 9,
	LS_EV_TCP_RESET = 10,
	LS_EV_TCP_DESTROY = 11,
	LS_EV_SOCK_IO = 12,
	LS_EV_SOCK_ACCEPT = 13,
	LS_EV_SOCK_CLOSE = 14,
	LS_EV_ENGINE = 15,
	LS_EV_GPU = 16,
	LS_EV_GPU_LAUNCH = 17,
	LS_EV_GPU_STATS = 18,
	LS_EV_SAMPLE = 19,
	LS_EV_CONN_ADOPT = 20,
	LS_EV_TCP_XMIT = 21,
	LS_EV_PYSTACK = 22,
	LS_EV_USTACK_RAW = 23,
	LS_EV_USTACK_EH = 24,
	LS_EV_BLOCK_KSTACK = 25,
	LS_EV_ENGINE_RING = 26, /* to the recorder only: where a process's event ring is */
	LS_EV_KERNEL_MAX,

	LS_REC_PROC_INFO = 128, /* process table entry (pid, ppid, comm, exe, cmdline) */
	LS_REC_DROPS = 129,     /* cumulative ring-buffer drops per CPU */
	LS_REC_STATS = 130,     /* end-of-capture statistics */
	LS_REC_STACK = 131,     /* a stack-map entry: id -> instruction pointers */
	LS_REC_SYM = 132,       /* a symbolized address (pid 0: kernel) */
	LS_REC_MAPPING = 133,   /* an executable mapping of a process with stacks */
	LS_REC_USTACK = 134,    /* a user stack unwound by DWARF CFI (record --call-graph dwarf) */
	LS_REC_PROC_NS = 135,   /* a process's cgroup and namespaces (its container) */
	LS_REC_ENGINE_SPAN = 136, /* an engine's own request span, received over OTLP */
	LS_REC_PROBE_SKIPS = 137, /* program runs the kernel skipped (recursion misses) */
	LS_REC_MAX,
};

/* Common header of every record. ts is CLOCK_MONOTONIC ns. */
struct ls_hdr {
	__u16 type;
	__u16 size;
	__u32 cpu;
	__u64 ts;
	__u32 pid; /* tgid of the current task (or of the subject, see type) */
	__u32 tid;
};

/* sched_switch: pid/tid are prev's; next_* the task switched in. */
struct ls_ev_sched_switch {
	struct ls_hdr h;
	__u32 next_pid;
	__u32 next_tid;
	__s64 prev_state; /* TASK_* bits of prev; 0 = preempted while runnable */
	__u32 prev_prio;
	__u32 next_prio;
	__s32 prev_ustack; /* stack ids of prev when it blocked (-1: none) */
	__s32 prev_kstack;
	char prev_comm[LS_COMM_LEN];
	char next_comm[LS_COMM_LEN];
	/* ABI 7: next's wakeup, folded (tp_btf only): the first one since
	 * next last blocked, next_woken_dt ns before ts, by waker_pid/tid, in
	 * place of its own sched_wakeup record (0: none folded; a wakeup that
	 * could not be kept for the switch-in is its own record as before) */
	__u64 next_woken_dt;
	__u32 waker_pid;
	__u32 waker_tid;
};
#define LS_SCHED_SWITCH_SIZE_V6 88

/* prev_kstack LS_STACK_LATER (ABI 5, record --offcpu-kernel-min-us): the
 * kernel stack of this block is taken when it ends, from the thread's saved
 * stack, and only if it lasted that long; an ls_ev_block_kstack record,
 * stamped just before the switch that ends the block, then carries it. A
 * block that ended sooner keeps its user stack only. */
#define LS_STACK_LATER (-2)
struct ls_ev_block_kstack {
	struct ls_hdr h; /* pid/tid: the thread that blocked */
	__u64 block_ts;  /* the ts of the switch-out that began the block */
	__s32 kstack;    /* an interned stack id (LS_EH_ID0 up); -1: not taken */
	__u32 pad;
};

/* sched_wakeup(_new): pid/tid are the woken task's; target_cpu its CPU. */
struct ls_ev_sched_wakeup {
	struct ls_hdr h;
	__u32 target_cpu;
	__u32 prio;
	__u32 waker_pid;
	__u32 waker_tid;
	char comm[LS_COMM_LEN];
};

/* sched_process_fork: pid/tid are the parent's; child_* the new task. */
struct ls_ev_proc_fork {
	struct ls_hdr h;
	__u32 child_pid;
	__u32 child_tid;
	char comm[LS_COMM_LEN];
};

/* sched_process_exec: pid/tid after exec; old_tid is the tid before. */
struct ls_ev_proc_exec {
	struct ls_hdr h;
	__u32 old_tid;
	__u32 pad;
	char comm[LS_COMM_LEN];
	char filename[LS_FILENAME_LEN];
};

/* sched_process_exit: one per exiting thread; group_dead when the last. */
struct ls_ev_proc_exit {
	struct ls_hdr h;
	__s32 exit_code;
	__u32 group_dead;
	char comm[LS_COMM_LEN];
};

/*
 * A TCP connection as seen from the local host. conn_id is assigned by BPF
 * when the connection is first seen and never reused during a capture, so fd,
 * sk address and port reuse cannot merge two connections.
 * Addresses are IPv6 or IPv4-mapped (::ffff:a.b.c.d) in network byte order.
 */
struct ls_tuple {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport; /* host byte order; local port */
	__u16 dport; /* host byte order; remote port */
	__u16 family;
	__u16 pad;
};

struct ls_ev_tcp_state {
	struct ls_hdr h;
	__u64 conn_id;
	__u64 skaddr;
	struct ls_tuple t;
	__u32 oldstate;
	__u32 newstate;
	__u32 srtt_us;
	__u32 snd_una;
	__u32 snd_nxt; /* at ESTABLISHED: iss + 1 (passive) */
	__u32 rcv_nxt; /* at ESTABLISHED: irs + 1 */
};

/* tcp_retransmit_skb / tcp_retransmit_synack. */
enum ls_retrans_kind { LS_RETRANS_DATA = 0, LS_RETRANS_SYNACK = 1 };

struct ls_ev_tcp_retrans {
	struct ls_hdr h;
	__u64 conn_id;
	__u64 skaddr;
	struct ls_tuple t;
	__u32 state;
	__u32 kind;
	__u32 segs; /* tcp_skb_pcount(): what TcpRetransSegs adds */
	/* data: the segment's first sequence number. LS_RETRANS_SYNACK: µs
	 * since the connection's first SYN-ACK left (the request sock's
	 * snt_synack), 0 when unknown */
	__u32 seq;
	__u32 srtt_us;
	__s32 err; /* transmit result where the kernel reports it, else 0 */
};

/* tcp_probe: one per segment received on a tracked connection. */
struct ls_ev_tcp_probe {
	struct ls_hdr h;
	__u64 conn_id;
	__u64 skaddr;
	__u32 srtt_us;
	__u32 snd_cwnd;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 rcv_nxt;
	__u32 snd_wnd;
	__u32 data_len; /* payload bytes in this segment */
	__u32 seq;      /* this segment's sequence number */
	__u32 ack_seq;  /* the ACK it carries (acknowledges our bytes up to it) */
	__u32 flags;    /* TCP flags byte (FIN 0x01, SYN 0x02, RST 0x04, ACK 0x10) */
};

enum ls_reset_dir { LS_RESET_SENT = 0, LS_RESET_RECEIVED = 1 };

struct ls_ev_tcp_reset {
	struct ls_hdr h;
	__u64 conn_id;
	__u64 skaddr;
	struct ls_tuple t;
	__u32 dir;
	__u32 state;
};

struct ls_ev_tcp_destroy {
	struct ls_hdr h;
	__u64 conn_id;
	__u64 skaddr;
	struct ls_tuple t;
};

/*
 * Socket I/O of a tracked process on a tracked TCP connection, from the
 * syscall tracepoints. One record per read/write-family syscall that moved
 * bytes (or read EOF: bytes == 0). h.ts is the syscall exit; ts_enter its
 * entry. cap_len bytes of the payload follow, at most --capture-bytes: the
 * bytes of every iovec of a vectored call, in order (uvloop, Node and nginx
 * write a chunk's size line, data and CRLF as separate iovecs). When nseg is
 * 0 they are the call's first cap_len bytes. Else an iovec was cut short to
 * keep a share of the budget for the later ones (their framing), and nseg
 * struct ls_io_seg follow the payload (at its 8-byte-aligned end), saying
 * where each piece of it lies among the call's bytes. sendfile and splice
 * carry no payload (cap_len 0): their bytes still count. sendmmsg and
 * recvmmsg carry the first message's payload and every message's bytes (how
 * far the socket's sequence moved during the call: TCP sockets only).
 * blocked_ns: time
 * the thread slept inside a write (send buffer full / zero window).
 */
enum ls_io_dir { LS_IO_IN = 0, LS_IO_OUT = 1 };
enum ls_io_call {
	LS_IO_READ, LS_IO_READV, LS_IO_RECVFROM, LS_IO_RECVMSG,
	LS_IO_WRITE, LS_IO_WRITEV, LS_IO_SENDTO, LS_IO_SENDMSG,
	LS_IO_SENDFILE, LS_IO_SPLICE, LS_IO_SENDMMSG, LS_IO_RECVMMSG,
	/* plaintext through the process's own libssl (uprobes on SSL_read[_ex]
	 * and SSL_write[_ex]): skaddr is the SSL *, fd and seq are unknown
	 * (~0, 0); the recorder ties it to its TCP connection (conn_id) */
	LS_IO_SSL_READ, LS_IO_SSL_WRITE,
	/* SSL_do_handshake entered (no bytes): the recorder ties the SSL * to
	 * the connection whose handshake bytes the thread read; never written */
	LS_IO_SSL_HANDSHAKE,
};
#define LS_IO_MAX_CAPTURE 4096
/* iovecs of one call whose bytes are copied (IOV_MAX is 1024: the rest of
 * a longer vector is counted, not copied) */
#define LS_IO_MAX_SEGS 64
/* a piece of a sock_io payload: the call's bytes [off, off + len) */
struct ls_io_seg {
	__u32 off;
	__u32 len;
};

struct ls_ev_sock_io {
	struct ls_hdr h;
	__u64 conn_id;
	__u64 skaddr;
	__u64 ts_enter;
	__u64 blocked_ns;
	__u32 fd;
	__u32 bytes;   /* bytes moved by the syscall */
	__u16 dir;     /* enum ls_io_dir */
	__u16 call;    /* enum ls_io_call */
	__u16 cap_len; /* payload bytes that follow */
	__u16 nseg;    /* struct ls_io_seg after the payload (0: it is a prefix) */
	/* TCP sequence number of the first byte moved (copied_seq or write_seq
	 * at exit, minus bytes; ABI 4): bytes this capture never saw (a read in
	 * flight when recording began, a dropped record) show as a gap. */
	__u32 seq;
	/* ABI 5: a write whose bytes all left in one segment inside the call
	 * carries that transmission here instead of a tcp_xmit record (emit
	 * by exception): LS_IO_XMIT set, then the segment's holds, and the
	 * time it went to the device as ns after ts_enter (LS_IO_XMIT_DT).
	 * The segment is [seq, seq + bytes). 0: none (or ABI 4). */
	__u32 xmit;
	/* ABI 6: a read whose bytes begin with a data segment's first byte
	 * carries that segment's arrival here instead of a tcp_probe record
	 * (emit by exception): the probe's ts as ns before this record's ts
	 * (arrive_dt; 0: none folded), its ack_seq, srtt_us, and data_len << 8
	 * | its TCP flags byte. The segment is [seq, seq + data_len). */
	__u32 arrive_dt;
	__u32 arrive_ack;
	__u32 arrive_srtt_us;
	__u32 arrive_len_flags;
	/* __u8 data[cap_len]; */
};
/* A sock_io record's fixed part up to ABI 5 (no arrive_* fields). */
#define LS_SOCK_IO_SIZE_V5 80
#define LS_IO_XMIT (1u << 31)
#define LS_IO_XMIT_NAGLE (1u << 30) /* short segment with TCP_NODELAY off */
#define LS_IO_XMIT_RWND (1u << 29)  /* beyond the window the peer offered */
#define LS_IO_XMIT_DT ((1u << 29) - 1)

/* accept()/accept4() returned fd for a tracked connection. */
struct ls_ev_sock_accept {
	struct ls_hdr h;
	__u64 conn_id;
	__u64 skaddr;
	struct ls_tuple t;
	__u32 fd;
	__u32 pad;
};

/*
 * A connection met mid-flight (ABI 4): a tracked process did I/O on, or
 * accepted, a TCP socket whose handshake the capture did not see, or a
 * segment arrived on a socket of a tracked port. The sequence anchors say
 * where the app's streams stand: copied_seq is the next byte it will read,
 * write_seq the next byte it will write.
 */
/* LS_ADOPT_UNIX: an AF_UNIX stream socket of a tracked process, adopted at
 * the first read that begins with an HTTP method (a proxy's hop to an
 * engine on `uvicorn --uds`); no tuple, no sequence numbers, no TCP state. */
enum ls_adopt_via { LS_ADOPT_IO = 0, LS_ADOPT_ACCEPT = 1, LS_ADOPT_TCP = 2, LS_ADOPT_UNIX = 3 };

struct ls_ev_conn_adopt {
	struct ls_hdr h;
	__u64 conn_id;
	__u64 skaddr;
	struct ls_tuple t;
	__u32 via;   /* enum ls_adopt_via */
	__u32 state; /* TCP state */
	__u32 srtt_us;
	__u32 snd_una;
	__u32 write_seq;
	__u32 copied_seq;
	__u32 rcv_nxt;
	__u32 fd; /* ~0: met in softirq (LS_ADOPT_TCP) */
	/* Appended later (records without it are shorter, and still read):
	 * the kernel's windowed minimum RTT (tcp_sock.rtt_min, 0: unknown).
	 * A connection met mid-flight has no handshake to show the path's RTT,
	 * and its srtt may be a delayed-ACK wait. */
	__u32 rtt_min_us;
	__u32 pad;
};

/* Bytes of a tracked connection handed to a device (net:net_dev_start_xmit,
 * one record per skb: a TSO/GSO burst is one). The last transmission of a
 * response byte, plus half the connection's RTT, is when the client had it
 * (T_dlv; DESIGN.md §6). The send state tells why bytes waited before it:
 * Nagle (a small segment while data was in flight), cwnd, rwnd. A new type:
 * older captures simply have none (ABI 4 unchanged). */
struct ls_ev_tcp_xmit {
	struct ls_hdr h;
	__u64 conn_id;
	__u64 skaddr;
	__u32 seq;       /* the first payload byte's sequence number */
	__u32 len;       /* payload bytes (0: a bare FIN) */
	__u32 snd_una;   /* first byte not acknowledged yet */
	__u32 snd_wnd;   /* the peer's receive window */
	__u32 snd_cwnd;  /* congestion window, segments */
	__u32 packets_out;
	__u32 mss_cache;
	__u8 flags;      /* TCP flags of the segment */
	__u8 nodelay;    /* TCP_NODELAY (or cork off) on the socket */
	__u16 pad;
};

/* The holds a transmission shows (LS_IO_XMIT_NAGLE, LS_IO_XMIT_RWND): one
 * rule for the kernel side that folds it and the analysis that reads
 * tcp_xmit records. */
static inline __attribute__((always_inline)) __u32 ls_xmit_holds(const struct ls_ev_tcp_xmit *x)
{
	__u32 v = 0;

	if (!x->nodelay && x->mss_cache && x->len < x->mss_cache)
		v |= LS_IO_XMIT_NAGLE;
	/* beyond the window the peer offered, from the first unacknowledged byte */
	if ((__u32)(x->seq + x->len - x->snd_una) > x->snd_wnd)
		v |= LS_IO_XMIT_RWND;
	return v;
}

/* close(fd) of a tracked connection by the app. */
struct ls_ev_sock_close {
	struct ls_hdr h;
	__u64 conn_id;
	__u64 skaddr;
	__u32 fd;
	__u32 pad;
};

/* An engine event (include/latsplit/engine.h), from USDT. */
enum ls_engine_ev {
	LS_ENG_ARRIVED = 1, LS_ENG_QUEUED, LS_ENG_SCHEDULED, LS_ENG_FIRST_TOKEN,
	LS_ENG_PREEMPTED, LS_ENG_RESUMED, LS_ENG_FINISHED,
};

struct ls_ev_engine {
	struct ls_hdr h;
	__u64 req_id;
	__u32 kind; /* enum ls_engine_ev */
	__u32 arg;  /* queued: prompt tokens; scheduled: batch size; finished: status */
	char x_request_id[64];
};

/* The event_ring probe (engine.h): the ring of process h.pid is at addr
 * (struct ls_evring), its head at head when the probe fired. The recorder
 * reads the ring from there and writes its events as ls_ev_engine records;
 * this record itself is not written. */
struct ls_ev_engine_ring {
	struct ls_hdr h;
	__u64 addr;
	__u64 head;
};

/* GPU activity: struct ls_gpu_record of engine.h, as handed over. */
struct ls_ev_gpu {
	struct ls_hdr h;
	__u64 start_ns;
	__u64 end_ns;
	__u64 bytes;
	__u32 kind;
	__u32 copy_kind;
	__u32 source;
	__u32 flags;
	__u32 device;
	__u32 stream;
	__u32 correlation;
	__u32 pad;
	char name[64];
};

/* A kernel launch API call (pid/tid: the launching thread), with the
 * launching thread's user stack (ABI 3). */
struct ls_ev_gpu_launch {
	struct ls_hdr h;
	__u32 correlation;
	__s32 ustack; /* stack id (-1: none) */
};

/* The CUPTI shim's cumulative counters (a drop is never silent). */
struct ls_ev_gpu_stats {
	struct ls_hdr h;
	__u64 records;
	__u64 bad_time;
	__u64 cupti_dropped;
	__u64 refused_buffers;
};

/* perf_event cpu-clock sample of a tracked task. */
struct ls_ev_sample {
	struct ls_hdr h;
	__s32 ustack; /* stack ids (-1: none) */
	__s32 kstack;
	char comm[LS_COMM_LEN];
};

/* A Python thread's interpreter frames where a CPU sample (kind
 * LS_PY_SAMPLE) or a blocking switch (LS_PY_BLOCK) was taken: follows that
 * record, with the same ts and tid. Innermost frame first; each is a code
 * object's address and the index (in code units) of its last instruction.
 * Variable size: n frames. A new type: older captures have none (ABI 4). */
#define LS_PY_MAX_FRAMES 64 /* a power of two: BPF masks its index */
#define LS_PY_SAMPLE 0
#define LS_PY_BLOCK 1
#define LS_PY_LAUNCH 2 /* a GPU launch (gpu_launch) */
struct ls_py_frame {
	__u64 code;
	__u32 lasti;
	__u32 pad;
};

struct ls_ev_pystack {
	struct ls_hdr h;
	__u32 kind;
	__u32 n;
	__u32 truncated; /* frames beyond LS_PY_MAX_FRAMES were left out */
	__u32 pad;
	struct ls_py_frame f[LS_PY_MAX_FRAMES];
};

/* record --call-graph dwarf: the user registers and a window of the user
 * stack of a thread where a sample (LS_PY_SAMPLE) or a blocking switch
 * (LS_PY_BLOCK) was taken, following that record (same ts and tid). Record
 * unwinds it with the mappings' CFI and writes LS_REC_USTACK instead: this
 * record never reaches a capture file. Variable size: len bytes of stack. */
#define LS_USTACK_MAX 16384
struct ls_ev_ustack_raw {
	struct ls_hdr h;
	__u32 kind;
	__u32 len; /* stack bytes copied from sp up */
	__u64 ip, sp, bp;
	__u8 data[LS_USTACK_MAX];
};

/* The user stack that unwinding gave (leaf first), for the sample or
 * blocking switch with the same ts and tid; it replaces the frame-pointer
 * stack of that record in the graphs. Variable size: n addresses. */
struct ls_rec_ustack {
	struct ls_hdr h;
	__u32 kind;
	__u32 n;
	__u32 status; /* 0: reached the outermost frame; else where it stopped (LS_UNWIND_*) */
	__u32 pad;
	/* __u64 ips[n]; */
};
#define LS_UNWIND_OK 0
#define LS_UNWIND_NO_CFI 1   /* a frame without unwind information */
#define LS_UNWIND_STACK_END 2 /* the copied window ended */
#define LS_UNWIND_ERROR 3

/* record --call-graph eh: a user stack unwound in BPF from unwind tables
 * record built from each mapped file's .eh_frame (struct ls_eh_row), sent
 * once per distinct stack of a process: the samples and blocks that have
 * it carry its id (from LS_EH_ID0 up) where a stack-map id would be.
 * Record writes it as an LS_REC_STACK record; this type never reaches a
 * capture file. */
#define LS_EH_ID0 0x20000000 /* above any stack-map id, below merged Python stacks' */
struct ls_ev_ustack_eh {
	struct ls_hdr h;
	__s32 id;
	__u32 n;
	__u32 status;    /* LS_UNWIND_* */
	__u32 fp_frames; /* frames found by frame pointer (no table row) */
	__u64 ips[LS_STACK_DEPTH + 1];
};

/* One row of an unwind table (eh_rows map): from pc (the file's virtual
 * address, rows sorted by it) to the next row's pc, the caller's frame is
 * found by `kind`. The return address is at CFA - 8 (x86-64's rule: a
 * file whose rows say otherwise gets LS_EH_NONE there). */
struct ls_eh_row {
	__u32 pc;
	__u16 cfa; /* LS_EH_RSP/RBP: the offset; LS_EH_PLT: the rip & 15 threshold */
	__u8 kind;
	__s8 rbp; /* the caller's rbp is at CFA + 8 * rbp (< 0); 0: rbp unchanged */
};
#define LS_EH_RSP 0  /* CFA = rsp + cfa */
#define LS_EH_RBP 1  /* CFA = rbp + cfa */
#define LS_EH_PLT 2  /* CFA = rsp + 8, + 8 more where (rip & 15) >= cfa */
#define LS_EH_ROOT 3 /* the outermost frame: no return address */
#define LS_EH_NONE 4 /* no rule here (between functions, or one BPF cannot follow) */

/* eh_procs map value: a process's executable mappings that have tables,
 * sorted by start. A pc in [start, end) is row address pc - bias, looked
 * up in rows [row, row + nrows) of eh_rows. Where npages > 0, the row for
 * an address a in bucket k = (a - text) >> LS_EH_PAGE_SHIFT is between
 * entries page + k and page + k + 1 of eh_pages (each: the index, in the
 * file's rows, of the row at the bucket's first address): a few probes,
 * not a search of all rows. */
#define LS_EH_MAPS 64 /* a power of two: BPF masks its index */
#define LS_EH_PAGE_SHIFT 8
struct ls_eh_map {
	__u64 start, end, bias;
	__u32 row, nrows;
	__u32 page, npages;
	__u32 text, pad;
};
struct ls_eh_proc {
	__u32 n;
	__u32 pad;
	struct ls_eh_map m[LS_EH_MAPS];
};

/* A Python frame as a stack address, for the symbol records and the stack
 * graphs: above every user address (< 2^47), unique per (code, lasti). */
#define LS_PY_KEY(code, lasti) ((__u64)(code) | ((__u64)((lasti) + 1) & 0xffff) << 48)

/* py_procs map value (user space fills it, the BPF walker reads it): where
 * a process's interpreter state is and the layout of its CPython version. */
struct ls_py_proc {
	__u64 runtime;      /* &_PyRuntime in the process */
	__u16 interp_head;  /* _PyRuntimeState.interpreters.head */
	__u16 threads_head; /* PyInterpreterState.threads.head */
	__u16 ts_next;      /* PyThreadState.next */
	__u16 ts_tid;       /* PyThreadState.native_thread_id */
	__u16 ts_cframe;    /* PyThreadState.cframe (current_frame, LS_PY_NO_CFRAME) */
	__u16 cf_frame;     /* _PyCFrame.current_frame */
	__u16 fr_code;      /* _PyInterpreterFrame.f_code (f_executable: 3.14+ tags its low bits) */
	__u16 fr_prev;      /* _PyInterpreterFrame.previous */
	__u16 fr_instr;     /* _PyInterpreterFrame.prev_instr (instr_ptr, 3.13+) */
	__u16 co_code;      /* PyCodeObject.co_code_adaptive */
	__u16 ob_type;      /* PyObject.ob_type */
	__u16 flags;        /* LS_PY_* below */
	__u64 code_type;    /* &PyCode_Type: a frame whose executable is not a code
			     * object (3.12+'s entry frames) is skipped; 0: no check */
	/* a process in a pid namespace of its own (a container's): its
	 * threads' native ids are that namespace's (nsfs dev and inode of
	 * /proc/PID/ns/pid); 0: the recorder's namespace */
	__u64 ns_dev, ns_ino;
};
#define LS_PY_NO_CFRAME 1 /* 3.13+: ts_cframe is PyThreadState.current_frame itself */

/* ---- side records written by user space ---- */

/* Variable size: cmdline (NUL-separated args) follows, cmdline_len bytes. */
struct ls_rec_proc_info {
	struct ls_hdr h; /* pid = the process */
	__u32 ppid;
	__u32 cmdline_len;
	__u64 start_time; /* /proc/PID/stat starttime, clock ticks since boot */
	char comm[LS_COMM_LEN];
	char exe[256];
	/* char cmdline[cmdline_len]; */
};

/* Written beside each LS_REC_PROC_INFO: where the process lives. Variable
 * size: the cgroup path follows, NUL-terminated (cgroup v2's "0::" line, or
 * the first v1 line's path). */
struct ls_rec_proc_ns {
	struct ls_hdr h; /* pid = the process, as the host numbers it */
	__u32 ns_pid;    /* its pid in its own (innermost) pid namespace */
	__u32 flags;     /* LS_NS_* */
	__u32 cgroup_len;
	__u32 pad;
	__u64 pidns, mntns; /* namespace inode numbers */
	/* char cgroup[cgroup_len]; */
};
#define LS_NS_OWN_PID 1 /* a pid namespace other than the recorder's */
#define LS_NS_OWN_MNT 2 /* a mount namespace other than the recorder's */

/* Variable size: nips addresses follow, innermost first. */
struct ls_rec_stack {
	struct ls_hdr h;
	__s32 id;
	__u32 nips;
	/* __u64 ips[nips]; */
};

/* Variable size: the NUL-terminated name follows ("func" or "[module]"). */
struct ls_rec_sym {
	struct ls_hdr h; /* pid: the process (0 for kernel addresses) */
	__u64 ip;
	__u32 name_len;
	__u32 pad;
	/* char name[name_len]; */
};

/* Variable size: the mapped path follows, path_len bytes with its NUL. The
 * process's executable mappings, written when its first stack arrives and
 * again at the end, so a capture can be symbolized elsewhere (ABI 3). */
struct ls_rec_mapping {
	struct ls_hdr h; /* pid: the process */
	__u64 start, end, pgoff;
	__u8 build_id[20];
	__u32 build_id_len; /* 0: none or unreadable */
	__u32 path_len;
	/* char path[path_len]; */
};

/* An engine's own request span (record --otlp-receive; DESIGN §11,
 * engines without patches): vLLM's llm_request, as the engine measured it.
 * h.ts: when it was received (it comes after the request ended); h.pid: the
 * process that sent it, 0 unknown. Marks on CLOCK_MONOTONIC through the
 * capture header's clock pair, 0 when the span did not give them. */
struct ls_rec_engine_span {
	struct ls_hdr h;
	__u64 t_arrived; /* the span's start: the engine took the request */
	__u64 t_queued, t_sched, t_first, t_finish;
	__u32 prompt_tokens, completion_tokens; /* 0: not given */
	__u8 trace_id[16]; /* all zero: none */
	char request_id[64]; /* gen_ai.request.id (vLLM: cmpl-<X-Request-Id>...) */
};

#define LS_MAX_CPUS 1024

/* Variable size: ncpu counters follow. Cumulative since record start. */
struct ls_rec_drops {
	struct ls_hdr h;
	__u32 ncpu;
	__u32 pad;
	__u64 total;
	__u64 stack_errors; /* stacks not taken: stack map full, or a walk failed (ABI 3) */
	/* __u64 per_cpu[ncpu]; */
};

/* Runs of latsplit's BPF programs that the kernel skipped, cumulative since
 * record start (bpf_prog_info.recursion_misses): a program does not run on
 * a CPU where its previous run has not ended. Where tracepoints are
 * faultable (syscall tracepoints on 7.x) a preempted run of sys_enter makes
 * another task's syscall on that CPU go unseen. `top`: the program that
 * skipped most, and its count. */
struct ls_rec_probe_skips {
	struct ls_hdr h;
	__u64 total;
	__u64 top_n;
	char top[32];
};

/* Last record of a capture. */
struct ls_rec_stats {
	struct ls_hdr h;
	__u64 start_ts;
	__u64 end_ts;
	__u64 events;
	__u64 ringbuf_drops;
	__u64 writer_stalls;     /* times the consumer waited for the writer */
	__u64 writer_stall_ns;   /* total time it waited */
	__u64 per_type[32];      /* events by kernel type (index = type) */
};

#endif /* LATSPLIT_EVENTS_H */
