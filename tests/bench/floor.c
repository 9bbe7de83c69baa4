// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * make bench: loads build/floor.bpf.o (empty programs on the tracepoints a
 * default recording uses), attaches every program, prints "attached N" and
 * holds them until SIGINT or SIGTERM. What a workload keeps under it is the
 * most any program at those places could leave it.
 */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *p;
	int n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: floor-probe OBJECT (build/floor.bpf.o)\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "floor-probe: cannot load %s (run as root, make bench builds it)\n",
			argv[1]);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	bpf_object__for_each_program(p, obj) {
		if (!bpf_program__attach(p)) {
			fprintf(stderr, "floor-probe: cannot attach %s\n", bpf_program__name(p));
			return 1;
		}
		n++;
	}
	printf("attached %d\n", n);
	fflush(stdout);
	while (!stop)
		pause();
	bpf_object__close(obj);
	return 0;
}
