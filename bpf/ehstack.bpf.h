/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * record --call-graph eh: the current thread's user stack unwound here, in
 * BPF, by unwind tables user space built from each mapped file's .eh_frame
 * (struct ls_eh_row, in eh_rows; a process's mappings in eh_procs), as the
 * OpenTelemetry eBPF profiler does. Through code without frame pointers
 * (Debian's libc, most libraries) as through code with them; a frame whose
 * address has no table row is stepped by its frame pointer. Only the
 * addresses leave the kernel, once per distinct stack of a process (struct
 * ls_ev_ustack_eh); events carry its id. Included by the objects that take
 * user stacks.
 */
#ifndef LATSPLIT_EHSTACK_BPF_H
#define LATSPLIT_EHSTACK_BPF_H

#include "common.bpf.h"

const volatile bool eh_unwind = false;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set by user space (--call-graph eh) */
	__type(key, __u32);
	__type(value, struct ls_eh_row);
} eh_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set by user space (--call-graph eh) */
	__type(key, __u32);
	__type(value, __u32);
} eh_pages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct ls_eh_proc);
} eh_procs SEC(".maps");

/* pids whose stacks met an address outside their known mappings (a
 * library loaded since user space looked): user space looks again */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} eh_missed SEC(".maps");

/* A walk's record, and its registers and counts beside it: in a map, not
 * on the stack, so that the verifier reads them back as unknowns and checks
 * eh_step's body once. On the stack, each frame depth (n, a known
 * constant there) made states of its own: ~1 s of every record's start-up. */
struct eh_state {
	struct ls_ev_ustack_eh e;
	__u64 ip, sp, bp, hash;
	__u32 n, status, fp, missed;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eh_state);
} eh_scratch SEC(".maps");

/* the stacks sent, by hash: their ids (sized with the stack map) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __s32);
} eh_ids SEC(".maps");

/* the next id (one counter for every object that takes stacks) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} eh_next SEC(".maps");

/* Where the two searches for a pc ended last time (the mapping's index in
 * the process's list, the row's in eh_rows), per CPU, by a hash of the pc.
 * A server's stacks repeat: most frames are found here. An entry is only a
 * hint: eh_hit checks that its row is the one the searches would find
 * now (for this process, with the tables as they are), so a stale or
 * clobbered entry costs a search, never a wrong frame. */
#define EH_CACHE_BITS 10
struct eh_hint {
	__u64 pc;
	__u32 map, row;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1 << EH_CACHE_BITS);
	__type(key, __u32);
	__type(value, struct eh_hint);
} eh_cache SEC(".maps");

struct eh_walk {
	const struct ls_eh_proc *proc;
	struct eh_state *st;
};

static __always_inline __u64 eh_read(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* A binary search's state: the first index in [lo, hi) whose key is above
 * `key` ends in lo. Each probe is one bpf_loop step: the verifier checks
 * the body once (unrolled, 23 probes a frame ran past its 1 M
 * instructions; even 3 inline probes, before bpf_loop takes the rest,
 * tripled the program's load time for no cost measurable per run). */
struct eh_search {
	const struct ls_eh_proc *proc; /* the mappings searched, or NULL: rows */
	__u64 key;
	__u32 lo, hi, base;
};

static long eh_search_step(__u32 i, void *arg)
{
	struct eh_search *s = arg;
	__u32 mid, at;
	__u64 v;

	if (s->lo >= s->hi)
		return 1;
	mid = s->lo + (s->hi - s->lo) / 2;
	if (s->proc) {
		v = s->proc->m[mid & (LS_EH_MAPS - 1)].start;
	} else {
		const struct ls_eh_row *r;

		at = s->base + mid;
		r = bpf_map_lookup_elem(&eh_rows, &at);
		if (!r)
			return 1;
		v = r->pc;
	}
	if (v <= s->key)
		s->lo = mid + 1;
	else
		s->hi = mid;
	return 0;
}

static __always_inline __u32 eh_page(__u32 at)
{
	__u32 *v = bpf_map_lookup_elem(&eh_pages, &at);

	return v ? *v : 0;
}

/* pc's address in m's file (what rows are keyed by) into *rel; false where
 * m's rows cannot hold it (outside 32 bits, or before the bucketed text) */
static __always_inline bool eh_rel(const struct ls_eh_map *m, __u64 pc, __u32 *rel)
{
	if (pc < m->bias || pc - m->bias > 0xffffffffull)
		return false;
	*rel = (__u32)(pc - m->bias);
	return !m->npages || *rel >= m->text;
}

/* The row for pc in map m: the last row at or before it (its index in
 * eh_rows to *idx). NULL: none. */
static __always_inline const struct ls_eh_row *eh_row(const struct ls_eh_map *m, __u64 pc,
						      __u32 *idx)
{
	struct eh_search s = {.lo = 0, .hi = m->nrows, .base = m->row};
	__u32 at, rel = 0;

	if (!eh_rel(m, pc, &rel))
		return NULL;
	s.key = rel;
	if (m->npages) { /* the bucket's rows only */
		__u32 k;

		k = (rel - m->text) >> LS_EH_PAGE_SHIFT;
		if (k >= m->npages)
			k = m->npages - 1;
		else if (k + 1 < m->npages)
			s.hi = eh_page(m->page + k + 1) + 1;
		s.lo = eh_page(m->page + k);
		if (s.hi > m->nrows)
			s.hi = m->nrows;
	}
	bpf_loop(32, eh_search_step, &s, 0);
	if (!s.lo)
		return NULL;
	*idx = at = s.base + s.lo - 1;
	return bpf_map_lookup_elem(&eh_rows, &at);
}

/* The mapping holding pc (binary search over the sorted starts; its index
 * to *mi). */
static __always_inline const struct ls_eh_map *eh_map(const struct ls_eh_proc *p, __u64 pc,
						      __u32 *mi)
{
	struct eh_search s = {.proc = p, .key = pc, .lo = 0, .hi = p->n};

	if (s.hi > LS_EH_MAPS)
		s.hi = LS_EH_MAPS;
	bpf_loop(8, eh_search_step, &s, 0);
	if (!s.lo)
		return NULL;
	*mi = (s.lo - 1) & (LS_EH_MAPS - 1);
	const struct ls_eh_map *m = &p->m[*mi];
	return pc < m->end ? m : NULL;
}

/* h's row, if it is what eh_map and eh_row would find for pc in p now:
 * the mapping holds pc (mappings do not overlap), and the row is the last
 * of that mapping's rows at or before pc's address in its file. */
static __always_inline const struct ls_eh_row *eh_hit(const struct ls_eh_proc *p,
						      const struct eh_hint *h, __u64 pc)
{
	const struct ls_eh_row *r, *next;
	const struct ls_eh_map *m;
	__u32 at = h->row, end, rel = 0;

	if (h->pc != pc || h->map >= p->n || h->map >= LS_EH_MAPS)
		return NULL;
	m = &p->m[h->map & (LS_EH_MAPS - 1)];
	if (pc < m->start || pc >= m->end || !eh_rel(m, pc, &rel))
		return NULL;
	end = m->row + m->nrows;
	if (at < m->row || at >= end)
		return NULL;
	r = bpf_map_lookup_elem(&eh_rows, &at);
	if (!r || r->pc > rel)
		return NULL;
	if (at + 1 < end) {
		at++;
		next = bpf_map_lookup_elem(&eh_rows, &at);
		if (!next || next->pc <= rel)
			return NULL;
	}
	return r;
}

/* pc's row in the walk's process: from the cache when its hint holds,
 * else by the searches (and the hint kept). *missed: no mapping has it. */
static __always_inline const struct ls_eh_row *eh_find(const struct ls_eh_proc *p, __u64 pc,
						       __u32 *missed)
{
	__u32 slot = (__u32)((pc * 0x9e3779b97f4a7c15ull) >> (64 - EH_CACHE_BITS)), mi = 0, idx = 0;
	struct eh_hint *h = bpf_map_lookup_elem(&eh_cache, &slot);
	const struct ls_eh_row *r;
	const struct ls_eh_map *m;

	if (h && (r = eh_hit(p, h, pc)))
		return r;
	m = eh_map(p, pc, &mi);
	if (!m) {
		*missed = 1;
		return NULL;
	}
	r = eh_row(m, pc, &idx);
	if (r && h) {
		h->pc = pc;
		h->map = mi;
		h->row = idx;
	}
	return r;
}

/* A stack's hash (FNV-1a 64 over the pid, then each address): its seed,
 * and one address more. */
static __always_inline __u64 eh_hash_seed(__u32 pid)
{
	return 0xcbf29ce484222325ull ^ pid;
}

static __always_inline __u64 eh_hash_step(__u64 hash, __u64 ip)
{
	return (hash ^ ip) * 0x100000001b3ull;
}

static long eh_step(__u32 i, void *arg)
{
	const struct eh_walk *walk = arg;
	struct eh_state *w = walk->st;
	__u64 ip = w->ip, look, cfa = 0, ra;
	const struct ls_eh_row *r;

	if (!ip || ip >> 47 || w->n >= LS_STACK_DEPTH) {
		if (w->n >= LS_STACK_DEPTH)
			w->status = LS_UNWIND_STACK_END;
		return 1;
	}
	w->e.ips[w->n & LS_STACK_DEPTH] = ip;
	w->n++;
	w->hash = eh_hash_step(w->hash, ip);
	/* a return address is past its call: the call's own row is before it */
	look = i ? ip - 1 : ip;
	r = eh_find(walk->proc, look, &w->missed);
	if (r && r->kind == LS_EH_ROOT) {
		w->status = LS_UNWIND_OK;
		return 1;
	}
	if (r && r->kind == LS_EH_RSP)
		cfa = w->sp + r->cfa;
	else if (r && r->kind == LS_EH_RBP)
		cfa = w->bp + r->cfa;
	else if (r && r->kind == LS_EH_PLT)
		cfa = w->sp + 8 + ((ip & 15) >= r->cfa ? 8 : 0);
	if (cfa && r->rbp == -2) { /* the usual prologue: rbp pushed under the return address */
		__u64 two[2] = {};

		bpf_probe_read_user(two, sizeof(two), (const void *)(cfa - 16));
		w->bp = two[0];
		ra = two[1];
	} else if (cfa) {
		ra = eh_read(cfa - 8);
		if (r->rbp < 0)
			w->bp = eh_read(cfa + 8 * (__s64)r->rbp);
	} else {
		/* no row: the frame pointer's frame */
		if (!w->bp || w->bp < w->sp) {
			w->status = LS_UNWIND_NO_CFI;
			return 1;
		}
		__u64 two[2] = {};

		cfa = w->bp + 16;
		bpf_probe_read_user(two, sizeof(two), (const void *)w->bp);
		w->bp = two[0];
		ra = two[1];
		w->fp++;
	}
	if (cfa <= w->sp) { /* a stack only grows one way: a loop */
		w->status = LS_UNWIND_ERROR;
		return 1;
	}
	w->sp = cfa;
	w->ip = ra;
	if (!ra)
		w->status = LS_UNWIND_NO_CFI;
	return !ra;
}

/* Names tgid to user space: its stacks met no table. Looked up first: a
 * process with JIT code misses on every stack, and the LRU map's update
 * takes a lock. */
static __always_inline void eh_note_missed(__u32 tgid)
{
	__u8 one = 1;

	if (!bpf_map_lookup_elem(&eh_missed, &tgid))
		bpf_map_update_elem(&eh_missed, &tgid, &one, BPF_ANY);
}

/* tgid's mappings when the table walk takes its user stacks (eh_stack),
 * else NULL (a process without tables yet is named to user space). */
static __always_inline const struct ls_eh_proc *eh_covers(__u32 tgid)
{
	const struct ls_eh_proc *p;

	if (!eh_unwind)
		return NULL;
	p = bpf_map_lookup_elem(&eh_procs, &tgid);
	if (!p)
		eh_note_missed(tgid);
	return p;
}

/* The n addresses in e->ips, hashed to hash: their id, a new one sent to
 * user space once (as eh_stack says). e's header is filled here. */
static __always_inline __s32 eh_intern(struct ls_ev_ustack_eh *e, __u32 n, __u64 hash,
				       __u32 status, __u32 fp, bool kernel)
{
	__u32 zero = 0;
	__s32 *known, id;
	__u64 *next = bpf_map_lookup_elem(&eh_next, &zero), size;

	asm volatile("" : "+r"(n)); /* the bound below is on this register */
	if (!next || !n || n > LS_STACK_DEPTH)
		return -1;
	known = bpf_map_lookup_elem(&eh_ids, &hash);
	if (known)
		return *known;
	id = LS_EH_ID0 + (__s32)(__sync_fetch_and_add(next, 1) & 0x0fffffff);
	if (bpf_map_update_elem(&eh_ids, &hash, &id, BPF_NOEXIST)) {
		/* another CPU's, a moment ago; or the map is full */
		known = bpf_map_lookup_elem(&eh_ids, &hash);
		if (known)
			return *known;
		count_in(&stack_errs, 0);
		return -1;
	}
	fill_hdr(&e->h, LS_EV_USTACK_EH, 0);
	if (kernel) /* pid 0: symbolized from kallsyms */
		e->h.pid = e->h.tid = 0;
	e->id = id;
	e->n = n;
	e->status = status;
	e->fp_frames = fp;
	size = offsetof(struct ls_ev_ustack_eh, ips) + (__u64)n * sizeof(__u64);
	asm volatile("" : "+r"(size));
	if (size > sizeof(*e))
		return -1;
	e->h.size = (__u16)size;
	if (bpf_ringbuf_output(&events, e, size, wakeup_flags()))
		count_drop();
	return id;
}

/* The kernel stack a task left in when it was switched out (it is not
 * running: its saved stack), interned as eh_stack's are, under pid 0.
 * Costs an unwind: taken only for the blocks that asked for it. */
static __always_inline __s32 eh_task_kstack(struct task_struct *task)
{
	__u32 zero = 0, n;
	struct eh_state *st = bpf_map_lookup_elem(&eh_scratch, &zero);
	__u64 hash = eh_hash_seed(0); /* pid 0: the kernel's (no user stack has it) */
	struct ls_ev_ustack_eh *e;
	long got;

	if (!st)
		return -1;
	e = &st->e;
	got = bpf_get_task_stack(task, e->ips, LS_STACK_DEPTH * sizeof(__u64), 0);
	if (got <= 0)
		return -1;
	n = (__u32)got / sizeof(__u64);
	for (__u32 i = 0; i < LS_STACK_DEPTH; i++) {
		if (i >= n)
			break;
		hash = eh_hash_step(hash, e->ips[i]);
	}
	return eh_intern(e, n, hash, LS_UNWIND_OK, 0, true);
}

/* The current thread's user stack, unwound by table, as an id: a stack
 * this process had before has its id (eh_ids: by a 64-bit hash of the pid
 * and the addresses); a new one gets the next and goes to user space once
 * (struct ls_ev_ustack_eh). -1: none (a kernel thread, or eh_ids full:
 * counted with the stack map's errors). */
static __always_inline __s32 eh_stack(__u32 tgid, const struct ls_eh_proc *proc)
{
	__u32 zero = 0;
	struct eh_walk w = {.proc = proc};
	struct pt_regs *regs;
	struct eh_state *st = bpf_map_lookup_elem(&eh_scratch, &zero);

	if (!st)
		return -1;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	st->ip = BPF_CORE_READ(regs, ip);
	st->sp = BPF_CORE_READ(regs, sp);
	st->bp = BPF_CORE_READ(regs, bp);
	if (!st->ip || st->ip >> 47 || !st->sp || st->sp >> 47)
		return -1; /* a kernel thread */
	st->n = st->fp = st->missed = 0;
	st->status = LS_UNWIND_NO_CFI;
	st->hash = eh_hash_seed(tgid);
	w.st = st;
	bpf_loop(LS_STACK_DEPTH + 1, eh_step, &w, 0);
	if (st->missed)
		eh_note_missed(tgid);
	return eh_intern(&st->e, st->n, st->hash, st->status, st->fp, false);
}

#endif
