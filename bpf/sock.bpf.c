// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Socket I/O domain: read/write-family syscalls, accept and close of tracked
 * processes on tracked TCP connections, from the syscall tracepoints.
 *
 * At entry the fd is resolved to its struct sock with a CO-RE walk of
 * task->files (no kprobes); a fd that is not a TCP socket costs the
 * tracked-tgid lookup and that walk, and emits nothing. A connected TCP
 * socket not known yet (the server was serving before the capture) is
 * adopted: it gets a conn_id and a conn_adopt record with its anchors. At exit the byte
 * count and a prefix of the payload (capture_bytes) go to the ring buffer.
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

const volatile __u32 capture_bytes = 1024; /* <= LS_IO_MAX_CAPTURE */

/* Scratch for one variable-size record: too big for the BPF stack. */
struct io_record {
	struct ls_ev_sock_io e;
	__u8 data[2 * LS_IO_MAX_CAPTURE]; /* doubled so a masked length stays in bounds */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct io_record);
} io_scratch SEC(".maps");

static __always_inline struct sock *fd_to_sock(__u32 fd)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds, *file = NULL;
	struct socket *sock;
	__u16 mode;

	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
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

/* The conn of the TCP socket behind fd, or NULL. The caller is a tracked
 * process: a connected socket it uses that is not known yet was established
 * before the capture (or on a port not tracked) and is adopted here, unless
 * `via` is NO_ADOPT. */
static __always_inline struct conn_val *fd_conn(__u32 fd, struct sock **skp, __u32 via)
{
	struct sock *sk = fd_to_sock(fd);
	__u64 key = (__u64)sk;
	struct conn_val *v;
	int state;

	if (!sk || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return NULL;
	*skp = sk;
	v = bpf_map_lookup_elem(&conns, &key);
	if (v || via == NO_ADOPT)
		return v;
	state = BPF_CORE_READ(sk, __sk_common.skc_state);
	if (state == TCP_LISTEN_ || state == TCP_CLOSE_ || state == TCP_SYN_SENT_)
		return NULL;
	v = conn_create(sk);
	if (v)
		emit_adopt(sk, v, via, fd);
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

static __always_inline int io_enter(__u64 fd, __u64 buf, __u16 call, __u16 dir, __u64 flags)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct io_inflight io = {};
	struct conn_val *conn;
	struct sock *sk = NULL;
	__u32 tid = (__u32)id;

	if (!tgid_tracked(id >> 32) || (flags & MSG_PEEK))
		return 0;
	conn = fd_conn(fd, &sk, LS_ADOPT_IO);
	if (!conn)
		return 0;
	io.sk = (__u64)sk;
	io.conn_id = conn->conn_id;
	io.buf = buf;
	io.ts_enter = bpf_ktime_get_ns();
	io.fd = fd;
	io.call = call;
	io.dir = dir;
	bpf_map_update_elem(&io_inflight, &tid, &io, BPF_ANY);
	return 0;
}

/* Where the payload starts: the buffer, or the first iovec's base. */
static __always_inline __u64 payload_ptr(const struct io_inflight *io, __u64 *len)
{
	struct iovec iov = {};
	struct user_msghdr msg = {};

	switch (io->call) {
	case LS_IO_READ:
	case LS_IO_RECVFROM:
	case LS_IO_WRITE:
	case LS_IO_SENDTO:
		return io->buf;
	case LS_IO_RECVMSG:
	case LS_IO_SENDMSG:
		if (bpf_probe_read_user(&msg, sizeof(msg), (void *)io->buf) || !msg.msg_iovlen)
			return 0;
		bpf_probe_read_user(&iov, sizeof(iov), msg.msg_iov);
		break;
	default: /* readv, writev */
		bpf_probe_read_user(&iov, sizeof(iov), (void *)io->buf);
	}
	if (iov.iov_len < *len)
		*len = iov.iov_len;
	return (__u64)iov.iov_base;
}

static __always_inline int io_exit(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, zero = 0, n;
	struct io_inflight *io = bpf_map_lookup_elem(&io_inflight, &tid);
	struct io_record *rec;
	__u64 len, ptr, size;

	if (!io)
		return 0;
	/* ret == 0 on a read is EOF: the peer closed; worth a record. */
	if (ret < 0 || (ret == 0 && io->dir == LS_IO_OUT))
		goto out;
	rec = bpf_map_lookup_elem(&io_scratch, &zero);
	if (!rec)
		goto out;
	fill_hdr(&rec->e.h, LS_EV_SOCK_IO, 0);
	rec->e.conn_id = io->conn_id;
	rec->e.skaddr = io->sk;
	rec->e.ts_enter = io->ts_enter;
	rec->e.blocked_ns = io->blocked_ns;
	rec->e.fd = io->fd;
	rec->e.bytes = ret;
	rec->e.dir = io->dir;
	rec->e.call = io->call;
	rec->e.pad = 0;
	rec->e.seq = io_seq(io->sk, io->dir, ret);
	rec->e.pad2 = 0;
	len = ret < capture_bytes ? ret : capture_bytes;
	ptr = payload_ptr(io, &len);
	n = len & (LS_IO_MAX_CAPTURE * 2 - 1);
	if (!ptr || n > LS_IO_MAX_CAPTURE)
		n = 0;
	/* the record is padded to 8 bytes after the payload: zeros there, not
	 * the last payload this CPU's scratch held */
	*(__u64 *)&rec->data[n & (LS_IO_MAX_CAPTURE * 2 - 8)] = 0;
	if (n && bpf_probe_read_user(rec->data, n, (void *)ptr))
		n = 0;
	rec->e.cap_len = n;
	size = (sizeof(rec->e) + n + 7) & ~7ull;
	rec->e.h.size = size;
	if (size > sizeof(*rec))
		goto out;
	if (bpf_ringbuf_output(&events, rec, size, wakeup_flags()))
		count_drop();
out:
	bpf_map_delete_elem(&io_inflight, &tid);
	return 0;
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

#define ENTER(name, call, dir, flagsarg)                                                    \
	SEC("tracepoint/syscalls/sys_enter_" #name)                                         \
	int enter_##name(struct trace_event_raw_sys_enter *ctx)                             \
	{                                                                                   \
		return io_enter(ctx->args[0], ctx->args[1], call, dir, flagsarg);           \
	}                                                                                   \
	SEC("tracepoint/syscalls/sys_exit_" #name)                                          \
	int exit_##name(struct trace_event_raw_sys_exit *ctx)                               \
	{                                                                                   \
		return io_exit(ctx->ret);                                                   \
	}

ENTER(read, LS_IO_READ, LS_IO_IN, 0)
ENTER(readv, LS_IO_READV, LS_IO_IN, 0)
ENTER(recvfrom, LS_IO_RECVFROM, LS_IO_IN, ctx->args[3])
ENTER(recvmsg, LS_IO_RECVMSG, LS_IO_IN, ctx->args[2])
ENTER(write, LS_IO_WRITE, LS_IO_OUT, 0)
ENTER(writev, LS_IO_WRITEV, LS_IO_OUT, 0)
ENTER(sendto, LS_IO_SENDTO, LS_IO_OUT, 0)
ENTER(sendmsg, LS_IO_SENDMSG, LS_IO_OUT, 0)

SEC("tracepoint/syscalls/sys_exit_accept")
int exit_accept(struct trace_event_raw_sys_exit *ctx)
{
	if (ctx->ret >= 0 && tgid_tracked(bpf_get_current_pid_tgid() >> 32))
		emit_accept(ctx->ret);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int exit_accept4(struct trace_event_raw_sys_exit *ctx)
{
	if (ctx->ret >= 0 && tgid_tracked(bpf_get_current_pid_tgid() >> 32))
		emit_accept(ctx->ret);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_close")
int enter_close(struct trace_event_raw_sys_enter *ctx)
{
	struct ls_ev_sock_close *e;
	struct conn_val *conn;
	struct sock *sk = NULL;
	__u32 fd = ctx->args[0];

	if (!tgid_tracked(bpf_get_current_pid_tgid() >> 32))
		return 0;
	conn = fd_conn(fd, &sk, NO_ADOPT);
	if (!conn)
		return 0;
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_hdr(&e->h, LS_EV_SOCK_CLOSE, sizeof(*e));
	e->conn_id = conn->conn_id;
	e->skaddr = (__u64)sk;
	e->fd = fd;
	submit(e);
	return 0;
}
