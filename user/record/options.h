/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `record`'s (and `top`'s) options: parsed, checked against each other and
 * the host (pids alive, -o a regular file), with the usage text. Nothing is
 * attached here.
 */
#ifndef LATSPLIT_RECORD_OPTIONS_H
#define LATSPLIT_RECORD_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

#include "cli.h"
#include "flight.h"
#include "latsplit/events.h"
#include "recorder.h"

struct ls_rec_opts {
	const struct ls_top_opts *top; /* top's screen (&topo); NULL: record */
	struct ls_top_opts topo;
	const char *path;              /* NULL: no capture file */
	bool path_given;
	const char *metrics, *otlp_url, *debug_dir;
	const char *otlp_receive; /* --otlp-receive [ADDR:]PORT, or NULL */
	struct ls_flight flight;       /* its triggers, dir, margin, rate */
	double flight_s, duration;
	unsigned long pids[LS_MAX_PIDS], ports[LS_MAX_PORTS];
	int npids, nports;
	unsigned long ringbuf_mb, level, stack_entries, capture_bytes, freq, ustack_bytes, eh_rows;
	unsigned long kstack_min_us; /* --offcpu-kernel-min-us */
	bool eh_asked; /* --call-graph eh given (else the default: frame pointers if it fails) */
	int sock_hooks; /* --sock-hooks: LS_SOCK_HOOKS_* */
	bool verbose, no_sock, no_tls, no_engine, sample_all, offcpu, symbolize, capture_bodies;
	const char *engine_paths[8], *cuda_paths[4];
	int nengine_paths, ncuda_paths;
	bool live_on;    /* a live analysis runs (metrics, flight recorder, top, OTLP) */
	char **command;  /* after the options (-- COMMAND ...), or NULL */
};

/* argv as main has it for the command. top: `latsplit top` (its own flags
 * too: -n/--snapshots, --once, -i/--interval), with its usage. 0 parsed; 1
 * help printed (exit 0); -1 a usage error, said (exit EXIT_USAGE). */
int ls_rec_opts_parse(struct ls_rec_opts *o, int argc, char **argv, bool top,
		      void (*top_usage)(FILE *out));
void ls_rec_usage(FILE *out);

#endif
