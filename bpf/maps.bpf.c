// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The owner of the maps every domain shares (one ring buffer, one filter,
 * the stack map, the Python and unwind-table maps): an object of maps and
 * no programs, created first and at once, so that every domain's object
 * (each with its verifier work) then loads in parallel with the others.
 * A map a domain's object defines by the same name uses this one's.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "common.bpf.h"
#include "python.bpf.h"
#include "ustack.bpf.h"
#include "ehstack.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";
