/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * mock-engine: the shared picture of its two halves, the HTTP front end
 * (main.c: one thread per connection, like an API server) and the engine
 * core (engine.c: one thread running a continuous-batching loop on a
 * simulated GPU). They meet in struct ereq: the front end submits it and
 * waits for tokens; the engine schedules it and produces them.
 */
#ifndef LATSPLIT_MOCK_H
#define LATSPLIT_MOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct engine_config {
	int max_batch;           /* requests in a running batch */
	int max_batched_tokens;  /* prompt + decode tokens one step may process */
	double prefill_fixed_us; /* simulated compute per step that prefills anything */
	double prefill_us_per_token;
	double decode_us;        /* simulated compute per step */
	double h2d_us, d2h_us;   /* simulated copies per step */
	double h2d_us_per_token; /* extra H2D per prompt token prefilled */
	double host_us;          /* real CPU burned per step (scheduling, sampling) */
	int kv_tokens;           /* KV budget in tokens; over it the newest is preempted */
	bool events;             /* fire latsplit engine events */
	FILE *truth;             /* ground truth JSONL, or NULL */
};

struct ereq {
	uint64_t id;
	char xrid[80];
	int prompt_tokens;
	int max_tokens;

	/* engine -> front end */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int produced;  /* tokens produced so far */
	bool finished;
	uint64_t produced_at; /* when the device finished the latest token */

	/* engine state */
	bool needs_prefill;
	int preemptions;
	struct ereq *next;

	/* ground truth, CLOCK_MONOTONIC ns */
	uint64_t t_read, t_queued, t_sched, t_first, t_out;
	/* after the probe that t_queued / t_sched stand for returned: a thread
	 * preempted between the mark and the probe leaves the truth a range */
	uint64_t t_queued_hi, t_sched_hi;
	/* --read-delay-ms: the front end's sleep before reading it, from its
	 * start to the thread's return from it (0, 0: none) */
	uint64_t t_delay_b, t_delay_e;
	uint64_t t_accepted; /* its connection's accept, when it is the first request there (else 0) */
	uint64_t *steps; /* indices of the steps it took part in */
	int nsteps, capsteps;
	/* the front end's CPU work for this request: from a token being ready
	 * (or from noticing it) to its write returning */
	uint64_t (*fe)[3]; /* [ready, noticed, written] */
	int nfe, capfe;
};

extern struct engine_config ecfg;

uint64_t mono_ns(void);
void engine_start(void);
void engine_stop(void);
/* Queues r (t_read set by the caller); fires arrived + queued. */
void engine_submit(struct ereq *r);
/* Writes r's ground truth line (after the front end's last write). */
void engine_truth_request(const struct ereq *r);

#endif
