/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every latsplit BPF object shares: the ring buffer, the per-CPU drop
 * counters, the tracked-process and tracked-port filters, and the helpers to
 * fill a record header. Each <domain>.bpf.c includes this; user space loads
 * the first object and hands the same map fds to the others
 * (bpf_map__reuse_fd), so all domains feed one ring buffer and one filter.
 */
#ifndef LATSPLIT_COMMON_BPF_H
#define LATSPLIT_COMMON_BPF_H

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "latsplit/events.h"

/* Filled by user space before load. */
const volatile bool track_all = false;
const volatile bool want_stacks = false; /* off-CPU stacks at sched_switch */
const volatile bool want_io = false;     /* the socket domain runs: time blocked in writes */
/* latsplit's own tgid: never traced, or its consumer would trace itself. */
const volatile __u32 self_tgid = 0;
/* Wake the consumer only once this much is queued; it also polls on a timer,
 * so a quiet ring is still drained. Saves a wakeup per event. */
const volatile __u64 wakeup_bytes = 1 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized by user space before load */
} events SEC(".maps");

/* Stacks of samples and of blocking switches; user space dumps it at the end
 * of a recording. Failures (full, collisions) are counted in stack_errs. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, LS_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} stack_errs SEC(".maps");

/* Ring-buffer reservation failures, per CPU: a drop is never silent. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* Tracked processes: bit tgid % 64 of word tgid / 64, for every tgid up to
 * Linux's PID_MAX_LIMIT (512 KiB). User space sets bits through its mmap
 * of the map (loader.c); children are added at fork, in the kernel, and a
 * process is taken out when its last thread exits. An array's lookup is
 * inlined by the verifier: every program's "is this process tracked?"
 * costs a few instructions, not a hash lookup (most runs, on a busy host,
 * are for processes not tracked). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, LS_TGID_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} tracked_tgids SEC(".maps");

/* Followed local TCP ports (host order) -> PORT_USER or PORT_AUTO, 0 for
 * the others: an array over every port (512 KiB), whose lookup the
 * verifier inlines. A segment or state change of any TCP socket on the
 * host that is not a known connection asks it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} tracked_ports SEC(".maps");

/* Known TCP connections: struct sock address -> conn. LRU so a connection
 * whose destroy we never saw cannot fill the map. */
struct conn_val {
	__u64 conn_id;
	__u16 sport; /* the kernel zeroes skc_num when it unhashes at CLOSE */
	__u16 pad;
	/* a unix socket's inode number: which socket at this address it is
	 * (with no close seen, a later socket can take a closed one's address) */
	__u32 ino;
	/* A data segment's arrival held for the read that takes its bytes
	 * (emit by exception, struct ls_ev_sock_io's arrive_*): its tcp_probe
	 * record, held while held.h.ts is set. See held_take. */
	struct ls_ev_tcp_probe held;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct conn_val);
} conns SEC(".maps");

/* The last conn_id handed out, shared by every object that creates
 * connections (net: handshakes and tracked ports; sock: connections a
 * tracked process meets mid-flight). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} conn_ids SEC(".maps");

/* A read/write-family syscall in flight on a tracked socket: the thread's
 * own storage (ts_enter 0: none). The scheduler domain adds the time the
 * thread sleeps inside a write. */
struct io_inflight {
	__u64 sk;
	__u64 conn_id;
	__u64 buf;      /* buffer, iovec array or msghdr, by call */
	__u64 ts_enter;
	__u64 off_start; /* when the thread went to sleep, 0 if running */
	__u64 blocked_ns;
	__u32 fd;
	__u16 call;
	__u16 dir;
	__u32 nvec; /* readv/writev: iovec count */
	__u16 unix_sk; /* an AF_UNIX stream socket: no TCP sequence numbers */
	/* begun at a socket tracepoint (record --sock-hooks socket) in a
	 * sendmmsg/recvmmsg: one message's bytes, no payload */
	__u16 one_msg;
	/* TCP sendmmsg/recvmmsg and writes: the stream's position at entry
	 * (a write's: its first byte's sequence number) */
	__u32 seq0;
	__u32 nr; /* the syscall's number: its exit is checked against it */
	/* a write's segment that began with that byte, when it left inside
	 * the call (net.bpf.c): folded into the call's record at exit, or sent
	 * as its own tcp_xmit record then (xm.h.ts 0: none) */
	struct ls_ev_tcp_xmit xm;
	/* sched.bpf.c, record --offcpu-kernel-min-us: the ts of the blocking
	 * switch-out whose kernel stack waits for the block's end (0: none).
	 * Apart from the call in flight: io_claim, which clears the rest,
	 * runs only on the CPU, when no block is open. */
	__u64 kblock_ts;
	/* sched.bpf.c: the first wakeup since the thread last blocked, for
	 * the switch that runs it to carry (0: none). io_claim clears it only
	 * while the thread runs, when no wakeup is waiting for it. */
	__u64 woken_ts;
	__u32 waker_pid, waker_tid;
};

/* Task-local storage, not a hash by tid: a lookup is the task's own
 * pointer and a cache slot, with no bucket lock to take at every entry and
 * exit (Linux >= 5.11 for tracing programs; the BPF here needs 5.17's
 * bpf_loop already). A thread keeps its slot until it exits; a finished
 * call clears ts_enter. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct io_inflight);
} io_inflight SEC(".maps");

/* Task t's call in flight (t a BTF pointer), or NULL. */
static __always_inline struct io_inflight *io_of(struct task_struct *t)
{
	struct io_inflight *io = bpf_task_storage_get(&io_inflight, t, 0, 0);

	return io && io->ts_enter ? io : NULL;
}

/* The current thread's call in flight, or NULL. */
static __always_inline struct io_inflight *io_current(void)
{
	return io_of(bpf_get_current_task_btf());
}

/* tracked_ports values (events.h) */
#define PORT_USER LS_PORT_USER
#define PORT_AUTO LS_PORT_AUTO

/* tgid's word of tracked_tgids (NULL past PID_MAX_LIMIT) and its bit. */
static __always_inline __u64 *tgid_word(__u32 tgid, __u64 *bit)
{
	__u32 k = tgid / 64;

	*bit = 1ull << (tgid % 64);
	return bpf_map_lookup_elem(&tracked_tgids, &k);
}

/* Is tgid in tracked_tgids (whatever track_all says)? */
static __always_inline bool tgid_listed(__u32 tgid)
{
	__u64 bit, *w = tgid_word(tgid, &bit);

	return w && (*w & bit);
}

static __always_inline void tgid_track(__u32 tgid)
{
	__u64 bit, *w = tgid_word(tgid, &bit);

	if (w)
		__sync_fetch_and_or(w, bit);
}

static __always_inline void tgid_untrack(__u32 tgid)
{
	__u64 bit, *w = tgid_word(tgid, &bit);

	if (w)
		__sync_fetch_and_and(w, ~bit);
}

static __always_inline bool tgid_tracked(__u32 tgid)
{
	if (tgid == self_tgid || tgid == 0) /* 0: the idle tasks */
		return false;
	if (track_all)
		return true;
	return tgid_listed(tgid);
}

/* One more in slot `key` of the per-CPU counter array `counters` (a
 * per-CPU slot: no atomics needed). */
static __always_inline void count_in(void *counters, __u32 key)
{
	__u64 *n = bpf_map_lookup_elem(counters, &key);

	if (n)
		*n += 1;
}

static __always_inline void count_drop(void)
{
	count_in(&drops, 0);
}

/* Scratch records in a per-CPU array `map`, one entry per slot, each
 * claimed (a bit in *busy, this CPU's) for the length of one program run.
 * Programs that can be preempted (uprobes, faultable tracepoints) or
 * interrupted (by a sample's) on their CPU can have another run of a
 * program using the same scratch come in between: each takes its own. */
#define LS_SLOTS 4 /* entries of a claimed scratch map (slot_claim tries each) */

static __always_inline void *slot_try(void *map, __u32 *busy, __u32 i, __u32 *slot)
{
	void *rec;

	if (__sync_fetch_and_or(busy, 1u << i) & (1u << i))
		return NULL;
	rec = bpf_map_lookup_elem(map, &i);
	if (!rec) {
		__sync_fetch_and_and(busy, ~(1u << i));
		return NULL;
	}
	*slot = i;
	return rec;
}

/* A free one of map's LS_SLOTS slots, claimed into *slot; NULL (a drop,
 * counted) when every one is held by a preempted or interrupted run. */
static __always_inline void *slot_claim(void *map, __u32 *busy, __u32 *slot)
{
	void *rec;

	_Static_assert(LS_SLOTS == 4, "one slot_try per slot below");
	if (!busy)
		return NULL;
	if ((rec = slot_try(map, busy, 0, slot)) || (rec = slot_try(map, busy, 1, slot)) ||
	    (rec = slot_try(map, busy, 2, slot)) || (rec = slot_try(map, busy, 3, slot)))
		return rec;
	count_drop();
	return NULL;
}

static __always_inline void slot_release(__u32 *busy, __u32 slot)
{
	if (busy)
		__sync_fetch_and_and(busy, ~(1u << (slot & (LS_SLOTS - 1))));
}

/* Reserve a record of `size` bytes, counting a failure as a drop. It is
 * zeroed: ring-buffer memory holds earlier records (a socket payload among
 * them, not yet redacted), and a field written only in part (a string up to
 * its NUL) would carry those bytes into the capture. Every caller passes a
 * sizeof, so this is a few inline stores. */
static __always_inline void *reserve(__u32 size)
{
	void *rec = bpf_ringbuf_reserve(&events, size, 0);

	if (!rec)
		count_drop();
	else
		__builtin_memset(rec, 0, size);
	return rec;
}

/* Records submitted since wakeup_flags last read the ring's fill, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} rb_submits SEC(".maps");

#define WAKEUP_CHECK_EVERY 16 /* a power of two */

/* The recorder is woken once a quarter of the ring is filled. The fill is
 * read through the consumer position, a line the recorder writes from
 * another CPU: a cache miss on most reads. So it is read on every 16th
 * submission of a CPU; a wakeup comes at most 15 of its records late. */
static __always_inline __u64 wakeup_flags(void)
{
	__u32 zero = 0, *n = bpf_map_lookup_elem(&rb_submits, &zero);

	if (n && (++*n & (WAKEUP_CHECK_EVERY - 1)))
		return BPF_RB_NO_WAKEUP;
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									     : BPF_RB_NO_WAKEUP;
}

static __always_inline void submit(void *rec)
{
	bpf_ringbuf_submit(rec, wakeup_flags());
}

#define AF_INET 2
#define AF_INET6 10

static __always_inline void read_tuple(struct ls_tuple *t, const struct sock_common *skc)
{
	__u16 family = BPF_CORE_READ(skc, skc_family);

	__builtin_memset(t, 0, sizeof(*t));
	t->family = family;
	t->sport = BPF_CORE_READ(skc, skc_num);
	t->dport = bpf_ntohs(BPF_CORE_READ(skc, skc_dport));
	if (family == AF_INET) {
		__u32 s = BPF_CORE_READ(skc, skc_rcv_saddr);
		__u32 d = BPF_CORE_READ(skc, skc_daddr);

		t->saddr[10] = t->saddr[11] = 0xff;
		t->daddr[10] = t->daddr[11] = 0xff;
		__builtin_memcpy(&t->saddr[12], &s, 4);
		__builtin_memcpy(&t->daddr[12], &d, 4);
	} else {
		BPF_CORE_READ_INTO(&t->saddr, skc, skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&t->daddr, skc, skc_v6_daddr.in6_u.u6_addr8);
	}
}

/* The tuple of a tracked socket, with the local port it had when hashed. */
static __always_inline void tuple_of(struct ls_tuple *t, const struct sock *sk,
				       const struct conn_val *v)
{
	read_tuple(t, &sk->__sk_common);
	if (!t->sport)
		t->sport = v->sport;
}

/* Adds sk to the known connections with a fresh conn_id. */
static __always_inline struct conn_val *conn_create(const struct sock *sk)
{
	__u64 key = (__u64)sk, *last;
	struct conn_val nv = {};
	__u32 zero = 0;

	last = bpf_map_lookup_elem(&conn_ids, &zero);
	if (!last)
		return NULL;
	nv.sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	nv.conn_id = __sync_fetch_and_add(last, 1) + 1;
	bpf_map_update_elem(&conns, &key, &nv, BPF_ANY);
	return bpf_map_lookup_elem(&conns, &key);
}

/*
 * The held arrival (conn_val.held). One writer at a time puts one there:
 * the TCP receive path (net.bpf.c's tcp_probe), which runs under the
 * socket's lock; it first takes out any arrival still held (an exchange of
 * held.h.ts with 0) and sends it as its own record, then writes the
 * fields, then the ts. Anyone else takes it out with a compare-and-swap of
 * the ts it read to 0, and uses the fields it read before only when that
 * succeeded: no writer touched them in between (a writer's first step sets
 * 0, its last a later ts). So each held arrival is folded into one read or
 * sent once, before any later record of its connection: whatever else
 * records something of the connection (a write, a state change, a reset,
 * its destroy, a read that does not begin with its bytes, the next
 * segment) sends it first. At the capture's end, user space sends those
 * still held (loader.c).
 */

/* The held arrival of v, whose ts was ts, to the ring as its own tcp_probe
 * record. cas: the caller is not the writer and takes it here with a
 * compare-and-swap of ts (see above); else the writer has exchanged it out
 * already. A full ring: counted as a drop when `count`; otherwise, when
 * cas, it stays held (the connection's next record tries again). */
static __always_inline void held_send(struct conn_val *v, __u64 ts, bool cas, bool count)
{
	struct ls_ev_tcp_probe *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		if (count)
			count_drop();
		return;
	}
	*e = v->held;
	if (cas && __sync_val_compare_and_swap(&v->held.h.ts, ts, 0) != ts) {
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		return;
	}
	e->h.ts = ts;
	submit(e);
}

/* The held arrival of v out as its own record, by anyone but the writer;
 * `last`: the connection's last record (its destroy), after which a full
 * ring's arrival could not be sent: a drop. */
static __always_inline void held_take(struct conn_val *v, bool last)
{
	__u64 ts = v->held.h.ts;

	if (ts)
		held_send(v, ts, true, last);
}

/* A connection met mid-flight: its tuple and where its streams stand. */
static __always_inline void emit_adopt(const struct sock *sk, const struct conn_val *v,
				       __u32 via, __u32 fd, __u16 dir, __u32 moved);

static __always_inline __s32 stack_id(void *ctx, __u64 flags)
{
	long id = bpf_get_stackid(ctx, &stacks, flags);

	if (id < 0 && id != -14 /* EFAULT: no user stack (kernel thread) */)
		count_in(&stack_errs, 0);
	return id;
}

/* Field f of kernel object p: a plain load through a BTF pointer (tp_btf
 * programs: btf true), else a CO-RE probe read (raw_tp programs). btf is a
 * constant at each inlined call site, so each program holds one of the two;
 * a probe read is a helper call, a load one instruction. */
#define KREAD(btf, p, f) ((btf) ? (p)->f : BPF_CORE_READ(p, f))

/* Header for a record about the current task, stamped ts: a time the
 * program already read (a clock read costs ~70 ns on the VMs we test on). */
static __always_inline void fill_hdr_at(struct ls_hdr *h, __u16 type, __u16 size, __u64 ts)
{
	__u64 id = bpf_get_current_pid_tgid();

	h->type = type;
	h->size = size;
	h->cpu = bpf_get_smp_processor_id();
	h->ts = ts;
	h->pid = id >> 32;
	h->tid = (__u32)id;
}

/* The same, stamped now. */
static __always_inline void fill_hdr(struct ls_hdr *h, __u16 type, __u16 size)
{
	fill_hdr_at(h, type, size, bpf_ktime_get_ns());
}

/* moved: bytes the call in hand already moved in direction dir (met at a
 * socket tracepoint as it ends): that stream stood that much earlier at
 * the call's start, where its record begins. */
static __always_inline void emit_adopt(const struct sock *sk, const struct conn_val *v,
				       __u32 via, __u32 fd, __u16 dir, __u32 moved)
{
	const struct tcp_sock *tp = (const void *)sk;
	struct ls_ev_conn_adopt *e = reserve(sizeof(*e));

	if (!e)
		return;
	fill_hdr(&e->h, LS_EV_CONN_ADOPT, sizeof(*e));
	e->conn_id = v->conn_id;
	e->skaddr = (__u64)sk;
	tuple_of(&e->t, sk, v);
	e->via = via;
	e->state = BPF_CORE_READ(sk, __sk_common.skc_state);
	e->srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3;
	e->snd_una = BPF_CORE_READ(tp, snd_una);
	e->write_seq = BPF_CORE_READ(tp, write_seq) - (dir == LS_IO_OUT ? moved : 0);
	e->copied_seq = BPF_CORE_READ(tp, copied_seq) - (dir == LS_IO_IN ? moved : 0);
	e->rcv_nxt = BPF_CORE_READ(tp, rcv_nxt);
	e->fd = fd;
	e->rtt_min_us = BPF_CORE_READ(tp, rtt_min.s[0].v);
	submit(e);
}

#endif /* LATSPLIT_COMMON_BPF_H */
