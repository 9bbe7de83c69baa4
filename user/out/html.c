// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The one-file HTML report (see html.h). Plain HTML, CSS and a little
 * inline JavaScript; the data is one JSON array in the page.
 */
#include <stdlib.h>
#include <string.h>

#include <errno.h>

#include "grow.h"
#include "output.h"
#include "html.h"
#include "latsplit/engine.h"

#define BUSY_MAX 4096 /* merged GPU busy spans kept; then the nearest merge */

void ls_html_init(struct ls_html *h, const char *path, const char *outpath,
		  struct ls_report_text *text)
{
	memset(h, 0, sizeof(*h));
	h->path = path;
	h->outpath = outpath;
	h->text = text;
	h->stride = 1;
	h->latency = ls_flame_new();
}

static int html_request(void *ctx, const struct ls_request_view *v)
{
	struct ls_html *h = ctx;
	const struct ls_request *r = v->r;
	const struct ls_split *s = v->s;
	uint64_t end = v->ph->end;

	/* the latency flame: every request's split, host and other unexpanded */
	for (int k = 0; k < LS_S_N; k++) {
		const char *fr[3] = {"latency", ls_comp_name(ls_sub_comp(k)), ls_sub_name(k)};
		if (s->sub[k] != LS_NULL && s->sub[k])
			ls_flame_add(h->latency, fr, 3, s->sub[k]);
	}
	for (int c = LS_C_HOST; c <= LS_C_OTHER; c++) {
		const char *fr[2] = {"latency", ls_comp_name(c)};
		if (s->comp[c] != LS_NULL && s->comp[c])
			ls_flame_add(h->latency, fr, 2, s->comp[c]);
	}
	if (s->total == LS_NULL || !r->t_start)
		return 0;
	if (h->seen++ % h->stride)
		return 0; /* evenly sampled past the cap */
	if (h->nrows == LS_HTML_MAX_ROWS) { /* keep every other row, sample half as often */
		size_t k = 0;
		for (size_t i = 0; i < h->nrows; i += 2)
			h->rows[k++] = h->rows[i];
		h->nrows = k;
		h->stride *= 2;
		if ((h->seen - 1) % h->stride)
			return 0;
	}
	if (!h->rows && !(h->rows = calloc(LS_HTML_MAX_ROWS, sizeof(*h->rows))))
		return -ENOMEM;
	struct ls_html_row *w = &h->rows[h->nrows++];
	memset(w, 0, sizeof(*w));
	w->id = r->id;
	w->t_start = r->t_start;
	w->end = end;
	for (int k = 0; k < LS_PH_N; k++)
		w->ph[k] = ls_phase_len(v->ph, k);
	w->total = s->total;
	w->ttft = s->ttft;
	memcpy(w->comp, s->comp, sizeof(w->comp));
	w->status = r->status;
	snprintf(w->path, sizeof(w->path), "%.63s", r->path);
	snprintf(w->xrid, sizeof(w->xrid), "%.39s", r->x_request_id);
	snprintf(w->outcome, sizeof(w->outcome), "%s", ls_outcome_name(r->outcome));
	if (!h->first_ts || r->t_start < h->first_ts)
		h->first_ts = r->t_start;
	if (end > h->last_ts)
		h->last_ts = end;
	return 0;
}

static int html_span(void *ctx, enum ls_span_kind kind, uint32_t tgid, uint32_t tid, uint64_t b,
		     uint64_t e, const struct ls_hdr *rec)
{
	struct ls_html *h = ctx;

	(void)tgid;
	(void)tid;
	(void)rec;
	if (kind != LS_SPAN_GPU_BUSY || e <= b) /* the core's busy periods, every device */
		return 0;
	if (h->nbusy && b <= h->busy[h->nbusy - 1].e + 20000) { /* merge with the last */
		if (e > h->busy[h->nbusy - 1].e)
			h->busy[h->nbusy - 1].e = e;
		return 0;
	}
	if (h->nbusy == BUSY_MAX) { /* coarser: fold pairs */
		size_t k = 0;
		for (size_t i = 0; i + 1 < h->nbusy; i += 2)
			h->busy[k++] = (struct ls_span){h->busy[i].b, h->busy[i + 1].e};
		h->nbusy = k;
	}
	GROW(h->busy, h->nbusy, h->capbusy);
	h->busy[h->nbusy++] = (struct ls_span){b, e};
	return 0;
}

/* A string inside the page's JSON: escaped for JSON and for </script>. */
static void jstr(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = *s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void svg_inline(FILE *out, struct ls_flame *f, const char *title, const char *unit)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return;
	ls_flame_svg(f, m, title, unit);
	fclose(m);
	/* the SVG's own XML declaration has no place inside HTML */
	char *start = strstr(buf, "<svg");
	fputs(start ? start : "", out);
	free(buf);
}

static const char PAGE_CSS[] =
	"body{font:14px system-ui,sans-serif;margin:16px;color:#222}h1{font-size:20px}"
	"h2{font-size:16px;margin-top:28px}pre{background:#f6f6f6;padding:8px;overflow:auto;"
	"font-size:12px}.verdict{background:#fff4d6;border-left:4px solid #e0a800;padding:8px;"
	"font-weight:600}.missing{background:#fde8e8;border-left:4px solid #d33;padding:8px}"
	"#wf{font:11px monospace}.row{display:flex;align-items:center;height:14px}"
	".lbl{width:260px;overflow:hidden;white-space:nowrap}.lane{position:relative;flex:1;"
	"height:10px;background:#fafafa}.seg{position:absolute;top:0;height:10px}"
	".legend span{display:inline-block;padding:1px 6px;margin-right:6px;color:#fff}"
	"#busy{width:100%;height:24px;background:#eee}svg{max-width:100%}";

static const char PAGE_JS[] =
	"const C=['#4e79a7','#9c755f','#b07aa1','#e15759','#59a14f','#76b7b2'];"
	"const P=['upload','queueing.socket','frontend','queueing.engine','served','drain'];"
	"function ms(v){return (v/1e6).toFixed(3)+' ms'}"
	"function draw(){const k=document.getElementById('sort').value;"
	"const rows=D.slice();rows.sort((a,b)=>k==='start'?a.s-b.s:(k==='total'?b.t-a.t:"
	"(k==='ttft'?(b.f||0)-(a.f||0):(b.c[k]||0)-(a.c[k]||0))));"
	"const t0=Math.min(...D.map(r=>r.s)),t1=Math.max(...D.map(r=>r.e)),w=t1-t0||1;"
	"const wf=document.getElementById('wf');wf.textContent='';"
	"for(const r of rows){const row=document.createElement('div');row.className='row';"
	"const l=document.createElement('div');l.className='lbl';"
	"l.textContent='#'+r.id+' '+r.x+' '+r.o+' '+ms(r.t);row.appendChild(l);"
	"const lane=document.createElement('div');lane.className='lane';let x=r.s;"
	"r.p.forEach((d,i)=>{if(d>0){const s=document.createElement('div');s.className='seg';"
	"s.style.left=(100*(x-t0)/w)+'%';s.style.width=Math.max(0.05,100*d/w)+'%';"
	"s.style.background=C[i];s.title=P[i]+' '+ms(d)+' | total '+ms(r.t)+(r.f?' | ttft '+ms(r.f):'')"
	"+' | '+Object.entries(r.c).filter(e=>e[1]!==null).map(e=>e[0]+' '+ms(e[1])).join(', ');"
	"lane.appendChild(s)}x+=d});row.appendChild(lane);wf.appendChild(row)}"
	"document.getElementById('nrows').textContent=rows.length}"
	"document.getElementById('sort').addEventListener('change',draw);draw();";

static void html_write(FILE *out, struct ls_html *h, const char *title, const char *text,
		       const char *verdict_line, const char *missing, const struct ls_timeline *tl)
{
	fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		     "<title>");
	ls_xml_text(out, title);
	fprintf(out, "</title><style>%s</style></head><body>\n<h1>", PAGE_CSS);
	ls_xml_text(out, title);
	fprintf(out, "</h1>\n<div class=\"verdict\" id=\"verdict\">");
	ls_xml_text(out, verdict_line[0] ? verdict_line : "verdict: no request with a complete split");
	fprintf(out, "</div>\n");
	if (missing[0]) {
		fprintf(out, "<div class=\"missing\" id=\"missing\">Missing sources (their parts are "
			     "not claimed): ");
		ls_xml_text(out, missing);
		fprintf(out, "</div>\n");
	}
	fprintf(out, "<h2>Requests: waterfall</h2><div class=\"legend\">"
		     "<span style=\"background:#4e79a7\">upload</span>"
		     "<span style=\"background:#9c755f\">queueing.socket</span>"
		     "<span style=\"background:#b07aa1\">frontend</span>"
		     "<span style=\"background:#e15759\">queueing.engine</span>"
		     "<span style=\"background:#59a14f\">served</span>"
		     "<span style=\"background:#76b7b2\">drain</span></div>\n"
		     "<p>Sort by <select id=\"sort\"><option value=\"start\">start</option>"
		     "<option value=\"total\">total</option><option value=\"ttft\">TTFT</option>");
	for (int c = 0; c < LS_C_N; c++)
		fprintf(out, "<option value=\"%s\">%s</option>", ls_comp_name(c), ls_comp_name(c));
	fprintf(out, "</select> &mdash; <span id=\"nrows\">0</span> requests shown");
	if (h->stride > 1)
		fprintf(out, " (every %zu%s of %zu split requests, evenly sampled: the page stays "
			     "usable; the text report above counts them all)",
			h->stride, h->stride == 2 ? "nd" : "th", h->seen);
	fprintf(out, "; hover a bar for its values.</p>\n<div id=\"wf\"></div>\n");
	if (h->nbusy && h->last_ts > h->first_ts) {
		double w = (double)(h->last_ts - h->first_ts);
		fprintf(out, "<h2>GPU busy</h2><svg id=\"busy\" viewBox=\"0 0 1000 24\" "
			     "preserveAspectRatio=\"none\">");
		for (size_t i = 0; i < h->nbusy; i++) {
			double x = (h->busy[i].b < h->first_ts ? 0 : (h->busy[i].b - h->first_ts)) / w * 1000;
			double x2 = (h->busy[i].e - (h->busy[i].e > h->first_ts ? h->first_ts : h->busy[i].e)) / w * 1000;
			if (x >= 1000)
				continue;
			fprintf(out, "<rect x=\"%.2f\" y=\"0\" width=\"%.2f\" height=\"24\" fill=\"#59a14f\"/>",
				x, x2 - x > 0.05 ? x2 - x : 0.05);
		}
		fprintf(out, "</svg>\n");
	}
	fprintf(out, "<h2>Latency flame graph (the split of every request)</h2>\n");
	svg_inline(out, h->latency, "latency: component; sub-part (ns)", "ns");
	if (tl && ls_timeline_has_gpu(tl)) {
		const struct ls_gpu_summary *g = ls_timeline_gpu_summary(tl);
		struct ls_flame *gf = ls_flame_new();
		for (size_t i = 0; gf && i < g->nnames; i++) {
			const char *fr[2] = {"gpu", g->names[i].name[0] ? g->names[i].name : "?"};
			ls_flame_add(gf, fr, 2, g->names[i].ns);
		}
		static const char *const dir[4] = {"copy", "H2D", "D2H", "D2D"};
		for (int c = 0; gf && c < 4; c++)
			if (g->copy_ns[c]) {
				const char *fr[2] = {"gpu", dir[c]};
				ls_flame_add(gf, fr, 2, g->copy_ns[c]);
			}
		fprintf(out, "<h2>GPU flame graph (device time by kernel and copy)</h2>\n");
		if (gf)
			svg_inline(out, gf, "GPU time (ns)", "ns");
		ls_flame_free(gf);
	}
	fprintf(out, "<h2>Report</h2><pre id=\"report\">");
	ls_xml_text(out, text);
	fprintf(out, "</pre>\n<script>const D=[");
	for (size_t i = 0; i < h->nrows; i++) {
		const struct ls_html_row *r = &h->rows[i];
		fprintf(out, "%s{\"id\":%llu,\"s\":%llu,\"e\":%llu,\"t\":%llu,\"f\":", i ? "," : "",
			(unsigned long long)r->id, (unsigned long long)r->t_start,
			(unsigned long long)r->end, (unsigned long long)r->total);
		if (r->ttft == LS_NULL)
			fputs("null", out);
		else
			fprintf(out, "%llu", (unsigned long long)r->ttft);
		fputs(",\"x\":", out);
		jstr(out, r->xrid[0] ? r->xrid : r->path);
		fputs(",\"o\":", out);
		jstr(out, r->outcome);
		fputs(",\"p\":[", out);
		for (int k = 0; k < 6; k++)
			fprintf(out, "%s%llu", k ? "," : "", (unsigned long long)r->ph[k]);
		fputs("],\"c\":{", out);
		for (int c = 0; c < LS_C_N; c++) {
			fprintf(out, "%s\"%s\":", c ? "," : "", ls_comp_name(c));
			if (r->comp[c] == LS_NULL)
				fputs("null", out);
			else
				fprintf(out, "%llu", (unsigned long long)r->comp[c]);
		}
		fputs("}}", out);
	}
	fprintf(out, "];\n%s</script>\n</body></html>\n", PAGE_JS);
}

void ls_html_free(struct ls_html *h)
{
	free(h->rows);
	free(h->busy);
	ls_flame_free(h->latency);
	memset(h, 0, sizeof(*h));
}

/* The page: the text report rendered into it, the verdict's line on top. */
static int html_end(void *ctx, struct ls_analysis *a)
{
	struct ls_html *h = ctx;
	char *buf = NULL, title[600], missing[256], line[512];
	size_t len = 0;
	struct ls_verdict v;
	FILE *m = open_memstream(&buf, &len), *out;

	if (!m)
		return -ENOMEM;
	ls_report_text_print(m, h->text, a);
	if (fclose(m)) {
		free(buf);
		return -ENOMEM;
	}
	ls_analysis_verdict(a, ls_report_text_ttft(h->text), &v);
	ls_verdict_line(&v, line, sizeof(line));
	snprintf(missing, sizeof(missing), "%s%s%s", v.have_engine ? "" : "engine events; ",
		 v.have_gpu ? "" : "GPU timings; ", v.have_sched ? "" : "scheduler events; ");
	snprintf(title, sizeof(title), "latsplit report: %s", h->path);
	out = h->out ? h->out : ls_out_open(h->outpath, h->why, sizeof(h->why));
	if (!out) {
		free(buf);
		return -EIO;
	}
	html_write(out, h, title, buf, line, missing, a->tl);
	free(buf);
	if (h->out)
		return 0;
	if (fclose(out)) {
		snprintf(h->why, sizeof(h->why), "writing %s failed", h->outpath);
		return -EIO;
	}
	fprintf(stderr, "latsplit report: wrote %s (%zu requests in the waterfall)\n", h->outpath,
		h->nrows);
	return 0;
}

static const char *html_error(void *ctx)
{
	struct ls_html *h = ctx;
	return h->why[0] ? h->why : NULL;
}

struct ls_sink ls_html_sink(struct ls_html *h)
{
	return (struct ls_sink){.name = "report --html", .request = html_request, .span = html_span,
				.end = html_end, .error = html_error, .ctx = h};
}
