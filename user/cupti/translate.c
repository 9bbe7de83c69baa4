// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CUPTI activity translation (see translate.h): concurrent kernels, memcpy
 * (direction, bytes, pageable/pinned), memset, synchronization.
 */
#include <string.h>

#include "translate.h"

int ls_cupti_is_collective(const char *name)
{
	return name && (strstr(name, "nccl") || strstr(name, "NCCL") ||
			strstr(name, "cross_device_reduce") || strstr(name, "all_reduce"));
}

static enum ls_translate times(struct ls_gpu_record *out, uint64_t start, uint64_t end)
{
	if (!start || !end || end < start)
		return LS_TR_BAD_TIME;
	out->start_ns = start;
	out->end_ns = end;
	return LS_TR_OK;
}

static void name_copy(char *dst, size_t cap, const char *src)
{
	size_t n = src ? strnlen(src, cap - 1) : 0;

	memcpy(dst, src ? src : "", n);
	dst[n] = '\0';
}

enum ls_translate ls_cupti_translate(const CUpti_Activity *rec, struct ls_gpu_record *out)
{
	memset(out, 0, sizeof(*out));
	out->source = LS_GPU_SRC_CUPTI;
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
		const CUpti_ActivityKernel10 *k = (const void *)rec;
		out->kind = LS_GPU_KERNEL;
		out->device = k->deviceId;
		out->stream = k->streamId;
		out->correlation = k->correlationId;
		name_copy(out->name, sizeof(out->name), k->name);
		if (ls_cupti_is_collective(k->name))
			out->flags |= LS_GPU_F_COMM;
		return times(out, k->start, k->end);
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const void *)rec;
		out->kind = LS_GPU_MEMCPY;
		out->copy_kind = m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD   ? LS_COPY_H2D
				 : m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? LS_COPY_D2H
				 : m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD ? LS_COPY_D2D
										  : LS_COPY_OTHER;
		if (m->srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ||
		    m->dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE)
			out->flags |= LS_GPU_F_PAGEABLE;
		out->bytes = m->bytes;
		out->device = m->deviceId;
		out->stream = m->streamId;
		out->correlation = m->correlationId;
		strcpy(out->name, "memcpy");
		return times(out, m->start, m->end);
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)rec;
		out->kind = LS_GPU_MEMSET;
		out->bytes = m->bytes;
		out->device = m->deviceId;
		out->stream = m->streamId;
		out->correlation = m->correlationId;
		strcpy(out->name, "memset");
		return times(out, m->start, m->end);
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		const CUpti_ActivitySynchronization2 *s = (const void *)rec;
		out->kind = LS_GPU_SYNC;
		out->stream = s->streamId;
		out->correlation = s->correlationId;
		strcpy(out->name, "sync");
		return times(out, s->start, s->end);
	}
	default:
		return LS_TR_SKIP;
	}
}
