// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Kernel and privilege probes (see probe.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "probe.h"

static bool verbose_libbpf;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (!verbose_libbpf && level != LIBBPF_WARN)
		return 0;
	if (!verbose_libbpf)
		return 0; /* failures are reported by latsplit itself, in one line */
	return vfprintf(stderr, fmt, args);
}

void ls_libbpf_verbose(bool verbose)
{
	verbose_libbpf = verbose;
	libbpf_set_print(libbpf_print);
}

const struct btf *ls_vmlinux_btf(void)
{
	static struct btf *btf;
	static bool tried;

	if (!tried) {
		tried = true;
		btf = btf__load_vmlinux_btf();
		if (libbpf_get_error(btf))
			btf = NULL;
	}
	return btf;
}

static int tracepoint_btf_id(const char *name)
{
	const struct btf *btf = ls_vmlinux_btf();
	char type[128];

	if (!btf)
		return -ENOENT;
	snprintf(type, sizeof(type), "btf_trace_%s", name);
	return btf__find_by_name_kind(btf, type, BTF_KIND_TYPEDEF);
}

bool ls_btf_has_tracepoint(const char *name)
{
	return tracepoint_btf_id(name) > 0;
}

int ls_btf_tracepoint_args(const char *name)
{
	const struct btf *btf = ls_vmlinux_btf();
	int id = tracepoint_btf_id(name);
	const struct btf_type *t;

	if (id <= 0)
		return -1;
	/* typedef -> pointer -> the prototype, whose first parameter is the
	 * probe's data pointer, not an argument */
	t = btf__type_by_id(btf, btf__resolve_type(btf, id));
	if (!t || !btf_is_ptr(t) || !(t = btf__type_by_id(btf, t->type)) || !btf_is_func_proto(t))
		return -1;
	return btf_vlen(t) ? btf_vlen(t) - 1 : -1;
}

/* Loads a program that returns 0: its fd, or -1 with errno. */
static int load_ret0(enum bpf_prog_type type, struct bpf_prog_load_opts *opts)
{
	struct bpf_insn insns[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};

	return bpf_prog_load(type, "ls_probe", "GPL", insns, 2, opts);
}

int ls_probe_tp_btf(const char *name)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_RAW_TP);
	int id = tracepoint_btf_id(name), fd;

	if (id <= 0)
		return -ENOENT;
	opts.attach_btf_id = id;
	fd = load_ret0(BPF_PROG_TYPE_TRACING, &opts);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

#if LS_HAVE_UPROBE_MULTI
bool ls_uprobe_multi(void)
{
	static int known = -1;
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_UPROBE_MULTI);
	unsigned long offset = 0;
	LIBBPF_OPTS(bpf_link_create_opts, link, .uprobe_multi.path = "/",
		    .uprobe_multi.offsets = &offset, .uprobe_multi.cnt = 1);
	int fd, lfd, e;

	if (known >= 0)
		return known;
	known = 0;
	fd = load_ret0(BPF_PROG_TYPE_KPROBE, &opts);
	if (fd < 0)
		return false;
	/* a kernel with uprobe_multi links refuses "/" (a directory) with
	 * EBADF; one without refuses the attach type itself (EINVAL) */
	lfd = bpf_link_create(fd, -1, BPF_TRACE_UPROBE_MULTI, &link);
	e = errno;
	if (lfd >= 0)
		close(lfd);
	close(fd);
	known = lfd < 0 && e == EBADF;
	return known;
}
#else
bool ls_uprobe_multi(void)
{
	return false;
}
#endif

/* Capability bits from /proc/self/status CapEff. */
static unsigned long long cap_eff(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long caps = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return caps;
}

int ls_check_privileges(char *why, size_t len)
{
	const int CAP_SYS_ADMIN = 21, CAP_PERFMON = 38, CAP_BPF = 39;
	unsigned long long caps = cap_eff();

	if ((caps >> CAP_SYS_ADMIN) & 1)
		return 0;
	if (((caps >> CAP_BPF) & 1) && ((caps >> CAP_PERFMON) & 1))
		return 0;
	snprintf(why, len, "needs root or CAP_BPF+CAP_PERFMON (effective caps %llx): run with sudo",
		 caps);
	return -EPERM;
}

const char *ls_tracefs(void)
{
	static const char *const paths[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
	struct stat sb;
	char p[128];

	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/events", paths[i]);
		if (stat(p, &sb) == 0)
			return paths[i];
	}
	if (mount("nodev", paths[0], "tracefs", 0, NULL) == 0)
		return paths[0];
	return NULL;
}
