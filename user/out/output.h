/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Output files named with -o: a new or regular file only (never through a
 * symbolic link, never a FIFO or device), truncated, mode 0600 when new.
 */
#ifndef LATSPLIT_OUT_OUTPUT_H
#define LATSPLIT_OUT_OUTPUT_H

#include <stdio.h>

/* NULL with the reason in why ("-o PATH: ...; name a new or regular file"). */
FILE *ls_out_open(const char *path, char *why, size_t len);

#endif
