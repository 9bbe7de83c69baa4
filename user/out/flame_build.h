/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The flame graphs' model, as one analysis sink (`latsplit flame`; the HTML
 * page draws its own latency graph from the same split):
 *   latency  requests' wall time by component and sub-part
 *            (latency;queueing;queueing.engine), ns summed over requests;
 *            under host, the engine group's CPU samples taken at instants
 *            the split called host (each request's host time spread over
 *            them); under other, the group's blocked spans (off-CPU stacks)
 *            overlapping the instants it called other, in proportion
 *   gpu      GPU time by process, the CPU stack that launched it, and
 *            kernel (or copy direction), ns
 *   cpu      on-CPU samples: process;user frames;kernel frames, samples
 *   offcpu   time tracked threads spent blocked, by the stack they blocked
 *            in, ns (from the block to the next switch-in)
 * Stacks are symbolized from the capture's own symbol records, else from its
 * mapping records (by build-id).
 */
#ifndef LATSPLIT_OUT_FLAME_BUILD_H
#define LATSPLIT_OUT_FLAME_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis.h"
#include "flame.h"
#include "stacks.h"

enum ls_flame_kind { LS_FLAME_LATENCY, LS_FLAME_GPU, LS_FLAME_CPU, LS_FLAME_OFFCPU };

/* Where the cpu and offcpu graphs' user stacks end (one per sample or
 * block): nothing stopped short is passed off as whole. */
struct ls_stack_ends {
	uint64_t stacks, rooted, depth, no_symbol, elsewhere;
};

struct ls_flame_build {
	/* set before the analysis */
	enum ls_flame_kind kind;
	bool ttft;
	unsigned long request, pid;
	const char *component, *debug_dir;
	const char *path; /* the capture's, for messages */
	struct ls_flame *f; /* the graph, filled at the analysis's end */
	/* gathered */
	struct ls_stack_loader l;
	bool finished;
	uint32_t sources;
	struct lat_req *v;
	size_t n, cap;
	struct ls_ev_gpu *gv;
	size_t ng, capg;
	struct proc_name *procs;
	size_t nprocs, capprocs;
	char why[256]; /* the end's error */
	struct ls_stack_ends ends;
};

/* kind from its name; -1 if unknown. */
int ls_flame_kind_of(const char *name);
/* 0, or -1 (out of memory). */
int ls_flame_build_init(struct ls_flame_build *b);
/* The sink (ctx: b). Its end fails when the capture has no data of the
 * kind (cpu, offcpu): b->why says so. */
struct ls_sink ls_flame_build_sink(struct ls_flame_build *b);
/* The user stacks' ends in one line ("" when the graph had none). */
void ls_flame_build_ends(const struct ls_flame_build *b, char *buf, size_t len);
void ls_flame_build_free(struct ls_flame_build *b);

#endif
