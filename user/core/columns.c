// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The column transform of capture frames: see columns.h. */
#include "columns.h"

#include <endian.h>
#include <errno.h>
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
	return len + 2 + (size_t)MAX_GROUPS * 8 + nrec;
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

size_t ls_columns_encode(const unsigned char *in, size_t len, uint32_t nrec, unsigned char *out)
{
	uint32_t keys[SLOTS] = {0};
	unsigned char gidx[SLOTS];
	struct group g[MAX_GROUPS];
	unsigned char *idx = out + 2;
	uint32_t *off, *ord, start[MAX_GROUPS];
	uint64_t *dts, prev = 0;
	size_t p = 0, base;
	int ng = 0;

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
	}
	base += 8 * (size_t)ng;
	for (int i = 0; i < ng; i++) {
		g[i].base = base;
		base += (size_t)g[i].size * g[i].count;
	}
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
	/* pass 2: each group's records into its columns, eight records by
	 * eight bytes at a time (sizes are multiples of 8 and TS_OFF is 8:
	 * the ts is one of those words); the last count % 8 byte by byte */
	for (int gi = 0; gi < ng; gi++) {
		const struct group *x = &g[gi];
		size_t c = x->count, t = 0;
		unsigned char *cols = out + x->base;

		for (; t + 8 <= c; t += 8) {
			const unsigned char *src[8];
			uint64_t r[8];

			for (int j = 0; j < 8; j++)
				src[j] = in + off[ord[start[gi] + t + j]];
			for (size_t i = 0; i < x->size; i += 8) {
				if (i == TS_OFF) {
					for (int j = 0; j < 8; j++)
						r[j] = dts[ord[start[gi] + t + j]];
				} else {
#pragma GCC unroll 8
					for (int j = 0; j < 8; j++)
						r[j] = ld64le(src[j] + i);
				}
				transpose8(r);
#pragma GCC unroll 8
				for (int b = 0; b < 8; b++)
					st64le(cols + (i + b) * c + t, r[b]);
			}
		}
		for (; t < c; t++) {
			uint32_t k = ord[start[gi] + t];
			const unsigned char *rec = in + off[k];

			for (size_t i = 0; i < x->size; i++)
				cols[i * c + t] = i - TS_OFF < 8 ? (unsigned char)(dts[k] >> 8 * (i - TS_OFF))
								  : rec[i];
		}
	}
	free(dts);
	return base;
}

/* Parses the group table into g; the decoded length, 0 when damaged. */
static size_t parse(const unsigned char *in, size_t len, uint32_t nrec, struct group *g, int *ngp)
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
	if (sum != nrec || total != len - hdr)
		return 0;
	*ngp = ng;
	return total;
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
