// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Credential redaction for captures (see redact.h).
 */
#include <string.h>
#include <strings.h>

#include "redact.h"

static const char *const secret_headers[] = {"authorization", "proxy-authorization", "cookie",
					     "set-cookie", "x-api-key", "api-key"};

/* Redacts the value of the header line at line[0..n) if it names a secret. */
static int redact_line(uint8_t *line, size_t n, bool *open)
{
	const uint8_t *colon = memchr(line, ':', n);
	size_t nl, v;

	if (!colon)
		return 0;
	nl = colon - line;
	for (size_t i = 0; i < sizeof(secret_headers) / sizeof(secret_headers[0]); i++) {
		if (strlen(secret_headers[i]) != nl ||
		    strncasecmp((const char *)line, secret_headers[i], nl))
			continue;
		for (v = nl + 1; v < n && (line[v] == ' ' || line[v] == '\t'); v++)
			;
		for (; v < n && line[v] != '\r'; v++)
			line[v] = '*';
		*open = v == n; /* no CR: the value may go on past this buffer */
		return 1;
	}
	return 0;
}

int ls_redact_http(uint8_t *buf, size_t n, bool *carry)
{
	int count = 0;
	size_t at = 0;
	bool open = false;

	if (*carry) { /* the rest of a value cut at the end of the last buffer */
		for (; at < n && buf[at] != '\r' && buf[at] != '\n'; at++)
			buf[at] = '*';
		count++;
		if (at == n)
			return count; /* still inside it */
	}
	while (at < n) {
		uint8_t *eol = memchr(buf + at, '\n', n - at);
		size_t end = eol ? (size_t)(eol - buf) : n;

		open = false;
		count += redact_line(buf + at, end - at, &open);
		if (eol)
			open = false;
		at = end + 1;
	}
	*carry = open;
	return count;
}

/* Does word w (n bytes) end with suffix (any case)? */
static bool ends_with(const char *w, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !strncasecmp(w + n - k, suffix, k);
}

/* By name segments (split at '-', '_', '.'), not substrings: a glob such as
 * *TOKEN* would take --max-tokens 16 or --token-ms 2 for secrets. The last
 * segment ends with KEY, TOKEN, SECRET, PASSWORD or PASSWD (OPENAI_API_KEY,
 * --hf-token, GITHUB_TOKEN, APIKEY), or any segment is SECRET, PASSWORD,
 * PASSWD or CREDENTIALS (SECRET_KEY_BASE). */
bool ls_secret_name(const char *name, size_t n)
{
	static const char *const last[] = {"key", "token", "secret", "password", "passwd"};
	static const char *const any[] = {"secret", "password", "passwd", "credentials"};
	size_t b = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && name[i] != '-' && name[i] != '_' && name[i] != '.')
			continue;
		const char *seg = name + b;
		size_t sl = i - b;
		for (size_t k = 0; k < sizeof(any) / sizeof(any[0]); k++)
			if (sl == strlen(any[k]) && !strncasecmp(seg, any[k], sl))
				return true;
		if (i == n)
			for (size_t k = 0; k < sizeof(last) / sizeof(last[0]); k++)
				if (ends_with(seg, sl, last[k]))
					return true;
		b = i + 1;
	}
	return false;
}

static void stars(char *s, size_t n)
{
	memset(s, '*', n);
}

/* Word boundaries: arguments (NUL), and inside one (a shell script given
 * to sh -c), blanks, quotes and shell operators. */
static bool word_sep(char c)
{
	return !c || strchr(" \t\n'\";&|()`", c);
}

int ls_redact_args(char *buf, size_t len)
{
	int count = 0;
	bool next_is_value = false;

	for (size_t at = 0; at < len;) {
		size_t n = 0;

		while (at < len && word_sep(buf[at]))
			at++;
		while (at + n < len && !word_sep(buf[at + n]))
			n++;
		if (!n)
			break;
		char *word = buf + at, *eq = memchr(word, '=', n);
		const char *name = word;
		size_t nn = eq ? (size_t)(eq - word) : n;

		if (next_is_value) {
			stars(word, n);
			count++;
			next_is_value = false;
		} else {
			while (nn && *name == '-')
				name++, nn--;
			if (ls_secret_name(name, nn)) {
				if (eq && eq + 1 < word + n) {
					stars(eq + 1, word + n - eq - 1);
					count++;
				} else if (!eq && word[0] == '-') {
					next_is_value = true;
				}
			}
		}
		at += n;
	}
	return count;
}
