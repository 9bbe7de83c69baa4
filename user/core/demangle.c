// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * C++ names demangled (see demangle.h) by libstdc++'s own demangler, the
 * one every GNU toolchain program uses: its C entry point, declared here
 * as the Itanium C++ ABI gives it (cxxabi.h is a C++ header).
 */
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

char *ls_demangle(const char *name)
{
	int status = -1;
	char *d;

	if (!name || strncmp(name, "_Z", 2))
		return NULL;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (status) {
		free(d);
		return NULL;
	}
	return d;
}
