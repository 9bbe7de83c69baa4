// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Symbolization at the scale of a large capture (`make bench`): NSAMPLES
 * CPU samples over a full stack map (16384 user stacks of 8-40 frames drawn
 * from real addresses in this process's executable mappings, 4096 kernel
 * stacks of 5-20 frames from /proc/kallsyms when it shows addresses).
 * Times what `record` does at the end (every distinct address of the used
 * stacks, once, with a cold symbolizer: ELF files and kallsyms are read
 * inside the timing), then writes the capture (samples, stacks, symbols) to
 * FILE so the bench can time `latsplit flame` on it.
 * Usage: bench-symbolize FILE NSAMPLES
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "grow.h"
#include "symbolize.h"

#define USTACKS 16384
#define KSTACKS 4096
#define POOL 40000

struct range {
	unsigned long long b, e;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long long rnd(void)
{
	static unsigned long long x = 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

/* Executable file mappings of this process. */
static size_t exec_ranges(struct range *r, size_t max)
{
	char line[512], perm[8];
	size_t n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && n < max && fgets(line, sizeof(line), f)) {
		unsigned long long b, e;
		if (sscanf(line, "%llx-%llx %7s", &b, &e, perm) == 3 && perm[2] == 'x' && strchr(line, '/'))
			r[n++] = (struct range){b, e};
	}
	if (f)
		fclose(f);
	return n;
}

/* Up to max kernel text addresses (every k-th), 0 if hidden. */
static size_t kernel_addrs(unsigned long long *v, size_t max)
{
	char line[512], type;
	size_t n = 0, seen = 0;
	unsigned long long a;
	FILE *f = fopen("/proc/kallsyms", "r");

	while (f && n < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c", &a, &type) == 2 && a && (type == 'T' || type == 't') &&
		    seen++ % 8 == 0)
			v[n++] = a + 4;
	if (f)
		fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	struct range r[64];
	static unsigned long long upool[POOL], kpool[POOL];
	static unsigned long long ust[USTACKS][40], kst[KSTACKS][20];
	static int un[USTACKS], kn[KSTACKS];
	unsigned long long total_len = 0;
	pid_t pid = getpid();

	if (argc < 3) {
		fprintf(stderr, "usage: bench-symbolize FILE NSAMPLES\n");
		return 2;
	}
	long nsamples = atol(argv[2]);
	size_t nr = exec_ranges(r, 64), nk = kernel_addrs(kpool, POOL);
	for (size_t i = 0; i < nr; i++)
		total_len += r[i].e - r[i].b;
	if (!nr || !total_len) {
		fprintf(stderr, "bench-symbolize: no executable mappings in /proc/self/maps\n");
		return 1;
	}
	for (size_t i = 0; i < POOL; i++) { /* uniform over the mapped text */
		unsigned long long off = rnd() % total_len;
		size_t k = 0;
		while (off >= r[k].e - r[k].b) {
			off -= r[k].e - r[k].b;
			k++;
		}
		upool[i] = r[k].b + off;
	}
	for (int s = 0; s < USTACKS; s++) {
		un[s] = 8 + rnd() % 33;
		for (int j = 0; j < un[s]; j++)
			ust[s][j] = upool[rnd() % POOL];
	}
	for (int s = 0; nk && s < KSTACKS; s++) {
		kn[s] = 5 + rnd() % 16;
		for (int j = 0; j < kn[s]; j++)
			kst[s][j] = kpool[rnd() % nk];
	}
	/* samples: skewed towards few stacks, as profiles are */
	__s32 *su = malloc(nsamples * sizeof(*su)), *sk = malloc(nsamples * sizeof(*sk));
	if (!su || !sk)
		return 1;
	for (long i = 0; i < nsamples; i++) {
		unsigned long long x = rnd();
		su[i] = (x & 1) ? (__s32)(rnd() % 256) : (__s32)(rnd() % USTACKS);
		/* half the samples in the kernel, its stack tied to the user one */
		sk[i] = nk && (x & 2) ? USTACKS + su[i] % KSTACKS : -1;
	}

	/* What record does at the end: every distinct (process, address) of the
	 * used stacks, resolved once. All stacks are used here. */
	struct ls_sym_addr *a = NULL;
	size_t na = 0, capa = 0;
	double t0 = now();
	for (int s = 0; s < USTACKS; s++)
		for (int j = 0; j < un[s]; j++) {
			GROW(a, na, capa);
			a[na++] = (struct ls_sym_addr){(uint32_t)pid, ust[s][j]};
		}
	for (int s = 0; nk && s < KSTACKS; s++)
		for (int j = 0; j < kn[s]; j++) {
			GROW(a, na, capa);
			a[na++] = (struct ls_sym_addr){0, kst[s][j]};
		}
	size_t frames = na;
	na = ls_sym_addr_unique(a, na);
	struct ls_symbolizer *sym = ls_sym_new();
	ls_sym_add_process(sym, pid);
	char **names = calloc(na, sizeof(*names)), buf[512];
	size_t unknown = 0;
	for (size_t i = 0; i < na; i++) {
		ls_sym_resolve(sym, a[i].pid, a[i].ip, buf, sizeof(buf));
		unknown += !strncmp(buf, "[unknown]", 9);
		names[i] = strdup(buf);
	}
	double t_sym = now() - t0;
	ls_sym_free(sym);
	printf("symbolize: %ld samples over %d user + %d kernel stacks (%zu frames): %zu distinct addresses "
	       "in %.3f s (%.2f M addresses/s, cold cache incl. ELF and kallsyms reads; %zu unknown)\n",
	       nsamples, USTACKS, nk ? KSTACKS : 0, frames, na, t_sym, na / t_sym / 1e6, unknown);

	/* The capture, for timing flame. */
	struct ls_file_hdr fh;
	struct ls_writer *w;
	struct ls_writer_stats ws;
	unlink(argv[1]);
	ls_file_hdr_init(&fh, argc, argv);
	fh.sources = LS_SRC_SAMPLES;
	if (ls_writer_open(&w, argv[1], &fh, NULL)) {
		perror(argv[1]);
		return 1;
	}
	t0 = now();
	for (long i = 0; i < nsamples; i++) {
		struct ls_ev_sample e = {0};
		e.h.type = LS_EV_SAMPLE;
		e.h.size = sizeof(e);
		e.h.ts = 1000000000ull + i * 1000;
		e.h.pid = e.h.tid = pid;
		e.ustack = su[i];
		e.kstack = sk[i];
		memcpy(e.comm, "bench", 6);
		ls_writer_append(w, &e.h);
	}
	_Alignas(8) unsigned char sbuf[sizeof(struct ls_rec_stack) + 40 * 8];
	_Alignas(8) unsigned char ybuf[sizeof(struct ls_rec_sym) + 512];
	for (int s = 0; s < USTACKS + (nk ? KSTACKS : 0); s++) {
		struct ls_rec_stack *st = (void *)sbuf;
		int n = s < USTACKS ? un[s] : kn[s - USTACKS];
		memset(st, 0, sizeof(*st));
		st->h.type = LS_REC_STACK;
		st->h.size = sizeof(*st) + n * 8;
		st->id = s;
		st->nips = n;
		memcpy(st + 1, s < USTACKS ? ust[s] : kst[s - USTACKS], n * 8);
		ls_writer_append(w, &st->h);
	}
	for (size_t i = 0; i < na; i++) {
		struct ls_rec_sym *y = (void *)ybuf;
		size_t nl = strlen(names[i]) + 1;
		memset(y, 0, sizeof(*y));
		y->h.type = LS_REC_SYM;
		y->h.size = sizeof(*y) + nl;
		y->h.pid = a[i].pid;
		y->ip = a[i].ip;
		y->name_len = nl;
		memcpy(y + 1, names[i], nl);
		ls_writer_append(w, &y->h);
		free(names[i]);
	}
	ls_writer_close(w, NULL, &ws);
	printf("capture: %ld samples + stacks + %zu symbols written in %.3f s, %.1f MB on disk\n",
	       nsamples, na, now() - t0, ws.file_bytes / 1e6);
	free(names);
	free(a);
	free(su);
	free(sk);
	return 0;
}
