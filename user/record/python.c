// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* CPython frames for record: see python.h. */
#include "python.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cli.h" /* ls_now_ns */
#include "grow.h"
#include "procfile.h"
#include "pycode.h"

/* A CPython version's layout: what the BPF walker follows, and the code
 * and string objects' fields user space reads to name a frame. */
struct py_layout {
	int major, minor;
	struct ls_py_proc walk;
	__u16 co_filename, co_qualname, co_firstlineno, co_linetable;
	__u16 str_length, str_state, ascii_data, compact_data; /* PyASCIIObject, compact forms */
	__u16 bytes_size, bytes_data;                           /* PyBytesObject */
};

/* 3.11 has no debug offsets: its offsets from the interpreter's own headers
 * (Include/internal, Py_BUILD_CORE); the version test checks them against
 * the headers when they are installed. */
static const struct py_layout layout_311 = {
	3, 11,
	{.interp_head = 40, .threads_head = 16, .ts_next = 8, .ts_tid = 160, .ts_cframe = 56,
	 .cf_frame = 8, .fr_code = 32, .fr_prev = 48, .fr_instr = 56, .co_code = 184, .ob_type = 8},
	112, 128, 72, 136, 16, 32, 48, 72, 16, 32,
};

/* 3.13 on: the interpreter states its own layout in _Py_DebugOffsets, the
 * first member of _PyRuntime (for debuggers and profilers: PEP 768's
 * remote debugging reads it too), so no offset of CPython's structures is
 * kept here. What is kept is where, in that struct of uint64_t fields, each
 * field we use sits: the struct gains members between minor versions (its
 * definition: Include/internal/pycore_runtime.h in 3.13,
 * pycore_debug_offsets.h from 3.14). Indices count 8-byte fields from the
 * cookie; `size` fields are the structures' sizes, used to check the rest. */
enum {
	DO_VERSION, DO_FREE_THREADED,
	DO_RT_SIZE, DO_INTERP_HEAD,
	DO_IS_SIZE, DO_THREADS_HEAD,
	DO_TS_SIZE, DO_TS_NEXT, DO_TS_FRAME, DO_TS_TID,
	DO_FR_SIZE, DO_FR_PREV, DO_FR_EXEC, DO_FR_INSTR,
	DO_CO_SIZE, DO_CO_FILENAME, DO_CO_QUALNAME, DO_CO_LINETABLE, DO_CO_FIRSTLINENO, DO_CO_CODE,
	DO_OB_TYPE,
	DO_BY_SIZE, DO_BY_OB_SIZE, DO_BY_SVAL,
	DO_UN_SIZE, DO_UN_STATE, DO_UN_LENGTH, DO_UN_ASCII_SIZE, DO_UN_COMPACT_SIZE,
	DO_N
};

struct py_debug_map {
	int minor;
	unsigned char at[DO_N]; /* field index in _Py_DebugOffsets; 0: absent */
};

static const struct py_debug_map debug_maps[] = {
	{13, {[DO_VERSION] = 1, [DO_FREE_THREADED] = 2, [DO_RT_SIZE] = 3, [DO_INTERP_HEAD] = 5,
	      [DO_IS_SIZE] = 6, [DO_THREADS_HEAD] = 9,
	      [DO_TS_SIZE] = 19, [DO_TS_NEXT] = 21, [DO_TS_FRAME] = 23, [DO_TS_TID] = 25,
	      [DO_FR_SIZE] = 28, [DO_FR_PREV] = 29, [DO_FR_EXEC] = 30, [DO_FR_INSTR] = 31,
	      [DO_CO_SIZE] = 34, [DO_CO_FILENAME] = 35, [DO_CO_QUALNAME] = 37, [DO_CO_LINETABLE] = 38,
	      [DO_CO_FIRSTLINENO] = 39, [DO_CO_CODE] = 43, [DO_OB_TYPE] = 45,
	      [DO_BY_SIZE] = 64, [DO_BY_OB_SIZE] = 65, [DO_BY_SVAL] = 66,
	      [DO_UN_SIZE] = 67, [DO_UN_STATE] = 68, [DO_UN_LENGTH] = 69, [DO_UN_ASCII_SIZE] = 70}},
	{14, {[DO_VERSION] = 1, [DO_FREE_THREADED] = 2, [DO_RT_SIZE] = 3, [DO_INTERP_HEAD] = 5,
	      [DO_IS_SIZE] = 6, [DO_THREADS_HEAD] = 9,
	      [DO_TS_SIZE] = 22, [DO_TS_NEXT] = 24, [DO_TS_FRAME] = 26, [DO_TS_TID] = 28,
	      [DO_FR_SIZE] = 31, [DO_FR_PREV] = 32, [DO_FR_EXEC] = 33, [DO_FR_INSTR] = 34,
	      [DO_CO_SIZE] = 39, [DO_CO_FILENAME] = 40, [DO_CO_QUALNAME] = 42, [DO_CO_LINETABLE] = 43,
	      [DO_CO_FIRSTLINENO] = 44, [DO_CO_CODE] = 48, [DO_OB_TYPE] = 51,
	      [DO_BY_SIZE] = 74, [DO_BY_OB_SIZE] = 75, [DO_BY_SVAL] = 76,
	      [DO_UN_SIZE] = 77, [DO_UN_STATE] = 78, [DO_UN_LENGTH] = 79, [DO_UN_ASCII_SIZE] = 80}},
	{15, {[DO_VERSION] = 1, [DO_FREE_THREADED] = 2, [DO_RT_SIZE] = 3, [DO_INTERP_HEAD] = 5,
	      [DO_IS_SIZE] = 6, [DO_THREADS_HEAD] = 9,
	      [DO_TS_SIZE] = 22, [DO_TS_NEXT] = 24, [DO_TS_FRAME] = 26, [DO_TS_TID] = 31,
	      [DO_FR_SIZE] = 39, [DO_FR_PREV] = 40, [DO_FR_EXEC] = 41, [DO_FR_INSTR] = 42,
	      [DO_CO_SIZE] = 47, [DO_CO_FILENAME] = 48, [DO_CO_QUALNAME] = 50, [DO_CO_LINETABLE] = 51,
	      [DO_CO_FIRSTLINENO] = 52, [DO_CO_CODE] = 56, [DO_OB_TYPE] = 59,
	      [DO_BY_SIZE] = 86, [DO_BY_OB_SIZE] = 87, [DO_BY_SVAL] = 88,
	      [DO_UN_SIZE] = 89, [DO_UN_STATE] = 90, [DO_UN_LENGTH] = 91, [DO_UN_ASCII_SIZE] = 92,
	      [DO_UN_COMPACT_SIZE] = 93}},
};
#define DO_MAX_FIELDS 96 /* fields read: past every index above */

struct py_pid {
	pid_t pid;
	bool walked;          /* L holds its interpreter's layout */
	bool has_state;       /* codes or seen frames of it are held (dropped at its exit) */
	struct py_layout L;
};

/* What a traced process can make the recorder hold is bounded (its code
 * objects and line tables are its to forge): a line table larger than any
 * real function's is not kept, line tables together at most
 * PY_LINES_BUDGET, at most PY_CODES_MAX code objects and PY_SEEN_MAX
 * distinct frames. Past a budget, frames go unnamed and are counted; a
 * process's state goes at its exit. About 60 MiB in all at worst. */
#define PY_LINES_MAX_ONE (256u << 10)
#define PY_LINES_BUDGET (32u << 20)
#define PY_CODES_MAX (1u << 15)
#define PY_SEEN_MAX (1u << 18)

struct py_seen {
	__u32 pid;
	__u64 key;
	bool named;
};

struct py_code {
	__u32 pid;
	__u64 code;
	bool ok;
	int firstlineno;
	char name[192]; /* "qualname (dir/file.py" */
	unsigned char *lines;
	size_t nlines;
};

struct ls_py {
	ls_py_set_fn set;
	void *set_ctx;
	struct py_pid *pids;
	size_t npids, cappids;
	struct py_seen *seen; /* open addressing, key 0 = empty */
	size_t nseen, capseen;
	struct py_code *codes; /* open addressing by (pid, code) */
	size_t ncodes, capcodes;
	unsigned long long unnamed;
	unsigned long long over_budget; /* frames unnamed, or named without lines, by a budget */
	size_t line_bytes;              /* line tables held */
	unsigned warned; /* minor versions already warned about (bit per minor) */
};

struct ls_py *ls_py_new(ls_py_set_fn set, void *set_ctx)
{
	struct ls_py *p = calloc(1, sizeof(*p));

	if (p) {
		p->set = set;
		p->set_ctx = set_ctx;
	}
	return p;
}

void ls_py_free(struct ls_py *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->capcodes; i++)
		free(p->codes[i].lines);
	free(p->codes);
	free(p->seen);
	free(p->pids);
	free(p);
}

unsigned long long ls_py_unnamed(const struct ls_py *p)
{
	return p ? p->unnamed : 0;
}

unsigned long long ls_py_over_budget(const struct ls_py *p)
{
	return p ? p->over_budget : 0;
}

size_t ls_py_held(const struct ls_py *p)
{
	return p ? p->line_bytes + p->capcodes * sizeof(*p->codes) +
			   p->capseen * sizeof(*p->seen) + p->cappids * sizeof(*p->pids)
		 : 0;
}

static bool read_mem(pid_t pid, __u64 addr, void *buf, size_t len)
{
	struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};

	return addr && process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len;
}

/* ---- finding the interpreter ---- */

/* python3.N[suffix] or libpython3.N[suffix].so[...]: N, else -1 */
static int interp_minor(const char *path)
{
	const char *b = strrchr(path, '/');
	int minor, end = 0;

	b = b ? b + 1 : path;
	if (!strncmp(b, "lib", 3))
		b += 3;
	if (sscanf(b, "python3.%d%n", &minor, &end) != 1 || minor < 0 || minor > 99)
		return -1;
	b += end;
	/* python3.11, python3.11d, libpython3.11.so.1.0, libpython3.11d.so */
	while (*b && *b != '.' && strchr("dmu", *b))
		b++;
	return !*b || !strncmp(b, ".so", 3) ? minor : -1;
}

struct elf_syms {
	__u64 runtime, version, code_type; /* symbol values, 0: absent */
	__u64 vaddr0;           /* the first PT_LOAD's page-aligned address */
};

/* Reads the interpreter's symbols from fd (closed here). */
static int elf_lookup(int fd, struct elf_syms *out)
{
	int rc = -1;
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t nph;

	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		goto out;
	if (!elf_getphdrnum(elf, &nph))
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
				out->vaddr0 = ph.p_vaddr & ~(__u64)0xfff;
				break;
			}
		}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;
			if (!gelf_getsym(d, (int)i, &s) || !s.st_value ||
			    !(n = elf_strptr(elf, sh.sh_link, s.st_name)))
				continue;
			if (!strcmp(n, "_PyRuntime"))
				out->runtime = s.st_value;
			else if (!strcmp(n, "Py_Version"))
				out->version = s.st_value;
			else if (!strcmp(n, "PyCode_Type"))
				out->code_type = s.st_value;
		}
		if (out->runtime && out->code_type)
			break;
	}
	rc = out->runtime ? 0 : -1;
	elf_end(elf);
out:
	close(fd);
	return rc;
}

static struct py_pid *pid_slot(struct ls_py *p, pid_t pid)
{
	for (size_t i = 0; i < p->npids; i++)
		if (p->pids[i].pid == pid)
			return &p->pids[i];
	GROW(p->pids, p->npids, p->cappids);
	p->pids[p->npids] = (struct py_pid){.pid = pid};
	return &p->pids[p->npids++];
}

/* A field of the debug offsets as a layout offset: within its structure
 * (the structure's size as stated) and small enough for the walker's
 * 16-bit offsets. */
static bool debug_field(const __u64 *d, const struct py_debug_map *m, int field, int size, __u16 *out)
{
	__u64 v = d[m->at[field]], sz = d[m->at[size]];

	if (!m->at[field] || !m->at[size] || sz > 0xffffffu || v + 8 > sz || v > 0xfff0)
		return false;
	*out = (__u16)v;
	return true;
}

/* Fills L from the _Py_DebugOffsets at `at` in the process (the start of
 * _PyRuntime, 3.13+). NULL when it is whole and checked, else why not. */
static const char *layout_from_debug(pid_t pid, __u64 at, int minor, struct py_layout *L)
{
	__u64 d[DO_MAX_FIELDS];
	const struct py_debug_map *m = NULL;

	for (size_t i = 0; i < sizeof(debug_maps) / sizeof(debug_maps[0]); i++)
		if (debug_maps[i].minor == minor)
			m = &debug_maps[i];
	if (!m)
		return "the layout of its debug offsets is not known";
	if (!read_mem(pid, at, d, sizeof(d)))
		return "its _PyRuntime could not be read";
	if (memcmp(d, "xdebugpy", 8))
		return "its _PyRuntime does not begin with the debug offsets' cookie";
	__u64 v = d[m->at[DO_VERSION]];
	if (v >> 24 != 3 || (int)(v >> 16 & 0xff) != minor)
		return "its debug offsets state another version";
	if (d[m->at[DO_FREE_THREADED]])
		return "a free-threaded build (no GIL), whose frames and strings are laid out apart";

	memset(L, 0, sizeof(*L));
	L->major = 3;
	L->minor = minor;
	struct ls_py_proc *w = &L->walk;
	__u16 asz = 0, usz = 0;
	bool ok = debug_field(d, m, DO_INTERP_HEAD, DO_RT_SIZE, &w->interp_head) &&
		  debug_field(d, m, DO_THREADS_HEAD, DO_IS_SIZE, &w->threads_head) &&
		  debug_field(d, m, DO_TS_NEXT, DO_TS_SIZE, &w->ts_next) &&
		  debug_field(d, m, DO_TS_FRAME, DO_TS_SIZE, &w->ts_cframe) &&
		  debug_field(d, m, DO_TS_TID, DO_TS_SIZE, &w->ts_tid) &&
		  debug_field(d, m, DO_FR_PREV, DO_FR_SIZE, &w->fr_prev) &&
		  debug_field(d, m, DO_FR_EXEC, DO_FR_SIZE, &w->fr_code) &&
		  debug_field(d, m, DO_FR_INSTR, DO_FR_SIZE, &w->fr_instr) &&
		  debug_field(d, m, DO_CO_CODE, DO_CO_SIZE, &w->co_code) &&
		  debug_field(d, m, DO_CO_FILENAME, DO_CO_SIZE, &L->co_filename) &&
		  debug_field(d, m, DO_CO_QUALNAME, DO_CO_SIZE, &L->co_qualname) &&
		  debug_field(d, m, DO_CO_FIRSTLINENO, DO_CO_SIZE, &L->co_firstlineno) &&
		  debug_field(d, m, DO_CO_LINETABLE, DO_CO_SIZE, &L->co_linetable) &&
		  debug_field(d, m, DO_BY_OB_SIZE, DO_BY_SIZE, &L->bytes_size) &&
		  debug_field(d, m, DO_UN_STATE, DO_UN_SIZE, &L->str_state) &&
		  debug_field(d, m, DO_UN_LENGTH, DO_UN_SIZE, &L->str_length) &&
		  debug_field(d, m, DO_UN_ASCII_SIZE, DO_UN_SIZE, &asz);
	/* ob_sval and the ASCII data start where their structures end */
	__u64 sval = d[m->at[DO_BY_SVAL]], ob_type = d[m->at[DO_OB_TYPE]];
	usz = (__u16)(m->at[DO_UN_COMPACT_SIZE] ? d[m->at[DO_UN_COMPACT_SIZE]] : asz + 16u);
	if (!ok || sval > d[m->at[DO_BY_SIZE]] || sval > 0xfff0 || ob_type > 64 || !asz || asz > 0x1000 ||
	    usz < asz || usz > 0x1000)
		return "its debug offsets are out of range";
	L->bytes_data = (__u16)sval;
	w->ob_type = (__u16)ob_type;
	L->ascii_data = asz;
	L->compact_data = usz;
	w->flags = LS_PY_NO_CFRAME;
	return NULL;
}

/* Whether pid has a thread numbered tid: in its own pid namespace when
 * other_ns (a container's interpreter sees those numbers). */
static bool has_thread(pid_t pid, __u32 tid, bool other_ns)
{
	char path[96], buf[2048];

	if (!other_ns) {
		snprintf(path, sizeof(path), "/proc/%d/task/%u", pid, tid);
		return !access(path, F_OK);
	}
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *d = opendir(path);
	struct dirent *de;
	bool found = false;
	while (d && !found && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/status", pid, de->d_name);
		FILE *f = fopen(path, "re");
		while (f && fgets(buf, sizeof(buf), f))
			if (!strncmp(buf, "NSpid:", 6)) {
				char *last = strrchr(buf, '\t');
				found = last && strtoul(last + 1, NULL, 10) == tid;
				break;
			}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

/* Once the interpreter runs, its thread list must hold this process's
 * threads: the first few thread states' native ids are checked against
 * /proc (an empty list, before start-up ends, cannot be checked). */
static bool threads_fit(pid_t pid, const struct ls_py_proc *w)
{
	__u64 interp = 0, t = 0;
	int seen = 0, fit = 0;

	if (!read_mem(pid, w->runtime + w->interp_head, &interp, 8) || !interp ||
	    !read_mem(pid, interp + w->threads_head, &t, 8))
		return true;
	for (; t && seen < 8; seen++) {
		__u64 tid = 0;
		if (!read_mem(pid, t + w->ts_tid, &tid, 8))
			break;
		fit += (__u32)tid && has_thread(pid, (__u32)tid, w->ns_ino != 0);
		if (!read_mem(pid, t + w->ts_next, &t, 8))
			break;
	}
	return !seen || fit;
}

bool ls_py_detect(struct ls_py *p, pid_t pid)
{
	char path[4096 + 64], line[4096 + 256], file[4096];
	unsigned long long start, end, off, base = 0, map_b = 0, map_e = 0;
	int minor = -1;
	FILE *f;

	if (!p || pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (!(f = fopen(path, "re")))
		return false;
	while (fgets(line, sizeof(line), f)) {
		char perms[8];
		int at = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &off, &at) < 4 ||
		    !at || line[at] != '/')
			continue;
		line[strcspn(line, "\n")] = '\0';
		if ((minor = interp_minor(line + at)) < 0)
			continue;
		snprintf(file, sizeof(file), "%s", line + at);
		base = start - off; /* the file's first byte, as mapped */
		map_b = start;
		map_e = end;
		break;
	}
	fclose(f);
	struct py_pid *slot = pid_slot(p, pid);
	slot->walked = false;
	if (minor < 0)
		return false;

	/* the file the process mapped (never the host's of that name: a
	 * hostile one can put a FIFO there, or another program) */
	struct elf_syms es;
	if (elf_lookup(ls_proc_open(pid, file, map_b, map_e), &es))
		return false;
	__u64 bias = base - es.vaddr0;
	__u32 ver = 0;
	int major = 3;
	if (es.version && read_mem(pid, bias + es.version, &ver, sizeof(ver)) && ver >> 24 == 3)
		minor = (int)(ver >> 16 & 0xff);
	struct py_layout L;
	const char *why = NULL;
	if (minor == 11)
		L = layout_311;
	else if (minor >= 13)
		why = layout_from_debug(pid, bias + es.runtime, minor, &L);
	else
		why = "no layout for it (3.12 and older have no debug offsets, and only 3.11's is checked)";
	if (!why) {
		L.walk.runtime = bias + es.runtime;
		L.walk.code_type = es.code_type ? bias + es.code_type : 0;
		struct stat own, its;
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", pid);
		if (!stat(path, &its) && !stat("/proc/self/ns/pid", &own) && its.st_ino != own.st_ino) {
			L.walk.ns_dev = its.st_dev;
			L.walk.ns_ino = its.st_ino;
		}
		if (!threads_fit(pid, &L.walk))
			why = "its thread list does not hold its threads under the layout read";
	}
	if (why) {
		if (minor < 32 && !(p->warned & 1u << minor)) {
			p->warned |= 1u << minor;
			fprintf(stderr,
				"latsplit record: pid %d runs Python %d.%d: %s; its Python frames are not "
				"walked (3.11 and 3.13-3.15 are), native stacks still are\n",
				pid, major, minor, why);
		}
		return false;
	}
	if (p->set(p->set_ctx, (__u32)pid, &L.walk))
		return false;
	slot->L = L;
	slot->walked = true;
	return true;
}

/* ---- the frames seen ---- */

static __u64 mix(__u64 a, __u64 b)
{
	__u64 h = a * 0x9e3779b97f4a7c15ull ^ b;

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ h >> 29;
}

/* The seen table rehashed into cap slots, without pid `drop`'s (0: none). */
static bool seen_rehash(struct ls_py *p, size_t cap, __u32 drop)
{
	struct py_seen *n = calloc(cap, sizeof(*n));

	if (!n)
		return false;
	p->nseen = 0;
	for (size_t i = 0; i < p->capseen; i++) {
		if (!p->seen[i].key || (drop && p->seen[i].pid == drop))
			continue;
		p->nseen++;
		size_t h = mix(p->seen[i].pid, p->seen[i].key) & (cap - 1);
		while (n[h].key)
			h = (h + 1) & (cap - 1);
		n[h] = p->seen[i];
	}
	free(p->seen);
	p->seen = n;
	p->capseen = cap;
	return true;
}

/* ---- naming ---- */

/* A str object's text (ASCII or Latin-1 compact forms), "?" otherwise. */
static void read_str(pid_t pid, const struct py_layout *L, __u64 obj, char *out, size_t cap)
{
	__u64 length = 0;
	__u32 state = 0;
	unsigned char buf[256];

	snprintf(out, cap, "?");
	if (!read_mem(pid, obj + L->str_length, &length, sizeof(length)) ||
	    !read_mem(pid, obj + L->str_state, &state, sizeof(state)))
		return;
	bool compact = state >> 5 & 1, ascii = state >> 6 & 1;
	unsigned kind = state >> 2 & 7;
	size_t n = length < sizeof(buf) ? length : sizeof(buf);
	if (!compact || (!ascii && kind != 1) || n >= cap)
		return;
	if (!read_mem(pid, obj + (ascii ? L->ascii_data : L->compact_data), buf, n))
		return;
	for (size_t i = 0; i < n; i++)
		out[i] = buf[i] >= 32 && buf[i] < 127 ? (char)buf[i] : '?';
	out[n] = '\0';
}

/* The last two components of a path: "engine/llm.py". */
static const char *short_path(const char *s)
{
	const char *last = strrchr(s, '/');

	if (!last || last == s)
		return s;
	for (const char *q = last - 1; q > s; q--)
		if (*q == '/')
			return q + 1;
	return s;
}

/* The code table rehashed into cap slots, without the entries of pid
 * `drop` (0: none): their line tables freed. */
static bool codes_rehash(struct ls_py *p, size_t cap, __u32 drop)
{
	struct py_code *n = calloc(cap, sizeof(*n));

	if (!n)
		return false;
	p->ncodes = 0;
	for (size_t i = 0; i < p->capcodes; i++) {
		struct py_code *c = &p->codes[i];
		if (!c->code)
			continue;
		if (drop && c->pid == drop) {
			p->line_bytes -= c->nlines;
			free(c->lines);
			continue;
		}
		size_t h = mix(c->pid, c->code) & (cap - 1);
		while (n[h].code)
			h = (h + 1) & (cap - 1);
		n[h] = *c;
		p->ncodes++;
	}
	free(p->codes);
	p->codes = n;
	p->capcodes = cap;
	return true;
}

static struct py_code *code_info(struct ls_py *p, const struct py_layout *L, __u32 pid, __u64 code)
{
	if ((p->ncodes + 1) * 2 > p->capcodes) {
		if (p->ncodes >= PY_CODES_MAX) {
			p->over_budget++;
			return NULL;
		}
		if (!codes_rehash(p, p->capcodes ? p->capcodes * 2 : 256, 0))
			return NULL;
	}
	size_t h = mix(pid, code) & (p->capcodes - 1);
	while (p->codes[h].code && !(p->codes[h].code == code && p->codes[h].pid == pid))
		h = (h + 1) & (p->capcodes - 1);
	struct py_code *c = &p->codes[h];
	if (c->code)
		return c;
	*c = (struct py_code){.pid = pid, .code = code};
	p->ncodes++;

	__u64 fn = 0, qn = 0, lt = 0, tlen = 0;
	int first = 0;
	char qs[96], fs[160];
	if (!read_mem(pid, code + L->co_filename, &fn, 8) || !read_mem(pid, code + L->co_qualname, &qn, 8) ||
	    !read_mem(pid, code + L->co_firstlineno, &first, 4) ||
	    !read_mem(pid, code + L->co_linetable, &lt, 8))
		return c;
	read_str(pid, L, qn, qs, sizeof(qs));
	read_str(pid, L, fn, fs, sizeof(fs));
	snprintf(c->name, sizeof(c->name), "%.95s (%.90s", qs, short_path(fs));
	c->firstlineno = first;
	if (read_mem(pid, lt + L->bytes_size, &tlen, 8) && tlen) {
		if (tlen > PY_LINES_MAX_ONE || p->line_bytes + tlen > PY_LINES_BUDGET)
			p->over_budget++; /* named without a line number */
		else if ((c->lines = malloc(tlen)) && read_mem(pid, lt + L->bytes_data, c->lines, tlen))
			c->nlines = tlen, p->line_bytes += tlen;
		else
			free(c->lines), c->lines = NULL;
	}
	c->ok = true;
	return c;
}

static const struct py_layout *layout_of(struct ls_py *p, __u32 pid)
{
	for (size_t i = 0; i < p->npids; i++)
		if ((__u32)p->pids[i].pid == pid)
			return p->pids[i].walked ? &p->pids[i].L : NULL;
	return NULL;
}

/* Names one frame now, from the live process: its code object may be freed
 * (and the address reused) later. */
static void name_one(struct ls_py *p, __u32 pid, __u64 key, ls_py_write_fn write, void *ctx)
{
	_Alignas(8) unsigned char buf[sizeof(struct ls_rec_sym) + 256];
	struct ls_rec_sym *sy = (void *)buf;
	/* every process whose frames BPF walks was announced and looked at
	 * (a forked child too); one gone before that cannot be read either */
	const struct py_layout *L = layout_of(p, pid);

	__u64 code = key & ((1ull << 48) - 1);
	unsigned lasti = (unsigned)(key >> 48) - 1;
	struct py_code *c = L ? code_info(p, L, pid, code) : NULL;
	char *name = (char *)(sy + 1);
	if (c && c->ok) {
		int line = c->nlines ? ls_py_line(c->lines, c->nlines, c->firstlineno, lasti) : -1;
		if (line >= 0)
			snprintf(name, 256, "%s:%d)", c->name, line);
		else
			snprintf(name, 256, "%s)", c->name);
	} else {
		p->unnamed++;
		snprintf(name, 256, "[python frame] (unreadable)");
	}
	size_t nl = strlen(name) + 1;
	memset(sy, 0, sizeof(*sy));
	sy->h.type = LS_REC_SYM;
	sy->h.size = (__u16)((sizeof(*sy) + nl + 7) & ~7ul);
	sy->h.ts = ls_now_ns();
	sy->h.pid = pid;
	sy->ip = key;
	sy->name_len = (__u32)nl;
	memset(name + nl, 0, sy->h.size - sizeof(*sy) - nl);
	write(ctx, &sy->h);
}

void ls_py_seen(struct ls_py *p, const struct ls_ev_pystack *e, ls_py_write_fn write, void *ctx)
{
	__u32 n = e->n;

	if (!p)
		return;
	if (offsetof(struct ls_ev_pystack, f) + (size_t)n * sizeof(e->f[0]) > e->h.size)
		n = (e->h.size - offsetof(struct ls_ev_pystack, f)) / sizeof(e->f[0]);
	for (__u32 i = 0; i < n && i < LS_PY_MAX_FRAMES; i++) {
		__u64 key = LS_PY_KEY(e->f[i].code, e->f[i].lasti);
		if ((p->nseen + 1) * 2 > p->capseen) {
			if (p->nseen >= PY_SEEN_MAX) { /* named no more: counted */
				p->over_budget += n - i;
				return;
			}
			if (!seen_rehash(p, p->capseen ? p->capseen * 2 : 1024, 0))
				return;
		}
		size_t h = mix(e->h.pid, key) & (p->capseen - 1);
		while (p->seen[h].key && !(p->seen[h].key == key && p->seen[h].pid == e->h.pid))
			h = (h + 1) & (p->capseen - 1);
		if (!p->seen[h].key) {
			p->seen[h] = (struct py_seen){e->h.pid, key, true};
			p->nseen++;
			pid_slot(p, e->h.pid)->has_state = true;
			name_one(p, e->h.pid, key, write, ctx);
		}
	}
}


void ls_py_exit(struct ls_py *p, pid_t pid)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->npids && p->pids[i].pid != pid; i++)
		;
	if (i == p->npids)
		return;
	if (p->pids[i].has_state) {
		if (p->capcodes)
			codes_rehash(p, p->capcodes, (__u32)pid);
		if (p->capseen)
			seen_rehash(p, p->capseen, (__u32)pid);
	}
	p->pids[i] = p->pids[--p->npids];
}
