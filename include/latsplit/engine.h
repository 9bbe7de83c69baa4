/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * latsplit engine events: USDT probes (provider "latsplit") that an inference
 * engine fires at request lifecycle points, and the GPU activity record the
 * CUPTI shim and simulated devices hand to the agent.
 *
 * Two ways to use it:
 *  - C/C++ engines: include this header and call the LATSPLIT_* macros. In
 *    exactly one source file, #define LATSPLIT_ENGINE_DEFINE_SEMAPHORES before
 *    the include. Each probe is guarded by its semaphore: with no agent
 *    attached a probe costs one load and a branch.
 *  - Anything else (Python engines via ctypes): link or dlopen
 *    liblatsplit-engine.so and call the latsplit_* functions below.
 *
 * Request ids are the engine's own (any 64-bit value, unique while the
 * request lives). x_request_id is the HTTP X-Request-Id when the engine has
 * it (NULL otherwise): the agent joins engine requests to HTTP requests by it,
 * else by process and time.
 */
#ifndef LATSPLIT_ENGINE_H
#define LATSPLIT_ENGINE_H

#ifdef __VMLINUX_H__ /* BPF programs: vmlinux.h has the fixed-width types */
#define LATSPLIT_ENGINE_NO_PROBES
#else
#include <stdint.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* GPU activity (DESIGN.md §7). Times are CLOCK_MONOTONIC ns. */
enum ls_gpu_kind {
	LS_GPU_KERNEL = 1,
	LS_GPU_MEMCPY = 2,
	LS_GPU_MEMSET = 3,
	LS_GPU_SYNC = 4,
};
enum ls_gpu_copy { LS_COPY_OTHER = 0, LS_COPY_H2D = 1, LS_COPY_D2H = 2, LS_COPY_D2D = 3 };
enum ls_gpu_source { LS_GPU_SRC_SIMULATED = 1, LS_GPU_SRC_CUPTI = 2, LS_GPU_SRC_UPROBE = 3 };
#define LS_GPU_F_COMM 1     /* a collective (NCCL-style): compute.comm */
#define LS_GPU_F_PAGEABLE 2 /* memcpy from/to pageable host memory */
#define LS_GPU_F_HOST_SIDE 4 /* uprobe: a launch or async enqueue, not device time */

struct ls_gpu_record {
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t bytes;       /* memcpy/memset */
	uint32_t kind;        /* enum ls_gpu_kind */
	uint32_t copy_kind;   /* enum ls_gpu_copy */
	uint32_t source;      /* enum ls_gpu_source */
	uint32_t flags;       /* LS_GPU_F_* */
	uint32_t device;
	uint32_t stream;
	uint32_t correlation; /* launch <-> kernel; 32-bit, wraps */
	uint32_t pad;
	char name[64];        /* kernel name (truncated), or "" */
};

/* Request status at finish. */
enum ls_engine_status { LS_ENGINE_OK = 0, LS_ENGINE_ABORTED = 1, LS_ENGINE_ERROR = 2 };

#ifndef __VMLINUX_H__
/* The library's functions (liblatsplit-engine.so). */
void latsplit_request_arrived(uint64_t req_id, const char *x_request_id);
void latsplit_request_queued(uint64_t req_id, uint32_t prompt_tokens);
void latsplit_request_scheduled(uint64_t req_id, uint32_t batch_size);
void latsplit_first_token(uint64_t req_id);
void latsplit_request_preempted(uint64_t req_id);
void latsplit_request_resumed(uint64_t req_id);
void latsplit_request_finished(uint64_t req_id, uint32_t status);
/* Hands n GPU records to the agent (no-op when none is attached). */
void latsplit_gpu_emit(const struct ls_gpu_record *recs, uint32_t n);
/* A kernel or copy launch on this thread, at the API call; correlation is
 * repeated in the device record (struct ls_gpu_record.correlation) so the
 * agent can draw GPU time by the CPU stack that launched it. The CUPTI shim
 * does this itself; an engine with its own device runtime calls it. */
void latsplit_gpu_launch(uint32_t correlation);
/* 1 when an agent is attached to any probe (cheap; lets callers skip
 * preparing records nobody reads). */
int latsplit_engine_attached(void);
#endif

#ifdef __cplusplus
}
#endif

/* ---- the probes themselves, for code that links this header ---- */
#ifndef LATSPLIT_ENGINE_NO_PROBES
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
/* x86-64: the probe site as the 5-byte NOP (0f 1f 44 00 00) instead of
 * sys/sdt.h's 1-byte one. Kernels with optimized uprobes (the 6.18 kernel
 * this was measured on has them) then replace the int3 trap with a call to
 * a uprobe trampoline after the first hit; others trap as before. {disp8} keeps the assembler from
 * shortening it. Define LATSPLIT_SDT_NOP1 to keep sys/sdt.h's NOP. */
#if defined(__x86_64__) && !defined(LATSPLIT_SDT_NOP1)
#undef _SDT_NOP
#define _SDT_NOP %{disp8%} nopl 0(%%rax,%%rax,1)
#endif

#define LATSPLIT_PROBES(X)                                                                  \
	X(request_arrived) X(request_queued) X(request_scheduled) X(first_token)            \
	X(request_preempted) X(request_resumed) X(request_finished) X(gpu_activity)         \
	X(gpu_launch) X(gpu_stats)

#ifdef LATSPLIT_ENGINE_DEFINE_SEMAPHORES
#define LATSPLIT_SEMA(name)                                                                 \
	__extension__ unsigned short latsplit_##name##_semaphore                            \
		__attribute__((unused, section(".probes")));
#else
#define LATSPLIT_SEMA(name) extern unsigned short latsplit_##name##_semaphore;
#endif
LATSPLIT_PROBES(LATSPLIT_SEMA)

#define LATSPLIT_ENABLED(name) __builtin_expect(latsplit_##name##_semaphore != 0, 0)

#define LATSPLIT_REQUEST_ARRIVED(id, xrid)                                                  \
	do {                                                                                \
		if (LATSPLIT_ENABLED(request_arrived))                                      \
			STAP_PROBE2(latsplit, request_arrived, (uint64_t)(id), (xrid));     \
	} while (0)
#define LATSPLIT_REQUEST_QUEUED(id, prompt_tokens)                                          \
	do {                                                                                \
		if (LATSPLIT_ENABLED(request_queued))                                       \
			STAP_PROBE2(latsplit, request_queued, (uint64_t)(id),               \
				    (uint32_t)(prompt_tokens));                             \
	} while (0)
#define LATSPLIT_REQUEST_SCHEDULED(id, batch)                                               \
	do {                                                                                \
		if (LATSPLIT_ENABLED(request_scheduled))                                    \
			STAP_PROBE2(latsplit, request_scheduled, (uint64_t)(id),            \
				    (uint32_t)(batch));                                     \
	} while (0)
#define LATSPLIT_FIRST_TOKEN(id)                                                            \
	do {                                                                                \
		if (LATSPLIT_ENABLED(first_token))                                          \
			STAP_PROBE1(latsplit, first_token, (uint64_t)(id));                 \
	} while (0)
#define LATSPLIT_REQUEST_PREEMPTED(id)                                                      \
	do {                                                                                \
		if (LATSPLIT_ENABLED(request_preempted))                                    \
			STAP_PROBE1(latsplit, request_preempted, (uint64_t)(id));           \
	} while (0)
#define LATSPLIT_REQUEST_RESUMED(id)                                                        \
	do {                                                                                \
		if (LATSPLIT_ENABLED(request_resumed))                                      \
			STAP_PROBE1(latsplit, request_resumed, (uint64_t)(id));             \
	} while (0)
#define LATSPLIT_REQUEST_FINISHED(id, status)                                               \
	do {                                                                                \
		if (LATSPLIT_ENABLED(request_finished))                                     \
			STAP_PROBE2(latsplit, request_finished, (uint64_t)(id),             \
				    (uint32_t)(status));                                    \
	} while (0)
#define LATSPLIT_GPU_ACTIVITY(rec_ptr)                                                      \
	do {                                                                                \
		if (LATSPLIT_ENABLED(gpu_activity))                                         \
			STAP_PROBE1(latsplit, gpu_activity, (rec_ptr));                     \
	} while (0)
/* A kernel launch on this thread (the CUPTI shim fires it at the API call):
 * the agent can take the CPU stack and join it to the kernel record. */
#define LATSPLIT_GPU_LAUNCH(correlation)                                                    \
	do {                                                                                \
		if (LATSPLIT_ENABLED(gpu_launch))                                           \
			STAP_PROBE1(latsplit, gpu_launch, (uint32_t)(correlation));         \
	} while (0)
/* Cumulative shim counters: records handed over, dropped for bad
 * timestamps, dropped by CUPTI, buffers refused for the memory bound. */
#define LATSPLIT_GPU_STATS(records, bad_time, cupti_dropped, refused)                       \
	do {                                                                                \
		if (LATSPLIT_ENABLED(gpu_stats))                                            \
			STAP_PROBE4(latsplit, gpu_stats, (uint64_t)(records),               \
				    (uint64_t)(bad_time), (uint64_t)(cupti_dropped),        \
				    (uint64_t)(refused));                                   \
	} while (0)
#endif /* LATSPLIT_ENGINE_NO_PROBES */

#endif /* LATSPLIT_ENGINE_H */
