// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Socket I/O domain: read/write-family syscalls, accept and close of tracked
 * processes on tracked TCP connections, from the syscall tracepoints; or the
 * same reads and writes from the socket tracepoints (record --sock-hooks,
 * the default where the kernel has them: see "--sock-hooks socket" below).
 *
 * At entry the fd is resolved to its struct sock with a CO-RE walk of
 * task->files (no kprobes); a fd that is not a TCP socket costs the
 * tracked-tgid lookup and that walk, and emits nothing. A connected TCP
 * socket not known yet (the server was serving before the capture) is
 * adopted: it gets a conn_id and a conn_adopt record with its anchors. At exit the byte
 * count and the payload (every iovec, capture_bytes in all) go to the ring
 * buffer.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define IPPROTO_TCP 6
#define MSG_PEEK 2
#define AF_UNIX_ 1
#define SOCK_STREAM_ 1

const volatile __u32 capture_bytes = 1024; /* <= LS_IO_MAX_CAPTURE */

/* Scratch for one variable-size record: too big for the BPF stack. The
 * payload area is doubled so a masked offset plus a masked length stays in
 * bounds, and has room for the piece table after it. */
/* copy_payload's walk over a call's iovecs (iov_step), kept in the scratch
 * record, not on the stack: read back from a map, its counts are unknowns
 * to the verifier, which then checks iov_step's body once, not once for
 * each count of pieces (up to LS_IO_MAX_SEGS times). */
struct iov_walk {
	__u64 vec, moved, off;
	__u32 nvec, budget, cap, n;
	bool cut, holes;
};

struct io_record {
	struct ls_ev_sock_io e;
	__u8 data[2 * LS_IO_MAX_CAPTURE + LS_IO_MAX_SEGS * sizeof(struct ls_io_seg)];
	struct ls_io_seg segs[LS_IO_MAX_SEGS]; /* staged here, copied after the payload */
	struct iov_walk w;
};

/* Scratch records, LS_SLOTS per CPU, each claimed (a bit in io_busy) for
 * the length of one program run. Syscall tracepoints are faultable on
 * current kernels and uprobes run preemptible: their programs stay on
 * their CPU but another task's run of the same program can come in between
 * (seen on 7.2 under qemu: one shared record clobbered, requests lost). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LS_SLOTS);
	__type(key, __u32);
	__type(value, struct io_record);
} io_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} io_busy SEC(".maps");

/* This CPU's free scratch record, claimed into *slot (slot_claim). */
static __always_inline struct io_record *scratch_claim(__u32 *slot)
{
	__u32 zero = 0;

	return slot_claim(&io_scratch, bpf_map_lookup_elem(&io_busy, &zero), slot);
}

static __always_inline void scratch_release(__u32 slot)
{
	__u32 zero = 0;

	slot_release(bpf_map_lookup_elem(&io_busy, &zero), slot);
}

/* The struct sock behind the current task's fd, or NULL. The task's file
 * table is reached through BTF pointers (plain loads); the slot, the file
 * and the socket by probe reads (a variable index; untyped pointers). */
static __always_inline struct sock *fd_to_sock(__u32 fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct files_struct *files = task->files;
	struct file **fds, *file = NULL;
	struct fdtable *fdt;
	struct socket *sock;
	__u16 mode;

	if (!files)
		return NULL;
	fdt = files->fdt;
	if (!fdt || fd >= fdt->max_fds)
		return NULL;
	fds = fdt->fd;
	bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
	if (!file)
		return NULL;
	mode = BPF_CORE_READ(file, f_inode, i_mode);
	if ((mode & S_IFMT) != S_IFSOCK)
		return NULL;
	sock = BPF_CORE_READ(file, private_data);
	return sock ? BPF_CORE_READ(sock, sk) : NULL;
}

#define TCP_SYN_SENT_ 2
#define TCP_CLOSE_ 7
#define TCP_LISTEN_ 10
#define NO_ADOPT 0xff

/* The inode number of sk's socket (sockfs: one per socket, never reused
 * while the counter lasts); struct socket begins its socket_alloc. */
static __always_inline __u32 sock_ino(const struct sock *sk)
{
	struct socket_alloc *sa = (void *)BPF_CORE_READ(sk, sk_socket);

	return sa ? (__u32)BPF_CORE_READ(sa, vfs_inode.i_ino) : 0;
}

static __always_inline bool unix_stream(const struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_family) == AF_UNIX_ &&
	       BPF_CORE_READ(sk, sk_type) == SOCK_STREAM_;
}

/* The conn of TCP socket sk, or NULL. The caller is a tracked process: a
 * connected socket it uses that is not known yet was established before
 * the capture (or on a port not tracked) and is adopted here (fd is the
 * descriptor it used), unless `via` is NO_ADOPT, or `fd_check` and fd is
 * not sk (a socket met at a socket tracepoint: see sock_tp_begin). An
 * AF_UNIX stream socket is returned only once known (adopted by
 * unix_adopt); *is_unix says it is one. dir, moved: as emit_adopt's. */
static __always_inline struct conn_val *sk_conn_any(struct sock *sk, __u32 via, __u32 fd,
						    bool fd_check, bool *is_unix, __u16 dir,
						    __u32 moved)
{
	__u64 key = (__u64)sk;
	struct conn_val *v;
	int state;

	*is_unix = false;
	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP) {
		if (!unix_stream(sk))
			return NULL;
		*is_unix = true;
		v = bpf_map_lookup_elem(&conns, &key);
		/* a closed socket's conn, its address taken by this one: the
		 * close went unseen (--sock-hooks socket has no close) */
		if (v && v->ino != sock_ino(sk)) {
			bpf_map_delete_elem(&conns, &key);
			return NULL;
		}
		return v;
	}
	v = bpf_map_lookup_elem(&conns, &key);
	if (v || via == NO_ADOPT)
		return v;
	state = BPF_CORE_READ(sk, __sk_common.skc_state);
	if (state == TCP_LISTEN_ || state == TCP_CLOSE_ || state == TCP_SYN_SENT_)
		return NULL;
	if (fd_check && fd_to_sock(fd) != sk)
		return NULL;
	v = conn_create(sk);
	if (v)
		emit_adopt(sk, v, via, fd, dir, moved);
	return v;
}

/* sk_conn_any of the socket behind fd; *skp set when fd is a socket. */
static __always_inline struct conn_val *fd_conn_any(__u32 fd, struct sock **skp, __u32 via,
						    bool *is_unix)
{
	struct sock *sk = fd_to_sock(fd);

	*is_unix = false;
	if (!sk)
		return NULL;
	*skp = sk;
	return sk_conn_any(sk, via, fd, false, is_unix, LS_IO_IN, 0);
}

/* TCP only (accept, close of TCP connections). */
static __always_inline struct conn_val *fd_conn(__u32 fd, struct sock **skp, __u32 via)
{
	bool is_unix;
	struct conn_val *v = fd_conn_any(fd, skp, via, &is_unix);

	return is_unix ? NULL : v;
}

/* Does a read's payload begin with an HTTP/1.x method? (What makes an
 * AF_UNIX stream worth following: a host's unix sockets mostly carry
 * D-Bus, journald, X11 and container runtimes.) */
static __always_inline bool http_method(const __u8 *d, __u32 n)
{
	__u32 w;

	if (n < 4)
		return false;
	w = d[0] | d[1] << 8 | d[2] << 16 | (__u32)d[3] << 24;
	return w == 0x20544547 /* "GET " */ || w == 0x54534f50 /* "POST" */ ||
	       w == 0x20545550 /* "PUT " */ || w == 0x44414548 /* "HEAD" */ ||
	       w == 0x454c4544 /* "DELE" */ || w == 0x43544150 /* "PATC" */ ||
	       w == 0x4954504f /* "OPTI" */;
}

/* A unix stream socket's first HTTP request: a conn and its adopt record. */
static __always_inline struct conn_val *unix_adopt(struct sock *sk, __u32 fd)
{
	struct conn_val *v = conn_create(sk);
	struct ls_ev_conn_adopt *e;

	if (!v)
		return NULL;
	v->ino = sock_ino(sk);
	e = reserve(sizeof(*e));
	if (!e)
		return v;
	fill_hdr(&e->h, LS_EV_CONN_ADOPT, sizeof(*e));
	e->conn_id = v->conn_id;
	e->skaddr = (__u64)sk;
	e->via = LS_ADOPT_UNIX;
	e->state = BPF_CORE_READ(sk, __sk_common.skc_state);
	e->fd = fd;
	submit(e);
	return v;
}

/* Sequence number of the first byte a syscall moved: the socket's read or
 * write position after it, less what it moved. */
static __always_inline __u32 io_seq(__u64 skaddr, __u16 dir, long ret)
{
	const struct tcp_sock *tp = (const void *)skaddr;
	__u32 pos = dir == LS_IO_IN ? BPF_CORE_READ(tp, copied_seq) : BPF_CORE_READ(tp, write_seq);

	return pos - (__u32)ret;
}

/* The current thread's in-flight slot for syscall nr, zeroed (not live
 * until ts_enter is set); NULL, counted as a drop, when no memory is left
 * for a thread's first one. */
static __always_inline struct io_inflight *io_claim(long nr)
{
	struct io_inflight *io = bpf_task_storage_get(&io_inflight, bpf_get_current_task_btf(), 0,
						      BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!io) {
		count_drop();
		return NULL;
	}
	__builtin_memset(io, 0, sizeof(*io));
	io->nr = nr;
	return io;
}

/* A followed call on socket sk (conn its conn, NULL for a unix socket not
 * followed yet) begins: the thread's slot, live from ts (0: now). */
static __always_inline struct io_inflight *io_begin(long nr, struct sock *sk, struct conn_val *conn,
						    bool is_unix, __u64 fd, __u64 buf, __u16 call,
						    __u16 dir, __u32 nvec, __u64 ts)
{
	struct io_inflight *io;

	if (conn && dir == LS_IO_OUT && !is_unix)
		held_take(conn, false); /* an arrival held for a read: out before the write */
	io = io_claim(nr);
	if (!io)
		return NULL;
	io->sk = (__u64)sk;
	io->conn_id = conn ? conn->conn_id : 0;
	io->unix_sk = is_unix;
	io->buf = buf;
	io->fd = fd;
	io->call = call;
	io->dir = dir;
	io->nvec = nvec;
	if ((call == LS_IO_SENDMMSG || call == LS_IO_RECVMMSG || dir == LS_IO_OUT) && !is_unix)
		io->seq0 = io_seq(io->sk, dir, 0);
	io->ts_enter = ts ? ts : bpf_ktime_get_ns(); /* last: the slot is live from here */
	return io;
}

/* A followed-kind call by a tracked process (sys_enter_run checked that)
 * enters: its slot, if fd is a socket we follow. */
static __always_inline int io_enter(long nr, __u64 fd, __u64 buf, __u16 call, __u16 dir,
				    __u64 flags, __u32 nvec)
{
	struct conn_val *conn;
	struct sock *sk = NULL;
	bool is_unix;

	if (flags & MSG_PEEK)
		return 0;
	conn = fd_conn_any(fd, &sk, LS_ADOPT_IO, &is_unix);
	/* an unknown unix socket is a candidate when it reads (see io_exit) */
	if (!conn && !(is_unix && dir == LS_IO_IN))
		return 0;
	io_begin(nr, sk, conn, is_unix, fd, buf, call, dir, nvec, 0);
	return 0;
}

/* The call's buffers: one plain buffer (*plain set), or an iovec array of
 * *nvec entries; none for sendfile and splice. */
static __always_inline __u64 io_vector(const struct io_inflight *io, __u32 *nvec, bool *plain)
{
	struct user_msghdr msg = {};

	*plain = false;
	*nvec = 0;
	switch (io->call) {
	case LS_IO_READ:
	case LS_IO_RECVFROM:
	case LS_IO_WRITE:
	case LS_IO_SENDTO:
		*plain = true;
		*nvec = 1;
		return io->buf;
	case LS_IO_RECVMSG:
	case LS_IO_SENDMSG:
	case LS_IO_RECVMMSG: /* the first message's (struct mmsghdr starts with it) */
	case LS_IO_SENDMMSG:
		if (bpf_probe_read_user(&msg, sizeof(msg), (void *)io->buf))
			return 0;
		*nvec = msg.msg_iovlen;
		return (__u64)msg.msg_iov;
	case LS_IO_READV:
	case LS_IO_WRITEV:
		*nvec = io->nvec;
		return io->buf;
	}
	return 0;
}

/* Later iovecs keep this many bytes each of the budget (a chunk's size line
 * and CRLF, a terminating 0-chunk) when an earlier one is longer than the
 * budget, up to half of it. */
#define IOV_RESERVE 32

/* One iovec per bpf_loop step (arg: the record; its walk in rec->w): the
 * verifier checks the body once, not once per iovec. */
static long iov_step(__u32 i, void *arg)
{
	struct io_record *rec = *(struct io_record **)arg;
	struct iov_walk *w = &rec->w;
	struct iovec iov = {};
	__u64 len, take, left, reserve;
	__u32 at, k;

	if (i >= w->nvec || w->off >= w->moved || w->cap >= w->budget || w->n >= LS_IO_MAX_SEGS)
		return 1;
	if (bpf_probe_read_user(&iov, sizeof(iov), (void *)(w->vec + (__u64)i * sizeof(iov))))
		return 1;
	len = iov.iov_len < w->moved - w->off ? iov.iov_len : w->moved - w->off;
	if (!len)
		return 0;
	left = w->budget - w->cap;
	k = w->nvec - i - 1;
	reserve = (__u64)(k < LS_IO_MAX_SEGS ? k : LS_IO_MAX_SEGS) * IOV_RESERVE;
	if (reserve > left / 2)
		reserve = left / 2;
	take = len < left - reserve ? len : left - reserve;
	at = w->cap & (LS_IO_MAX_CAPTURE - 1); /* cap < budget <= MAX: unchanged */
	take &= 2 * LS_IO_MAX_CAPTURE - 1;
	if (take > LS_IO_MAX_CAPTURE)
		return 1;
	if (bpf_probe_read_user(&rec->data[at], take, iov.iov_base))
		return 1;
	w->holes |= w->cut;
	w->cut = take < len;
	rec->segs[w->n & (LS_IO_MAX_SEGS - 1)] = (struct ls_io_seg){(__u32)w->off, (__u32)take};
	w->n++;
	w->cap += take;
	w->off += len;
	return 0;
}

/* Copies the payload of the call's `moved` bytes into rec->data, every
 * iovec in order, at most capture_bytes in all; returns the bytes copied.
 * *nseg: pieces after the payload when they are not one prefix of the
 * call, else 0. */
static __always_inline __u32 copy_payload(struct io_record *rec, const struct io_inflight *io,
					  __u64 moved, __u16 *nseg)
{
	struct iov_walk *w = &rec->w;
	bool plain;

	*nseg = 0;
	*w = (struct iov_walk){.moved = moved, .budget = capture_bytes};
	if (w->budget > LS_IO_MAX_CAPTURE)
		w->budget = LS_IO_MAX_CAPTURE;
	w->vec = io_vector(io, &w->nvec, &plain);
	if (!w->vec)
		return 0;
	if (plain) {
		__u32 n = moved < w->budget ? moved : w->budget;

		/* the bound below is on this register (clang knows budget's and
		 * drops the test; verifiers before 6.12 then lose it) */
		asm volatile("" : "+r"(n));
		if (n > LS_IO_MAX_CAPTURE || bpf_probe_read_user(rec->data, n, (void *)w->vec))
			n = 0;
		w->cap = n;
	} else {
		bpf_loop(LS_IO_MAX_SEGS, iov_step, &rec, 0);
	}
	__u32 cap = w->cap & (2 * LS_IO_MAX_CAPTURE - 1), n = w->n;

	if (cap > LS_IO_MAX_CAPTURE)
		return 0;
	/* the record is padded to 8 bytes after the payload: zeros there, not
	 * what this CPU's scratch held before */
	if (cap & 7) {
		__u64 *tail = (__u64 *)&rec->data[cap & (LS_IO_MAX_CAPTURE * 2 - 8)];
		*tail &= (1ull << ((cap & 7) * 8)) - 1;
	}
	if (!w->holes)
		return cap;
	if (n > LS_IO_MAX_SEGS)
		n = LS_IO_MAX_SEGS;
	__u32 base = (cap + 7) & ~7u;
#pragma clang loop unroll(disable)
	for (__u32 j = 0; j < LS_IO_MAX_SEGS; j++) {
		if (j >= n)
			break;
		__u32 at = (base + j * sizeof(struct ls_io_seg)) & (2 * LS_IO_MAX_CAPTURE - 8);
		*(struct ls_io_seg *)&rec->data[at] = rec->segs[j];
	}
	*nseg = n;
	return cap;
}

/* The record in rec, its payload n bytes and nseg pieces, to the ring. */
static __always_inline void io_output(struct io_record *rec, __u32 n, __u16 nseg)
{
	__u64 size = sizeof(rec->e) + ((n + 7) & ~7ull) + (__u64)nseg * sizeof(struct ls_io_seg);

	rec->e.cap_len = n;
	rec->e.nseg = nseg;
	rec->e.h.size = size;
	if (size > sizeof(rec->e) + sizeof(rec->data))
		return;
	if (bpf_ringbuf_output(&events, rec, size, wakeup_flags()))
		count_drop();
}

/* Do the bytes a read returned begin with an HTTP method? Four bytes of
 * the first buffer, read before anything else is copied. */
static __always_inline bool starts_http(const struct io_inflight *io, long ret)
{
	struct iovec iov = {};
	__u8 head[4] = {};
	__u32 nvec;
	bool plain;
	__u64 vec = io_vector(io, &nvec, &plain);

	if (!vec || !nvec || ret < 4)
		return false;
	if (plain)
		iov.iov_base = (void *)vec;
	else if (bpf_probe_read_user(&iov, sizeof(iov), (void *)vec))
		return false;
	return !bpf_probe_read_user(head, sizeof(head), iov.iov_base) && http_method(head, 4);
}

/* A write's folded transmission (see struct ls_ev_sock_io): the whole of
 * the `ret` bytes it moved left in the one segment that began with its
 * first byte, inside the call, and within LS_IO_XMIT_DT ns of entry. */
static __always_inline __u32 xmit_fold(const struct io_inflight *io, long ret, __u32 seq)
{
	const struct ls_ev_tcp_xmit *x = &io->xm;
	__u64 dt = x->h.ts - io->ts_enter;
	__u32 v = LS_IO_XMIT | (__u32)dt;

	if (!x->h.ts || x->len != ret || x->seq != seq || x->h.ts < io->ts_enter || dt > LS_IO_XMIT_DT)
		return 0;
	return v | ls_xmit_holds(x);
}

/* A held transmission that no record carries: its own tcp_xmit record,
 * stamped when the segment left. */
static __always_inline void xmit_flush(const struct io_inflight *io)
{
	struct ls_ev_tcp_xmit *e;

	if (!io->xm.h.ts)
		return;
	e = reserve(sizeof(*e));
	if (!e)
		return;
	*e = io->xm;
	submit(e);
}

/* The call in flight is over: its held transmission goes out as its own
 * record unless the call's record carried it (xmit), and the slot is free. */
static __always_inline int io_done(struct io_inflight *io, __u32 xmit)
{
	if (!xmit)
		xmit_flush(io);
	io->ts_enter = 0;
	io->xm.h.ts = 0;
	return 0;
}

/* A TCP read's record e (its seq and bytes set): the arrival held in its
 * conn (see common.bpf.h) folded into it when the read begins with that
 * segment's first byte; left held when the segment is a later read's (it
 * begins past this read's bytes, or arrived after it); else sent first as
 * its own record. conn: the read's conn, NULL when the caller has none at
 * hand. */
static __always_inline void arrival_fold(struct conn_val *conn, struct ls_ev_sock_io *e)
{
	__u64 key = e->skaddr, ts;
	__u32 seq, len, flags;

	if (!conn && !(conn = bpf_map_lookup_elem(&conns, &key)))
		return;
	ts = conn->held.h.ts;
	if (!ts)
		return;
	seq = conn->held.seq;
	len = conn->held.data_len;
	flags = conn->held.flags;
	if (ts >= e->h.ts || (__s32)(seq - (e->seq + e->bytes)) >= 0)
		return; /* a later read's */
	if (seq != e->seq || e->h.ts - ts > 0xffffffffULL || len >= 1u << 24) {
		held_take(conn, false);
		return;
	}
	e->arrive_ack = conn->held.ack_seq;
	e->arrive_srtt_us = conn->held.srtt_us;
	if (__sync_val_compare_and_swap(&conn->held.h.ts, ts, 0) != ts) {
		e->arrive_ack = e->arrive_srtt_us = 0;
		return; /* taken meanwhile: the next segment's writer sent it */
	}
	e->arrive_dt = e->h.ts - ts;
	e->arrive_len_flags = len << 8 | (flags & 0xff);
}

/* The exit of a followed call, `ret` its result: a record. conn: the
 * call's conn where the caller has it (NULL: looked up if needed). at_once:
 * the call began in this same program run (a socket tracepoint's read),
 * stamped then: its record takes that time, not a second clock read,
 * unless an adopt record must go (and be stamped) first. */
static __always_inline int io_exit(struct io_inflight *io, long ret, struct conn_val *conn,
				   bool at_once)
{
	__u32 slot = 0, n, xmit = 0;
	struct io_record *rec;
	__u16 nseg;
	__u64 ts = at_once && io->conn_id ? io->ts_enter : 0;

	/* several messages (a count returned): the bytes are how far the
	 * stream moved */
	if ((io->call == LS_IO_SENDMMSG || io->call == LS_IO_RECVMMSG) && !io->one_msg) {
		if (ret <= 0 || io->unix_sk)
			goto out;
		ret = io_seq(io->sk, io->dir, 0) - io->seq0;
	}
	/* ret == 0 on a read is EOF: the peer closed; worth a record. */
	if (ret < 0 || (ret == 0 && io->dir == LS_IO_OUT))
		goto out;
	/* a unix socket is followed from its first HTTP request: its adopt
	 * record goes first (and is stamped first: records are ordered by time) */
	if (!io->conn_id) {
		struct conn_val *conn;

		if (!starts_http(io, ret) || !(conn = unix_adopt((struct sock *)io->sk, io->fd)))
			goto out;
		io->conn_id = conn->conn_id;
	}
	rec = scratch_claim(&slot);
	if (!rec)
		goto out;
	fill_hdr_at(&rec->e.h, LS_EV_SOCK_IO, 0, ts ? ts : bpf_ktime_get_ns());
	rec->e.conn_id = io->conn_id;
	rec->e.skaddr = io->sk;
	rec->e.ts_enter = io->ts_enter;
	rec->e.blocked_ns = io->blocked_ns;
	rec->e.fd = io->fd;
	rec->e.bytes = ret;
	rec->e.dir = io->dir;
	rec->e.call = io->call;
	/* the first byte's number: where the stream stands after the call,
	 * less what it moved. (Not the position a write entered at: threads
	 * writing one socket at once all enter at the same position, and all
	 * but the first wait for the socket's lock.) */
	rec->e.seq = io->unix_sk ? 0 : io_seq(io->sk, io->dir, ret);
	xmit = io->dir == LS_IO_OUT && io->call != LS_IO_SENDMMSG ? xmit_fold(io, ret, rec->e.seq) : 0;
	rec->e.xmit = xmit;
	rec->e.arrive_dt = rec->e.arrive_ack = rec->e.arrive_srtt_us = rec->e.arrive_len_flags = 0;
	if (io->dir == LS_IO_IN && !io->unix_sk && ret > 0)
		arrival_fold(conn, &rec->e);
	if (io->one_msg) {
		n = 0; /* which message of the call this is, nothing says */
		nseg = 0;
	} else if (io->call == LS_IO_SENDMMSG || io->call == LS_IO_RECVMMSG) {
		__u32 first = 0; /* the first message's bytes: its mmsghdr.msg_len */

		bpf_probe_read_user(&first, sizeof(first), (void *)(io->buf + sizeof(struct user_msghdr)));
		n = copy_payload(rec, io, first < ret ? first : ret, &nseg);
	} else {
		n = copy_payload(rec, io, ret, &nseg);
	}
	/* a record that did not reach the ring takes its folded segment with
	 * it: counted as a drop, as the record is */
	io_output(rec, n, nseg);
	scratch_release(slot);
out:
	return io_done(io, xmit);
}

static __always_inline void emit_accept(__u32 fd)
{
	struct ls_ev_sock_accept *e;
	struct conn_val *conn;
	struct sock *sk = NULL;

	conn = fd_conn(fd, &sk, LS_ADOPT_ACCEPT);
	if (!conn)
		return;
	e = reserve(sizeof(*e));
	if (!e)
		return;
	fill_hdr(&e->h, LS_EV_SOCK_ACCEPT, sizeof(*e));
	e->conn_id = conn->conn_id;
	e->skaddr = (__u64)sk;
	tuple_of(&e->t, sk, conn);
	e->fd = fd;
	submit(e);
}

/*
 * The syscalls, from the raw sys_enter and sys_exit tracepoints: one
 * program each for every call below, dispatched on the syscall number (a
 * compare for the syscalls nobody follows). One link each, not one per
 * syscall and direction: the per-syscall tracepoints cost a verification
 * per program at load (~45 ms each here) and an RCU grace period per link
 * at detach (~70 ms each: 27 of them made most of `record -d 1`'s 4.8 s),
 * and need tracefs. The numbers are the architecture's 64-bit table; a
 * 32-bit (compat) syscall, whose numbers differ, is not followed, as the
 * syscall tracepoints skip it.
 */
#if defined(__TARGET_ARCH_x86)
#include <asm/unistd_64.h>

#define TS_COMPAT_ 0x0002 /* arch/x86/include/asm/thread_info.h */

/* The syscall the task is in: pt_regs' orig_ax. (regs and t below are
 * BTF pointers: plain loads, not probe-read helper calls.) */
static __always_inline long syscall_nr(struct pt_regs *regs)
{
	return regs->orig_ax;
}

/* Is the current syscall a 32-bit one (int 0x80 or a compat task)? */
static __always_inline bool compat_syscall(struct task_struct *t, struct pt_regs *regs)
{
	if (!bpf_core_field_exists(t->thread_info.status))
		return false;
	return t->thread_info.status & TS_COMPAT_;
}
#elif defined(__TARGET_ARCH_arm64)
#include <asm-generic/unistd.h> /* arm64: the generic table (compile-checked only) */

/* arm64's struct pt_regs, the two fields read here (CO-RE finds pstate in
 * its anonymous member) */
struct pt_regs___ls_arm64 {
	__u64 pstate;
	__s32 syscallno;
} __attribute__((preserve_access_index));

#define PSR_MODE32_BIT_ 0x10

static __always_inline long syscall_nr(struct pt_regs *regs)
{
	return ((struct pt_regs___ls_arm64 *)regs)->syscallno;
}

static __always_inline bool compat_syscall(struct task_struct *t, struct pt_regs *regs)
{
	return ((struct pt_regs___ls_arm64 *)regs)->pstate & PSR_MODE32_BIT_;
}
#else
#error "syscall numbers: x86-64 and arm64 are known (add the architecture's table)"
#endif

#define NO_CALL (-1) /* LS_IO_READ is 0 */
#define IO_ACCEPT 0xffff /* io_inflight.call of an accept in flight (not a record's call) */

/* The io call a syscall number makes, or NO_CALL when it is not one of ours. */
static __always_inline int io_call_of(long nr, __u16 *dir)
{
	*dir = LS_IO_IN;
	switch (nr) {
	case __NR_read: return LS_IO_READ;
	case __NR_readv: return LS_IO_READV;
	case __NR_recvfrom: return LS_IO_RECVFROM;
	case __NR_recvmsg: return LS_IO_RECVMSG;
	case __NR_recvmmsg: return LS_IO_RECVMMSG;
	}
	*dir = LS_IO_OUT;
	switch (nr) {
	case __NR_write: return LS_IO_WRITE;
	case __NR_writev: return LS_IO_WRITEV;
	case __NR_sendto: return LS_IO_SENDTO;
	case __NR_sendmsg: return LS_IO_SENDMSG;
	case __NR_sendmmsg: return LS_IO_SENDMMSG;
	case __NR_sendfile: return LS_IO_SENDFILE;
	case __NR_splice: return LS_IO_SPLICE;
	}
	return NO_CALL;
}

/* What a followed call's registers say (both hook sets read them): the
 * socket's fd, its buffer (a plain one, an iovec array, a msghdr or an
 * mmsghdr vector; none for sendfile and splice), the iovec count of
 * readv/writev, and the flags of a receive (MSG_PEEK). splice's fd is
 * fd_out, the socket it writes into (sys_enter asks enter_splice which
 * side a socket is on). */
struct call_args {
	__u64 fd, buf, flags;
	__u32 nvec;
};

static __always_inline void call_args(int call, struct pt_regs *regs, struct call_args *a)
{
	a->fd = PT_REGS_PARM1_SYSCALL(regs);
	a->buf = PT_REGS_PARM2_SYSCALL(regs);
	a->flags = 0;
	a->nvec = 0;
	switch (call) {
	case LS_IO_READV:
	case LS_IO_WRITEV:
		a->nvec = PT_REGS_PARM3_SYSCALL(regs);
		break;
	case LS_IO_RECVFROM: /* recvfrom(fd, buf, len, flags, ...) */
	case LS_IO_RECVMMSG: /* recvmmsg(fd, msgvec, vlen, flags, timeout) */
		a->flags = PT_REGS_PARM4_SYSCALL(regs);
		break;
	case LS_IO_RECVMSG: /* recvmsg(fd, msg, flags) */
		a->flags = PT_REGS_PARM3_SYSCALL(regs);
		break;
	case LS_IO_SENDFILE: /* sendfile(out_fd, in_fd, ...): bytes, no payload */
		a->buf = 0;
		break;
	case LS_IO_SPLICE: /* splice(fd_in, off_in, fd_out, ...) */
		a->fd = PT_REGS_PARM3_SYSCALL(regs);
		a->buf = 0;
		break;
	}
	/* read, write, sendto, sendmsg, sendmmsg(fd, msgvec, vlen, flags): the
	 * first message's payload, every message's bytes */
}

/* splice(fd_in, off_in, fd_out, off_out, len, flags): into a socket is a
 * write, out of one a read (a proxy splicing through a pipe). */
static __always_inline int enter_splice(long nr, __u64 fd_in, __u64 fd_out)
{
	struct sock *sk = fd_to_sock(fd_out);

	if (sk && BPF_CORE_READ(sk, sk_protocol) == IPPROTO_TCP)
		return io_enter(nr, fd_out, 0, LS_IO_SPLICE, LS_IO_OUT, 0, 0);
	return io_enter(nr, fd_in, 0, LS_IO_SPLICE, LS_IO_IN, 0, 0);
}

/* close(fd) of a followed connection (the caller is tracked). */
static __always_inline void sock_close(__u32 fd)
{
	struct ls_ev_sock_close *e;
	struct conn_val *conn;
	struct sock *sk = NULL;

	bool is_unix;
	__u64 key;

	conn = fd_conn_any(fd, &sk, NO_ADOPT, &is_unix);
	if (!conn)
		return;
	e = reserve(sizeof(*e));
	if (e) {
		fill_hdr(&e->h, LS_EV_SOCK_CLOSE, sizeof(*e));
		e->conn_id = conn->conn_id;
		e->skaddr = (__u64)sk;
		e->fd = fd;
		submit(e);
	}
	/* a unix socket has no destroy tracepoint: its close ends it (TCP's
	 * entry goes at tcp_destroy_sock) */
	key = (__u64)sk;
	if (is_unix)
		bpf_map_delete_elem(&conns, &key);
}

/*
 * Backups for faultable syscall tracepoints. Where the syscall tracepoints
 * are faultable (7.x), their programs run preemptible (migration off); the
 * kernel does not start a program on a CPU where its previous run has not
 * ended (bpf_prog_info.recursion_misses), so a run of sys_enter preempted
 * on a CPU hides every other task's syscall there until it resumes. Each
 * program below marks its CPU busy while it runs; its backup (`_2`, a
 * second program, so a second recursion guard, attached after it by the
 * loader where the kernel's BTF says its tracepoints run BPF faultable, or
 * once the kernel reports misses) does the work only when it
 * finds the mark set: the first was skipped for this syscall. Runs made
 * that way are counted (sys_covered) so that only the runs neither made
 * are reported as skipped.
 */
/* The hooks with backups (the index k below; loader.c's sock_hooks lists
 * their programs in this order): the syscall ones, and the socket ones of
 * --sock-hooks socket, whose tracepoints run preemptible on 7.x as well. */
enum { HOOK_SYS_ENTER, HOOK_SYS_EXIT, HOOK_SEND_BEGIN, HOOK_SEND_END, HOOK_RECV_END, NHOOKS };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NHOOKS); /* hook k's first program running */
	__type(key, __u32);
	__type(value, __u32);
} sys_busy SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NHOOKS); /* runs hook k's backup made */
	__type(key, __u32);
	__type(value, __u64);
} sys_covered SEC(".maps");

static __always_inline int sys_enter_run(__u64 *ctx);
static __always_inline int sys_exit_run(__u64 *ctx);
static __always_inline int send_begin_run(__u64 *ctx);
static __always_inline int send_end_run(__u64 *ctx);
static __always_inline int recv_end_run(__u64 *ctx);

/* Hook k's work (k is a constant in each program below, so each holds only
 * its own). */
static __always_inline int sys_run(__u64 *ctx, __u32 k)
{
	switch (k) {
	case HOOK_SYS_ENTER:
		return sys_enter_run(ctx);
	case HOOK_SYS_EXIT:
		return sys_exit_run(ctx);
	case HOOK_SEND_BEGIN:
		return send_begin_run(ctx);
	case HOOK_SEND_END:
		return send_end_run(ctx);
	}
	return recv_end_run(ctx);
}

/* The program proper: its CPU marked busy while it runs. (The maps are
 * keyed by a copy of k: k itself stays a constant, so sys_run's switch is
 * decided at compile time and each program holds only its own hook.) */
static __always_inline int sys_first(__u64 *ctx, const __u32 k)
{
	__u32 key = k, *busy = bpf_map_lookup_elem(&sys_busy, &key);

	/* (never NULL: an array's key in range. Testing it twice, around the
	 * work, made clang copy the work for each answer: twice the code and
	 * the verifier's time) */
	if (!busy)
		return 0;
	*busy = 1;
	sys_run(ctx, k);
	*busy = 0;
	return 0;
}

/* The backup: the work only when the first was skipped (its mark is set). */
static __always_inline int sys_backup(__u64 *ctx, const __u32 k)
{
	__u32 key = k, *busy = bpf_map_lookup_elem(&sys_busy, &key);

	if (!busy || !*busy)
		return 0; /* the first made this run */
	count_in(&sys_covered, k);
	return sys_run(ctx, k);
}

SEC("raw_tp/sys_enter")
int sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	return sys_first((__u64 *)ctx->args, HOOK_SYS_ENTER);
}

SEC("raw_tp/sys_enter")
int sys_enter_2(struct bpf_raw_tracepoint_args *ctx)
{
	return sys_backup((__u64 *)ctx->args, HOOK_SYS_ENTER);
}

SEC("raw_tp/sys_exit")
int sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	return sys_first((__u64 *)ctx->args, HOOK_SYS_EXIT);
}

SEC("raw_tp/sys_exit")
int sys_exit_2(struct bpf_raw_tracepoint_args *ctx)
{
	return sys_backup((__u64 *)ctx->args, HOOK_SYS_EXIT);
}

/* accept(2) and accept4(2) by a tracked process: the exit says the fd. */
static __always_inline int accept_enter(long nr)
{
	struct io_inflight *io = io_claim(nr);

	if (io) {
		io->call = IO_ACCEPT;
		io->ts_enter = bpf_ktime_get_ns();
	}
	return 0;
}

/* sys_enter(regs, id). The registers are read through the task's own
 * pt_regs (the same ones at syscall entry; a BTF pointer: plain loads). */
static __always_inline int sys_enter_run(__u64 *ctx)
{
	long nr = ctx[1];
	__u16 dir;
	int call = io_call_of(nr, &dir);
	struct task_struct *task;
	struct call_args a;
	struct pt_regs *regs;

	if (call == NO_CALL && nr != __NR_close && nr != __NR_accept && nr != __NR_accept4)
		return 0;
	if (!tgid_tracked(bpf_get_current_pid_tgid() >> 32))
		return 0;
	task = bpf_get_current_task_btf();
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (compat_syscall(task, regs))
		return 0;
	if (nr == __NR_accept || nr == __NR_accept4)
		return accept_enter(nr);
	if (call == NO_CALL) { /* close */
		sock_close(PT_REGS_PARM1_SYSCALL(regs));
		return 0;
	}
	if (call == LS_IO_SPLICE) /* either side may be the socket */
		return enter_splice(nr, PT_REGS_PARM1_SYSCALL(regs), PT_REGS_PARM3_SYSCALL(regs));
	call_args(call, regs, &a);
	return io_enter(nr, a.fd, a.buf, call, dir, a.flags, a.nvec);
}

/* sys_exit(regs, ret): only a thread with a followed call in flight (its
 * storage says so) reads anything; every other syscall's exit costs that
 * one lookup. */
static __always_inline int sys_exit_run(__u64 *ctx)
{
	struct io_inflight *io = io_current();
	struct pt_regs *regs;
	long ret = ctx[1];

	if (!io)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (syscall_nr(regs) != io->nr) /* left by a call whose exit was missed */
		return io_done(io, 0);
	if (io->call == IO_ACCEPT) {
		if (ret >= 0)
			emit_accept(ret);
		return io_done(io, 0);
	}
	return io_exit(io, ret, NULL, false);
}

/*
 * record --sock-hooks socket: the same records from the kernel's socket
 * tracepoints (Linux >= 6.3) and no program on the raw syscall
 * tracepoints, whose being attached at all costs every syscall of every
 * process on the host (`make bench`'s syscall tax). sock_recv_length and
 * sock_send_length fire as a socket's recvmsg/sendmsg returns, inside the
 * syscall that made it: its registers say which call it is, its fd and its
 * buffers, as sys_enter reads them. A TCP write begins at
 * tcp_sendmsg_locked (where the kernel has it: send_begins), before its
 * segments leave and before it can sleep on a full send buffer, so the
 * folded transmission and the time blocked work as from sys_enter (from
 * after the socket's lock, not the syscall's entry); a read begins as it
 * ends. Not seen from here: accept (the first I/O adopts the connection;
 * TCP's tuple comes with its state changes), close (TCP's end is its
 * destroy; a unix socket's is its peer's EOF, or a new socket at its
 * address: see unix_peer_eof and sk_conn_any), splice out of a socket,
 * which message of a sendmmsg/recvmmsg a firing is (each message's bytes,
 * no payload), a unix write's time blocked, and a call the kernel makes for
 * io_uring (not a followed syscall: skipped, as sys_enter does).
 */
const volatile bool send_begins = false; /* tcp_sendmsg_locked attached */

/* The followed call of direction `want` the current task is in, its
 * number and registers; NO_CALL for any other (io_uring's workers, a
 * 32-bit syscall). */
static __always_inline int sock_tp_call(__u16 want, long *nr, struct pt_regs **regsp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u16 dir;
	int call;

	*nr = syscall_nr(regs);
	call = io_call_of(*nr, &dir);
	if (call == NO_CALL || dir != want || compat_syscall(task, regs))
		return NO_CALL;
	*regsp = regs;
	return call;
}

/* Call `call` (number nr, registers regs) of the current tracked task on
 * socket sk begins now: its slot, or NULL when sk is not followed; *connp
 * its conn (NULL: a unix socket not followed yet). moved: the bytes it
 * already moved (a call met as it ends), for a connection it adopts. */
static __always_inline struct io_inflight *sock_tp_begin(struct sock *sk, long nr, int call,
							 __u16 dir, struct pt_regs *regs,
							 struct conn_val **connp, __u32 moved)
{
	struct io_inflight *io;
	struct conn_val *conn;
	struct call_args a;
	bool is_unix;

	call_args(call, regs, &a);
	/* a socket first met is adopted (TCP) or a candidate (a unix socket's
	 * read, see io_exit) only when fd is this very socket, not one the
	 * kernel moves bytes on inside another call (an NFS mount's, under a
	 * write to a file): fd's walk, once per socket */
	conn = sk_conn_any(sk, LS_ADOPT_IO, a.fd, true, &is_unix, dir, moved);
	*connp = conn;
	if (!conn && !(is_unix && dir == LS_IO_IN && fd_to_sock(a.fd) == sk))
		return NULL;
	io = io_begin(nr, sk, conn, is_unix, a.fd, a.buf, call, dir, a.nvec, 0);
	if (io)
		io->one_msg = call == LS_IO_SENDMMSG || call == LS_IO_RECVMMSG;
	return io;
}

/* A followed call on sk that begins and ends here (a read; a write with no
 * begin), moving ret bytes: its record. */
static __always_inline int sock_tp_now(struct sock *sk, __u16 dir, long ret)
{
	struct io_inflight *io;
	struct conn_val *conn;
	struct pt_regs *regs;
	long nr;
	int call = sock_tp_call(dir, &nr, &regs);

	if (call == NO_CALL)
		return 0;
	io = sock_tp_begin(sk, nr, call, dir, regs, &conn, ret > 0 ? (__u32)ret : 0);
	return io ? io_exit(io, ret, conn, true) : 0;
}

/* tcp_sendmsg_locked(sk, msg, skb, size_goal) */
static __always_inline int send_begin_run(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	struct conn_val *conn;
	struct pt_regs *regs;
	long nr;
	int call;

	if (!tgid_tracked(bpf_get_current_pid_tgid() >> 32) || io_current())
		return 0; /* untracked, or begun: the same write's next segment */
	call = sock_tp_call(LS_IO_OUT, &nr, &regs);
	if (call != NO_CALL)
		sock_tp_begin(sk, nr, call, LS_IO_OUT, regs, &conn, 0);
	return 0;
}

/* sock_send_length(sk, ret, flags) */
static __always_inline int send_end_run(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	int ret = (int)ctx[1];
	struct conn_val *conn = NULL;
	struct io_inflight *io;
	bool at_once = false;

	if (!tgid_tracked(bpf_get_current_pid_tgid() >> 32))
		return 0;
	io = io_current();
	if (!io || io->sk != (__u64)sk) {
		struct pt_regs *regs;
		long nr;
		int call;

		if (io) /* begun on another socket (MPTCP's subflow) and not ended there */
			io_done(io, 0);
		/* a write with no begin: a unix socket's, or TCP's without the hook */
		if (send_begins && BPF_CORE_READ(sk, sk_protocol) == IPPROTO_TCP)
			return 0;
		call = sock_tp_call(LS_IO_OUT, &nr, &regs);
		if (call == NO_CALL)
			return 0;
		io = sock_tp_begin(sk, nr, call, LS_IO_OUT, regs, &conn, ret > 0 ? (__u32)ret : 0);
		if (!io)
			return 0;
		at_once = true;
	}
	/* (one io_exit for both ends: each copy inlined is ~200 k instructions
	 * for the verifier) */
	return io_exit(io, ret, conn, at_once);
}

/* A followed unix socket's end, where its close is not seen: its peer (any
 * process) reads EOF, so the followed side closed, or shut its writes. Its
 * conn is let go of as sock_close does. (Its socket is orphaned by then,
 * inode 0: the address is still its own while the peer holds it.) */
static __always_inline void unix_peer_eof(struct sock *sk)
{
	struct ls_ev_sock_close *e;
	struct conn_val *v;
	struct sock *peer;
	__u64 key;
	__u32 ino;

	if (!unix_stream(sk))
		return;
	peer = BPF_CORE_READ((struct unix_sock *)sk, peer);
	key = (__u64)peer;
	if (!peer || !(v = bpf_map_lookup_elem(&conns, &key)))
		return;
	ino = sock_ino(peer);
	if (ino && ino != v->ino)
		return;
	e = reserve(sizeof(*e));
	if (e) {
		fill_hdr(&e->h, LS_EV_SOCK_CLOSE, sizeof(*e));
		e->conn_id = v->conn_id;
		e->skaddr = key;
		e->fd = ~0u;
		submit(e);
	}
	bpf_map_delete_elem(&conns, &key);
}

/* sock_recv_length(sk, ret, flags) */
static __always_inline int recv_end_run(__u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	int ret = (int)ctx[1], flags = (int)ctx[2];

	if (flags & MSG_PEEK)
		return 0;
	if (!ret)
		unix_peer_eof(sk);
	if (!tgid_tracked(bpf_get_current_pid_tgid() >> 32))
		return 0;
	return sock_tp_now(sk, LS_IO_IN, ret);
}

/* Hook k's program on tracepoint tp, and its backup (see sys_backup). */
#define SOCK_HOOK(tp, name, k)                                                                     \
	SEC("tp_btf/" tp)                                                                          \
	int name(__u64 *ctx)                                                                       \
	{                                                                                          \
		return sys_first(ctx, k);                                                          \
	}                                                                                          \
	SEC("tp_btf/" tp)                                                                          \
	int name##_2(__u64 *ctx)                                                                   \
	{                                                                                          \
		return sys_backup(ctx, k);                                                         \
	}
SOCK_HOOK("tcp_sendmsg_locked", tcp_send_begin, HOOK_SEND_BEGIN)
SOCK_HOOK("sock_send_length", sock_send_end, HOOK_SEND_END)
SOCK_HOOK("sock_recv_length", sock_recv_end, HOOK_RECV_END)

/*
 * TLS plaintext: uprobes on the libssl a tracked process maps (attached per
 * file by the loader). Entry keeps the buffer; the return emits the bytes
 * the call moved as a sock_io record with call LS_IO_SSL_READ/WRITE, the
 * SSL * in skaddr and no conn: the recorder ties it to its connection (by
 * the socket syscall inside the call, or the ciphertext the thread read
 * before it). SSL_read/SSL_write return the length; the _ex forms return 1
 * and store it through their fourth argument.
 */
struct tls_inflight {
	__u64 ssl, buf, len_ptr, ts_enter;
	__u16 dir, pad[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct tls_inflight);
} tls_inflight SEC(".maps");

static __always_inline int tls_enter(__u64 ssl, __u64 buf, __u64 len_ptr, __u16 dir)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct tls_inflight t = {.ssl = ssl, .buf = buf, .len_ptr = len_ptr, .dir = dir};

	if (!tgid_tracked(id >> 32))
		return 0;
	t.ts_enter = bpf_ktime_get_ns();
	bpf_map_update_elem(&tls_inflight, &tid, &t, BPF_ANY);
	return 0;
}

/* SSL_read/SSL_write(ssl, buf, num); the _ex forms add a size_t *. */
#define SSL_ENTER(name, len_ptr, dir)                                                      \
	SEC("uprobe")                                                                      \
	int BPF_KPROBE(name)                                                               \
	{                                                                                  \
		return tls_enter(PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), len_ptr, dir);    \
	}
SSL_ENTER(ssl_read_enter, 0, LS_IO_IN)
SSL_ENTER(ssl_read_ex_enter, PT_REGS_PARM4(ctx), LS_IO_IN)
SSL_ENTER(ssl_write_enter, 0, LS_IO_OUT)
SSL_ENTER(ssl_write_ex_enter, PT_REGS_PARM4(ctx), LS_IO_OUT)

/* SSL_do_handshake(ssl): which SSL * the thread works on, before any
 * plaintext (the recorder ties it to the connection just read). */
SEC("uprobe")
int BPF_KPROBE(ssl_handshake_enter, void *ssl)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct ls_ev_sock_io *e;

	if (!tgid_tracked(id >> 32))
		return 0;
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	__builtin_memset(e, 0, sizeof(*e));
	fill_hdr(&e->h, LS_EV_SOCK_IO, sizeof(*e));
	e->skaddr = (__u64)ssl;
	e->ts_enter = e->h.ts;
	e->fd = ~0u;
	e->dir = LS_IO_IN;
	e->call = LS_IO_SSL_HANDSHAKE;
	submit(e);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(ssl_exit, long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), slot = 0, n;
	struct tls_inflight *t = bpf_map_lookup_elem(&tls_inflight, &tid);
	struct io_inflight io = {};
	struct io_record *rec;
	__u64 len = 0;
	__u16 nseg;

	if (!t)
		return 0;
	if (t->len_ptr) {
		if ((int)ret == 1)
			bpf_probe_read_user(&len, sizeof(len), (void *)t->len_ptr);
	} else if ((int)ret > 0) {
		len = (__u32)(int)ret;
	}
	if (!len || len > 0x7fffffff)
		goto out;
	rec = scratch_claim(&slot);
	if (!rec)
		goto out;
	io.buf = t->buf;
	io.call = LS_IO_READ; /* one plain buffer */
	fill_hdr(&rec->e.h, LS_EV_SOCK_IO, 0);
	rec->e.conn_id = 0;
	rec->e.skaddr = t->ssl;
	rec->e.ts_enter = t->ts_enter;
	rec->e.blocked_ns = 0;
	rec->e.fd = ~0u;
	rec->e.bytes = len;
	rec->e.dir = t->dir;
	rec->e.call = t->dir == LS_IO_IN ? LS_IO_SSL_READ : LS_IO_SSL_WRITE;
	rec->e.seq = 0;
	rec->e.xmit = 0;
	rec->e.arrive_dt = rec->e.arrive_ack = rec->e.arrive_srtt_us = rec->e.arrive_len_flags = 0;
	n = copy_payload(rec, &io, len, &nseg);
	io_output(rec, n, nseg);
	scratch_release(slot);
out:
	bpf_map_delete_elem(&tls_inflight, &tid);
	return 0;
}
