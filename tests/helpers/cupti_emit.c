// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Drives liblatsplit-cupti.so's emit path without a GPU: loads the shim,
 * builds CUPTI activity records by hand (times on CLOCK_MONOTONIC, like the
 * shim's timestamp callback), hands them to its test hook, and prints what it
 * sent as JSON lines for the test to compare with the capture.
 * Usage: cupti-emit SHIM.so
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cupti_activity.h>

static unsigned long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
	void (*emit)(CUpti_Activity *const *, size_t);
	CUpti_ActivityKernel10 k[3];
	CUpti_ActivityMemcpy6 m;
	CUpti_Activity *recs[5];
	unsigned long long t = now();

	if (!h || !(emit = (void (*)(CUpti_Activity *const *, size_t))dlsym(h, "latsplit_cupti_emit_test"))) {
		fprintf(stderr, "cupti-emit: %s\n", dlerror());
		return 1;
	}
	memset(k, 0, sizeof(k));
	for (int i = 0; i < 3; i++) {
		k[i].kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
		k[i].start = t + i * 1000000;
		k[i].end = t + i * 1000000 + 500000;
		k[i].correlationId = 0xfffffffeu + i; /* wraps: ...fe, ...ff, 0 */
		k[i].name = i == 2 ? "ncclKernel_AllReduce" : "gemm_kernel";
	}
	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	m.bytes = 123456;
	m.start = t + 4000000;
	m.end = t + 4200000;
	m.correlationId = 7;
	recs[0] = (CUpti_Activity *)&k[0];
	recs[1] = (CUpti_Activity *)&k[1];
	recs[2] = (CUpti_Activity *)&k[2];
	recs[3] = (CUpti_Activity *)&m;
	CUpti_ActivityKernel10 bad = k[0];
	bad.start = 0; /* dropped and counted */
	recs[4] = (CUpti_Activity *)&bad;
	emit(recs, 5);
	for (int i = 0; i < 3; i++)
		printf("{\"kind\":\"kernel\",\"start_ns\":%llu,\"end_ns\":%llu,\"correlation\":%u}\n",
		       (unsigned long long)k[i].start, (unsigned long long)k[i].end, k[i].correlationId);
	printf("{\"kind\":\"memcpy\",\"start_ns\":%llu,\"end_ns\":%llu,\"correlation\":7}\n",
	       (unsigned long long)m.start, (unsigned long long)m.end);
	usleep(200000);
	return 0;
}
