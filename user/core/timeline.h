/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The engine group's timeline: what the GPU was doing (kernels, copies), what
 * the group's threads were doing (on CPU, runnable), and the engine's own
 * request events — built from a capture's records, then queried per request
 * window by the attribution. Also joins engine requests to HTTP requests.
 *
 * The engine group (DESIGN.md §6): the tracked processes. In a capture that
 * tracked everything, it is the processes that served HTTP requests or fired
 * engine or GPU events.
 */
#ifndef LATSPLIT_USER_TIMELINE_H
#define LATSPLIT_USER_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "container.h"
#include "latsplit/events.h"
#include "quant.h"
#include "requests.h"

struct ls_span {
	uint64_t b, e;
};

/* A sorted list of disjoint spans. */
struct ls_spans {
	struct ls_span *v;
	size_t n, cap;
};

enum ls_layer {
	LS_L_KERNEL, LS_L_COMM, LS_L_H2D, LS_L_D2H, LS_L_XFER_OTHER, LS_L_ONCPU, LS_L_RUNNABLE,
	LS_L_N,
};

struct ls_timeline;

#define LS_GPU_MAX_DEV 16
#define LS_GPU_MAX_NAMES 256

/* GPU facts for the report: busy time per device, kernels by name, copies
 * by direction (index: enum ls_gpu_copy), pageable copies. */
struct ls_gpu_summary {
	uint64_t dev_busy_ns[LS_GPU_MAX_DEV];
	uint32_t ndev;
	struct {
		char name[64];
		uint64_t ns, count;
	} names[LS_GPU_MAX_NAMES];
	size_t nnames;
	uint64_t copy_ns[4], copy_bytes[4], copies[4];
	uint64_t pageable_copies;
};

/* Run-queue waits of engine-group threads (wakeup or preemption to
 * running), ns. */
struct ls_runq {
	struct ls_quant q;
	uint64_t over_ms; /* waits of 1024 us or more (runqlat's bucket edge) */
};

/* What the timeline sees, as it sees it, for sinks that draw it (the
 * Perfetto timeline): a thread's on-CPU, runnable and blocked spans (at the
 * switch or wakeup that ends them), each GPU record, each engine event, and
 * each device's busy periods (the union of its GPU work: tgid is the
 * device, rec NULL), told when they close, in order per device. */
enum ls_span_kind {
	LS_SPAN_ONCPU, LS_SPAN_RUNNABLE, LS_SPAN_BLOCKED, LS_SPAN_GPU, LS_SPAN_ENGINE,
	LS_SPAN_GPU_BUSY,
};

struct ls_span_sink {
	void (*span)(void *ctx, enum ls_span_kind kind, uint32_t tgid, uint32_t tid, uint64_t b,
		     uint64_t e, const struct ls_hdr *rec);
	void *ctx;
};

struct ls_timeline *ls_timeline_new(bool track_all);
void ls_timeline_set_span_sink(struct ls_timeline *tl, const struct ls_span_sink *sink);
void ls_timeline_add(struct ls_timeline *tl, const struct ls_hdr *rec);
/* A process served an HTTP request: in a capture that tracked everything,
 * it joins the engine group. */
void ls_timeline_note_pid(struct ls_timeline *tl, uint32_t pid);
/* Merges the kept spans into the layers the queries below read. */
void ls_timeline_build(struct ls_timeline *tl);
/* Forgets spans that ended, and engine requests that arrived, before t
 * (their run-queue waits are counted first). */
void ls_timeline_retire(struct ls_timeline *tl, uint64_t t);
/* note_pid for each request, then build (tests, one-shot use). */
void ls_timeline_finish(struct ls_timeline *tl, const struct ls_request *reqs, size_t n);
/* After the last record: counts the run-queue waits still kept. */
void ls_timeline_close(struct ls_timeline *tl);
void ls_timeline_free(struct ls_timeline *tl);

/* Where a process ran when it is a container's (its newest LS_REC_PROC_NS
 * said so): its pid there and the container's name. */
struct ls_proc_place {
	uint32_t pid, ns_pid;
	struct ls_container c;
	char *cgroup;
};
const struct ls_proc_place *ls_timeline_place(const struct ls_timeline *tl, uint32_t pid);

/* The merged spans of a layer (valid after finish). */
const struct ls_spans *ls_timeline_layer(const struct ls_timeline *tl, enum ls_layer l);
/* What the capture holds: GPU records (and their source), engine events. */
bool ls_timeline_has_gpu(const struct ls_timeline *tl);
const struct ls_gpu_summary *ls_timeline_gpu_summary(const struct ls_timeline *tl);
const char *ls_timeline_gpu_source(const struct ls_timeline *tl);
bool ls_timeline_has_engine(const struct ls_timeline *tl);
/* Engine spans (OTLP) received, and those let go or still held that
 * joined no request. */
void ls_timeline_span_counts(const struct ls_timeline *tl, uint64_t *received, uint64_t *unjoined);
/* A process's name from the capture's process records, NULL if none. */
const char *ls_timeline_comm(const struct ls_timeline *tl, uint32_t pid);
bool ls_timeline_has_sched(const struct ls_timeline *tl);
/* Whether process tgid is in the engine group (so far). */
bool ls_timeline_in_group(const struct ls_timeline *tl, uint32_t tgid);
/* Run-queue waits counted so far (all of them after close). */
struct ls_runq *ls_timeline_runq(struct ls_timeline *tl);

/* Engine facts joined to one HTTP request. */
struct ls_engine_join {
	bool joined;
	uint64_t t_arrived, t_queued, t_sched, t_first, t_finish;
	uint32_t batch_size; /* at scheduling */
	uint32_t prompt_tokens;
	uint32_t preemptions;
	/* without engine events: when a single-slot application's slot freed
	 * for the request (the analysis sets it, DESIGN §11), 0 when unknown */
	uint64_t t_slot;
	bool otlp; /* from the engine's own span (record --otlp-receive), not its events */
};

/* Joins each request to an engine request: by X-Request-Id (an engine
 * span's request id holding it as a word, or its trace id the request's
 * traceparent's), else by process and time (the first unclaimed engine
 * arrival at or after T_read - 1 ms, before T_out); engine events before
 * spans. out[i] for reqs[i]. */
void ls_timeline_join(struct ls_timeline *tl, const struct ls_request *reqs, size_t n,
		      struct ls_engine_join *out);
/* The same, claiming nothing (a provisional split: the final join later
 * may still give the engine request to another). */
void ls_timeline_join_peek(struct ls_timeline *tl, const struct ls_request *reqs, size_t n,
			   struct ls_engine_join *out);
/* Inference without engine events. The first token came from the GPU busy
 * period (spans less than 20 us apart merged) that ended last before
 * t_first; a continuous-batching engine admitted the request when the step
 * before it ended. So: the end of the previous busy period, but not before
 * t_read nor after the producing period's start. 0 without GPU data.
 * When the writing thread (first_tid) waited for a CPU before the write, the
 * token was ready when it was woken: that time, not the write, is used
 * (unless it woke before t_read: it never slept, and the write stands; or
 * before any step since t_read was over: that wake was not the token's). */
uint64_t ls_timeline_infer_sched(const struct ls_timeline *tl, uint64_t t_read, uint64_t t_first,
				 uint32_t first_tid);
/* For a non-streaming response the first write follows the last token, so
 * T_first says nothing about scheduling: assume the next step boundary at or
 * after t_read (the end of the busy period t_read falls in, else t_read),
 * once the thread driving the GPU is on a CPU there (a scheduler asleep or
 * waiting for a CPU admits nothing), but not after the next busy period's
 * start. */
uint64_t ls_timeline_next_boundary(const struct ls_timeline *tl, uint64_t t_read);

/* Spans: add (unsorted, overlapping allowed) then normalise. */
void ls_spans_add(struct ls_spans *s, uint64_t b, uint64_t e);
void ls_spans_normalise(struct ls_spans *s);
/* Index of the first span ending after t (s->n if none). */
size_t ls_spans_seek(const struct ls_spans *s, uint64_t t);
void ls_spans_free(struct ls_spans *s);

#endif
