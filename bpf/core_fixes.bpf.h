/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CO-RE accessors for fields that were renamed across kernel versions, so one
 * object loads on old and new kernels alike.
 */
#ifndef LATSPLIT_CORE_FIXES_BPF_H
#define LATSPLIT_CORE_FIXES_BPF_H

#include <bpf/bpf_core_read.h>

/* task_struct::state became __state in 5.14. */
struct task_struct___o {
	volatile long int state;
} __attribute__((preserve_access_index));

/* btf: t is a BTF pointer (a plain load of __state). */
static __always_inline __s64 task_state(struct task_struct *t, bool btf)
{
	struct task_struct___o *old = (void *)t;

	if (bpf_core_field_exists(t->__state))
		return btf ? t->__state : BPF_CORE_READ(t, __state);
	return BPF_CORE_READ(old, state);
}

#endif /* LATSPLIT_CORE_FIXES_BPF_H */
