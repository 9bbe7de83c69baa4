// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Socket I/O payload pieces (see sockio.h).
 */
#include <string.h>

#include "sockio.h"

const char *ls_io_call_name(unsigned int call)
{
	static const char *const calls[] = {"read",     "readv",    "recvfrom", "recvmsg",
					    "write",    "writev",   "sendto",   "sendmsg",
					    "sendfile", "splice",   "sendmmsg", "recvmmsg",
					    "SSL_read", "SSL_write", "SSL_do_handshake"};

	return call < sizeof(calls) / sizeof(calls[0]) ? calls[call] : "?";
}

/* The piece table after the payload, or NULL when absent or not inside. */
static const struct ls_io_seg *seg_table(const struct ls_ev_sock_io *e, size_t size)
{
	size_t at = sizeof(*e) + (((size_t)e->cap_len + 7) & ~(size_t)7);

	if (!e->nseg || e->nseg > LS_IO_MAX_SEGS || size < at ||
	    (size - at) / sizeof(struct ls_io_seg) < e->nseg)
		return NULL;
	return (const struct ls_io_seg *)((const uint8_t *)e + at);
}

static int unknown_only(const struct ls_ev_sock_io *e, struct ls_io_piece *out)
{
	out[0] = (struct ls_io_piece){(uint8_t *)(e + 1), 0, e->bytes};
	return e->bytes ? 1 : 0;
}

int ls_io_pieces(const struct ls_ev_sock_io *e, size_t size, struct ls_io_piece out[LS_IO_MAX_PIECES])
{
	uint8_t *data = (uint8_t *)(e + 1);
	size_t avail = size > sizeof(*e) ? size - sizeof(*e) : 0, known = e->cap_len, at = 0;
	uint64_t pos = 0;
	const struct ls_io_seg *seg;
	int n = 0;

	if (known > avail)
		known = avail;
	if (known > e->bytes)
		known = e->bytes;
	if (!e->nseg) {
		out[0] = (struct ls_io_piece){data, known, e->bytes};
		return e->bytes ? 1 : 0;
	}
	if (!(seg = seg_table(e, size)))
		return unknown_only(e, out);
	for (unsigned int i = 0; i < e->nseg; i++) {
		struct ls_io_seg s;

		memcpy(&s, &seg[i], sizeof(s)); /* the table may be unaligned in a test's buffer */
		if (s.off < pos || s.len > known - at || (uint64_t)s.off + s.len > e->bytes)
			return unknown_only(e, out);
		if (s.off > pos) { /* bytes of the call before this piece */
			if (n)
				out[n - 1].total += s.off - pos;
			else
				out[n++] = (struct ls_io_piece){data, 0, s.off - pos};
		}
		out[n++] = (struct ls_io_piece){data + at, s.len, s.len};
		at += s.len;
		pos = (uint64_t)s.off + s.len;
	}
	if (at != known)
		return unknown_only(e, out);
	if (pos < e->bytes)
		out[n - 1].total += e->bytes - pos;
	return n;
}

size_t ls_io_kept(const struct ls_ev_sock_io *e, size_t size)
{
	struct ls_io_piece p[LS_IO_MAX_PIECES];
	size_t kept = 0;
	int n = ls_io_pieces(e, size, p);

	for (int i = 0; i < n; i++)
		kept += p[i].known;
	return kept;
}

int ls_io_join(struct ls_io_piece *p, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		if (k && p[k - 1].known == p[k - 1].total && p[k - 1].data + p[k - 1].known == p[i].data) {
			p[k - 1].known += p[i].known;
			p[k - 1].total += p[i].total;
		} else {
			p[k++] = p[i];
		}
	}
	return k;
}

size_t ls_io_whole(const struct ls_ev_sock_io *e, size_t size, uint8_t *buf, size_t cap)
{
	struct ls_io_piece piece[LS_IO_MAX_PIECES];
	int n = ls_io_pieces(e, size, piece);
	size_t at = 0;

	for (int i = 0; i < n; i++) {
		if (piece[i].known != piece[i].total || piece[i].known > cap - at)
			return 0;
		memcpy(buf + at, piece[i].data, piece[i].known);
		at += piece[i].known;
	}
	return at;
}
