/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The engine's own compute on the CPU (issue 27's verdict): how many of the
 * engine group's CPU samples stand in a ggml or BLAS frame (llama.cpp's
 * ggml_*, llamafile_sgemm, cblas_*, OpenBLAS/MKL/BLIS/oneDNN kernels, any
 * *gemm* / *gemv*), found from the capture's own stack and symbol records
 * as they pass (samples first, their stacks at a checkpoint, symbols after).
 * When host time dominates and these frames hold a good part of the
 * samples, the advice is the model's compute, not tokenisation.
 */
#ifndef LATSPLIT_CORE_CPUWORK_H
#define LATSPLIT_CORE_CPUWORK_H

#include <stddef.h>
#include <stdint.h>

#include "idmap.h"
#include "latsplit/events.h"

struct ls_timeline;

struct ls_cpuwork {
	/* (pid, user stack id) of the group's samples -> index + 1 into v */
	struct ls_idmap by_key;
	struct cw_stack {
		uint32_t pid;
		int32_t ustack;
		uint64_t samples;
	} *v;
	size_t n, cap;
	uint64_t samples; /* the group's CPU samples with a user stack */
	/* stack id -> index + 1 into ips_of: the addresses of counted stacks */
	struct ls_idmap stack_ips;
	struct cw_ips {
		uint32_t n;
		uint64_t *ips;
	} *ips_of;
	size_t nips_of, capips_of;
	/* (pid, address) of compute frames, from the symbol records */
	struct cw_sym {
		uint32_t pid;
		uint64_t ip;
		char name[64];
	} *syms;
	size_t nsyms, capsyms;
};

/* Sees one record in order (the timeline has seen it: it knows the group). */
void ls_cpuwork_add(struct ls_cpuwork *w, const struct ls_hdr *rec, const struct ls_timeline *tl);
/* The share of the group's samples in a compute frame, and the most
 * common such frame (the innermost one of each sample) into frame. 0 when
 * none. */
double ls_cpuwork_share(struct ls_cpuwork *w, char *frame, size_t len);
void ls_cpuwork_free(struct ls_cpuwork *w);
/* Is this function name a ggml/BLAS compute frame? */
int ls_cpuwork_frame(const char *name);

#endif
