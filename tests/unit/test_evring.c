// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The engines' event rings: this test is the engine (engine.h's macros,
 * the ring in its own memory, the semaphore set by hand as an attach would)
 * and the recorder's reader (user/record/evring.c) reads it with
 * process_vm_readv, as from another process. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LATSPLIT_ENGINE_DEFINE_SEMAPHORES
#include "latsplit/engine.h"
#include "../../user/record/evring.h"

struct got {
	struct ls_ev_engine ev[64];
	size_t n;
	size_t total;
	__u64 last_ts;
	bool ordered;
};

static int take(void *ctx, void *data, size_t size)
{
	struct got *g = ctx;
	const struct ls_ev_engine *e = data;

	assert_int_equal(size, sizeof(*e));
	assert_int_equal(e->h.type, LS_EV_ENGINE);
	assert_int_equal(e->h.pid, getpid());
	if (g->total && e->h.ts < g->last_ts)
		g->ordered = false;
	g->last_ts = e->h.ts;
	if (g->n < 64)
		g->ev[g->n++] = *e;
	g->total++;
	return 0;
}

/* take() without the pid check: another process's events */
static int take_any(void *ctx, void *data, size_t size)
{
	struct got *g = ctx;

	(void)size;
	if (g->n < 64)
		g->ev[g->n++] = *(const struct ls_ev_engine *)data;
	g->total++;
	return 0;
}

static struct ls_ev_engine_ring hello(__u64 head)
{
	struct ls_ev_engine_ring h = {.h = {.type = LS_EV_ENGINE_RING, .size = sizeof(h)}};

	h.h.pid = getpid();
	h.addr = (__u64)(uintptr_t)&latsplit_evring;
	h.head = head;
	return h;
}

/* A fresh ring and reader: the semaphore set (an agent attached). */
static void reset(struct ls_evrings *e)
{
	memset(latsplit_evring_slots, 0, sizeof(struct ls_evring_slot) * LS_EVRING_SLOTS);
	latsplit_evring.head = latsplit_evring.read = latsplit_evring.told = 0;
	latsplit_evring.told_ts = latsplit_evring.base = 0;
	latsplit_event_ring_semaphore = 1;
	memset(e, 0, sizeof(*e));
}

/* reset(), and the reader told of the ring at head 0 (attached first). */
static void attached(struct ls_evrings *e)
{
	struct ls_ev_engine_ring h;

	reset(e);
	h = hello(0);
	ls_evrings_hello(e, &h);
}

static void test_events(void **state)
{
	struct ls_evrings e;
	struct got g = {.ordered = true};
	struct ls_ev_engine_ring h;

	(void)state;
	attached(&e);
	LATSPLIT_REQUEST_ARRIVED(7, "req-7");
	LATSPLIT_REQUEST_QUEUED(7, 120);
	LATSPLIT_REQUEST_SCHEDULED(7, 4);
	LATSPLIT_FIRST_TOKEN(7);
	LATSPLIT_REQUEST_FINISHED(7, LS_ENGINE_OK);
	assert_int_equal(ls_evrings_poll(&e, take, &g), 5);
	assert_int_equal(g.n, 5);
	assert_true(g.ordered);
	assert_int_equal(g.ev[0].kind, LS_ENG_ARRIVED);
	assert_string_equal(g.ev[0].x_request_id, "req-7");
	assert_int_equal(g.ev[1].kind, LS_ENG_QUEUED);
	assert_int_equal(g.ev[1].arg, 120);
	assert_int_equal(g.ev[2].kind, LS_ENG_SCHEDULED);
	assert_int_equal(g.ev[2].arg, 4);
	assert_int_equal(g.ev[3].kind, LS_ENG_FIRST_TOKEN);
	assert_int_equal(g.ev[4].kind, LS_ENG_FINISHED);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(g.ev[i].req_id, 7);
		assert_int_equal(g.ev[i].h.tid, gettid());
	}
	/* an id's slot used again without one: none of its bytes come along */
	for (int i = 1; i < 5; i++)
		for (size_t k = 0; k < sizeof(g.ev[i].x_request_id); k++)
			assert_int_equal(g.ev[i].x_request_id[k], 0);
	/* the reader says how far it read (a process at exit waits on it) */
	assert_int_equal(latsplit_evring.read, 5);
	/* nothing new: nothing read */
	assert_int_equal(ls_evrings_poll(&e, take, &g), 0);
	assert_int_equal(e.lost, 0);
	/* a second hello for the same ring keeps its place */
	h = hello(latsplit_evring.head);
	ls_evrings_hello(&e, &h);
	assert_int_equal(e.n, 1);
	LATSPLIT_FIRST_TOKEN(8);
	assert_int_equal(ls_evrings_poll(&e, take, &g), 1);
	ls_evrings_free(&e);
}

/* A forked child's ring: read from its own first event, not its parent's
 * slots it holds a copy of (a pipe hands the child's events back). */
static void test_fork(void **state)
{
	struct ls_evrings e;
	struct got g = {.ordered = true};
	struct ls_ev_engine_ring h;
	int go[2], done[2];
	char c;
	pid_t child;

	(void)state;
	reset(&e);
	LATSPLIT_FIRST_TOKEN(1);
	LATSPLIT_FIRST_TOKEN(2);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	child = fork();
	if (!child) {
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		LATSPLIT_FIRST_TOKEN(3);
		if (write(done[1], "x", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	h = hello(latsplit_evring.head); /* the child's probe at its first event */
	h.h.pid = child;
	ls_evrings_hello(&e, &h);
	assert_int_equal(write(go[1], "x", 1), 1);
	assert_int_equal(read(done[0], &c, 1), 1);
	size_t n = ls_evrings_poll(&e, take_any, &g);
	assert_int_equal(write(go[1], "x", 1), 1);
	waitpid(child, NULL, 0);
	assert_int_equal(n, 1);
	assert_int_equal(g.ev[0].req_id, 3);
	assert_int_equal(g.ev[0].h.pid, child);
	assert_int_equal(g.ev[0].h.tid, child);
	ls_evrings_free(&e);
}

/* A slot used again: none of the earlier event's id bytes come along. */
static void test_stale(void **state)
{
	struct ls_evrings e;
	struct got g = {.ordered = true};
	struct ls_ev_engine_ring h;

	(void)state;
	reset(&e);
	LATSPLIT_REQUEST_ARRIVED(9, "a-much-longer-request-id");
	latsplit_evring.head = LS_EVRING_SLOTS; /* the next lands on the same slot */
	h = hello(latsplit_evring.head);
	ls_evrings_hello(&e, &h);
	LATSPLIT_REQUEST_ARRIVED(10, "short");
	LATSPLIT_REQUEST_QUEUED(10, 3);
	assert_int_equal(ls_evrings_poll(&e, take, &g), 2);
	assert_string_equal(g.ev[0].x_request_id, "short");
	for (size_t k = strlen("short"); k < sizeof(g.ev[0].x_request_id); k++)
		assert_int_equal(g.ev[0].x_request_id[k], 0);
	ls_evrings_free(&e);
}

/* More than a ring's worth between two reads: every event read or counted. */
static void test_overrun(void **state)
{
	struct ls_evrings e;
	struct got g = {.ordered = true};
	const unsigned n = LS_EVRING_SLOTS + 100;

	(void)state;
	attached(&e);
	for (unsigned i = 0; i < n; i++)
		LATSPLIT_FIRST_TOKEN(i);
	size_t got = ls_evrings_poll(&e, take, &g);
	assert_int_equal(got + e.lost, n);
	assert_true(e.lost >= 100 && e.lost <= 101);
	assert_true(g.ordered);
	assert_int_equal(g.ev[0].req_id, n - got); /* the newest ones kept */
	ls_evrings_free(&e);
}

/* A slot being written stops the read there; the next read takes it. */
static void test_partial(void **state)
{
	struct ls_evrings e;
	struct got g = {.ordered = true};

	(void)state;
	attached(&e);
	for (int i = 0; i < 4; i++)
		LATSPLIT_FIRST_TOKEN(i);
	latsplit_evring_slots[2].seq = 0; /* index 2: its writer not done */
	assert_int_equal(ls_evrings_poll(&e, take, &g), 2);
	latsplit_evring_slots[2].seq = 3;
	assert_int_equal(ls_evrings_poll(&e, take, &g), 2);
	assert_int_equal(g.n, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(g.ev[i].req_id, i);
	assert_int_equal(e.lost, 0);
	ls_evrings_free(&e);
}

/* A ring met late is read back from its oldest slot, without the events
 * from before the recording's start. */
static void test_met_late(void **state)
{
	struct ls_evrings e;
	struct got g = {.ordered = true};
	struct ls_ev_engine_ring h;
	struct timespec ts;

	(void)state;
	reset(&e);
	for (int i = 0; i < 3; i++)
		LATSPLIT_FIRST_TOKEN(i);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	e.since = (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec + 1;
	while (clock_gettime(CLOCK_MONOTONIC, &ts),
	       (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec <= e.since)
		;
	for (int i = 3; i < 5; i++)
		LATSPLIT_FIRST_TOKEN(i);
	h = hello(latsplit_evring.head); /* the periodic probe, after the fact */
	ls_evrings_hello(&e, &h);
	assert_int_equal(ls_evrings_poll(&e, take, &g), 2);
	assert_int_equal(g.ev[0].req_id, 3);
	assert_int_equal(g.ev[1].req_id, 4);
	assert_int_equal(e.lost, 0);
	assert_int_equal(e.met_late, 0);
	ls_evrings_free(&e);
}

/* Not a ring (wrong magic), and a process that is gone: refused and
 * counted once, read no more (the hellos met after that count nothing),
 * forgotten at their process's exit. */
static void test_refused(void **state)
{
	struct ls_evrings e;
	struct got g = {.ordered = true};
	struct ls_ev_engine_ring h;
	pid_t child;

	(void)state;
	reset(&e);
	h = hello(0);
	h.addr = (__u64)(uintptr_t)&g; /* some other memory */
	ls_evrings_hello(&e, &h);
	assert_int_equal(ls_evrings_poll(&e, take, &g), 0);
	assert_int_equal(e.bad, 1);
	ls_evrings_hello(&e, &h); /* the next periodic hello */
	assert_int_equal(ls_evrings_poll(&e, take, &g), 0);
	assert_int_equal(e.bad, 1);
	ls_evrings_gone(&e, getpid(), take, &g);
	assert_int_equal(e.bad, 1);
	assert_int_equal(e.n, 0);

	child = fork();
	if (!child)
		_exit(0);
	waitpid(child, NULL, 0);
	h = hello(0);
	h.h.pid = child;
	ls_evrings_hello(&e, &h);
	assert_int_equal(ls_evrings_poll(&e, take, &g), 0);
	assert_int_equal(e.gone, 1);
	/* its hello at exit, met after the read that found it gone */
	h.head = 5 | LS_EVRING_FINAL;
	ls_evrings_hello(&e, &h);
	assert_int_equal(ls_evrings_poll(&e, take, &g), 0);
	ls_evrings_gone(&e, child, take, &g);
	assert_int_equal(e.gone, 1);
	assert_int_equal(e.n, 0);

	/* refused at its process's exit too: counted as refused, not ended */
	h = hello(0);
	h.addr = (__u64)(uintptr_t)&g;
	ls_evrings_hello(&e, &h);
	ls_evrings_gone(&e, getpid(), take, &g);
	assert_int_equal(e.bad, 2);
	assert_int_equal(e.gone, 1);
	assert_int_equal(e.n, 0);
	ls_evrings_free(&e);
}

/* A ring given up on, then a ring there again (a new process with its pid):
 * the next hello has it read. */
static void test_revived(void **state)
{
	struct ls_evrings e;
	struct got g = {.ordered = true};
	struct ls_ev_engine_ring h;

	(void)state;
	attached(&e);
	latsplit_evring.magic = 0;
	assert_int_equal(ls_evrings_poll(&e, take, &g), 0);
	assert_int_equal(e.bad, 1);
	latsplit_evring.magic = LS_EVRING_MAGIC;
	LATSPLIT_FIRST_TOKEN(3);
	assert_int_equal(ls_evrings_poll(&e, take, &g), 0); /* given up on */
	h = hello(latsplit_evring.head);
	ls_evrings_hello(&e, &h);
	LATSPLIT_FIRST_TOKEN(4);
	assert_int_equal(ls_evrings_poll(&e, take, &g), 2);
	assert_int_equal(g.ev[0].req_id, 3);
	assert_int_equal(g.ev[1].req_id, 4);
	assert_int_equal(e.bad, 1);
	assert_int_equal(e.n, 1);
	ls_evrings_free(&e);
}

/* At exit: a ring read to the head its process told there is whole. */
static void test_exit(void **state)
{
	struct ls_evrings e;
	struct got g = {.ordered = true};
	struct ls_ev_engine_ring h;

	(void)state;
	attached(&e);
	LATSPLIT_FIRST_TOKEN(1);
	h = hello(latsplit_evring.head | LS_EVRING_FINAL);
	ls_evrings_hello(&e, &h);
	ls_evrings_gone(&e, getpid(), take, &g);
	assert_int_equal(g.n, 1);
	assert_int_equal(e.gone, 0);
	assert_int_equal(e.n, 0);
	/* exec'd: its ring is gone with the old image */
	ls_evrings_hello(&e, &h);
	ls_evrings_gone(&e, getpid(), NULL, NULL);
	assert_int_equal(e.gone, 1);
	ls_evrings_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_events),  cmocka_unit_test(test_overrun),
		cmocka_unit_test(test_partial), cmocka_unit_test(test_met_late),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_revived), cmocka_unit_test(test_exit),
		cmocka_unit_test(test_stale),   cmocka_unit_test(test_fork),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
