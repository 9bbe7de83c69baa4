// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Perfetto trace writer (see perfetto.h). Field numbers from Perfetto's
 * protos (trace_packet.proto, track_event.proto, track_descriptor.proto,
 * clock_snapshot.proto, interned_data.proto, debug_annotation.proto).
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "idmap.h"
#include "perfetto.h"

/* TracePacket */
#define TP_CLOCK_SNAPSHOT 6
#define TP_TIMESTAMP 8
#define TP_SEQ_ID 10
#define TP_TRACK_EVENT 11
#define TP_INTERNED 12
#define TP_SEQ_FLAGS 13
#define TP_CLOCK_ID 58
#define TP_TRACK_DESCRIPTOR 60
#define SEQ_CLEARED 1
#define SEQ_NEEDS 2
/* TrackEvent */
#define TE_DEBUG 4
#define TE_TYPE 9
#define TE_NAME_IID 10
#define TE_TRACK 11
#define TE_COUNTER 30
#define TE_DCOUNTER 44
#define TE_FLOW 47
#define TE_FLOW_END 48
enum { T_BEGIN = 1, T_END = 2, T_INSTANT = 3, T_COUNTER = 4 };
/* TrackDescriptor */
#define TD_UUID 1
#define TD_NAME 2
#define TD_PROCESS 3
#define TD_THREAD 4
#define TD_PARENT 5
#define TD_COUNTER 8
#define CLOCK_BOOTTIME 6
#define CLOCK_MONOTONIC 3
#define SEQ 1 /* our one trusted_packet_sequence_id */

struct pb {
	unsigned char *b;
	size_t n, cap;
	size_t open[8];
	int depth;
};

static void put(struct pb *p, const void *d, size_t n)
{
	while (p->n + n > p->cap) {
		size_t nc = p->cap ? p->cap * 2 : 4096;
		unsigned char *q = realloc(p->b, nc);
		if (!q)
			abort();
		p->b = q;
		p->cap = nc;
	}
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

static void varint(struct pb *p, uint64_t v)
{
	unsigned char t[10];
	int n = 0;

	do {
		t[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	put(p, t, n);
}

static void f_var(struct pb *p, int field, uint64_t v)
{
	varint(p, (uint64_t)field << 3);
	varint(p, v);
}

static void f_fixed64(struct pb *p, int field, uint64_t v)
{
	unsigned char t[8];

	varint(p, (uint64_t)field << 3 | 1);
	for (int i = 0; i < 8; i++)
		t[i] = v >> (8 * i);
	put(p, t, 8);
}

static void f_double(struct pb *p, int field, double d)
{
	uint64_t v;

	memcpy(&v, &d, 8);
	f_fixed64(p, field, v);
}

static void f_str(struct pb *p, int field, const char *s)
{
	size_t n = strlen(s);

	varint(p, (uint64_t)field << 3 | 2);
	varint(p, n);
	put(p, s, n);
}

/* A nested message: its length, patched at end() as a 4-byte varint. */
static void begin(struct pb *p, int field)
{
	static const unsigned char pad[4] = {0x80, 0x80, 0x80, 0};

	varint(p, (uint64_t)field << 3 | 2);
	p->open[p->depth++] = p->n;
	put(p, pad, 4);
}

static void end(struct pb *p)
{
	size_t at = p->open[--p->depth], len = p->n - at - 4;

	for (int i = 0; i < 4; i++)
		p->b[at + i] = ((len >> (7 * i)) & 0x7f) | (i < 3 ? 0x80 : 0);
}

/* Every event of the trace is held until it is written (they are sorted
 * first), so this is kept small: 48 bytes, not 88. */
struct ev {
	uint64_t ts;
	uint64_t track;
	union {
		double value;  /* T_COUNTER */
		uint64_t flow; /* the others: a flow id, 0 for none */
	};
	struct ls_pf_arg *args;
	uint32_t seq; /* insertion order, for a stable sort (4 G events would need 192 GB) */
	uint32_t iid; /* the interned name's id (index in names + 1); 0: none */
	int16_t order; /* at one instant: ends (deepest first), instants, begins (outermost first) */
	uint8_t type;
	uint8_t nargs;
	bool flow_end;
};

struct ls_pf {
	struct pb desc;
	struct ls_idmap tracks; /* uuid -> (void *)1: described */
	struct ev *ev;
	size_t nev, capev, seq;
	char **names; /* interned event names; iid = index + 1 */
	size_t nnames, capnames;
	struct ls_idmap name_ids; /* hash of a name -> its iid (checked by strcmp) */
	uint64_t boottime, monotonic;
};

struct ls_pf *ls_pf_new(uint64_t boottime_ns, uint64_t monotonic_ns)
{
	struct ls_pf *pf = calloc(1, sizeof(*pf));

	if (pf) {
		pf->boottime = boottime_ns;
		pf->monotonic = monotonic_ns;
	}
	return pf;
}

bool ls_pf_has_track(const struct ls_pf *pf, uint64_t uuid)
{
	return ls_idmap_get(&pf->tracks, uuid) != NULL;
}

void ls_pf_track(struct ls_pf *pf, uint64_t uuid, uint64_t parent, enum ls_pf_track_kind kind,
		 const char *name, uint32_t pid, uint32_t tid)
{
	struct pb *p = &pf->desc;

	if (ls_idmap_put(&pf->tracks, uuid, (void *)1))
		abort();
	begin(p, 1); /* Trace.packet */
	f_var(p, TP_SEQ_ID, SEQ);
	begin(p, TP_TRACK_DESCRIPTOR);
	f_var(p, TD_UUID, uuid);
	if (parent)
		f_var(p, TD_PARENT, parent);
	if (kind == LS_PF_PROCESS) {
		begin(p, TD_PROCESS);
		f_var(p, 1, pid);
		f_str(p, 6, name); /* process_name */
		end(p);
	} else if (kind == LS_PF_THREAD) {
		begin(p, TD_THREAD);
		f_var(p, 1, pid);
		f_var(p, 2, tid);
		f_str(p, 5, name); /* thread_name */
		end(p);
	} else {
		f_str(p, TD_NAME, name);
		if (kind == LS_PF_COUNTER) {
			begin(p, TD_COUNTER);
			end(p);
		}
	}
	end(p);
	end(p);
}

/* FNV-1a, never 0 (the map's empty key) */
static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h ? h : 1;
}

/* The iid of name, interned when new: by hash, so a trace with thousands of
 * distinct kernel names is not a scan per event (a hash shared by two names
 * falls back to the scan). */
static uint32_t intern(struct ls_pf *pf, const char *name)
{
	uint64_t h = name_hash(name);
	uintptr_t iid = (uintptr_t)ls_idmap_get(&pf->name_ids, h);

	if (iid && !strcmp(pf->names[iid - 1], name))
		return (uint32_t)iid;
	if (iid) /* another name with this hash */
		for (size_t i = 0; i < pf->nnames; i++)
			if (!strcmp(pf->names[i], name))
				return (uint32_t)(i + 1);
	GROW(pf->names, pf->nnames, pf->capnames);
	pf->names[pf->nnames] = strdup(name);
	if (!pf->names[pf->nnames])
		abort();
	pf->nnames++;
	if (!iid && ls_idmap_put(&pf->name_ids, h, (void *)(uintptr_t)pf->nnames))
		abort();
	return (uint32_t)pf->nnames;
}

static struct ev *add(struct ls_pf *pf, uint64_t ts, int type, uint64_t track, int order)
{
	struct ev *e;

	GROW(pf->ev, pf->nev, pf->capev);
	e = &pf->ev[pf->nev++];
	memset(e, 0, sizeof(*e));
	e->ts = ts;
	e->type = type;
	e->track = track;
	e->order = order;
	e->seq = (uint32_t)pf->seq++;
	return e;
}

static struct ls_pf_arg *copy_args(const struct ls_pf_arg *a, int n)
{
	struct ls_pf_arg *c;

	if (!n)
		return NULL;
	c = calloc(n, sizeof(*c));
	if (!c)
		abort();
	for (int i = 0; i < n; i++) {
		c[i] = a[i];
		c[i].name = strdup(a[i].name);
		c[i].str = a[i].str ? strdup(a[i].str) : NULL;
	}
	return c;
}

void ls_pf_slice(struct ls_pf *pf, uint64_t track, uint64_t b, uint64_t e, const char *name,
		 int depth, const struct ls_pf_arg *args, int nargs, uint64_t flow,
		 bool flow_terminates)
{
	struct ev *x;

	if (e < b)
		e = b;
	x = add(pf, b, T_BEGIN, track, 2000 + depth);
	x->iid = intern(pf, name);
	nargs = nargs < UINT8_MAX ? nargs : UINT8_MAX;
	x->args = copy_args(args, nargs);
	x->nargs = (uint8_t)nargs;
	x->flow = flow;
	x->flow_end = flow_terminates;
	add(pf, e, T_END, track, 1000 - depth);
}

void ls_pf_instant(struct ls_pf *pf, uint64_t track, uint64_t ts, const char *name,
		   const struct ls_pf_arg *args, int nargs, uint64_t flow)
{
	struct ev *x = add(pf, ts, T_INSTANT, track, 1500);

	x->iid = intern(pf, name);
	nargs = nargs < UINT8_MAX ? nargs : UINT8_MAX;
	x->args = copy_args(args, nargs);
	x->nargs = (uint8_t)nargs;
	x->flow = flow;
}

void ls_pf_counter(struct ls_pf *pf, uint64_t track, uint64_t ts, double value)
{
	add(pf, ts, T_COUNTER, track, 1500)->value = value;
}

static int ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int ls_pf_write(struct ls_pf *pf, FILE *out, size_t *nevents)
{
	struct pb p = {0};
	bool *sent = calloc(pf->nnames + 1, sizeof(bool));

	if (!sent)
		abort();
	/* the clocks: our timestamps are CLOCK_MONOTONIC */
	begin(&p, 1);
	f_var(&p, TP_SEQ_ID, SEQ);
	f_var(&p, TP_SEQ_FLAGS, SEQ_CLEARED);
	begin(&p, TP_CLOCK_SNAPSHOT);
	begin(&p, 1);
	f_var(&p, 1, CLOCK_BOOTTIME);
	f_var(&p, 2, pf->boottime);
	end(&p);
	begin(&p, 1);
	f_var(&p, 1, CLOCK_MONOTONIC);
	f_var(&p, 2, pf->monotonic);
	end(&p);
	end(&p);
	end(&p);
	put(&p, pf->desc.b, pf->desc.n);
	if (pf->nev)
		qsort(pf->ev, pf->nev, sizeof(*pf->ev), ev_cmp);
	for (size_t i = 0; i < pf->nev; i++) {
		const struct ev *e = &pf->ev[i];
		size_t iid = e->iid;
		begin(&p, 1);
		f_var(&p, TP_TIMESTAMP, e->ts);
		f_var(&p, TP_CLOCK_ID, CLOCK_MONOTONIC);
		f_var(&p, TP_SEQ_ID, SEQ);
		f_var(&p, TP_SEQ_FLAGS, SEQ_NEEDS);
		if (iid && !sent[iid]) { /* interned with its first use */
			begin(&p, TP_INTERNED);
			begin(&p, 2); /* event_names */
			f_var(&p, 1, iid);
			f_str(&p, 2, pf->names[iid - 1]);
			end(&p);
			end(&p);
			sent[iid] = true;
		}
		begin(&p, TP_TRACK_EVENT);
		f_var(&p, TE_TYPE, e->type);
		f_var(&p, TE_TRACK, e->track);
		if (iid)
			f_var(&p, TE_NAME_IID, iid);
		if (e->type == T_COUNTER)
			f_double(&p, TE_DCOUNTER, e->value);
		for (int k = 0; k < e->nargs; k++) {
			begin(&p, TE_DEBUG);
			f_str(&p, 10, e->args[k].name);
			if (e->args[k].str)
				f_str(&p, 6, e->args[k].str);
			else
				f_var(&p, 3, e->args[k].num);
			end(&p);
		}
		if (e->type != T_COUNTER && e->flow)
			f_fixed64(&p, e->flow_end ? TE_FLOW_END : TE_FLOW, e->flow);
		end(&p);
		end(&p);
		if (p.n > (1u << 20)) {
			if (fwrite(p.b, 1, p.n, out) != p.n)
				goto fail;
			p.n = 0;
		}
	}
	if (fwrite(p.b, 1, p.n, out) != p.n)
		goto fail;
	if (nevents)
		*nevents = pf->nev;
	free(p.b);
	free(sent);
	return 0;
fail:
	free(p.b);
	free(sent);
	return -1;
}

void ls_pf_free(struct ls_pf *pf)
{
	if (!pf)
		return;
	for (size_t i = 0; i < pf->nev; i++) {
		for (int k = 0; k < pf->ev[i].nargs; k++) {
			free((char *)pf->ev[i].args[k].name);
			free((char *)pf->ev[i].args[k].str);
		}
		free(pf->ev[i].args);
	}
	free(pf->ev);
	for (size_t i = 0; i < pf->nnames; i++)
		free(pf->names[i]);
	free(pf->names);
	ls_idmap_free(&pf->name_ids);
	ls_idmap_free(&pf->tracks);
	free(pf->desc.b);
	free(pf);
}
