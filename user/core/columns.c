// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The column transform of capture frames: see columns.h. */
#include "columns.h"

#include <errno.h>
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

size_t ls_columns_encode(const unsigned char *in, size_t len, uint32_t nrec, unsigned char *out)
{
	uint32_t keys[SLOTS] = {0};
	unsigned char gidx[SLOTS];
	struct group g[MAX_GROUPS];
	unsigned char *idx = out + 2;
	size_t p = 0, base;
	uint64_t prev = 0;
	int ng = 0;

	if (!nrec)
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
	out[0] = (unsigned char)ng;
	out[1] = 0;
	base = 2 + (size_t)nrec;
	for (int i = 0; i < ng; i++) {
		memcpy(out + base + 8 * i, &g[i].type, 2);
		memcpy(out + base + 8 * i + 2, &g[i].size, 2);
		memcpy(out + base + 8 * i + 4, &g[i].count, 4);
	}
	base += 8 * (size_t)ng;
	for (int i = 0; i < ng; i++) {
		g[i].base = base;
		base += (size_t)g[i].size * g[i].count;
	}
	/* pass 2: each record's bytes into its group's columns, ts as a delta */
	p = 0;
	for (uint32_t k = 0; k < nrec; k++) {
		struct group *x = &g[idx[k]];
		unsigned char *col = out + x->base + x->next++;
		const unsigned char *rec = in + p;
		uint64_t ts = rd64(rec + TS_OFF), d = ts - prev;
		unsigned char db[8];
		size_t stride = x->count;

		prev = ts;
		memcpy(db, &d, 8);
		for (size_t i = 0; i < TS_OFF; i++)
			col[i * stride] = rec[i];
		for (size_t i = 0; i < 8; i++)
			col[(TS_OFF + i) * stride] = db[i];
		for (size_t i = TS_OFF + 8; i < x->size; i++)
			col[i * stride] = rec[i];
		p += x->size;
	}
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
	size_t o = 0;
	uint64_t prev = 0;
	int ng;

	if (parse(in, len, nrec, g, &ng) != outlen || !outlen)
		return -EBADMSG;
	for (uint32_t k = 0; k < nrec; k++) {
		if (idx[k] >= ng)
			return -EBADMSG;
		struct group *x = &g[idx[k]];
		if (x->next >= x->count || x->size > outlen - o)
			return -EBADMSG;
		const unsigned char *col = in + x->base + x->next++;
		unsigned char *rec = out + o;
		size_t stride = x->count;

		for (size_t i = 0; i < x->size; i++)
			rec[i] = col[i * stride];
		uint64_t ts = prev + rd64(rec + TS_OFF);
		memcpy(rec + TS_OFF, &ts, 8);
		prev = ts;
		if (rd16(rec) != x->type || rd16(rec + 2) != x->size)
			return -EBADMSG;
		o += x->size;
	}
	return 0;
}
