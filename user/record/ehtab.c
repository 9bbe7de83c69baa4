// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unwind tables for the BPF walker, from .eh_frame by libdw: see ehtab.h. */
#include "ehtab.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <inttypes.h>
#include <sys/auxv.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../core/procfile.h"
#include "../cli.h"
#include "../core/grow.h"

#define MAX_SEGS 4

/* A file's table, once: its rows in eh_rows and its executable segments
 * (to place a mapping's addresses in the file's virtual addresses). */
struct eh_file {
	unsigned long dev;
	unsigned long long ino;
	__u32 row, nrows; /* nrows 0: no table */
	__u32 page, npages, text; /* its buckets (struct ls_eh_map) */
	int nsegs;
	struct {
		__u64 off, end, vaddr;
	} seg[MAX_SEGS];
};

struct ls_eh {
	struct ls_eh_ops ops;
	__u32 max_rows, next_row, max_pages, next_page;
	__u32 *pages;
	size_t cappages;
	struct eh_file *files;
	size_t nfiles, capfiles;
	struct ls_eh_row *tmp;
	size_t ntmp, captmp;
	/* when each process was last scanned, how many of its mappings had
	 * tables then, and how long until it may be scanned again */
	struct {
		pid_t pid;
		int nmaps;
		__u64 ns, wait_ns;
	} *scanned;
	size_t nscanned, capscanned;
	struct ls_eh_stats st;
};

static bool is_cfa_offset(const Dwarf_Op *ops, size_t n, Dwarf_Sword *off)
{
	if (n != 2 || ops[0].atom != DW_OP_call_frame_cfa || ops[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (Dwarf_Sword)ops[1].number;
	return true;
}

/* One libdw frame as a row BPF can follow (LS_EH_NONE where it cannot). */
static struct ls_eh_row row_of(Dwarf_Frame *f, __u32 pc)
{
	struct ls_eh_row r = {.pc = pc, .kind = LS_EH_NONE};
	Dwarf_Op mem[3], *ops;
	size_t n;
	Dwarf_Sword off;

	if (dwarf_frame_register(f, 16, mem, &ops, &n))
		return r;
	if (ops && !n) { /* the return address is "undefined": a thread's root */
		r.kind = LS_EH_ROOT;
		return r;
	}
	if (!is_cfa_offset(ops, n, &off) || off != -8)
		return r;
	if (dwarf_frame_cfa(f, &ops, &n))
		return r;
	if (n == 1 && ops[0].atom == DW_OP_bregx && (ops[0].number == 7 || ops[0].number == 6) &&
	    ops[0].number2 > 0 && ops[0].number2 < 65536) {
		r.kind = ops[0].number == 7 ? LS_EH_RSP : LS_EH_RBP;
		r.cfa = (__u16)ops[0].number2;
	} else if (n == 1 && (ops[0].atom == DW_OP_breg7 || ops[0].atom == DW_OP_breg6) &&
		   (Dwarf_Sword)ops[0].number > 0 && (Dwarf_Sword)ops[0].number < 65536) {
		r.kind = ops[0].atom == DW_OP_breg7 ? LS_EH_RSP : LS_EH_RBP;
		r.cfa = (__u16)ops[0].number;
	} else if (n == 9 && ops[0].atom == DW_OP_breg7 && ops[0].number == 8 &&
		   ops[1].atom == DW_OP_breg16 && ops[4].atom >= DW_OP_lit0 &&
		   ops[4].atom <= DW_OP_lit15 && ops[5].atom == DW_OP_ge) {
		/* the PLT's: rsp + 8, and 8 more past the push in each entry */
		r.kind = LS_EH_PLT;
		r.cfa = (__u16)(ops[4].atom - DW_OP_lit0);
	} else {
		return r;
	}
	if (dwarf_frame_register(f, 6, mem, &ops, &n)) {
		r.kind = LS_EH_NONE;
		return r;
	}
	if (!n && !ops)
		return r; /* rbp "same value": unchanged */
	if (is_cfa_offset(ops, n, &off) && off < 0 && off >= -8 * 128 && !(off & 7)) {
		r.rbp = (__s8)(off / 8);
		return r;
	}
	r.kind = LS_EH_NONE;
	return r;
}

static void push(struct ls_eh_row **rows, size_t *n, size_t *cap, struct ls_eh_row r)
{
	if (*n) { /* strictly increasing pcs; one row per run of equal rules */
		struct ls_eh_row *last = &(*rows)[*n - 1];

		if (r.pc <= last->pc)
			return;
		if (r.kind == last->kind && r.cfa == last->cfa && r.rbp == last->rbp)
			return;
	}
	GROW(*rows, *n, *cap);
	(*rows)[(*n)++] = r;
}

static int enc_size(unsigned char enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
	case DW_EH_PE_absptr:
		return 8;
	}
	return -1;
}

/* The function starts .eh_frame_hdr lists (its binary search table, in
 * the encoding every linker writes: datarel sdata4), by PT_GNU_EH_FRAME.
 * The count, *starts malloc'd; -1 without one. */
static long fde_starts(Elf *elf, __u64 **starts)
{
	size_t nph;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nph))
		return -1;
	for (size_t i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
			continue;
		Elf_Data *d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		const unsigned char *b = d ? d->d_buf : NULL;
		int ps;

		if (!b || d->d_size < 12 || b[0] != 1 || (ps = enc_size(b[1])) < 0 ||
		    b[2] != DW_EH_PE_udata4 || b[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
			return -1;
		size_t at = 4 + (size_t)ps;
		uint32_t count;

		if (at + 4 > d->d_size)
			return -1;
		memcpy(&count, b + at, 4);
		at += 4;
		if (count > (d->d_size - at) / 8)
			return -1;
		*starts = malloc(((size_t)count + 1) * sizeof(**starts));
		if (!*starts)
			return -1;
		for (uint32_t k = 0; k < count; k++) {
			int32_t rel;

			memcpy(&rel, b + at + 8 * (size_t)k, 4);
			(*starts)[k] = ph.p_vaddr + (__u64)(__s64)rel;
		}
		return count;
	}
	return -1;
}

/* The rows of one ELF (ls_eh_build's, from an open Elf). */
static long build_elf(Elf *elf, struct ls_eh_row **rows, size_t *nrows, size_t *cap)
{
	Dwarf_CFI *cfi;
	__u64 *starts = NULL;
	long count;
	size_t first = *nrows;

	cfi = dwarf_getcfi_elf(elf);
	count = cfi ? fde_starts(elf, &starts) : -1;
	for (long k = 0; k < count; k++) {
		__u64 a = starts[k], next = k + 1 < count ? starts[k + 1] : UINT64_MAX;
		Dwarf_Frame *f;
		Dwarf_Addr s, e;
		bool sig;

		while (a < next && a <= UINT32_MAX && !dwarf_cfi_addrframe(cfi, a, &f)) {
			bool ok = dwarf_frame_info(f, &s, &e, &sig) >= 0;
			struct ls_eh_row r = row_of(f, (__u32)a);

			free(f);
			if (!ok || sig)
				r.kind = LS_EH_NONE;
			push(rows, nrows, cap, r);
			if (!ok || e <= a)
				break;
			a = e;
		}
		/* past the function, before the next: no rule */
		if (a < next && a <= UINT32_MAX)
			push(rows, nrows, cap, (struct ls_eh_row){.pc = (__u32)a, .kind = LS_EH_NONE});
	}
	free(starts);
	dwarf_cfi_end(cfi);
	return count < 0 ? -1 : (long)(*nrows - first);
}

long ls_eh_build(int fd, struct ls_eh_row **rows, size_t *nrows, size_t *cap)
{
	Elf *elf;
	long n;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -1;
	n = build_elf(elf, rows, nrows, cap);
	elf_end(elf);
	return n;
}

struct ls_eh *ls_eh_new(const struct ls_eh_ops *ops, __u32 max_rows, __u32 max_pages)
{
	struct ls_eh *eh = calloc(1, sizeof(*eh));

	if (!eh)
		return NULL;
	eh->ops = *ops;
	eh->max_rows = max_rows;
	eh->max_pages = max_pages;
	return eh;
}

/* f's buckets over its n rows (in eh->tmp): for each 2^LS_EH_PAGE_SHIFT
 * bytes from the first row's pc, the index of the row at the bucket's
 * first address. None (npages 0: BPF searches all rows) where they do not
 * fit. */
static void file_pages(struct ls_eh *eh, struct eh_file *f, __u32 n)
{
	const struct ls_eh_row *rows = eh->tmp;
	__u32 text = rows[0].pc;
	size_t np = ((size_t)(rows[n - 1].pc - text) >> LS_EH_PAGE_SHIFT) + 1, r = 0;

	if ((__u64)eh->next_page + np > eh->max_pages)
		return;
	if (np > eh->cappages) {
		__u32 *g = realloc(eh->pages, np * sizeof(*g));

		if (!g)
			return;
		eh->pages = g;
		eh->cappages = np;
	}
	for (size_t k = 0; k < np; k++) {
		__u64 a = text + ((__u64)k << LS_EH_PAGE_SHIFT);

		while (r + 1 < n && rows[r + 1].pc <= a)
			r++;
		eh->pages[k] = (__u32)r;
	}
	if (eh->ops.set_pages(eh->ops.ctx, eh->next_page, eh->pages, (__u32)np))
		return;
	f->page = eh->next_page;
	f->npages = (__u32)np;
	f->text = text;
	eh->next_page += (__u32)np;
}

/* The executable segments of an ELF, into f. */
static void elf_segs(Elf *elf, struct eh_file *f)
{
	size_t nph;
	GElf_Phdr ph;

	if (!elf_getphdrnum(elf, &nph))
		for (size_t i = 0; i < nph && f->nsegs < MAX_SEGS; i++)
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
				f->seg[f->nsegs++] = (typeof(f->seg[0])){ph.p_offset,
									 ph.p_offset + ph.p_filesz, ph.p_vaddr};
}

/* f's rows (n of them, in eh->tmp) to the walker's table. */
static void file_rows(struct ls_eh *eh, struct eh_file *f, long n)
{
	if (n <= 0 || !f->nsegs) {
		eh->st.no_table++;
		return;
	}
	if ((__u64)eh->next_row + (__u64)n > eh->max_rows) {
		eh->st.rows_full++;
		return;
	}
	if (eh->ops.set_rows(eh->ops.ctx, eh->next_row, eh->tmp, (__u32)n)) {
		eh->st.no_table++;
		return;
	}
	f->row = eh->next_row;
	f->nrows = (__u32)n;
	eh->next_row += (__u32)n;
	eh->st.files++;
	eh->st.rows += (unsigned long long)n;
	file_pages(eh, f, (__u32)n);
}

static struct eh_file *file_new(struct ls_eh *eh, unsigned long dev, unsigned long long ino)
{
	struct eh_file *f;

	GROW(eh->files, eh->nfiles, eh->capfiles);
	f = &eh->files[eh->nfiles++];
	memset(f, 0, sizeof(*f));
	f->dev = dev;
	f->ino = ino;
	return f;
}

/* The vDSO's table (device and inode 0: no file): the kernel maps the same
 * image into every 64-bit process, so this process's own is read. */
static struct eh_file *vdso_get(struct ls_eh *eh)
{
	struct eh_file *f;
	unsigned long long start = 0, end = 0;
	char line[256];
	FILE *fp;
	Elf *elf;

	for (size_t i = 0; i < eh->nfiles; i++)
		if (!eh->files[i].dev && !eh->files[i].ino)
			return &eh->files[i];
	f = file_new(eh, 0, 0);
	if ((fp = fopen("/proc/self/maps", "re"))) {
		while (fgets(line, sizeof(line), fp))
			if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &start, &end) == 2)
				break;
		fclose(fp);
	}
	if (!start || end <= start || start != getauxval(AT_SYSINFO_EHDR) ||
	    !(elf = elf_memory((char *)(uintptr_t)start, end - start))) {
		eh->st.no_table++;
		return f;
	}
	eh->ntmp = 0;
	long n = build_elf(elf, &eh->tmp, &eh->ntmp, &eh->captmp);
	elf_segs(elf, f);
	elf_end(elf);
	file_rows(eh, f, n);
	return f;
}

static struct eh_file *file_get(struct ls_eh *eh, pid_t pid, const char *path, __u64 start,
				__u64 end, unsigned long dev, unsigned long long ino)
{
	struct eh_file *f;
	int fd;

	for (size_t i = 0; i < eh->nfiles; i++)
		if (eh->files[i].dev == dev && eh->files[i].ino == ino)
			return &eh->files[i];
	f = file_new(eh, dev, ino);
	fd = ls_proc_open(pid, path, start, end);
	if (fd < 0) {
		eh->st.no_table++;
		return f;
	}
	__u64 t0 = ls_now_ns();
	long n;

	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	eh->ntmp = 0;
	n = elf ? build_elf(elf, &eh->tmp, &eh->ntmp, &eh->captmp) : -1;
	if (elf)
		elf_segs(elf, f);
	elf_end(elf);
	close(fd);
	eh->st.build_ns += ls_now_ns() - t0;
	file_rows(eh, f, n);
	return f;
}

static int by_rows_desc(const void *a, const void *b)
{
	const struct ls_eh_map *x = a, *y = b;

	return x->nrows < y->nrows ? 1 : x->nrows > y->nrows ? -1 : 0;
}

static int by_start(const void *a, const void *b)
{
	const struct ls_eh_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The walker's mappings of a process, at most LS_EH_MAPS of the n found:
 * where there are more (a Python process with many extension modules), the
 * ones with the most rows (libc, the interpreter, the big libraries: where
 * most frames are), sorted by start again. */
_Static_assert(LS_EH_MAPS == 64, "record's summary says 64");

static void keep_maps(struct ls_eh *eh, struct ls_eh_proc *p, struct ls_eh_map *all, size_t n)
{
	if (n > LS_EH_MAPS) {
		eh->st.maps_over += n - LS_EH_MAPS;
		qsort(all, n, sizeof(*all), by_rows_desc);
		n = LS_EH_MAPS;
		qsort(all, n, sizeof(*all), by_start);
	}
	memcpy(p->m, all, n * sizeof(*all));
	p->n = (__u32)n;
}

int ls_eh_scan(struct ls_eh *eh, pid_t pid)
{
	char path[64], line[4352];
	struct ls_eh_proc p;
	struct ls_eh_map all[4 * LS_EH_MAPS];
	size_t nall = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "re");
	if (!fp) {
		eh->ops.set_proc(eh->ops.ctx, (__u32)pid, NULL);
		return -1;
	}
	memset(&p, 0, sizeof(p));
	while (fgets(line, sizeof(line), fp)) {
		unsigned long long start, end, off, ino;
		unsigned int maj, min;
		char perms[8];
		int at = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj,
			   &min, &ino, &at) < 7 ||
		    perms[2] != 'x')
			continue;
		line[strcspn(line, "\n")] = 0;
		bool vdso = !ino && !strcmp(line + at, "[vdso]");
		if (!vdso && (!ino || line[at] != '/'))
			continue;
		struct eh_file *f = vdso ? vdso_get(eh)
					 : file_get(eh, pid, line + at, start, end,
						    (unsigned long)maj << 20 | min, ino);

		if (!f->nrows)
			continue;
		for (int s = 0; s < f->nsegs; s++) {
			if (off < f->seg[s].off || off >= f->seg[s].end)
				continue;
			if (nall == sizeof(all) / sizeof(all[0])) {
				eh->st.maps_over++;
				break;
			}
			all[nall++] = (struct ls_eh_map){start, end,
							 start - off + f->seg[s].off - f->seg[s].vaddr,
							 f->row, f->nrows, f->page, f->npages, f->text, 0};
			break;
		}
	}
	fclose(fp);
	keep_maps(eh, &p, all, nall);
	if (eh->ops.set_proc(eh->ops.ctx, (__u32)pid, &p)) {
		eh->st.procs_over++; /* the walker's process map is full */
		return -2;
	}
	return (int)p.n;
}

void ls_eh_missed(struct ls_eh *eh, pid_t pid, __u64 now_ns)
{
	size_t i;
	int n;

	for (i = 0; i < eh->nscanned && eh->scanned[i].pid != pid; i++)
		;
	if (i < eh->nscanned && now_ns - eh->scanned[i].ns < eh->scanned[i].wait_ns)
		return;
	if (i == eh->nscanned) {
		GROW(eh->scanned, eh->nscanned, eh->capscanned);
		eh->scanned[eh->nscanned] = (typeof(*eh->scanned)){pid, -1, 0, 0};
		eh->nscanned++;
	}
	eh->scanned[i].ns = now_ns;
	n = ls_eh_scan(eh, pid);
	if (n == -1) { /* gone: forgotten */
		eh->scanned[i] = eh->scanned[--eh->nscanned];
		return;
	}
	/* a second, or twice the last wait (at most 32 s) when nothing new was
	 * mapped: a miss in JIT code or anonymous memory repeats forever, and
	 * reading a process's maps holds its mmap lock */
	eh->scanned[i].wait_ns = n == eh->scanned[i].nmaps && eh->scanned[i].wait_ns
					 ? (eh->scanned[i].wait_ns < 16000000000ull ? eh->scanned[i].wait_ns * 2
										     : 32000000000ull)
					 : 1000000000ull;
	eh->scanned[i].nmaps = n;
}

const struct ls_eh_stats *ls_eh_stats(const struct ls_eh *eh)
{
	return &eh->st;
}

void ls_eh_free(struct ls_eh *eh)
{
	if (!eh)
		return;
	free(eh->files);
	free(eh->tmp);
	free(eh->scanned);
	free(eh->pages);
	free(eh);
}
