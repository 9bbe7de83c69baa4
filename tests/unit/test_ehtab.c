// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The unwind tables of --call-graph eh (user/record/ehtab.c): rows from
 * functions whose CFI this file writes itself (top-level asm), the thread
 * root, and a scan of this process handing BPF mappings whose bias and
 * buckets find the right row for every address (the BPF lookup, done here
 * in C the same way). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <sys/auxv.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../user/record/ehtab.h"

__u64 ls_now_ns(void);
__u64 ls_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* push rbp (0), mov rsp,rbp (1), nop (4), pop rbp (5), ret (6) */
__asm__(".text\n"
	".globl eh_fp_fn\n"
	".type eh_fp_fn,@function\n"
	".p2align 4\n"
	"eh_fp_fn:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"nop\n"
	"pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size eh_fp_fn, .-eh_fp_fn\n"
	/* a thread's root: the return address is undefined */
	".globl eh_root_fn\n"
	".type eh_root_fn,@function\n"
	".p2align 4\n"
	"eh_root_fn:\n"
	".cfi_startproc\n"
	".cfi_undefined %rip\n"
	"xor %ebp, %ebp\n"
	"ret\n"
	".cfi_endproc\n"
	".size eh_root_fn, .-eh_root_fn\n");
void eh_fp_fn(void);
void eh_root_fn(void);

static __u64 exe_bias;

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	exe_bias = info->dlpi_addr; /* the first object: the executable */
	return 1;
}

static const struct ls_eh_row *row_at(const struct ls_eh_row *rows, size_t n, __u64 pc)
{
	const struct ls_eh_row *best = NULL;

	for (size_t i = 0; i < n && rows[i].pc <= pc; i++)
		best = &rows[i];
	return best;
}

static void own_rows(struct ls_eh_row **rows, size_t *n)
{
	size_t cap = 0;
	int fd = open("/proc/self/exe", O_RDONLY);

	assert_true(fd >= 0);
	*rows = NULL;
	*n = 0;
	assert_true(ls_eh_build(fd, rows, n, &cap) > 0);
	close(fd);
	dl_iterate_phdr(phdr_cb, NULL);
}

static void test_rules(void **state)
{
	struct ls_eh_row *rows;
	size_t n;
	const struct ls_eh_row *r;

	(void)state;
	own_rows(&rows, &n);
	for (size_t i = 1; i < n; i++)
		assert_true(rows[i].pc > rows[i - 1].pc);
	__u64 f = (__u64)(uintptr_t)eh_fp_fn - exe_bias;
	r = row_at(rows, n, f); /* entry: the return address on top */
	assert_non_null(r);
	assert_int_equal(r->kind, LS_EH_RSP);
	assert_int_equal(r->cfa, 8);
	assert_int_equal(r->rbp, 0);
	r = row_at(rows, n, f + 1); /* after push rbp */
	assert_int_equal(r->kind, LS_EH_RSP);
	assert_int_equal(r->cfa, 16);
	assert_int_equal(r->rbp, -2);
	r = row_at(rows, n, f + 4); /* the frame pointer's frame */
	assert_int_equal(r->kind, LS_EH_RBP);
	assert_int_equal(r->cfa, 16);
	assert_int_equal(r->rbp, -2);
	r = row_at(rows, n, (__u64)(uintptr_t)eh_root_fn - exe_bias);
	assert_int_equal(r->kind, LS_EH_ROOT);
	/* past the function's end, before the next: no rule */
	r = row_at(rows, n, f + 7);
	assert_int_equal(r->kind, LS_EH_NONE);
	free(rows);
}

/* what the scan hands the walker, kept here */
static struct ls_eh_row *k_rows;
static __u32 *k_pages;
static struct ls_eh_proc k_proc;
static int k_procs;

static int set_rows(void *ctx, __u32 at, const struct ls_eh_row *rows, __u32 n)
{
	(void)ctx;
	k_rows = realloc(k_rows, (at + n) * sizeof(*k_rows));
	memcpy(k_rows + at, rows, n * sizeof(*rows));
	return 0;
}

static int set_pages(void *ctx, __u32 at, const __u32 *pages, __u32 n)
{
	(void)ctx;
	k_pages = realloc(k_pages, (at + n) * sizeof(*k_pages));
	memcpy(k_pages + at, pages, n * sizeof(*pages));
	return 0;
}

static int set_proc(void *ctx, __u32 pid, const struct ls_eh_proc *p)
{
	(void)ctx;
	(void)pid;
	if (p) {
		k_proc = *p;
		k_procs++;
	}
	return 0;
}

/* bpf/ehstack.bpf.h's lookup, in C: mapping, bucket, search */
static const struct ls_eh_row *walker_row(__u64 pc)
{
	const struct ls_eh_map *m = NULL;

	for (__u32 i = 0; i < k_proc.n; i++)
		if (pc >= k_proc.m[i].start && pc < k_proc.m[i].end)
			m = &k_proc.m[i];
	if (!m || pc < m->bias)
		return NULL;
	__u32 rel = (__u32)(pc - m->bias), lo = 0, hi = m->nrows;
	if (m->npages) {
		if (rel < m->text)
			return NULL;
		__u32 k = (rel - m->text) >> LS_EH_PAGE_SHIFT;
		if (k >= m->npages)
			k = m->npages - 1;
		else if (k + 1 < m->npages)
			hi = k_pages[m->page + k + 1] + 1;
		lo = k_pages[m->page + k];
		if (hi > m->nrows)
			hi = m->nrows;
	}
	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;
		if (k_rows[m->row + mid].pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &k_rows[m->row + lo - 1] : NULL;
}

static void test_scan(void **state)
{
	struct ls_eh_ops ops = {set_rows, set_pages, set_proc, NULL};
	struct ls_eh *eh = ls_eh_new(&ops, 1u << 22, 1u << 21);
	struct ls_eh_row *rows;
	size_t n;

	(void)state;
	assert_non_null(eh);
	assert_true(ls_eh_scan(eh, getpid()) >= 3); /* this program, libc, the vDSO */
	assert_int_equal(k_procs, 1);
	assert_true(k_proc.n >= 2); /* this program and libc at least */
	assert_true(ls_eh_stats(eh)->files >= 2);
	/* the walker finds, by runtime address, the row the file's table has
	 * for that address, across this program's code */
	own_rows(&rows, &n);
	__u64 f = (__u64)(uintptr_t)eh_fp_fn;
	const struct ls_eh_row *r = walker_row(f + 4);
	assert_non_null(r);
	assert_int_equal(r->kind, LS_EH_RBP);
	for (size_t i = 0; i + 1 < n; i++) {
		__u64 a = exe_bias + rows[i].pc, b = exe_bias + rows[i + 1].pc;
		for (__u64 pc = a; pc < b; pc += 1 + (b - a) / 7) {
			const struct ls_eh_row *w = walker_row(pc);
			assert_non_null(w);
			assert_int_equal(w->pc, rows[i].pc);
		}
	}
	/* libc's and the vDSO's rows too: the vDSO's mapping is there, and
	 * its first function's entry has the entry rule */
	assert_true(ls_eh_stats(eh)->rows > n);
	__u64 vdso = getauxval(AT_SYSINFO_EHDR);
	bool have_vdso = false;
	for (__u32 i = 0; i < k_proc.n; i++)
		if (k_proc.m[i].start <= vdso + 4096 && vdso + 4096 < k_proc.m[i].end &&
		    k_proc.m[i].npages) {
			const struct ls_eh_map *m = &k_proc.m[i];
			const struct ls_eh_row *v = walker_row(m->bias + m->text);
			assert_non_null(v);
			assert_int_equal(v->kind, LS_EH_RSP);
			assert_int_equal(v->cfa, 8);
			have_vdso = true;
		}
	assert_true(have_vdso);
	free(rows);
	ls_eh_free(eh);
	free(k_rows);
	free(k_pages);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_scan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
