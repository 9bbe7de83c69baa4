/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one JSON writer of the output sinks: strings escaped per RFC 8259
 * (quote, backslash, control characters; other bytes pass through), and the
 * project's null convention (LS_NULL numbers and empty strings are null).
 */
#ifndef LATSPLIT_OUT_JSON_H
#define LATSPLIT_OUT_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* "s", escaped. */
void ls_json_string(FILE *out, const char *s);
/* "key":"value" (null when v is NULL or empty), then a comma if asked. */
void ls_json_kv_str(FILE *out, const char *key, const char *v, bool comma);
/* "key":v (null when v == LS_NULL), then a comma if asked. */
void ls_json_kv_u64(FILE *out, const char *key, uint64_t v, bool comma);

#endif
