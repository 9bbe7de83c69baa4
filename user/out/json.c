// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * JSON writer (see json.h).
 */
#include "attribute.h"
#include "out/json.h"

void ls_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		switch (*c) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		default:
			if (*c < 0x20)
				fprintf(out, "\\u%04x", *c);
			else
				fputc(*c, out);
		}
	}
	fputc('"', out);
}

void ls_json_kv_str(FILE *out, const char *key, const char *v, bool comma)
{
	fprintf(out, "\"%s\":", key);
	if (v && v[0])
		ls_json_string(out, v);
	else
		fputs("null", out);
	if (comma)
		fputc(',', out);
}

void ls_json_kv_u64(FILE *out, const char *key, uint64_t v, bool comma)
{
	if (v == LS_NULL)
		fprintf(out, "\"%s\":null%s", key, comma ? "," : "");
	else
		fprintf(out, "\"%s\":%llu%s", key, (unsigned long long)v, comma ? "," : "");
}
