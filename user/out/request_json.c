// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The request record of `report --json` (DESIGN.md §6), one line per
 * request: field names are a public interface (extend, don't rename).
 */
#include "out/json.h"
#include "out/request_json.h"

static uint64_t mark(uint64_t t)
{
	return t ? t : LS_NULL;
}

void ls_request_json(FILE *out, const struct ls_request *r, const struct ls_split *sp,
		     const struct ls_engine_join *j)
{
	const struct ls_split s = *sp;

	fprintf(out, "{\"id\":%llu,\"conn\":\"%s->%s\",\"conn_id\":%llu,\"pid\":%u,",
		(unsigned long long)r->id, r->client, r->server, (unsigned long long)r->conn_id,
		r->pid);
	ls_json_kv_str(out, "method", r->method, true);
	ls_json_kv_str(out, "path", r->path, true);
	if (r->status)
		fprintf(out, "\"status\":%d,", r->status);
	else
		fprintf(out, "\"status\":null,");
	fprintf(out, "\"outcome\":\"%s\",", ls_outcome_name(r->outcome));
	ls_json_kv_str(out, "x_request_id", r->x_request_id, true);
	ls_json_kv_str(out, "traceparent", r->traceparent, true);
	ls_json_kv_u64(out, "start_ns", mark(r->t_start), true);
	ls_json_kv_u64(out, "total_ns", s.total, true);
	ls_json_kv_u64(out, "ttft_ns", s.ttft, true);
	fprintf(out, "\"bytes_in\":%llu,\"bytes_out\":%llu,\"tokens\":%u,\"retransmits\":%u,"
		     "\"resets\":%u,\"srtt_us\":%u,\"srtt_min_us\":%u,\"srtt_max_us\":%u,"
		     "\"streaming\":%s,",
		(unsigned long long)r->bytes_in, (unsigned long long)r->bytes_out, r->tokens,
		r->retransmits, r->resets, r->srtt_avg_us, r->srtt_min_us, r->srtt_max_us,
		r->streaming ? "true" : "false");
	fprintf(out, "\"marks\":{");
	ls_json_kv_u64(out, "t_start", mark(r->t_start), true);
	ls_json_kv_u64(out, "t_in", mark(r->t_in), true);
	ls_json_kv_u64(out, "t_read", mark(r->t_read), true);
	ls_json_kv_u64(out, "t_queued", mark(s.t_queued), true);
	ls_json_kv_u64(out, "t_sched", mark(s.t_sched), true);
	ls_json_kv_u64(out, "t_first", mark(r->t_first), true);
	ls_json_kv_u64(out, "t_out", mark(r->t_out), true);
	ls_json_kv_u64(out, "t_end", mark(r->t_end), true);
	ls_json_kv_u64(out, "t_first_dlv", mark(r->t_first_dlv), true);
	ls_json_kv_u64(out, "t_dlv", mark(r->t_dlv), true);
	ls_json_kv_u64(out, "t_ack", mark(r->t_end), false);
	fprintf(out, "},\"components\":{");
	for (int c = 0; c < LS_C_N; c++)
		ls_json_kv_u64(out, ls_comp_name(c), s.comp[c], c + 1 < LS_C_N);
	fprintf(out, "},\"ttft_components\":{");
	for (int c = 0; c < LS_C_N; c++)
		ls_json_kv_u64(out, ls_comp_name(c), s.ttft_comp[c], c + 1 < LS_C_N);
	fprintf(out, "},\"sub\":{");
	for (int k = 0; k < LS_S_N; k++)
		ls_json_kv_u64(out, ls_sub_name(k), s.sub[k], k + 1 < LS_S_N);
	fprintf(out, "},");
	ls_json_kv_u64(out, "frontend_ns", s.frontend, true);
	/* the client had the last byte at T_dlv; its ACK came this much later */
	ls_json_kv_u64(out, "ack_delay_ns",
		       r->t_dlv && r->t_end >= r->t_dlv ? r->t_end - r->t_dlv : LS_NULL, true);
	if (r->have_wire) {
		fprintf(out, "\"wire\":{\"first_ns\":%llu,\"p50_ns\":%llu,\"max_ns\":%llu,\"holds\":{",
			(unsigned long long)r->wire_first_ns, (unsigned long long)r->wire_p50_ns,
			(unsigned long long)r->wire_max_ns);
		for (int h = 0; h < LS_HOLD_N; h++)
			fprintf(out, "%s\"%s\":%u", h ? "," : "", ls_hold_name(h), r->holds[h]);
		fprintf(out, "}},");
	} else {
		fprintf(out, "\"wire\":null,");
	}
	fprintf(out, "\"unobserved\":[");
	for (int k = 0, first = 1; k < LS_S_N; k++)
		if (s.unobserved & 1u << k) {
			fprintf(out, "%s\"%s\"", first ? "" : ",", ls_sub_name(k));
			first = 0;
		}
	if (s.unobserved & LS_UNOBSERVED_HOST)
		fprintf(out, "%s\"host\"", s.unobserved & ~LS_UNOBSERVED_HOST ? "," : "");
	fprintf(out, "],");
	ls_json_kv_u64(out, "max_gap_ns", r->tokens > 1 ? r->max_gap_ns : LS_NULL, true);
	if (s.max_gap_cause)
		fprintf(out, "\"max_gap_cause\":\"%s\",", s.max_gap_cause);
	else
		fprintf(out, "\"max_gap_cause\":null,");
	if (j && j->joined)
		fprintf(out, "\"engine\":{\"batch_size\":%u,\"prompt_tokens\":%u,\"preemptions\":%u},",
			j->batch_size, j->prompt_tokens, j->preemptions);
	fprintf(out, "\"sources\":{\"engine\":\"%s\",\"gpu\":\"%s\"}}\n", s.engine_source,
		s.gpu_source);
}
