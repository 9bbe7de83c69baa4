/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The engines' event rings (include/latsplit/engine.h): where each process
 * said its ring is (the event_ring probe), read with process_vm_readv(2);
 * each event handed on as an ls_ev_engine record, as the USDT probes would
 * have made it. What a reader cannot take is counted, never guessed.
 */
#ifndef LATSPLIT_RECORD_EVRING_H
#define LATSPLIT_RECORD_EVRING_H

#include <stdbool.h>
#include <sys/types.h>
#include "latsplit/events.h"

struct ls_evrings {
	struct ls_evr {
		pid_t pid;
		__u64 addr;  /* struct ls_evring in pid's memory */
		__u64 slots; /* its slot 0 */
		__u64 next;  /* the first index not read yet */
		__u64 final; /* the head its process told at exit (0: not yet) */
		__u64 from;  /* the head when the probe told us: older slots may predate us */
		/* could no longer be read (counted once): kept until its process's
		 * exit so that a hello met after that is not a new ring */
		bool dead;
	} *v;
	size_t n, cap;
	void *buf; /* one ring's worth of slots, copied */
	__u64 since; /* the recording's start: older events are not its own */
	unsigned long long read; /* events handed on */
	unsigned long long lost; /* overwritten before they were read, or torn */
	/* rings whose process could no longer be read (it exited or exec'd
	 * first): what it wrote after the last read is not in the capture */
	unsigned long long gone;
	unsigned long long bad;  /* rings refused: not a ring of this layout */
	/* rings first read full of this recording's events (its start more
	 * than a ring's worth back): earlier ones of ours may be gone, uncounted */
	unsigned long long met_late;
};

/* The record one slot becomes (the callback's argument). */
typedef int (*ls_evring_emit)(void *ctx, void *data, size_t size);

/* The probe's record: pid's ring is at addr, its head at head then. A new
 * ring is read from the oldest slot it still holds (its events before
 * e->since skipped: the probe fires once a second, not at once); a ring
 * already known keeps its place. */
void ls_evrings_hello(struct ls_evrings *e, const struct ls_ev_engine_ring *rec);
/* Reads every ring's new events into emit. Returns how many. A ring that
 * cannot be read is counted and read no more. */
size_t ls_evrings_poll(struct ls_evrings *e, ls_evring_emit emit, void *ctx);
/* pid exits: its rings read one last time (emit NULL: it exec'd, they are
 * gone already, and counted), then forgotten. A ring given up on earlier is
 * not counted again. */
void ls_evrings_gone(struct ls_evrings *e, pid_t pid, ls_evring_emit emit, void *ctx);
void ls_evrings_free(struct ls_evrings *e);

#endif
