// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mock-engine: a small OpenAI-compatible inference server for tests and the
 * demo — the HTTP front end. POST /v1/completions and /v1/chat/completions
 * over HTTP/1.1 with keep-alive, non-streaming (JSON) or streaming (SSE
 * "data:" events, one per token, then "data: [DONE]", chunked transfer
 * encoding, as vLLM does). GET /health answers 200.
 *
 * Each connection has a thread (like an API server's workers); requests go
 * to the engine core (engine.c), a continuous-batching loop on a simulated
 * GPU, and tokens come back as the engine produces them. No model runs: all
 * device timings are simulated and labelled so.
 *
 * Test knobs: --read-delay-ms sleeps before reading each request (its bytes
 * wait in the receive queue), --sndbuf sets SO_SNDBUF, --token-bytes the size
 * of a token's text, --max-requests exits after N requests.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mock.h"

struct config {
	const char *bind_addr;
	int port;
	double read_delay_ms;
	int tokens;
	int token_bytes;
	long max_requests;
	const char *ready_file;
	int sndbuf;
};

static struct config cfg = {
	.bind_addr = "0.0.0.0", .port = 8000, .tokens = 16, .token_bytes = 6,
};
static volatile long served;
static volatile sig_atomic_t stopping;
static int listen_fd = -1;

struct request {
	char method[16];
	char path[256];
	char xrid[80];
	bool keep_alive;
	bool stream;
	int max_tokens;
	size_t body_len;
	uint64_t delay_b, delay_e; /* --read-delay-ms: the sleep before the read (0: none) */
	uint64_t accepted;         /* its connection's accept, for the first request on it (else 0) */
};

static void sleep_ms(double ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)((ms - ts.tv_sec * 1000.0) * 1e6);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/* Connection input buffer: requests may arrive split or pipelined. */
struct conn {
	int fd;
	uint64_t accepted; /* when accept returned it (truth: its first request came no earlier) */
	char buf[65536];
	size_t len;
};

/* Reads until the buffer holds a complete head; returns head length. */
static ssize_t read_head(struct conn *c)
{
	for (;;) {
		char *end = c->len ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL;
		ssize_t n;

		if (end)
			return end - c->buf + 4;
		if (c->len == sizeof(c->buf))
			return -1; /* head too large */
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
		if (n <= 0)
			return -1;
		c->len += n;
	}
}

static const char *header_value(const char *head, size_t len, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = head; p && p < head + len;) {
		const char *eol = memmem(p, head + len - p, "\r\n", 2);
		if (!eol)
			break;
		if ((size_t)(eol - p) > nl && !strncasecmp(p, name, nl) && p[nl] == ':') {
			const char *v = p + nl + 1;
			while (*v == ' ')
				v++;
			return v;
		}
		p = eol + 2;
	}
	return NULL;
}

/* Parses one request from the connection; consumes head and body. */
static int read_request(struct conn *c, struct request *req)
{
	ssize_t head = read_head(c);
	const char *v;
	char body[8192];
	size_t have, take;

	if (head < 0)
		return -1;
	memset(req, 0, sizeof(*req));
	if (sscanf(c->buf, "%15s %255s", req->method, req->path) != 2)
		return -1;
	req->keep_alive = true;
	if ((v = header_value(c->buf, head, "Connection")) && !strncasecmp(v, "close", 5))
		req->keep_alive = false;
	if ((v = header_value(c->buf, head, "Content-Length")))
		req->body_len = strtoul(v, NULL, 10);
	if ((v = header_value(c->buf, head, "X-Request-Id"))) {
		size_t n = strcspn(v, "\r\n");
		if (n >= sizeof(req->xrid))
			n = sizeof(req->xrid) - 1;
		memcpy(req->xrid, v, n);
		req->xrid[n] = '\0';
	}
	/* Drop the head; read the body, keeping its start for the flags. */
	memmove(c->buf, c->buf + head, c->len - head);
	c->len -= head;
	size_t kept = 0, left = req->body_len;
	while (left) {
		if (!c->len) {
			ssize_t n = recv(c->fd, c->buf, sizeof(c->buf), 0);
			if (n <= 0)
				return -1;
			c->len = n;
		}
		have = c->len;
		take = have < left ? have : left;
		if (kept < sizeof(body) - 1) {
			size_t k = take < sizeof(body) - 1 - kept ? take : sizeof(body) - 1 - kept;
			memcpy(body + kept, c->buf, k);
			kept += k;
		}
		memmove(c->buf, c->buf + take, c->len - take);
		c->len -= take;
		left -= take;
	}
	body[kept] = '\0';
	req->stream = strstr(body, "\"stream\": true") || strstr(body, "\"stream\":true");
	req->max_tokens = cfg.tokens;
	if ((v = strstr(body, "\"max_tokens\""))) {
		v = strchr(v, ':');
		if (v && atoi(v + 1) > 0)
			req->max_tokens = atoi(v + 1);
	}
	return 0;
}

static void token_text(char *out, int len, int i)
{
	for (int k = 0; k < len; k++)
		out[k] = 'a' + (i + k) % 26;
	out[len] = '\0';
}

static int send_simple(int fd, int status, const char *reason, const char *body, bool keep)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nConnection: %s\r\n\r\n%s",
			 status, reason, strlen(body), keep ? "keep-alive" : "close", body);
	return send_all(fd, buf, n);
}

/* Ground truth: the front end worked for r from `ready` (noticed at
 * `noticed`) until `done`. */
static void fe_span(struct ereq *r, uint64_t ready, uint64_t noticed, uint64_t done)
{
	if (r->nfe == r->capfe) {
		r->capfe = r->capfe ? r->capfe * 2 : 32;
		r->fe = realloc(r->fe, r->capfe * sizeof(*r->fe));
		if (!r->fe)
			abort();
	}
	r->fe[r->nfe][0] = ready;
	r->fe[r->nfe][1] = noticed;
	r->fe[r->nfe][2] = done;
	r->nfe++;
}

/* Hands the request to the engine and writes tokens as they come. */
static int serve_request(int fd, const struct request *req, long id)
{
	char tok[1024], buf[2048];
	int tb = cfg.token_bytes < (int)sizeof(tok) - 1 ? cfg.token_bytes : (int)sizeof(tok) - 1;
	const char *conn = req->keep_alive ? "keep-alive" : "close";
	struct ereq *r = calloc(1, sizeof(*r));
	int rc = 0, sent = 0, n;

	if (!r)
		return -1;
	r->id = id;
	snprintf(r->xrid, sizeof(r->xrid), "%s", req->xrid);
	r->prompt_tokens = req->body_len / 4 > 0 ? (int)(req->body_len / 4) : 1;
	r->max_tokens = req->max_tokens > 0 ? req->max_tokens : 1;
	r->t_read = mono_ns();
	r->t_delay_b = req->delay_b;
	r->t_delay_e = req->delay_e;
	r->t_accepted = req->accepted;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	engine_submit(r);

	if (req->stream) {
		n = snprintf(buf, sizeof(buf),
			     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
			     "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
			     "Connection: %s\r\n\r\n",
			     conn);
		rc = send_all(fd, buf, n);
	}
	/* Tokens as the engine makes them (all at the end when not streaming).
	 * A client that went away does not stop the engine's work. */
	for (bool done = false; !done;) {
		int ready;
		uint64_t ready_at, noticed;
		pthread_mutex_lock(&r->mu);
		while (r->produced == sent && !r->finished)
			pthread_cond_wait(&r->cv, &r->mu);
		ready = r->produced;
		ready_at = r->produced_at;
		done = r->finished && ready == r->produced;
		pthread_mutex_unlock(&r->mu);
		noticed = mono_ns();
		if (!req->stream || rc) {
			sent = ready;
			continue;
		}
		for (; sent < ready && !rc; sent++) {
			char ev[1400];
			token_text(tok, tb, sent);
			int evlen = snprintf(ev, sizeof(ev),
					     "data: {\"id\":\"cmpl-%ld\",\"object\":\"text_completion\","
					     "\"choices\":[{\"index\":0,\"text\":\"%s\"}]}\n\n",
					     id, tok);
			n = snprintf(buf, sizeof(buf), "%x\r\n%s\r\n", evlen, ev);
			rc = send_all(fd, buf, n);
			if (!r->t_first)
				r->t_first = mono_ns();
		}
		if (req->stream)
			fe_span(r, ready_at, noticed, mono_ns());
	}
	if (req->stream && !rc) {
		/* the closing write is front-end work too, from the last token's
		 * write on: a thread preempted here is waiting for a CPU */
		static const char done[] = "data: [DONE]\n\n";
		uint64_t from = r->nfe ? r->fe[r->nfe - 1][2] : mono_ns();
		n = snprintf(buf, sizeof(buf), "%zx\r\n%s\r\n0\r\n\r\n", sizeof(done) - 1, done);
		rc = send_all(fd, buf, n);
		fe_span(r, from, from, mono_ns());
	} else if (!rc) {
		size_t cap = 256 + (size_t)r->max_tokens * tb;
		char *body = malloc(cap), *text = malloc((size_t)r->max_tokens * tb + 1);
		if (!body || !text) {
			rc = -1;
		} else {
			text[0] = '\0';
			for (int i = 0, off = 0; i < r->max_tokens; i++, off += tb)
				token_text(text + off, tb, i);
			int blen = snprintf(body, cap,
					    "{\"id\":\"cmpl-%ld\",\"object\":\"text_completion\",\"choices\":"
					    "[{\"index\":0,\"text\":\"%s\",\"finish_reason\":\"length\"}],"
					    "\"usage\":{\"completion_tokens\":%d}}",
					    id, text, r->max_tokens);
			n = snprintf(buf, sizeof(buf),
				     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				     "Content-Length: %d\r\nConnection: %s\r\n\r\n",
				     blen, conn);
			rc = send_all(fd, buf, n) || send_all(fd, body, blen) ? -1 : 0;
			r->t_first = mono_ns();
		}
		free(body);
		free(text);
	}
	r->t_out = mono_ns();
	engine_truth_request(r);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r->steps);
	free(r->fe);
	free(r);
	return rc;
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct request req;

	for (;;) {
		/* Leave the request in the receive queue for a while. */
		uint64_t delay_b = 0, delay_e = 0;
		if (!c->len && cfg.read_delay_ms > 0) {
			delay_b = mono_ns();
			sleep_ms(cfg.read_delay_ms);
			delay_e = mono_ns();
		}
		if (read_request(c, &req))
			break;
		req.delay_b = delay_b;
		req.delay_e = delay_e;
		req.accepted = c->accepted;
		c->accepted = 0;
		long id = __sync_add_and_fetch(&served, 1);
		int rc;

		if (!strcmp(req.method, "GET") && !strcmp(req.path, "/health"))
			rc = send_simple(c->fd, 200, "OK", "{}", req.keep_alive);
		else if (strcmp(req.path, "/v1/completions") &&
			 strcmp(req.path, "/v1/chat/completions"))
			rc = send_simple(c->fd, 404, "Not Found", "{\"error\":\"not found\"}",
					 req.keep_alive);
		else if (strcmp(req.method, "POST"))
			rc = send_simple(c->fd, 405, "Method Not Allowed",
					 "{\"error\":\"use POST\"}", req.keep_alive);
		else
			rc = serve_request(c->fd, &req, id);
		if (rc || !req.keep_alive)
			break;
		if (cfg.max_requests && id >= cfg.max_requests) {
			stopping = 1;
			break;
		}
	}
	close(c->fd);
	free(c);
	if (stopping && listen_fd >= 0)
		shutdown(listen_fd, SHUT_RDWR);
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
	if (listen_fd >= 0)
		shutdown(listen_fd, SHUT_RDWR);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: mock-engine [options]\n\n"
		"A simulated OpenAI-compatible inference server: HTTP front end plus a\n"
		"continuous-batching engine on a simulated GPU (no model runs).\n\n"
		"HTTP:\n"
		"  --port N, --bind ADDR   where to listen (8000, 0.0.0.0)\n"
		"  --tokens N              tokens per request unless max_tokens is given (16)\n"
		"  --token-bytes N         bytes of text per token (6)\n"
		"  --read-delay-ms MS      wait before reading each request from the socket (0)\n"
		"  --sndbuf BYTES          SO_SNDBUF of each connection (kernel autotuning)\n"
		"  --max-requests N        exit after N requests\n"
		"  --ready-file PATH       create PATH once listening\n"
		"Engine (per step; times simulated unless noted):\n"
		"  --max-batch N           requests in a running batch (8)\n"
		"  --max-batched-tokens N  prompt + decode tokens per step (4096)\n"
		"  --token-ms MS           decode compute per step (0)\n"
		"  --delay-ms MS           extra compute for a step that prefills (0)\n"
		"  --prefill-us-per-token US  compute per prompt token prefilled (0)\n"
		"  --h2d-us US, --d2h-us US   copies per step (0); --h2d-us-per-token US\n"
		"  --host-us US            real CPU burned per step: scheduling, sampling (0)\n"
		"  --kv-tokens N           KV budget; over it the newest request is preempted\n"
		"  --no-engine-events      do not fire latsplit engine events\n"
		"  --truth PATH            write ground truth JSONL (steps and requests)\n");
}

static bool parse_num(const char *s, double *out)
{
	char *end;
	*out = strtod(s, &end);
	return *s && !*end && *out >= 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"port", required_argument, NULL, 'p'},       {"bind", required_argument, NULL, 'b'},
		{"delay-ms", required_argument, NULL, 'D'},   {"token-ms", required_argument, NULL, 'T'},
		{"tokens", required_argument, NULL, 'n'},     {"token-bytes", required_argument, NULL, 'B'},
		{"read-delay-ms", required_argument, NULL, 'R'},
		{"max-requests", required_argument, NULL, 'M'},
		{"ready-file", required_argument, NULL, 'r'}, {"help", no_argument, NULL, 'h'},
		{"sndbuf", required_argument, NULL, 'S'},     {"max-batch", required_argument, NULL, 'm'},
		{"max-batched-tokens", required_argument, NULL, 'k'},
		{"prefill-us-per-token", required_argument, NULL, 'P'},
		{"h2d-us", required_argument, NULL, 'H'},     {"d2h-us", required_argument, NULL, 'd'},
		{"h2d-us-per-token", required_argument, NULL, 'x'},
		{"host-us", required_argument, NULL, 'U'},    {"kv-tokens", required_argument, NULL, 'K'},
		{"no-engine-events", no_argument, NULL, 'N'}, {"truth", required_argument, NULL, 't'},
		{}};
	int opt;
	double v;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt == 'b') {
			cfg.bind_addr = optarg;
			continue;
		}
		if (opt == 'r') {
			cfg.ready_file = optarg;
			continue;
		}
		if (opt == 'N') {
			ecfg.events = false;
			continue;
		}
		if (opt == 't') {
			ecfg.truth = fopen(optarg, "w");
			if (!ecfg.truth) {
				fprintf(stderr, "mock-engine: cannot write %s: %s\n", optarg, strerror(errno));
				return 1;
			}
			continue;
		}
		if (opt == '?' || !parse_num(optarg, &v)) {
			fprintf(stderr, "mock-engine: bad value for option (see --help)\n");
			return 2;
		}
		switch (opt) {
		case 'p': cfg.port = (int)v; break;
		case 'D': ecfg.prefill_fixed_us = v * 1000; break;
		case 'T': ecfg.decode_us = v * 1000; break;
		case 'n': cfg.tokens = (int)v; break;
		case 'B': cfg.token_bytes = (int)v; break;
		case 'R': cfg.read_delay_ms = v; break;
		case 'M': cfg.max_requests = (long)v; break;
		case 'S': cfg.sndbuf = (int)v; break;
		case 'm': ecfg.max_batch = v < 1 ? 1 : (int)v; break;
		case 'k': ecfg.max_batched_tokens = (int)v; break;
		case 'P': ecfg.prefill_us_per_token = v; break;
		case 'H': ecfg.h2d_us = v; break;
		case 'd': ecfg.d2h_us = v; break;
		case 'x': ecfg.h2d_us_per_token = v; break;
		case 'U': ecfg.host_us = v; break;
		case 'K': ecfg.kv_tokens = (int)v; break;
		}
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(cfg.port)};
	int one = 1;
	if (inet_pton(AF_INET, cfg.bind_addr, &addr.sin_addr) != 1) {
		fprintf(stderr, "mock-engine: bad --bind address '%s'\n", cfg.bind_addr);
		return 2;
	}
	listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(listen_fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(listen_fd, 1024)) {
		fprintf(stderr, "mock-engine: cannot listen on %s:%d: %s\n", cfg.bind_addr, cfg.port,
			strerror(errno));
		return 1;
	}
	engine_start();
	if (cfg.ready_file) {
		FILE *f = fopen(cfg.ready_file, "w");
		if (f)
			fclose(f);
	}
	while (!stopping) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		pthread_t t;
		pthread_attr_t attr;
		struct conn *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (cfg.sndbuf)
			setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &cfg.sndbuf, sizeof(cfg.sndbuf));
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->accepted = mono_ns();
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, conn_main, c)) {
			close(fd);
			free(c);
		}
		pthread_attr_destroy(&attr);
	}
	close(listen_fd);
	/* Let in-flight responses finish briefly. */
	sleep_ms(100);
	if (ecfg.truth)
		fflush(ecfg.truth);
	return 0;
}
