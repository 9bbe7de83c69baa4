/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reorder buffer: records arrive nearly in time order (per-CPU ring-buffer
 * reservations interleave); this releases them in timestamp order once they
 * are older than the newest seen by a window. Records later than the window
 * are released anyway, and counted.
 */
#ifndef LATSPLIT_USER_ORDER_H
#define LATSPLIT_USER_ORDER_H

#include <stdbool.h>
#include "latsplit/events.h"

struct ls_order;

struct ls_order *ls_order_new(__u64 window_ns);
/* Copies rec. Returns 0 or -ENOMEM. */
int ls_order_push(struct ls_order *o, const struct ls_hdr *rec);
/* The next record in order, or NULL when none is ready (drain: release all).
 * Valid until the next pop. */
const struct ls_hdr *ls_order_pop(struct ls_order *o, bool drain);
/* A live source's clock: records up to now - window may go (none older
 * will come). */
void ls_order_advance(struct ls_order *o, __u64 now);
/* A source that knows it: no record to come is older than floor, so those
 * older go now, whatever the window (a capture file's frame headers say it;
 * the order out is the window's, sooner and with less held). */
void ls_order_floor(struct ls_order *o, __u64 floor);
__u64 ls_order_late(const struct ls_order *o);
void ls_order_free(struct ls_order *o);

#endif
