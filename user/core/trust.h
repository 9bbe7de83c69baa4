/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Whom a request's X-Forwarded-For (or Forwarded) is believed from (DESIGN
 * §11): a header any client can write names the real client only when the
 * peer that sent it is a proxy of ours: a unix socket's (a process on this
 * host), a traced proxy's upstream connection, or an address in a network
 * the operator trusts (--trusted-proxy CIDR).
 */
#ifndef LATSPLIT_CORE_TRUST_H
#define LATSPLIT_CORE_TRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "requests.h"

#define LS_TRUST_MAX 32

struct ls_trust {
	struct {
		uint8_t addr[16]; /* IPv4 as IPv4-mapped IPv6 */
		int bits;         /* prefix length over the 128 bits */
	} net[LS_TRUST_MAX];
	size_t n;
};

/* Adds "ADDR[/BITS]" (IPv4 or IPv6). 0, or -1 with the reason in err. */
int ls_trust_add(struct ls_trust *t, const char *cidr, char *err, size_t len);
/* r's forwarded_for when its peer is trusted (t may be NULL: no
 * networks), else NULL. */
const char *ls_trust_forwarded(const struct ls_trust *t, const struct ls_request *r);

#endif
