// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The engines' event rings (see evring.h and include/latsplit/engine.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "evring.h"
#include "grow.h"
#include "latsplit/engine.h"

#define N LS_EVRING_SLOTS
#define SLOT sizeof(struct ls_evring_slot)

/* n bytes at addr in pid's memory, whole or not at all. */
static int vm_read(pid_t pid, __u64 addr, void *to, size_t n)
{
	struct iovec l = {to, n}, r = {(void *)(uintptr_t)addr, n};
	ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);

	if (got == (ssize_t)n)
		return 0;
	return got < 0 ? -errno : -EIO;
}

/* The ring header at addr in pid: 0, -errno when it cannot be read, -EPROTO
 * when it is not a ring of this layout. */
static int read_hdr(pid_t pid, __u64 addr, struct ls_evring *h)
{
	int rc = vm_read(pid, addr, h, sizeof(*h));

	if (rc)
		return rc;
	if (h->magic != LS_EVRING_MAGIC || h->slot_size != SLOT || h->nslots != N || !h->slots)
		return -EPROTO;
	return 0;
}

void ls_evrings_hello(struct ls_evrings *e, const struct ls_ev_engine_ring *rec)
{
	__u64 head = rec->head & ~LS_EVRING_FINAL, final = rec->head & LS_EVRING_FINAL ? head : 0;
	struct ls_evr nr = {(pid_t)rec->h.pid, rec->addr, 0, head > N ? head - N : 0, final, head};
	struct ls_evring h;

	for (size_t i = 0; i < e->n; i++) {
		struct ls_evr *r = &e->v[i];

		if (r->pid != nr.pid || r->addr != nr.addr)
			continue;
		/* a ring given up on (counted) stays so, unless a new process
		 * with its pid has a ring there: a hello sent before the old
		 * one's end and met after it must not count it twice */
		if (r->dead && !read_hdr(nr.pid, nr.addr, &h))
			*r = nr;
		else if (final)
			r->final = final;
		return;
	}
	GROW(e->v, e->n, e->cap);
	e->v[e->n++] = nr;
}

static void forget(struct ls_evrings *e, size_t i)
{
	e->v[i] = e->v[--e->n];
}

/* Slots [from, to) of ring r into e->buf (to - from <= N). */
static int copy_slots(struct ls_evrings *e, const struct ls_evr *r, __u64 from, __u64 to)
{
	size_t a = from & (N - 1), cnt = to - from, first = cnt < N - a ? cnt : N - a;
	struct iovec l = {e->buf, cnt * SLOT};
	struct iovec rv[2] = {{(void *)(uintptr_t)(r->slots + a * SLOT), first * SLOT},
			      {(void *)(uintptr_t)r->slots, (cnt - first) * SLOT}};
	ssize_t got = process_vm_readv(r->pid, &l, 1, rv, cnt > first ? 2 : 1, 0);

	if (got == (ssize_t)(cnt * SLOT))
		return 0;
	return got < 0 ? -errno : -EIO;
}

/* Ring i's new events. 0, or -errno when its process can no longer be read
 * (or the ring is not one of this layout: -EPROTO). */
static int read_ring(struct ls_evrings *e, struct ls_evr *r, ls_evring_emit emit, void *ctx,
		     size_t *count)
{
	struct ls_evring h;
	__u64 head, head2, i;
	int rc;

	if ((rc = read_hdr(r->pid, r->addr, &h)))
		return rc;
	r->slots = h.slots;
	head = h.head;
	if (head < r->next) /* cannot go back: a new ring at the same place */
		r->next = head;
	if (r->next < h.base) /* a forked child's copy of its parent's slots */
		r->next = h.base;
	if (head - r->next > N) { /* overwritten before this read (ours: from r->from on) */
		__u64 b = r->next > r->from ? r->next : r->from;
		e->lost += head - N > b ? head - N - b : 0;
		r->next = head - N;
	}
	if (head == r->next)
		return 0;
	if (!e->buf && !(e->buf = malloc((size_t)N * SLOT)))
		return -ENOMEM;
	if ((rc = copy_slots(e, r, r->next, head)))
		return rc;
	if ((rc = vm_read(r->pid, r->addr + offsetof(struct ls_evring, head), &head2, sizeof(head2))))
		return rc;
	for (i = r->next; i < head; i++) {
		const struct ls_evring_slot *s = (const void *)((char *)e->buf + (i - r->next) * SLOT);
		struct ls_ev_engine ev;

		/* before the probe told us of the ring: maybe older than the
		 * recording, taken if whole and new enough, never counted */
		bool ours = i >= r->from;

		if (head2 >= i + N || s->seq > i + 1) { /* a later lap wrote it, maybe mid-copy */
			e->lost += ours;
			continue;
		}
		if (s->seq != i + 1) { /* being written (or, before the probe, never) */
			if (ours && head2 - i < N / 2)
				break; /* the next read takes it */
			e->lost += ours; /* its writer stopped halfway long ago */
			continue;
		}
		if (s->ts < e->since) /* from before this recording */
			continue;
		if (!ours && i == head - N && head > N) /* older ones of ours may be gone */
			e->met_late++;
		memset(&ev, 0, sizeof(ev));
		ev.h.type = LS_EV_ENGINE;
		ev.h.size = sizeof(ev);
		ev.h.ts = s->ts;
		ev.h.pid = (__u32)r->pid;
		ev.h.tid = s->tid;
		ev.req_id = s->req_id;
		ev.kind = s->kind;
		ev.arg = s->arg;
		/* up to its end only: the slot keeps an earlier event's bytes after it */
		memcpy(ev.x_request_id, s->x_request_id,
		       strnlen(s->x_request_id, sizeof(ev.x_request_id) - 1));
		emit(ctx, &ev, sizeof(ev));
		e->read++;
		(*count)++;
	}
	r->next = i;
	/* how far: a process at exit waits for it (engine.h) */
	struct iovec l = {&r->next, sizeof(r->next)},
		     rv = {(void *)(uintptr_t)(r->addr + offsetof(struct ls_evring, read)),
			   sizeof(r->next)};
	process_vm_writev(r->pid, &l, 1, &rv, 1, 0);
	return 0;
}

/* Ring r read (emit NULL: its memory is gone already, exec). A failure is
 * counted unless the ring was read to the head its process told at exit
 * (then nothing is missing), or it is a lack of memory and a later read
 * will come (not `last`). */
static int read_at(struct ls_evrings *e, struct ls_evr *r, ls_evring_emit emit, void *ctx,
		   size_t *count, bool last)
{
	int rc = emit ? read_ring(e, r, emit, ctx, count) : -ESRCH;

	if (!rc || (rc == -ENOMEM && !last) || (r->final && r->next >= r->final))
		return rc;
	if (rc == -EPROTO)
		e->bad++;
	else
		e->gone++;
	return rc;
}

size_t ls_evrings_poll(struct ls_evrings *e, ls_evring_emit emit, void *ctx)
{
	size_t count = 0;

	for (size_t k = 0; k < e->n; k++) {
		if (e->v[k].dead)
			continue;
		/* given up on (counted), kept until its process's exit */
		int rc = read_at(e, &e->v[k], emit, ctx, &count, false);
		if (rc && rc != -ENOMEM)
			e->v[k].dead = true;
	}
	return count;
}

void ls_evrings_gone(struct ls_evrings *e, pid_t pid, ls_evring_emit emit, void *ctx)
{
	size_t count = 0;

	for (size_t k = 0; k < e->n;) {
		if (e->v[k].pid != pid) {
			k++;
			continue;
		}
		if (!e->v[k].dead)
			read_at(e, &e->v[k], emit, ctx, &count, true);
		forget(e, k);
	}
}

void ls_evrings_free(struct ls_evrings *e)
{
	free(e->v);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}
