// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A run-queue workload for cross-checks with runqlat and offcputime: N
 * spinning threads (more than the CPUs) and one thread that sleeps 1 ms in a
 * loop, for SECONDS. Usage: runq-load SPINNERS SECONDS
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

static void *spin(void *arg)
{
	volatile unsigned long x = 0;
	(void)arg;
	while (!stop)
		x++;
	return NULL;
}

static void *nap(void *arg)
{
	struct timespec ts = {0, 1000000};
	(void)arg;
	while (!stop)
		nanosleep(&ts, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	double secs = argc > 2 ? atof(argv[2]) : 4;
	pthread_t t[65];

	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, spin, NULL);
	pthread_create(&t[n], NULL, nap, NULL);
	usleep((useconds_t)(secs * 1e6));
	stop = 1;
	for (int i = 0; i <= n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
