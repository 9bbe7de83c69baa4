// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * liblatsplit-cupti.so: a CUPTI injection library (CUDA_INJECTION64_PATH).
 *
 * - Registers a CLOCK_MONOTONIC timestamp callback before enabling any
 *   activity kind, so GPU records compare directly with bpf_ktime_get_ns().
 * - Collects only while an agent is attached: a control thread watches the
 *   gpu_activity USDT semaphore and enables/disables the activity kinds
 *   (concurrent kernels, memcpy, memset, synchronization) accordingly, and
 *   flushes every 100 ms so live views see data quickly.
 * - Hands records over through USDT probes (include/latsplit/engine.h) in
 *   batches; the agent's BPF copies them into its ring buffer.
 * - Graph launches: CONCURRENT_KERNEL gives one record per kernel node (the
 *   per-kernel timing the split needs); GRAPH_TRACE would be cheaper (one
 *   record per graph) but loses it. Set LATSPLIT_CUPTI_GRAPH=trace to trade.
 * - Bounded memory (at most 64 buffers of 1 MiB outstanding; beyond, CUPTI
 *   drops and counts), zero/inverted timestamps dropped and counted, CUPTI's
 *   own drop counts polled; counters go to the agent (gpu_stats probe).
 * - Never aborts the host process: every CUPTI error turns the shim off.
 *   One line on stderr when it loads, nothing else.
 * - Diagnostics (tools/gpu-check.sh): LATSPLIT_CUPTI_SUMMARY=FILE collects
 *   even with no agent attached and writes totals (kernels, copies, drops) as
 *   JSON to FILE at exit, to compare with other profilers and to measure the
 *   collection cost on its own.
 */
#include <stdbool.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cupti.h>

#define LATSPLIT_ENGINE_DEFINE_SEMAPHORES
#include "latsplit/engine.h"
#include "translate.h"

#define EXPORT __attribute__((visibility("default")))
#define BUF_SIZE (1u << 20)
#define MAX_BUFFERS 64
#define BATCH 64

static struct {
	atomic_ullong records, bad_time, cupti_dropped, refused;
	/* LATSPLIT_CUPTI_SUMMARY totals */
	const char *summary_path;
	atomic_ullong kernels, kernel_ns, copies, copy_bytes, copy_ns, pageable;
	atomic_int outstanding;
	atomic_bool stop;
	bool enabled, broken, graph_trace;
	pthread_t control;
	CUpti_SubscriberHandle subscriber;
} shim;

static uint64_t CUPTIAPI monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void emit(const struct ls_gpu_record *recs, uint32_t n)
{
	if (shim.summary_path) {
		for (uint32_t i = 0; i < n; i++) {
			uint64_t d = recs[i].end_ns - recs[i].start_ns;
			if (recs[i].kind == LS_GPU_KERNEL) {
				shim.kernels++;
				shim.kernel_ns += d;
			} else if (recs[i].kind == LS_GPU_MEMCPY) {
				shim.copies++;
				shim.copy_bytes += recs[i].bytes;
				shim.copy_ns += d;
				shim.pageable += !!(recs[i].flags & LS_GPU_F_PAGEABLE);
			}
		}
	}
	if (!LATSPLIT_ENABLED(gpu_activity))
		return;
	for (uint32_t i = 0; i < n; i++)
		LATSPLIT_GPU_ACTIVITY(&recs[i]);
	shim.records += n;
}

/* Translates and hands over records; the batch keeps per-record cost low. */
static void emit_records(CUpti_Activity *const *recs, size_t n)
{
	struct ls_gpu_record batch[BATCH];
	uint32_t k = 0;

	for (size_t i = 0; i < n; i++) {
		switch (ls_cupti_translate(recs[i], &batch[k])) {
		case LS_TR_OK:
			if (++k == BATCH) {
				emit(batch, k);
				k = 0;
			}
			break;
		case LS_TR_BAD_TIME:
			shim.bad_time++;
			break;
		case LS_TR_SKIP:
			break;
		}
	}
	emit(batch, k);
}

/* Test hook: drives the emit path with hand-built CUPTI records (no GPU). */
EXPORT void latsplit_cupti_emit_test(CUpti_Activity *const *recs, size_t n)
{
	emit_records(recs, n);
	LATSPLIT_GPU_STATS(shim.records, shim.bad_time, shim.cupti_dropped, shim.refused);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = NULL;
	*size = 0;
	*max_records = 0;
	if (shim.outstanding >= MAX_BUFFERS) {
		shim.refused++; /* CUPTI drops the records and counts them */
		return;
	}
	*buffer = aligned_alloc(8, BUF_SIZE);
	if (*buffer) {
		*size = BUF_SIZE;
		shim.outstanding++;
	}
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
				      size_t valid)
{
	CUpti_Activity *rec = NULL, *batch[BATCH];
	size_t n = 0, dropped = 0;

	(void)size;
	while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		batch[n++] = rec;
		if (n == BATCH) {
			emit_records(batch, n);
			n = 0;
		}
	}
	emit_records(batch, n);
	if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
		shim.cupti_dropped += dropped;
	free(buffer);
	shim.outstanding--;
}

static const CUpti_ActivityKind kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMSET,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
};

static void set_enabled(bool on)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		CUptiResult r = on ? cuptiActivityEnable(kinds[i]) : cuptiActivityDisable(kinds[i]);
		if (r != CUPTI_SUCCESS && kinds[i] != CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)
			shim.broken = true;
	}
	if (shim.graph_trace)
		on ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE)
		   : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
	if (!on)
		cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	shim.enabled = on;
}

/* Watches for an agent; enables collection while one is attached. */
static void *control_main(void *arg)
{
	struct timespec tick = {.tv_sec = 0, .tv_nsec = 100000000};
	unsigned n = 0;

	(void)arg;
	while (!shim.stop && !shim.broken) {
		bool attached = LATSPLIT_ENABLED(gpu_activity) || shim.summary_path;

		if (attached != shim.enabled)
			set_enabled(attached);
		if (shim.enabled) {
			cuptiActivityFlushAll(0);
			if (++n % 10 == 0)
				LATSPLIT_GPU_STATS(shim.records, shim.bad_time, shim.cupti_dropped,
						   shim.refused);
		}
		nanosleep(&tick, NULL);
	}
	return NULL;
}

/* The launching thread fires gpu_launch with the correlation id. */
static void CUPTIAPI on_api(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			    const void *data)
{
	const CUpti_CallbackData *cb = data;

	(void)userdata;
	(void)domain;
	(void)cbid;
	if (cb->callbackSite == CUPTI_API_ENTER)
		LATSPLIT_GPU_LAUNCH(cb->correlationId);
}

static void at_exit(void)
{
	shim.stop = true;
	if (shim.enabled) {
		cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		LATSPLIT_GPU_STATS(shim.records, shim.bad_time, shim.cupti_dropped, shim.refused);
	}
	if (shim.summary_path) {
		FILE *f = fopen(shim.summary_path, "w");
		if (f) {
			fprintf(f,
				"{\"kernels\":%llu,\"kernel_ns\":%llu,\"copies\":%llu,\"copy_bytes\":%llu,"
				"\"copy_ns\":%llu,\"pageable_copies\":%llu,\"bad_time\":%llu,"
				"\"cupti_dropped\":%llu,\"refused_buffers\":%llu}\n",
				(unsigned long long)shim.kernels, (unsigned long long)shim.kernel_ns,
				(unsigned long long)shim.copies, (unsigned long long)shim.copy_bytes,
				(unsigned long long)shim.copy_ns, (unsigned long long)shim.pageable,
				(unsigned long long)shim.bad_time, (unsigned long long)shim.cupti_dropped,
				(unsigned long long)shim.refused);
			fclose(f);
		}
	}
}

EXPORT int InitializeInjection(void)
{
	const char *g = getenv("LATSPLIT_CUPTI_GRAPH");

	shim.graph_trace = g && !strcmp(g, "trace");
	shim.summary_path = getenv("LATSPLIT_CUPTI_SUMMARY");
	/* The clock first: every record must be on CLOCK_MONOTONIC. */
	if (cuptiActivityRegisterTimestampCallback(monotonic_ns) != CUPTI_SUCCESS ||
	    cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
		fprintf(stderr, "latsplit-cupti: CUPTI refused the timestamp callback or buffers; "
				"GPU timings off for this process\n");
		return 0;
	}
	if (cuptiSubscribe(&shim.subscriber, on_api, NULL) == CUPTI_SUCCESS) {
		cuptiEnableCallback(1, shim.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
				    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
		cuptiEnableCallback(1, shim.subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
				    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
		cuptiEnableCallback(1, shim.subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
				    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
	}
	if (pthread_create(&shim.control, NULL, control_main, NULL) == 0)
		pthread_detach(shim.control);
	atexit(at_exit);
	fprintf(stderr, "latsplit-cupti: loaded (pid %d); collecting while latsplit is attached\n",
		getpid());
	return 1;
}
