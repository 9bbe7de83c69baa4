// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * OTLP/HTTP trace receiver for engine request spans (see otlp_recv.h).
 */
#include <arpa/inet.h>
#include <json-c/json.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <zlib.h>

#include "cli.h"
#include "grow.h"
#include "live/live.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"
#include "otlp_recv.h"
#include "proc.h"

#define MAX_BODY (16u << 20)     /* one export request, as sent or inflated */
#define MAX_QUEUED 65536         /* spans not yet taken by the recorder */

struct body {
	uint8_t *buf;
	size_t len, cap;
	bool too_big;
};

struct ls_otlp_recv {
	struct MHD_Daemon *mhd;
	uint16_t port;
	uint64_t realtime_ns, monotonic_ns;
	pthread_mutex_t lock;
	struct ls_rec_engine_span *q;
	size_t nq, capq;
	/* counted under lock */
	uint64_t posts, kept, ignored, undecodable, refused, queue_full, http_errors;
	char refused_why[96]; /* the first refusal's reason */
};

typedef Opentelemetry__Proto__Trace__V1__Span Span;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;

static const AnyValue *attr(const Span *sp, const char *key)
{
	for (size_t i = 0; i < sp->n_attributes; i++)
		if (sp->attributes[i]->key && !strcmp(sp->attributes[i]->key, key))
			return sp->attributes[i]->value;
	return NULL;
}

/* A duration attribute in seconds (double, or integer) as ns; false when
 * absent or not a sane duration. */
static bool attr_secs(const Span *sp, const char *key, uint64_t *ns)
{
	const AnyValue *v = attr(sp, key);
	double d;

	if (!v)
		return false;
	if (v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE)
		d = v->double_value;
	else if (v->value_case == OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE)
		d = (double)v->int_value;
	else
		return false;
	if (!(d >= 0) || d > 1e6)
		return false;
	*ns = (uint64_t)llround(d * 1e9);
	return true;
}

static uint32_t attr_count(const Span *sp, const char *key)
{
	const AnyValue *v = attr(sp, key);

	if (!v || v->value_case != OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE ||
	    v->int_value < 0)
		return 0;
	return v->int_value > UINT32_MAX ? UINT32_MAX : (uint32_t)v->int_value;
}

static uint64_t to_mono(uint64_t wall, uint64_t realtime_ns, uint64_t monotonic_ns)
{
	int64_t m;

	if (!wall)
		return 0;
	m = (int64_t)(wall - realtime_ns) + (int64_t)monotonic_ns;
	return m > 0 ? (uint64_t)m : 0;
}

/* One span into a record: false when it is not an engine request span. */
static bool span_record(const Span *sp, uint64_t realtime_ns, uint64_t monotonic_ns,
			struct ls_rec_engine_span *s)
{
	const AnyValue *id = attr(sp, "gen_ai.request.id");
	uint64_t queue = 0, ttft = 0, e2e = 0, prefill = 0;
	bool have_queue = attr_secs(sp, "gen_ai.latency.time_in_queue", &queue);
	bool have_ttft = attr_secs(sp, "gen_ai.latency.time_to_first_token", &ttft);
	bool have_prefill = attr_secs(sp, "gen_ai.latency.time_in_model_prefill", &prefill);

	if (!id || id->value_case != OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE ||
	    !id->string_value || !(have_queue || have_ttft))
		return false;
	memset(s, 0, sizeof(*s));
	s->h.type = LS_REC_ENGINE_SPAN;
	s->h.size = sizeof(*s);
	snprintf(s->request_id, sizeof(s->request_id), "%s", id->string_value);
	if (sp->trace_id.len == sizeof(s->trace_id))
		memcpy(s->trace_id, sp->trace_id.data, sizeof(s->trace_id));
	s->t_arrived = to_mono(sp->start_time_unix_nano, realtime_ns, monotonic_ns);
	if (!s->t_arrived)
		return false;
	if (have_ttft)
		s->t_first = s->t_arrived + ttft;
	if (attr_secs(sp, "gen_ai.latency.e2e", &e2e))
		s->t_finish = s->t_arrived + e2e;
	else
		s->t_finish = to_mono(sp->end_time_unix_nano, realtime_ns, monotonic_ns);
	if (have_prefill && s->t_first && s->t_first - s->t_arrived >= prefill) {
		s->t_sched = s->t_first - prefill;
		if (have_queue && s->t_sched - s->t_arrived >= queue)
			s->t_queued = s->t_sched - queue;
	} else if (have_queue) {
		s->t_queued = s->t_arrived;
		s->t_sched = s->t_arrived + queue;
	}
	s->prompt_tokens = attr_count(sp, "gen_ai.usage.prompt_tokens");
	s->completion_tokens = attr_count(sp, "gen_ai.usage.completion_tokens");
	return true;
}

/* One export being decoded: where its times map, who sent it, the records
 * kept (at most MAX_QUEUED) and the spans that were not engine requests'. */
struct decode {
	uint64_t realtime_ns, monotonic_ns, now;
	uint32_t pid;
	struct ls_rec_engine_span *v;
	size_t n, cap;
	uint64_t engine, ignored; /* engine request spans met; other spans */
};

static void offer(struct decode *d, const Span *sp)
{
	struct ls_rec_engine_span s;

	if (!span_record(sp, d->realtime_ns, d->monotonic_ns, &s)) {
		d->ignored++;
		return;
	}
	d->engine++;
	if (d->n >= MAX_QUEUED)
		return; /* counted as dropped by the caller */
	s.h.ts = d->now;
	s.h.pid = d->pid;
	GROW(d->v, d->n, d->cap);
	d->v[d->n++] = s;
}

/* An ExportTraceServiceRequest in protobuf: false when it is not one. */
static bool decode_protobuf(struct decode *d, const uint8_t *body, size_t len)
{
	Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceRequest *req =
		opentelemetry__proto__collector__trace__v1__export_trace_service_request__unpack(
			NULL, len, body);

	if (!req)
		return false;
	for (size_t i = 0; i < req->n_resource_spans; i++) {
		const Opentelemetry__Proto__Trace__V1__ResourceSpans *rs = req->resource_spans[i];
		for (size_t j = 0; j < rs->n_scope_spans; j++)
			for (size_t k = 0; k < rs->scope_spans[j]->n_spans; k++)
				offer(d, rs->scope_spans[j]->spans[k]);
	}
	opentelemetry__proto__collector__trace__v1__export_trace_service_request__free_unpacked(req,
												 NULL);
	return true;
}

/* ---- OTLP/HTTP JSON (the protobuf messages in JSON: lowerCamelCase
 * names, ids in hex, 64-bit integers as strings or numbers), decoded with
 * json-c into the protobuf-c structures the protobuf path fills ---- */

static json_object *jget(json_object *o, const char *key)
{
	json_object *v = NULL;

	return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v)
		       ? v
		       : NULL;
}

/* o's member key when it is an array (NULL otherwise), and its length. */
static json_object *jarray(json_object *o, const char *key)
{
	json_object *v = jget(o, key);

	return v && json_object_is_type(v, json_type_array) ? v : NULL;
}

static size_t jlen(json_object *a)
{
	return a ? json_object_array_length(a) : 0;
}

static uint64_t ju64(json_object *v)
{
	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_string))
		return strtoull(json_object_get_string(v), NULL, 10);
	return (uint64_t)json_object_get_int64(v);
}

/* Hex id into a byte buffer: its length when it is all hex, else 0. */
static size_t jhex(json_object *v, uint8_t *out, size_t cap)
{
	const char *s = v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	size_t n = strlen(s);

	if (!n || n % 2 || n / 2 > cap)
		return 0;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned int b;
		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return 0;
		out[i] = (uint8_t)b;
	}
	return n / 2;
}

#define JSON_MAX_ATTRS 64

/* One JSON span into the protobuf-c form, then offered as a protobuf one. */
static void json_span(struct decode *d, json_object *js)
{
	Opentelemetry__Proto__Common__V1__KeyValue kv[JSON_MAX_ATTRS], *kvp[JSON_MAX_ATTRS];
	Opentelemetry__Proto__Common__V1__AnyValue av[JSON_MAX_ATTRS];
	Span sp = OPENTELEMETRY__PROTO__TRACE__V1__SPAN__INIT;
	json_object *attrs = jarray(js, "attributes");
	uint8_t tid[16];
	size_t n = 0;

	for (size_t i = 0; i < jlen(attrs) && n < JSON_MAX_ATTRS; i++) {
		json_object *a = json_object_array_get_idx(attrs, i), *key = jget(a, "key"),
			    *val = jget(a, "value"), *x;
		if (!key || !json_object_is_type(key, json_type_string) || !val)
			continue;
		opentelemetry__proto__common__v1__key_value__init(&kv[n]);
		opentelemetry__proto__common__v1__any_value__init(&av[n]);
		kv[n].key = (char *)json_object_get_string(key);
		kv[n].value = &av[n];
		if ((x = jget(val, "stringValue")) && json_object_is_type(x, json_type_string)) {
			av[n].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
			av[n].string_value = (char *)json_object_get_string(x);
		} else if ((x = jget(val, "doubleValue"))) {
			av[n].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE;
			av[n].double_value = json_object_is_type(x, json_type_string)
						     ? strtod(json_object_get_string(x), NULL)
						     : json_object_get_double(x);
		} else if ((x = jget(val, "intValue"))) {
			av[n].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
			av[n].int_value = json_object_is_type(x, json_type_string)
						  ? strtoll(json_object_get_string(x), NULL, 10)
						  : json_object_get_int64(x);
		} else {
			continue;
		}
		kvp[n] = &kv[n];
		n++;
	}
	sp.n_attributes = n;
	sp.attributes = kvp;
	if ((sp.trace_id.len = jhex(jget(js, "traceId"), tid, sizeof(tid))))
		sp.trace_id.data = tid;
	sp.start_time_unix_nano = ju64(jget(js, "startTimeUnixNano"));
	sp.end_time_unix_nano = ju64(jget(js, "endTimeUnixNano"));
	offer(d, &sp);
}

/* An ExportTraceServiceRequest in OTLP's JSON: false when it is not one. */
static bool decode_json(struct decode *d, const uint8_t *body, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	json_object *root, *rss;

	if (!tok)
		return false;
	root = len <= INT32_MAX ? json_tokener_parse_ex(tok, (const char *)body, (int)len) : NULL;
	if (root && json_tokener_get_parse_end(tok) < len) { /* trailing bytes */
		json_object_put(root);
		root = NULL;
	}
	json_tokener_free(tok);
	rss = jget(root, "resourceSpans");
	if (!root || !json_object_is_type(root, json_type_object) ||
	    (rss && !json_object_is_type(rss, json_type_array))) {
		json_object_put(root);
		return false;
	}
	for (size_t i = 0; i < jlen(rss); i++) {
		json_object *sss = jarray(json_object_array_get_idx(rss, i), "scopeSpans");
		for (size_t j = 0; j < jlen(sss); j++) {
			json_object *spans = jarray(json_object_array_get_idx(sss, j), "spans");
			for (size_t k = 0; k < jlen(spans); k++)
				json_span(d, json_object_array_get_idx(spans, k));
		}
	}
	json_object_put(root);
	return true;
}

/* gzip (Content-Encoding: gzip) inflated into a new buffer; NULL when it
 * is not gzip or inflates past MAX_BODY. */
static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *out_len)
{
	z_stream z = {0};
	size_t cap = len * 4 + 4096;
	uint8_t *out = NULL;
	int rc = Z_OK;

	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return NULL;
	z.next_in = (uint8_t *)in;
	z.avail_in = (uInt)len;
	while (rc == Z_OK) {
		if (cap > MAX_BODY)
			cap = MAX_BODY;
		uint8_t *n = realloc(out, cap);
		if (!n)
			break;
		out = n;
		z.next_out = out + z.total_out;
		z.avail_out = (uInt)(cap - z.total_out);
		rc = inflate(&z, Z_NO_FLUSH);
		if (rc == Z_OK && z.avail_out == 0) {
			if (cap == MAX_BODY)
				break;
			cap *= 2;
		} else if (rc == Z_OK || rc == Z_BUF_ERROR) {
			break; /* input ended before the stream did */
		}
	}
	*out_len = z.total_out;
	inflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *text,
			     const char *type)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), (void *)text,
								      MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", type);
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result refuse(struct ls_otlp_recv *o, struct MHD_Connection *c, unsigned status,
			      const char *why)
{
	pthread_mutex_lock(&o->lock);
	if (!o->refused++)
		snprintf(o->refused_why, sizeof(o->refused_why), "%u: %s", status, why);
	pthread_mutex_unlock(&o->lock);
	return reply(c, status, why, "text/plain");
}

static uint32_t conn_pid(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	const uint32_t *pid = ci ? ci->socket_context : NULL;

	return pid ? *pid : 0;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct ls_otlp_recv *o = cls;
	struct body *b = *con_cls;
	const char *type, *enc;
	uint8_t *data, *inflated = NULL;
	size_t len;
	bool ok;

	(void)version;
	if (!b) {
		if (!(b = calloc(1, sizeof(*b))))
			return MHD_NO;
		*con_cls = b;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!b->too_big && b->len + *upload_size > MAX_BODY)
			b->too_big = true;
		if (!b->too_big) {
			if (b->len + *upload_size > b->cap) {
				size_t cap = b->cap ? b->cap : 65536;
				while (cap < b->len + *upload_size)
					cap *= 2;
				uint8_t *n = realloc(b->buf, cap);
				if (!n)
					return MHD_NO;
				b->buf = n;
				b->cap = cap;
			}
			memcpy(b->buf + b->len, upload, *upload_size);
			b->len += *upload_size;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "POST"))
		return refuse(o, c, MHD_HTTP_METHOD_NOT_ALLOWED, "POST OTLP traces to /v1/traces");
	if (strcmp(url, "/v1/traces"))
		return refuse(o, c, MHD_HTTP_NOT_FOUND, "only traces are received: POST /v1/traces");
	type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	bool json = type && !strncasecmp(type, "application/json", 16);
	if (type && !json && strncasecmp(type, "application/x-protobuf", 22))
		return refuse(o, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
			      "OTLP/HTTP takes application/x-protobuf or application/json");
	if (b->too_big)
		return refuse(o, c, MHD_HTTP_CONTENT_TOO_LARGE, "export request over 16 MiB");
	data = b->buf;
	len = b->len;
	enc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
	if (enc && !strcasecmp(enc, "gzip")) {
		if (!(inflated = gunzip(b->buf, b->len, &len)))
			return refuse(o, c, MHD_HTTP_BAD_REQUEST, "bad gzip body, or over 16 MiB");
		data = inflated;
	} else if (enc && strcasecmp(enc, "identity")) {
		return refuse(o, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
			      "Content-Encoding gzip or none only");
	}
	/* decoded before the queue's lock is taken, then moved in */
	struct decode d = {.realtime_ns = o->realtime_ns, .monotonic_ns = o->monotonic_ns,
			   .now = ls_now_ns(), .pid = conn_pid(c)};
	ok = (json ? decode_json : decode_protobuf)(&d, data ? data : (const uint8_t *)"", len);
	free(inflated);
	pthread_mutex_lock(&o->lock);
	o->posts++;
	if (!ok) {
		o->undecodable++;
	} else {
		size_t room = MAX_QUEUED - o->nq, take = d.n < room ? d.n : room;
		o->ignored += d.ignored;
		o->queue_full += d.engine - take; /* past the queue's bound: dropped, counted */
		for (size_t i = 0; i < take; i++) {
			GROW(o->q, o->nq, o->capq);
			o->q[o->nq++] = d.v[i];
		}
		o->kept += take;
	}
	pthread_mutex_unlock(&o->lock);
	free(d.v);
	if (!ok) /* counted as undecodable */
		return reply(c, MHD_HTTP_BAD_REQUEST, "not an OTLP ExportTraceServiceRequest",
			     "text/plain");
	/* an empty ExportTraceServiceResponse: all accepted */
	return json ? reply(c, MHD_HTTP_OK, "{}", "application/json")
		    : reply(c, MHD_HTTP_OK, "", "application/x-protobuf");
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct body *b = *con_cls;

	(void)cls, (void)c, (void)toe;
	if (b) {
		free(b->buf);
		free(b);
		*con_cls = NULL;
	}
}

/* Each connection's sender (the engine process), looked up once. */
static void connection(void *cls, struct MHD_Connection *c, void **socket_context,
		       enum MHD_ConnectionNotificationCode code)
{
	struct ls_otlp_recv *o = cls;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		free(*socket_context);
		*socket_context = NULL;
		return;
	}
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	uint32_t *pid = malloc(sizeof(*pid));
	uint16_t port = 0;

	if (!pid)
		return;
	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
		port = ntohs(((const struct sockaddr_in *)ci->client_addr)->sin_port);
	else if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET6)
		port = ntohs(((const struct sockaddr_in6 *)(const void *)ci->client_addr)->sin6_port);
	*pid = port ? (uint32_t)ls_proc_tcp_owner(port, o->port) : 0;
	*socket_context = pid;
}

static void http_log(void *ctx, const char *fmt, va_list ap)
{
	struct ls_otlp_recv *o = ctx;

	(void)fmt, (void)ap;
	__atomic_fetch_add(&o->http_errors, 1, __ATOMIC_RELAXED);
}

struct ls_otlp_recv *ls_otlp_recv_start(const char *spec, uint64_t realtime_ns,
					uint64_t monotonic_ns, char *err, size_t len)
{
	struct sockaddr_storage ss;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	struct ls_otlp_recv *o;

	if (ls_parse_listen("--otlp-receive", spec, &ss, err, len))
		return NULL;
	if (!(o = calloc(1, sizeof(*o)))) {
		snprintf(err, len, "--otlp-receive: out of memory");
		return NULL;
	}
	pthread_mutex_init(&o->lock, NULL);
	o->realtime_ns = realtime_ns;
	o->monotonic_ns = monotonic_ns;
	o->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* the logger first: libmicrohttpd warns through its own otherwise */
	o->mhd = MHD_start_daemon(flags, o->port, NULL, NULL, answer, o, MHD_OPTION_EXTERNAL_LOGGER,
				  http_log, o, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
				  MHD_OPTION_NOTIFY_COMPLETED, completed, o,
				  MHD_OPTION_NOTIFY_CONNECTION, connection, o, MHD_OPTION_END);
	if (!o->mhd) {
		snprintf(err, len, "--otlp-receive %s: cannot listen there (in use, or not an address "
			 "of this host?)", spec);
		ls_otlp_recv_free(o);
		return NULL;
	}
	return o;
}

void ls_otlp_recv_take(struct ls_otlp_recv *o, void (*emit)(void *ctx, const struct ls_hdr *h),
		       void *ctx)
{
	struct ls_rec_engine_span *q;
	size_t n;

	pthread_mutex_lock(&o->lock);
	q = o->q;
	n = o->nq;
	o->q = NULL;
	o->nq = o->capq = 0;
	pthread_mutex_unlock(&o->lock);
	for (size_t i = 0; i < n; i++)
		emit(ctx, &q[i].h);
	free(q);
}

void ls_otlp_recv_summary(const struct ls_otlp_recv *o, char *buf, size_t len)
{
	struct ls_otlp_recv *m = (struct ls_otlp_recv *)o;
	char first[128] = "";

	pthread_mutex_lock(&m->lock);
	if (o->refused)
		snprintf(first, sizeof(first), " (first: %s)", o->refused_why);
	snprintf(buf, len,
		 "OTLP receiver: %llu export requests, %llu engine request spans kept, %llu other "
		 "spans left out, %llu bodies not OTLP, %llu requests refused%s, %llu spans "
		 "dropped (queue full), %llu HTTP connection errors",
		 (unsigned long long)o->posts, (unsigned long long)o->kept,
		 (unsigned long long)o->ignored, (unsigned long long)o->undecodable,
		 (unsigned long long)o->refused, first, (unsigned long long)o->queue_full,
		 (unsigned long long)__atomic_load_n(&o->http_errors, __ATOMIC_RELAXED));
	pthread_mutex_unlock(&m->lock);
}

void ls_otlp_recv_stop(struct ls_otlp_recv *o)
{
	if (o && o->mhd) {
		MHD_stop_daemon(o->mhd);
		o->mhd = NULL;
	}
}

void ls_otlp_recv_free(struct ls_otlp_recv *o)
{
	if (!o)
		return;
	ls_otlp_recv_stop(o);
	pthread_mutex_destroy(&o->lock);
	free(o->q);
	free(o);
}
