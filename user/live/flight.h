/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The flight recorder (`record --flight-recorder SEC --trigger EXPR`): the
 * last SEC seconds of records, compressed in frames of ~100 ms, in bounded
 * memory. When a split request matches a trigger, a capture of the window
 * [its start - margin, its end + margin] is written, complete for report
 * and flame on its own: the recording's header, the process table,
 * stacks, symbols and drops so far (kept aside, they outlive the frames),
 * and for each connection that began before the window a conn_adopt record
 * at the window's start (the analysis then reads it as a connection met
 * mid-flight, as it does on attach). Rate-limited; dumps and suppressed
 * triggers are counted.
 */
#ifndef LATSPLIT_LIVE_FLIGHT_H
#define LATSPLIT_LIVE_FLIGHT_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis.h"
#include "attribute.h"
#include "capture.h"
#include "idmap.h"
#include "requests.h"

#define LS_FLIGHT_MAX_TRIGGERS 8

enum ls_trigger_what { LS_TRIG_TOTAL, LS_TRIG_TTFT, LS_TRIG_COMP, LS_TRIG_SUB, LS_TRIG_RETRANS };

struct ls_trigger {
	enum ls_trigger_what what;
	int index;        /* component or sub-part */
	uint64_t above;   /* ns, or a count */
	char text[64];
};

/* "total>2s", "ttft>500ms", "component:network>200ms",
 * "component:queueing.engine>50ms", "retransmits>0". 0, or -1 with why. */
int ls_trigger_parse(const char *s, struct ls_trigger *t, char *err, size_t len);
bool ls_trigger_match(const struct ls_trigger *t, const struct ls_request *r,
		      const struct ls_split *s);

struct ls_flight_frame {
	uint64_t first, last; /* record times */
	uint32_t nrec, raw_len, clen;
	unsigned char *data;
};

struct ls_flight_dump {
	uint64_t from, to, req_id;
};

struct ls_flight {
	uint64_t keep_ns, margin_ns, max_bytes;
	unsigned max_per_hour;
	const char *dir;
	struct ls_file_hdr hdr;
	struct ls_trigger trig[LS_FLIGHT_MAX_TRIGGERS];
	int ntrig;
	/* the block being filled, raw */
	unsigned char *blk;
	size_t blen, bcap;
	uint64_t b_first, b_last;
	uint32_t bnrec;
	unsigned char *z; /* compression scratch */
	size_t zcap;
	/* compressed frames, oldest first */
	struct ls_flight_frame *fr;
	size_t f0, nf, capf, bytes;
	/* kept aside: the latest of each process, drops; every stack, symbol
	 * and mapping */
	struct ls_idmap procs; /* pid + 1 -> record copy */
	unsigned char *side;   /* stacks, symbols, mappings, concatenated */
	size_t side_len, side_cap;
	struct ls_hdr *drops;
	/* connections: tuple and when they ended (to adopt them in a dump) */
	struct ls_idmap conns;
	/* triggers waiting to be written, dumps written (times, for the rate) */
	struct ls_flight_dump pend[16];
	int npend;
	/* when each dump of the last hour was written, oldest first: a ring
	 * of max_per_hour entries (allocated at the first dump) */
	uint64_t *dump_at;
	unsigned dump_head, dump_n;
	uint64_t now, last_purge;
	/* counted */
	uint64_t dumps, suppressed, evicted_frames, write_errors;
	char last_path[512];
};

int ls_flight_init(struct ls_flight *f, const struct ls_file_hdr *hdr, char *err, size_t len);
/* The recorder tap: one record. */
void ls_flight_record(void *ctx, const struct ls_hdr *rec);
/* The live analysis sink: each request's final split, matched against the
 * triggers. */
struct ls_sink ls_flight_sink(struct ls_flight *f);
/* Writes the dumps due (checkpoint: called first, to get stacks and
 * symbols of the window written). Returns how many were written. */
int ls_flight_tick(struct ls_flight *f, void (*checkpoint)(void *), void *ctx);
void ls_flight_free(struct ls_flight *f);

#endif
