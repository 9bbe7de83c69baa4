// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit check`: which data sources this host offers, each proved by
 * loading, attaching and triggering a trivial program (bpf/probe.bpf.c).
 * Exit 0 when the minimum (privileges, BTF, raw tracepoints, ring buffer, task
 * storage) holds.
 * record takes every kernel event from raw tracepoints (tp_btf where the
 * kernel allows), so tracefs and perf-event tracepoints are optional.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "capcheck.h"
#include "cli.h"
#include "out/json.h"
#include "latsplit/probe.h"
#include "probe.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: latsplit check [--json]\n\n"
		     "Probes each data source latsplit can use and says ok or why not.\n"
		     "Exit 0 when the minimum (privileges, BTF, raw tracepoints, ring buffer,\n"
		     "task storage) is present, else 1.\n");
}

/* A map type's row: ok when this kernel creates one. */
static void map_row(struct ls_check_result *r, const char *name, bool required, bool priv,
		    enum bpf_map_type type, const char *ok_detail, const char *missing_detail)
{
	r->name = name;
	r->required = required;
	r->ok = priv && libbpf_probe_bpf_map_type(type, NULL) == 1;
	snprintf(r->detail, sizeof(r->detail), "%s",
		 r->ok ? ok_detail : priv ? missing_detail : "not probed without privileges");
}

int cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
						  {"help", no_argument, NULL, 'h'},
						  {"verbose", no_argument, NULL, 'v'},
						  {}};
	struct ls_check_result res[16] = {0};
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

	struct ls_check_result *r = &res[n++];
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

	map_row(&res[n++], "ringbuf", true, priv, BPF_MAP_TYPE_RINGBUF, "BPF_MAP_TYPE_RINGBUF",
		"unsupported (needs Linux >= 5.8)");
	map_row(&res[n++], "task_storage", true, priv, BPF_MAP_TYPE_TASK_STORAGE,
		"BPF_MAP_TYPE_TASK_STORAGE (a syscall's state per thread)",
		"unsupported (needs Linux >= 5.11)");

	static const struct {
		int which;
		const char *name;
		bool required;
		const char *why_missing;
	} progs[] = {
		{P_TRACEPOINT, "tracepoints", false, "optional: record uses raw_tp and tp_btf"},
		{P_RAW_TP, "raw_tp", true, ""},
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
				 "tracefs not mounted (optional: record uses raw_tp and tp_btf)");
			continue;
		}
		ls_check_program(progs[i].which, r);
		if (!r->ok && progs[i].why_missing[0]) {
			size_t l = strlen(r->detail);
			snprintf(r->detail + l, sizeof(r->detail) - l, " (%s)", progs[i].why_missing);
		}
	}
	map_row(&res[n++], "stack_maps", false, priv, BPF_MAP_TYPE_STACK_TRACE,
		"BPF_MAP_TYPE_STACK_TRACE", "unsupported");

	r = &res[n++];
	r->name = "libcupti";
	ls_check_cupti(r);

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
		printf("minimum (privileges, BTF, raw tracepoints, ring buffer, task storage): %s\n",
		       minimum ? "ok" : "NOT MET");
	}
	if (!minimum)
		fprintf(stderr, "latsplit check: the minimum is not met: fix the [required] lines above\n");
	return minimum ? 0 : 1;
}
