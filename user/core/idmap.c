// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Id map (see idmap.h).
 */
#include <stdlib.h>

#include "idmap.h"

static size_t slot(size_t cap, uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

/* The slot holding id, or the empty slot where it would go. */
static size_t find(const struct ls_idmap *m, uint64_t id)
{
	size_t h;

	for (h = slot(m->cap, id); m->keys[h] && m->keys[h] != id; h = (h + 1) & (m->cap - 1))
		;
	return h;
}

void *ls_idmap_get(const struct ls_idmap *m, uint64_t id)
{
	size_t h;

	if (!m->cap || !id)
		return NULL;
	h = find(m, id);
	return m->keys[h] ? m->vals[h] : NULL;
}

static int grow(struct ls_idmap *m)
{
	struct ls_idmap n = {0};

	n.cap = m->cap ? m->cap * 2 : 64;
	n.keys = calloc(n.cap, sizeof(*n.keys));
	n.vals = calloc(n.cap, sizeof(*n.vals));
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i]) {
			size_t h = find(&n, m->keys[i]);
			n.keys[h] = m->keys[i];
			n.vals[h] = m->vals[i];
		}
	n.n = m->n;
	free(m->keys);
	free(m->vals);
	*m = n;
	return 0;
}

int ls_idmap_put(struct ls_idmap *m, uint64_t id, void *val)
{
	size_t h;

	if ((m->n + 1) * 2 > m->cap && grow(m))
		return -1;
	h = find(m, id);
	m->keys[h] = id;
	m->vals[h] = val;
	m->n++;
	return 0;
}

void *ls_idmap_remove(struct ls_idmap *m, uint64_t id)
{
	size_t i, j, mask;
	void *val;

	if (!m->cap || !id)
		return NULL;
	mask = m->cap - 1;
	i = find(m, id);
	if (!m->keys[i])
		return NULL;
	val = m->vals[i];
	for (j = i;;) {
		j = (j + 1) & mask;
		if (!m->keys[j])
			break;
		size_t k = slot(m->cap, m->keys[j]);
		/* move j back to i unless its home lies cyclically in (i, j] */
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = 0;
	m->vals[i] = NULL;
	m->n--;
	return val;
}

void ls_idmap_free(struct ls_idmap *m)
{
	free(m->keys);
	free(m->vals);
	*m = (struct ls_idmap){0};
}
