/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CPython frames for record: finds the interpreter in a process (its
 * _PyRuntime and version, from the ELF symbols of the python3.X binary or
 * libpython3.X it maps), hands the BPF walker where to look (py_procs), and
 * at each stack checkpoint names the frames the walker saw, reading the code
 * objects from the live process: qualname (dir/file.py:line), written as
 * LS_REC_SYM records under LS_PY_KEY addresses.
 */
#ifndef LATSPLIT_RECORD_PYTHON_H
#define LATSPLIT_RECORD_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "latsplit/events.h"

struct ls_py;

/* set(ctx, tgid, proc): hands a process's interpreter layout to BPF */
typedef int (*ls_py_set_fn)(void *ctx, __u32 tgid, const struct ls_py_proc *pp);
typedef void (*ls_py_write_fn)(void *ctx, const struct ls_hdr *rec);

struct ls_py *ls_py_new(ls_py_set_fn set, void *set_ctx);
void ls_py_free(struct ls_py *p);

/* Looks for an interpreter in pid (once per program image). True when
 * its frames will be walked. */
bool ls_py_detect(struct ls_py *p, pid_t pid);

/* A pystack record went by: names each frame not seen before right away,
 * from the live process (LS_REC_SYM records through write). */
void ls_py_seen(struct ls_py *p, const struct ls_ev_pystack *e, ls_py_write_fn write, void *ctx);

/* Frames that could not be named (process gone, memory unreadable). */
unsigned long long ls_py_unnamed(const struct ls_py *p);
/* Frames unnamed, or named without their line, because a budget on what
 * traced processes can make the recorder hold was reached (see python.c). */
unsigned long long ls_py_over_budget(const struct ls_py *p);
/* Bytes held for naming frames (tables and line tables). */
size_t ls_py_held(const struct ls_py *p);
/* The process exited: what is held for it goes. */
void ls_py_exit(struct ls_py *p, pid_t pid);

#endif
