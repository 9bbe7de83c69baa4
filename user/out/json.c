// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * JSON writer (see json.h).
 */
#include <string.h>

#include "attribute.h"
#include "out/json.h"

void ls_jb_flush(struct ls_jbuf *j)
{
	if (j->n)
		fwrite(j->b, 1, j->n, j->out);
	j->n = 0;
}

void ls_jb_raw_slow(struct ls_jbuf *j, const char *s, size_t n)
{
	ls_jb_flush(j);
	if (n > sizeof(j->b)) {
		fwrite(s, 1, n, j->out);
		return;
	}
	memcpy(j->b, s, n);
	j->n = n;
}

void ls_jb_string(struct ls_jbuf *j, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *c = (const unsigned char *)s;

	ls_jb_raw(j, "\"", 1);
	for (;;) {
		const unsigned char *run = c;

		while (*c >= 0x20 && *c != '"' && *c != '\\')
			c++;
		ls_jb_raw(j, (const char *)run, (size_t)(c - run));
		if (!*c)
			break;
		switch (*c) {
		case '"':
			ls_jb_raw(j, "\\\"", 2);
			break;
		case '\\':
			ls_jb_raw(j, "\\\\", 2);
			break;
		case '\n':
			ls_jb_raw(j, "\\n", 2);
			break;
		case '\r':
			ls_jb_raw(j, "\\r", 2);
			break;
		case '\t':
			ls_jb_raw(j, "\\t", 2);
			break;
		default: {
			char u[6] = {'\\', 'u', '0', '0', hex[*c >> 4], hex[*c & 15]};
			ls_jb_raw(j, u, sizeof(u));
		}
		}
		c++;
	}
	ls_jb_raw(j, "\"", 1);
}

void ls_jb_kv_str(struct ls_jbuf *j, const char *key, const char *v, bool comma)
{
	ls_jb_key(j, key);
	if (v && v[0])
		ls_jb_string(j, v);
	else
		ls_jb_raw(j, "null", 4);
	if (comma)
		ls_jb_raw(j, ",", 1);
}

void ls_jb_kv_u64(struct ls_jbuf *j, const char *key, uint64_t v, bool comma)
{
	ls_jb_key(j, key);
	if (v == LS_NULL)
		ls_jb_raw(j, "null", 4);
	else
		ls_jb_u64(j, v);
	if (comma)
		ls_jb_raw(j, ",", 1);
}

void ls_json_string(FILE *out, const char *s)
{
	struct ls_jbuf j;

	ls_jb_init(&j, out);

	ls_jb_string(&j, s);
	ls_jb_flush(&j);
}

void ls_json_kv_str(FILE *out, const char *key, const char *v, bool comma)
{
	struct ls_jbuf j;

	ls_jb_init(&j, out);

	ls_jb_kv_str(&j, key, v, comma);
	ls_jb_flush(&j);
}

void ls_json_kv_u64(FILE *out, const char *key, uint64_t v, bool comma)
{
	struct ls_jbuf j;

	ls_jb_init(&j, out);

	ls_jb_kv_u64(&j, key, v, comma);
	ls_jb_flush(&j);
}
