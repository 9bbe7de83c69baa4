// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * make bench: what record adds to one tracked call, without a server's
 * noise. One process listens on 127.0.0.1:PORT, waits until the file GO
 * exists (the bench makes it once record is tracing), connects to itself,
 * and for SECONDS repeats a response-shaped writev (two iovecs: a 240-byte
 * head and a 31-byte body, as nginx writes a small file) on the accepted
 * socket and the recv that reads it on the other end; prints ns per round
 * trip and the round trips made. Both ends are the tracked process's: each round trip runs the
 * write's and the read's programs once each, with hot caches.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) + (b.tv_nsec - a->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	char head[240], body[31], buf[4096];
	struct iovec iov[2] = {{head, sizeof(head)}, {body, sizeof(body)}};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timespec t0;
	double secs = 0;
	long n = 0;
	int l, c, s = -1, one = 1;

	if (argc != 4 || atoi(argv[1]) <= 0 || (secs = atof(argv[2])) <= 0) {
		fprintf(stderr, "usage: io-loop PORT SECONDS GO (starts when file GO exists; prints ns per writev+recv and their count)\n");
		return 2;
	}
	a.sin_port = htons(atoi(argv[1]));
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1)) {
		perror("io-loop: listen");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (access(argv[3], F_OK)) {
		if (since(&t0) > 60) {
			fprintf(stderr, "io-loop: %s did not appear in 60 s\n", argv[3]);
			return 1;
		}
		usleep(10000);
	}
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) || (s = accept(l, NULL, NULL)) < 0) {
		perror("io-loop: connect");
		return 1;
	}
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(head, 'h', sizeof(head));
	memcpy(head, "HTTP/1.1 200 OK\r\n", 17);
	memset(body, 'b', sizeof(body));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++) {
			size_t got = 0;

			if (writev(s, iov, 2) != sizeof(head) + sizeof(body)) {
				perror("io-loop: writev");
				return 1;
			}
			while (got < sizeof(head) + sizeof(body)) {
				ssize_t k = recv(c, buf, sizeof(buf), 0);

				if (k <= 0) {
					perror("io-loop: recv");
					return 1;
				}
				got += k;
			}
		}
		n += 1000;
	} while (since(&t0) < secs);
	printf("%.1f %ld\n", since(&t0) * 1e9 / n, n);
	return 0;
}
