// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Container names from cgroup paths: see container.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include "container.h"

#include <stdio.h>
#include <string.h>

#include "latsplit/events.h"

static bool hex64(const char *s)
{
	for (int i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* A runtime by the prefix of a systemd scope ("docker-ID.scope") or the
 * directory above a bare ID ("/docker/ID", "/kubepods/.../ID"). */
static const char *runtime_of(const char *prefix, size_t n)
{
	static const struct {
		const char *prefix, *name;
	} known[] = {
		{"docker", "docker"},   {"cri-containerd", "containerd"}, {"containerd", "containerd"},
		{"crio", "cri-o"},      {"libpod", "podman"},            {"kubepods", "kubepods"},
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strlen(known[i].prefix) == n && !strncmp(prefix, known[i].prefix, n))
			return known[i].name;
	return NULL;
}

/* The runtime a path component names: "docker-ID.scope" by its prefix up
 * to the id, a directory ("docker", "kubepods-burstable.slice") by its
 * first word. */
static const char *component_runtime(const char *comp, size_t n)
{
	size_t w = 0;

	while (w < n && comp[w] != '-' && comp[w] != '.')
		w++;
	return runtime_of(comp, w);
}

bool ls_container_name(const char *cgroup, uint32_t ns_flags, uint64_t pidns, struct ls_container *c)
{
	const char *best = NULL, *rt = NULL;
	size_t len = cgroup ? strlen(cgroup) : 0;

	memset(c, 0, sizeof(*c));
	/* the last path component holding a 64-hex id names the container
	 * (a pod's cgroup holds its containers' below it) */
	for (size_t i = 0; i + 64 <= len; i++) {
		if ((i && cgroup[i - 1] != '/' && cgroup[i - 1] != '-') || !hex64(cgroup + i) ||
		    (cgroup[i + 64] && cgroup[i + 64] != '/' && cgroup[i + 64] != '.'))
			continue;
		const char *comp = cgroup + i, *r = NULL;
		while (comp > cgroup && comp[-1] != '/')
			comp--;
		if (comp < cgroup + i) { /* "PREFIX-ID.scope" */
			if (memmem(comp, (size_t)(cgroup + i - comp), "conmon", 6))
				continue; /* CRI-O's monitor, not the container */
			r = runtime_of(comp, (size_t)(cgroup + i - 1 - comp));
		}
		/* a bare ID, or an unknown prefix: the nearest directory above
		 * that names a runtime says whose */
		for (const char *e = comp - 1; !r && e > cgroup;) {
			const char *b = e;
			while (b > cgroup && b[-1] != '/')
				b--;
			r = component_runtime(b, (size_t)(e - b));
			e = b - 1;
		}
		best = cgroup + i;
		rt = r;
	}
	if (best) {
		snprintf(c->runtime, sizeof(c->runtime), "%s", rt ? rt : "");
		memcpy(c->id, best, 64);
		c->id[64] = '\0';
		snprintf(c->name, sizeof(c->name), "%s %.12s", rt ? rt : "container", best);
		return true;
	}
	if (!(ns_flags & (LS_NS_OWN_PID | LS_NS_OWN_MNT)))
		return false;
	if (len && strcmp(cgroup, "/"))
		snprintf(c->name, sizeof(c->name), "%.79s", cgroup);
	else
		snprintf(c->name, sizeof(c->name), "pidns %llu", (unsigned long long)pidns);
	return true;
}
