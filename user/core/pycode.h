/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CPython 3.11+ location tables (co_linetable, PEP 657): which source line
 * a code object's instruction belongs to. Entries, one per run of code
 * units: a first byte 1CCCCLLL (code C, L+1 code units), then by code: 15
 * no location; 14 long form (signed line delta, end line, column, end
 * column as 6-bit varints); 13 no column (signed line delta); 10-12 one
 * line (delta C-10) and two column bytes; 0-9 short form (one column byte).
 */
#ifndef LATSPLIT_CORE_PYCODE_H
#define LATSPLIT_CORE_PYCODE_H

#include <stddef.h>

/* The line of code unit `lasti`, counting from firstlineno; -1 where the
 * table has no line for it or does not parse. */
int ls_py_line(const unsigned char *tab, size_t len, int firstlineno, unsigned lasti);

#endif
