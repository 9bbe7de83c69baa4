// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * liblatsplit-engine.so: the engine-event probes of include/latsplit/engine.h
 * as plain C functions, for engines that cannot include the header (Python
 * through ctypes: tools/python/latsplit_engine.py). The semaphores live here;
 * the agent attaches to this library by path in every process.
 */
#define LATSPLIT_ENGINE_DEFINE_SEMAPHORES
#include "latsplit/engine.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT void latsplit_request_arrived(uint64_t req_id, const char *x_request_id)
{
	LATSPLIT_REQUEST_ARRIVED(req_id, x_request_id ? x_request_id : "");
}

EXPORT void latsplit_request_queued(uint64_t req_id, uint32_t prompt_tokens)
{
	LATSPLIT_REQUEST_QUEUED(req_id, prompt_tokens);
}

EXPORT void latsplit_request_scheduled(uint64_t req_id, uint32_t batch_size)
{
	LATSPLIT_REQUEST_SCHEDULED(req_id, batch_size);
}

EXPORT void latsplit_first_token(uint64_t req_id)
{
	LATSPLIT_FIRST_TOKEN(req_id);
}

EXPORT void latsplit_request_preempted(uint64_t req_id)
{
	LATSPLIT_REQUEST_PREEMPTED(req_id);
}

EXPORT void latsplit_request_resumed(uint64_t req_id)
{
	LATSPLIT_REQUEST_RESUMED(req_id);
}

EXPORT void latsplit_request_finished(uint64_t req_id, uint32_t status)
{
	LATSPLIT_REQUEST_FINISHED(req_id, status);
}

EXPORT void latsplit_gpu_emit(const struct ls_gpu_record *recs, uint32_t n)
{
	if (!LATSPLIT_ENABLED(gpu_activity))
		return;
	for (uint32_t i = 0; i < n; i++)
		LATSPLIT_GPU_ACTIVITY(&recs[i]);
}

EXPORT void latsplit_gpu_launch(uint32_t correlation)
{
	LATSPLIT_GPU_LAUNCH(correlation);
}

EXPORT int latsplit_engine_attached(void)
{
	return latsplit_event_ring_semaphore || latsplit_request_arrived_semaphore ||
	       latsplit_request_scheduled_semaphore || latsplit_gpu_activity_semaphore;
}
