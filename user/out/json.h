/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one JSON writer of the output sinks: strings escaped per RFC 8259
 * (quote, backslash, control characters; other bytes pass through), and the
 * project's null convention (LS_NULL numbers and empty strings are null).
 *
 * A line is built in a struct ls_jbuf (flushed to its FILE when full and at
 * the end): one stdio call per few KB instead of one locked, parsed fprintf
 * per field. The FILE-based calls are the same writer for a single field.
 */
#ifndef LATSPLIT_OUT_JSON_H
#define LATSPLIT_OUT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ls_jbuf {
	FILE *out;
	size_t n;
	char b[4096];
};

/* An empty buffer in front of out (the 4 KB are not cleared). */
static inline void ls_jb_init(struct ls_jbuf *j, FILE *out)
{
	j->out = out;
	j->n = 0;
}

/* Writes what is buffered to out. */
void ls_jb_flush(struct ls_jbuf *j);
/* ls_jb_raw when the buffer is full */
void ls_jb_raw_slow(struct ls_jbuf *j, const char *s, size_t n);

/* n bytes as they are. Inline: most are a few bytes of a literal, and a
 * call to memcpy for each cost more than the copy. */
static inline void ls_jb_raw(struct ls_jbuf *j, const char *s, size_t n)
{
	if (n <= sizeof(j->b) && j->n <= sizeof(j->b) - n) {
		__builtin_memcpy(j->b + j->n, s, n);
		j->n += n;
		return;
	}
	ls_jb_raw_slow(j, s, n);
}

/* s as it is (a literal or a name that needs no escaping). */
static inline void ls_jb_str(struct ls_jbuf *j, const char *s)
{
	ls_jb_raw(j, s, __builtin_strlen(s));
}

/* "key": (a name that needs no escaping) */
static inline void ls_jb_key(struct ls_jbuf *j, const char *key)
{
	ls_jb_raw(j, "\"", 1);
	ls_jb_str(j, key);
	ls_jb_raw(j, "\":", 2);
}

/* v in decimal. */
static inline void ls_jb_u64(struct ls_jbuf *j, uint64_t v)
{
	char d[20];
	int i = sizeof(d);

	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	ls_jb_raw(j, d + i, sizeof(d) - i);
}

/* "s", escaped. */
void ls_jb_string(struct ls_jbuf *j, const char *s);
/* "key":"value" (null when v is NULL or empty), then a comma if asked. */
void ls_jb_kv_str(struct ls_jbuf *j, const char *key, const char *v, bool comma);
/* "key":v (null when v == LS_NULL), then a comma if asked. */
void ls_jb_kv_u64(struct ls_jbuf *j, const char *key, uint64_t v, bool comma);

/* The same, straight to a FILE. */
void ls_json_string(FILE *out, const char *s);
void ls_json_kv_str(FILE *out, const char *key, const char *v, bool comma);
void ls_json_kv_u64(FILE *out, const char *key, uint64_t v, bool comma);

#endif
