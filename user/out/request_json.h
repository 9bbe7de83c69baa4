/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * JSON sink for requests: one line per request (see request_json.c).
 */
#ifndef LATSPLIT_OUT_REQUEST_JSON_H
#define LATSPLIT_OUT_REQUEST_JSON_H

#include <stdio.h>

#include "attribute.h"
#include "requests.h"
#include "timeline.h"
#include "trust.h"

/* inner: the request a traced proxy forwarded r to (its split joined in
 * s), else NULL; tl names the hops' processes (may be NULL); forwarded_for
 * is printed when trust believes it (core/trust.h; trust may be NULL). */
void ls_request_json(FILE *out, const struct ls_request *r, const struct ls_split *s,
		     const struct ls_engine_join *j, const struct ls_request *inner,
		     const struct ls_timeline *tl, const struct ls_trust *trust);

#endif
