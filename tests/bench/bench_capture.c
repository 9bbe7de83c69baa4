// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Capture writer and reader throughput on synthetic records shaped like a
 * real capture (sched switches and TCP probes with realistic field churn:
 * random threads and connections, each thread with its own process and
 * name, each connection's sequence moving on).
 * Prints figures; never fails on speed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A thread of the synthetic host: 4 processes of 16 threads, each thread
 * with its process and name for life, as on a real one. */
static void thread(unsigned tid, __u32 *pid, char *comm)
{
	static const char *comms[] = {"python3", "vllm-engine", "uvicorn", "swapper/0", "kworker/1:2"};

	*pid = 4000 + tid / 16;
	strcpy(comm, comms[tid % 5]);
}

static void make(struct ls_ev_sched_switch *sw, struct ls_ev_tcp_probe *pr, unsigned i, __u64 *ts,
		 unsigned *seed)
{
	static __u32 stream[65]; /* each connection's sequence: where its last segment ended */
	unsigned prev = rand_r(seed) % 64, next = rand_r(seed) % 64;

	*ts += 2000 + rand_r(seed) % 20000;
	memset(sw, 0, sizeof(*sw));
	sw->h.type = LS_EV_SCHED_SWITCH;
	sw->h.size = sizeof(*sw);
	sw->h.cpu = i & 1;
	sw->h.ts = *ts;
	sw->h.tid = 4000 + prev;
	thread(prev, &sw->h.pid, sw->prev_comm);
	sw->next_tid = 4000 + next;
	thread(next, &sw->next_pid, sw->next_comm);
	sw->prev_state = rand_r(seed) % 3 ? 1 : 0;
	sw->prev_prio = sw->next_prio = 120;
	memset(pr, 0, sizeof(*pr));
	pr->h.type = LS_EV_TCP_PROBE;
	pr->h.size = sizeof(*pr);
	pr->h.ts = *ts + 500;
	pr->conn_id = 1 + rand_r(seed) % 64;
	pr->skaddr = 0xffff888100000000ull + pr->conn_id * 4096;
	pr->srtt_us = 200 + rand_r(seed) % 50;
	pr->snd_cwnd = 10;
	pr->snd_una = stream[pr->conn_id] += 1448;
	pr->snd_nxt = pr->snd_una + 2896;
	pr->data_len = rand_r(seed) % 2 ? 0 : 512;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	/* level 1 plain (version-1 frames) beside the column transform at 1,
	 * 2 and 6 */
	int levels[] = {1, 1, 2, 6};
	bool plain[] = {true, false, false, false};
	char path[64];

	printf("capture writer/reader on %ld synthetic records (sched_switch + tcp_probe, %zu/%zu B)\n",
	       n, sizeof(struct ls_ev_sched_switch), sizeof(struct ls_ev_tcp_probe));
	printf("%-10s %14s %10s %10s %12s %14s %10s\n", "zlib", "write ev/s", "write MB/s", "B/event",
	       "ratio", "read ev/s", "read MB/s");
	for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
		struct ls_file_hdr hdr;
		struct ls_writer *w;
		struct ls_writer_opts o = {.zlib_level = levels[l], .plain = plain[l]};
		struct ls_writer_stats st;
		struct ls_ev_sched_switch sw;
		struct ls_ev_tcp_probe pr;
		unsigned seed = 1;
		__u64 ts = 1000000000ull;

		snprintf(path, sizeof(path), "/tmp/ls-bench-%d.data", getpid());
		unlink(path);
		ls_file_hdr_init(&hdr, argc, argv);
		if (ls_writer_open(&w, path, &hdr, &o)) {
			perror("open");
			return 1;
		}
		double t0 = now();
		for (long i = 0; i < n; i += 2) {
			make(&sw, &pr, i, &ts, &seed);
			ls_writer_append(w, &sw.h);
			ls_writer_append(w, &pr.h);
		}
		ls_writer_close(w, NULL, &st);
		double tw = now() - t0;

		struct ls_reader *r;
		const struct ls_hdr *h;
		char err[256];
		long got = 0;
		t0 = now();
		if (ls_reader_open(&r, path, err, sizeof(err))) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		while (ls_reader_next(r, &h) == 1)
			got++;
		ls_reader_close(r);
		double tr = now() - t0;
		printf("%d %-8s %14.0f %10.1f %10.2f %11.1fx %14.0f %10.1f%s\n", levels[l],
		       plain[l] ? "plain" : "columns", n / tw,
		       st.raw_bytes / tw / 1e6, (double)st.file_bytes / n,
		       (double)st.raw_bytes / st.file_bytes, got / tr, st.raw_bytes / tr / 1e6,
		       got == n ? "" : "  (READ MISMATCH)");
		printf("       writer stalls: %llu (%.1f ms) — the caller waited for compression\n",
		       (unsigned long long)st.stalls, st.stall_ns / 1e6);
		unlink(path);
	}
	return 0;
}
