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

/*
 * The event ring. With an agent attached (the event_ring probe's semaphore
 * set) the request lifecycle events are not probes: each is a slot written
 * in this process's memory (a clock read and a few stores, no trap), and
 * the agent reads the slots it has not read yet with process_vm_readv(2)
 * every few tens of ms. The event_ring probe fires once per attach (when
 * its semaphore's value changes) to tell the agent where the ring is. An
 * agent that does not attach event_ring leaves its semaphore 0: the events
 * are probes as before.
 *
 * Writers take an index with an atomic add; a slot's seq is 0 while it is
 * written and index + 1 once it is whole. The agent takes a slot whose seq
 * is its index + 1 and that no writer can have reached again while it was
 * copied (the head it read after the copy is under index + nslots); one
 * lapped is counted lost.
 */
#define LS_EVRING_MAGIC 0x31676e6972747665ull /* "evtring1" */
#define LS_EVRING_SLOTS 16384u                /* a power of two */
#define LS_EVRING_FINAL (1ull << 63) /* the probe's head at exit: no event after it */

struct ls_evring_slot {
	uint64_t seq;    /* 0: being written; index + 1: whole */
	uint64_t ts;     /* CLOCK_MONOTONIC ns */
	uint64_t req_id;
	uint32_t kind;   /* enum ls_engine_ev (events.h): 1 arrived .. 7 finished */
	uint32_t arg;    /* queued: prompt tokens; scheduled: batch size; finished: status */
	uint32_t tid;
	uint32_t pad;
	char x_request_id[64]; /* arrived only */
};

/* What the probe points at; the slots are apart (zero-filled: no file bytes). */
struct ls_evring {
	uint64_t magic;
	uint32_t slot_size, nslots;
	uint64_t told;  /* the semaphore value the last event_ring probe told */
	uint64_t slots; /* the address of slot 0 */
	uint64_t read;  /* the agent's: the first index it has not read */
	uint64_t told_ts; /* when the probe last fired */
	uint64_t base;  /* a forked child's first index: slots before it are its parent's */
	uint64_t pad[1];
	uint64_t head;  /* the next index (its own cache line) */
	uint64_t pad2[7];
};

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
	X(gpu_launch) X(gpu_stats) X(event_ring)

#ifdef LATSPLIT_ENGINE_DEFINE_SEMAPHORES
#define LATSPLIT_SEMA(name)                                                                 \
	__extension__ unsigned short latsplit_##name##_semaphore                            \
		__attribute__((unused, section(".probes")));
#else
#define LATSPLIT_SEMA(name) extern unsigned short latsplit_##name##_semaphore;
#endif
LATSPLIT_PROBES(LATSPLIT_SEMA)

#define LATSPLIT_ENABLED(name) __builtin_expect(latsplit_##name##_semaphore != 0, 0)

/* The ring, beside the semaphores (one per object that defines them). */
#ifdef LATSPLIT_ENGINE_DEFINE_SEMAPHORES
/* bumped in a forked child: a thread's cached tid is its parent's there */
__attribute__((visibility("hidden"))) unsigned latsplit_evring_forks;
__attribute__((visibility("hidden"), aligned(64))) struct ls_evring_slot
	latsplit_evring_slots[LS_EVRING_SLOTS];
__attribute__((visibility("hidden"), aligned(64))) struct ls_evring latsplit_evring = {
	LS_EVRING_MAGIC, sizeof(struct ls_evring_slot), LS_EVRING_SLOTS, 0,
	(uint64_t)(uintptr_t)latsplit_evring_slots, 0, 0, 0, {0}, 0, {0}};
#else
extern __attribute__((visibility("hidden"))) unsigned latsplit_evring_forks;
extern __attribute__((visibility("hidden"))) struct ls_evring_slot latsplit_evring_slots[];
extern __attribute__((visibility("hidden"))) struct ls_evring latsplit_evring;
#endif

#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#ifndef __cplusplus
/* Declared by the headers above only outside strict ISO C (-std=c11): the
 * same prototypes again, compatible with libc's. */
extern int clock_gettime(int clock_id, struct timespec *tp);
extern int nanosleep(const struct timespec *req, struct timespec *rem);
extern long syscall(long number, ...);
#endif
#ifdef CLOCK_MONOTONIC
#define LATSPLIT_CLOCK_MONOTONIC CLOCK_MONOTONIC
#else
#define LATSPLIT_CLOCK_MONOTONIC 1 /* Linux's value; hidden under strict ISO C */
#endif

/* One lifecycle event into the ring (the event_ring semaphore is set). */
static inline void latsplit_evring_put(uint32_t kind, uint64_t id, uint32_t arg, const char *xrid)
{
	static __thread uint32_t tid, tid_forks;
	struct ls_evring *r = &latsplit_evring;
	unsigned short sem = __atomic_load_n(&latsplit_event_ring_semaphore, __ATOMIC_RELAXED);
	struct timespec ts;
	uint64_t now;

	clock_gettime(LATSPLIT_CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	/* where the ring is: when an agent came or went, and every second (one
	 * that attached since reads back from then) */
	if (__atomic_load_n(&r->told, __ATOMIC_RELAXED) != sem ||
	    now - __atomic_load_n(&r->told_ts, __ATOMIC_RELAXED) > 1000000000ull) {
		__atomic_store_n(&r->told, sem, __ATOMIC_RELAXED);
		__atomic_store_n(&r->told_ts, now, __ATOMIC_RELAXED);
		STAP_PROBE2(latsplit, event_ring, (void *)r,
			    __atomic_load_n(&r->head, __ATOMIC_ACQUIRE));
	}
	unsigned forks = __atomic_load_n(&latsplit_evring_forks, __ATOMIC_RELAXED);
	if (!tid || tid_forks != forks) {
		tid = (uint32_t)syscall(SYS_gettid);
		tid_forks = forks;
	}
	uint64_t i = __atomic_fetch_add(&r->head, 1, __ATOMIC_RELAXED);
	struct ls_evring_slot *s = &latsplit_evring_slots[i & (LS_EVRING_SLOTS - 1)];
	__atomic_store_n(&s->seq, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	s->ts = now;
	s->req_id = id;
	s->kind = kind;
	s->arg = arg;
	s->tid = tid;
	s->x_request_id[0] = '\0';
	if (xrid) {
		size_t k = 0;
		for (; k < sizeof(s->x_request_id) - 1 && xrid[k]; k++)
			s->x_request_id[k] = xrid[k];
		s->x_request_id[k] = '\0';
	}
	__atomic_store_n(&s->seq, i + 1, __ATOMIC_RELEASE);
}

#ifdef LATSPLIT_ENGINE_DEFINE_SEMAPHORES
/* In a forked child: its threads' tids are new, the ring's slots so far are
 * its parent's, and the agent is told of the ring at its first event. */
static void latsplit_evring_forked(void)
{
	struct ls_evring *r = &latsplit_evring;

	__atomic_fetch_add(&latsplit_evring_forks, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&r->base, __atomic_load_n(&r->head, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	__atomic_store_n(&r->told, ~0ull, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void latsplit_evring_init(void)
{
	pthread_atfork(0, 0, latsplit_evring_forked);
}

/* At exit, with an agent reading: up to 500 ms for it to read the ring's
 * last events (it says how far it read in `read`), as probes would have
 * handed them over before the process ended. */
__attribute__((destructor)) static void latsplit_evring_fini(void)
{
	struct ls_evring *r = &latsplit_evring;
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	struct timespec ms = {0, 1000000};

	if (!latsplit_event_ring_semaphore || !head)
		return;
	STAP_PROBE2(latsplit, event_ring, (void *)r, head | LS_EVRING_FINAL);
	for (int i = 0; i < 500 && latsplit_event_ring_semaphore &&
			__atomic_load_n(&r->read, __ATOMIC_ACQUIRE) < head;
	     i++)
		nanosleep(&ms, 0);
}
#endif

/* An event: into the ring when the agent reads it, else a probe. */
#define LATSPLIT_EVENT_(kind, id, arg, xrid, probe)                                         \
	do {                                                                                \
		if (LATSPLIT_ENABLED(event_ring))                                           \
			latsplit_evring_put((kind), (uint64_t)(id), (uint32_t)(arg), (xrid));       \
		else if (LATSPLIT_ENABLED(probe))                                           \
			LATSPLIT_PROBE_##probe((uint64_t)(id), (uint32_t)(arg), (xrid));        \
	} while (0)
#define LATSPLIT_PROBE_request_arrived(id, arg, xrid) STAP_PROBE2(latsplit, request_arrived, id, xrid)
#define LATSPLIT_PROBE_request_queued(id, arg, xrid) STAP_PROBE2(latsplit, request_queued, id, arg)
#define LATSPLIT_PROBE_request_scheduled(id, arg, xrid)                                     \
	STAP_PROBE2(latsplit, request_scheduled, id, arg)
#define LATSPLIT_PROBE_first_token(id, arg, xrid) STAP_PROBE1(latsplit, first_token, id)
#define LATSPLIT_PROBE_request_preempted(id, arg, xrid) STAP_PROBE1(latsplit, request_preempted, id)
#define LATSPLIT_PROBE_request_resumed(id, arg, xrid) STAP_PROBE1(latsplit, request_resumed, id)
#define LATSPLIT_PROBE_request_finished(id, arg, xrid)                                      \
	STAP_PROBE2(latsplit, request_finished, id, arg)

#define LATSPLIT_REQUEST_ARRIVED(id, xrid)                                                  \
	LATSPLIT_EVENT_(1, id, 0, (xrid), request_arrived)
#define LATSPLIT_REQUEST_QUEUED(id, prompt_tokens)                                          \
	LATSPLIT_EVENT_(2, id, prompt_tokens, (const char *)0, request_queued)
#define LATSPLIT_REQUEST_SCHEDULED(id, batch)                                               \
	LATSPLIT_EVENT_(3, id, batch, (const char *)0, request_scheduled)
#define LATSPLIT_FIRST_TOKEN(id) LATSPLIT_EVENT_(4, id, 0, (const char *)0, first_token)
#define LATSPLIT_REQUEST_PREEMPTED(id)                                                      \
	LATSPLIT_EVENT_(5, id, 0, (const char *)0, request_preempted)
#define LATSPLIT_REQUEST_RESUMED(id) LATSPLIT_EVENT_(6, id, 0, (const char *)0, request_resumed)
#define LATSPLIT_REQUEST_FINISHED(id, status)                                               \
	LATSPLIT_EVENT_(7, id, status, (const char *)0, request_finished)
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
