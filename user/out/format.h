/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Renders records and capture headers as text (perf-script style, one line
 * per record) or as JSON lines. Used by `dump`; the names it prints are the
 * ones other outputs use.
 */
#ifndef LATSPLIT_USER_FORMAT_H
#define LATSPLIT_USER_FORMAT_H

#include <stdbool.h>
#include <stdio.h>
#include "attribute.h" /* LS_NULL */
#include "requests.h" /* ls_addr_str */
#include "latsplit/events.h"
#include "latsplit/capture.h"

const char *ls_tcp_state_name(__u32 state);
/* "a.b.c.d:port" or "[v6]:port" for one side of a tuple. */
void ls_format_header(FILE *out, const struct ls_file_hdr *h, bool json);
/* base_ts: subtracted from ts in text output (0: print absolute). */
void ls_format_record(FILE *out, const struct ls_hdr *rec, __u64 base_ts, bool json);

/* ns as milliseconds for tables: 3 decimals below 10 ms, else 1; "-" for
 * LS_NULL. */
void ls_fmt_ms(char *buf, size_t len, uint64_t ns);

#endif
