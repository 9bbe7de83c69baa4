/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A map from nonzero 64-bit ids (connection ids: from a file, so hostile,
 * never an array index) to pointers: open addressing, linear probing,
 * removal by shifting the probe run back (no tombstones). Used by the
 * correlator's open connections and the recorder's per-connection state.
 */
#ifndef LATSPLIT_CORE_IDMAP_H
#define LATSPLIT_CORE_IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct ls_idmap {
	uint64_t *keys; /* 0: empty slot */
	void **vals;
	size_t cap, n;
};

void *ls_idmap_get(const struct ls_idmap *m, uint64_t id);
/* Adds id -> val (id not present). 0, or -1 out of memory. */
int ls_idmap_put(struct ls_idmap *m, uint64_t id, void *val);
/* Removes id; returns its value, or NULL if absent. */
void *ls_idmap_remove(struct ls_idmap *m, uint64_t id);
void ls_idmap_free(struct ls_idmap *m);
/* Iteration: slots 0..cap-1 whose key is nonzero. */

#endif
