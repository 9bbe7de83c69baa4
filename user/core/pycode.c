// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* CPython code objects' location tables: see pycode.h. */
#include "pycode.h"

static unsigned varint(const unsigned char **q, const unsigned char *end)
{
	unsigned v = 0, shift = 0;

	while (*q < end) {
		unsigned char b = *(*q)++;
		v |= (unsigned)(b & 63) << shift;
		shift += 6;
		if (!(b & 64) || shift > 24)
			break;
	}
	return v;
}

static int svarint(const unsigned char **q, const unsigned char *end)
{
	unsigned v = varint(q, end);

	return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
}

int ls_py_line(const unsigned char *tab, size_t len, int firstlineno, unsigned lasti)
{
	const unsigned char *q = tab, *end = tab + len;
	unsigned addr = 0;
	int line = firstlineno;

	while (q < end) {
		unsigned char b = *q++;
		int code = b >> 3 & 15, delta = 0;
		unsigned units = (b & 7) + 1;

		if (!(b & 128))
			return -1; /* not an entry's first byte: a table we misread */
		if (code == 14) { /* long form: line delta, end line, column, end column */
			delta = svarint(&q, end);
			varint(&q, end);
			varint(&q, end);
			varint(&q, end);
		} else if (code == 13) { /* no column */
			delta = svarint(&q, end);
		} else if (code >= 10 && code <= 12) { /* one line, two column bytes */
			delta = code - 10;
			q += end - q < 2 ? end - q : 2;
		} else if (code < 10 && q < end) { /* short form: one column byte */
			q += 1;
		}
		line += delta;
		if (lasti < addr + units)
			return code == 15 ? -1 : line;
		addr += units;
	}
	return -1;
}

