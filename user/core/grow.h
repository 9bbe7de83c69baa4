/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * GROW(arr, n, cap): make room for one more element in a realloc'd array,
 * doubling. Out of memory aborts: the analyses hold whole captures and have
 * no partial result worth keeping.
 */
#ifndef LATSPLIT_USER_GROW_H
#define LATSPLIT_USER_GROW_H

#include <stdlib.h>

#define GROW(arr, n, cap)                                                          \
	do {                                                                       \
		if ((n) == (cap)) {                                                \
			size_t nc_ = (cap) ? (cap) * 2 : 16;                       \
			void *p_ = realloc((arr), nc_ * sizeof(*(arr)));           \
			if (!p_)                                                   \
				abort();                                           \
			(arr) = p_;                                                \
			(cap) = nc_;                                               \
		}                                                                  \
	} while (0)

#endif
