/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Symbolization of stack addresses: kernel ones from /proc/kallsyms, user
 * ones through the process's mappings (read while it lives) and the ELF
 * symbol tables of the mapped files (.symtab, else .dynsym, else a debug file
 * found by build-id or .gnu_debuglink under the debug directory,
 * /usr/lib/debug unless set). One cache entry
 * per file. Unknown frames read "[unknown]" with their module.
 */
#ifndef LATSPLIT_USER_SYMBOLIZE_H
#define LATSPLIT_USER_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ls_symbolizer;

struct ls_symbolizer *ls_sym_new(void);
/* Reads the kernel's symbols (/proc/kallsyms) in a thread of its own; the
 * first kernel address resolved waits for it. For a recorder, whose thread
 * that drains the ring buffer must not stop for it: ~50 ms of CPU here,
 * ~260 ms of wall time on a host the load keeps busy, and 87k events
 * dropped when the first stacks checkpoint read them itself. */
void ls_sym_prefetch_kernel(struct ls_symbolizer *s);
/* Where debug files live (gdb's debug-file-directory): DIR/.build-id/xx/
 * rest.debug and DIR/<dir of the file>/<debuglink name>. -1 if too long. */
int ls_sym_set_debug_dir(struct ls_symbolizer *s, const char *dir);
/* Reads pid's executable mappings now; called again, adds the new ones
 * (mappings accumulate: stacks taken before an unmap still resolve). */
int ls_sym_add_process(struct ls_symbolizer *s, pid_t pid);

#define LS_BUILD_ID_MAX 20
/* An executable mapping: path as the process mapped it ([vdso], [anon] for
 * anonymous code such as a JIT's); file, where its symbols are read (NULL:
 * nowhere). */
struct ls_sym_mapping {
	uint64_t start, end, pgoff;
	const char *path, *file;
};
/* The i-th mapping known for pid: 0, or -1 past the end. */
int ls_sym_mapping(const struct ls_symbolizer *s, pid_t pid, size_t i, struct ls_sym_mapping *out);
/* A mapping recorded elsewhere (a capture), for symbolizing offline: the
 * file at m->path is used when its build-id matches (or none was
 * recorded), else the debug file with that build-id under the debug
 * directory, else none (frames read "[unknown] (module)"). m->file unused. */
void ls_sym_add_mapping(struct ls_symbolizer *s, pid_t pid, const struct ls_sym_mapping *m,
			const unsigned char *build_id, size_t id_len);
/* The GNU build-id of an ELF file into id: its length, 0 if it has none,
 * -1 if unreadable (or longer than len). Read once per file. */
int ls_sym_build_id(struct ls_symbolizer *s, const char *path, unsigned char *id, size_t len);
/* The i-th process whose mappings are known: 0 and *pid, or -1 past the end. */
int ls_sym_process(const struct ls_symbolizer *s, size_t i, pid_t *pid);
int ls_sym_has_process(const struct ls_symbolizer *s, pid_t pid);
/* Writes the name of ip in pid (pid 0: the kernel) into buf. */
const char *ls_sym_resolve(struct ls_symbolizer *s, pid_t pid, uint64_t ip, char *buf, size_t len);
/* Symbols of one ELF file at a file offset, for tests: NULL if none. */
const char *ls_sym_file_offset(struct ls_symbolizer *s, const char *path, uint64_t off);
/* The budget for every file's symbol table (entries and names; default
 * 192 MiB): what a traced process maps cannot make the recorder hold more.
 * Symbols past it are not kept, and counted (ls_sym_dropped). */
void ls_sym_set_budget(struct ls_symbolizer *s, size_t bytes);
uint64_t ls_sym_dropped(const struct ls_symbolizer *s);
/* JIT runtimes write their perf map (/tmp/perf-PID.map) after they start:
 * looks again (about once a second, at most a minute) for it in each
 * process with executable memory of no file, while it lives; the map is
 * kept open, so it names its code after the process exits. */
void ls_sym_poll_jit(struct ls_symbolizer *s);
void ls_sym_free(struct ls_symbolizer *s);

/* An address in a process (pid 0: the kernel). */
struct ls_sym_addr {
	uint32_t pid;
	uint64_t ip;
};
/* Sorts v by process then address and drops repeats; returns the count. */
size_t ls_sym_addr_unique(struct ls_sym_addr *v, size_t n);

#endif
