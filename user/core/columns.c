// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The column transform of capture frames: see columns.h. */
#include "columns.h"

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "latsplit/events.h"

#define MAX_GROUPS 255
#define SLOTS 1024 /* open-addressing table of (type, size) keys */
#define TS_OFF offsetof(struct ls_hdr, ts)

struct group {
	uint16_t type, size;
	uint32_t count;
	size_t base; /* first byte of its columns in the encoded frame */
	size_t bits; /* its constant-column bitmap's first byte among the
		      * frame's (size / 8 bytes: sizes are multiples of 8) */
	uint32_t next; /* records placed so far */
};

static uint16_t rd16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

size_t ls_columns_bound(size_t len, uint32_t nrec)
{
	return len + 2 + (size_t)MAX_GROUPS * 8 + nrec; /* elided: shorter */
}

/* The group of key, added when new; -1 when the table is full. */
static int group_of(uint32_t *keys, unsigned char *gidx, int *ng, struct group *g, uint16_t type,
		    uint16_t size)
{
	uint32_t key = (uint32_t)type << 16 | size, h = (key * 2654435761u) >> 22;

	for (;; h = (h + 1) & (SLOTS - 1)) {
		if (keys[h] == key + 1)
			return gidx[h];
		if (keys[h])
			continue;
		if (*ng == MAX_GROUPS)
			return -1;
		keys[h] = key + 1;
		gidx[h] = (unsigned char)*ng;
		g[*ng] = (struct group){.type = type, .size = size};
		return (*ng)++;
	}
}

static uint64_t ld64le(const unsigned char *p)
{
	return le64toh(rd64(p));
}

static void st64le(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

/* Swaps the bits of a under mask m << s with those of b under m. */
#define SWAP_BLOCKS(a, b, s, m)                                                                  \
	do {                                                                                     \
		uint64_t t_ = (((a) >> (s)) ^ (b)) & (m);                                        \
		(a) ^= t_ << (s);                                                                \
		(b) ^= t_;                                                                       \
	} while (0)

/* r[j]'s byte b becomes r[b]'s byte j (an 8x8 byte matrix transposed:
 * 4-byte, then 2-byte, then 1-byte blocks swapped across the diagonal). */
static inline void transpose8(uint64_t r[8])
{
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++)
		SWAP_BLOCKS(r[j], r[j + 4], 32, 0x00000000ffffffffull);
#pragma GCC unroll 4
	for (int j = 0; j < 8; j += (j & 1) ? 3 : 1)
		SWAP_BLOCKS(r[j], r[j + 2], 16, 0x0000ffff0000ffffull);
#pragma GCC unroll 4
	for (int j = 0; j < 8; j += 2)
		SWAP_BLOCKS(r[j], r[j + 1], 8, 0x00ff00ff00ff00ffull);
}

/* Places each group's constant-column bitmap (LS_FRAME_F_CONST): size / 8
 * bytes each, in group order. Returns the bytes of them all. */
static size_t place_bitmaps(struct group *g, int ng)
{
	size_t n = 0;

	for (int i = 0; i < ng; i++) {
		g[i].bits = n;
		n += g[i].size / 8;
	}
	return n;
}

/* Is column i of group x kept as one byte (its bit in the bitmaps)? */
static inline bool one_byte(const unsigned char *bits, const struct group *x, size_t i)
{
	return bits[x->bits + i / 8] >> (i % 8) & 1;
}

/* Word i of eight records (src, their indices o[0..8)) into r[]: a
 * record's ts word is its delta (dts). */
static inline void load8(uint64_t r[8], const unsigned char *const src[8], const uint32_t *o,
			 const uint64_t *dts, size_t i)
{
	if (i == TS_OFF) {
		for (int j = 0; j < 8; j++)
			r[j] = dts[o[j]];
	} else {
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++)
			r[j] = ld64le(src[j] + i);
	}
}

/* Byte `at` of record k (at rec), its ts word's bytes those of its delta. */
static inline unsigned char byte_of(const unsigned char *rec, const uint64_t *dts, uint32_t k, size_t at)
{
	return at - TS_OFF < 8 ? (unsigned char)(dts[k] >> 8 * (at - TS_OFF)) : rec[at];
}

/*
 * The column transform, its constant columns elided when `elide` (and that
 * makes the frame shorter: *elided says). A group's constant columns are
 * found first (each word of every record XORed with its first record's);
 * a word whose eight columns are all constant is never transposed, and
 * with `elide` a constant column is written once. Columns go where pos
 * says: i * count from the group's base when whole.
 */
static size_t encode(const unsigned char *in, size_t len, uint32_t nrec, unsigned char *out,
		     bool elide, bool *elided)
{
	uint32_t keys[SLOTS] = {0};
	unsigned char gidx[SLOTS];
	struct group g[MAX_GROUPS];
	unsigned char *idx = out + 2;
	uint32_t *off, *ord, start[MAX_GROUPS];
	uint64_t *dts, prev = 0, *diff = NULL;
	size_t p = 0, base, hdr, whole, kept = 0, bm, *pos = NULL, maxsize = 0;
	unsigned char *bits = NULL;
	int ng = 0;

	*elided = false;
	if (!nrec || len > UINT32_MAX)
		return 0;
	/* pass 1: each record's group, and the groups' sizes */
	for (uint32_t k = 0; k < nrec; k++) {
		if (len - p < sizeof(struct ls_hdr))
			return 0;
		uint16_t type = rd16(in + p), size = rd16(in + p + 2);
		if (size < sizeof(struct ls_hdr) || (size & 7) || size > len - p)
			return 0;
		int gi = group_of(keys, gidx, &ng, g, type, size);
		if (gi < 0)
			return 0;
		idx[k] = (unsigned char)gi;
		g[gi].count++;
		p += size;
	}
	if (p != len)
		return 0;
	dts = malloc((size_t)nrec * (sizeof(*dts) + 2 * sizeof(*off)));
	if (!dts)
		return 0; /* the frame goes plain */
	off = (uint32_t *)(dts + nrec);
	ord = off + nrec;
	out[0] = (unsigned char)ng;
	out[1] = 0;
	base = 2 + (size_t)nrec;
	for (int i = 0, n = 0; i < ng; i++) {
		memcpy(out + base + 8 * i, &g[i].type, 2);
		memcpy(out + base + 8 * i + 2, &g[i].size, 2);
		memcpy(out + base + 8 * i + 4, &g[i].count, 4);
		start[i] = (uint32_t)n;
		n += g[i].count;
		if (g[i].size > maxsize)
			maxsize = g[i].size;
	}
	hdr = base += 8 * (size_t)ng;
	for (int i = 0; i < ng; i++) {
		g[i].base = base;
		base += (size_t)g[i].size * g[i].count;
	}
	whole = base;
	/* each record's place, its group's records in frame order, and its ts
	 * as the difference to the frame's previous record's */
	p = 0;
	for (uint32_t k = 0; k < nrec; k++) {
		struct group *x = &g[idx[k]];
		uint64_t ts = ld64le(in + p + TS_OFF);

		off[k] = (uint32_t)p;
		ord[start[idx[k]] + x->next++] = k;
		dts[k] = ts - prev;
		prev = ts;
		p += x->size;
	}
	/* which columns are one byte throughout their group (one record: none
	 * worth it), by word: the bytes where any record differs from the
	 * group's first */
	bm = place_bitmaps(g, ng);
	diff = malloc(bm * sizeof(*diff)); /* a word per 8 columns, as a bitmap byte */
	bits = calloc(1, bm ? bm : 1);
	pos = malloc(maxsize * sizeof(*pos));
	if (!diff || !bits || !pos) {
		free(diff), free(bits), free(pos), free(dts);
		return 0;
	}
	for (int gi = 0; gi < ng; gi++) {
		const struct group *x = &g[gi];
		uint32_t k0 = ord[start[gi]];
		const unsigned char *first = in + off[k0];
		uint64_t *d = diff + x->bits;

		for (size_t i = 0; i < x->size / 8; i++)
			d[i] = x->count > 1 ? 0 : ~0ull;
		for (uint32_t t = 1; t < x->count; t++) {
			uint32_t k = ord[start[gi] + t];
			const unsigned char *rec = in + off[k];

			for (size_t i = 0; i < x->size; i += 8)
				d[i / 8] |= i == TS_OFF ? dts[k] ^ dts[k0] : ld64le(rec + i) ^ ld64le(first + i);
		}
		for (size_t i = 0; i < x->size; i++) {
			if (!(d[i / 8] >> 8 * (i % 8) & 0xff)) {
				bits[x->bits + i / 8] |= (unsigned char)(1u << (i % 8));
				kept += 1;
			} else {
				kept += x->count;
			}
		}
	}
	if (elide && hdr + kept + bm < whole)
		*elided = true;
	/* pass 2: each group's records into its columns, eight records by
	 * eight bytes at a time (sizes are multiples of 8 and TS_OFF is 8:
	 * the ts is one of those words); the last count % 8 byte by byte;
	 * constant columns once */
	base = hdr;
	for (int gi = 0; gi < ng; gi++) {
		const struct group *x = &g[gi];
		const unsigned char *gb = bits + x->bits;
		size_t c = x->count, t = 0;
		uint32_t k0 = ord[start[gi]];

		for (size_t i = 0; i < x->size; i++) {
			bool one = one_byte(bits, x, i);

			pos[i] = base;
			if (one && *elided)
				out[base] = byte_of(in + off[k0], dts, k0, i);
			else if (one)
				memset(out + base, byte_of(in + off[k0], dts, k0, i), c);
			base += one && *elided ? 1 : c;
		}
		for (; t + 8 <= c; t += 8) {
			const uint32_t *o = ord + start[gi] + t;
			const unsigned char *src[8];
			uint64_t r[8];

			for (int j = 0; j < 8; j++)
				src[j] = in + off[o[j]];
			for (size_t i = 0; i < x->size; i += 8) {
				unsigned char one = gb[i / 8];

				if (one == 0xff)
					continue; /* every column of the word: written */
				load8(r, src, o, dts, i);
				transpose8(r);
#pragma GCC unroll 8
				for (int b = 0; b < 8; b++)
					if (!(one >> b & 1))
						st64le(out + pos[i + b] + t, r[b]);
			}
		}
		for (; t < c; t++) {
			uint32_t k = ord[start[gi] + t];
			const unsigned char *rec = in + off[k];

			for (size_t i = 0; i < x->size; i++)
				if (!one_byte(bits, x, i))
					out[pos[i] + t] = byte_of(rec, dts, k, i);
		}
	}
	if (*elided) {
		memcpy(out + base, bits, bm);
		base += bm;
	}
	free(diff);
	free(bits);
	free(pos);
	free(dts);
	return base;
}

size_t ls_columns_encode(const unsigned char *in, size_t len, uint32_t nrec, unsigned char *out)
{
	bool elided;

	return encode(in, len, nrec, out, false, &elided);
}

size_t ls_columns_encode_elided(const unsigned char *in, size_t len, uint32_t nrec,
				unsigned char *out, bool *elided)
{
	return encode(in, len, nrec, out, true, elided);
}

/* Parses the group table into g (each group's base as if its columns were
 * whole, from *hdrp, the table's end); the records' length, 0 when damaged. */
static size_t parse_head(const unsigned char *in, size_t len, uint32_t nrec, struct group *g,
			 int *ngp, size_t *hdrp)
{
	size_t hdr, total = 0, sum = 0;
	int ng;

	if (len < 2 || !nrec)
		return 0;
	ng = rd16(in);
	if (!ng || ng > MAX_GROUPS)
		return 0;
	hdr = 2 + (size_t)nrec + 8 * (size_t)ng;
	if (len < hdr)
		return 0;
	for (int i = 0; i < ng; i++) {
		const unsigned char *q = in + 2 + nrec + 8 * (size_t)i;
		g[i] = (struct group){.type = rd16(q), .size = rd16(q + 2), .count = rd32(q + 4)};
		if (g[i].size < sizeof(struct ls_hdr) || (g[i].size & 7) || g[i].count > nrec)
			return 0;
		g[i].base = hdr + total;
		total += (size_t)g[i].size * g[i].count;
		sum += g[i].count;
	}
	if (sum != nrec)
		return 0;
	*ngp = ng;
	*hdrp = hdr;
	return total;
}

/* Parses the group table into g; the decoded length, 0 when damaged. */
static size_t parse(const unsigned char *in, size_t len, uint32_t nrec, struct group *g, int *ngp)
{
	size_t hdr, total = parse_head(in, len, nrec, g, ngp, &hdr);

	return total && total == len - hdr ? total : 0;
}

size_t ls_columns_decoded_len(const unsigned char *in, size_t len, uint32_t nrec)
{
	struct group g[MAX_GROUPS];
	int ng;

	return parse(in, len, nrec, g, &ng);
}

int ls_columns_decode(const unsigned char *in, size_t len, uint32_t nrec, unsigned char *out,
		      size_t outlen)
{
	struct group g[MAX_GROUPS];
	const unsigned char *idx = in + 2;
	uint32_t *off, *ord, start[MAX_GROUPS];
	size_t o = 0;
	uint64_t prev = 0;
	int ng;

	if (parse(in, len, nrec, g, &ng) != outlen || !outlen || outlen > UINT32_MAX)
		return -EBADMSG;
	off = malloc(2 * (size_t)nrec * sizeof(*off));
	if (!off)
		return -ENOMEM;
	ord = off + nrec;
	for (int i = 0, n = 0; i < ng; i++) {
		start[i] = (uint32_t)n;
		n += g[i].count;
	}
	/* pass 1: where each record goes, each group's records in frame order */
	for (uint32_t k = 0; k < nrec; k++) {
		struct group *x = idx[k] < ng ? &g[idx[k]] : NULL;

		if (!x || x->next >= x->count || x->size > outlen - o) {
			free(off);
			return -EBADMSG;
		}
		off[k] = (uint32_t)o;
		ord[start[idx[k]] + x->next++] = k;
		o += x->size;
	}
	/* pass 2: the columns back into records, eight by eight bytes at a
	 * time as ls_columns_encode wrote them (the transpose is its own
	 * inverse); the last count % 8 byte by byte */
	for (int gi = 0; gi < ng; gi++) {
		const struct group *x = &g[gi];
		size_t c = x->count, t = 0;
		const unsigned char *cols = in + x->base;

		for (; t + 8 <= c; t += 8) {
			unsigned char *dst[8];
			uint64_t r[8];

			for (int j = 0; j < 8; j++)
				dst[j] = out + off[ord[start[gi] + t + j]];
			for (size_t i = 0; i < x->size; i += 8) {
#pragma GCC unroll 8
				for (int b = 0; b < 8; b++)
					r[b] = ld64le(cols + (i + b) * c + t);
				transpose8(r);
#pragma GCC unroll 8
				for (int j = 0; j < 8; j++)
					st64le(dst[j] + i, r[j]);
			}
		}
		for (; t < c; t++) {
			unsigned char *rec = out + off[ord[start[gi] + t]];

			for (size_t i = 0; i < x->size; i++)
				rec[i] = cols[i * c + t];
		}
	}
	free(off);
	/* pass 3: the timestamps, in frame order; every record's own kind */
	o = 0;
	for (uint32_t k = 0; k < nrec; k++) {
		const struct group *x = &g[idx[k]];
		unsigned char *rec = out + o;
		uint64_t ts = prev + ld64le(rec + TS_OFF);

		st64le(rec + TS_OFF, ts);
		prev = ts;
		if (rd16(rec) != x->type || rd16(rec + 2) != x->size)
			return -EBADMSG;
		o += x->size;
	}
	return 0;
}

/* Constant-column elision: see columns.h. */

/* The whole columns' length of an elided frame (its header checked, its
 * length what its bitmaps say), 0 when damaged; *bitsp: its bitmaps. */
static size_t elided_len(const unsigned char *in, size_t len, uint32_t nrec, struct group *g,
			 int *ngp, const unsigned char **bitsp)
{
	size_t hdr, bm, kept = 0, total = parse_head(in, len, nrec, g, ngp, &hdr);
	const unsigned char *bits;

	if (!total)
		return 0;
	bm = place_bitmaps(g, *ngp);
	if (len - hdr < bm)
		return 0;
	bits = in + len - bm;
	for (int gi = 0; gi < *ngp; gi++)
		for (size_t i = 0; i < g[gi].size; i++)
			kept += one_byte(bits, &g[gi], i) ? 1 : g[gi].count;
	if (hdr + kept + bm != len)
		return 0;
	*bitsp = bits;
	return hdr + total;
}

size_t ls_columns_expanded_len(const unsigned char *in, size_t len, uint32_t nrec)
{
	struct group g[MAX_GROUPS];
	const unsigned char *bits;
	int ng;

	return elided_len(in, len, nrec, g, &ng, &bits);
}

int ls_columns_expand(const unsigned char *in, size_t len, uint32_t nrec, unsigned char *out,
		      size_t outlen)
{
	struct group g[MAX_GROUPS];
	const unsigned char *bits;
	size_t r, w;
	int ng;

	if (!outlen || elided_len(in, len, nrec, g, &ng, &bits) != outlen)
		return -EBADMSG;
	r = w = g[0].base;
	memcpy(out, in, w);
	for (int gi = 0; gi < ng; gi++) {
		size_t c = g[gi].count;

		for (size_t i = 0; i < g[gi].size; i++, w += c) {
			if (one_byte(bits, &g[gi], i)) {
				memset(out + w, in[r], c);
				r += 1;
			} else {
				memcpy(out + w, in + r, c);
				r += c;
			}
		}
	}
	return 0;
}

/* Field prediction: see columns.h. */

#define PRED_SLOTS 4096 /* open-addressing tables, at most LS_PREDICT_KEYS used */

/* An open-addressing set of keys: a slot each, for the table beside it. */
struct pred_keys {
	uint64_t key[PRED_SLOTS];
	bool used[PRED_SLOTS];
	int n;
};

struct conn_pred {
	uint32_t stream_at[2]; /* seq + bytes of the last sock_io, by dir */
	uint32_t rcv_nxt, snd_una, srtt_us, snd_wnd, snd_cwnd; /* the last tcp_probe's */
};

struct who {
	uint32_t pid, prio;
	char comm[LS_COMM_LEN];
};

struct thread_pred {
	struct who who;           /* what the last sched_switch said of it */
	uint32_t waker_pid, waker_tid; /* who woke it last (a folded wakeup, ABI 7) */
	uint64_t conn_id, skaddr; /* its last sock_io's socket */
	uint32_t fd;
};

struct pred_state {
	struct pred_keys conn_ids, tids;
	struct conn_pred conn[PRED_SLOTS];
	struct thread_pred thread[PRED_SLOTS];
	struct conn_pred conn_spare; /* a key past LS_PREDICT_KEYS: zeros, every time */
	struct thread_pred thread_spare;
};

/* The slot of key, taken when new; -1 once LS_PREDICT_KEYS are taken. */
static int slot_of(struct pred_keys *k, uint64_t key)
{
	for (uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 52);; h = (h + 1) & (PRED_SLOTS - 1)) {
		if (k->used[h] && k->key[h] == key)
			return (int)h;
		if (k->used[h])
			continue;
		if (k->n == LS_PREDICT_KEYS)
			return -1;
		k->n++;
		k->used[h] = true;
		k->key[h] = key;
		return (int)h;
	}
}

static struct conn_pred *conn_of(struct pred_state *s, uint64_t conn_id)
{
	int i = slot_of(&s->conn_ids, conn_id);

	if (i >= 0)
		return &s->conn[i];
	memset(&s->conn_spare, 0, sizeof(s->conn_spare));
	return &s->conn_spare;
}

static struct thread_pred *thread_of(struct pred_state *s, uint32_t tid)
{
	int i = slot_of(&s->tids, tid);

	if (i >= 0)
		return &s->thread[i];
	memset(&s->thread_spare, 0, sizeof(s->thread_spare));
	return &s->thread_spare;
}

/* *f becomes its difference to pred, or (decode) back; returns its value. */
static uint32_t diff32(uint32_t *f, uint32_t pred, bool decode)
{
	uint32_t v = decode ? *f + pred : *f;

	*f = decode ? v : v - pred;
	return v;
}

/* XORs a sock_io's socket with the thread's last one's. */
static void socket_xor(struct ls_ev_sock_io *e, const struct thread_pred *t)
{
	e->conn_id ^= t->conn_id;
	e->skaddr ^= t->skaddr;
	e->fd ^= t->fd;
}

static void predict_sock_io(struct ls_ev_sock_io *e, uint16_t size, struct pred_state *s,
			    bool decode, int version)
{
	struct thread_pred *t = thread_of(s, e->h.tid), was = *t;
	struct conn_pred *c;

	if (decode)
		socket_xor(e, &was);
	t->conn_id = e->conn_id;
	t->skaddr = e->skaddr;
	t->fd = e->fd;
	c = conn_of(s, e->conn_id);
	e->ts_enter = e->h.ts - e->ts_enter; /* its own inverse */
	c->stream_at[e->dir & 1] = diff32(&e->seq, c->stream_at[e->dir & 1], decode) + e->bytes;
	/* v5: a folded arrival (arrive_dt is the key) acknowledges what the
	 * connection wrote so far, and its RTT is the connection's last */
	if (version >= 5 && size >= sizeof(*e) && e->arrive_dt) {
		diff32(&e->arrive_ack, c->stream_at[1], decode);
		c->srtt_us = diff32(&e->arrive_srtt_us, c->srtt_us, decode);
	}
	if (!decode)
		socket_xor(e, &was);
}

/* The fields that follow from others of the record (which hold their own
 * values whenever this runs). */
static void probe_within(struct ls_ev_tcp_probe *e, bool decode)
{
	diff32(&e->seq, e->rcv_nxt, decode);
	diff32(&e->ack_seq, e->snd_una, decode);
	diff32(&e->snd_nxt, e->snd_una, decode);
}

static void predict_tcp_probe(struct ls_ev_tcp_probe *e, struct pred_state *s, bool decode)
{
	struct conn_pred *c = conn_of(s, e->conn_id);

	if (!decode)
		probe_within(e, false);
	c->rcv_nxt = diff32(&e->rcv_nxt, c->rcv_nxt, decode);
	c->snd_una = diff32(&e->snd_una, c->snd_una, decode);
	c->srtt_us = diff32(&e->srtt_us, c->srtt_us, decode);
	c->snd_wnd = diff32(&e->snd_wnd, c->snd_wnd, decode);
	c->snd_cwnd = diff32(&e->snd_cwnd, c->snd_cwnd, decode);
	if (decode)
		probe_within(e, true);
}

/* XORs prev's and next's pid, prio and comm with what was said of them. */
static void switch_xor(struct ls_ev_sched_switch *e, const struct who *p, const struct who *n)
{
	e->h.pid ^= p->pid;
	e->prev_prio ^= p->prio;
	e->next_pid ^= n->pid;
	e->next_prio ^= n->prio;
	for (int i = 0; i < LS_COMM_LEN; i++) {
		e->prev_comm[i] ^= p->comm[i];
		e->next_comm[i] ^= n->comm[i];
	}
}

static void predict_sched_switch(struct ls_ev_sched_switch *e, uint16_t size, struct pred_state *s,
				 bool decode)
{
	struct thread_pred *p = thread_of(s, e->h.tid), *n = thread_of(s, e->next_tid);
	struct who was_p = p->who, was_n = n->who; /* p may be n */

	if (decode)
		switch_xor(e, &was_p, &was_n);
	p->who = (struct who){.pid = e->h.pid, .prio = e->prev_prio};
	memcpy(p->who.comm, e->prev_comm, LS_COMM_LEN);
	n->who = (struct who){.pid = e->next_pid, .prio = e->next_prio};
	memcpy(n->who.comm, e->next_comm, LS_COMM_LEN);
	if (!decode)
		switch_xor(e, &was_p, &was_n);
	/* ABI 7: a folded wakeup's waker XORed with next's last waker (a
	 * thread is mostly woken by the same one); next_woken_dt is the key */
	if (size >= sizeof(*e) && e->next_woken_dt) {
		uint32_t wp = e->waker_pid, wt = e->waker_tid;

		e->waker_pid ^= n->waker_pid;
		e->waker_tid ^= n->waker_tid;
		if (decode) {
			wp = e->waker_pid;
			wt = e->waker_tid;
		}
		n->waker_pid = wp;
		n->waker_tid = wt;
	}
}

static int predict(unsigned char *recs, size_t len, uint32_t nrec, bool decode, int version)
{
	struct pred_state *s;
	size_t p = 0;

	for (uint32_t k = 0; k < nrec; k++) {
		uint16_t size;

		/* the block was filled on another CPU: its lines come over while
		 * the sizes are walked, not one at a time behind each size */
		__builtin_prefetch(recs + p + 1024);
		if (len - p < sizeof(struct ls_hdr))
			return decode ? -EBADMSG : -EINVAL;
		size = rd16(recs + p + 2);
		if (size < sizeof(struct ls_hdr) || (size & 7) || size > len - p)
			return decode ? -EBADMSG : -EINVAL;
		p += size;
	}
	if (p != len)
		return decode ? -EBADMSG : -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (p = 0; p < len; p += rd16(recs + p + 2)) {
		void *rec = recs + p;
		uint16_t type = rd16(recs + p), size = rd16(recs + p + 2);

		/* (only the fields ABI 4 and 5 have too: a frame is decoded
		 * before its records are widened) */
		if (type == LS_EV_SOCK_IO && size >= LS_SOCK_IO_SIZE_V5)
			predict_sock_io(rec, size, s, decode, version);
		else if (type == LS_EV_TCP_PROBE && size >= sizeof(struct ls_ev_tcp_probe))
			predict_tcp_probe(rec, s, decode);
		else if (type == LS_EV_SCHED_SWITCH && size >= LS_SCHED_SWITCH_SIZE_V6)
			predict_sched_switch(rec, size, s, decode);
	}
	free(s);
	return 0;
}

int ls_predict_encode(unsigned char *recs, size_t len, uint32_t nrec)
{
	return predict(recs, len, nrec, false, LS_PREDICT_VERSION);
}

int ls_predict_decode(unsigned char *recs, size_t len, uint32_t nrec, int version)
{
	return predict(recs, len, nrec, true, version);
}
