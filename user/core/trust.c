// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Trusted proxies (see trust.h).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trust.h"

/* An address as 16 bytes (IPv4 mapped), from "a.b.c.d" or "x:y::z". */
static bool parse_addr(const char *s, uint8_t out[16])
{
	struct in_addr v4;

	if (inet_pton(AF_INET, s, &v4) == 1) {
		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &v4, 4);
		return true;
	}
	return inet_pton(AF_INET6, s, out) == 1;
}

int ls_trust_add(struct ls_trust *t, const char *cidr, char *err, size_t len)
{
	char buf[64];
	char *slash, *end;
	long bits;
	bool v4;

	if (t->n == LS_TRUST_MAX) {
		snprintf(err, len, "--trusted-proxy: at most %d networks", LS_TRUST_MAX);
		return -1;
	}
	if (strlen(cidr) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", cidr);
	if ((slash = strchr(buf, '/')))
		*slash = '\0';
	if (!parse_addr(buf, t->net[t->n].addr))
		goto bad;
	v4 = strchr(buf, ':') == NULL;
	bits = v4 ? 32 : 128;
	if (slash) {
		bits = strtol(slash + 1, &end, 10);
		if (!slash[1] || *end || bits < 0 || bits > (v4 ? 32 : 128))
			goto bad;
	}
	t->net[t->n].bits = (int)bits + (v4 ? 96 : 0);
	t->n++;
	return 0;
bad:
	snprintf(err, len, "--trusted-proxy '%s': expected ADDR or ADDR/BITS (IPv4 or IPv6), e.g. "
		 "10.0.0.0/8", cidr);
	return -1;
}

static bool in_net(const uint8_t a[16], const uint8_t n[16], int bits)
{
	int whole = bits / 8, rest = bits % 8;

	if (memcmp(a, n, whole))
		return false;
	return !rest || ((a[whole] ^ n[whole]) & (0xff << (8 - rest)) & 0xff) == 0;
}

const char *ls_trust_forwarded(const struct ls_trust *t, const struct ls_request *r)
{
	char ip[64];
	uint8_t a[16];
	const char *c = r->client, *e;

	if (!r->forwarded_for[0])
		return NULL;
	if (r->transport_unix || r->peer_pid)
		return r->forwarded_for;
	if (!t || !t->n)
		return NULL;
	/* "a.b.c.d:port" or "[v6]:port" */
	if (*c == '[') {
		c++;
		e = strchr(c, ']');
	} else {
		e = strrchr(c, ':');
	}
	if (!e || (size_t)(e - c) >= sizeof(ip))
		return NULL;
	memcpy(ip, c, e - c);
	ip[e - c] = '\0';
	if (!parse_addr(ip, a))
		return NULL;
	for (size_t k = 0; k < t->n; k++)
		if (in_net(a, t->net[k].addr, t->net[k].bits))
			return r->forwarded_for;
	return NULL;
}
