// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit check`'s probes (see capcheck.h).
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

#include "capcheck.h"
#include "cli.h"
#include "latsplit/probe.h"
#include "probe.h"
#include "probe.skel.h"

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
void ls_check_program(int which, struct ls_check_result *res)
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

void ls_check_cupti(struct ls_check_result *res)
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

