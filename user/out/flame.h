/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Flame graphs: a tree of frames built from stacks (root first) with
 * weights, written as folded stacks ("a;b;c 123", what flamegraph.pl,
 * speedscope and inferno read) or as an SVG drawn here.
 */
#ifndef LATSPLIT_USER_FLAME_H
#define LATSPLIT_USER_FLAME_H

#include <stdint.h>
#include <stdio.h>

struct ls_flame;

struct ls_flame *ls_flame_new(void);
/* frames[0] is the root. Frame names may hold any byte but ';' and '\n'
 * (replaced). */
void ls_flame_add(struct ls_flame *f, const char *const *frames, int n, uint64_t weight);
uint64_t ls_flame_total(const struct ls_flame *f);
/* Both sort children by name first, so output is stable. */
void ls_flame_folded(struct ls_flame *f, FILE *out);
/* unit: what a weight counts ("ns", "samples"). */
void ls_flame_svg(struct ls_flame *f, FILE *out, const char *title, const char *unit);
void ls_flame_free(struct ls_flame *f);
/* s escaped for XML/HTML text and attributes (control characters but
 * newline and tab dropped). */
void ls_xml_text(FILE *out, const char *s);

#endif
