/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * C++ symbol names as people read them ("llama_context::decode(llama_batch&)"
 * for "_ZN13llama_context6decodeER11llama_batch"), by libstdc++'s demangler.
 */
#ifndef LATSPLIT_USER_DEMANGLE_H
#define LATSPLIT_USER_DEMANGLE_H

/* A malloc'd demangled name, or NULL when name is not a mangled C++ name
 * (or does not demangle). */
char *ls_demangle(const char *name);

#endif
