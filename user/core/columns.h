/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The column transform of a capture frame (LS_FRAME_F_COLUMNS), applied to a
 * frame's records before zlib and undone after it.
 *
 * Records of one kind (same type and size) are alike field by field: the
 * same pid, the same small sizes, timestamps a few microseconds apart. Laid
 * out record after record, zlib sees that only through its 32 KiB window and
 * 3-byte matches; laid out byte column by byte column, the sameness becomes
 * runs. So the transform:
 *   1. replaces each ts by its difference to the previous record's ts
 *      (wrapping u64), in the frame's order;
 *   2. groups the records by (type, size) in order of first appearance;
 *   3. writes each group's records byte-transposed: byte 0 of every record,
 *      then byte 1, ...
 * Encoded layout (little-endian):
 *   u16 ngroups (1..255)
 *   nrec x u8  group of each record, in the frame's order
 *   ngroups x { u16 type; u16 size; u32 count }
 *   for each group: size x count bytes, column-major
 * The encoded frame is 2 + 8 * ngroups + nrec bytes longer than the records.
 */
#ifndef LATSPLIT_COLUMNS_H
#define LATSPLIT_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes ls_columns_encode may need for `len` bytes of `nrec` records. */
size_t ls_columns_bound(size_t len, uint32_t nrec);

/* Encodes the nrec records in in[0..len) into out (ls_columns_bound bytes).
 * Returns the encoded length, or 0 when the frame is not worth or not fit
 * for it (more than 255 kinds, a malformed record): write it plain then. */
size_t ls_columns_encode(const unsigned char *in, size_t len, uint32_t nrec, unsigned char *out);

/* Decoded length of an encoded frame, or 0 when its header is damaged. */
size_t ls_columns_decoded_len(const unsigned char *in, size_t len, uint32_t nrec);

/* Decodes in[0..len) into out (ls_columns_decoded_len bytes). 0, or
 * -EBADMSG when the frame does not hold together. */
int ls_columns_decode(const unsigned char *in, size_t len, uint32_t nrec, unsigned char *out,
		      size_t outlen);

/*
 * Constant-column elision (LS_FRAME_F_CONST, file version 4), done with the
 * column transform (ls_columns_encode_elided) and undone before its decoding.
 * A column that holds one byte value throughout its group (a payload's
 * header line every request repeats, a field no record changes) is kept as
 * that one byte: zlib then reads a seventh of the bytes on a busy HTTP
 * server's frames rather than walking runs. Layout: the encoded header as
 * above (u16 ngroups, the group bytes, the group table); each group's
 * columns in order, a constant one as 1 byte, any other whole (count
 * bytes); then each group's bitmap, ceil(size / 8) bytes, bit i % 8 of byte
 * i / 8 set when column i is kept as one byte.
 */

/* ls_columns_encode with the constant columns elided: *elided says whether
 * they were (when that makes the frame shorter), else the frame is what
 * ls_columns_encode writes. out has ls_columns_bound bytes. */
size_t ls_columns_encode_elided(const unsigned char *in, size_t len, uint32_t nrec,
				unsigned char *out, bool *elided);

/* Length of an elided frame with its columns whole again (what
 * ls_columns_decode takes), or 0 when it does not hold together. */
size_t ls_columns_expanded_len(const unsigned char *in, size_t len, uint32_t nrec);

/* Undoes the elision into out (ls_columns_expanded_len bytes). 0, or
 * -EBADMSG. */
int ls_columns_expand(const unsigned char *in, size_t len, uint32_t nrec, unsigned char *out,
		      size_t outlen);

/*
 * Field prediction (LS_FRAME_F_PREDICT, file version 3; a folded arrival's
 * fields too from version 5, marked v5 below), done in place on a
 * frame's records before the column transform and undone after it. A field
 * that follows from another field of its record, or from the frame's last
 * record of the same connection or thread, is replaced by its difference to
 * that prediction (u32 and u64 differences wrap; names are XORed): mostly
 * zero then, where sequence numbers and names were as random as a column
 * gets.
 *   sock_io:      ts_enter by ts - ts_enter; seq by seq minus where the
 *                 connection's (conn_id) last sock_io in the same direction
 *                 left the stream (its seq + bytes); then conn_id, skaddr
 *                 and fd XORed with the thread's (h.tid) last sock_io's.
 *                 v5: a folded arrival's (arrive_dt not 0) arrive_ack by
 *                 its difference to where the connection's last write
 *                 left its stream, arrive_srtt_us to the connection's last
 *                 srtt (a tcp_probe's or a folded arrival's).
 *   tcp_probe:    seq by seq - rcv_nxt, ack_seq by ack_seq - snd_una,
 *                 snd_nxt by snd_nxt - snd_una; then rcv_nxt, snd_una,
 *                 srtt_us, snd_wnd and snd_cwnd by their difference to the
 *                 connection's last tcp_probe's.
 *   sched_switch: prev's pid, prio and comm (by h.tid) and next's (by
 *                 next_tid) XORed with what the last sched_switch naming that
 *                 thread said of it; a folded wakeup's waker_pid/tid (ABI 7,
 *                 next_woken_dt not 0) with next's last folded waker.
 * Only records at least their type's full size are touched (a sched_switch
 * of ABI 6's size: the fields it has); the keys (tids, next_woken_dt,
 * dir, and conn_id once the thread's XOR is undone) are what decoding
 * reads first. State starts empty in every frame (a frame
 * decodes alone) and holds up to LS_PREDICT_KEYS connections and threads;
 * past that a new one is predicted from zeros, on both sides alike.
 */
#define LS_PREDICT_KEYS 3072

/* The file version whose prediction ls_predict_encode makes. */
#define LS_PREDICT_VERSION 5

/* Predicts nrec records in recs[0..len) in place. 0, or -EINVAL (nothing
 * changed) when they are not nrec whole records; -ENOMEM (nothing changed). */
int ls_predict_encode(unsigned char *recs, size_t len, uint32_t nrec);

/* Undoes the prediction of a file of `version` (3 and 4: without the v5
 * fields; 5: ls_predict_encode's) in place. 0, or -EBADMSG / -ENOMEM. */
int ls_predict_decode(unsigned char *recs, size_t len, uint32_t nrec, int version);

#endif
