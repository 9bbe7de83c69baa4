// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * TCP domain: connection state changes, retransmits, per-segment probes,
 * resets and socket destruction, for connections of tracked processes.
 *
 * A connection is tracked when it is seen on a tracked local port (a port
 * named with --port, or one a tracked process listens on: added here when the
 * socket enters LISTEN), when a tracked process connects, or always with
 * track_all. Tracked sockets get a conn_id that is never reused in a capture.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define IPPROTO_TCP 6

/* port's entry of tracked_ports (an array over every port: never NULL). */
static __always_inline __u8 *port_entry(__u16 port)
{
	__u32 k = port;

	return bpf_map_lookup_elem(&tracked_ports, &k);
}

static __always_inline bool port_tracked(__u16 port)
{
	__u8 *v = port_entry(port);

	return v && *v;
}

static __always_inline __u32 srtt_us(const struct sock *sk)
{
	const struct tcp_sock *tp = (const void *)sk;

	return BPF_CORE_READ(tp, srtt_us) >> 3;
}

/* The conn of a tracked socket, creating it when the socket qualifies
 * (`mine`: the current task is a tracked process acting on it). NULL:
 * untracked. `adopt`: a socket first met here, outside a state change, was
 * established before the capture saw it: say so with its tuple and anchors. */
static __always_inline struct conn_val *conn_get(const struct sock *sk, bool mine, bool adopt)
{
	__u64 key = (__u64)sk;
	struct conn_val *v = bpf_map_lookup_elem(&conns, &key);

	if (v)
		return v;
	if (!track_all && !mine && !port_tracked(BPF_CORE_READ(sk, __sk_common.skc_num)))
		return NULL;
	v = conn_create(sk);
	if (v && adopt)
		emit_adopt(sk, v, LS_ADOPT_TCP, ~0u, LS_IO_IN, 0);
	return v;
}

static __always_inline void fill_sk(struct ls_hdr *h, __u16 type, __u16 size,
				    __u64 *conn_id_out, __u64 *skaddr, __u64 conn_id,
				    const struct sock *sk)
{
	fill_hdr(h, type, size);
	*conn_id_out = conn_id;
	*skaddr = (__u64)sk;
}

static __always_inline int handle_set_state(const struct sock *sk, int oldstate, int newstate)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ls_ev_tcp_state *e;
	struct conn_val *v;
	bool mine;

	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	/* listen(), connect() and close() run in the owner's context. */
	mine = !track_all && (newstate == TCP_LISTEN || newstate == TCP_SYN_SENT) &&
	       tgid_listed(tgid);
	if (newstate == TCP_LISTEN && mine) {
		__u8 *cur = port_entry(BPF_CORE_READ(sk, __sk_common.skc_num));

		if (cur && !*cur)
			*cur = PORT_AUTO;
	} else if (newstate == TCP_LISTEN && !track_all && tgid != self_tgid) {
		/* A process that starts listening on a followed port (--port, or a
		 * -p process's listener at start) is tracked from here on: a
		 * server started late or restarted mid-recording. */
		__u8 *cur = port_entry(BPF_CORE_READ(sk, __sk_common.skc_num));

		if (cur && *cur == PORT_USER) {
			tgid_track(tgid);
			mine = true;
		}
	}
	v = conn_get(sk, mine, false);
	if (!v)
		return 0;
	held_take(v, false);
	if (oldstate == TCP_LISTEN && newstate == TCP_CLOSE) {
		__u8 *cur = port_entry(BPF_CORE_READ(sk, __sk_common.skc_num));

		if (cur && *cur == PORT_AUTO)
			*cur = 0;
	}
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_sk(&e->h, LS_EV_TCP_STATE, sizeof(*e), &e->conn_id, &e->skaddr, v->conn_id, sk);
	tuple_of(&e->t, sk, v);
	e->oldstate = oldstate;
	e->newstate = newstate;
	e->srtt_us = srtt_us(sk);
	e->snd_una = BPF_CORE_READ((const struct tcp_sock *)sk, snd_una);
	e->snd_nxt = BPF_CORE_READ((const struct tcp_sock *)sk, snd_nxt);
	e->rcv_nxt = BPF_CORE_READ((const struct tcp_sock *)sk, rcv_nxt);
	submit(e);
	return 0;
}

/* The kernel's tcp_retransmit_skb tracepoint passes the attempt's result
 * (newer kernels', 6.18's among them, fire for attempts that sent nothing
 * too: the original still queued below TCP, no route, a window shut, no
 * memory, a device or filter that dropped it); set by the loader from the
 * tracepoint's BTF. */
const volatile bool retrans_err_arg = false;

/* Retransmission attempts of known connections that failed (the kernel's
 * result, above), per CPU: not retransmissions, but never silent. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} retrans_failed SEC(".maps");

static __always_inline int handle_retransmit(const struct sock *sk, const struct sk_buff *skb,
					     int err)
{
	struct ls_ev_tcp_retrans *e;
	struct tcp_skb_cb *cb;
	struct conn_val *v = conn_get(sk, false, true);

	if (!v)
		return 0;
	if (err) {
		count_in(&retrans_failed, 0);
		return 0;
	}
	held_take(v, false);
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_sk(&e->h, LS_EV_TCP_RETRANS, sizeof(*e), &e->conn_id, &e->skaddr, v->conn_id, sk);
	tuple_of(&e->t, sk, v);
	cb = (struct tcp_skb_cb *)&skb->cb[0];
	e->state = BPF_CORE_READ(sk, __sk_common.skc_state);
	e->kind = LS_RETRANS_DATA;
	e->segs = BPF_CORE_READ(cb, tcp_gso_segs);
	if (e->segs == 0)
		e->segs = 1;
	e->seq = BPF_CORE_READ(cb, seq);
	e->srtt_us = srtt_us(sk);
	e->err = 0;
	submit(e);
	return 0;
}

/* A SYN-ACK retransmitted for a request socket of a tracked listener. */
static __always_inline int handle_retransmit_synack(const struct sock *sk,
						    const struct request_sock *req)
{
	struct ls_ev_tcp_retrans *e;
	__u16 port = BPF_CORE_READ(sk, __sk_common.skc_num);
	__u64 first_us, now_us;

	if (!track_all && !port_tracked(port))
		return 0;
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_sk(&e->h, LS_EV_TCP_RETRANS, sizeof(*e), &e->conn_id, &e->skaddr, 0, sk);
	read_tuple(&e->t, &req->__req_common);
	e->t.sport = port; /* ireq_num */
	e->state = TCP_SYN_RECV;
	e->kind = LS_RETRANS_SYNACK;
	e->segs = 1;
	/* when the first SYN-ACK left (tcp_clock_us, the monotonic clock):
	 * the handshake began then, a retransmission timeout or more ago */
	first_us = BPF_CORE_READ((const struct tcp_request_sock *)req, snt_synack);
	now_us = e->h.ts / 1000;
	e->seq = first_us && first_us <= now_us && now_us - first_us < 0xffffffffULL
			 ? (__u32)(now_us - first_us)
			 : 0;
	e->srtt_us = 0;
	e->err = 0;
	submit(e);
	return 0;
}

/* Bytes 4..13 of a TCP header: one probe read instead of one per field. */
struct tcp_seq_bits {
	__be32 seq;
	__be32 ack;
	__u8 doff_byte; /* data offset in the high nibble, in 32-bit words */
	__u8 flags;
} __attribute__((packed));

/* The TCP view of sk: through bpf_skc_to_tcp_sock (a BTF pointer, its fields
 * plain loads; NULL when sk is not a full TCP socket) for tp_btf programs,
 * the same address for CO-RE reads in raw_tp ones. */
static __always_inline const struct tcp_sock *tcp_view(const struct sock *sk, bool btf)
{
	return btf ? (const struct tcp_sock *)bpf_skc_to_tcp_sock((void *)sk) : (const void *)sk;
}

/* Are arrivals held for the read that takes their bytes (emit by exception;
 * the loader clears it where the socket I/O records are not written)? */
const volatile bool hold_arrivals = true;

/* btf: sk and skb are BTF pointers (tp_btf); see KREAD. A data segment
 * (ACK set; no SYN, FIN or RST) is held in its conn for the read that takes
 * its bytes (common.bpf.h: this is the held arrival's one writer); any
 * other goes out as its own record, after an arrival still held. */
static __always_inline int handle_probe(struct sock *sk, const struct sk_buff *skb, bool btf)
{
	const struct tcp_sock *tp;
	struct ls_ev_tcp_probe x, *e;
	struct tcp_seq_bits th = {};
	unsigned char *head;
	__u16 thoff;
	__u64 ts;
	struct conn_val *v = conn_get(sk, false, true);

	if (!v || !(tp = tcp_view(sk, btf)))
		return 0;
	fill_sk(&x.h, LS_EV_TCP_PROBE, sizeof(x), &x.conn_id, &x.skaddr, v->conn_id, sk);
	x.srtt_us = KREAD(btf, tp, srtt_us) >> 3;
	x.snd_cwnd = KREAD(btf, tp, snd_cwnd);
	x.snd_una = KREAD(btf, tp, snd_una);
	x.snd_nxt = KREAD(btf, tp, snd_nxt);
	x.rcv_nxt = KREAD(btf, tp, rcv_nxt);
	x.snd_wnd = KREAD(btf, tp, snd_wnd);
	head = KREAD(btf, skb, head);
	thoff = KREAD(btf, skb, transport_header);
	bpf_probe_read_kernel(&th, sizeof(th), head + thoff + 4);
	x.seq = bpf_ntohl(th.seq);
	x.ack_seq = bpf_ntohl(th.ack);
	x.flags = th.flags;
	x.data_len = KREAD(btf, skb, len) - ((th.doff_byte >> 4) * 4);
	if (v->held.h.ts && (ts = __sync_lock_test_and_set(&v->held.h.ts, 0)))
		held_send(v, ts, false, true); /* the earlier arrival, never read */
	if (hold_arrivals && x.data_len && (x.flags & 0x17) == 0x10) {
		ts = x.h.ts;
		x.h.ts = 0;
		v->held = x;
		__sync_lock_test_and_set(&v->held.h.ts, ts); /* last: held from here */
		return 0;
	}
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	*e = x;
	submit(e);
	return 0;
}

static __always_inline int handle_reset(const struct sock *sk, __u32 dir)
{
	struct ls_ev_tcp_reset *e;
	struct conn_val *v;

	if (!sk)
		return 0;
	v = conn_get(sk, false, true);
	if (!v)
		return 0;
	held_take(v, false);
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_sk(&e->h, LS_EV_TCP_RESET, sizeof(*e), &e->conn_id, &e->skaddr, v->conn_id, sk);
	tuple_of(&e->t, sk, v);
	e->dir = dir;
	e->state = BPF_CORE_READ(sk, __sk_common.skc_state);
	submit(e);
	return 0;
}

static __always_inline int handle_destroy(struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct conn_val *v = bpf_map_lookup_elem(&conns, &key);
	struct ls_ev_tcp_destroy *e;
	struct conn_val cv;

	if (!v)
		return 0;
	held_take(v, true);
	cv = *v;
	bpf_map_delete_elem(&conns, &key);
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	fill_sk(&e->h, LS_EV_TCP_DESTROY, sizeof(*e), &e->conn_id, &e->skaddr, cv.conn_id, sk);
	tuple_of(&e->t, sk, &cv);
	submit(e);
	return 0;
}

/* Bytes of a tracked TCP connection leaving for a device. At this layer
 * skb->data is the link-layer header; the TCP header is at
 * head + transport_header. Only connections already known (never creates
 * one: a segment out of an untracked socket costs a map lookup). */
static __always_inline int handle_xmit(const struct sk_buff *skb, bool btf)
{
	const struct sock *sk = KREAD(btf, skb, sk);
	const struct tcp_sock *tp;
	struct ls_ev_tcp_xmit *e, x;
	struct tcp_seq_bits th = {};
	struct conn_val *v;
	unsigned char *head, *data;
	__u16 thoff;
	__u32 len, hdrs;
	__u64 key = (__u64)sk;

	if (!sk || KREAD(btf, sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	v = bpf_map_lookup_elem(&conns, &key);
	if (!v)
		return 0;
	/* skb->sk is an RCU pointer, which bpf_skc_to_tcp_sock refuses (6.x):
	 * the socket's TCP fields are CO-RE reads here */
	tp = (const void *)sk;
	head = KREAD(btf, skb, head);
	data = KREAD(btf, skb, data);
	thoff = KREAD(btf, skb, transport_header);
	bpf_probe_read_kernel(&th, sizeof(th), head + thoff + 4);
	len = KREAD(btf, skb, len);
	hdrs = (__u32)(head + thoff - data) + (th.doff_byte >> 4) * 4;
	len = len > hdrs ? len - hdrs : 0;
	if (!len && !(th.flags & 0x01)) /* bare ACKs: nothing delivered */
		return 0;
	fill_sk(&x.h, LS_EV_TCP_XMIT, sizeof(x), &x.conn_id, &x.skaddr, v->conn_id, sk);
	x.seq = bpf_ntohl(th.seq);
	x.len = len;
	x.flags = th.flags;
	x.snd_una = BPF_CORE_READ(tp, snd_una);
	x.snd_wnd = BPF_CORE_READ(tp, snd_wnd);
	x.snd_cwnd = BPF_CORE_READ(tp, snd_cwnd);
	x.packets_out = BPF_CORE_READ(tp, packets_out);
	x.mss_cache = BPF_CORE_READ(tp, mss_cache);
	x.nodelay = BPF_CORE_READ_BITFIELD_PROBED(tp, nonagle) & 1; /* TCP_NAGLE_OFF */
	x.pad = 0;
	/* Emit by exception: the segment that begins a write's bytes, sent
	 * inside that write (the writer is current), waits in the write's
	 * state; the write's record carries it when it took all the bytes
	 * (sock.bpf.c), else it goes out then as its own record. A
	 * retransmission, or bytes of an earlier write, never match. */
	if (len && !(th.flags & 0x07)) { /* no FIN, SYN, RST */
		struct io_inflight *io = io_current();

		if (io && io->dir == LS_IO_OUT && io->conn_id == v->conn_id && !io->unix_sk &&
		    !io->xm.h.ts && io->call != LS_IO_SENDMMSG && x.seq == io->seq0) {
			io->xm = x;
			return 0;
		}
	}
	held_take(v, false);
	e = reserve(sizeof(*e));
	if (!e)
		return 0;
	*e = x;
	submit(e);
	return 0;
}

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(net_dev_start_xmit_btf, const struct sk_buff *skb, const struct net_device *dev)
{
	return handle_xmit(skb, true);
}

SEC("raw_tp/net_dev_start_xmit")
int BPF_PROG(net_dev_start_xmit_raw, const struct sk_buff *skb, const struct net_device *dev)
{
	return handle_xmit(skb, false);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(inet_sock_set_state_btf, const struct sock *sk, int oldstate, int newstate)
{
	return handle_set_state(sk, oldstate, newstate);
}

SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(inet_sock_set_state_raw, const struct sock *sk, int oldstate, int newstate)
{
	return handle_set_state(sk, oldstate, newstate);
}

/* (ctx[2], the result, is read only where the loader found it: on older
 * kernels the branch is dead code, which the verifier does not check) */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_skb_btf, const struct sock *sk, const struct sk_buff *skb)
{
	return handle_retransmit(sk, skb, retrans_err_arg ? (int)ctx[2] : 0);
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_skb_raw, const struct sock *sk, const struct sk_buff *skb)
{
	return handle_retransmit(sk, skb, retrans_err_arg ? (int)ctx[2] : 0);
}

SEC("tp_btf/tcp_retransmit_synack")
int BPF_PROG(tcp_retransmit_synack_btf, const struct sock *sk, const struct request_sock *req)
{
	return handle_retransmit_synack(sk, req);
}

SEC("raw_tp/tcp_retransmit_synack")
int BPF_PROG(tcp_retransmit_synack_raw, const struct sock *sk, const struct request_sock *req)
{
	return handle_retransmit_synack(sk, req);
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(tcp_probe_btf, struct sock *sk, const struct sk_buff *skb)
{
	return handle_probe(sk, skb, true);
}

SEC("raw_tp/tcp_probe")
int BPF_PROG(tcp_probe_raw, struct sock *sk, const struct sk_buff *skb)
{
	return handle_probe(sk, skb, false);
}

SEC("tp_btf/tcp_send_reset")
int BPF_PROG(tcp_send_reset_btf, const struct sock *sk, const struct sk_buff *skb)
{
	return handle_reset(sk, LS_RESET_SENT);
}

SEC("raw_tp/tcp_send_reset")
int BPF_PROG(tcp_send_reset_raw, const struct sock *sk, const struct sk_buff *skb)
{
	return handle_reset(sk, LS_RESET_SENT);
}

SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(tcp_receive_reset_btf, struct sock *sk)
{
	return handle_reset(sk, LS_RESET_RECEIVED);
}

SEC("raw_tp/tcp_receive_reset")
int BPF_PROG(tcp_receive_reset_raw, struct sock *sk)
{
	return handle_reset(sk, LS_RESET_RECEIVED);
}

SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(tcp_destroy_sock_btf, struct sock *sk)
{
	return handle_destroy(sk);
}

SEC("raw_tp/tcp_destroy_sock")
int BPF_PROG(tcp_destroy_sock_raw, struct sock *sk)
{
	return handle_destroy(sk);
}
