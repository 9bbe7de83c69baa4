// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * make bench: what a recording costs a process it does not trace. N
 * getppid(2) calls (the cheapest syscall: what is left is the kernel's
 * syscall path and the tracepoints every syscall on the host runs while
 * latsplit records), timed on CLOCK_MONOTONIC; prints ns per call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	struct timespec a, b;

	if (n <= 0) {
		fprintf(stderr, "usage: syscall-loop N (getppid calls; prints ns per call)\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
