// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The engine's compute on the CPU (see cpuwork.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuwork.h"
#include "grow.h"
#include "timeline.h"

int ls_cpuwork_frame(const char *name)
{
	static const char *const prefixes[] = {"ggml_", "llamafile_", "cblas_", "mkl_", "bli_",
					       "dnnl_", "openblas_", "gotoblas"};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return 1;
	return strstr(name, "gemm") || strstr(name, "gemv");
}

static uint64_t sample_key(uint32_t pid, int32_t ustack)
{
	return ((uint64_t)pid << 32 | (uint32_t)ustack) + 1;
}

void ls_cpuwork_add(struct ls_cpuwork *w, const struct ls_hdr *rec, const struct ls_timeline *tl)
{
	if (rec->type == LS_EV_SAMPLE && rec->size >= sizeof(struct ls_ev_sample)) {
		const struct ls_ev_sample *s = (const void *)rec;
		uint64_t key = sample_key(rec->pid, s->ustack);
		uintptr_t ix;

		if (s->ustack < 0 || !ls_timeline_in_group(tl, rec->pid))
			return;
		w->samples++;
		if (!(ix = (uintptr_t)ls_idmap_get(&w->by_key, key))) {
			GROW(w->v, w->n, w->cap);
			w->v[w->n] = (struct cw_stack){rec->pid, s->ustack, 0};
			ix = ++w->n;
			if (ls_idmap_put(&w->by_key, key, (void *)ix))
				abort();
			if (!ls_idmap_get(&w->stack_ips, (uint32_t)s->ustack + 1ull)) {
				GROW(w->ips_of, w->nips_of, w->capips_of);
				w->ips_of[w->nips_of++] = (struct cw_ips){0, NULL};
				if (ls_idmap_put(&w->stack_ips, (uint32_t)s->ustack + 1ull,
						 (void *)(uintptr_t)w->nips_of))
					abort();
			}
		}
		w->v[ix - 1].samples++;
	} else if (rec->type == LS_REC_STACK && rec->size >= sizeof(struct ls_rec_stack)) {
		const struct ls_rec_stack *st = (const void *)rec;
		uintptr_t ix = (uintptr_t)ls_idmap_get(&w->stack_ips, (uint32_t)st->id + 1ull);
		size_t n = st->nips;

		if (!ix || w->ips_of[ix - 1].ips)
			return;
		if (n > (rec->size - sizeof(*st)) / sizeof(uint64_t))
			n = (rec->size - sizeof(*st)) / sizeof(uint64_t);
		if (!n || !(w->ips_of[ix - 1].ips = malloc(n * sizeof(uint64_t))))
			return;
		memcpy(w->ips_of[ix - 1].ips, st + 1, n * sizeof(uint64_t));
		w->ips_of[ix - 1].n = (uint32_t)n;
	} else if (rec->type == LS_REC_SYM && rec->size > sizeof(struct ls_rec_sym) && rec->pid) {
		const struct ls_rec_sym *sy = (const void *)rec;
		size_t nl = rec->size - sizeof(*sy);
		char name[64];

		if (sy->name_len < nl)
			nl = sy->name_len;
		if (nl >= sizeof(name))
			nl = sizeof(name) - 1;
		memcpy(name, sy + 1, nl);
		name[nl] = '\0';
		if (!ls_cpuwork_frame(name))
			return;
		GROW(w->syms, w->nsyms, w->capsyms);
		w->syms[w->nsyms].pid = rec->pid;
		w->syms[w->nsyms].ip = sy->ip;
		memcpy(w->syms[w->nsyms].name, name, nl + 1);
		w->nsyms++;
	}
}

static int sym_cmp(const void *a, const void *b)
{
	const struct cw_sym *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

static const struct cw_sym *sym_find(const struct ls_cpuwork *w, uint32_t pid, uint64_t ip)
{
	struct cw_sym k = {.pid = pid, .ip = ip};

	return bsearch(&k, w->syms, w->nsyms, sizeof(k), sym_cmp);
}

double ls_cpuwork_share(struct ls_cpuwork *w, char *frame, size_t len)
{
	uint64_t in = 0, best = 0;
	struct {
		const char *name;
		uint64_t n;
	} top[16];
	int ntop = 0;

	frame[0] = '\0';
	if (!w->samples || !w->nsyms)
		return 0;
	qsort(w->syms, w->nsyms, sizeof(*w->syms), sym_cmp);
	for (size_t i = 0; i < w->n; i++) {
		uintptr_t ix = (uintptr_t)ls_idmap_get(&w->stack_ips, (uint32_t)w->v[i].ustack + 1ull);
		const struct cw_ips *s = ix ? &w->ips_of[ix - 1] : NULL;
		const struct cw_sym *hit = NULL;

		for (uint32_t k = 0; s && k < s->n && !hit; k++) /* innermost first */
			hit = sym_find(w, w->v[i].pid, s->ips[k]);
		if (!hit)
			continue;
		in += w->v[i].samples;
		int t = 0;
		while (t < ntop && strcmp(top[t].name, hit->name))
			t++;
		if (t == ntop && ntop < 16)
			top[ntop++] = (typeof(top[0])){hit->name, 0};
		if (t < ntop)
			top[t].n += w->v[i].samples;
	}
	for (int t = 0; t < ntop; t++)
		if (top[t].n > best) {
			best = top[t].n;
			snprintf(frame, len, "%s", top[t].name);
		}
	return (double)in / (double)w->samples;
}

void ls_cpuwork_free(struct ls_cpuwork *w)
{
	for (size_t i = 0; i < w->nips_of; i++)
		free(w->ips_of[i].ips);
	free(w->ips_of);
	free(w->v);
	free(w->syms);
	ls_idmap_free(&w->by_key);
	ls_idmap_free(&w->stack_ips);
	memset(w, 0, sizeof(*w));
}
