/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CUPTI activity record -> struct ls_gpu_record (include/latsplit/engine.h).
 * Pure: no CUPTI calls, so unit tests build records by hand.
 */
#ifndef LATSPLIT_CUPTI_TRANSLATE_H
#define LATSPLIT_CUPTI_TRANSLATE_H

#include <cupti_activity.h>
#include "latsplit/engine.h"

enum ls_translate {
	LS_TR_OK = 0,
	LS_TR_SKIP = 1,    /* a kind we do not hand over (API records, ...) */
	LS_TR_BAD_TIME = 2, /* zero or inverted timestamps: dropped and counted */
};

enum ls_translate ls_cupti_translate(const CUpti_Activity *rec, struct ls_gpu_record *out);
/* NCCL-style collective kernels count as compute.comm. */
int ls_cupti_is_collective(const char *kernel_name);

#endif
