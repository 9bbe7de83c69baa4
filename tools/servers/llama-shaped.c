// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * llama-shaped: a test server shaped as llama.cpp's llama-server on a CPU
 * (test tooling, no model): HTTP threads read requests and queue them as
 * tasks; --slots generation slots (default 1, llama-server's -np) take
 * tasks in order (FIFO), process the prompt (CPU work per prompt token)
 * and generate tokens (CPU work per token), each streamed as an
 * OpenAI-style SSE chunk as soon as it is sampled. The last chunk carries
 * llama.cpp's "timings" (prompt_n, prompt_ms, predicted_n, predicted_ms,
 * per-token and per-second figures) and "usage"; a non-streaming answer
 * carries them in its JSON. The CPU work runs in functions named as
 * llama.cpp's hot loops (ggml_compute_forward_mul_mat), so stacks look like
 * a CPU engine's. No latsplit engine events.
 *
 * Truth (--truth FILE, JSON lines, CLOCK_MONOTONIC ns): per request its
 * X-Request-Id, received (its last byte read), slot (a slot took it: the
 * queue ends, prompt processing begins), first_token (sampled), finished,
 * and written: when the write that carried the first token (streamed) or
 * the answer (not) returned, so a checker knows how late after the token
 * (after the last one: last_token) its write was.
 *
 *   llama-shaped --port N [--slots 1] [--prompt-us-per-token 40]
 *                [--token-us 3000] [--truth FILE] [--ready-file FILE]
 */
#include <arpa/inet.h>
#include <errno.h>
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
#include <time.h>
#include <unistd.h>

struct task {
	int fd;
	char xrid[80];
	int prompt_tokens, max_tokens;
	bool stream;
	unsigned long long received, slot, first, last, written, finished;
	bool done;
	struct task *next;
};

static struct {
	int port, slots;
	double prompt_us, token_us;
	const char *truth, *ready;
} cfg = {.slots = 1, .prompt_us = 40, .token_us = 3000};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued = PTHREAD_COND_INITIALIZER, finished = PTHREAD_COND_INITIALIZER;
static struct task *head, *tail;
static FILE *truth;
static volatile double sink;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* CPU work for us microseconds, in the function llama.cpp spends it in. */
__attribute__((noinline)) static void ggml_compute_forward_mul_mat(double us)
{
	unsigned long long end = now_ns() + (unsigned long long)(us * 1000);
	double x = 1.0;

	while (now_ns() < end)
		for (int i = 0; i < 2000; i++)
			x = x * 1.0000001 + 1e-9;
	sink = x;
}

__attribute__((noinline)) static void llama_decode(double us)
{
	ggml_compute_forward_mul_mat(us);
}

static bool write_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		b += w;
		n -= (size_t)w;
	}
	return true;
}

/* One HTTP/1.1 chunk holding s. */
static bool chunk(int fd, const char *s)
{
	char buf[2048];
	int n = snprintf(buf, sizeof(buf), "%zx\r\n%s\r\n", strlen(s), s);

	return n > 0 && (size_t)n < sizeof(buf) && write_all(fd, buf, (size_t)n);
}

static void timings(char *buf, size_t len, const struct task *t, unsigned long long last)
{
	double pms = (t->first - t->slot) / 1e6, gms = (last - t->first) / 1e6;

	snprintf(buf, len,
		 "\"usage\":{\"completion_tokens\":%d,\"prompt_tokens\":%d,\"total_tokens\":%d},"
		 "\"timings\":{\"prompt_n\":%d,\"prompt_ms\":%.3f,\"prompt_per_token_ms\":%.3f,"
		 "\"prompt_per_second\":%.3f,\"predicted_n\":%d,\"predicted_ms\":%.3f,"
		 "\"predicted_per_token_ms\":%.3f,\"predicted_per_second\":%.3f}",
		 t->max_tokens, t->prompt_tokens, t->max_tokens + t->prompt_tokens, t->prompt_tokens,
		 pms, pms / t->prompt_tokens, t->prompt_tokens / (pms / 1e3 + 1e-9), t->max_tokens,
		 gms, t->max_tokens > 1 ? gms / (t->max_tokens - 1) : 0,
		 t->max_tokens > 1 ? (t->max_tokens - 1) / (gms / 1e3 + 1e-9) : 0);
}

/* A slot: prompt processing, then one token at a time. */
static void serve(struct task *t)
{
	char ev[1024], tm[512], text[4096] = "";
	unsigned long long last = 0;
	bool ok = true;

	t->slot = now_ns();
	llama_decode(cfg.prompt_us * t->prompt_tokens); /* the prompt, and the first token */
	t->first = last = now_ns();
	static const char sse_head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
				       "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";
	if (t->stream)
		ok = write_all(t->fd, sse_head, sizeof(sse_head) - 1);
	for (int i = 1; i <= t->max_tokens && ok; i++) {
		if (i > 1) {
			llama_decode(cfg.token_us);
			last = now_ns();
		}
		if (t->stream) {
			snprintf(ev, sizeof(ev), "data: {\"choices\":[{\"text\":\" tok%d\",\"index\":0,"
				 "\"finish_reason\":null}],\"object\":\"text_completion\"}\n\n", i);
			ok = chunk(t->fd, ev);
			if (i == 1)
				t->written = now_ns();
		} else if (strlen(text) + 16 < sizeof(text)) {
			snprintf(text + strlen(text), sizeof(text) - strlen(text), " tok%d", i);
		}
	}
	timings(tm, sizeof(tm), t, last);
	if (t->stream && ok) {
		snprintf(ev, sizeof(ev), "data: {\"choices\":[{\"text\":\"\",\"index\":0,"
			 "\"finish_reason\":\"length\"}],\"object\":\"text_completion\",%s}\n\n", tm);
		ok = chunk(t->fd, ev) && chunk(t->fd, "data: [DONE]\n\n") && write_all(t->fd, "0\r\n\r\n", 5);
	} else if (ok) {
		char body[8192], resp[8448];
		int bl = snprintf(body, sizeof(body), "{\"choices\":[{\"text\":\"%s\",\"index\":0,"
			 "\"finish_reason\":\"length\"}],\"object\":\"text_completion\",%s}", text, tm);
		int n = snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				 "Content-Length: %d\r\nConnection: keep-alive\r\n\r\n%s", bl, body);
		ok = write_all(t->fd, resp, (size_t)n);
		t->written = now_ns();
	}
	t->last = last;
	t->finished = now_ns();
	if (truth) {
		pthread_mutex_lock(&lock);
		fprintf(truth, "{\"x_request_id\":\"%s\",\"received\":%llu,\"slot\":%llu,\"first_token\":%llu,"
			"\"last_token\":%llu,\"written\":%llu,\"finished\":%llu,\"prompt_tokens\":%d,"
			"\"stream\":%s}\n", t->xrid, t->received, t->slot, t->first, t->last, t->written,
			t->finished, t->prompt_tokens, t->stream ? "true" : "false");
		fflush(truth);
		pthread_mutex_unlock(&lock);
	}
}

static void *slot_thread(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (!head)
			pthread_cond_wait(&queued, &lock);
		struct task *t = head;
		head = t->next;
		if (!head)
			tail = NULL;
		pthread_mutex_unlock(&lock);
		serve(t);
		pthread_mutex_lock(&lock);
		t->done = true;
		pthread_cond_broadcast(&finished);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static int json_int(const char *body, const char *key, int dflt)
{
	const char *p = strstr(body, key);

	return p ? atoi(p + strlen(key)) : dflt;
}

/* An HTTP thread: requests of one connection, each queued and waited for. */
static void *conn_thread(void *arg)
{
	int fd = (int)(long)arg;
	char *buf = malloc(1 << 20);
	size_t have = 0;

	while (buf) {
		char *end = NULL, *cl;
		ssize_t n;

		while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
			if (have == (1 << 20) || (n = recv(fd, buf + have, (1 << 20) - have, 0)) <= 0)
				goto out;
			have += (size_t)n;
		}
		size_t hl = (size_t)(end + 4 - buf), blen = 0;
		*end = '\0';
		if ((cl = strcasestr(buf, "\r\nContent-Length:")))
			blen = strtoul(cl + 17, NULL, 10);
		while (have < hl + blen) {
			if (hl + blen > (1 << 20) || (n = recv(fd, buf + have, (1 << 20) - have, 0)) <= 0)
				goto out;
			have += (size_t)n;
		}
		struct task t = {.fd = fd, .received = now_ns()};
		char *x = strcasestr(buf, "\r\nX-Request-Id:");
		if (x)
			sscanf(x + 15, " %79[^\r\n]", t.xrid);
		char save = buf[hl + blen];
		buf[hl + blen] = '\0';
		t.max_tokens = json_int(buf + hl, "\"max_tokens\":", 16);
		t.stream = strstr(buf + hl, "\"stream\":true") || strstr(buf + hl, "\"stream\": true");
		t.prompt_tokens = (int)(blen / 4) + 1; /* a tokenizer's ~4 bytes per token */
		buf[hl + blen] = save;
		if (t.max_tokens < 1)
			t.max_tokens = 1;
		pthread_mutex_lock(&lock);
		if (tail)
			tail->next = &t;
		else
			head = &t;
		tail = &t;
		pthread_cond_signal(&queued);
		while (!t.done)
			pthread_cond_wait(&finished, &lock);
		pthread_mutex_unlock(&lock);
		memmove(buf, buf + hl + blen, have - hl - blen);
		have -= hl + blen;
	}
out:
	free(buf);
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"port", required_argument, NULL, 'p'}, {"slots", required_argument, NULL, 's'},
		{"prompt-us-per-token", required_argument, NULL, 'P'},
		{"token-us", required_argument, NULL, 't'}, {"truth", required_argument, NULL, 'T'},
		{"ready-file", required_argument, NULL, 'r'}, {"help", no_argument, NULL, 'h'}, {}};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int opt, one = 1, ls;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'p': cfg.port = atoi(optarg); break;
		case 's': cfg.slots = atoi(optarg); break;
		case 'P': cfg.prompt_us = atof(optarg); break;
		case 't': cfg.token_us = atof(optarg); break;
		case 'T': cfg.truth = optarg; break;
		case 'r': cfg.ready = optarg; break;
		case 'h':
			printf("usage: llama-shaped --port N [--slots 1] [--prompt-us-per-token 40] "
			       "[--token-us 3000] [--truth FILE] [--ready-file FILE]\n");
			return 0;
		default: return 2;
		}
	}
	if (cfg.port <= 0 || cfg.port > 65535 || cfg.slots < 1 || cfg.slots > 64) {
		fprintf(stderr, "llama-shaped: --port 1..65535 and --slots 1..64 (see --help)\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (cfg.truth && !(truth = fopen(cfg.truth, "a"))) {
		perror(cfg.truth);
		return 1;
	}
	/* The truth's clock read once before any thread starts: the first
	 * clock_gettime of a process faults in the vDSO's data page, and a
	 * connection thread that made it after its recv waited 3.8 ms for the
	 * mm's lock (held by the next thread's stack mprotect), so its
	 * "received" mark came that late after the bytes were read. */
	(void)now_ns();
	a.sin_port = htons((unsigned short)cfg.port);
	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 128)) {
		fprintf(stderr, "llama-shaped: cannot listen on 127.0.0.1:%d: %s\n", cfg.port, strerror(errno));
		return 1;
	}
	for (int i = 0; i < cfg.slots; i++) {
		pthread_t th;
		pthread_create(&th, NULL, slot_thread, NULL);
		pthread_detach(th);
	}
	if (cfg.ready)
		fclose(fopen(cfg.ready, "w"));
	for (;;) {
		int fd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		pthread_t th;

		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pthread_create(&th, NULL, conn_thread, (void *)(long)fd);
		pthread_detach(th);
	}
}
