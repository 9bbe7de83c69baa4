// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The mock engine core: a continuous-batching loop on a simulated GPU, the
 * shape of vLLM's or SGLang's scheduler, with nothing real but the CPU work.
 *
 * Each step: admit waiting requests while the batch and the token budget
 * allow (firing `scheduled`); burn host CPU (scheduling, sampling: real work,
 * so CPU contention really slows it); then run the simulated device: H2D
 * copy, compute (prefill cost per prompt token of newly admitted requests,
 * plus the decode cost), D2H copy — the thread sleeps for each, and each is
 * handed to latsplit as a GPU record labelled simulated; then every request
 * in the batch gets one token. Over the KV budget the newest request is
 * preempted (back to the front of the queue, to be prefilled again).
 * Ground truth (--truth) records every step's intervals and every request's
 * read, queue, schedule, first-token and finish times.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>
#include <time.h>

#include "latsplit/engine.h"
#include "mock.h"

struct engine_config ecfg = {.max_batch = 8, .max_batched_tokens = 4096, .events = true};

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cv = PTHREAD_COND_INITIALIZER;
static struct ereq *waiting_head, *waiting_tail;
static pthread_mutex_t truth_mu = PTHREAD_MUTEX_INITIALIZER;
static bool stopping;
static pthread_t thread;
static uint64_t step_no;
static uint64_t last_wake; /* when the engine thread woke from its last device wait */

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = {.tv_sec = t / 1000000000ull, .tv_nsec = t % 1000000000ull};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Real CPU work: spins until this thread has used `us` of CPU. */
static void burn(double us)
{
	uint64_t until = cpu_ns() + (uint64_t)(us * 1000);
	volatile uint64_t x = 0;

	while (cpu_ns() < until)
		for (int i = 0; i < 1000; i++)
			x += i * x + 1;
}

void engine_submit(struct ereq *r)
{
	if (ecfg.events)
		latsplit_request_arrived(r->id, r->xrid);
	pthread_mutex_lock(&q_mu);
	/* queued: when it is in the waiting queue (the lock may wait for a
	 * step), as vLLM's Scheduler.add_request; the truth's mark is the same */
	r->t_queued = mono_ns();
	if (ecfg.events)
		latsplit_request_queued(r->id, r->prompt_tokens);
	r->t_queued_hi = mono_ns();
	r->needs_prefill = true;
	r->next = NULL;
	if (waiting_tail)
		waiting_tail->next = r;
	else
		waiting_head = r;
	waiting_tail = r;
	pthread_cond_signal(&q_cv);
	pthread_mutex_unlock(&q_mu);
}

static void push_front(struct ereq *r)
{
	r->next = waiting_head;
	waiting_head = r;
	if (!waiting_tail)
		waiting_tail = r;
}

/* One simulated device interval starting at *t: sleeps through it, hands it
 * to latsplit. Returns its end. */
static uint64_t device(uint64_t *t, double us, uint32_t kind, uint32_t copy, const char *name,
		       uint64_t bytes)
{
	static uint32_t correlation;
	struct ls_gpu_record rec = {0};
	uint64_t start = *t, end = start + (uint64_t)(us * 1000);

	if (us <= 0)
		return start;
	rec.correlation = ++correlation;
	latsplit_gpu_launch(rec.correlation); /* the launch, on this thread */
	sleep_until(end);
	last_wake = mono_ns();
	rec.start_ns = start;
	rec.end_ns = end;
	rec.bytes = bytes;
	rec.kind = kind;
	rec.copy_kind = copy;
	rec.source = LS_GPU_SRC_SIMULATED;
	snprintf(rec.name, sizeof(rec.name), "%s", name);
	latsplit_gpu_emit(&rec, 1); /* device records flow even without engine events */
	*t = end;
	return end;
}

static void add_step(struct ereq *r, uint64_t step)
{
	if (r->nsteps == r->capsteps) {
		r->capsteps = r->capsteps ? r->capsteps * 2 : 64;
		r->steps = realloc(r->steps, r->capsteps * sizeof(uint64_t));
		if (!r->steps)
			abort();
	}
	r->steps[r->nsteps++] = step;
}

static int kv_used(struct ereq **run, int n)
{
	int kv = 0;

	for (int i = 0; i < n; i++)
		kv += run[i]->prompt_tokens + run[i]->produced;
	return kv;
}

static void *engine_main(void *arg)
{
	struct ereq *run[256];
	int nrun = 0;
	uint64_t cpu_from = mono_ns(); /* since when this thread has been busy */
	uint64_t noticed = 0;          /* when it woke after the device was done */

	(void)arg;
	/* Wake exactly when the simulated device is done (no 50 us timer
	 * slack): any later start is then CPU contention, as on a real host. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	for (;;) {
		/* ---- schedule ---- */
		pthread_mutex_lock(&q_mu);
		if (!nrun && !waiting_head && !stopping) {
			while (!nrun && !waiting_head && !stopping)
				pthread_cond_wait(&q_cv, &q_mu);
			cpu_from = noticed = mono_ns();
		}
		if (stopping && !nrun && !waiting_head) {
			pthread_mutex_unlock(&q_mu);
			break;
		}
		int budget = ecfg.max_batched_tokens - nrun, prefill_tokens = 0;
		while (waiting_head && nrun < ecfg.max_batch && nrun < 256) {
			struct ereq *r = waiting_head;
			int need = r->prompt_tokens + r->produced;
			if (nrun && need > budget)
				break; /* the token budget is spent: wait for the next step */
			if (ecfg.kv_tokens && nrun && kv_used(run, nrun) + need > ecfg.kv_tokens)
				break;
			waiting_head = r->next;
			if (!waiting_head)
				waiting_tail = NULL;
			budget -= need;
			prefill_tokens += need;
			run[nrun++] = r;
			bool resumed = r->preemptions > 0, first_sched = !r->t_sched;
			if (first_sched)
				r->t_sched = mono_ns();
			if (ecfg.events) {
				if (resumed)
					latsplit_request_resumed(r->id);
				else
					latsplit_request_scheduled(r->id, nrun);
			}
			if (first_sched)
				r->t_sched_hi = mono_ns();
		}
		pthread_mutex_unlock(&q_mu);

		/* ---- one step ---- */
		uint64_t step = step_no++, t0 = mono_ns(), c0 = cpu_ns();
		last_wake = 0;
		burn(ecfg.host_us);
		uint64_t host_end = mono_ns(), host_cpu = cpu_ns() - c0, t = host_end;
		uint64_t h2d_s = t, h2d_e = device(&t, ecfg.h2d_us + ecfg.h2d_us_per_token * prefill_tokens,
						      LS_GPU_MEMCPY, LS_COPY_H2D, "h2d_inputs",
						      4096 + 4ull * prefill_tokens);
		double comp = ecfg.decode_us + (prefill_tokens ? ecfg.prefill_fixed_us : 0) +
			      ecfg.prefill_us_per_token * prefill_tokens;
		uint64_t comp_s = t, comp_e = device(&t, comp, LS_GPU_KERNEL, 0,
						     prefill_tokens ? "prefill_and_decode" : "decode",
						     0);
		uint64_t d2h_s = t, d2h_e = device(&t, ecfg.d2h_us, LS_GPU_MEMCPY, LS_COPY_D2H,
						   "d2h_logits", 4ull * 32000 * nrun);
		uint64_t end = t;

		if (ecfg.truth) {
			pthread_mutex_lock(&truth_mu);
			fprintf(ecfg.truth,
				"{\"step\":%llu,\"start\":%llu,\"end\":%llu,\"batch\":%d,"
				"\"prefill_tokens\":%d,\"busy_from\":%llu,\"noticed\":%llu,"
				"\"host\":[%llu,%llu],\"host_cpu_ns\":%llu,"
				"\"h2d\":[%llu,%llu],\"compute\":[%llu,%llu],\"d2h\":[%llu,%llu]}\n",
				(unsigned long long)step, (unsigned long long)t0, (unsigned long long)end,
				nrun, prefill_tokens, (unsigned long long)cpu_from,
				(unsigned long long)(noticed > cpu_from ? noticed : cpu_from),
				(unsigned long long)t0,
				(unsigned long long)host_end, (unsigned long long)host_cpu,
				(unsigned long long)h2d_s, (unsigned long long)h2d_e,
				(unsigned long long)comp_s, (unsigned long long)comp_e,
				(unsigned long long)d2h_s, (unsigned long long)d2h_e);
			pthread_mutex_unlock(&truth_mu);
		}

		/* ---- every request in the batch gets a token ---- */
		for (int i = 0; i < nrun; i++) {
			struct ereq *r = run[i];
			add_step(r, step);
			r->needs_prefill = false;
			pthread_mutex_lock(&r->mu);
			r->produced++;
			r->produced_at = end;
			if (r->produced >= r->max_tokens)
				r->finished = true;
			/* once finished and unlocked, the front end may free r */
			uint64_t id = r->id;
			bool first = r->produced == 1, finished = r->finished;
			pthread_cond_signal(&r->cv);
			pthread_mutex_unlock(&r->mu);
			if (first && ecfg.events)
				latsplit_first_token(id);
			if (finished) {
				if (ecfg.events)
					latsplit_request_finished(id, LS_ENGINE_OK);
				run[i--] = run[--nrun];
			}
		}
		/* handing out tokens and the next scheduling are host work too,
		 * from when the device was done (waiting for a CPU to notice it
		 * is queueing.cpu: the truth counts both together) */
		cpu_from = end;
		noticed = last_wake;
		/* ---- over the KV budget: preempt the newest ---- */
		while (ecfg.kv_tokens && nrun > 1 && kv_used(run, nrun) > ecfg.kv_tokens) {
			struct ereq *r = run[--nrun];
			r->preemptions++;
			r->needs_prefill = true;
			if (ecfg.events)
				latsplit_request_preempted(r->id);
			pthread_mutex_lock(&q_mu);
			push_front(r);
			pthread_mutex_unlock(&q_mu);
		}
	}
	return NULL;
}

void engine_truth_request(const struct ereq *r)
{
	if (!ecfg.truth)
		return;
	pthread_mutex_lock(&truth_mu);
	fprintf(ecfg.truth,
		"{\"req\":%llu,\"x_request_id\":\"%s\",\"prompt_tokens\":%d,\"tokens\":%d,"
		"\"preemptions\":%d,\"t_read\":%llu,\"t_queued\":%llu,\"t_sched\":%llu,"
		"\"t_queued_hi\":%llu,\"t_sched_hi\":%llu,\"t_first\":%llu,\"t_out\":%llu,"
		"\"t_delay\":[%llu,%llu],\"t_accepted\":%llu,\"steps\":[",
		(unsigned long long)r->id, r->xrid, r->prompt_tokens, r->produced, r->preemptions,
		(unsigned long long)r->t_read, (unsigned long long)r->t_queued,
		(unsigned long long)r->t_sched, (unsigned long long)r->t_queued_hi,
		(unsigned long long)r->t_sched_hi, (unsigned long long)r->t_first,
		(unsigned long long)r->t_out, (unsigned long long)r->t_delay_b,
		(unsigned long long)r->t_delay_e, (unsigned long long)r->t_accepted);
	for (int i = 0; i < r->nsteps; i++)
		fprintf(ecfg.truth, "%s%llu", i ? "," : "", (unsigned long long)r->steps[i]);
	fprintf(ecfg.truth, "],\"fe\":[");
	for (int i = 0; i < r->nfe; i++)
		fprintf(ecfg.truth, "%s[%llu,%llu,%llu]", i ? "," : "", (unsigned long long)r->fe[i][0],
			(unsigned long long)r->fe[i][1], (unsigned long long)r->fe[i][2]);
	fprintf(ecfg.truth, "]}\n");
	fflush(ecfg.truth);
	pthread_mutex_unlock(&truth_mu);
}

void engine_start(void)
{
	pthread_create(&thread, NULL, engine_main, NULL);
}

void engine_stop(void)
{
	pthread_mutex_lock(&q_mu);
	stopping = true;
	pthread_cond_broadcast(&q_cv);
	pthread_mutex_unlock(&q_mu);
	pthread_join(thread, NULL);
	if (ecfg.truth)
		fflush(ecfg.truth);
}
