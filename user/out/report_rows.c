// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `report --csv` and `report --json` (see report_rows.h).
 */
#include <stdio.h>

#include "out/json.h"
#include "out/request_json.h"
#include "report_rows.h"

static uint64_t mark(uint64_t t)
{
	return t ? t : LS_NULL;
}

static void csv_u64(FILE *out, uint64_t v)
{
	if (v == LS_NULL)
		fputc(',', out);
	else
		fprintf(out, ",%llu", (unsigned long long)v);
}

static void print_csv_header(FILE *out)
{
	fprintf(out, "id,conn_id,client,server,pid,method,path,status,outcome,x_request_id,"
		     "start_ns,total_ns,ttft_ns,bytes_in,bytes_out,tokens,retransmits,resets,srtt_us");
	for (int k = 0; k < LS_S_N; k++)
		fprintf(out, ",%s", ls_sub_name(k));
	for (int c = 0; c < LS_C_N; c++)
		fprintf(out, ",%s", ls_comp_name(c));
	fprintf(out, ",max_gap_ns,engine_source,gpu_source\n");
}

static void print_csv(FILE *out, const struct ls_request *r, const struct ls_split *sp)
{
	const struct ls_split s = *sp;

	fprintf(out, "%llu,%llu,%s,%s,%u,%s,\"%s\",%d,%s,%s", (unsigned long long)r->id,
		(unsigned long long)r->conn_id, r->client, r->server, r->pid, r->method, r->path,
		r->status, ls_outcome_name(r->outcome), r->x_request_id);
	csv_u64(out, mark(r->t_start));
	csv_u64(out, s.total);
	csv_u64(out, s.ttft);
	fprintf(out, ",%llu,%llu,%u,%u,%u,%u", (unsigned long long)r->bytes_in,
		(unsigned long long)r->bytes_out, r->tokens, r->retransmits, r->resets,
		r->srtt_avg_us);
	for (int k = 0; k < LS_S_N; k++)
		csv_u64(out, s.sub[k]);
	for (int c = 0; c < LS_C_N; c++)
		csv_u64(out, s.comp[c]);
	csv_u64(out, r->tokens > 1 ? r->max_gap_ns : LS_NULL);
	fprintf(out, ",%s,%s\n", s.engine_source, s.gpu_source);
}

static int csv_begin(void *ctx, const struct ls_file_hdr *h)
{
	(void)h;
	print_csv_header(ctx);
	return 0;
}

static int csv_request(void *ctx, const struct ls_request_view *v)
{
	print_csv(ctx, v->r, v->s);
	return 0;
}

static int json_request(void *ctx, const struct ls_request_view *v)
{
	ls_request_json(((struct ls_report_json *)ctx)->out, v->r, v->s, v->j, v->inner, v->tl,
			((struct ls_report_json *)ctx)->trust);
	return 0;
}

/* After the requests: why none could be split, when so; the verdict. */
static int json_end(void *ctx, struct ls_analysis *a)
{
	struct ls_report_json *j = ctx;
	FILE *out = j->out;
	struct ls_verdict v;
	char why[320];

	if (ls_analysis_why_empty(a, a->hdr.sources, why, sizeof(why))) {
		fputs("{\"type\":\"empty\",", out);
		ls_json_kv_str(out, "reason", why, false);
		fputs("}\n", out);
	}
	ls_analysis_verdict(a, j->ttft, &v);
	ls_verdict_json(out, &v);
	return 0;
}

struct ls_sink ls_report_csv_sink(FILE *out)
{
	return (struct ls_sink){.name = "report", .begin = csv_begin, .request = csv_request,
				.ctx = out};
}

struct ls_sink ls_report_json_sink(struct ls_report_json *j)
{
	return (struct ls_sink){.name = "report", .request = json_request, .end = json_end,
				.ctx = j};
}
