// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Attribution (DESIGN.md §6). What the network and socket sources give:
 *   network.upload       [T_start, T_in]
 *   queueing.socket      [T_in, T_read]
 *   network.send_blocked time the app slept inside writes of the response
 *   network.drain        [T_out, T_end]
 * and the TTFT split: the same restricted to [T_start, T_first] (upload,
 * socket queueing, and send-blocked time before the first token).
 * queueing.engine, queueing.cpu, host, transfer and compute need engine,
 * scheduler and GPU correlation; until those sources are joined they are
 * LS_NULL, and so is every component whose sum needs them.
 */
#include "attribute.h"

static const char *const comp_names[LS_C_N] = {"network", "queueing", "transfer",
					       "compute", "host",     "other"};
static const char *const sub_names[LS_S_N] = {
	"network.upload",  "network.send_blocked", "network.drain",  "queueing.socket",
	"queueing.engine", "queueing.cpu",         "compute.kernel", "compute.comm",
	"transfer.h2d",    "transfer.d2h",         "transfer.other",
};

const char *ls_comp_name(int c)
{
	return c >= 0 && c < LS_C_N ? comp_names[c] : "?";
}

const char *ls_sub_name(int s)
{
	return s >= 0 && s < LS_S_N ? sub_names[s] : "?";
}

/* b - a, or LS_NULL when either mark is missing; clamped at 0 (marks from
 * different CPUs can be a few ns out of order). */
static uint64_t span(uint64_t a, uint64_t b)
{
	if (!a || !b)
		return LS_NULL;
	return b > a ? b - a : 0;
}

static uint64_t add(uint64_t a, uint64_t b)
{
	return a == LS_NULL || b == LS_NULL ? LS_NULL : a + b;
}

void ls_attribute(const struct ls_request *r, struct ls_split *s)
{
	for (int i = 0; i < LS_C_N; i++)
		s->comp[i] = s->ttft_comp[i] = LS_NULL;
	for (int i = 0; i < LS_S_N; i++)
		s->sub[i] = s->ttft_sub[i] = LS_NULL;
	s->total = span(r->t_start, r->t_end);
	s->ttft = span(r->t_start, r->t_first);

	s->sub[LS_S_NET_UPLOAD] = span(r->t_start, r->t_in);
	s->sub[LS_S_Q_SOCKET] = span(r->t_in, r->t_read);
	s->sub[LS_S_NET_SEND_BLOCKED] = r->t_out ? r->send_blocked_ns : LS_NULL;
	s->sub[LS_S_NET_DRAIN] = span(r->t_out, r->t_end);
	s->comp[LS_C_NETWORK] = add(add(s->sub[LS_S_NET_UPLOAD], s->sub[LS_S_NET_SEND_BLOCKED]),
				    s->sub[LS_S_NET_DRAIN]);

	s->ttft_sub[LS_S_NET_UPLOAD] = s->sub[LS_S_NET_UPLOAD];
	s->ttft_sub[LS_S_Q_SOCKET] = s->sub[LS_S_Q_SOCKET];
	s->ttft_sub[LS_S_NET_SEND_BLOCKED] = r->t_first ? r->send_blocked_ttft_ns : LS_NULL;
	s->ttft_sub[LS_S_NET_DRAIN] = r->t_first ? 0 : LS_NULL; /* drain follows T_out */
	s->ttft_comp[LS_C_NETWORK] = add(s->ttft_sub[LS_S_NET_UPLOAD],
					 s->ttft_sub[LS_S_NET_SEND_BLOCKED]);
}
