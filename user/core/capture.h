/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Capture writer and reader: the only API to the file format of
 * include/latsplit/capture.h.
 *
 * The writer batches records into blocks on the caller's thread and
 * compresses and writes them on its own thread, so a ring-buffer consumer
 * never waits for zlib or the disk unless the writer falls a whole pool of
 * blocks behind; such waits are counted (stalls) and reported.
 *
 * The reader checks every CRC, never trusts a length it has not bounded, and
 * keeps going past damage: it skips bad frames and resynchronises on the next
 * frame magic, and accounts for what it lost.
 */
#ifndef LATSPLIT_USER_CAPTURE_H
#define LATSPLIT_USER_CAPTURE_H

#include <stddef.h>
#include <stdbool.h>
#include "latsplit/events.h"
#include "latsplit/capture.h"

struct ls_writer;

struct ls_writer_opts {
	int zlib_level;    /* 0: default (1 — fast; see make bench) */
	size_t block_size; /* raw bytes per frame; 0: 1 MiB */
	int nblocks;       /* blocks in the pool; 0: 8 */
	bool plain;        /* frames without the column transform (bench) */
};

struct ls_writer_stats {
	__u64 records;
	__u64 frames;
	__u64 raw_bytes;     /* record bytes before compression */
	__u64 file_bytes;    /* bytes written, headers included */
	__u64 stalls;        /* appends that waited for a free block */
	__u64 stall_ns;      /* time spent waiting */
	int error;           /* first write error (negative errno), 0 if none */
};

/* Creates `path` (mode 0600, must not exist) and writes the header. */
int ls_writer_open(struct ls_writer **out, const char *path, const struct ls_file_hdr *hdr,
		   const struct ls_writer_opts *opts);
/* Copies one record (h->size bytes) into the current block. */
int ls_writer_append(struct ls_writer *w, const struct ls_hdr *rec);
/* Hands the current block to the writer thread even if not full. */
int ls_writer_flush(struct ls_writer *w);
/* Writes `trailer` (may be NULL) in a last frame, drains, fsyncs, closes. */
int ls_writer_close(struct ls_writer *w, const struct ls_hdr *trailer, struct ls_writer_stats *st);
void ls_writer_stats(struct ls_writer *w, struct ls_writer_stats *st);

/* Fills the fields of a file header that describe this host and now. */
void ls_file_hdr_init(struct ls_file_hdr *hdr, int argc, char **argv);

struct ls_reader;

struct ls_reader_stats {
	__u64 frames_ok;
	__u64 frames_bad;      /* CRC, zlib or record-structure failures: skipped */
	__u64 records;         /* records returned */
	__u64 records_lost;    /* records in frames that were skipped or cut */
	__u64 lost_ns;         /* time spanned by those frames, where known */
	__u64 bytes_skipped;   /* bytes not part of any good frame */
	__u64 truncated_at;    /* file offset where an incomplete frame starts */
	__u64 last_good_seq;   /* seq of the last good frame */
	bool truncated;        /* the file ends inside a frame */
	bool complete;         /* a last frame (trailer) was read */
	bool seq_gap;          /* frame numbers jumped: frames went missing */
};

/* Opens and checks the file header. On failure returns negative errno and
 * writes a one-line reason into err. */
int ls_reader_open(struct ls_reader **out, const char *path, char *err, size_t errlen);
/* The same over a capture already in memory (buf must outlive the reader). */
int ls_reader_open_mem(struct ls_reader **out, const void *buf, size_t len, char *err,
		       size_t errlen);
const struct ls_file_hdr *ls_reader_header(const struct ls_reader *r);
/* Next record: 1 and *rec set (valid until the next call), 0 at end. */
int ls_reader_next(struct ls_reader *r, const struct ls_hdr **rec);
/* No record a later ls_reader_next returns is older than this: the least
 * ts_first (frame header) of the frame being read and those after it, or of
 * those after it once it is read whole; UINT64_MAX when none follow; 0 when
 * unknown. The first call walks the frame headers. A frame whose records
 * belie its header shows as records out of order (ls_order_late). */
__u64 ls_reader_floor(struct ls_reader *r);
const struct ls_reader_stats *ls_reader_stats(const struct ls_reader *r);
void ls_reader_close(struct ls_reader *r);
/* One line describing losses, or "" when nothing was lost. */
void ls_reader_loss_line(const struct ls_reader *r, char *buf, size_t len);

/* Smallest valid size of a record of `type` (0 for unknown types). */
size_t ls_record_min_size(__u16 type);
const char *ls_type_name(__u16 type);
/* Comma-separated names of the sources in `bits`. */
void ls_sources_str(__u64 bits, char *buf, size_t len);

#endif /* LATSPLIT_USER_CAPTURE_H */
