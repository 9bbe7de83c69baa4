// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Process tracking for record (see recorder.h): the -p trees and their
 * listeners, the owners of --port listeners, the command record starts.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "recorder.h"

/* Tracks pids and all their current descendants. Returns how many. */
int ls_track_tree(struct ls_recorder *r, const unsigned long *pids, int npids, bool *tracked_out)
{
	size_t n;
	pid_t *all = ls_proc_list(&n);
	pid_t *ppid = calloc(n ? n : 1, sizeof(pid_t));
	bool *in = calloc(n ? n : 1, sizeof(bool));
	int count = 0;
	bool grew = true;

	for (size_t i = 0; i < n; i++) {
		ppid[i] = ls_proc_ppid(all[i]);
		for (int k = 0; k < npids; k++)
			in[i] |= (unsigned long)all[i] == pids[k];
	}
	while (grew) {
		grew = false;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; !in[i] && j < n; j++)
				if (in[j] && ppid[i] == all[j])
					in[i] = grew = true;
	}
	for (size_t i = 0; i < n; i++) {
		if (!in[i])
			continue;
		ls_bpf_track_pid(r->bpf, all[i]);
		ls_recorder_proc_info(r, all[i]);
		ls_recorder_known_pid(r, all[i], true);
		/* Its listeners are followed: whoever listens there next (a
		 * restart) is tracked too. */
		__u16 ports[LS_MAX_PORTS];
		int np = ls_proc_listen_ports(all[i], ports, LS_MAX_PORTS);
		for (int k = 0; k < np; k++)
			ls_bpf_track_port(r->bpf, ports[k], true);
		count++;
	}
	if (tracked_out)
		*tracked_out = count > 0;
	free(all);
	free(ppid);
	free(in);
	return count;
}

/* Owners of listeners on the given ports become tracked pids. */
int ls_port_owners(const unsigned long *ports, int nports, unsigned long *pids, int *npids)
{
	size_t n;
	pid_t *all = ls_proc_list(&n);

	for (size_t i = 0; i < n; i++) {
		__u16 lp[LS_MAX_PORTS];
		int k = ls_proc_listen_ports(all[i], lp, LS_MAX_PORTS);

		for (int a = 0; a < k; a++)
			for (int b = 0; b < nports; b++)
				if (lp[a] == ports[b] && *npids < LS_MAX_PIDS)
					pids[(*npids)++] = all[i];
	}
	free(all);
	return 0;
}

/* liblatsplit-engine.so and liblatsplit-cupti.so beside the latsplit
 * binary, then in the usual libdirs. self[] holds the paths found beside. */
int ls_default_engine_paths(const char **paths, char self[2][4096])
{
	static const char *const dirs[] = {
		"/usr/local/lib/liblatsplit-engine.so", "/usr/lib/liblatsplit-engine.so",
		"/usr/local/lib/liblatsplit-cupti.so", "/usr/lib/liblatsplit-cupti.so"};
	static const char *const libs[] = {"liblatsplit-engine.so", "liblatsplit-cupti.so"};
	int k = 0;

	for (int i = 0; i < 2; i++) {
		ssize_t n = readlink("/proc/self/exe", self[i], sizeof(self[i]) - 32);
		char *slash;

		if (n <= 0)
			continue;
		self[i][n] = '\0';
		slash = strrchr(self[i], '/');
		if (!slash)
			continue;
		strcpy(slash + 1, libs[i]);
		if (!access(self[i], R_OK))
			paths[k++] = self[i];
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!access(dirs[i], R_OK))
			paths[k++] = dirs[i];
	return k;
}

pid_t ls_spawn_waiting(char **argv, int *go_fd)
{
	int pfd[2];
	pid_t pid;

	pid_t parent = getpid();

	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char c;

		close(pfd[1]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		/* the command never outlives a killed recorder (perf record does
		 * the same): no orphan left running */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127); /* the recorder died before prctl */
		if (read(pfd[0], &c, 1) != 1)
			_exit(127); /* recorder failed before starting us */
		execvp(argv[0], argv);
		fprintf(stderr, "latsplit record: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[0]);
	*go_fd = pfd[1];
	return pid;
}

