// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A known call tree for the unwinding tests, built twice (with and without
 * frame pointers): main -> work_loop -> hot_path -> spin burns CPU; main ->
 * work_loop -> cold_wait -> nanosleep (libc, which has no frame pointers)
 * blocks. Runs for argv[1] seconds.
 */
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double spin(long n)
{
	volatile double x = 0;
	for (long i = 0; i < n; i++)
		x += i * 0.5;
	return x;
}

__attribute__((noinline)) double hot_path(void)
{
	return spin(3000000) + 1;
}

__attribute__((noinline)) void cold_wait(void)
{
	struct timespec t = {0, 20 * 1000 * 1000};
	nanosleep(&t, NULL);
	__asm__ volatile("" ::: "memory"); /* not a tail call: cold_wait stays on the stack */
}

__attribute__((noinline)) void work_loop(double seconds)
{
	double end = now() + seconds;
	while (now() < end) {
		hot_path();
		cold_wait();
	}
}

int main(int argc, char **argv)
{
	work_loop(argc > 1 ? atof(argv[1]) : 3);
	return 0;
}
