// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ring-buffer consumer (see recorder.h): every record into the capture,
 * socket payloads redacted first, the tracked set watched, stacks and their
 * symbols checkpointed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h" /* ls_now_ns */
#include "grow.h"
#include "h2.h"
#include "http.h"
#include "idmap.h"
#include "recorder.h"
#include "redact.h"
#include "sockio.h"

#define HELD_NS 100000000ull /* how long a record waits for the rest of a header frame */
#define H2_PROBES 16         /* payloads of a connection tested for HTTP/2 met mid-flight */

struct stream_state {
	bool in_secret[2];
	struct ls_body_conn body;
	/* an HTTP/2 connection (the client's preface came first): its two
	 * directions' frame readers, which scrub instead */
	struct ls_h2 *h2[2];
	struct ls_recorder *rec;
	/* per direction, a record whose last bytes begin a header frame that
	 * goes on in the next one: held back, unwritten, until then */
	uint8_t *held[2];
	size_t held_off[2], held_len[2]; /* the tail: its offset in the record */
	bool seen;  /* a payload of it came by: a preface is no longer first */
	bool http1; /* an HTTP/1.1 message began on it: not HTTP/2 */
	bool upstream; /* the tracked process wrote its first request: requests go out */
	bool tls;      /* its first bytes in were a TLS handshake: ciphertext, kept as it is */
	__u64 ssl_key; /* the SSL * tied to it (ssls), 0 none */
	uint8_t probes; /* payloads tested for whole HTTP/2 frames (a connection met mid-flight) */
};

/* The redaction state of a connection, created on first use (NULL: out of
 * memory). */
static struct stream_state *stream_get(struct ls_recorder *r, __u64 id)
{
	struct stream_state *ss = ls_idmap_get(&r->streams, id);

	if (ss || !id)
		return ss;
	ss = calloc(1, sizeof(*ss));
	if (ss && ls_idmap_put(&r->streams, id, ss)) {
		free(ss);
		ss = NULL;
	}
	return ss;
}

static void stream_free(struct stream_state *ss)
{
	if (ss) {
		free(ss->held[0]);
		free(ss->held[1]);
		ls_body_free(&ss->body);
		for (int d = 0; d < 2 && ss->h2[0]; d++) {
			ls_h2_free(ss->h2[d]);
			free(ss->h2[d]);
		}
		free(ss);
	}
}

/* A client's request head on an HTTP/2 connection: counted as HTTP/1.1 ones. */
static void h2_request_head(void *ctx, uint32_t stream, const struct ls_h2_headers *h, bool end)
{
	struct stream_state *ss = ctx;

	(void)stream, (void)end;
	if (h->m.method[0])
		ss->rec->request_heads++;
}

/* The scrubber lost a connection's frames: counted, the first reason kept. */
static void h2_lost(void *ctx, const char *why)
{
	struct stream_state *ss = ctx;

	if (!ss->rec->h2_lost++)
		snprintf(ss->rec->h2_lost_why, sizeof(ss->rec->h2_lost_why), "%s", why);
}

static const struct ls_h2_cb h2_requests = {.headers = h2_request_head, .lost = h2_lost};
static const struct ls_h2_cb h2_responses = {.lost = h2_lost};

/* The connection speaks HTTP/2: its payloads are scrubbed frame by frame
 * (out of memory: it stays with the HTTP/1.1 scrubber, which stars them). */
static void h2_begin(struct ls_recorder *r, struct stream_state *ss)
{
	struct ls_h2 *rx = calloc(1, sizeof(*rx)), *tx = calloc(1, sizeof(*tx));

	if (!rx || !tx || ls_h2_init(rx, true, &h2_requests, ss)) {
		free(rx), free(tx);
		return;
	}
	if (ls_h2_init(tx, false, &h2_responses, ss)) {
		ls_h2_free(rx);
		free(rx), free(tx);
		return;
	}
	rx->peer = tx, tx->peer = rx;
	rx->keep_data = tx->keep_data = r->capture_bodies;
	ss->rec = r;
	ss->h2[0] = rx, ss->h2[1] = tx;
}

/* What a connection carries, from its payloads: the first one a request the
 * process wrote (an upstream connection: requests go out, responses come
 * in), or an HTTP/2 preface; or, before any HTTP/1.1 message (a connection
 * met mid-flight), whole HTTP/2 frames: then header blocks cannot be read,
 * and are starred. */
static void classify(struct ls_recorder *r, struct stream_state *ss, const struct ls_ev_sock_io *e,
		     const struct ls_io_piece *piece, int npieces)
{
	bool first = !ss->seen;
	size_t n;

	ss->seen = true;
	if (ss->http1 || !npieces)
		return;
	if (first && e->dir == LS_IO_OUT &&
	    ls_http_starts_message(LS_HTTP_REQUEST, piece[0].data, piece[0].known)) {
		ss->http1 = ss->upstream = true; /* a proxy's hop to its upstream */
		return;
	}
	if (first && ls_h2_starts(piece[0].data, piece[0].known, e->dir == LS_IO_IN)) {
		h2_begin(r, ss);
		return;
	}
	if (ls_http_starts_message(e->dir == LS_IO_IN ? LS_HTTP_REQUEST : LS_HTTP_RESPONSE,
				   piece[0].data, piece[0].known)) {
		ss->http1 = true;
		return;
	}
	if (ss->probes++ >= H2_PROBES) /* not HTTP/2 by now: stop paying for the test */
		return;
	n = ls_io_whole(e, e->h.size, r->h2_probe, sizeof(r->h2_probe));
	if (!ls_h2_whole_frames(r->h2_probe, n, n))
		return;
	h2_begin(r, ss);
	if (ss->h2[0]) {
		ls_h2_midflight(ss->h2[0]);
		ls_h2_midflight(ss->h2[1]);
	}
}

static void write_record(struct ls_recorder *r, const struct ls_hdr *h);

/* A thread's last socket I/O on a tracked connection: what ties the TLS
 * plaintext it reads or writes next to a connection. */
struct tid_io {
	__u64 conn_id, ts;    /* the last call's connection and exit */
	__u64 in_conn, in_ts; /* the last read's */
};

#define PLAIN_KEY (1ull << 63) /* a TLS connection's plaintext redaction state */

static bool tls_conn(struct ls_recorder *r, __u64 conn_id)
{
	struct stream_state *ss = conn_id ? ls_idmap_get(&r->streams, conn_id) : NULL;

	return ss && ss->tls;
}

static __u64 ssl_key(__u32 pid, __u64 ssl)
{
	return (ssl ^ ((__u64)pid * 0x9e3779b97f4a7c15ull)) | 1;
}

/* A socket I/O record of a connection: remembered per thread; its first
 * bytes in tell a TLS connection (a handshake record). */
static void note_io(struct ls_recorder *r, struct stream_state *ss, const struct ls_ev_sock_io *e,
		    const struct ls_io_piece *piece, int npieces)
{
	struct tid_io *t = ls_idmap_get(&r->tids, e->h.tid ? e->h.tid : ~0u);

	if (ss && !ss->seen && e->dir == LS_IO_IN && npieces && piece[0].known >= 3 &&
	    piece[0].data[0] == 0x16 && piece[0].data[1] == 3 && piece[0].data[2] <= 4)
		ss->tls = true;
	if (!t && (t = calloc(1, sizeof(*t))) && ls_idmap_put(&r->tids, e->h.tid ? e->h.tid : ~0u, t)) {
		free(t);
		t = NULL;
	}
	if (!t)
		return;
	t->conn_id = e->conn_id;
	t->ts = e->h.ts;
	if (e->dir == LS_IO_IN) {
		t->in_conn = e->conn_id;
		t->in_ts = e->h.ts;
	}
}

static void ssl_tie(struct ls_recorder *r, __u64 key, __u64 conn)
{
	struct stream_state *ss;

	if ((__u64)(uintptr_t)ls_idmap_get(&r->ssls, key) == conn)
		return;
	ls_idmap_remove(&r->ssls, key);
	if (!ls_idmap_put(&r->ssls, key, (void *)(uintptr_t)conn) &&
	    (ss = ls_idmap_get(&r->streams, conn)))
		ss->ssl_key = key;
}

/* SSL_do_handshake on an SSL *: a handshake step follows the read of its
 * connection's handshake bytes on the same thread (asyncio and uvloop
 * call it from the read callback; the read that plaintext comes from may
 * be deferred past other connections' reads). */
static void ssl_handshake(struct ls_recorder *r, const struct ls_ev_sock_io *e)
{
	struct tid_io *t = ls_idmap_get(&r->tids, e->h.tid ? e->h.tid : ~0u);

	if (t && tls_conn(r, t->in_conn))
		ssl_tie(r, ssl_key(e->h.pid, e->skaddr), t->in_conn);
}

/*
 * The connection of a TLS plaintext record: the TLS connection its thread
 * moved bytes on inside the call (a socket BIO: SSL_read reads the socket
 * itself); else the connection its SSL * is tied to; else, for a read, the
 * TLS connection the thread last read (memory BIOs: asyncio and uvloop
 * read the ciphertext, then hand it to SSL_read; but a read resumed later
 * from the event loop, as uvicorn's resume_reading does, follows another
 * connection's, so this ties only an SSL * not met before). 0: none.
 */
static __u64 tls_tie(struct ls_recorder *r, const struct ls_ev_sock_io *e)
{
	struct tid_io *t = ls_idmap_get(&r->tids, e->h.tid ? e->h.tid : ~0u);
	__u64 key = ssl_key(e->h.pid, e->skaddr), conn = 0;

	if (t && t->ts >= e->ts_enter && tls_conn(r, t->conn_id))
		conn = t->conn_id;
	else if ((conn = (__u64)(uintptr_t)ls_idmap_get(&r->ssls, key)))
		;
	else if (t && e->dir == LS_IO_IN && tls_conn(r, t->in_conn))
		conn = t->in_conn;
	if (conn)
		ssl_tie(r, key, conn);
	return conn;
}

/* Writes direction d's held record with its tail starred: what followed it
 * never came (why), so its header frame cannot be read. */
static void flush_held(struct ls_recorder *r, struct stream_state *ss, int d, const char *why)
{
	if (!ss->held[d])
		return;
	memset(ss->held[d] + ss->held_off[d], '*', ss->held_len[d]);
	ls_h2_lose(ss->h2[d], why);
	write_record(r, (const struct ls_hdr *)ss->held[d]);
	free(ss->held[d]);
	ss->held[d] = NULL;
	r->nheld--;
}

void ls_recorder_flush_held(struct ls_recorder *r, __u64 before)
{
	r->oldest_held = UINT64_MAX;
	for (size_t i = 0; i < r->streams.cap && r->nheld; i++) {
		struct stream_state *ss = r->streams.keys[i] ? r->streams.vals[i] : NULL;
		for (int d = 0; ss && d < 2; d++) {
			__u64 ts = ss->held[d] ? ((const struct ls_hdr *)ss->held[d])->ts : 0;
			if (ss->held[d] && ts < before)
				flush_held(r, ss, d, "a header frame cut by a read or write whose rest "
					   "did not come within 100 ms");
			else if (ss->held[d] && ts < r->oldest_held)
				r->oldest_held = ts;
		}
	}
}

/*
 * An HTTP/2 record's payload, scrubbed frame by frame. A header frame cut
 * by the end of the previous record of this direction (held back) is
 * joined with this record's first bytes and read whole; a header frame cut
 * by this record's end holds this one back in turn. Returns false when e is
 * held (not to be written now).
 */
static bool scrub_h2(struct ls_recorder *r, struct stream_state *ss, struct ls_ev_sock_io *e,
		     struct ls_io_piece *piece, int npieces)
{
	int d = e->dir == LS_IO_OUT, n = ls_io_join(piece, npieces), i = 0;
	struct ls_h2 *h2 = ss->h2[d];
	size_t took;

	if (ss->held[d]) {
		uint8_t *tail = ss->held[d] + ss->held_off[d];
		size_t tl = ss->held_len[d], k = n ? piece[0].known : 0;
		uint8_t *join = r->h2_join;
		memcpy(join, tail, tl);
		if (k)
			memcpy(join + tl, piece[0].data, k);
		took = ls_h2_scrub(h2, join, tl + k, tl + (n ? piece[0].total : 0));
		if (took < tl + k) { /* cut again: more than two calls, not followed */
			memset(join + took, '*', tl + k - took);
			ls_h2_lose(h2, "a header frame over more than two reads or writes");
		}
		memcpy(tail, join, tl);
		if (k)
			memcpy(piece[0].data, join + tl, k);
		write_record(r, (const struct ls_hdr *)ss->held[d]);
		free(ss->held[d]);
		ss->held[d] = NULL;
		r->nheld--;
		i = 1;
	}
	for (; i < n; i++) {
		took = ls_h2_scrub(h2, piece[i].data, piece[i].known, piece[i].total);
		if (took == piece[i].total)
			continue;
		/* the last piece, all known, ends inside a header frame */
		uint8_t *copy = malloc(e->h.size);
		if (!copy) {
			memset(piece[i].data + took, '*', piece[i].known - took);
			ls_h2_lose(h2, "out of memory");
			return true;
		}
		memcpy(copy, e, e->h.size);
		ss->held[d] = copy;
		ss->held_off[d] = (size_t)(piece[i].data + took - (uint8_t *)e);
		ss->held_len[d] = piece[i].known - took;
		if (!r->nheld++ || e->h.ts < r->oldest_held)
			r->oldest_held = e->h.ts;
		return false;
	}
	return true;
}

/* The SSL * tied to a connection the process closed: freed with it, and
 * its address may serve the next connection. */
static void ssl_untie(struct ls_recorder *r, __u64 id)
{
	struct stream_state *ss = id ? ls_idmap_get(&r->streams, id) : NULL;

	if (ss && ss->ssl_key && (__u64)(uintptr_t)ls_idmap_get(&r->ssls, ss->ssl_key) == id)
		ls_idmap_remove(&r->ssls, ss->ssl_key);
	if (ss)
		ss->ssl_key = 0;
}

/* A connection ended: its state goes. */
static void stream_drop(struct ls_recorder *r, __u64 id)
{
	struct stream_state *ss = ls_idmap_get(&r->streams, id);

	ssl_untie(r, id);
	if (ss && ss->tls)
		stream_drop(r, id | PLAIN_KEY);
	ss = ls_idmap_get(&r->streams, id);

	for (int d = 0; ss && d < 2; d++)
		flush_held(r, ss, d, "the connection ended inside a header frame");
	stream_free(ls_idmap_remove(&r->streams, id));
}

/* Every record the recording keeps passes here: into the capture (when
 * one is written) and to the live taps (top, metrics, flight recorder), as
 * redacted as the file. */
static void write_record(struct ls_recorder *r, const struct ls_hdr *h)
{
	int err = r->w ? ls_writer_append(r->w, h) : 0;

	if (err && !r->write_err)
		r->write_err = err;
	for (int i = 0; i < r->ntaps; i++)
		r->taps[i].record(r->taps[i].ctx, h);
}

/* A process forked (ppid its parent) or a new image (ppid 0), for the
 * session's look at the files it maps. */
void ls_recorder_write(void *ctx, const struct ls_hdr *h)
{
	write_record(ctx, h);
}

static void proc_new(struct ls_recorder *r, pid_t pid, pid_t ppid)
{
	if (r->nproc_new >= LS_PROC_NEW_MAX) {
		r->proc_new_lost++;
		return;
	}
	GROW(r->proc_new, r->nproc_new, r->capproc_new);
	r->proc_new[r->nproc_new++] = (struct ls_proc_new){pid, ppid};
}

bool ls_recorder_proc_info(struct ls_recorder *r, pid_t pid)
{
	if (ls_proc_info(pid, ls_now_ns(), r->procbuf) <= 0)
		return false;
	write_record(r, (struct ls_hdr *)r->procbuf);
	if (ls_proc_ns(pid, ls_now_ns(), r->nsbuf) > 0)
		write_record(r, (struct ls_hdr *)r->nsbuf);
	if (r->py)
		ls_py_detect(r->py, pid);
	return true;
}

static __u64 use_key(__u32 pid, __s32 id)
{
	return ((__u64)pid << 32 | (__u32)id) + 1;
}

/* Adds key to the set of used stacks (linear probing, at most half full).
 * Bounded by the stack map's entries per process, however long the run. */
static void use_add(struct ls_recorder *r, __u64 key)
{
	size_t h;

	if ((r->nuses + 1) * 2 > r->capuses) {
		size_t nc = r->capuses ? r->capuses * 2 : 4096;
		__u64 *nu = calloc(nc, sizeof(*nu));
		if (!nu)
			return;
		for (size_t i = 0; i < r->capuses; i++) {
			if (!r->uses[i])
				continue;
			for (h = (r->uses[i] * 0x9e3779b97f4a7c15ull) >> 20 & (nc - 1); nu[h]; h = (h + 1) & (nc - 1))
				;
			nu[h] = r->uses[i];
		}
		free(r->uses);
		r->uses = nu;
		r->capuses = nc;
	}
	for (h = (key * 0x9e3779b97f4a7c15ull) >> 20 & (r->capuses - 1); r->uses[h];
	     h = (h + 1) & (r->capuses - 1))
		if (r->uses[h] == key)
			return;
	r->uses[h] = key;
	r->nuses++;
}

/* The executable mappings of every process with stacks, with build-ids, so
 * the capture can be symbolized elsewhere (or later, after --no-symbolize).
 * At the end, not in the consumer: a live process's maps are read again
 * first (libraries loaded since its first stack). */
void ls_recorder_mappings(struct ls_recorder *r)
{
	_Alignas(8) unsigned char buf[sizeof(struct ls_rec_mapping) + 4096];
	struct ls_rec_mapping *e = (void *)buf;
	struct ls_sym_mapping sm;
	pid_t pid;

	for (size_t p = 0; !ls_sym_process(r->sym, p, &pid); p++) {
		ls_sym_add_process(r->sym, pid); /* fails, harmlessly, once it exited */
		for (size_t i = 0; !ls_sym_mapping(r->sym, pid, i, &sm); i++) {
			size_t n = strnlen(sm.path, 4095) + 1;
			int idn;
			memset(e, 0, sizeof(*e));
			e->h.type = LS_REC_MAPPING;
			e->h.size = sizeof(*e) + n;
			e->h.ts = ls_now_ns();
			e->h.pid = e->h.tid = pid;
			e->start = sm.start;
			e->end = sm.end;
			e->pgoff = sm.pgoff;
			if (sm.file && (idn = ls_sym_build_id(r->sym, sm.file, e->build_id,
							     sizeof(e->build_id))) > 0)
				e->build_id_len = idn;
			e->path_len = n;
			memcpy(e + 1, sm.path, n - 1);
			((char *)(e + 1))[n - 1] = '\0';
			write_record(r, &e->h);
		}
	}
}

/* A stack seen in pid: read its mappings while the process lives, and
 * remember the stack for symbolization at the end. */
static void note_process(struct ls_recorder *r, __u32 pid)
{
	if (pid && r->sym && pid != r->last_pid) {
		if (!ls_sym_has_process(r->sym, pid))
			ls_sym_add_process(r->sym, pid);
		r->last_pid = pid;
	}
}

static void use_stack(struct ls_recorder *r, __u32 pid, __s32 ustack, __s32 kstack)
{
	if (ustack >= 0)
		note_process(r, pid);
	if (ustack >= 0)
		use_add(r, use_key(pid, ustack));
	if (kstack >= 0)
		use_add(r, use_key(0, kstack)); /* kernel stacks: pid 0 */
}

bool ls_recorder_known_pid(struct ls_recorder *r, pid_t pid, bool add)
{
	for (size_t i = 0; i < r->nknown; i++)
		if (r->known[i] == pid)
			return true;
	if (add) {
		GROW(r->known, r->nknown, r->capknown);
		r->known[r->nknown++] = pid;
	}
	return false;
}

/* What the consumer learns about the tracked set: a process that starts
 * listening on a followed port (tracked by BPF from that instant), and the
 * exit of a -p target. */
static void watch_targets(struct ls_recorder *r, const struct ls_hdr *h)
{
	if (h->type == LS_EV_TCP_STATE) {
		const struct ls_ev_tcp_state *e = (const void *)h;
		const struct ls_rec_proc_info *pi = (const void *)r->procbuf;

		if (e->newstate != 10 /* LISTEN */ || !h->pid || ls_recorder_known_pid(r, h->pid, true))
			return;
		/* the process record it gets also names it */
		bool named = ls_recorder_proc_info(r, h->pid);
		fprintf(stderr, "latsplit record: pid %u (%.*s) listens on :%u: tracking it\n", h->pid,
			LS_COMM_LEN, named ? pi->comm : "?", e->t.sport);
	} else if (h->type == LS_EV_PROC_EXIT && ((const struct ls_ev_proc_exit *)h)->group_dead) {
		ls_py_exit(r->py, h->pid);
		for (int i = 0; i < r->ntargets; i++)
			if (r->targets[i] == h->pid) {
				r->targets_alive--;
				fprintf(stderr, "latsplit record: pid %u exited (exit code %d)\n",
					h->pid, ((const struct ls_ev_proc_exit *)h)->exit_code >> 8);
			}
	}
}

/* The addresses of a stack user space unwound or was sent, symbolized at
 * the next checkpoint. */
static void note_addrs(struct ls_recorder *r, __u32 pid, const __u64 *ips, __u32 n)
{
	note_process(r, pid);
	for (__u32 i = 0; i < n; i++) {
		GROW(r->unwound, r->nunwound, r->capunwound);
		r->unwound[r->nunwound++] = (struct ls_sym_addr){pid, ips[i]};
	}
	if (r->nunwound > 1u << 16) /* bounded between checkpoints */
		r->nunwound = ls_sym_addr_unique(r->unwound, r->nunwound);
}

/* A copied user stack: unwound now, while its process and mappings are
 * there; the addresses go to the capture, the copy does not. */
static void unwind_raw(struct ls_recorder *r, const struct ls_ev_ustack_raw *e)
{
	_Alignas(8) unsigned char buf[sizeof(struct ls_rec_ustack) + LS_STACK_DEPTH * sizeof(__u64)];
	struct ls_rec_ustack *u = (void *)buf;
	__u64 *ips = (__u64 *)(u + 1);
	__u32 status;
	int n;

	if (!r->unwind || e->h.size < offsetof(struct ls_ev_ustack_raw, data) + e->len)
		return;
	n = ls_unwind(r->unwind, e, ips, LS_STACK_DEPTH, &status);
	memset(u, 0, sizeof(*u));
	u->h = e->h;
	u->h.type = LS_REC_USTACK;
	u->h.size = (__u16)(sizeof(*u) + n * sizeof(__u64));
	u->kind = e->kind;
	u->n = (__u32)n;
	u->status = status;
	write_record(r, &u->h);
	note_addrs(r, e->h.pid, ips, u->n);
}

/* A distinct user stack the kernel unwound by table: the capture's stack
 * record for its id; its addresses are symbolized at the next checkpoint. */
static void unwound_eh(struct ls_recorder *r, const struct ls_ev_ustack_eh *e)
{
	_Alignas(8) unsigned char buf[sizeof(struct ls_rec_stack) + LS_STACK_DEPTH * sizeof(__u64)];
	struct ls_rec_stack *st = (void *)buf;

	if (e->h.size < offsetof(struct ls_ev_ustack_eh, ips) || !e->n || e->n > LS_STACK_DEPTH ||
	    e->n > (e->h.size - offsetof(struct ls_ev_ustack_eh, ips)) / sizeof(__u64))
		return;
	if (e->h.pid) { /* pid 0: a blocked thread's kernel stack, interned alike */
		r->eh_stacks++;
		r->eh_frames += e->n;
		r->eh_fp_frames += e->fp_frames;
		r->eh_stopped[e->status & 3]++;
	}
	memset(st, 0, sizeof(*st));
	st->h.type = LS_REC_STACK;
	st->h.size = (__u16)(sizeof(*st) + e->n * sizeof(__u64));
	st->h.ts = e->h.ts;
	st->id = e->id;
	st->nips = e->n;
	memcpy(st + 1, e->ips, e->n * sizeof(__u64));
	write_record(r, &st->h);
	note_addrs(r, e->h.pid, e->ips, e->n);
}

int ls_recorder_on_record(void *ctx, void *data, size_t size)
{
	struct ls_recorder *r = ctx;
	const struct ls_hdr *h = data;
	bool held = false;

	if (size < sizeof(*h) || h->size > size)
		return 0;
	if (h->type == LS_EV_ENGINE_RING) { /* where to read; not itself written */
		if (h->size >= sizeof(struct ls_ev_engine_ring))
			ls_evrings_hello(&r->evr, data);
		r->per_type[h->type]++;
		return 0;
	}
	if (h->type == LS_EV_USTACK_EH) {
		unwound_eh(r, data);
		r->events++;
		r->per_type[h->type]++;
		return 0;
	}
	if (h->type == LS_EV_USTACK_RAW && h->size >= offsetof(struct ls_ev_ustack_raw, data)) {
		unwind_raw(r, data);
		r->events++;
		r->per_type[h->type]++;
		return 0;
	}
	if (h->type == LS_EV_SOCK_IO) {
		if (h->size < sizeof(struct ls_ev_sock_io) || h->size > sizeof(r->iobuf))
			return 0; /* not ours: never written unredacted */
		/* Header values that carry credentials never reach the file:
		 * each piece of the payload in turn (every iovec kept), the
		 * state carried across a piece boundary as across syscalls. */
		struct ls_ev_sock_io *e = (void *)r->iobuf;
		struct ls_io_piece piece[LS_IO_MAX_PIECES];
		int npieces;

		memcpy(r->iobuf, h, h->size);
		if (e->xmit & LS_IO_XMIT)
			r->xmit_folded++;
		if (e->arrive_dt)
			r->arrivals_folded++;
		npieces = ls_io_pieces(e, h->size, piece);
		if (e->call == LS_IO_SSL_HANDSHAKE) {
			ssl_handshake(r, e);
			return 0;
		}
		bool plain = e->call == LS_IO_SSL_READ || e->call == LS_IO_SSL_WRITE;
		if (plain && !(e->conn_id = tls_tie(r, e))) {
			r->tls_untied++; /* whose it is, nothing tells: not kept */
			r->events++;
			return 0;
		}
		struct stream_state *ss = stream_get(r, e->conn_id | (plain ? PLAIN_KEY : 0));
		if (!plain) {
			note_io(r, ss, e, piece, npieces);
			if (ss && ss->tls) /* ciphertext: nothing to redact */
				npieces = 0;
		} else {
			r->tls_calls++;
		}
		if (e->dir == LS_IO_IN && npieces &&
		    ls_http_starts_message(LS_HTTP_REQUEST, piece[0].data, piece[0].known))
			r->request_heads++;
		if (ss && !ss->h2[0] && npieces)
			classify(r, ss, e, piece, npieces);
		/* responses are what the process writes, but on its upstream
		 * connections, what it reads */
		bool resp = (e->dir == LS_IO_OUT) != (ss && ss->upstream);
		if (ss && ss->h2[0] && !scrub_h2(r, ss, e, piece, npieces))
			held = true;
		for (int i = 0; i < npieces && !(ss && ss->h2[0]); i++) {
			struct ls_io_piece *p = &piece[i];
			if (ss) {
				ls_redact_http(p->data, p->known, &ss->in_secret[resp]);
				if (p->known < p->total) /* the rest is not in the capture */
					ss->in_secret[resp] = false;
				if (!r->capture_bodies)
					ls_scrub_body(&ss->body, resp, p->data, p->known, p->total);
			} else {
				bool none = false; /* out of memory: credentials still go */
				ls_redact_http(p->data, p->known, &none);
			}
		}
		h = &e->h;
	}
	if (!held)
		write_record(r, h);
	if (r->nheld && h->ts > r->oldest_held + HELD_NS) /* a rest that did not come */
		ls_recorder_flush_held(r, h->ts - HELD_NS);
	if (h->type == LS_EV_PROC_EXIT)
		free(ls_idmap_remove(&r->tids, h->tid ? h->tid : ~0u));
	if (h->type == LS_EV_TCP_STATE || h->type == LS_EV_PROC_EXIT)
		watch_targets(r, h);
	else if (h->type == LS_EV_TCP_DESTROY)
		stream_drop(r, ((const struct ls_ev_tcp_destroy *)h)->conn_id);
	else if (h->type == LS_EV_SOCK_CLOSE)
		ssl_untie(r, ((const struct ls_ev_sock_close *)h)->conn_id);
	r->events++;
	if (h->type < LS_REC_MAX)
		r->per_type[h->type]++;
	if (h->type == LS_EV_SAMPLE) {
		const struct ls_ev_sample *e = data;
		use_stack(r, h->pid, e->ustack, e->kstack);
	} else if (h->type == LS_EV_SCHED_SWITCH) {
		const struct ls_ev_sched_switch *e = data;
		r->wakeups_folded += e->next_woken_dt != 0;
		if (e->prev_ustack >= 0 || e->prev_kstack >= 0)
			use_stack(r, h->pid, e->prev_ustack, e->prev_kstack);
	} else if (h->type == LS_EV_GPU_LAUNCH) {
		const struct ls_ev_gpu_launch *e = data;
		use_stack(r, h->pid, e->ustack, -1);
	} else if (h->type == LS_EV_PYSTACK && h->size >= offsetof(struct ls_ev_pystack, f)) {
		ls_py_seen(r->py, data, ls_recorder_write, r);
	}
	/* Process table: a new process, or a new program image. */
	if (h->type == LS_EV_PROC_FORK) {
		const struct ls_ev_proc_fork *e = data;
		if (e->child_pid == e->child_tid && e->child_pid != h->pid) {
			ls_recorder_proc_info(r, e->child_pid);
			proc_new(r, e->child_pid, h->pid);
		}
	} else if (h->type == LS_EV_PROC_EXEC) {
		ls_recorder_proc_info(r, h->pid);
		proc_new(r, h->pid, 0);
	}
	/* a ring's last events before its memory goes (a new image has its own) */
	if (r->evr.n && h->type == LS_EV_PROC_EXEC)
		ls_evrings_gone(&r->evr, h->pid, NULL, NULL);
	else if (r->evr.n && h->type == LS_EV_PROC_EXIT &&
		 h->size >= sizeof(struct ls_ev_proc_exit) &&
		 ((const struct ls_ev_proc_exit *)data)->group_dead)
		ls_evrings_gone(&r->evr, h->pid, ls_recorder_on_record, r);
	return 0;
}

struct stack_copy {
	__s32 id;
	int n;
	unsigned long long ips[LS_STACK_DEPTH];
};

static int copy_cmp(const void *a, const void *b)
{
	const struct stack_copy *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* The stack map into the capture, then every address of every used stack
 * symbolized, so the capture reports the same on another machine. */
static int addr_cmp(const void *a, const void *b)
{
	const struct ls_sym_addr *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ip > y->ip) - (x->ip < y->ip);
}

static void write_sym(struct ls_recorder *r, __u32 pid, __u64 ip)
{
	char name[512];
	_Alignas(8) unsigned char sbuf[sizeof(struct ls_rec_sym) + sizeof(name)];
	struct ls_rec_sym *sy = (void *)sbuf;
	size_t nl;

	ls_sym_resolve(r->sym, pid, ip, name, sizeof(name));
	nl = strlen(name) + 1;
	memset(sy, 0, sizeof(*sy));
	sy->h.type = LS_REC_SYM;
	sy->h.size = sizeof(*sy) + nl;
	sy->h.ts = ls_now_ns();
	sy->h.pid = pid;
	sy->ip = ip;
	sy->name_len = nl;
	memcpy(sy + 1, name, nl);
	write_record(r, &sy->h);
}

/* The stack map into the capture, and every address of every used stack
 * symbolized, so the capture reports the same on another machine. A
 * checkpoint: called every CHECKPOINT_NS while recording and at the end, it
 * writes only stacks and symbols not written yet, so a recording killed
 * with SIGKILL keeps the stacks of all but its last seconds. */
void ls_recorder_stacks(struct ls_recorder *r, bool symbolize)
{
	unsigned long long ips[LS_STACK_DEPTH];
	_Alignas(8) unsigned char buf[sizeof(struct ls_rec_stack) + sizeof(ips)];
	struct ls_rec_stack *st = (void *)buf;
	__u32 id = 0;
	bool have = false;
	int n;
	/* id -> its addresses, for symbolization */
	size_t cap = 0, nst = 0;
	struct stack_copy *all = NULL;

	while ((n = ls_bpf_stack_next(r->bpf, &id, &have, ips, LS_STACK_DEPTH)) > 0) {
		GROW(all, nst, cap);
		all[nst].id = id;
		all[nst].n = n;
		memcpy(all[nst].ips, ips, n * sizeof(ips[0]));
		nst++;
		if (id < r->capwritten * 64 && r->written[id / 64] >> (id % 64) & 1)
			continue; /* ids are never reused: its addresses are already there */
		if (id >= r->capwritten * 64) {
			size_t nc = (id / 64 + 1) * 2;
			__u64 *nw = realloc(r->written, nc * sizeof(*nw));
			if (!nw)
				break;
			memset(nw + r->capwritten, 0, (nc - r->capwritten) * sizeof(*nw));
			r->written = nw;
			r->capwritten = nc;
		}
		r->written[id / 64] |= 1ull << (id % 64);
		memset(st, 0, sizeof(*st));
		st->h.type = LS_REC_STACK;
		st->h.size = sizeof(*st) + n * sizeof(__u64);
		st->h.ts = ls_now_ns();
		st->id = id;
		st->nips = n;
		memcpy(st + 1, ips, n * sizeof(__u64));
		write_record(r, &st->h);
	}
	if (symbolize && r->sym && ((r->nuses && nst) || r->nunwound)) {
		struct ls_sym_addr *addrs = NULL;
		size_t na = 0, capa = 0;

		/* addresses of unwound stacks */
		for (size_t i = 0; i < r->nunwound; i++) {
			GROW(addrs, na, capa);
			addrs[na++] = r->unwound[i];
		}
		r->nunwound = 0;

		/* every (process, address) of a used stack, once */
		if (nst)
			qsort(all, nst, sizeof(*all), copy_cmp);
		for (size_t i = 0; i < r->capuses; i++) {
			if (!r->uses[i])
				continue;
			__u64 use = r->uses[i] - 1;
			struct stack_copy key = {.id = (__s32)(__u32)use};
			const struct stack_copy *found =
				nst ? bsearch(&key, all, nst, sizeof(*all), copy_cmp) : NULL;

			for (int j = 0; found && j < found->n; j++) {
				GROW(addrs, na, capa);
				addrs[na++] = (struct ls_sym_addr){(__u32)(use >> 32), found->ips[j]};
			}
		}
		na = ls_sym_addr_unique(addrs, na);
		/* less those a checkpoint already wrote; then they are done too */
		size_t nd = r->ndone;
		for (size_t i = 0; i < na; i++) {
			if (nd && bsearch(&addrs[i], r->done, nd, sizeof(*r->done), addr_cmp))
				continue;
			write_sym(r, addrs[i].pid, addrs[i].ip);
			GROW(r->done, r->ndone, r->capdone);
			r->done[r->ndone++] = addrs[i];
		}
		if (r->ndone > nd)
			qsort(r->done, r->ndone, sizeof(*r->done), addr_cmp);
		free(addrs);
	}
	free(all);
}

void ls_recorder_drops(struct ls_recorder *r)
{
	int ncpu = ls_bpf_ncpus();
	size_t size;
	struct ls_rec_drops *d;

	if (ncpu <= 0 || ncpu > LS_MAX_CPUS)
		return;
	size = sizeof(*d) + ncpu * sizeof(__u64);
	d = calloc(1, size);
	if (!d)
		return;
	d->h.type = LS_REC_DROPS;
	d->h.size = size;
	d->h.ts = ls_now_ns();
	d->ncpu = ncpu;
	/* events lost: the ring buffer's, and the engine rings' overwritten */
	d->total = ls_bpf_drops(r->bpf, (unsigned long long *)(d + 1), ncpu) + r->evr.lost;
	d->stack_errors = ls_bpf_stack_errors(r->bpf);
	write_record(r, &d->h);
	free(d);

	struct ls_rec_probe_skips sk = {.h = {.type = LS_REC_PROBE_SKIPS, .size = sizeof(sk)}};

	sk.total = ls_bpf_prog_skips(r->bpf, sk.top, sizeof(sk.top), &sk.top_n);
	if (sk.total) { /* only once there are some: most captures have none */
		sk.h.ts = ls_now_ns();
		write_record(r, &sk.h);
	}
}

void ls_recorder_free(struct ls_recorder *r)
{
	ls_evrings_free(&r->evr);
	for (size_t i = 0; i < r->streams.cap; i++)
		if (r->streams.keys[i])
			stream_free(r->streams.vals[i]);
	ls_py_free(r->py);
	r->py = NULL;
	ls_unwind_free(r->unwind);
	r->unwind = NULL;
	ls_eh_free(r->eh);
	r->eh = NULL;
	free(r->unwound);
	free(r->uses);
	free(r->known);
	free(r->proc_new);
	free(r->written);
	free(r->done);
	ls_idmap_free(&r->streams);
	for (size_t i = 0; i < r->tids.cap; i++)
		if (r->tids.keys[i])
			free(r->tids.vals[i]);
	ls_idmap_free(&r->tids);
	ls_idmap_free(&r->ssls);
}
