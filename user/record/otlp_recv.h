/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * record --otlp-receive (DESIGN §11, engines without patches): an OTLP/HTTP
 * trace receiver (POST /v1/traces, application/x-protobuf or
 * application/json, gzip or not; libmicrohttpd, protobuf-c from the
 * official .proto files, json-c) that turns an engine's own request spans
 * into capture records (LS_REC_ENGINE_SPAN).
 *
 * A span is an engine request span when it carries gen_ai.request.id and
 * gen_ai.latency.time_in_queue or .time_to_first_token (vLLM's llm_request;
 * the values in seconds). Its marks, from its start (the engine took the
 * request, on the wall clock, mapped to CLOCK_MONOTONIC through the
 * capture header's pair):
 *   T_first  = start + time_to_first_token
 *   T_finish = start + e2e (else the span's end)
 *   T_sched  = T_first - time_in_model_prefill, T_queued = T_sched -
 *              time_in_queue (vLLM V1: the queue and prefill are the core's
 *              own intervals); without prefill (vLLM V0: time_in_queue runs
 *              from arrival), T_queued = start, T_sched = start + queue.
 * Other spans are counted, not kept. The HTTP server's threads decode; the
 * recorder's loop takes the records (ls_otlp_recv_take) and writes them.
 */
#ifndef LATSPLIT_RECORD_OTLP_RECV_H
#define LATSPLIT_RECORD_OTLP_RECV_H

#include <stddef.h>
#include <stdint.h>

#include "latsplit/events.h"

struct ls_otlp_recv;

/* Listens on spec ([ADDR:]PORT, address 127.0.0.1 by default); wall-clock
 * times map to monotonic as realtime_ns <-> monotonic_ns. NULL with err. */
struct ls_otlp_recv *ls_otlp_recv_start(const char *spec, uint64_t realtime_ns,
					uint64_t monotonic_ns, char *err, size_t len);
/* Hands each span record received since the last call to emit, in order. */
void ls_otlp_recv_take(struct ls_otlp_recv *o, void (*emit)(void *ctx, const struct ls_hdr *h),
		       void *ctx);
/* One line of what it received and left out. */
void ls_otlp_recv_summary(const struct ls_otlp_recv *o, char *buf, size_t len);
/* Stops listening (what is still queued stays for a last take). */
void ls_otlp_recv_stop(struct ls_otlp_recv *o);
void ls_otlp_recv_free(struct ls_otlp_recv *o);

#endif
