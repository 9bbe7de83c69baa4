// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit check`: which data sources this host offers, each proved by
 * loading, attaching and triggering a trivial program (bpf/probe.bpf.c).
 * Exit 0 when the minimum (privileges, BTF, tracepoints, ring buffer) holds.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sdt.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "out/json.h"
#include "latsplit/probe.h"
#include "probe.h"
#include "probe.skel.h"


struct result {
	const char *name;
	bool ok;
	bool required;
	char detail[320];
};

/* Target of the uprobe probe; noinline so it has its own symbol. */
__attribute__((noinline)) int ls_check_uprobe_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static void trigger_usdt(void)
{
	long arg = 42;
	DTRACE_PROBE1(latsplit, check_probe, arg);
}

static void burn_ms(int ms)
{
	__u64 end = ls_now_ns() + ms * 1000000ull;
	volatile unsigned long x = 0;

	while (ls_now_ns() < end)
		x++;
}

static int perf_fd_self(void)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = 1000,
		.freq = 1,
	};

	return syscall(__NR_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Loads only program `which`, attaches, triggers; fills res. */
static void try_program(int which, struct result *res)
{
	struct probe_bpf *skel = probe_bpf__open();
	struct bpf_program *progs[P_MAX];
	struct bpf_link *link = NULL;
	int err, pfd = -1;

	if (!skel) {
		snprintf(res->detail, sizeof(res->detail), "open: %s", strerror(errno));
		return;
	}
	progs[P_TRACEPOINT] = skel->progs.probe_tracepoint;
	progs[P_RAW_TP] = skel->progs.probe_raw_tp;
	progs[P_TP_BTF] = skel->progs.probe_tp_btf;
	progs[P_KPROBE] = skel->progs.probe_kprobe;
	progs[P_FENTRY] = skel->progs.probe_fentry;
	progs[P_PERF] = skel->progs.probe_perf;
	progs[P_UPROBE] = skel->progs.probe_uprobe;
	progs[P_USDT] = skel->progs.probe_usdt;
	for (int i = 0; i < P_MAX; i++)
		bpf_program__set_autoload(progs[i], i == which);
	err = probe_bpf__load(skel);
	if (err) {
		snprintf(res->detail, sizeof(res->detail), "load failed: %s", strerror(-err));
		goto out;
	}
	switch (which) {
	case P_PERF:
		pfd = perf_fd_self();
		if (pfd < 0) {
			snprintf(res->detail, sizeof(res->detail), "perf_event_open: %s",
				 strerror(errno));
			goto out;
		}
		link = bpf_program__attach_perf_event(progs[which], pfd);
		break;
	case P_UPROBE: {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "ls_check_uprobe_target");
		link = bpf_program__attach_uprobe_opts(progs[which], 0, "/proc/self/exe", 0, &uo);
		break;
	}
	case P_USDT:
		link = bpf_program__attach_usdt(progs[which], getpid(), "/proc/self/exe", "latsplit",
						"check_probe", NULL);
		break;
	default:
		link = bpf_program__attach(progs[which]);
	}
	if (!link) {
		err = -errno;
		snprintf(res->detail, sizeof(res->detail), "attach failed: %s", strerror(-err));
		goto out;
	}
	if (which == P_UPROBE)
		ls_check_uprobe_target(1);
	else if (which == P_USDT)
		trigger_usdt();
	else if (which == P_PERF)
		burn_ms(50);
	else if (which == P_KPROBE || which == P_FENTRY)
		; /* tcp_sendmsg may not run now: attaching is the proof */
	else
		usleep(20000);
	if (which == P_KPROBE || which == P_FENTRY || skel->bss->hits[which]) {
		res->ok = true;
		snprintf(res->detail, sizeof(res->detail), which == P_KPROBE || which == P_FENTRY
								    ? "attached"
								    : "attached and fired");
	} else {
		snprintf(res->detail, sizeof(res->detail), "attached but never fired");
	}
out:
	bpf_link__destroy(link);
	if (pfd >= 0)
		close(pfd);
	probe_bpf__destroy(skel);
}

static void check_cupti(struct result *res)
{
	const char *home = getenv("CUDA_HOME");
	char paths[4][200];
	int n = 0;

	if (home) {
		snprintf(paths[n++], 200, "%s/lib64/libcupti.so", home);
		snprintf(paths[n++], 200, "%s/extras/CUPTI/lib64/libcupti.so", home);
	}
	snprintf(paths[n++], 200, "/usr/local/cuda/lib64/libcupti.so");
	snprintf(paths[n++], 200, "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
	for (int i = 0; i < n; i++) {
		if (access(paths[i], R_OK))
			continue;
		res->ok = true;
		snprintf(res->detail, sizeof(res->detail), "%.199s", paths[i]);
		return;
	}
	snprintf(res->detail, sizeof(res->detail),
		 "not found (set CUDA_HOME); GPU timings need the CUPTI shim");
}

static void usage(FILE *out)
{
	fprintf(out, "usage: latsplit check [--json]\n\n"
		     "Probes each data source latsplit can use and says ok or why not.\n"
		     "Exit 0 when the minimum (privileges, BTF, tracepoints, ring buffer) is\n"
		     "present, else 1.\n");
}

int cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
						  {"help", no_argument, NULL, 'h'},
						  {"verbose", no_argument, NULL, 'v'},
						  {}};
	struct result res[16] = {0};
	int n = 0, opt;
	bool json = false, verbose = false, priv, minimum = true;
	struct utsname u;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "jhv", longopts, NULL)) != -1) {
		if (opt == 'j')
			json = true;
		else if (opt == 'v')
			verbose = true;
		else if (opt == 'h') {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	ls_libbpf_verbose(verbose);

	struct result *r = &res[n++];
	r->name = "privileges";
	r->required = true;
	priv = ls_check_privileges(r->detail, sizeof(r->detail)) == 0;
	r->ok = priv;
	if (priv)
		snprintf(r->detail, sizeof(r->detail), "%s", geteuid() == 0 ? "root" : "CAP_BPF+CAP_PERFMON");

	r = &res[n++];
	r->name = "btf";
	r->required = true;
	r->ok = ls_vmlinux_btf() != NULL;
	snprintf(r->detail, sizeof(r->detail), "%s",
		 r->ok ? "/sys/kernel/btf/vmlinux"
		       : "no BTF at /sys/kernel/btf/vmlinux: needs CONFIG_DEBUG_INFO_BTF=y");

	r = &res[n++];
	r->name = "ringbuf";
	r->required = true;
	r->ok = priv && libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1;
	snprintf(r->detail, sizeof(r->detail), "%s",
		 r->ok ? "BPF_MAP_TYPE_RINGBUF"
		 : priv ? "unsupported (needs Linux >= 5.8)" : "not probed without privileges");

	static const struct {
		int which;
		const char *name;
		bool required;
		const char *why_missing;
	} progs[] = {
		{P_TRACEPOINT, "tracepoints", true, ""},
		{P_RAW_TP, "raw_tp", false, "fallback for tp_btf"},
		{P_TP_BTF, "tp_btf", false, "optional: raw_tp is used instead"},
		{P_PERF, "perf_event", false, "CPU flame graphs need it"},
		{P_UPROBE, "uprobes", false, "libcuda fallback needs it"},
		{P_USDT, "usdt", false, "engine events and the CUPTI shim need it"},
		{P_KPROBE, "kprobes", false, "optional: latsplit uses tracepoints"},
		{P_FENTRY, "fentry", false, "optional: latsplit uses tracepoints"},
	};
	const char *tracefs = priv ? ls_tracefs() : NULL;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		r = &res[n++];
		r->name = progs[i].name;
		r->required = progs[i].required;
		if (!priv) {
			snprintf(r->detail, sizeof(r->detail), "not probed without privileges");
			continue;
		}
		if (progs[i].which == P_TRACEPOINT && !tracefs) {
			snprintf(r->detail, sizeof(r->detail),
				 "tracefs not mounted: mount -t tracefs nodev /sys/kernel/tracing");
			continue;
		}
		try_program(progs[i].which, r);
		if (!r->ok && progs[i].why_missing[0]) {
			size_t l = strlen(r->detail);
			snprintf(r->detail + l, sizeof(r->detail) - l, " (%s)", progs[i].why_missing);
		}
	}
	r = &res[n++];
	r->name = "stack_maps";
	r->ok = priv && libbpf_probe_bpf_map_type(BPF_MAP_TYPE_STACK_TRACE, NULL) == 1;
	snprintf(r->detail, sizeof(r->detail), "%s",
		 r->ok ? "BPF_MAP_TYPE_STACK_TRACE"
		 : priv ? "unsupported" : "not probed without privileges");

	r = &res[n++];
	r->name = "libcupti";
	check_cupti(r);

	uname(&u);
	for (int i = 0; i < n; i++)
		if (res[i].required && !res[i].ok)
			minimum = false;
	if (json) {
		/* details quote errno strings and paths: escaped by the writer */
		printf("{");
		ls_json_kv_str(stdout, "kernel", u.release, true);
		ls_json_kv_str(stdout, "arch", u.machine, true);
		printf("\"minimum\":%s,\"sources\":{", minimum ? "true" : "false");
		for (int i = 0; i < n; i++) {
			printf("%s", i ? "," : "");
			ls_json_string(stdout, res[i].name);
			printf(":{\"ok\":%s,\"required\":%s,\"detail\":", res[i].ok ? "true" : "false",
			       res[i].required ? "true" : "false");
			ls_json_string(stdout, res[i].detail);
			printf("}");
		}
		printf("}}\n");
	} else {
		printf("latsplit check: kernel %s %s\n", u.release, u.machine);
		for (int i = 0; i < n; i++)
			printf("  %-8s %-12s %s%s\n", res[i].ok ? "ok" : "missing", res[i].name,
			       res[i].detail, res[i].required ? " [required]" : "");
		printf("minimum (privileges, BTF, tracepoints, ring buffer): %s\n",
		       minimum ? "ok" : "NOT MET");
	}
	if (!minimum)
		fprintf(stderr, "latsplit check: the minimum is not met: fix the [required] lines above\n");
	return minimum ? 0 : 1;
}
