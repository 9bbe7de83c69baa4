/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The capture file format (DESIGN.md §5). user/capture.c is the only code
 * that reads or writes it; everything else goes through its API.
 *
 *   file   = file_hdr frame*
 *   frame  = frame_hdr zlib(records | columns(records))
 *   record = struct ls_hdr ... (events.h), 8-byte aligned, size in ls_hdr
 *
 * Both headers carry their own CRC32, the frame header also the CRC32 of its
 * compressed bytes, so a reader trusts nothing it has not checked. Frames
 * start with a magic so a reader can resynchronise after a damaged header.
 * The last frame of a complete capture has LS_FRAME_F_LAST and holds the
 * LS_REC_STATS trailer; a file without it was cut short.
 * All integers little-endian (the only byte order latsplit runs on today).
 */
#ifndef LATSPLIT_CAPTURE_H
#define LATSPLIT_CAPTURE_H

#include <linux/types.h>

#define LS_FILE_MAGIC "LATSPLT\x01"
/* 2: frames may be column-transformed (LS_FRAME_F_COLUMNS, user/core/
 * columns.h); 3: and field-predicted (LS_FRAME_F_PREDICT); 4: and have
 * their constant columns elided (LS_FRAME_F_CONST); 5: the prediction
 * takes a read's folded arrival too (columns.h's v5); versions 1 to 4 are
 * still read */
#define LS_FILE_VERSION 5
#define LS_FILE_VERSION_MIN 1
#define LS_FRAME_MAGIC 0x52465346u /* "FSFR" little-endian */
#define LS_FRAME_F_LAST 1
/* the records went through the column transform before zlib; raw_len is the
 * transformed length (version 2 on) */
#define LS_FRAME_F_COLUMNS 2
/* the records went through the field prediction before the column transform
 * (only with LS_FRAME_F_COLUMNS; version 3 on) */
#define LS_FRAME_F_PREDICT 4
/* the column-transformed records' constant columns are one byte each;
 * raw_len is the elided length (only with LS_FRAME_F_COLUMNS; version 4 on) */
#define LS_FRAME_F_CONST 8

/* Largest raw block a frame may hold; bigger is treated as corruption. */
#define LS_FRAME_MAX_RAW (16u << 20)

/* Sources active during the capture (file_hdr.sources). */
enum ls_source {
	LS_SRC_SCHED = 1ull << 0,
	LS_SRC_PROC = 1ull << 1,
	LS_SRC_TCP_STATE = 1ull << 2,
	LS_SRC_TCP_RETRANS = 1ull << 3,
	LS_SRC_TCP_SYNACK = 1ull << 4,
	LS_SRC_TCP_PROBE = 1ull << 5,
	LS_SRC_TCP_RESET = 1ull << 6,
	LS_SRC_TCP_DESTROY = 1ull << 7,
	LS_SRC_SOCK_IO = 1ull << 8,  /* socket I/O of tracked sockets */
	LS_SRC_ENGINE = 1ull << 9,   /* engine-event USDT probes attached */
	LS_SRC_GPU_UPROBE = 1ull << 10, /* libcuda uprobes attached */
	LS_SRC_SAMPLES = 1ull << 11,    /* cpu-clock stack sampling */
	LS_SRC_OFFCPU = 1ull << 12,     /* stacks of blocking switches */
	LS_SRC_TCP_XMIT = 1ull << 13,   /* net_dev_start_xmit of tracked connections */
	LS_SRC_OTLP_RECV = 1ull << 14,  /* engine spans received (record --otlp-receive) */
	/* socket I/O read at the socket tracepoints (record --sock-hooks), not
	 * the syscall ones */
	LS_SRC_SOCK_TP = 1ull << 15,
	LS_SRC_ATTACH_TP_BTF = 1ull << 62, /* tp_btf used (else raw_tp) */
};

struct ls_file_hdr {
	char magic[8];
	__u32 version;
	__u32 abi_version;
	__u32 hdr_size; /* sizeof(struct ls_file_hdr) when written */
	__u32 ncpus;
	__u64 realtime_ns;  /* CLOCK_REALTIME at ... */
	__u64 monotonic_ns; /* ... this CLOCK_MONOTONIC instant */
	__u64 sources;      /* enum ls_source bits */
	__u32 track_all;    /* 1: no filter (every process) */
	__u32 pad;
	char hostname[65];
	char release[65];
	char machine[32];
	char pad2[6];
	char cmdline[512]; /* latsplit's own command line, args space-separated */
	__u32 reserved[15];
	__u32 crc; /* CRC32 of every byte above */
};

struct ls_frame_hdr {
	__u32 magic;
	__u16 type; /* 0: records */
	__u16 flags;
	__u32 comp_len;
	__u32 raw_len;
	__u32 nrec;
	__u32 data_crc; /* CRC32 of the comp_len compressed bytes */
	__u64 seq;      /* frame number, from 0 */
	__u64 ts_first; /* smallest / largest record ts in the frame */
	__u64 ts_last;
	__u32 pad;
	__u32 hdr_crc; /* CRC32 of every byte above */
};

#endif /* LATSPLIT_CAPTURE_H */
