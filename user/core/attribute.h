/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The latency split of DESIGN.md §6: components and sub-parts of a request's
 * [T_start, T_dlv] and of its [T_start, T_first_dlv] (T_ack and T_first
 * where the capture has no transmission records). A value the capture's
 * sources cannot give is LS_NULL (printed as null), never 0.
 */
#ifndef LATSPLIT_USER_ATTRIBUTE_H
#define LATSPLIT_USER_ATTRIBUTE_H

#include <stdbool.h>
#include <stdint.h>
#include "requests.h"
#include "timeline.h"

#define LS_NULL UINT64_MAX

enum ls_comp { LS_C_NETWORK, LS_C_QUEUEING, LS_C_TRANSFER, LS_C_COMPUTE, LS_C_HOST, LS_C_OTHER, LS_C_N };

enum ls_sub {
	LS_S_NET_CONNECT, LS_S_NET_UPLOAD, LS_S_NET_SEND_BLOCKED, LS_S_NET_WIRE, LS_S_NET_DRAIN,
	LS_S_Q_SOCKET, LS_S_Q_ENGINE, LS_S_Q_CPU,
	LS_S_COMPUTE_KERNEL, LS_S_COMPUTE_COMM,
	LS_S_TRANSFER_H2D, LS_S_TRANSFER_D2H, LS_S_TRANSFER_OTHER,
	/* time inside a traced proxy (DESIGN §11, hops): null, and absent from
	 * every output, on a request that crossed none */
	LS_S_NET_PROXY,
	/* waiting in a single-slot application's own queue, seen from its
	 * stream (DESIGN §11, engines without patches): null, and absent from
	 * every output, where no request was found waiting so */
	LS_S_Q_APP,
	LS_S_N,
};

struct ls_split {
	uint64_t total, ttft;
	uint64_t comp[LS_C_N], ttft_comp[LS_C_N];
	uint64_t sub[LS_S_N], ttft_sub[LS_S_N];
	uint64_t t_sched;           /* used: from engine events, inferred, or 0 */
	uint64_t t_queued;          /* the engine queued (or arrived) event used, or 0 */
	uint64_t frontend;          /* [T_read, T_queued], LS_NULL without T_queued */
	const char *engine_source;  /* "events" | "inferred" | "none" */
	const char *gpu_source;     /* "cupti" | "uprobe" | "simulated" | "none" */
	const char *max_gap_cause;  /* a component or sub-part name, or NULL */
	/* parts of the total's split with no source (bit k: sub-part k;
	 * LS_UNOBSERVED_HOST: host CPU): null, their time in other parts */
	uint32_t unobserved;
};
#define LS_UNOBSERVED_HOST (1u << 31)

/* tl and join may be NULL (network-only split). */
void ls_attribute(const struct ls_request *r, const struct ls_timeline *tl,
		  const struct ls_engine_join *join, struct ls_split *s);
/* A proxy's request o joined to the request i it forwarded to a traced
 * engine (DESIGN §11): s (o's split) becomes the client's one record. o's
 * own parts before its read and after its last write stay; the inner
 * hop's split fills the rest; what is left of [o's T_read, o's T_out] is
 * network.proxy (the proxy reading and forwarding, buffering tokens), or
 * network.send_blocked while o's writes to its client blocked. TTFT the
 * same up to o's first token. Sums stay exact. */
void ls_split_hop(struct ls_split *s, const struct ls_request *o, const struct ls_request *i,
		  const struct ls_split *is);
/* Where r's host and other time lie: the instants of its served window
 * [T_sched, T_out] (ttft: [T_sched, T_first]) classified host or other, as
 * sorted disjoint spans appended to host and other (either may be NULL).
 * Their lengths sum to the split's host and other. */
void ls_attribute_spans(const struct ls_request *r, const struct ls_timeline *tl,
			const struct ls_engine_join *join, bool ttft, struct ls_spans *host,
			struct ls_spans *other);
/* A request's phases (DESIGN.md §11), contiguous in [T_start, end]: the
 * partition's instants in order, each held at least at the one before and
 * at most at the end, so they never overlap. A phase whose marks are
 * missing is empty (b == 0 or e <= b). end: T_dlv, else T_ack, else T_out. */
enum ls_phase {
	LS_PH_UPLOAD, LS_PH_SOCKET, LS_PH_FRONTEND, LS_PH_ENGINE_QUEUE, LS_PH_SERVED, LS_PH_DRAIN,
	LS_PH_N,
};
struct ls_phases {
	uint64_t start, end; /* the request's; end 0 when none is known */
	uint64_t connect;    /* a new connection's handshake (network.connect), a
			      * duration counted before start (the client's pause
			      * after it is not the request's): 0 when none */
	uint64_t b[LS_PH_N], e[LS_PH_N];
};
void ls_phases_of(const struct ls_request *r, const struct ls_split *s, struct ls_phases *p);
/* Its length, 0 when empty. */
uint64_t ls_phase_len(const struct ls_phases *p, int k);
const char *ls_phase_name(int k);
/* The request's end as every output shows it: T_dlv, else T_ack, else T_out. */
uint64_t ls_request_end(const struct ls_request *r);
const char *ls_comp_name(int c);
/* The component a sub-part belongs to (enum ls_comp), -1 if none. */
int ls_sub_comp(int s);
/* A sub-part that only some hosts have (network.proxy, queueing.app):
 * outputs leave it out where no request had it, instead of printing null. */
bool ls_sub_optional(int s);
const char *ls_sub_name(int s);

#endif
