// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit record`: flags and wiring. Attach (record/loader.c), track the
 * chosen processes and ports (record/tracking.c), and stream every event
 * into a capture file through the consumer (record/recorder.c) until the
 * duration elapses, the command exits, or SIGINT/SIGTERM/SIGHUP. Always ends
 * the file with a trailer.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "flight.h"
#include "live.h"
#include "probe.h"
#include "recorder.h"
#include <poll.h>
#include <termios.h>

#define FLUSH_NS 200000000ull   /* a frame at least every 200 ms */
#define DROPS_NS 1000000000ull  /* drop counters into the capture every 1 s */
#define CHECKPOINT_NS 5000000000ull /* stacks and their symbols every 5 s */
#define LIVE_TICK_NS 250000000ull /* live analysis clock, flight-recorder dumps */
#define MAX_DURATION_S 31536000 /* -d: a year; larger values overflowed the ns deadline */

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: latsplit record [-o FILE] [-d SECONDS] [-p PID[,PID...]] [--port N[,N...]]\n"
		"                       [--ringbuf MB] [--capture-bytes N] [-z LEVEL] [-v] [-- COMMAND [ARGS...]]\n\n"
		"Captures scheduler, TCP, socket I/O, engine-event, GPU and stack events of the\n"
		"tracked processes into FILE.\n"
		"Tracked: the processes named with -p and their descendants, COMMAND and its\n"
		"children, and the owners of --port listeners; with none of these, everything.\n\n"
		"  -o, --output FILE    capture file (default latsplit.data; an existing one\n"
		"                       is kept as FILE.old)\n"
		"  -d, --duration SEC   stop after SEC seconds (default: until COMMAND exits or\n"
		"                       SIGINT/SIGTERM)\n"
		"  -p, --pid PID        track PID and its descendants (repeatable)\n"
		"      --port N         track TCP connections on local port N (repeatable)\n"
		"      --ringbuf MB     BPF ring buffer size, power of two (default 8)\n"
		"      --no-sock        no socket I/O (syscall) tracing: TCP and scheduler only\n"
		"  -F, --freq HZ        on-CPU stack samples per second per CPU (default 49; 0: off)\n"
		"  -a, --all-cpus       sample every process, not only the tracked ones\n"
		"      --no-offcpu      no stacks when tracked threads block (off-CPU)\n"
		"                       (samples and blocks of a CPython 3.11 process also\n"
		"                       carry its Python frames)\n"
		"      --call-graph fp|dwarf[,BYTES]  user stacks by frame pointers (default),\n"
		"                       or also by DWARF CFI: BYTES of user stack (default\n"
		"                       8192) copied at each sample and block and unwound\n"
		"                       while recording (code without frame pointers)\n"
		"      --no-symbolize   keep raw stack addresses; do not symbolize at the end\n"
		"                       (and no Python frames: those are named live)\n"
		"      --stack-entries N  distinct stacks kept (stack map size, default 16384,\n"
		"                       at most 262144; ~1 KiB of kernel memory each; stacks\n"
		"                       beyond it are counted, not captured)\n"
		"      --debug-dir DIR  debug files of stripped binaries: DIR/.build-id/ and\n"
		"                       DIR/<path>/<debuglink> (default /usr/lib/debug)\n"
		"      --no-engine      no engine-event or GPU-shim probes (USDT uprobes cost a\n"
		"                       trap per event; T_sched is then inferred)\n"
		"      --engine-lib PATH  a file with latsplit engine probes (repeatable; default:\n"
		"                       liblatsplit-engine.so beside latsplit, in /usr/local/lib\n"
		"                       and /usr/lib)\n"
		"      --cuda-lib PATH  libcuda for the uprobe fallback (repeatable; default: the\n"
		"                       system libcuda.so.1 if present)\n"
		"      --capture-bytes N  payload prefix kept per socket read/write, 0..4096\n"
		"                       (default 1024: HTTP heads and SSE events)\n"
		"      --capture-bodies keep request and response bodies (prompts, completions);\n"
		"                       by default only heads and framing are kept, bodies\n"
		"                       become '*' (credentials are redacted either way)\n"
		"  -z, --zlib-level N   compression level 1..9 (default 1)\n"
		"  -v, --verbose        libbpf and verifier messages\n"
		"  -h, --help           this help\n\n"
		"Live (the split as requests end, about 4 s later; README: Live and fleet):\n"
		"      --metrics [ADDR:]PORT  serve Prometheus metrics at http://ADDR:PORT/metrics\n"
		"                       (default address 127.0.0.1)\n"
		"      --flight-recorder SEC  keep the last SEC seconds in memory (compressed);\n"
		"                       when a request matches a --trigger, write a capture of\n"
		"                       it (no full capture is written unless -o is given)\n"
		"      --trigger EXPR   total>2s, ttft>500ms, component:network>200ms,\n"
		"                       component:queueing.engine>50ms, retransmits>0 (repeatable)\n"
		"      --flight-dir DIR where dumps go (default .), named\n"
		"                       latsplit-flight-DATE-TIME-reqID.data\n"
		"      --flight-margin SEC  context kept before the request and after (default 1)\n"
		"      --max-dumps-per-hour N  default 6; further triggers are counted, not dumped\n");
}

static int add_list(const char *cmd, const char *arg, unsigned long max, unsigned long *vals,
		    int *n, int cap, const char *what)
{
	char *copy = strdup(arg), *save = NULL;
	int added = 0;

	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long v;

		if (!ls_parse_uint(tok, max, &v) || v == 0 || *n >= cap) {
			ls_err(cmd, "bad %s '%s' (expected 1..%lu, at most %d)", what, tok, max, cap);
			free(copy);
			return -1;
		}
		vals[(*n)++] = v;
		added++;
	}
	free(copy);
	if (!added) { /* "--port ," once meant: no filter, every process */
		ls_err(cmd, "bad %s list '%s' (expected 1..%lu, comma-separated)", what, arg, max);
		return -1;
	}
	return 0;
}

/* A regular file that starts with the ELF magic. */
static bool is_elf(const char *path)
{
	struct stat st;
	char magic[4];
	int fd;
	bool ok;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	ok = read(fd, magic, 4) == 4 && !memcmp(magic, "\177ELF", 4);
	close(fd);
	return ok;
}

/* Another `record -o` of the same path moved this capture to PATH.old while
 * it was written: say where the data is, not a name that now holds another. */
static void replaced_warning(const char *path, ino_t ino, dev_t dev)
{
	struct stat st;
	char old[4096];

	if (!ino || (stat(path, &st) == 0 && st.st_ino == ino && st.st_dev == dev))
		return;
	snprintf(old, sizeof(old), "%s.old", path);
	if (stat(old, &st) == 0 && st.st_ino == ino && st.st_dev == dev)
		fprintf(stderr, "latsplit record: warning: %s was replaced while recording (another "
				"record -o %s?); this capture is now %s\n", path, path, old);
	else
		fprintf(stderr, "latsplit record: warning: %s was moved or removed while recording; "
				"this capture is no longer there\n", path);
}

static void print_summary(const struct ls_recorder *r, const char *path, __u64 dur_ns,
			  const struct ls_writer_stats *ws, unsigned long long drops, int level)
{
	fprintf(stderr, "latsplit record: %.2f s, %llu events written to %s\n", dur_ns / 1e9,
		(unsigned long long)r->events, path);
	fprintf(stderr, "  by type:");
	for (int t = 1; t < LS_EV_KERNEL_MAX; t++)
		if (r->per_type[t])
			fprintf(stderr, " %s=%llu", ls_type_name(t), (unsigned long long)r->per_type[t]);
	fprintf(stderr, "\n  %.2f MB raw -> %.2f MB on disk (%.1fx, zlib %d), %llu frames, %.1f bytes/event\n",
		ws->raw_bytes / 1e6, ws->file_bytes / 1e6,
		ws->file_bytes ? (double)ws->raw_bytes / ws->file_bytes : 0.0, level,
		(unsigned long long)ws->frames,
		ws->records ? (double)ws->file_bytes / ws->records : 0.0);
	fprintf(stderr, "  ring-buffer drops: %llu; writer stalls: %llu (%.1f ms)\n", drops,
		(unsigned long long)ws->stalls, ws->stall_ns / 1e6);
	if (r->unwind) {
		const struct ls_unwind_stats *u = ls_unwind_stats(r->unwind);
		fprintf(stderr,
			"  user stacks unwound by DWARF: %llu, %.1f frames each, %.1f us each (%.0f "
			"stacks/s); stopped short: %llu at a frame without CFI, %llu at the end of "
			"the copied stack, %llu failed\n",
			u->stacks, u->stacks ? (double)u->frames / u->stacks : 0.0,
			u->stacks ? u->ns / 1e3 / u->stacks : 0.0, u->ns ? u->stacks * 1e9 / u->ns : 0.0,
			u->stopped[LS_UNWIND_NO_CFI], u->stopped[LS_UNWIND_STACK_END],
			u->stopped[LS_UNWIND_ERROR]);
	}
	if (r->py && ls_py_unnamed(r->py))
		fprintf(stderr, "  Python frames that could not be named (process memory unreadable): "
				"%llu\n", ls_py_unnamed(r->py));
	if (r->py && ls_py_over_budget(r->py))
		fprintf(stderr, "  Python frames named without a line, or not at all, because a traced "
				"process reached the recorder's memory budget (code objects, line "
				"tables): %llu\n", ls_py_over_budget(r->py));
	if (drops)
		fprintf(stderr,
			"latsplit record: warning: %llu events lost (BPF ring buffer full): raise "
			"--ringbuf or narrow with -p/--port\n",
			drops);
}

/* What is tracked, in words (top's header). */
static void target_words(char *buf, size_t len, const unsigned long *pids, int npids,
			 const unsigned long *ports, int nports, char **cmd)
{
	int n = 0;

	buf[0] = '\0';
	if (cmd)
		n += snprintf(buf + n, len - n, "%s", cmd[0]);
	for (int i = 0; i < npids && n < (int)len; i++)
		n += snprintf(buf + n, len - n, "%spid %lu", n ? ", " : "", pids[i]);
	for (int i = 0; i < nports && n < (int)len; i++)
		n += snprintf(buf + n, len - n, "%sport %lu", n ? ", " : "", ports[i]);
	if (!buf[0])
		snprintf(buf, len, "all processes");
}

static void checkpoint_stacks(void *ctx)
{
	struct ls_recorder *r = ctx;

	ls_recorder_stacks(r, r->symbolize);
}

int cmd_record(int argc, char **argv)
{
	return ls_record_main(argc, argv, NULL);
}

int ls_record_main(int argc, char **argv, const struct ls_top_opts *top)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'}, {"duration", required_argument, NULL, 'd'},
		{"pid", required_argument, NULL, 'p'},    {"port", required_argument, NULL, 'P'},
		{"ringbuf", required_argument, NULL, 'm'}, {"zlib-level", required_argument, NULL, 'z'},
		{"verbose", no_argument, NULL, 'v'},      {"help", no_argument, NULL, 'h'},
		{"capture-bytes", required_argument, NULL, 'C'},
		{"no-sock", no_argument, NULL, 'N'},
		{"engine-lib", required_argument, NULL, 'E'},
		{"cuda-lib", required_argument, NULL, 'L'},
		{"freq", required_argument, NULL, 'F'},   {"all-cpus", no_argument, NULL, 'a'},
		{"no-offcpu", no_argument, NULL, 'O'},    {"no-symbolize", no_argument, NULL, 'S'},
		{"debug-dir", required_argument, NULL, 'D'},
		{"stack-entries", required_argument, NULL, 'K'},
		{"call-graph", required_argument, NULL, 'U'},
		{"no-engine", no_argument, NULL, 'G'},
		{"capture-bodies", no_argument, NULL, 'B'},
		{"metrics", required_argument, NULL, 'M'},
		{"flight-recorder", required_argument, NULL, 'R'},
		{"trigger", required_argument, NULL, 'T'},
		{"flight-dir", required_argument, NULL, 'X'},
		{"flight-margin", required_argument, NULL, 'Y'},
		{"max-dumps-per-hour", required_argument, NULL, 'H'},
		{}};
	const char *metrics = NULL;
	struct ls_flight flight = {.max_per_hour = 6};
	double flight_s = 0;
	bool path_given = false;
	struct ls_live live = {0};
	bool live_on = false;
	const char *path = "latsplit.data", *debug_dir = NULL;
	double duration = 0;
	unsigned long pids[LS_MAX_PIDS], ports[LS_MAX_PORTS], ringbuf_mb = 8, level = 1, stack_entries = 0,
		      capture_bytes = 1024;
	int npids = 0, nports = 0, opt, go_fd = -1, rc = 1;
	bool verbose = false, no_sock = false, no_engine = false, sample_all = false, offcpu = true,
	     symbolize = true;
	unsigned long freq = 49, ustack_bytes = 0;
	const char *engine_paths[8], *cuda_paths[4];
	int nengine_paths = 0, ncuda_paths = 0;
	char self_lib[2][4096];
	char err[512], old[4096];
	struct ls_recorder r = {0};
	struct ls_file_hdr hdr;
	pid_t child = -1;
	int child_status = 0;
	bool child_done = false, child_killed = false; /* killed: by us, at the end */

	optind = 1;
	while ((opt = getopt_long(argc, argv, "+o:d:p:m:z:F:avh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			path = optarg;
			path_given = true;
			break;
		case 'M':
			metrics = optarg;
			break;
		case 'R':
		case 'Y': {
			double v;
			if (!ls_parse_double(optarg, &v) || !(v > 0) || v > 3600) {
				ls_err("record", "--%s %s: expected seconds, more than 0 and at most 3600",
				       opt == 'R' ? "flight-recorder" : "flight-margin", optarg);
				return EXIT_USAGE;
			}
			if (opt == 'R')
				flight_s = v;
			else
				flight.margin_ns = (uint64_t)(v * 1e9);
			break;
		}
		case 'T':
			if (flight.ntrig == LS_FLIGHT_MAX_TRIGGERS) {
				ls_err("record", "at most %d --trigger", LS_FLIGHT_MAX_TRIGGERS);
				return EXIT_USAGE;
			}
			if (ls_trigger_parse(optarg, &flight.trig[flight.ntrig], err, sizeof(err))) {
				ls_err("record", "%s", err);
				return EXIT_USAGE;
			}
			flight.ntrig++;
			break;
		case 'X':
			if (access(optarg, W_OK | X_OK)) {
				ls_err("record", "--flight-dir %s: %s", optarg, strerror(errno));
				return EXIT_USAGE;
			}
			flight.dir = optarg;
			break;
		case 'H': {
			unsigned long v;
			if (!ls_parse_uint(optarg, 100000, &v) || !v) {
				ls_err("record", "--max-dumps-per-hour %s: expected 1..100000", optarg);
				return EXIT_USAGE;
			}
			flight.max_per_hour = v;
			break;
		}
		case 'd':
			if (!ls_parse_double(optarg, &duration) || !(duration > 0) ||
			    duration > MAX_DURATION_S) {
				ls_err("record", "-d %s: expected seconds, more than 0 and at most %d "
				       "(a year), e.g. 3 or 0.5", optarg, MAX_DURATION_S);
				return EXIT_USAGE;
			}
			break;
		case 'p':
			if (add_list("record", optarg, 4194304, pids, &npids, LS_MAX_PIDS, "pid"))
				return EXIT_USAGE;
			break;
		case 'P':
			if (add_list("record", optarg, 65535, ports, &nports, LS_MAX_PORTS, "port"))
				return EXIT_USAGE;
			break;
		case 'm':
			if (!ls_parse_uint(optarg, 4096, &ringbuf_mb) || !ringbuf_mb ||
			    (ringbuf_mb & (ringbuf_mb - 1))) {
				ls_err("record", "bad --ringbuf '%s' (MB, a power of two up to 4096)",
				       optarg);
				return EXIT_USAGE;
			}
			break;
		case 'z':
			if (!ls_parse_uint(optarg, 9, &level) || !level) {
				ls_err("record", "bad zlib level '%s' (1..9)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'C':
			if (!ls_parse_uint(optarg, LS_IO_MAX_CAPTURE, &capture_bytes)) {
				ls_err("record", "bad --capture-bytes '%s' (0..%d)", optarg,
				       LS_IO_MAX_CAPTURE);
				return EXIT_USAGE;
			}
			break;
		case 'v':
			verbose = true;
			break;
		case 'N':
			no_sock = true;
			break;
		case 'F':
			if (!ls_parse_uint(optarg, 10000, &freq)) {
				ls_err("record", "bad --freq '%s' (samples per second, 0..10000)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'a':
			sample_all = true;
			break;
		case 'O':
			offcpu = false;
			break;
		case 'S':
			symbolize = false;
			break;
		case 'U': { /* fp | dwarf[,BYTES] */
			const char *comma = strchr(optarg, ',');
			if (!strcmp(optarg, "fp")) {
				ustack_bytes = 0;
			} else if (!strncmp(optarg, "dwarf", 5) && (!optarg[5] || comma == optarg + 5)) {
				ustack_bytes = 8192;
				if (comma && (!ls_parse_uint(comma + 1, LS_USTACK_MAX, &ustack_bytes) ||
					      ustack_bytes < 64 || ustack_bytes % 8)) {
					ls_err("record", "bad --call-graph '%s': dwarf,BYTES wants 64..%u, a "
					       "multiple of 8 (default 8192)", optarg, LS_USTACK_MAX);
					return EXIT_USAGE;
				}
			} else {
				ls_err("record", "bad --call-graph '%s' (fp, dwarf or dwarf,BYTES)", optarg);
				return EXIT_USAGE;
			}
			break;
		}
		case 'G':
			no_engine = true;
			break;
		case 'B':
			r.capture_bodies = true;
			break;
		case 'K':
			if (!ls_parse_uint(optarg, 1u << 18, &stack_entries) || !stack_entries) {
				ls_err("record", "--stack-entries %s: expected 1..262144", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'D':
			if (access(optarg, R_OK | X_OK) || strlen(optarg) > 200) {
				ls_err("record", "--debug-dir %s: %s", optarg,
				       strlen(optarg) > 200 ? "path too long (200 bytes at most)"
							    : strerror(errno));
				return EXIT_USAGE;
			}
			debug_dir = optarg;
			break;
		case 'L':
			if (!is_elf(optarg)) {
				ls_err("record", "--cuda-lib %s: %s", optarg,
				       access(optarg, R_OK) ? strerror(errno)
							    : "not an ELF shared object (expected libcuda.so.1)");
				return EXIT_USAGE;
			}
			if (ncuda_paths < 4)
				cuda_paths[ncuda_paths++] = optarg;
			break;
		case 'E':
			if (!is_elf(optarg)) {
				ls_err("record", "--engine-lib %s: %s", optarg,
				       access(optarg, R_OK) ? strerror(errno)
							    : "not an ELF shared object (expected "
							      "liblatsplit-engine.so or an engine with its probes)");
				return EXIT_USAGE;
			}
			if (nengine_paths < 8)
				engine_paths[nengine_paths++] = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (flight.ntrig && !flight_s) {
		ls_err("record", "--trigger needs --flight-recorder SECONDS");
		return EXIT_USAGE;
	}
	if (flight_s && !flight.ntrig) {
		ls_err("record", "--flight-recorder needs at least one --trigger, e.g. 'total>2s'");
		return EXIT_USAGE;
	}
	flight.keep_ns = (uint64_t)(flight_s * 1e9);
	/* a flight recorder or top keeps no full capture unless -o asks */
	if ((flight_s || top) && !path_given)
		path = NULL;
	live_on = metrics || flight_s || top;
	struct stat osb;
	if (path && lstat(path, &osb) == 0 && !S_ISREG(osb.st_mode)) {
		ls_err("record", "-o %s: not a regular file (%s); name a new or regular file", path,
		       S_ISDIR(osb.st_mode)   ? "a directory"
		       : S_ISLNK(osb.st_mode) ? "a symbolic link"
		       : S_ISCHR(osb.st_mode) || S_ISBLK(osb.st_mode) ? "a device"
		       : S_ISFIFO(osb.st_mode) ? "a FIFO"
					       : "a special file");
		return EXIT_USAGE;
	}
	for (int i = 0; i < npids; i++)
		if (!ls_proc_alive(pids[i])) {
			ls_err("record", "no process with pid %lu", pids[i]);
			return EXIT_USAGE;
		}
	if (ls_check_privileges(err, sizeof(err))) {
		ls_err("record", "%s", err);
		return 1;
	}
	ls_libbpf_verbose(verbose);
	/* Before anything is loaded: a Ctrl-C or TERM during start-up (seconds
	 * of BPF loading) must stop record, not be lost. A background job of a
	 * script starts with SIGINT ignored, and `make demo` once waited
	 * forever on a record that had ignored its INT. */
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL); /* a closed terminal: stop cleanly, trailer included */

	bool have_cmd = optind < argc;
	bool track_all = !npids && !nports && !have_cmd;
	int ntargets = npids;
	if (nports)
		ls_port_owners(ports, nports, pids, &npids);
	for (int i = 0; i < nports; i++) {
		bool owned = false;
		for (int k = ntargets; k < npids; k++) {
			__u16 lp[LS_MAX_PORTS];
			int nl = ls_proc_listen_ports(pids[k], lp, LS_MAX_PORTS);
			for (int j = 0; j < nl; j++)
				owned |= lp[j] == ports[i];
		}
		if (!owned)
			fprintf(stderr, "latsplit record: no process listens on :%lu; waiting for one\n",
				ports[i]);
	}
	r.targets = pids;
	r.ntargets = r.targets_alive = ntargets;

	if (no_engine)
		nengine_paths = 0;
	else if (!nengine_paths)
		nengine_paths = ls_default_engine_paths(engine_paths, self_lib);
	struct ls_bpf_opts bo = {.track_all = track_all,
				 .ringbuf_bytes = ringbuf_mb << 20,
				 .capture_bytes = capture_bytes,
				 .no_sock = no_sock,
				 .sample_freq = freq,
				 .sample_all = sample_all,
				 .offcpu_stacks = offcpu,
				 .ustack_bytes = (unsigned)ustack_bytes,
				 .stack_entries = stack_entries,
				 .nengine_paths = nengine_paths,
				 .on_record = ls_recorder_on_record,
				 .ctx = &r};
	for (int i = 0; i < nengine_paths; i++)
		bo.engine_paths[i] = engine_paths[i];
	if (!ncuda_paths) {
		static const char *const sys[] = {"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
						  "/usr/lib64/libcuda.so.1", "/usr/lib/libcuda.so.1"};
		for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]) && ncuda_paths < 4; i++)
			if (!access(sys[i], R_OK))
				cuda_paths[ncuda_paths++] = sys[i];
	}
	for (int i = 0; i < ncuda_paths; i++)
		bo.cuda_paths[i] = cuda_paths[i];
	bo.ncuda_paths = ncuda_paths;
	if (ls_bpf_start(&r.bpf, &bo, err, sizeof(err))) {
		ls_err("record", "%s", err);
		return 1;
	}
	if (ls_bpf_missing(r.bpf)[0])
		fprintf(stderr, "latsplit record: not available on this kernel: %s\n",
			ls_bpf_missing(r.bpf));

	/* Keep an existing capture as .old, like perf: only a regular file.
	 * Anything else at the path (a device such as /dev/null, a directory,
	 * a FIFO, a symlink) is refused, checked before anything is attached. */
	struct stat sb;
	if (path && lstat(path, &sb) == 0) {
		if (!S_ISREG(sb.st_mode)) {
			ls_err("record", "-o %s: no longer a regular file; not replaced", path);
			goto out;
		}
		snprintf(old, sizeof(old), "%s.old", path);
		if (rename(path, old)) {
			ls_err("record", "%s exists and cannot be renamed to %s: %s", path, old,
			       strerror(errno));
			goto out;
		}
	}
	ls_file_hdr_init(&hdr, argc + 1, argv - 1);
	hdr.sources = ls_bpf_sources(r.bpf) | (offcpu ? LS_SRC_OFFCPU : 0);
	r.symbolize = symbolize;
	r.sym = ls_sym_new();
	/* interpreters found as processes are announced; their frames can only
	 * be named while they live */
	if ((freq || offcpu) && symbolize)
		r.py = ls_py_new(ls_bpf_py_set, r.bpf);
	if (ustack_bytes && (freq || offcpu))
		r.unwind = ls_unwind_new();
	if (r.sym && debug_dir)
		ls_sym_set_debug_dir(r.sym, debug_dir);
	hdr.track_all = track_all;
	struct ls_writer_opts wo = {.zlib_level = level};
	int e = path ? ls_writer_open(&r.w, path, &hdr, &wo) : 0;
	if (e) {
		ls_err("record", "cannot create %s: %s", path, strerror(-e));
		goto out;
	}
	if (path && stat(path, &sb) == 0) {
		r.w_ino = sb.st_ino;
		r.w_dev = sb.st_dev;
	}
	if (flight_s) {
		ls_flight_init(&flight, &hdr, err, sizeof(err));
		r.taps[r.ntaps++] = (struct ls_tap){ls_flight_record, &flight};
	}
	if (live_on) {
		if (ls_live_init(&live, track_all, top != NULL, err, sizeof(err))) {
			ls_err("record", "%s", err);
			goto close_out;
		}
		if (flight_s) {
			live.on_request = ls_flight_request;
			live.on_request_ctx = &flight;
		}
		r.taps[r.ntaps++] = (struct ls_tap){ls_live_record, &live};
		if (metrics && ls_live_serve(&live, metrics, err, sizeof(err))) {
			ls_err("record", "%s", err);
			goto close_out;
		}
	}

	for (int i = 0; i < nports; i++)
		ls_bpf_track_port(r.bpf, ports[i], true);
	if (have_cmd) {
		child = ls_spawn_waiting(argv + optind, &go_fd);
		if (child < 0) {
			ls_err("record", "cannot start %s: %s", argv[optind], strerror(errno));
			goto close_out;
		}
		unsigned long cp = child;
		ls_track_tree(&r, &cp, 1, NULL);
	}
	if (npids)
		ls_track_tree(&r, pids, npids, NULL);
	if (track_all) {
		size_t n;
		pid_t *all = ls_proc_list(&n);
		for (size_t i = 0; i < n; i++)
			ls_recorder_proc_info(&r, all[i]);
		free(all);
	}

	r.start_ts = ls_now_ns();
	if (go_fd >= 0 && stop_signal) { /* stopped while starting: the command never runs */
		kill(child, SIGKILL);
		close(go_fd);
		go_fd = -1;
	}
	if (go_fd >= 0) {
		if (write(go_fd, "g", 1) != 1)
			ls_err("record", "cannot start the command: %s", strerror(errno));
		close(go_fd);
		go_fd = -1;
	}
	if (verbose && ls_bpf_engine_paths(r.bpf)[0])
		fprintf(stderr, "latsplit record: engine probes in %s\n", ls_bpf_engine_paths(r.bpf));
	if (verbose && ls_bpf_cuda_paths(r.bpf)[0])
		fprintf(stderr, "latsplit record: libcuda uprobes in %s\n", ls_bpf_cuda_paths(r.bpf));
	if (!top)
		fprintf(stderr, "latsplit record: recording %s to %s%s%s%s\n",
			track_all ? "all processes" : "tracked processes", path ? path : "no file",
			flight_s ? " (flight recorder on)" : "", metrics ? " (metrics served)" : "",
			duration ? "" : " (Ctrl-C to stop)");
	char target[256];
	target_words(target, sizeof(target), pids, ntargets, ports, nports,
		     have_cmd ? argv + optind : NULL);
	struct termios tio_old;
	bool raw_tty = top && !top->count && isatty(0) && !tcgetattr(0, &tio_old);
	if (raw_tty) { /* q quits; no echo */
		struct termios t = tio_old;
		t.c_lflag &= ~(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		tcsetattr(0, TCSANOW, &t);
	}
	unsigned long shown = 0;
	__u64 last_tick = r.start_ts, last_top = r.start_ts;
	__u64 top_every = top ? (__u64)(top->interval_s * 1e9) : 0;

	__u64 end_ts = duration ? r.start_ts + (__u64)(duration * 1e9) : 0;
	__u64 last_flush = r.start_ts, last_drops = r.start_ts, last_ckpt = r.start_ts;
	while (!stop_signal) {
		int n = ls_bpf_poll(r.bpf, 50);
		__u64 now = ls_now_ns();

		if (n < 0 && n != -EINTR) {
			ls_err("record", "reading the ring buffer: %s", strerror(-n));
			break;
		}
		if (now - last_drops >= DROPS_NS) {
			ls_recorder_drops(&r);
			last_drops = now;
		}
		if (now - last_ckpt >= CHECKPOINT_NS) {
			ls_recorder_stacks(&r, symbolize);
			last_ckpt = now;
		}
		if (now - last_flush >= FLUSH_NS) {
			if (r.w)
				ls_writer_flush(r.w);
			last_flush = now;
		}
		if (live_on && now - last_tick >= LIVE_TICK_NS) {
			ls_live_tick(&live, now, ls_bpf_drops(r.bpf, NULL, 0), ls_bpf_stack_errors(r.bpf));
			if (flight_s)
				ls_flight_tick(&flight, checkpoint_stacks, &r);
			last_tick = now;
		}
		if (top && now - last_top >= top_every) {
			struct ls_top_status ts = {.target = target,
						   .elapsed_s = (now - r.start_ts) / 1e9,
						   .in_flight = ls_analysis_in_flight(&live.a),
						   .drops = ls_bpf_drops(r.bpf, NULL, 0),
						   .stacks_lost = ls_bpf_stack_errors(r.bpf),
						   .total_requests = live.a.n,
						   .have_gpu = ls_timeline_has_gpu(live.a.tl),
						   .have_sched = ls_timeline_has_sched(live.a.tl),
						   .have_engine = ls_timeline_has_engine(live.a.tl),
						   .clear = raw_tty};
			ls_top_render(stdout, &live.recent, &ts);
			last_top = now;
			if (top->count && ++shown >= top->count)
				break;
			if (!raw_tty)
				fputs("\n", stdout);
		}
		if (raw_tty) {
			char c;
			if (read(0, &c, 1) == 1 && (c == 'q' || c == 'Q'))
				break;
		}
		if (r.write_err) {
			ls_err("record", "writing %s: %s", path, strerror(-r.write_err));
			break;
		}
		if (end_ts && now >= end_ts)
			break;
		if (child > 0 && waitpid(child, &child_status, WNOHANG) == child) {
			child_done = true;
			break;
		}
		/* Like perf record -p: when every target is gone, stop, unless a
		 * --port is followed (a restart may come) or a command runs. */
		if (r.ntargets && r.targets_alive <= 0 && !nports && child < 0) {
			fprintf(stderr, "latsplit record: every -p process exited; stopping\n");
			break;
		}
	}
	/* Events already in the ring buffer belong to the capture. */
	ls_bpf_poll(r.bpf, 0);
	if (child > 0 && !child_done) {
		kill(child, SIGTERM);
		waitpid(child, &child_status, 0);
		child_done = child_killed = true;
		ls_bpf_poll(r.bpf, 0);
	}
	if (raw_tty)
		tcsetattr(0, TCSANOW, &tio_old);
	__u64 stop_ts = ls_now_ns(); /* tracing ends; stacks and symbols follow */
	ls_recorder_drops(&r);
	ls_recorder_stacks(&r, symbolize);
	if (r.sym)
		ls_recorder_mappings(&r);
	unsigned long long stack_errs = ls_bpf_stack_errors(r.bpf);
	if (stack_errs)
		fprintf(stderr,
			"latsplit record: warning: %llu stacks not captured (stack map full or "
			"collisions): raise --stack-entries, lower -F or record for less time\n",
			stack_errs);

	if (live_on) {
		/* what waits is split now (and may still trigger a dump) */
		ls_live_finish(&live);
		if (flight_s)
			ls_flight_tick(&flight, checkpoint_stacks, &r);
		if (!top)
			fprintf(stderr, "latsplit record: live: %zu requests split%s%llu scrapes%s%llu "
					"HTTP connection errors (clients gone, timed out or over the "
					"limit)\n",
				live.a.n, metrics ? ", " : "; ", (unsigned long long)live.scrapes,
				metrics ? ", " : "; ", (unsigned long long)live.http_errors);
	}
	if (flight_s)
		fprintf(stderr,
			"latsplit record: flight recorder: %llu dumps written%s%s, %llu triggers "
			"suppressed (--max-dumps-per-hour %u), %llu frames evicted early by the "
			"memory cap, %zu frames (%.1f MB) held at the end\n",
			(unsigned long long)flight.dumps, flight.dumps ? ", last " : "",
			flight.dumps ? flight.last_path : "", (unsigned long long)flight.suppressed,
			flight.max_per_hour, (unsigned long long)flight.evicted_frames,
			flight.nf - flight.f0, flight.bytes / 1e6);

	struct ls_rec_stats st = {0};
	struct ls_writer_stats ws = {0};
	__u64 now = ls_now_ns();
	unsigned long long drops = ls_bpf_drops(r.bpf, NULL, 0);

	if (!r.w) {
		if (!top)
			fprintf(stderr, "latsplit record: %.2f s, %llu events, no capture file; "
				"ring-buffer drops: %llu\n",
				(stop_ts - r.start_ts) / 1e9, (unsigned long long)r.events, drops);
		rc = 0;
		goto status;
	}
	ls_writer_stats(r.w, &ws);
	st.h.type = LS_REC_STATS;
	st.h.size = sizeof(st);
	st.h.ts = now;
	st.start_ts = r.start_ts;
	st.end_ts = stop_ts;
	st.events = r.events;
	st.ringbuf_drops = drops;
	st.writer_stalls = ws.stalls;
	st.writer_stall_ns = ws.stall_ns;
	for (int t = 0; t < 32 && t < LS_REC_MAX; t++)
		st.per_type[t] = r.per_type[t];
	e = ls_writer_close(r.w, &st.h, &ws);
	r.w = NULL;
	if (e) {
		ls_err("record", "writing %s: %s", path, strerror(-e));
		goto out;
	}
	print_summary(&r, path, stop_ts - r.start_ts, &ws, drops, (int)level);
	if (!track_all)
		fprintf(stderr, "  HTTP requests read by tracked processes: %llu%s\n",
			(unsigned long long)r.request_heads,
			r.request_heads ? "" : " (see latsplit report for why)");
	rc = 0;
	replaced_warning(path, r.w_ino, r.w_dev);
status:
	/* like perf record: the command's own status is record's */
	if (child_done && WIFEXITED(child_status)) {
		rc = WEXITSTATUS(child_status);
		if (rc == 127)
			ls_err("record", "the command could not be started (exit 127)");
		else if (rc)
			fprintf(stderr, "latsplit record: the command exited with status %d\n", rc);
	} else if (child_done && WIFSIGNALED(child_status) && !child_killed) {
		rc = 128 + WTERMSIG(child_status);
		fprintf(stderr, "latsplit record: the command was killed by signal %d\n",
			WTERMSIG(child_status));
	}
	goto out;
close_out:
	if (r.w)
		ls_writer_close(r.w, NULL, NULL);
	r.w = NULL;
out:
	if (go_fd >= 0)
		close(go_fd);
	if (live_on)
		ls_live_free(&live);
	ls_flight_free(&flight);
	ls_bpf_stop(r.bpf);
	ls_sym_free(r.sym);
	ls_recorder_free(&r);
	return rc;
}
