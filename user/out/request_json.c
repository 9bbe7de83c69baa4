// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The request record of `report --json` (DESIGN.md §6), one line per
 * request: field names are a public interface (extend, don't rename).
 * Built in one buffer and written with one call: formatting ~60 fields a
 * request through fprintf was a fifth of report --json's time.
 */
#include "out/json.h"
#include "out/request_json.h"

static uint64_t mark(uint64_t t)
{
	return t ? t : LS_NULL;
}

/* "key":v, for the counters that are never null, then a comma if asked */
static void kv_num(struct ls_jbuf *j, const char *key, uint64_t v, bool comma)
{
	ls_jb_key(j, key);
	ls_jb_u64(j, v);
	if (comma)
		ls_jb_raw(j, ",", 1);
}

/* "key":"name", */
static void kv_name(struct ls_jbuf *j, const char *key, const char *name)
{
	ls_jb_key(j, key);
	ls_jb_raw(j, "\"", 1);
	ls_jb_str(j, name);
	ls_jb_raw(j, "\",", 2);
}

/* "hops":[...], of a request joined across a traced proxy (DESIGN §11) */
static void hops(struct ls_jbuf *b, const struct ls_request *r, const struct ls_request *inner,
		 const struct ls_timeline *tl)
{
	const struct ls_request *h[2] = {r, inner};

	ls_jb_str(b, "\"hops\":[");
	for (int k = 0; k < 2; k++) {
		const char *comm = ls_timeline_comm(tl, h[k]->pid);
		ls_jb_str(b, k ? ",{" : "{");
		kv_name(b, "role", k ? "server" : "proxy");
		kv_num(b, "pid", h[k]->pid, true);
		ls_jb_kv_str(b, "comm", comm ? comm : "", true);
		ls_jb_kv_str(b, "server", h[k]->server, true);
		ls_jb_kv_str(b, "x_request_id", h[k]->x_request_id, true);
		kv_name(b, "transport", h[k]->transport_unix ? "unix" : "tcp");
		ls_jb_kv_u64(b, "id", h[k]->id, false);
		ls_jb_str(b, "}");
	}
	ls_jb_str(b, "],");
}

/* "container":{...}, the container the process that read it ran in (DESIGN
 * §11), null for the host's */
static void container(struct ls_jbuf *b, const struct ls_timeline *tl, uint32_t pid)
{
	const struct ls_proc_place *p = ls_timeline_place(tl, pid);

	if (!p) {
		ls_jb_str(b, "\"container\":null,");
		return;
	}
	ls_jb_str(b, "\"container\":{");
	ls_jb_kv_str(b, "name", p->c.name, true);
	ls_jb_kv_str(b, "runtime", p->c.runtime, true);
	ls_jb_kv_str(b, "id", p->c.id, true);
	ls_jb_kv_str(b, "cgroup", p->cgroup, true);
	kv_num(b, "ns_pid", p->ns_pid, false);
	ls_jb_str(b, "},");
}

void ls_request_json(FILE *out, const struct ls_request *r, const struct ls_split *sp,
		     const struct ls_engine_join *j, const struct ls_request *inner,
		     const struct ls_timeline *tl, const struct ls_trust *trust)
{
	const struct ls_split s = *sp;
	struct ls_jbuf jb;
	struct ls_jbuf *b = &jb;

	ls_jb_init(b, out);
	ls_jb_str(b, "{\"id\":");
	ls_jb_u64(b, r->id);
	ls_jb_str(b, ",\"conn\":\"");
	ls_jb_str(b, r->client);
	ls_jb_str(b, "->");
	ls_jb_str(b, r->server);
	ls_jb_str(b, "\",");
	kv_num(b, "conn_id", r->conn_id, true);
	kv_num(b, "pid", r->pid, true);
	container(b, tl, r->pid);
	ls_jb_kv_str(b, "method", r->method, true);
	ls_jb_kv_str(b, "path", r->path, true);
	if (r->status) {
		ls_jb_str(b, "\"status\":");
		ls_jb_str(b, r->status < 0 ? "-" : "");
		ls_jb_u64(b, r->status < 0 ? -(uint64_t)r->status : (uint64_t)r->status);
		ls_jb_raw(b, ",", 1);
	} else {
		ls_jb_str(b, "\"status\":null,");
	}
	kv_name(b, "outcome", ls_outcome_name(r->outcome));
	kv_name(b, "transport", r->transport_unix ? "unix" : "tcp");
	kv_name(b, "protocol", ls_protocol_name(r->protocol));
	ls_jb_str(b, r->tls ? "\"tls\":true," : "\"tls\":false,");
	if (r->stream)
		kv_num(b, "stream", r->stream, true);
	if (r->protocol == LS_PROTO_GRPC)
		ls_jb_kv_u64(b, "grpc_status", r->grpc_status >= 0 ? (uint64_t)r->grpc_status : LS_NULL, true);
	if (r->unparsed_why[0])
		ls_jb_kv_str(b, "unparsed_why", r->unparsed_why, true);
	ls_jb_kv_str(b, "x_request_id", r->x_request_id, true);
	ls_jb_kv_str(b, "traceparent", r->traceparent, true);
	ls_jb_kv_str(b, "forwarded_for", ls_trust_forwarded(trust, r), true);
	if (inner)
		hops(b, r, inner, tl);
	ls_jb_kv_u64(b, "start_ns", mark(r->t_start), true);
	ls_jb_kv_u64(b, "total_ns", s.total, true);
	ls_jb_kv_u64(b, "ttft_ns", s.ttft, true);
	kv_num(b, "bytes_in", r->bytes_in, true);
	kv_num(b, "bytes_out", r->bytes_out, true);
	kv_num(b, "tokens", r->tokens, true);
	if (r->usage_prompt || r->usage_completion) { /* the response's own "usage" */
		ls_jb_str(b, "\"usage\":{");
		ls_jb_kv_u64(b, "prompt_tokens", r->usage_prompt ? r->usage_prompt : LS_NULL, true);
		ls_jb_kv_u64(b, "completion_tokens",
			     r->usage_completion ? r->usage_completion : LS_NULL, false);
		ls_jb_str(b, "},");
	}
	kv_num(b, "retransmits", r->retransmits, true);
	kv_num(b, "resets", r->resets, true);
	kv_num(b, "srtt_us", r->srtt_avg_us, true);
	kv_num(b, "srtt_min_us", r->srtt_min_us, true);
	kv_num(b, "srtt_max_us", r->srtt_max_us, true);
	ls_jb_str(b, r->streaming ? "\"streaming\":true," : "\"streaming\":false,");
	ls_jb_str(b, "\"marks\":{");
	ls_jb_kv_u64(b, "t_start", mark(r->t_start), true);
	ls_jb_kv_u64(b, "t_in", mark(r->t_in), true);
	ls_jb_kv_u64(b, "t_read", mark(r->t_read), true);
	ls_jb_kv_u64(b, "t_queued", mark(s.t_queued), true);
	ls_jb_kv_u64(b, "t_sched", mark(s.t_sched), true);
	ls_jb_kv_u64(b, "t_first", mark(r->t_first), true);
	ls_jb_kv_u64(b, "t_out", mark(r->t_out), true);
	ls_jb_kv_u64(b, "t_end", mark(r->t_end), true);
	ls_jb_kv_u64(b, "t_first_dlv", mark(r->t_first_dlv), true);
	ls_jb_kv_u64(b, "t_dlv", mark(r->t_dlv), true);
	ls_jb_kv_u64(b, "t_ack", mark(r->t_end), false);
	ls_jb_str(b, "},\"components\":{");
	for (int c = 0; c < LS_C_N; c++)
		ls_jb_kv_u64(b, ls_comp_name(c), s.comp[c], c + 1 < LS_C_N);
	ls_jb_str(b, "},\"ttft_components\":{");
	for (int c = 0; c < LS_C_N; c++)
		ls_jb_kv_u64(b, ls_comp_name(c), s.ttft_comp[c], c + 1 < LS_C_N);
	ls_jb_str(b, "},\"sub\":{");
	for (int k = 0; k < LS_S_N; k++) {
		if (ls_sub_optional(k) && s.sub[k] == LS_NULL)
			continue; /* not on this request's way: absent */
		if (k)
			ls_jb_raw(b, ",", 1);
		ls_jb_kv_u64(b, ls_sub_name(k), s.sub[k], false);
	}
	ls_jb_str(b, "},");
	ls_jb_kv_u64(b, "frontend_ns", s.frontend, true);
	/* a new connection's client paused this long after its handshake (not in the total) */
	ls_jb_kv_u64(b, "connect_idle_ns", r->connect_ns ? r->connect_idle_ns : LS_NULL, true);
	/* the client had the last byte at T_dlv; its ACK came this much later */
	ls_jb_kv_u64(b, "ack_delay_ns",
		     r->t_dlv && r->t_end >= r->t_dlv ? r->t_end - r->t_dlv : LS_NULL, true);
	if (r->have_wire) {
		ls_jb_str(b, "\"wire\":{");
		kv_num(b, "first_ns", r->wire_first_ns, true);
		kv_num(b, "p50_ns", r->wire_p50_ns, true);
		kv_num(b, "max_ns", r->wire_max_ns, true);
		ls_jb_str(b, "\"holds\":{");
		for (int h = 0; h < LS_HOLD_N; h++) {
			ls_jb_str(b, h ? ",\"" : "\"");
			ls_jb_str(b, ls_hold_name(h));
			ls_jb_str(b, "\":");
			ls_jb_u64(b, r->holds[h]);
		}
		ls_jb_str(b, "}},");
	} else {
		ls_jb_str(b, "\"wire\":null,");
	}
	ls_jb_str(b, "\"unobserved\":[");
	for (int k = 0, first = 1; k < LS_S_N; k++)
		if (s.unobserved & 1u << k) {
			ls_jb_str(b, first ? "\"" : ",\"");
			ls_jb_str(b, ls_sub_name(k));
			ls_jb_str(b, "\"");
			first = 0;
		}
	if (s.unobserved & LS_UNOBSERVED_HOST)
		ls_jb_str(b, s.unobserved & ~LS_UNOBSERVED_HOST ? ",\"host\"" : "\"host\"");
	ls_jb_str(b, "],");
	ls_jb_kv_u64(b, "max_gap_ns", r->tokens > 1 ? r->max_gap_ns : LS_NULL, true);
	if (s.max_gap_cause)
		kv_name(b, "max_gap_cause", s.max_gap_cause);
	else
		ls_jb_str(b, "\"max_gap_cause\":null,");
	if (j && j->joined) {
		ls_jb_str(b, "\"engine\":{");
		kv_num(b, "batch_size", j->batch_size, true);
		kv_num(b, "prompt_tokens", j->prompt_tokens, true);
		kv_num(b, "preemptions", j->preemptions, false);
		ls_jb_str(b, "},");
	}
	ls_jb_str(b, "\"sources\":{\"engine\":\"");
	ls_jb_str(b, s.engine_source);
	ls_jb_str(b, "\",\"gpu\":\"");
	ls_jb_str(b, s.gpu_source);
	ls_jb_str(b, "\"}}\n");
	ls_jb_flush(b);
}
