// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The flight recorder (see flight.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "flight.h"
#include "grow.h"

#define FRAME_NS 100000000ull  /* a frame per 100 ms of records */
#define FRAME_BYTES (1u << 20) /* or per MiB */
#define HOUR_NS 3600000000000ull

struct conn_info {
	struct ls_tuple t;
	bool have_tuple;
	uint64_t ended; /* tcp_destroy's time; 0: open */
};

static const char *const comp_names[] = {"network", "queueing", "transfer",
					   "compute", "host",     "other"};

/* A duration: a number with ns, us, ms or s (no unit: seconds). */
static bool parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	size_t digits = strspn(s, "0123456789.");
	double v, mul = 1e9;

	/* plain decimals only: strtod would take nan, inf, hex and exponents
	 * (total>nan never fired; NaN to an integer is undefined) */
	if (!digits)
		return false;
	v = strtod(s, &end);
	if (end != s + digits || !(v >= 0))
		return false;
	if (!strcmp(end, "ns"))
		mul = 1;
	else if (!strcmp(end, "us"))
		mul = 1e3;
	else if (!strcmp(end, "ms"))
		mul = 1e6;
	else if (strcmp(end, "s") && *end)
		return false;
	if (v * mul >= 1e19) /* past uint64: a trigger that could never fire */
		return false;
	*ns = (uint64_t)(v * mul);
	return true;
}

int ls_trigger_parse(const char *s, struct ls_trigger *t, char *err, size_t len)
{
	char what[64];
	const char *gt = strchr(s, '>');

	memset(t, 0, sizeof(*t));
	snprintf(t->text, sizeof(t->text), "%s", s);
	if (!gt || gt == s || (size_t)(gt - s) >= sizeof(what))
		goto bad;
	memcpy(what, s, gt - s);
	what[gt - s] = '\0';
	if (!strcmp(what, "retransmits")) {
		char *end;
		unsigned long long v;
		errno = 0;
		v = strtoull(gt + 1, &end, 10);
		/* digits only (strtoull takes "-1" as a huge count), in range */
		if (end == gt + 1 || *end || !strchr("0123456789", gt[1]) || errno == ERANGE)
			goto bad;
		t->what = LS_TRIG_RETRANS;
		t->above = v;
		return 0;
	}
	if (!parse_duration(gt + 1, &t->above))
		goto bad;
	if (!strcmp(what, "total")) {
		t->what = LS_TRIG_TOTAL;
		return 0;
	}
	if (!strcmp(what, "ttft")) {
		t->what = LS_TRIG_TTFT;
		return 0;
	}
	if (!strncmp(what, "component:", 10)) {
		const char *name = what + 10;
		for (int c = 0; c < LS_C_N; c++)
			if (!strcmp(name, comp_names[c])) {
				t->what = LS_TRIG_COMP;
				t->index = c;
				return 0;
			}
		for (int k = 0; k < LS_S_N; k++)
			if (!strcmp(name, ls_sub_name(k))) {
				t->what = LS_TRIG_SUB;
				t->index = k;
				return 0;
			}
	}
bad:
	snprintf(err, len,
		 "--trigger '%s': expected total>DUR, ttft>DUR, component:NAME>DUR (a component "
		 "such as network, or a sub-part such as queueing.engine) or retransmits>N; "
		 "DUR like 2s, 500ms",
		 s);
	return -1;
}

bool ls_trigger_match(const struct ls_trigger *t, const struct ls_request *r,
		      const struct ls_split *s)
{
	uint64_t v;

	switch (t->what) {
	case LS_TRIG_RETRANS:
		return r->retransmits > t->above;
	case LS_TRIG_TOTAL:
		v = s->total;
		break;
	case LS_TRIG_TTFT:
		v = s->ttft;
		break;
	case LS_TRIG_COMP:
		v = s->comp[t->index];
		break;
	default:
		v = s->sub[t->index];
		break;
	}
	return v != LS_NULL && v > t->above;
}

int ls_flight_init(struct ls_flight *f, const struct ls_file_hdr *hdr, char *err, size_t len)
{
	(void)err;
	(void)len;
	f->hdr = *hdr;
	if (!f->keep_ns)
		f->keep_ns = 60000000000ull;
	if (!f->margin_ns)
		f->margin_ns = 1000000000ull;
	if (!f->max_bytes)
		f->max_bytes = 256u << 20;
	if (!f->dir)
		f->dir = ".";
	return 0;
}

/* Room for `need` bytes in a doubling byte buffer; false: out of memory. */
static bool reserve(unsigned char **buf, size_t *cap, size_t need, size_t first)
{
	size_t nc = *cap ? *cap : first;
	unsigned char *p;

	if (need <= *cap)
		return true;
	while (nc < need)
		nc *= 2;
	if (!(p = realloc(*buf, nc)))
		return false;
	*buf = p;
	*cap = nc;
	return true;
}

static void drop_oldest(struct ls_flight *f)
{
	struct ls_flight_frame *x = &f->fr[f->f0];

	f->bytes -= x->clen;
	free(x->data);
	f->f0++;
	if (f->f0 == f->nf)
		f->f0 = f->nf = 0;
}

/* The block becomes a compressed frame; old frames go. */
static void seal(struct ls_flight *f)
{
	uLongf clen;
	struct ls_flight_frame x = {f->b_first, f->b_last, f->bnrec, f->blen, 0, NULL};

	if (!f->bnrec)
		return;
	clen = compressBound(f->blen);
	/* compressed into a scratch buffer, kept at its own size: a frame
	 * holds ~1/5 of its raw bytes, not compressBound's worst case */
	if (reserve(&f->z, &f->zcap, clen, clen) && compress2(f->z, &clen, f->blk, f->blen, 1) == Z_OK &&
	    (x.data = malloc(clen))) {
		memcpy(x.data, f->z, clen);
		x.clen = clen;
		if (f->f0 && f->f0 * 2 >= f->nf) {
			memmove(f->fr, f->fr + f->f0, (f->nf - f->f0) * sizeof(*f->fr));
			f->nf -= f->f0;
			f->f0 = 0;
		}
		GROW(f->fr, f->nf, f->capf);
		f->fr[f->nf++] = x;
		f->bytes += clen;
	} else {
		f->evicted_frames++; /* no memory: the frame is lost, and counted */
	}
	f->blen = f->bnrec = 0;
	while (f->f0 < f->nf && (f->fr[f->f0].last + f->keep_ns < f->b_last || f->bytes > f->max_bytes)) {
		if (f->bytes > f->max_bytes)
			f->evicted_frames++; /* the memory cap, before its time */
		drop_oldest(f);
	}
}

static uint64_t conn_of(const struct ls_hdr *rec)
{
	switch (rec->type) {
	case LS_EV_TCP_STATE:
	case LS_EV_TCP_RETRANS:
	case LS_EV_TCP_PROBE:
	case LS_EV_TCP_RESET:
	case LS_EV_TCP_DESTROY:
	case LS_EV_SOCK_IO:
	case LS_EV_SOCK_ACCEPT:
	case LS_EV_SOCK_CLOSE:
	case LS_EV_CONN_ADOPT:
		return rec->size >= sizeof(*rec) + 8 ? *(const uint64_t *)(rec + 1) : 0;
	default:
		return 0;
	}
}

static void side_add(struct ls_flight *f, const struct ls_hdr *rec)
{
	size_t a = (rec->size + 7) & ~7u;

	if (!reserve(&f->side, &f->side_cap, f->side_len + a, 65536))
		return;
	memcpy(f->side + f->side_len, rec, rec->size);
	memset(f->side + f->side_len + rec->size, 0, a - rec->size);
	f->side_len += a;
}

static struct ls_hdr *copy_rec(const struct ls_hdr *rec)
{
	struct ls_hdr *c = malloc(rec->size);

	if (c)
		memcpy(c, rec, rec->size);
	return c;
}

/* What outlives the frames: processes, drops, stacks, symbols, mappings,
 * and each connection's addresses. */
static void keep_aside(struct ls_flight *f, const struct ls_hdr *rec)
{
	uint64_t id;
	struct conn_info *ci;

	switch (rec->type) {
	case LS_REC_PROC_INFO:
	case LS_REC_PROC_NS: { /* the newest of each kind per process */
		uint64_t key = (uint64_t)rec->pid + 1 + (rec->type == LS_REC_PROC_NS ? 1ull << 32 : 0);
		struct ls_hdr *c = copy_rec(rec);
		free(ls_idmap_remove(&f->procs, key));
		if (c && ls_idmap_put(&f->procs, key, c))
			free(c);
		break;
	}
	case LS_REC_DROPS:
		free(f->drops);
		f->drops = copy_rec(rec);
		break;
	case LS_REC_STACK:
	case LS_REC_SYM:
	case LS_REC_MAPPING:
		side_add(f, rec);
		break;
	default:
		break;
	}
	if (!(id = conn_of(rec)))
		return;
	ci = ls_idmap_get(&f->conns, id);
	if (!ci) {
		ci = calloc(1, sizeof(*ci));
		if (!ci || ls_idmap_put(&f->conns, id, ci)) {
			free(ci);
			return;
		}
	}
	if (!ci->have_tuple && (rec->type == LS_EV_TCP_STATE || rec->type == LS_EV_SOCK_ACCEPT ||
				rec->type == LS_EV_CONN_ADOPT)) {
		const void *t = rec->type == LS_EV_TCP_STATE
					? (const void *)&((const struct ls_ev_tcp_state *)rec)->t
				: rec->type == LS_EV_SOCK_ACCEPT
					? (const void *)&((const struct ls_ev_sock_accept *)rec)->t
					: (const void *)&((const struct ls_ev_conn_adopt *)rec)->t;
		memcpy(&ci->t, t, sizeof(ci->t));
		ci->have_tuple = true;
	}
	if (rec->type == LS_EV_TCP_DESTROY)
		ci->ended = rec->ts;
}

/* Connections that ended longer ago than the frames reach. */
static void purge_conns(struct ls_flight *f)
{
	for (size_t i = 0; i < f->conns.cap; i++) {
		struct conn_info *ci;
		if (!f->conns.keys[i])
			continue;
		ci = f->conns.vals[i];
		if (ci->ended && ci->ended + f->keep_ns + f->margin_ns < f->now) {
			free(ls_idmap_remove(&f->conns, f->conns.keys[i]));
			i--; /* removal shifts the probe run back into this slot */
		}
	}
}

void ls_flight_record(void *ctx, const struct ls_hdr *rec)
{
	struct ls_flight *f = ctx;
	size_t a = (rec->size + 7) & ~7u;

	keep_aside(f, rec);
	if (rec->type >= LS_EV_KERNEL_MAX)
		return; /* kept aside, or end-of-capture statistics */
	if (rec->ts > f->now)
		f->now = rec->ts;
	if (f->bnrec && (f->blen + a > FRAME_BYTES || f->now >= f->b_first + FRAME_NS))
		seal(f);
	if (!reserve(&f->blk, &f->bcap, f->blen + a, 65536))
		return;
	memcpy(f->blk + f->blen, rec, rec->size);
	memset(f->blk + f->blen + rec->size, 0, a - rec->size);
	f->blen += a;
	if (!f->bnrec || rec->ts < f->b_first)
		f->b_first = rec->ts;
	if (!f->bnrec || rec->ts > f->b_last)
		f->b_last = rec->ts;
	f->bnrec++;
	if (f->now >= f->last_purge + 10000000000ull) {
		purge_conns(f);
		f->last_purge = f->now;
	}
}

static int flight_request(void *ctx, const struct ls_request_view *v)
{
	struct ls_flight *f = ctx;
	const struct ls_request *r = v->r;
	int t;

	for (t = 0; t < f->ntrig && !ls_trigger_match(&f->trig[t], r, v->s); t++)
		;
	if (t == f->ntrig || !r->t_start)
		return 0;
	/* the rate: dumps in the last hour, and those waiting to be written */
	while (f->dump_n && f->dump_at[f->dump_head] + HOUR_NS <= f->now) {
		f->dump_head = (f->dump_head + 1) % f->max_per_hour;
		f->dump_n--;
	}
	if (f->dump_n + f->npend >= f->max_per_hour || f->npend == 16) {
		f->suppressed++;
		return 0;
	}
	uint64_t end = r->t_end ? r->t_end : r->t_out ? r->t_out : r->t_start;
	f->pend[f->npend++] = (struct ls_flight_dump){
		r->t_start > f->margin_ns ? r->t_start - f->margin_ns : 0, end + f->margin_ns, r->id};
	return 0;
}

struct ls_sink ls_flight_sink(struct ls_flight *f)
{
	return (struct ls_sink){.name = "flight recorder", .request = flight_request, .ctx = f};
}

/* Records of one frame (or the open block) inside [from, to], appended to
 * out; per connection, the first sequence numbers each way and whether its
 * start is inside. */
struct window_conn {
	uint64_t id;
	uint32_t rx_seq, tx_seq;
	bool rx, tx, begun;
};

struct window {
	unsigned char *buf;
	size_t len, cap;
	struct window_conn *c;
	size_t nc, capc;
};

static struct window_conn *wconn(struct window *w, uint64_t id)
{
	for (size_t i = w->nc; i-- > 0;)
		if (w->c[i].id == id)
			return &w->c[i];
	GROW(w->c, w->nc, w->capc);
	memset(&w->c[w->nc], 0, sizeof(w->c[0]));
	w->c[w->nc].id = id;
	return &w->c[w->nc++];
}

static void take(struct window *w, const unsigned char *raw, size_t len, uint64_t from, uint64_t to)
{
	for (size_t off = 0; off + sizeof(struct ls_hdr) <= len;) {
		const struct ls_hdr *h = (const void *)(raw + off);
		size_t a = (h->size + 7) & ~7u;
		uint64_t id;

		if (h->size < sizeof(*h) || off + a > len)
			break;
		off += a;
		if (h->ts < from || h->ts > to)
			continue;
		if ((id = conn_of(h))) {
			struct window_conn *c = wconn(w, id);
			if (h->type == LS_EV_SOCK_IO) {
				const struct ls_ev_sock_io *io = (const void *)h;
				if (io->dir == LS_IO_IN && !c->rx)
					c->rx = true, c->rx_seq = io->seq;
				if (io->dir == LS_IO_OUT && !c->tx)
					c->tx = true, c->tx_seq = io->seq;
			}
			if ((h->type == LS_EV_TCP_STATE &&
			     ((const struct ls_ev_tcp_state *)h)->newstate == 1) ||
			    h->type == LS_EV_CONN_ADOPT || h->type == LS_EV_SOCK_ACCEPT)
				c->begun = true;
		}
		if (!reserve(&w->buf, &w->cap, w->len + a, 1 << 20))
			return;
		memcpy(w->buf + w->len, h, a);
		w->len += a;
	}
}

static int write_dump(struct ls_flight *f, const struct ls_flight_dump *d)
{
	struct window w = {0};
	struct ls_writer *wr;
	char path[512], stamp[32];
	time_t wall;
	struct tm tm;
	int e;

	for (size_t i = f->f0; i < f->nf; i++) {
		struct ls_flight_frame *x = &f->fr[i];
		unsigned char *raw;
		uLongf rl = x->raw_len;
		if (x->last < d->from || x->first > d->to)
			continue;
		if (!(raw = malloc(x->raw_len ? x->raw_len : 1)))
			continue;
		if (uncompress(raw, &rl, x->data, x->clen) == Z_OK)
			take(&w, raw, rl, d->from, d->to);
		free(raw);
	}
	take(&w, f->blk, f->blen, d->from, d->to);
	wall = (time_t)((f->hdr.realtime_ns + (d->from - f->hdr.monotonic_ns)) / 1000000000ull);
	localtime_r(&wall, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(path, sizeof(path), "%s/latsplit-flight-%s-req%llu.data", f->dir, stamp,
		 (unsigned long long)d->req_id);
	e = ls_writer_open(&wr, path, &f->hdr, NULL);
	if (e) {
		fprintf(stderr, "latsplit record: flight recorder: cannot create %s: %s\n", path,
			strerror(-e));
		free(w.buf);
		free(w.c);
		return -1;
	}
	for (size_t i = 0; i < f->procs.cap; i++)
		if (f->procs.keys[i])
			ls_writer_append(wr, f->procs.vals[i]);
	if (f->drops)
		ls_writer_append(wr, f->drops);
	for (size_t off = 0; off < f->side_len;) {
		const struct ls_hdr *h = (const void *)(f->side + off);
		ls_writer_append(wr, h);
		off += (h->size + 7) & ~7u;
	}
	/* connections begun before the window: met mid-flight at its start */
	for (size_t i = 0; i < w.nc; i++) {
		struct conn_info *ci = ls_idmap_get(&f->conns, w.c[i].id);
		struct ls_ev_conn_adopt a = {.h = {.type = LS_EV_CONN_ADOPT, .size = sizeof(a)}};
		if (w.c[i].begun)
			continue;
		a.h.ts = d->from;
		a.conn_id = w.c[i].id;
		a.via = LS_ADOPT_TCP;
		a.state = 1;
		a.fd = ~0u;
		if (ci && ci->have_tuple)
			a.t = ci->t;
		a.copied_seq = a.rcv_nxt = w.c[i].rx_seq;
		a.write_seq = a.snd_una = w.c[i].tx_seq;
		ls_writer_append(wr, &a.h);
	}
	uint64_t nrec = 0;
	for (size_t off = 0; off < w.len;) {
		const struct ls_hdr *h = (const void *)(w.buf + off);
		ls_writer_append(wr, h);
		off += (h->size + 7) & ~7u;
		nrec++;
	}
	struct ls_rec_stats st = {.h = {.type = LS_REC_STATS, .size = sizeof(st), .ts = d->to}};
	st.start_ts = d->from;
	st.end_ts = d->to;
	st.events = nrec;
	e = ls_writer_close(wr, &st.h, NULL);
	free(w.buf);
	free(w.c);
	if (e) {
		fprintf(stderr, "latsplit record: flight recorder: writing %s: %s\n", path, strerror(-e));
		return -1;
	}
	snprintf(f->last_path, sizeof(f->last_path), "%s", path);
	fprintf(stderr, "latsplit record: flight recorder: request %llu matched; wrote %s "
			"(%.1f s, %llu events)\n",
		(unsigned long long)d->req_id, path, (d->to - d->from) / 1e9,
		(unsigned long long)nrec);
	return 0;
}

int ls_flight_tick(struct ls_flight *f, void (*checkpoint)(void *), void *ctx)
{
	int n = 0;

	if (!f->npend)
		return 0;
	if (checkpoint)
		checkpoint(ctx); /* stacks and symbols of the window, kept aside */
	for (int i = 0; i < f->npend; i++) {
		if (write_dump(f, &f->pend[i])) {
			f->write_errors++;
			continue;
		}
		f->dumps++;
		n++;
		if (!f->dump_at && !(f->dump_at = calloc(f->max_per_hour, sizeof(*f->dump_at))))
			continue; /* out of memory: the next trigger finds no room either */
		if (f->dump_n < f->max_per_hour) /* (always: request() kept to the rate) */
			f->dump_at[(f->dump_head + f->dump_n++) % f->max_per_hour] = f->now;
	}
	f->npend = 0;
	return n;
}

void ls_flight_free(struct ls_flight *f)
{
	free(f->dump_at);
	while (f->f0 < f->nf)
		drop_oldest(f);
	free(f->fr);
	free(f->blk);
	free(f->z);
	free(f->side);
	free(f->drops);
	for (size_t i = 0; i < f->procs.cap; i++)
		if (f->procs.keys[i])
			free(f->procs.vals[i]);
	ls_idmap_free(&f->procs);
	for (size_t i = 0; i < f->conns.cap; i++)
		if (f->conns.keys[i])
			free(f->conns.vals[i]);
	ls_idmap_free(&f->conns);
	memset(f, 0, sizeof(*f));
}
