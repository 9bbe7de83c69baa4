// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * /proc readers (see proc.h). Every read tolerates the process vanishing.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"
#include "redact.h"

static ssize_t read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, total = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)total < cap && (n = read(fd, buf + total, cap - total)) > 0)
		total += n;
	close(fd);
	return total;
}

/* Fields of /proc/PID/stat after the comm, which may contain ') '. */
static int stat_fields(pid_t pid, pid_t *ppid, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int field = 3;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	n = read_file(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n < 0 ? (int)n : -ENOENT;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p += 2; /* state */
	for (char *tok = strtok(p, " "); tok; tok = strtok(NULL, " "), field++) {
		if (field == 4 && ppid)
			*ppid = atoi(tok);
		if (field == 22) {
			if (start)
				*start = strtoull(tok, NULL, 10);
			return 0;
		}
	}
	return -EINVAL;
}

pid_t ls_proc_ppid(pid_t pid)
{
	pid_t ppid = -1;

	if (stat_fields(pid, &ppid, NULL))
		return -1;
	return ppid;
}

/* The kind of probe file a mapped path's basename names, or -1. */
static int lib_kind(const char *base)
{
	static const struct {
		const char *prefix;
		int kind;
	} libs[] = {
		{"libssl.so", LS_PROC_LIB_SSL},
		{"liblatsplit-engine.so", LS_PROC_LIB_ENGINE},
		{"liblatsplit-cupti.so", LS_PROC_LIB_ENGINE},
		{"libcuda.so", LS_PROC_LIB_CUDA},
	};

	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!strncmp(base, libs[i].prefix, strlen(libs[i].prefix)))
			return libs[i].kind;
	return -1;
}

int ls_proc_probe_libs(pid_t pid, struct ls_proc_lib *out, int max)
{
	char path[64], line[4608];
	unsigned long long lo, hi, ino;
	struct stat st;
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/'), *base;
		int k, kind;

		if (!file || sscanf(line, "%llx-%llx %*s %*s %*s %llu", &lo, &hi, &ino) != 3)
			continue;
		file[strcspn(file, "\n")] = '\0';
		base = strrchr(file, '/') + 1;
		if ((kind = lib_kind(base)) < 0)
			continue;
		for (k = 0; k < n; k++)
			if (!strcmp(out[k].shown, file))
				break;
		if (k < n)
			continue;
		struct ls_proc_lib *l = &out[n];
		l->kind = kind;
		snprintf(l->shown, sizeof(l->shown), "%s", file);
		/* the host's file of that name only when it is the one mapped;
		 * else the mapping itself: the file the process maps, wherever
		 * its root (a container's symlinks are never followed here) */
		if (!stat(file, &st) && st.st_ino == ino)
			snprintf(l->path, sizeof(l->path), "%s", file);
		else
			snprintf(l->path, sizeof(l->path), "/proc/%d/map_files/%llx-%llx", pid, lo, hi);
		if (stat(l->path, &st) || st.st_ino != ino || !S_ISREG(st.st_mode))
			continue;
		n++;
	}
	fclose(f);
	return n;
}

int ls_proc_alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

int ls_proc_info(pid_t pid, __u64 ts, void *buf)
{
	struct ls_rec_proc_info *rec = buf;
	char path[64];
	pid_t ppid = 0;
	unsigned long long start = 0;
	ssize_t n;
	int err;

	memset(rec, 0, sizeof(*rec));
	err = stat_fields(pid, &ppid, &start);
	if (err)
		return err;
	rec->h.type = LS_REC_PROC_INFO;
	rec->h.ts = ts;
	rec->h.pid = pid;
	rec->h.tid = pid;
	rec->ppid = ppid;
	rec->start_time = start;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	n = read_file(path, rec->comm, sizeof(rec->comm) - 1);
	if (n > 0 && rec->comm[n - 1] == '\n')
		rec->comm[n - 1] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, rec->exe, sizeof(rec->exe) - 1);
	if (n < 0)
		rec->exe[0] = '\0'; /* kernel thread, or no permission */
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	n = read_file(path, (char *)(rec + 1), LS_PROC_INFO_MAX - sizeof(*rec));
	rec->cmdline_len = n > 0 ? n : 0;
	ls_redact_args((char *)(rec + 1), rec->cmdline_len);
	rec->h.size = sizeof(*rec) + rec->cmdline_len;
	return rec->h.size;
}

/* The inode of /proc/PID/ns/NAME (PID 0: this process), 0 if unreadable. */
static __u64 ns_ino(pid_t pid, const char *name)
{
	char path[64];
	struct stat st;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, name);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	return stat(path, &st) ? 0 : (__u64)st.st_ino;
}

int ls_proc_ns(pid_t pid, __u64 ts, void *buf)
{
	struct ls_rec_proc_ns *rec = buf;
	char path[64], text[4096], *cg = (char *)(rec + 1), *line, *save = NULL;
	size_t cap = LS_PROC_NS_MAX - sizeof(*rec);
	ssize_t n;

	memset(rec, 0, sizeof(*rec));
	rec->h.type = LS_REC_PROC_NS;
	rec->h.ts = ts;
	rec->h.pid = rec->h.tid = rec->ns_pid = pid;
	/* NSpid: the pid in each namespace, outermost first; the last is its own */
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if ((n = read_file(path, text, sizeof(text) - 1)) <= 0)
		return -ESRCH;
	text[n] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		char *last = strrchr(line, '\t') ? strrchr(line, '\t') + 1 : line + 6;
		unsigned long v = strtoul(last, NULL, 10);
		if (v && v <= 0x7fffffff)
			rec->ns_pid = (__u32)v;
		break;
	}
	rec->pidns = ns_ino(pid, "pid");
	rec->mntns = ns_ino(pid, "mnt");
	if (rec->pidns && rec->pidns != ns_ino(0, "pid"))
		rec->flags |= LS_NS_OWN_PID;
	if (rec->mntns && rec->mntns != ns_ino(0, "mnt"))
		rec->flags |= LS_NS_OWN_MNT;
	/* cgroup v2's line ("0::PATH"); where that is the root (a hybrid host
	 * whose runtime uses the v1 hierarchies), the first v1 path that is
	 * not (the systemd or a controller's) */
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	cg[0] = '\0';
	if ((n = read_file(path, text, sizeof(text) - 1)) > 0) {
		char v1[1024] = "";
		bool v2 = false;
		text[n] = '\0';
		save = NULL;
		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char *p = strchr(line, ':');
			p = p ? strchr(p + 1, ':') : NULL;
			if (!p)
				continue;
			if (!strncmp(line, "0::", 3)) {
				snprintf(cg, cap, "%s", p + 1);
				v2 = true;
			} else if (!v1[0] && strcmp(p + 1, "/")) {
				snprintf(v1, sizeof(v1), "%s", p + 1);
			}
		}
		if ((!v2 || !strcmp(cg, "/")) && v1[0])
			snprintf(cg, cap, "%s", v1);
	}
	for (char *c = cg; *c; c++) /* a path is text: no control bytes in the capture */
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	rec->cgroup_len = (__u32)strlen(cg) + 1;
	rec->h.size = (__u16)((sizeof(*rec) + rec->cgroup_len + 7) & ~7ul);
	memset(cg + rec->cgroup_len, 0, rec->h.size - sizeof(*rec) - rec->cgroup_len);
	return rec->h.size;
}

pid_t *ls_proc_list(size_t *n)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t *pids = NULL;
	size_t cap = 0;

	*n = 0;
	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (*n == cap) {
			pid_t *np = realloc(pids, (cap = cap ? cap * 2 : 256) * sizeof(*pids));
			if (!np)
				break;
			pids = np;
		}
		pids[(*n)++] = atoi(de->d_name);
	}
	closedir(d);
	return pids;
}

/* Socket inodes among pid's open fds. */
static int socket_inodes(pid_t pid, unsigned long *inodes, int max)
{
	char path[64], link[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		char fdpath[384];
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, de->d_name);
		len = readlink(fdpath, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (sscanf(link, "socket:[%lu]", &inodes[n]) == 1)
			n++;
	}
	closedir(d);
	return n;
}

int ls_proc_listen_ports(pid_t pid, __u16 *ports, int max)
{
	static const char *const tables[] = {"tcp", "tcp6"};
	unsigned long inodes[1024];
	int ninodes = socket_inodes(pid, inodes, 1024), nports = 0;

	if (!ninodes)
		return 0;
	for (int t = 0; t < 2; t++) {
		char path[64], line[512];
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/net/%s", pid, tables[t]);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char local[128];
			unsigned int state, port;
			unsigned long inode;

			/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
			if (sscanf(line, " %*d: %127s %*s %x %*s %*s %*s %*u %*u %lu", local, &state,
				   &inode) != 3 || state != 0x0A)
				continue;
			char *colon = strrchr(local, ':');
			if (!colon || sscanf(colon + 1, "%x", &port) != 1)
				continue;
			for (int i = 0; i < ninodes; i++) {
				if (inodes[i] != inode)
					continue;
				bool dup = false;
				for (int k = 0; k < nports; k++)
					dup |= ports[k] == port;
				if (!dup && nports < max)
					ports[nports++] = port;
			}
		}
		fclose(f);
	}
	return nports;
}

/* The process holding the TCP socket from local port lport to remote port
 * rport (in this network namespace), 0 when none is found. */
pid_t ls_proc_tcp_owner(__u16 lport, __u16 rport)
{
	static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	unsigned long want = 0;
	pid_t owner = 0;

	for (int t = 0; t < 2 && !want; t++) {
		char line[512];
		FILE *f = fopen(tables[t], "re");

		while (f && !want && fgets(line, sizeof(line), f)) {
			char local[128], rem[128], *lc, *rc;
			unsigned int lp, rp;
			unsigned long inode;

			if (sscanf(line, " %*d: %127s %127s %*x %*s %*s %*s %*u %*u %lu", local, rem,
				   &inode) != 3)
				continue;
			lc = strrchr(local, ':');
			rc = strrchr(rem, ':');
			if (lc && rc && sscanf(lc + 1, "%x", &lp) == 1 && sscanf(rc + 1, "%x", &rp) == 1 &&
			    lp == lport && rp == rport && inode)
				want = inode;
		}
		if (f)
			fclose(f);
	}
	if (!want)
		return 0;
	size_t n;
	pid_t *all = ls_proc_list(&n);
	unsigned long inodes[1024];

	for (size_t i = 0; all && i < n && !owner; i++) {
		int k = socket_inodes(all[i], inodes, 1024);
		for (int j = 0; j < k && !owner; j++)
			if (inodes[j] == want)
				owner = all[i];
	}
	free(all);
	return owner;
}
