// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Symbolizer (see symbolize.h). Files are read with libelf.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "procfile.h"
#include "symbolize.h"

struct sym {
	uint64_t addr, size;
	char *name;
};

struct seg {
	uint64_t off, filesz, vaddr;
	uint32_t flags; /* PF_X ... */
};

struct elf_file {
	char *path;
	struct sym *syms;
	size_t nsyms, capsyms;
	bool symtab; /* its symbols came from a .symtab (else .dynsym only) */
	struct seg segs[16];
	int nsegs;
};

struct mapping {
	uint64_t start, end, pgoff;
	char *path; /* as mapped (or [anon], [vdso], ...) */
	char *file; /* where its symbols are read: path, or a debug file found by
		     * build-id for a capture's mapping; NULL: none usable */
	bool debug_only; /* file is a separate debug file (objcopy
			  * --only-keep-debug): its segments' file offsets
			  * are not the binary's */
};

struct proc_maps {
	pid_t pid;
	struct mapping *m;
	size_t n, cap;
	/* JIT code named by the process's perf map (/tmp/perf-PID.map), kept
	 * open from when the process was first seen: it can be read again
	 * after the process exits */
	struct sym *jit;
	size_t njit, capjit;
	off_t jit_size; /* of the file when read: read again when it grew */
	int jit_fd;     /* -1: none */
	bool anon_exec; /* has executable memory of no file: JIT code may be */
	unsigned jit_tries;
};

struct ls_symbolizer {
	struct sym *ksyms;
	size_t nk, capk;
	int kloaded;
	/* reading them in a thread of its own (ls_sym_prefetch_kernel): the
	 * fields above are its until it is joined */
	pthread_t kthread;
	bool kthread_on;
	struct elf_file **files;
	size_t nfiles, capfiles;
	struct proc_maps *procs;
	size_t nprocs, capprocs;
	char debug_dir[256];
	/* build-ids by file, read once (processes share their libraries) */
	struct file_id {
		char *path;
		unsigned char id[LS_BUILD_ID_MAX];
		int len;
	} *ids;
	size_t nids, capids;
	/* what a traced process's files can make us hold: symbol entries and
	 * names, within a budget; symbols past it are counted, not kept */
	size_t sym_bytes, sym_budget;
	uint64_t sym_dropped;
	size_t jit_open; /* perf maps held open (at most JIT_FDS: fds are finite) */
};

#define SYM_BUDGET (192u << 20) /* symbol tables of every file, in all */

struct ls_symbolizer *ls_sym_new(void)
{
	struct ls_symbolizer *s;

	elf_version(EV_CURRENT);
	s = calloc(1, sizeof(*s));
	if (s) {
		ls_sym_set_debug_dir(s, "/usr/lib/debug");
		s->sym_budget = SYM_BUDGET;
	}
	return s;
}

int ls_sym_set_debug_dir(struct ls_symbolizer *s, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n >= sizeof(s->debug_dir))
		return -1;
	memcpy(s->debug_dir, dir, n);
	s->debug_dir[n] = '\0';
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The symbol containing addr (or starting last before it, for size 0). */
static const struct sym *find(const struct sym *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct sym *s = &v[lo - 1];
	return !s->size || addr < s->addr + s->size ? s : NULL;
}

static void load_kallsyms(struct ls_symbolizer *s)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512], name[256], type;
	unsigned long long addr;

	s->kloaded = 1;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr)
			continue;
		if (type != 't' && type != 'T' && type != 'W' && type != 'w')
			continue;
		GROW(s->ksyms, s->nk, s->capk);
		s->ksyms[s->nk++] = (struct sym){addr, 0, strdup(name)};
	}
	fclose(f);
	if (s->nk)
		qsort(s->ksyms, s->nk, sizeof(*s->ksyms), sym_cmp);
}

/* An ELF file opened for reading (*fd set), or NULL. Paths may come from a
 * capture (mapping records), so only a regular file is ever opened: stat
 * first (opening a device can act on it, a FIFO blocks), then open without
 * blocking and check that the same regular file was opened. */
static Elf *elf_open(const char *path, int *fd)
{
	struct stat before, after;
	Elf *e;

	if (stat(path, &before) || !S_ISREG(before.st_mode))
		return NULL;
	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (*fd < 0)
		return NULL;
	if (fstat(*fd, &after) || !S_ISREG(after.st_mode) || after.st_ino != before.st_ino ||
	    after.st_dev != before.st_dev) {
		close(*fd);
		return NULL;
	}
	e = elf_begin(*fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(*fd);
		return NULL;
	}
	return e;
}

/* Keeps one symbol in v, within the symbolizer's budget (entries and
 * names); past it, counts it instead. */
static void keep_sym(struct ls_symbolizer *s, struct sym **v, size_t *n, size_t *cap,
		     uint64_t addr, uint64_t size, const char *name)
{
	size_t cost = sizeof(struct sym) + strlen(name) + 1;

	if (s->sym_bytes + cost > s->sym_budget) {
		s->sym_dropped++;
		return;
	}
	s->sym_bytes += cost;
	GROW(*v, *n, *cap);
	(*v)[(*n)++] = (struct sym){addr, size, strdup(name)};
}

/* Frees a table kept by keep_sym, its bytes given back to the budget. */
static void drop_syms(struct ls_symbolizer *s, struct sym **v, size_t *n, size_t *cap)
{
	for (size_t i = 0; i < *n; i++) {
		s->sym_bytes -= sizeof(struct sym) + strlen((*v)[i].name) + 1;
		free((*v)[i].name);
	}
	free(*v);
	*v = NULL;
	*n = *cap = 0;
}

/* Reads function symbols (within the symbolizer's budget) and PT_LOAD
 * segments of one ELF file. */
static int read_elf(struct ls_symbolizer *s, struct elf_file *ef, const char *path, bool syms_only)
{
	int fd;
	Elf *e = elf_open(path, &fd);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t phn;
	bool have_symtab = false;

	if (!e)
		return -1;
	if (!syms_only && !elf_getphdrnum(e, &phn)) {
		for (size_t i = 0; i < phn && ef->nsegs < 16; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_LOAD)
				ef->segs[ef->nsegs++] =
					(struct seg){ph.p_offset, ph.p_filesz, ph.p_vaddr, ph.p_flags};
		}
	}
	/* .symtab when present (it includes what .dynsym has), else .dynsym */
	for (int pass = 0; pass < 2; pass++) {
		scn = NULL;
		while ((scn = elf_nextscn(e, scn))) {
			Elf_Data *d;
			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM) || !sh.sh_entsize)
				continue;
			if (pass == 1 && have_symtab)
				continue;
			d = elf_getdata(scn, NULL);
			/* as many entries as the data holds, whatever the header claims */
			for (size_t i = 0; d && i < d->d_size / sh.sh_entsize; i++) {
				GElf_Sym sy;
				const char *nm;
				if (!gelf_getsym(d, i, &sy) || GELF_ST_TYPE(sy.st_info) != STT_FUNC ||
				    !sy.st_value)
					continue;
				nm = elf_strptr(e, sh.sh_link, sy.st_name);
				if (nm && nm[0])
					keep_sym(s, &ef->syms, &ef->nsyms, &ef->capsyms, sy.st_value,
						 sy.st_size, nm);
			}
			if (pass == 0)
				have_symtab = ef->symtab = true;
		}
	}
	elf_end(e);
	close(fd);
	return 0;
}

/* The GNU build-id note of an open ELF: its length, 0 if none. */
static size_t elf_build_id(Elf *e, unsigned char *id, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(d = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0)
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz <= len &&
			    nh.n_descsz) {
				memcpy(id, (const char *)d->d_buf + desc_off, nh.n_descsz);
				return nh.n_descsz;
			}
	}
	return 0;
}

int ls_sym_build_id(struct ls_symbolizer *s, const char *path, unsigned char *id, size_t len)
{
	struct file_id *c = NULL;
	int fd;
	Elf *e;

	for (size_t i = 0; i < s->nids && !c; i++)
		if (!strcmp(s->ids[i].path, path))
			c = &s->ids[i];
	if (!c) {
		GROW(s->ids, s->nids, s->capids);
		c = &s->ids[s->nids++];
		if (!(c->path = strdup(path)))
			abort();
		c->len = -1;
		if ((e = elf_open(path, &fd))) {
			c->len = (int)elf_build_id(e, c->id, sizeof(c->id));
			elf_end(e);
			close(fd);
		}
	}
	if (c->len > 0 && (size_t)c->len > len)
		return -1;
	if (c->len > 0)
		memcpy(id, c->id, c->len);
	return c->len;
}

/* DIR/.build-id/xx/rest.debug for a build-id. */
static void build_id_path(char *out, size_t len, const char *debug_dir, const unsigned char *id,
			  size_t n)
{
	size_t off = snprintf(out, len, "%s/.build-id/%02x/", debug_dir, id[0]);

	for (size_t i = 1; i < n && off + 8 < len; i++)
		off += snprintf(out + off, len - off, "%02x", id[i]);
	snprintf(out + off, len - off, ".debug");
}

/* A stripped file's debug symbols: by build-id, else by .gnu_debuglink. */
static void read_debug_file(struct ls_symbolizer *s, struct elf_file *ef, const char *path,
			    const char *debug_dir)
{
	int fd;
	Elf *e = elf_open(path, &fd);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	char cand[4][1024];
	int nc = 0;

	if (!e)
		return;
	unsigned char id[LS_BUILD_ID_MAX];
	size_t idn = elf_build_id(e, id, sizeof(id));
	if (idn)
		build_id_path(cand[nc++], sizeof(cand[0]), debug_dir, id, idn);
	while ((scn = elf_nextscn(e, scn)) && nc < 2) { /* at most 1 + 3 candidates */
		Elf_Data *d;
		size_t shstrndx;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || elf_getshdrstrndx(e, &shstrndx))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		d = elf_getdata(scn, NULL);
		if (!name || !d || !d->d_buf)
			continue;
		if (!strcmp(name, ".gnu_debuglink") && nc < 2 && memchr(d->d_buf, 0, d->d_size)) {
			/* where gdb looks: beside the file, in .debug/, under the debug dir */
			char dir[400];
			const char *slash = strrchr(path, '/'), *dl_name = d->d_buf;
			size_t dl = slash ? (size_t)(slash - path) : 0;
			snprintf(dir, sizeof(dir), "%.*s", (int)dl, path);
			snprintf(cand[nc++], sizeof(cand[0]), "%.400s/%.255s", dir, dl_name);
			snprintf(cand[nc++], sizeof(cand[0]), "%.400s/.debug/%.255s", dir, dl_name);
			snprintf(cand[nc++], sizeof(cand[0]), "%.255s%.400s/%.255s", debug_dir, dir, dl_name);
		}
	}
	elf_end(e);
	close(fd);
	for (int i = 0; i < nc && !ef->nsyms; i++)
		if (strcmp(cand[i], path)) /* not the stripped file itself */
			read_elf(s, ef, cand[i], true);
}

static struct elf_file *elf_get(struct ls_symbolizer *s, const char *path)
{
	struct elf_file *ef;

	for (size_t i = 0; i < s->nfiles; i++)
		if (!strcmp(s->files[i]->path, path))
			return s->files[i];
	ef = calloc(1, sizeof(*ef));
	if (!ef)
		abort();
	ef->path = strdup(path);
	/* a file with only .dynsym (every distribution library): its debug
	 * file (libc6-dbg, debuginfod's cache) names what .dynsym does not,
	 * start_thread among them; it wins when it holds more */
	if (read_elf(s, ef, path, false) == 0 && !ef->symtab) {
		struct elf_file dbg = {0};
		read_debug_file(s, &dbg, path, s->debug_dir);
		if (dbg.nsyms > ef->nsyms) {
			drop_syms(s, &ef->syms, &ef->nsyms, &ef->capsyms);
			ef->syms = dbg.syms;
			ef->nsyms = dbg.nsyms;
			ef->capsyms = dbg.capsyms;
		} else {
			drop_syms(s, &dbg.syms, &dbg.nsyms, &dbg.capsyms);
		}
	}
	if (ef->nsyms)
		qsort(ef->syms, ef->nsyms, sizeof(*ef->syms), sym_cmp);
	GROW(s->files, s->nfiles, s->capfiles);
	s->files[s->nfiles++] = ef;
	return ef;
}

const char *ls_sym_file_offset(struct ls_symbolizer *s, const char *path, uint64_t off)
{
	struct elf_file *ef = elf_get(s, path);
	uint64_t vaddr = off;
	const struct sym *sy;

	for (int i = 0; i < ef->nsegs; i++)
		if (off >= ef->segs[i].off && off < ef->segs[i].off + ef->segs[i].filesz) {
			vaddr = off - ef->segs[i].off + ef->segs[i].vaddr;
			break;
		}
	sy = find(ef->syms, ef->nsyms, vaddr);
	return sy ? sy->name : NULL;
}

/* The symbol at an address of a debug file's executable code, given as its
 * distance from the start of the code's first mapping: the debug file keeps
 * the binary's virtual addresses but not its file offsets (objcopy
 * --only-keep-debug leaves the segments' contents out; binutils 2.44 sets
 * their offsets to 0 or to where the notes went), so the offset a
 * mapping's pgoff gives cannot be placed by its segments. The kernel maps
 * the executable segment from its page-aligned start: that address, plus
 * the distance. NULL when the file has no executable segment. */
static const char *debug_exec_sym(struct ls_symbolizer *s, const char *path, uint64_t dist)
{
	struct elf_file *ef = elf_get(s, path);
	const struct sym *sy;

	for (int i = 0; i < ef->nsegs; i++)
		if (ef->segs[i].flags & PF_X) {
			sy = find(ef->syms, ef->nsyms, (ef->segs[i].vaddr & ~0xfffull) + dist);
			return sy ? sy->name : NULL;
		}
	return NULL;
}

static struct proc_maps *proc_get(const struct ls_symbolizer *s, pid_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

int ls_sym_has_process(const struct ls_symbolizer *s, pid_t pid)
{
	return proc_get(s, pid) != NULL;
}

int ls_sym_process(const struct ls_symbolizer *s, size_t i, pid_t *pid)
{
	if (i >= s->nprocs)
		return -1;
	*pid = s->procs[i].pid;
	return 0;
}

static struct proc_maps *proc_new(struct ls_symbolizer *s, pid_t pid)
{
	struct proc_maps *p = proc_get(s, pid);

	if (!p) {
		GROW(s->procs, s->nprocs, s->capprocs);
		p = &s->procs[s->nprocs++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->jit_fd = -1;
	}
	return p;
}

/* Adds a mapping unless the same one is known (mappings only accumulate:
 * a library unmapped later still explains the stacks taken before). */
static void map_add(struct proc_maps *p, uint64_t b, uint64_t e, uint64_t off, const char *path,
		    const char *file, bool debug_only)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->m[i].start == b && p->m[i].end == e && !strcmp(p->m[i].path, path))
			return;
	GROW(p->m, p->n, p->cap);
	p->m[p->n++] =
		(struct mapping){b, e, off, strdup(path), file ? strdup(file) : NULL, debug_only};
}

static void open_perf_map(struct ls_symbolizer *s, struct proc_maps *p);

int ls_sym_add_process(struct ls_symbolizer *s, pid_t pid)
{
	char path[64], line[4096];
	struct proc_maps *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	p = proc_new(s, pid);
	open_perf_map(s, p);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long b, e, off, ino;
		unsigned int maj, min;
		char perms[8], file[3000] = "";
		struct stat st;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %2999[^\n]", &b, &e, perms, &off, &maj,
			   &min, &ino, file) < 7 ||
		    perms[2] != 'x')
			continue;
		char full[3100];
		/* Our file of that name only when it is the very inode mapped
		 * (then its symbols are shared with every process mapping it);
		 * else the process's own (another mount namespace, a file
		 * replaced since), by the mapping itself: never a namesake. */
		snprintf(full, sizeof(full), "%s", file[0] ? file : "[anon]");
		if (file[0] == '/' && (stat(file, &st) || st.st_ino != ino ||
				       major(st.st_dev) != maj || minor(st.st_dev) != min))
			snprintf(full, sizeof(full), "/proc/%d/map_files/%llx-%llx", pid, b, e);
		map_add(p, b, e, off, file[0] ? file : "[anon]", full[0] == '/' ? full : NULL,
			false);
		p->anon_exec |= file[0] != '/';
	}
	fclose(f);
	return 0;
}

int ls_sym_mapping(const struct ls_symbolizer *s, pid_t pid, size_t i, struct ls_sym_mapping *out)
{
	const struct proc_maps *p = proc_get(s, pid);

	if (!p || i >= p->n)
		return -1;
	*out = (struct ls_sym_mapping){p->m[i].start, p->m[i].end, p->m[i].pgoff, p->m[i].path,
				       p->m[i].file};
	return 0;
}

void ls_sym_add_mapping(struct ls_symbolizer *s, pid_t pid, const struct ls_sym_mapping *m,
			const unsigned char *build_id, size_t id_len)
{
	unsigned char local[LS_BUILD_ID_MAX];
	char dbg[1024];
	const char *file = NULL;

	if (m->path[0] == '/') {
		int n = ls_sym_build_id(s, m->path, local, sizeof(local));
		if (n >= 0 && (!id_len || ((size_t)n == id_len && !memcmp(local, build_id, id_len))))
			file = m->path; /* the same file is here */
		else if (id_len) {
			build_id_path(dbg, sizeof(dbg), s->debug_dir, build_id, id_len);
			if (!access(dbg, R_OK))
				file = dbg; /* its debug file */
		}
	}
	map_add(proc_new(s, pid), m->start, m->end, m->pgoff, m->path, file, file == dbg);
}

/* The pid a process has in its own namespace (it names its perf map so). */
static pid_t ns_pid(pid_t pid)
{
	char path[64], line[256];
	pid_t ns = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (!(f = fopen(path, "re")))
		return pid;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			char *last = strrchr(line, '\t');
			ns = last ? (pid_t)strtol(last + 1, NULL, 10) : pid;
			break;
		}
	fclose(f);
	return ns > 0 ? ns : pid;
}

/* Opens the process's perf map (JIT runtimes write "START SIZE NAME" lines:
 * Node with --perf-basic-prof, the JVM's agents, ...) through its own root,
 * a regular file only, and keeps it. */
#define JIT_FDS 256 /* perf maps kept open at once, at most */

static void open_perf_map(struct ls_symbolizer *s, struct proc_maps *p)
{
	char path[64];

	if (p->jit_fd >= 0 || s->jit_open >= JIT_FDS)
		return;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", ns_pid(p->pid));
	p->jit_fd = ls_proc_open(p->pid, path, 0, 0);
	s->jit_open += p->jit_fd >= 0;
}

#define JIT_TRIES 60 /* a process's perf map is looked for this many times */

void ls_sym_poll_jit(struct ls_symbolizer *s)
{
	for (size_t i = 0; i < s->nprocs; i++) {
		struct proc_maps *p = &s->procs[i];
		if (p->jit_fd < 0 && p->anon_exec && p->jit_tries < JIT_TRIES) {
			p->jit_tries++;
			open_perf_map(s, p);
		}
	}
}

/* Reads the perf map, within the symbol budget; again when it grew. */
static void read_perf_map(struct ls_symbolizer *s, struct proc_maps *p)
{
	char line[1024];
	struct stat st;
	int fd;
	FILE *f;

	if (p->jit_fd < 0 || fstat(p->jit_fd, &st) || st.st_size == p->jit_size ||
	    (fd = dup(p->jit_fd)) < 0)
		return;
	if (!(f = fdopen(fd, "r"))) {
		close(fd);
		return;
	}
	rewind(f);
	drop_syms(s, &p->jit, &p->njit, &p->capjit);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long b, n;
		int at = 0;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llx %llx %n", &b, &n, &at) == 2 && at && line[at])
			keep_sym(s, &p->jit, &p->njit, &p->capjit, b, n, line + at);
	}
	fclose(f);
	p->jit_size = st.st_size;
	if (p->njit)
		qsort(p->jit, p->njit, sizeof(*p->jit), sym_cmp);
}

/* JIT code's name from the perf map, the map read again on a miss (code is
 * written to it before it runs). */
static const char *jit_name(struct ls_symbolizer *s, pid_t pid, uint64_t ip)
{
	struct proc_maps *p = (struct proc_maps *)proc_get(s, pid);
	const struct sym *j;

	if (!p || p->jit_fd < 0)
		return NULL;
	if ((j = find(p->jit, p->njit, ip)))
		return j->name;
	read_perf_map(s, p);
	return (j = find(p->jit, p->njit, ip)) ? j->name : NULL;
}

static void *kallsyms_main(void *arg)
{
	load_kallsyms(arg);
	return NULL;
}

void ls_sym_prefetch_kernel(struct ls_symbolizer *s)
{
	if (!s->kloaded && !s->kthread_on)
		s->kthread_on = !pthread_create(&s->kthread, NULL, kallsyms_main, s);
}

/* The kernel's symbols are ours to read: a prefetch done. */
static void kernel_join(struct ls_symbolizer *s)
{
	if (s->kthread_on) {
		pthread_join(s->kthread, NULL);
		s->kthread_on = false;
	}
}

const char *ls_sym_resolve(struct ls_symbolizer *s, pid_t pid, uint64_t ip, char *buf, size_t len)
{
	if (!pid) {
		kernel_join(s);
		if (!s->kloaded)
			load_kallsyms(s);
		const struct sym *k = find(s->ksyms, s->nk, ip);
		snprintf(buf, len, "%s", k ? k->name : "[unknown] (kernel)");
		return buf;
	}
	const struct proc_maps *p = proc_get(s, pid);
	for (size_t i = 0; p && i < p->n; i++) {
		const struct mapping *m = &p->m[i];
		const char *base;
		if (ip < m->start || ip >= m->end)
			continue;
		base = strrchr(m->path, '/');
		base = base ? base + 1 : m->path;
		const char *name = NULL;
		if (m->debug_only) {
			/* the distance from the first executable mapping of the file
			 * (the lowest pgoff: a mapping split later keeps its own;
			 * only executable mappings are kept, ls_sym_add_process) */
			uint64_t pg0 = m->pgoff;
			for (size_t j = 0; j < p->n; j++)
				if (p->m[j].pgoff < pg0 && !strcmp(p->m[j].path, m->path))
					pg0 = p->m[j].pgoff;
			name = debug_exec_sym(s, m->file, ip - m->start + m->pgoff - pg0);
		} else if (m->file) {
			name = ls_sym_file_offset(s, m->file, ip - m->start + m->pgoff);
		} else if (m->path[0] != '/') {
			name = jit_name(s, pid, ip);
		}
		if (name)
			snprintf(buf, len, "%s", name);
		else
			snprintf(buf, len, "[unknown] (%s)", base);
		return buf;
	}
	const char *jit = p ? jit_name(s, pid, ip) : NULL; /* code mapped since */
	snprintf(buf, len, "%s", jit ? jit : "[unknown]");
	return buf;
}

void ls_sym_set_budget(struct ls_symbolizer *s, size_t bytes)
{
	s->sym_budget = bytes;
}

uint64_t ls_sym_dropped(const struct ls_symbolizer *s)
{
	return s ? s->sym_dropped : 0;
}

void ls_sym_free(struct ls_symbolizer *s)
{
	if (!s)
		return;
	kernel_join(s);
	for (size_t i = 0; i < s->nk; i++)
		free(s->ksyms[i].name);
	free(s->ksyms);
	for (size_t i = 0; i < s->nfiles; i++) {
		for (size_t k = 0; k < s->files[i]->nsyms; k++)
			free(s->files[i]->syms[k].name);
		free(s->files[i]->syms);
		free(s->files[i]->path);
		free(s->files[i]);
	}
	free(s->files);
	for (size_t i = 0; i < s->nprocs; i++) {
		for (size_t k = 0; k < s->procs[i].n; k++) {
			free(s->procs[i].m[k].path);
			free(s->procs[i].m[k].file);
		}
		free(s->procs[i].m);
		for (size_t k = 0; k < s->procs[i].njit; k++)
			free(s->procs[i].jit[k].name);
		free(s->procs[i].jit);
		if (s->procs[i].jit_fd >= 0)
			close(s->procs[i].jit_fd);
	}
	free(s->procs);
	for (size_t i = 0; i < s->nids; i++)
		free(s->ids[i].path);
	free(s->ids);
	free(s);
}

static int addr_cmp(const void *a, const void *b)
{
	const struct ls_sym_addr *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ip > y->ip) - (x->ip < y->ip);
}

size_t ls_sym_addr_unique(struct ls_sym_addr *v, size_t n)
{
	size_t k = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), addr_cmp);
	for (size_t i = 1; i < n; i++)
		if (addr_cmp(&v[k], &v[i]))
			v[++k] = v[i];
	return k + 1;
}
