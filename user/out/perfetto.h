/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A Perfetto trace writer: TracePacket/TrackEvent protobuf encoded here (the
 * wire format's varints and length-delimited fields; lengths are 4-byte
 * padded varints, as Perfetto's own protozero writes them). One packet
 * sequence: a ClockSnapshot (BOOTTIME, MONOTONIC), then every track's
 * descriptor, then events in timestamp order with timestamp_clock_id 3
 * (MONOTONIC) and interned event names. Events are buffered and sorted,
 * so slices may be added in any order; slices on one track must nest.
 */
#ifndef LATSPLIT_OUT_PERFETTO_H
#define LATSPLIT_OUT_PERFETTO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ls_pf;

/* A debug annotation: a name and an unsigned or string value. */
struct ls_pf_arg {
	const char *name;
	const char *str; /* NULL: num */
	uint64_t num;
};

enum ls_pf_track_kind { LS_PF_PLAIN, LS_PF_PROCESS, LS_PF_THREAD, LS_PF_COUNTER };

struct ls_pf *ls_pf_new(uint64_t boottime_ns, uint64_t monotonic_ns);
/* A track (uuid nonzero, unique); parent 0: top level. */
void ls_pf_track(struct ls_pf *pf, uint64_t uuid, uint64_t parent, enum ls_pf_track_kind kind,
		 const char *name, uint32_t pid, uint32_t tid);
bool ls_pf_has_track(const struct ls_pf *pf, uint64_t uuid);
/* A slice [b, e]; depth: its nesting level on the track (0 outermost). */
void ls_pf_slice(struct ls_pf *pf, uint64_t track, uint64_t b, uint64_t e, const char *name,
		 int depth, const struct ls_pf_arg *args, int nargs, uint64_t flow,
		 bool flow_terminates);
void ls_pf_instant(struct ls_pf *pf, uint64_t track, uint64_t ts, const char *name,
		   const struct ls_pf_arg *args, int nargs, uint64_t flow);
void ls_pf_counter(struct ls_pf *pf, uint64_t track, uint64_t ts, double value);
/* Writes the trace; 0 or -1 (write error). Frees nothing. */
int ls_pf_write(struct ls_pf *pf, FILE *out, size_t *nevents);
void ls_pf_free(struct ls_pf *pf);

#endif
