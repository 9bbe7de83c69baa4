// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Live mode (see live.h). The metrics endpoint is libmicrohttpd's, with its
 * own thread; the histograms it reads are guarded by one mutex.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cli.h"
#include "live.h"

/* Prometheus counts a request at delivery and its parts at the final
 * split (ls_prom_add). */
static int live_request(void *ctx, const struct ls_request_view *v)
{
	struct ls_live *l = ctx;

	pthread_mutex_lock(&l->lock);
	if (v->final)
		ls_prom_add(&l->prom, v->r, v->s);
	else
		ls_prom_delivered(&l->prom, v->r, v->s);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

int ls_live_init(struct ls_live *l, const struct ls_file_hdr *h, const struct ls_sink *more,
		 size_t nmore, char *err, size_t len)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	ls_prom_init(&l->prom);
	l->sinks[l->nsinks++] = (struct ls_sink){.name = "live", .request = live_request, .ctx = l,
						 .provisional = true};
	for (size_t i = 0; i < nmore && l->nsinks < LS_LIVE_SINKS; i++)
		l->sinks[l->nsinks++] = more[i];
	if (ls_analysis_begin(&l->a, h, l->sinks, l->nsinks, err, len))
		return -1;
	ls_analysis_live(&l->a);
	l->started = true;
	return 0;
}

void ls_live_record(void *ctx, const struct ls_hdr *rec)
{
	struct ls_live *l = ctx;

	if (l->started && ls_analysis_push(&l->a, rec)) {
		/* out of memory, or a sink failed: the capture still holds it all */
		fprintf(stderr, "latsplit record: live analysis stopped: %s (the capture is whole)\n",
			ls_analysis_error(&l->a));
		l->started = false;
	}
}

void ls_live_tick(struct ls_live *l, uint64_t now, uint64_t drops, uint64_t stacks_lost)
{
	if (!l->started)
		return;
	ls_analysis_advance(&l->a, now);
	const struct ls_gpu_summary *g = ls_timeline_gpu_summary(l->a.tl);
	double span = l->a.now > l->a.first_ts ? (double)(l->a.now - l->a.first_ts) : 0;
	pthread_mutex_lock(&l->lock);
	l->prom.drops = drops;
	l->prom.stacks_lost = stacks_lost;
	l->prom.in_flight = ls_analysis_in_flight(&l->a);
	l->prom.gpu_busy_ratio = ls_timeline_has_gpu(l->a.tl) && g->ndev && span > 0
					 ? g->dev_busy_ns[0] / span
					 : -1;
	pthread_mutex_unlock(&l->lock);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_cls)
{
	struct ls_live *l = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char *buf = NULL;
	size_t len = 0;
	unsigned status = MHD_HTTP_OK;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)req_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char no[] = "only GET\n";
		resp = MHD_create_response_from_buffer(sizeof(no) - 1, (void *)no,
						       MHD_RESPMEM_PERSISTENT);
		ret = MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return MHD_NO;
	if (!strcmp(url, "/metrics")) {
		pthread_mutex_lock(&l->lock);
		l->scrapes++;
		ls_prom_write(f, &l->prom);
		pthread_mutex_unlock(&l->lock);
	} else {
		fprintf(f, "latsplit: metrics are at /metrics\n");
		status = MHD_HTTP_NOT_FOUND;
	}
	fclose(f);
	resp = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

int ls_parse_listen(const char *flag, const char *spec, struct sockaddr_storage *ss, char *err,
		    size_t len)
{
	char host[128] = "127.0.0.1";
	const char *colon = strrchr(spec, ':');
	unsigned long port;

	memset(ss, 0, sizeof(*ss));
	if (colon && colon - spec > 0) {
		size_t n = colon - spec;
		if (n >= sizeof(host))
			goto bad;
		memcpy(host, spec, n);
		host[n] = '\0';
	}
	if (!ls_parse_uint(colon ? colon + 1 : spec, 65535, &port) || !port)
		goto bad;
	if (host[0] == '[') {
		struct sockaddr_in6 *a6 = (void *)ss;
		size_t n = strlen(host);
		if (n < 3 || host[n - 1] != ']')
			goto bad;
		host[n - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
			goto bad;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		return 0;
	}
	struct sockaddr_in *a4 = (void *)ss;
	if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
		goto bad;
	a4->sin_family = AF_INET;
	a4->sin_port = htons(port);
	return 0;
bad:
	snprintf(err, len, "%s %s: expected [ADDR:]PORT, e.g. 127.0.0.1:9464 or [::1]:9464", flag,
		 spec);
	return -1;
}

/* libmicrohttpd's messages (a client that went away, a connection refused
 * at the limit): counted, not one line each on record's stderr, where any
 * local process could flood them. */
static void http_log(void *ctx, const char *fmt, va_list ap)
{
	struct ls_live *l = ctx;

	(void)fmt, (void)ap;
	__atomic_fetch_add(&l->http_errors, 1, __ATOMIC_RELAXED);
}

int ls_live_serve(struct ls_live *l, const char *spec, char *err, size_t len)
{
	struct sockaddr_storage ss;
	/* epoll: the connection limit is not select()'s; slow clients (a
	 * scraper that never finishes its request) are dropped after 3 s, and
	 * 20 of them no longer deny every scrape (16 connections, 10 s once) */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;

	if (ls_parse_listen("--metrics", spec, &ss, err, len))
		return -1;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* the logger first: libmicrohttpd warns through its own otherwise (it
	 * did, once per daemon, and the warning was counted as an error) */
	l->mhd = MHD_start_daemon(flags, ntohs(((struct sockaddr_in *)&ss)->sin_port), NULL, NULL,
				  answer, l, MHD_OPTION_EXTERNAL_LOGGER, http_log, l,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_LIMIT, 512u, MHD_OPTION_CONNECTION_TIMEOUT, 3u,
				  MHD_OPTION_END);
	if (!l->mhd) {
		snprintf(err, len, "--metrics %s: cannot listen there (in use, or not an address "
			 "of this host?)", spec);
		return -1;
	}
	return 0;
}

void ls_live_finish(struct ls_live *l)
{
	char err[128];

	if (l->mhd) {
		MHD_stop_daemon(l->mhd);
		l->mhd = NULL;
	}
	if (l->started) {
		ls_analysis_end(&l->a, err, sizeof(err));
		l->started = false;
	}
}

void ls_live_free(struct ls_live *l)
{
	if (!l->nsinks)
		return; /* never initialised */
	ls_live_finish(l);
	ls_analysis_free(&l->a);
	pthread_mutex_destroy(&l->lock);
}
