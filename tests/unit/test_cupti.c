// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CUPTI record translation, from records built here (no GPU): every kind we
 * hand over, kinds we skip, zero and inverted timestamps, 32-bit correlation
 * ids at the wrap, collectives, pageable copies, long names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "translate.h"

static void test_kernel(void **state)
{
	CUpti_ActivityKernel10 k;
	struct ls_gpu_record r;

	(void)state;
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 1000;
	k.end = 5000;
	k.deviceId = 1;
	k.streamId = 7;
	k.correlationId = 0xffffffffu; /* the last id before the wrap */
	k.name = "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_tn_and_a_long_tail_xyz";
	assert_int_equal(ls_cupti_translate((CUpti_Activity *)&k, &r), LS_TR_OK);
	assert_int_equal(r.kind, LS_GPU_KERNEL);
	assert_int_equal(r.source, LS_GPU_SRC_CUPTI);
	assert_int_equal(r.start_ns, 1000);
	assert_int_equal(r.end_ns, 5000);
	assert_int_equal(r.device, 1);
	assert_int_equal(r.stream, 7);
	assert_int_equal(r.correlation, 0xffffffffu);
	assert_int_equal(strlen(r.name), sizeof(r.name) - 1); /* truncated, terminated */
	assert_int_equal(r.flags & LS_GPU_F_COMM, 0);
	k.correlationId = 0; /* after the wrap */
	k.name = "ncclDevKernel_AllReduce_Sum_f16_RING_LL";
	assert_int_equal(ls_cupti_translate((CUpti_Activity *)&k, &r), LS_TR_OK);
	assert_int_equal(r.correlation, 0);
	assert_true(r.flags & LS_GPU_F_COMM);
	k.name = NULL;
	assert_int_equal(ls_cupti_translate((CUpti_Activity *)&k, &r), LS_TR_OK);
	assert_string_equal(r.name, "");
}

static void test_memcpy(void **state)
{
	CUpti_ActivityMemcpy6 m;
	struct ls_gpu_record r;
	static const struct {
		uint8_t cupti;
		uint32_t ours;
	} kinds[] = {{CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, LS_COPY_H2D},
		     {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, LS_COPY_D2H},
		     {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, LS_COPY_D2D},
		     {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, LS_COPY_OTHER}};

	(void)state;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		memset(&m, 0, sizeof(m));
		m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
		m.copyKind = kinds[i].cupti;
		m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
		m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
		m.bytes = 1 << 20;
		m.start = 10;
		m.end = 20;
		m.correlationId = 42;
		assert_int_equal(ls_cupti_translate((CUpti_Activity *)&m, &r), LS_TR_OK);
		assert_int_equal(r.kind, LS_GPU_MEMCPY);
		assert_int_equal(r.copy_kind, kinds[i].ours);
		assert_int_equal(r.bytes, 1 << 20);
		assert_int_equal(r.correlation, 42);
		assert_int_equal(r.flags & LS_GPU_F_PAGEABLE, 0);
	}
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	assert_int_equal(ls_cupti_translate((CUpti_Activity *)&m, &r), LS_TR_OK);
	assert_true(r.flags & LS_GPU_F_PAGEABLE);
}

static void test_memset_sync_and_skip(void **state)
{
	CUpti_ActivityMemset4 ms;
	CUpti_ActivitySynchronization2 sy;
	CUpti_ActivityAPI api;
	struct ls_gpu_record r;

	(void)state;
	memset(&ms, 0, sizeof(ms));
	ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	ms.bytes = 4096;
	ms.start = 1;
	ms.end = 2;
	assert_int_equal(ls_cupti_translate((CUpti_Activity *)&ms, &r), LS_TR_OK);
	assert_int_equal(r.kind, LS_GPU_MEMSET);
	assert_int_equal(r.bytes, 4096);

	memset(&sy, 0, sizeof(sy));
	sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	sy.start = 100;
	sy.end = 300;
	sy.streamId = 3;
	assert_int_equal(ls_cupti_translate((CUpti_Activity *)&sy, &r), LS_TR_OK);
	assert_int_equal(r.kind, LS_GPU_SYNC);
	assert_int_equal(r.stream, 3);

	memset(&api, 0, sizeof(api));
	api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	api.start = 1;
	api.end = 2;
	assert_int_equal(ls_cupti_translate((CUpti_Activity *)&api, &r), LS_TR_SKIP);
}

static void test_bad_timestamps(void **state)
{
	CUpti_ActivityKernel10 k;
	struct ls_gpu_record r;

	(void)state;
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = 0;
	k.end = 10;
	assert_int_equal(ls_cupti_translate((CUpti_Activity *)&k, &r), LS_TR_BAD_TIME);
	k.start = 10;
	k.end = 0;
	assert_int_equal(ls_cupti_translate((CUpti_Activity *)&k, &r), LS_TR_BAD_TIME);
	k.start = 20;
	k.end = 10;
	assert_int_equal(ls_cupti_translate((CUpti_Activity *)&k, &r), LS_TR_BAD_TIME);
	k.end = 20; /* zero length is a real (tiny) kernel */
	assert_int_equal(ls_cupti_translate((CUpti_Activity *)&k, &r), LS_TR_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel),
		cmocka_unit_test(test_memcpy),
		cmocka_unit_test(test_memset_sync_and_skip),
		cmocka_unit_test(test_bad_timestamps),
	};
	return cmocka_run_group_tests_name("cupti", tests, NULL, NULL);
}
