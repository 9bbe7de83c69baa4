// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit flame`: flame graphs from a capture, folded or SVG.
 *   latency  requests' wall time by component and sub-part
 *            (latency;queueing;queueing.engine), ns summed over requests
 *   gpu      GPU time by process and kernel (or copy direction), ns
 * CPU and off-CPU graphs need sampled stacks, which this build does not
 * record yet; asking for them says so.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "flame.h"
#include "latsplit/engine.h"

static int owner(int sub)
{
	if (sub <= LS_S_NET_DRAIN)
		return LS_C_NETWORK;
	if (sub <= LS_S_Q_CPU)
		return LS_C_QUEUEING;
	if (sub <= LS_S_COMPUTE_COMM)
		return LS_C_COMPUTE;
	return LS_C_TRANSFER;
}

static void latency_flame(struct ls_flame *f, const struct ls_analysis *a, bool ttft,
			  unsigned long request, const char *component, unsigned long pid)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct ls_request *r = &a->v[i];
		const struct ls_split *s = &a->split[i];
		const uint64_t *sub = ttft ? s->ttft_sub : s->sub, *comp = ttft ? s->ttft_comp : s->comp;

		if ((request && r->id != request) || (pid && r->pid != pid))
			continue;
		for (int k = 0; k < LS_S_N; k++) {
			const char *fr[3] = {"latency", ls_comp_name(owner(k)), ls_sub_name(k)};
			if (sub[k] == LS_NULL || (component && strcmp(component, fr[1]) &&
						  strcmp(component, fr[2])))
				continue;
			ls_flame_add(f, fr, 3, sub[k]);
		}
		for (int c = LS_C_HOST; c <= LS_C_OTHER; c++) {
			const char *fr[2] = {"latency", ls_comp_name(c)};
			if (comp[c] == LS_NULL || (component && strcmp(component, fr[1])))
				continue;
			ls_flame_add(f, fr, 2, comp[c]);
		}
	}
}

static int gpu_flame(struct ls_flame *f, const char *path, unsigned long pid, char *err, size_t len)
{
	static const char *const dir[4] = {"memcpy other", "memcpy H2D", "memcpy D2H", "memcpy D2D"};
	struct ls_reader *rd;
	const struct ls_hdr *rec;
	struct {
		__u32 pid;
		char comm[LS_COMM_LEN + 1];
	} *procs = NULL;
	size_t nprocs = 0;

	if (ls_reader_open(&rd, path, err, len) < 0)
		return -1;
	while (ls_reader_next(rd, &rec) == 1) {
		if (rec->type == LS_REC_PROC_INFO) {
			const struct ls_rec_proc_info *p = (const void *)rec;
			void *np = realloc(procs, (nprocs + 1) * sizeof(*procs));
			if (!np)
				break;
			procs = np;
			procs[nprocs].pid = p->h.pid;
			memcpy(procs[nprocs].comm, p->comm, LS_COMM_LEN);
			procs[nprocs].comm[LS_COMM_LEN] = '\0';
			nprocs++;
			continue;
		}
		if (rec->type != LS_EV_GPU)
			continue;
		const struct ls_ev_gpu *g = (const void *)rec;
		char who[64], name[65];
		const char *comm = "?";

		if ((pid && g->h.pid != pid) || (g->flags & LS_GPU_F_HOST_SIDE) || g->kind == LS_GPU_SYNC ||
		    g->end_ns <= g->start_ns)
			continue;
		for (size_t i = nprocs; i-- > 0;)
			if (procs[i].pid == g->h.pid) {
				comm = procs[i].comm;
				break;
			}
		snprintf(who, sizeof(who), "%s (%u)", comm, g->h.pid);
		memcpy(name, g->name, 64);
		name[64] = '\0';
		const char *fr[3] = {"gpu", who,
				     g->kind == LS_GPU_MEMCPY ? dir[g->copy_kind & 3]
				     : g->kind == LS_GPU_MEMSET ? "memset" : name};
		ls_flame_add(f, fr, 3, g->end_ns - g->start_ns);
	}
	free(procs);
	ls_reader_close(rd);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: latsplit flame [FILE] [--kind latency|gpu] [--svg] [-o OUT]\n"
		"                      [--request ID] [--component NAME] [--pid PID] [--ttft]\n\n"
		"Flame graph of a capture (default latsplit.data), as folded stacks (for\n"
		"flamegraph.pl, speedscope, inferno) or, with --svg, as an SVG.\n"
		"  --kind latency   requests' time by component and sub-part, ns (default)\n"
		"  --kind gpu       GPU time by process and kernel, ns\n"
		"  --kind cpu|offcpu  sampled stacks: not recorded by this build yet\n"
		"  --request ID, --component NAME (e.g. queueing or queueing.engine), --pid PID\n"
		"  --ttft           the time-to-first-token split instead of the whole latency\n"
		"  -o OUT           write there instead of stdout\n");
}

int cmd_flame(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"kind", required_argument, NULL, 'k'},    {"svg", no_argument, NULL, 's'},
		{"output", required_argument, NULL, 'o'},  {"request", required_argument, NULL, 'r'},
		{"component", required_argument, NULL, 'c'}, {"pid", required_argument, NULL, 'p'},
		{"ttft", no_argument, NULL, 't'},          {"help", no_argument, NULL, 'h'},
		{}};
	const char *path = "latsplit.data", *kind = "latency", *outpath = NULL, *component = NULL;
	unsigned long request = 0, pid = 0;
	bool svg = false, ttft = false;
	char err[512], title[256];
	struct ls_flame *f;
	FILE *out = stdout;
	int opt, rc = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "k:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'k': kind = optarg; break;
		case 's': svg = true; break;
		case 'o': outpath = optarg; break;
		case 'c': component = optarg; break;
		case 't': ttft = true; break;
		case 'r':
		case 'p':
			if (!ls_parse_uint(optarg, ~0ul, opt == 'r' ? &request : &pid)) {
				ls_err("flame", "bad %s '%s'", opt == 'r' ? "--request" : "--pid", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc)
		path = argv[optind++];
	if (optind < argc) {
		ls_err("flame", "unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (!strcmp(kind, "cpu") || !strcmp(kind, "offcpu")) {
		ls_err("flame", "--kind %s needs sampled stacks, which this latsplit does not record yet; "
				"use --kind latency or gpu",
		       kind);
		return 1;
	}
	if (strcmp(kind, "latency") && strcmp(kind, "gpu")) {
		ls_err("flame", "unknown --kind '%s' (latency, gpu, cpu, offcpu)", kind);
		return EXIT_USAGE;
	}
	f = ls_flame_new();
	if (!f)
		return 1;
	if (!strcmp(kind, "latency")) {
		struct ls_analysis a;
		if (ls_analysis_run(&a, path, err, sizeof(err))) {
			ls_err("flame", "%s", err);
			ls_flame_free(f);
			return 1;
		}
		latency_flame(f, &a, ttft, request, component, pid);
		ls_analysis_free(&a);
	} else if (gpu_flame(f, path, pid, err, sizeof(err))) {
		ls_err("flame", "%s", err);
		ls_flame_free(f);
		return 1;
	}
	if (!ls_flame_total(f))
		fprintf(stderr, "latsplit flame: nothing to draw (no %s data%s)\n", kind,
			request || pid || component ? " matching the filters" : "");
	if (outpath && !(out = fopen(outpath, "w"))) {
		ls_err("flame", "cannot write %s", outpath);
		ls_flame_free(f);
		return 1;
	}
	if (svg) {
		snprintf(title, sizeof(title), "latsplit %s flame graph: %s%s (%.1f ms in all)", kind,
			 path, ttft ? ", time to first token" : "", ls_flame_total(f) / 1e6);
		ls_flame_svg(f, out, title, "ns");
	} else {
		ls_flame_folded(f, out);
	}
	if (out != stdout && fclose(out))
		rc = 1;
	ls_flame_free(f);
	return rc;
}
