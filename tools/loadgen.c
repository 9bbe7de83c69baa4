// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * loadgen: drives an OpenAI-compatible server with N concurrent connections
 * and writes one JSONL line per request with client-side CLOCK_MONOTONIC
 * times (same clock as latsplit on the same host): start, first token, end.
 *
 * First token: for streaming responses the first body byte holding a
 * "data:" event; otherwise the first body byte.
 *
 * A mark is taken when this thread runs after recv() returns, late by any
 * time the woken thread waited for a CPU. That wait is the kernel's own
 * count (run_delay in /proc/thread-self/schedstat, CONFIG_SCHED_INFO), plus
 * the machine's stolen time (/proc/stat: a hypervisor's, invisible to
 * schedstat), across the recv() that brought the bytes: first_wait_ns and
 * end_wait_ns, so a
 * checker can take the client's mark as the range [mark - wait, mark]. The
 * start mark is taken before connect() and send(): start_wait_ns is the CPU
 * wait until the send returned (the request may have left that much later).
 * A new connection's request starts with its SYN, which the receiving stack
 * may process at any time before connect() returns (a loaded host defers
 * its softirqs to ksoftirqd, and connect() sleeps, not runnable, meanwhile):
 * connect_ns is the start mark to connect()'s return, 0 on a reused one.
 *
 * The kernel also stamps each received segment when it reached this host
 * (SO_TIMESTAMPNS, taken before the receive softirq ran: a deferred softirq
 * delays the wake-up of a thread that is not yet runnable, which no
 * run_delay shows). A mark's wait is at least the time from the stamp of
 * the last segment its recv() returned to the mark.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct config {
	const char *host;
	int port;
	int concurrency;
	long requests;
	double duration;
	bool stream;
	int prompt_bytes;
	int max_tokens;
	bool keepalive;
	bool traceparent; /* send a W3C traceparent, its trace id from the request id */
	const char *path;
	const char *out;
	double timeout;
	const char *id_prefix;
	double rate; /* open loop: requests per second, 0 = closed loop */
};

static struct config cfg = {
	.host = "127.0.0.1", .port = 8000, .concurrency = 1, .requests = 10, .prompt_bytes = 64,
	.max_tokens = 16, .keepalive = true, .path = "/v1/completions", .timeout = 30,
	.id_prefix = "lg-",
};

struct result {
	long id;
	int worker;
	unsigned long long start, first, end;
	unsigned long long connect_ns; /* start mark to connect()'s return, 0 on a reused connection */
	unsigned long long first_wait, end_wait; /* how late the mark may be (mark_wait) */
	unsigned long long start_wait;           /* run_delay from start until the send returned */
	int status;
	long bytes_out, bytes_in;
	int tokens;
	const char *error;
	unsigned short local_port;
};

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static long next_id, done_ok, done_err;
static unsigned long long deadline, t_begin;
static double *latencies;
static long nlat, latcap;

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int connect_server(unsigned short *local_port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(cfg.port)};
	struct sockaddr_in l;
	socklen_t ll = sizeof(l);
	struct timeval tv = {.tv_sec = (long)cfg.timeout,
			     .tv_usec = (long)((cfg.timeout - (long)cfg.timeout) * 1e6)};
	int one = 1, fd;

	inet_pton(AF_INET, cfg.host, &a.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	getsockname(fd, (struct sockaddr *)&l, &ll);
	*local_port = ntohs(l.sin_port);
	return fd;
}

struct rbuf {
	char data[65536];
	size_t len;
	int schedstat;                /* /proc/thread-self/schedstat, -1 without */
	unsigned long long recv_d0;   /* run_delay before the last recv */
	unsigned long long rx_mono;   /* the last recv's newest segment reached the host, 0 unknown */
};

/* The machine's stolen time in ns (/proc/stat's steal, all CPUs, in clock
 * ticks): the hypervisor ran others; no schedstat shows it, and a mark taken
 * after it is late by it. 0 when unknown. */
static unsigned long long steal_ns(void)
{
	static int fd = -2;
	char s[256];
	unsigned long long v[8];
	ssize_t n;

	if (fd == -2)
		fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : pread(fd, s, sizeof(s) - 1, 0);
	if (n <= 0)
		return 0;
	s[n] = '\0';
	if (sscanf(s, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) != 8)
		return 0;
	return v[7] * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
}

/* This thread's run_delay (ns spent runnable, waiting for a CPU) plus the
 * machine's stolen time, 0 when the kernel has no schedstat. A mark's wait
 * is run_delay at the mark minus run_delay before the recv that brought its
 * bytes. */
static unsigned long long run_delay(int fd)
{
	char s[128];
	unsigned long long on_cpu, delay;
	ssize_t n = fd < 0 ? -1 : pread(fd, s, sizeof(s) - 1, 0);

	if (n <= 0)
		return 0;
	s[n] = '\0';
	return sscanf(s, "%llu %llu", &on_cpu, &delay) == 2 ? delay + steal_ns() : 0;
}

/* How late a mark taken now may be: this thread's CPU wait across the recv
 * that brought the bytes, or the time since they reached the host. */
static unsigned long long mark_wait(const struct rbuf *b, unsigned long long mark)
{
	unsigned long long w = run_delay(b->schedstat) - b->recv_d0;

	if (b->rx_mono && mark > b->rx_mono && mark - b->rx_mono > w)
		w = mark - b->rx_mono;
	return w;
}

static int fill(int fd, struct rbuf *b, struct result *r)
{
	ssize_t n;

	if (b->len == sizeof(b->data))
		return -1;
	char cbuf[CMSG_SPACE(sizeof(struct timespec))];
	struct iovec iov = {b->data + b->len, sizeof(b->data) - b->len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			   .msg_controllen = sizeof(cbuf)};

	b->recv_d0 = run_delay(b->schedstat);
	n = recvmsg(fd, &m, 0);
	if (n <= 0)
		return -1;
	b->rx_mono = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec st, rt;
			unsigned long long mono = now_ns(), stamp, real;

			memcpy(&st, CMSG_DATA(c), sizeof(st));
			clock_gettime(CLOCK_REALTIME, &rt);
			stamp = st.tv_sec * 1000000000ull + st.tv_nsec;
			real = rt.tv_sec * 1000000000ull + rt.tv_nsec;
			if (stamp && stamp <= real && real - stamp < mono)
				b->rx_mono = mono - (real - stamp);
		}
	b->len += n;
	r->bytes_in += n;
	return 0;
}

static void consume(struct rbuf *b, size_t n)
{
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

static int count_events(const char *p, size_t len, struct result *r, const struct rbuf *b)
{
	int events = 0;
	for (size_t i = 0; i + 5 <= len; i++)
		if (!memcmp(p + i, "data:", 5) && (i == 0 || p[i - 1] == '\n')) {
			if (!(i + 12 <= len && !memcmp(p + i, "data: [DONE]", 12)))
				events++;
		}
	if (events && !r->first) {
		r->first = now_ns();
		r->first_wait = mark_wait(b, r->first);
	}
	r->tokens += events;
	return events;
}

/* Reads one response; false on error (connection unusable). */
static bool read_response(int fd, struct rbuf *b, struct result *r, bool *server_close)
{
	char *end;
	long clen = -1;
	bool chunked = false;

	while (!(end = memmem(b->data, b->len, "\r\n\r\n", 4)))
		if (fill(fd, b, r))
			return false;
	size_t head = end - b->data + 4;
	b->data[head - 1] = '\0';
	if (sscanf(b->data, "HTTP/1.%*d %d", &r->status) != 1)
		return false;
	for (char *line = strstr(b->data, "\r\n"); line && line < b->data + head; line = strstr(line + 2, "\r\n")) {
		char *l = line + 2;
		if (!strncasecmp(l, "Content-Length:", 15))
			clen = atol(l + 15);
		else if (!strncasecmp(l, "Transfer-Encoding:", 18) && strcasestr(l, "chunked"))
			chunked = true;
		else if (!strncasecmp(l, "Connection:", 11) && strcasestr(l, "close"))
			*server_close = true;
	}
	consume(b, head);
	if (!chunked) {
		if (clen < 0)
			return false;
		while ((long)b->len < (clen > 0 ? 1 : 0))
			if (fill(fd, b, r))
				return false;
		if (clen > 0 && !r->first) {
			r->first = now_ns();
			r->first_wait = mark_wait(b, r->first);
		}
		while ((long)b->len < clen) {
			/* large body: drain in place */
			long take = b->len;
			clen -= take;
			b->len = 0;
			if (fill(fd, b, r))
				return false;
		}
		consume(b, clen);
		return true;
	}
	for (;;) {
		char *crlf;
		while (!(crlf = memmem(b->data, b->len, "\r\n", 2)))
			if (fill(fd, b, r))
				return false;
		long size = strtol(b->data, NULL, 16);
		size_t hl = crlf - b->data + 2;
		if (size < 0)
			return false;
		while (b->len < hl + size + 2)
			if (fill(fd, b, r))
				return false;
		if (size == 0) {
			consume(b, hl + 2);
			return true;
		}
		count_events(b->data + hl, size, r, b);
		consume(b, hl + size + 2);
	}
}

static void emit(const struct result *r)
{
	pthread_mutex_lock(&out_lock);
	if (r->error)
		done_err++;
	else
		done_ok++;
	if (out)
		fprintf(out,
			"{\"id\":%ld,\"x_request_id\":\"%s%ld\",\"worker\":%d,\"local_port\":%u,\"start_ns\":%llu,\"first_ns\":%llu,"
			"\"end_ns\":%llu,\"ttft_ns\":%llu,\"total_ns\":%llu,\"first_wait_ns\":%llu,"
			"\"end_wait_ns\":%llu,\"start_wait_ns\":%llu,\"connect_ns\":%llu,\"status\":%d,"
			"\"bytes_out\":%ld,\"bytes_in\":%ld,\"tokens\":%d,\"error\":%s%s%s}\n",
			r->id, cfg.id_prefix, r->id, r->worker, r->local_port, r->start, r->first, r->end,
			r->first ? r->first - r->start : 0, r->end - r->start, r->first_wait, r->end_wait,
			r->start_wait, r->connect_ns, r->status,
			r->bytes_out, r->bytes_in, r->tokens, r->error ? "\"" : "",
			r->error ? r->error : "null", r->error ? "\"" : "");
	if (!r->error) {
		if (nlat == latcap) {
			latcap = latcap ? latcap * 2 : 1024;
			latencies = realloc(latencies, latcap * sizeof(double));
		}
		if (latencies)
			latencies[nlat++] = (r->end - r->start) / 1e6;
	}
	pthread_mutex_unlock(&out_lock);
}

static void *worker(void *arg)
{
	int w = (int)(long)arg, fd = -1;
	unsigned short lport = 0;
	struct rbuf *b = calloc(1, sizeof(*b));
	char *prompt = malloc(cfg.prompt_bytes + 1), *req;
	size_t reqcap = cfg.prompt_bytes + 1024;

	req = malloc(reqcap);
	if (!b || !prompt || !req)
		return NULL;
	/* the CPU waits are only reported in the results: no reads without -o */
	b->schedstat = out ? open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC) : -1;
	memset(prompt, 'x', cfg.prompt_bytes);
	prompt[cfg.prompt_bytes] = '\0';
	for (;;) {
		long id = __sync_fetch_and_add(&next_id, 1);
		struct result r = {.id = id, .worker = w};
		bool server_close = false;

		if ((cfg.requests && id >= cfg.requests) || (deadline && now_ns() >= deadline))
			break;
		if (cfg.rate > 0) { /* open loop: request id is due at t_begin + id / rate */
			unsigned long long due = t_begin + (unsigned long long)(id * 1e9 / cfg.rate);
			struct timespec ts = {due / 1000000000ull, due % 1000000000ull};

			if (deadline && due >= deadline)
				break;
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
		}
		char body[256];
		int blen = snprintf(body, sizeof(body),
				    "{\"model\":\"mock\",\"max_tokens\":%d,\"stream\":%s,\"prompt\":\"",
				    cfg.max_tokens, cfg.stream ? "true" : "false");
		char tp[96] = "";
		if (cfg.traceparent) /* a trace id unique per run and request */
			snprintf(tp, sizeof(tp), "traceparent: 00-%016llx%016lx-%016lx-01\r\n",
				 (unsigned long long)getpid() << 32 | 0x15a7u, id + 1, id + 1);
		int n = snprintf(req, reqcap,
				 "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
				 "X-Request-Id: %s%ld\r\n%sContent-Length: %d\r\nConnection: %s\r\n\r\n%s%s\"}",
				 cfg.path, cfg.host, cfg.port, cfg.id_prefix, id, tp, blen + cfg.prompt_bytes + 2,
				 cfg.keepalive ? "keep-alive" : "close", body, prompt);
		r.start = now_ns();
		unsigned long long d_start = run_delay(b->schedstat);
		if (fd < 0) {
			fd = connect_server(&lport);
			r.connect_ns = now_ns() - r.start;
			b->len = 0;
		}
		r.local_port = lport;
		if (fd < 0) {
			r.error = "connect";
		} else if (send(fd, req, n, MSG_NOSIGNAL) != n) {
			r.error = "send";
		} else {
			r.start_wait = run_delay(b->schedstat) - d_start;
			r.bytes_out = n;
			if (!read_response(fd, b, &r, &server_close))
				r.error = errno == EAGAIN ? "timeout" : "response";
		}
		r.end = now_ns();
		r.end_wait = mark_wait(b, r.end);
		emit(&r);
		if (r.error || server_close || !cfg.keepalive) {
			if (fd >= 0)
				close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	if (b->schedstat >= 0)
		close(b->schedstat);
	free(b);
	free(prompt);
	free(req);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void usage(FILE *o)
{
	fprintf(o,
		"usage: loadgen [--host IP] [--port N] [-c CONC] [-n REQUESTS | -d SECONDS]\n"
		"               [--stream] [--prompt-bytes N] [--max-tokens N] [--no-keepalive]\n"
		"               [--path P] [--timeout S] [--id-prefix P] [--rate R] [--traceparent]\n"
		"               [-o OUT.jsonl]\n\n"
		"Sends OpenAI-style completion requests over N connections; one JSONL line\n"
		"per request (CLOCK_MONOTONIC ns) to -o, a summary to stderr. Closed loop\n"
		"(each connection sends when its last response ended), or with --rate R open\n"
		"loop: request k is due k/R seconds after the start (a request whose\n"
		"connections are all busy goes out late; latency counts from the send).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"host", required_argument, NULL, 'H'},      {"port", required_argument, NULL, 'p'},
		{"concurrency", required_argument, NULL, 'c'}, {"requests", required_argument, NULL, 'n'},
		{"duration", required_argument, NULL, 'd'},  {"stream", no_argument, NULL, 's'},
		{"prompt-bytes", required_argument, NULL, 'P'}, {"max-tokens", required_argument, NULL, 'm'},
		{"no-keepalive", no_argument, NULL, 'K'},     {"path", required_argument, NULL, 'u'},
		{"timeout", required_argument, NULL, 't'},    {"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},             {"id-prefix", required_argument, NULL, 'I'},
		{"rate", required_argument, NULL, 'r'},      {"traceparent", no_argument, NULL, 'T'},
		{}};
	int opt;

	while ((opt = getopt_long(argc, argv, "c:n:d:o:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'H': cfg.host = optarg; break;
		case 'p': cfg.port = atoi(optarg); break;
		case 'c': cfg.concurrency = atoi(optarg); break;
		case 'n': cfg.requests = atol(optarg); break;
		case 'd': cfg.duration = atof(optarg); cfg.requests = 0; break;
		case 's': cfg.stream = true; break;
		case 'P': cfg.prompt_bytes = atoi(optarg); break;
		case 'm': cfg.max_tokens = atoi(optarg); break;
		case 'K': cfg.keepalive = false; break;
		case 'u': cfg.path = optarg; break;
		case 't': cfg.timeout = atof(optarg); break;
		case 'o': cfg.out = optarg; break;
		case 'I': cfg.id_prefix = optarg; break;
		case 'r': cfg.rate = atof(optarg); break;
		case 'T': cfg.traceparent = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (cfg.concurrency < 1 || cfg.concurrency > 4096 || cfg.prompt_bytes < 0 ||
	    cfg.max_tokens < 0 || (!cfg.requests && cfg.duration <= 0) || cfg.timeout <= 0 ||
	    cfg.rate < 0) {
		fprintf(stderr, "loadgen: bad options (see --help)\n");
		return 2;
	}
	struct in_addr tmp;
	if (inet_pton(AF_INET, cfg.host, &tmp) != 1) {
		fprintf(stderr, "loadgen: --host must be an IPv4 address, got '%s'\n", cfg.host);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (cfg.out && !(out = fopen(cfg.out, "w"))) {
		fprintf(stderr, "loadgen: cannot write %s: %s\n", cfg.out, strerror(errno));
		return 1;
	}
	if (cfg.duration > 0)
		deadline = now_ns() + (unsigned long long)(cfg.duration * 1e9);
	t_begin = now_ns();
	pthread_t *th = calloc(cfg.concurrency, sizeof(*th));
	steal_ns(); /* opens /proc/stat once, before the workers read it */
	for (int i = 0; i < cfg.concurrency; i++)
		pthread_create(&th[i], NULL, worker, (void *)(long)i);
	for (int i = 0; i < cfg.concurrency; i++)
		pthread_join(th[i], NULL);
	double secs = (now_ns() - t_begin) / 1e9;
	if (out)
		fclose(out);
	qsort(latencies, nlat, sizeof(double), cmp);
	fprintf(stderr, "loadgen: %ld ok, %ld failed in %.2f s (%.1f req/s)", done_ok, done_err, secs,
		done_ok / secs);
	if (nlat)
		fprintf(stderr, "; latency p50 %.2f ms p99 %.2f ms max %.2f ms", latencies[nlat / 2],
			latencies[(long)(nlat * 0.99)], latencies[nlat - 1]);
	fprintf(stderr, "\n");
	free(th);
	free(latencies);
	return done_err ? 1 : 0;
}
