/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The payload of a socket I/O record (events.h, struct ls_ev_sock_io): the
 * bytes kept of every iovec, and where they lie among the bytes the call
 * moved. Every reader of a payload (the request correlator, the recorder's
 * redaction, dump) walks it through here, so a record from a file is
 * checked once and the same way.
 */
#ifndef LATSPLIT_USER_SOCKIO_H
#define LATSPLIT_USER_SOCKIO_H

#include <stddef.h>
#include <stdint.h>
#include "latsplit/events.h"

/* `known` bytes at data, then total - known bytes the capture did not keep. */
struct ls_io_piece {
	uint8_t *data;
	size_t known, total;
};

#define LS_IO_MAX_PIECES (LS_IO_MAX_SEGS + 1)

/* Splits the call's e->bytes into pieces, in order, that together cover
 * every byte it moved; `size` is the record's size. The pieces point into
 * the record (writable for redaction when e is). A piece table that does
 * not fit the record, or does not add up, is taken as no payload at all:
 * one piece of e->bytes unknown bytes. Returns the count (0 when the call
 * moved none). */
int ls_io_pieces(const struct ls_ev_sock_io *e, size_t size, struct ls_io_piece out[LS_IO_MAX_PIECES]);

/* The bytes kept, how many of the call's bytes they leave out: for reasons
 * ("writev: 70 bytes moved, 46 kept"). */
size_t ls_io_kept(const struct ls_ev_sock_io *e, size_t size);
const char *ls_io_call_name(unsigned int call);
/* Joins each run of pieces whose bytes were all kept with the piece after
 * it (their kept bytes lie one after the other in the record): n pieces in
 * place, returns how many are left. For a reader that must see a frame
 * written as several iovecs (header, payload) in one piece. */
int ls_io_join(struct ls_io_piece *p, int n);
/* Every byte the call moved, when the capture kept them all, gathered into
 * buf (cap bytes at most); returns their count, 0 when some were not kept. */
size_t ls_io_whole(const struct ls_ev_sock_io *e, size_t size, uint8_t *buf, size_t cap);

#endif
