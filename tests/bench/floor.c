// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * make bench: the floor of issue 29's throughput goals. Reads the tracepoints
 * record's BPF objects attach to (their raw_tp/ and tp_btf/ sections), loads
 * one empty program (r0 = 0; exit) and attaches it to each of them, prints
 * "attached N" and holds them until SIGINT or SIGTERM: what the kernel
 * charges a workload for running any program there, before latsplit does
 * any work. The set comes from the objects record ships, so it follows them;
 * an argument tp:NAME adds tracepoint NAME (a hook record might use instead).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_TPS 64

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The tracepoint a program section names (raw_tp/X, tp_btf/X), or NULL. */
static const char *tracepoint_of(const char *sec)
{
	static const char *const kinds[] = {"raw_tp/", "tp_btf/"};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(sec, kinds[i], strlen(kinds[i])))
			return sec + strlen(kinds[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	const struct bpf_insn empty[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	char tps[MAX_TPS][64];
	int ntp = 0, prog;

	if (argc < 2) {
		fprintf(stderr, "usage: floor-probe OBJECT|tp:TRACEPOINT... (build/sock.bpf.o build/sched.bpf.o build/net.bpf.o)\n");
		return 2;
	}
	for (int a = 1; a < argc; a++) {
		struct bpf_object *obj;
		struct bpf_program *p;

		if (!strncmp(argv[a], "tp:", 3)) {
			if (ntp < MAX_TPS)
				snprintf(tps[ntp++], sizeof(tps[0]), "%s", argv[a] + 3);
			continue;
		}
		obj = bpf_object__open_file(argv[a], NULL);
		if (!obj) {
			fprintf(stderr, "floor-probe: cannot open %s (make builds it)\n", argv[a]);
			return 1;
		}
		bpf_object__for_each_program(p, obj) {
			const char *tp = tracepoint_of(bpf_program__section_name(p));
			int k = 0;

			while (tp && k < ntp && strcmp(tps[k], tp))
				k++;
			if (tp && k == ntp && ntp < MAX_TPS)
				snprintf(tps[ntp++], sizeof(tps[0]), "%s", tp);
		}
		bpf_object__close(obj);
	}
	prog = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "floor", "GPL", empty, 2, NULL);
	if (prog < 0) {
		fprintf(stderr, "floor-probe: cannot load an empty program (run as root)\n");
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (int k = 0; k < ntp; k++)
		if (bpf_raw_tracepoint_open(tps[k], prog) < 0) {
			fprintf(stderr, "floor-probe: cannot attach to %s\n", tps[k]);
			return 1;
		}
	printf("attached %d\n", ntp);
	fflush(stdout);
	while (!stop)
		pause();
	return 0; /* the links close with the process */
}
