/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a capture must not keep (DESIGN.md §5): credentials in HTTP header
 * values and on command lines. Redaction keeps lengths (values become '*'),
 * so stream offsets and the HTTP parser see the same bytes' count.
 */
#ifndef LATSPLIT_USER_REDACT_H
#define LATSPLIT_USER_REDACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Values of Authorization, Proxy-Authorization, Cookie, Set-Cookie,
 * X-Api-Key and Api-Key header lines in buf (any line of it, case-
 * insensitive names) become '*'. *carry links consecutive buffers of one
 * stream: set on return when buf ended inside such a value, so the next
 * buffer's first line is redacted too. Returns how many values were
 * redacted. */
int ls_redact_http(uint8_t *buf, size_t n, bool *carry);

/* Does a variable or flag name look like a credential? Its last segment
 * ends with KEY, TOKEN, SECRET or PASSWORD, or a segment is SECRET or
 * PASSWORD (any case; segments split at - _ .): see redact.c. */
bool ls_secret_name(const char *name, size_t n);

/* NUL-separated arguments (a /proc cmdline) in place: the values of
 * NAME=VALUE words and of --flag VALUE / --flag=VALUE whose name looks like
 * a credential become '*', also inside an argument holding a shell script.
 * Returns how many were redacted. */
int ls_redact_args(char *buf, size_t len);

#endif
