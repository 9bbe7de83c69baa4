// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `record`'s options (see options.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include "export/otlp.h"
#include "live/live.h"
#include "options.h"
#include "probe.h"
#include "proc.h"
#include "unwind.h"
#include "ehtab.h"

#define MAX_DURATION_S 31536000 /* -d: a year; larger values overflowed the ns deadline */

void ls_rec_usage(FILE *out)
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
		"      --no-sock        no socket I/O tracing: TCP and scheduler only\n"
		"      --sock-hooks auto|socket|syscalls  where socket I/O is read: socket,\n"
		"                       the kernel's socket tracepoints (Linux >= 6.3; they\n"
		"                       cost nothing to other syscalls, but see no splice out\n"
		"                       of a socket and no payload of sendmmsg/recvmmsg), or\n"
		"                       syscalls, the raw syscall tracepoints (every syscall\n"
		"                       on the host pays ~40 ns for them while attached: see\n"
		"                       make bench); auto (default): socket where the kernel\n"
		"                       has them, else syscalls\n"
		"      --no-tls         no uprobes on libssl (TLS plaintext unread; each\n"
		"                       SSL_read/SSL_write costs a uprobe trap pair; see make bench)\n"
		"  -F, --freq HZ        on-CPU stack samples per second per CPU (default 49; 0: off)\n"
		"  -a, --all-cpus       sample every process, not only the tracked ones\n"
		"      --no-offcpu      no stacks when tracked threads block (off-CPU)\n"
		"                       (samples and blocks of a CPython 3.11 process also\n"
		"                       carry its Python frames)\n"
		"      --offcpu-kernel-min-us N  a block's kernel stack only when it lasted N us\n"
		"                       or more (default 1000), taken when it ends; shorter\n"
		"                       blocks keep their user stack, and are counted (0: every\n"
		"                       block, at its start; unwinding the kernel stack was ~40%%\n"
		"                       of a blocking switch's cost in make bench)\n"
		"      --call-graph eh|fp|dwarf[,BYTES]  user stacks: eh (default) unwound\n"
		"                       in the kernel by tables built from each mapped file's\n"
		"                       .eh_frame (code with or without frame pointers; frame\n"
		"                       pointers where a file has none); fp: frame pointers\n"
		"                       only; dwarf: BYTES of user stack (default 8192) copied\n"
		"                       at each sample and block, unwound while recording\n"
		"      --no-symbolize   keep raw stack addresses; do not symbolize at the end\n"
		"                       (and no Python frames: those are named live)\n"
		"      --stack-entries N  distinct stacks kept (stack map size, default 16384,\n"
		"                       at most 262144; ~1 KiB of kernel memory each; stacks\n"
		"                       beyond it are counted, not captured)\n"
		"      --debug-dir DIR  debug files of stripped binaries: DIR/.build-id/ and\n"
		"                       DIR/<path>/<debuglink> (default /usr/lib/debug)\n"
		"      --no-engine      no engine-event or GPU-shim probes (USDT uprobes cost a\n"
		"                       trap per event; T_sched is then inferred)\n"
		"      --otlp-receive [ADDR:]PORT  receive the engine's own request spans over\n"
		"                       OTLP/HTTP (protobuf, JSON) at http://ADDR:PORT/v1/traces (default\n"
		"                       address 127.0.0.1): vLLM's llm_request spans give queueing\n"
		"                       and T_sched without patching it (README: Engines without\n"
		"                       patches); requests then wait 8 s, not 2, for their spans\n"
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
		"Live (within ~1 s of delivery, final 2 s later; README: Live and fleet):\n"
		"      --metrics [ADDR:]PORT  serve Prometheus metrics at http://ADDR:PORT/metrics\n"
		"                       (default address 127.0.0.1)\n"
		"      --otlp URL       export each request's final split as an OpenTelemetry\n"
		"                       span to an OTLP/HTTP endpoint (e.g. http://127.0.0.1:4318)\n"
		"                       as requests end\n"
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

/* The live and output options. 1: not one of them; 0; -1 (said why). */
static int parse_live(struct ls_rec_opts *o, int opt, char *optarg)
{
	char err[512];

	switch (opt) {
	case 'o':
		o->path = optarg;
		o->path_given = true;
		break;
	case 'M':
		o->metrics = optarg;
		break;
	case 'Q': {
		struct sockaddr_storage ss;
		if (ls_parse_listen("--otlp-receive", optarg, &ss, err, sizeof(err))) {
			ls_err("record", "%s", err);
			return -1;
		}
		o->otlp_receive = optarg;
		break;
	}
	case 'J':
		if (ls_otlp_check_url(optarg, err, sizeof(err))) {
			ls_err("record", "%s", err);
			return -1;
		}
		o->otlp_url = optarg;
		break;
	case 'R':
	case 'Y': {
		double v;
		if (!ls_parse_double(optarg, &v) || !(v > 0) || v > 3600) {
			ls_err("record", "--%s %s: expected seconds, more than 0 and at most 3600",
			       opt == 'R' ? "flight-recorder" : "flight-margin", optarg);
			return -1;
		}
		if (opt == 'R')
			o->flight_s = v;
		else
			o->flight.margin_ns = (uint64_t)(v * 1e9);
		break;
	}
	case 'T':
		if (o->flight.ntrig == LS_FLIGHT_MAX_TRIGGERS) {
			ls_err("record", "at most %d --trigger", LS_FLIGHT_MAX_TRIGGERS);
			return -1;
		}
		if (ls_trigger_parse(optarg, &o->flight.trig[o->flight.ntrig], err, sizeof(err))) {
			ls_err("record", "%s", err);
			return -1;
		}
		o->flight.ntrig++;
		break;
	case 'X':
		if (access(optarg, W_OK | X_OK)) {
			ls_err("record", "--flight-dir %s: %s", optarg, strerror(errno));
			return -1;
		}
		o->flight.dir = optarg;
		break;
	case 'H': {
		unsigned long v;
		if (!ls_parse_uint(optarg, 100000, &v) || !v) {
			ls_err("record", "--max-dumps-per-hour %s: expected 1..100000", optarg);
			return -1;
		}
		o->flight.max_per_hour = v;
		break;
	}
	default:
		return 1;
	}
	return 0;
}

/* The source options. 1: not one of them; 0; -1 (said why). */
static int parse_source(struct ls_rec_opts *o, int opt, char *optarg)
{
	switch (opt) {
	case 'd':
		if (!ls_parse_double(optarg, &o->duration) || !(o->duration > 0) ||
		    o->duration > MAX_DURATION_S) {
			ls_err("record", "-d %s: expected seconds, more than 0 and at most %d "
			       "(a year), e.g. 3 or 0.5", optarg, MAX_DURATION_S);
			return -1;
		}
		break;
	case 'p':
		if (add_list("record", optarg, 4194304, o->pids, &o->npids, LS_MAX_PIDS, "pid"))
			return -1;
		break;
	case 'P':
		if (add_list("record", optarg, 65535, o->ports, &o->nports, LS_MAX_PORTS, "port"))
			return -1;
		break;
	case 'm':
		if (!ls_parse_uint(optarg, 4096, &o->ringbuf_mb) || !o->ringbuf_mb ||
		    (o->ringbuf_mb & (o->ringbuf_mb - 1))) {
			ls_err("record", "bad --ringbuf '%s' (MB, a power of two up to 4096)",
			       optarg);
			return -1;
		}
		break;
	case 'z':
		if (!ls_parse_uint(optarg, 9, &o->level) || !o->level) {
			ls_err("record", "bad zlib level '%s' (1..9)", optarg);
			return -1;
		}
		break;
	case 'C':
		if (!ls_parse_uint(optarg, LS_IO_MAX_CAPTURE, &o->capture_bytes)) {
			ls_err("record", "bad --capture-bytes '%s' (0..%d)", optarg,
			       LS_IO_MAX_CAPTURE);
			return -1;
		}
		break;
	case 'v':
		o->verbose = true;
		break;
	case 'N':
		o->no_sock = true;
		break;
	case 'k':
		if (!strcmp(optarg, "auto")) {
			o->sock_hooks = LS_SOCK_HOOKS_AUTO;
		} else if (!strcmp(optarg, "socket")) {
			o->sock_hooks = LS_SOCK_HOOKS_SOCKET;
		} else if (!strcmp(optarg, "syscalls")) {
			o->sock_hooks = LS_SOCK_HOOKS_SYSCALLS;
		} else {
			ls_err("record", "bad --sock-hooks '%s' (auto, socket or syscalls)", optarg);
			return -1;
		}
		break;
	case 'W':
		o->no_tls = true;
		break;
	case 'F':
		if (!ls_parse_uint(optarg, 10000, &o->freq)) {
			ls_err("record", "bad --freq '%s' (samples per second, 0..10000)", optarg);
			return -1;
		}
		break;
	case 'a':
		o->sample_all = true;
		break;
	case 'O':
		o->offcpu = false;
		break;
	case 'I':
		if (!ls_parse_uint(optarg, 60000000, &o->kstack_min_us)) {
			ls_err("record", "--offcpu-kernel-min-us %s: expected 0..60000000 (microseconds)",
			       optarg);
			return -1;
		}
		break;
	case 'S':
		o->symbolize = false;
		break;
	case 'U': { /* fp | dwarf[,BYTES] */
		const char *comma = strchr(optarg, ',');
		if (!strcmp(optarg, "fp")) {
			o->ustack_bytes = 0;
			o->eh_rows = 0;
		} else if (!strcmp(optarg, "eh")) {
			o->ustack_bytes = 0;
			o->eh_rows = LS_EH_ROWS_DEFAULT;
			o->eh_asked = true;
		} else if (!strncmp(optarg, "dwarf", 5) && (!optarg[5] || comma == optarg + 5)) {
			o->ustack_bytes = 8192;
			o->eh_rows = 0;
			if (comma && (!ls_parse_uint(comma + 1, LS_USTACK_MAX, &o->ustack_bytes) ||
				      o->ustack_bytes < 64 || o->ustack_bytes % 8)) {
				ls_err("record", "bad --call-graph '%s': dwarf,BYTES wants 64..%u, a "
				       "multiple of 8 (default 8192)", optarg, LS_USTACK_MAX);
				return -1;
			}
		} else {
			ls_err("record", "bad --call-graph '%s' (fp, eh, dwarf or dwarf,BYTES)", optarg);
			return -1;
		}
		break;
	}
	case 'G':
		o->no_engine = true;
		break;
	case 'B':
		o->capture_bodies = true;
		break;
	case 'K':
		if (!ls_parse_uint(optarg, 1u << 18, &o->stack_entries) || !o->stack_entries) {
			ls_err("record", "--stack-entries %s: expected 1..262144", optarg);
			return -1;
		}
		break;
	case 'D':
		if (access(optarg, R_OK | X_OK) || strlen(optarg) > 200) {
			ls_err("record", "--debug-dir %s: %s", optarg,
			       strlen(optarg) > 200 ? "path too long (200 bytes at most)"
						    : strerror(errno));
			return -1;
		}
		o->debug_dir = optarg;
		break;
	case 'L':
		if (!is_elf(optarg)) {
			ls_err("record", "--cuda-lib %s: %s", optarg,
			       access(optarg, R_OK) ? strerror(errno)
						    : "not an ELF shared object (expected libcuda.so.1)");
			return -1;
		}
		if (o->ncuda_paths < 4)
			o->cuda_paths[o->ncuda_paths++] = optarg;
		break;
	case 'E':
		if (!is_elf(optarg)) {
			ls_err("record", "--engine-lib %s: %s", optarg,
			       access(optarg, R_OK) ? strerror(errno)
						    : "not an ELF shared object (expected "
						      "liblatsplit-engine.so or an engine with its probes)");
			return -1;
		}
		if (o->nengine_paths < 8)
			o->engine_paths[o->nengine_paths++] = optarg;
		break;
	default:
		return 1;
	}
	return 0;
}

/* top's own. 1: not one of them; 0; -1 (said why). */
static int parse_top(struct ls_rec_opts *o, int opt, const char *arg)
{
	struct ls_top_opts *t = &o->topo;

	if (opt == '1') {
		t->count = 1;
		return 0;
	}
	if (opt != 'n' && opt != 'i')
		return 1;
	if (opt == 'n' ? !ls_parse_uint(arg, 1000000, &t->count) || !t->count
		       : !ls_parse_double(arg, &t->interval_s) || !(t->interval_s >= 0.1) ||
				 t->interval_s > 3600) {
		ls_err("top", "%s: expected %s", arg,
		       opt == 'n' ? "a count, 1..1000000" : "seconds, 0.1..3600");
		return -1;
	}
	return 0;
}

/* The options against each other and the host. 0, or -1 (said why). */
static int check(struct ls_rec_opts *o)
{
	if (o->flight.ntrig && !o->flight_s) {
		ls_err("record", "--trigger needs --flight-recorder SECONDS");
		return -1;
	}
	if (o->flight_s && !o->flight.ntrig) {
		ls_err("record", "--flight-recorder needs at least one --trigger, e.g. 'total>2s'");
		return -1;
	}
	o->flight.keep_ns = (uint64_t)(o->flight_s * 1e9);
	/* a flight recorder or top keeps no full capture unless -o asks */
	if ((o->flight_s || o->top) && !o->path_given)
		o->path = NULL;
	o->live_on = o->metrics || o->flight_s || o->top || o->otlp_url;
	struct stat osb;
	if (o->path && lstat(o->path, &osb) == 0 && !S_ISREG(osb.st_mode)) {
		ls_err("record", "-o %s: not a regular file (%s); name a new or regular file", o->path,
		       S_ISDIR(osb.st_mode)   ? "a directory"
		       : S_ISLNK(osb.st_mode) ? "a symbolic link"
		       : S_ISCHR(osb.st_mode) || S_ISBLK(osb.st_mode) ? "a device"
		       : S_ISFIFO(osb.st_mode) ? "a FIFO"
					       : "a special file");
		return -1;
	}
	for (int i = 0; i < o->npids; i++)
		if (!ls_proc_alive(o->pids[i])) {
			ls_err("record", "no process with pid %lu", o->pids[i]);
			return -1;
		}
	return 0;
}

int ls_rec_opts_parse(struct ls_rec_opts *o, int argc, char **argv, bool top,
		      void (*top_usage)(FILE *out))
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'}, {"duration", required_argument, NULL, 'd'},
		{"pid", required_argument, NULL, 'p'},    {"port", required_argument, NULL, 'P'},
		{"ringbuf", required_argument, NULL, 'm'}, {"zlib-level", required_argument, NULL, 'z'},
		{"verbose", no_argument, NULL, 'v'},      {"help", no_argument, NULL, 'h'},
		{"capture-bytes", required_argument, NULL, 'C'},
		{"no-sock", no_argument, NULL, 'N'},
		{"sock-hooks", required_argument, NULL, 'k'},
		{"no-tls", no_argument, NULL, 'W'},
		{"engine-lib", required_argument, NULL, 'E'},
		{"cuda-lib", required_argument, NULL, 'L'},
		{"freq", required_argument, NULL, 'F'},   {"all-cpus", no_argument, NULL, 'a'},
		{"no-offcpu", no_argument, NULL, 'O'},    {"no-symbolize", no_argument, NULL, 'S'},
		{"offcpu-kernel-min-us", required_argument, NULL, 'I'},
		{"debug-dir", required_argument, NULL, 'D'},
		{"stack-entries", required_argument, NULL, 'K'},
		{"call-graph", required_argument, NULL, 'U'},
		{"no-engine", no_argument, NULL, 'G'},
		{"capture-bodies", no_argument, NULL, 'B'},
		{"metrics", required_argument, NULL, 'M'},
		{"otlp", required_argument, NULL, 'J'},
		{"otlp-receive", required_argument, NULL, 'Q'},
		{"flight-recorder", required_argument, NULL, 'R'},
		{"trigger", required_argument, NULL, 'T'},
		{"flight-dir", required_argument, NULL, 'X'},
		{"flight-margin", required_argument, NULL, 'Y'},
		{"max-dumps-per-hour", required_argument, NULL, 'H'},
		/* top's */
		{"once", no_argument, NULL, '1'},         {"snapshots", required_argument, NULL, 'n'},
		{"interval", required_argument, NULL, 'i'},
		{}};
	int opt, rc;

	memset(o, 0, sizeof(*o));
	*o = (struct ls_rec_opts){.path = "latsplit.data", .flight = {.max_per_hour = 6},
				  .ringbuf_mb = 8, .level = 1, .capture_bytes = 1024, .freq = 49,
				  .offcpu = true, .symbolize = true, .eh_rows = LS_EH_ROWS_DEFAULT,
				  .kstack_min_us = 1000};
	void (*usage)(FILE *) = top ? top_usage : ls_rec_usage;
	if (top) {
		o->topo = (struct ls_top_opts){.count = 0, .interval_s = 1};
		o->top = &o->topo;
	}
	optind = 1;
	while ((opt = getopt_long(argc, argv, top ? "+o:d:p:m:z:F:avhn:i:" : "+o:d:p:m:z:F:avh",
				  longopts, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 1;
		}
		if ((rc = top ? parse_top(o, opt, optarg) : 1) == 1 &&
		    (rc = parse_live(o, opt, optarg)) == 1 && (rc = parse_source(o, opt, optarg)) == 1) {
			usage(stderr);
			return -1;
		}
		if (rc < 0)
			return -1;
	}
	o->command = optind < argc ? argv + optind : NULL;
	return check(o);
}
