// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An HTTP/1.1 server that moves its bytes with recvmmsg and sendmmsg, for
 * tests/integration/test_servers.sh: each request is read with one
 * recvmmsg of two messages, each response written with one sendmmsg of
 * three (head, then the body in two parts), and the connection closed.
 *
 *   mmsg_server PORT READY_FILE
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void serve(int c)
{
	char a[4096], b[4096], head[256], xrid[64] = "none";
	struct iovec in[2] = {{a, sizeof(a) - 1}, {b, sizeof(b)}};
	struct mmsghdr m[3];
	int n;

	memset(m, 0, sizeof(m));
	m[0].msg_hdr.msg_iov = &in[0];
	m[0].msg_hdr.msg_iovlen = 1;
	m[1].msg_hdr.msg_iov = &in[1];
	m[1].msg_hdr.msg_iovlen = 1;
	if ((n = recvmmsg(c, m, 2, MSG_WAITFORONE, NULL)) <= 0)
		return;
	a[m[0].msg_len] = '\0';
	char *x = strcasestr(a, "\r\nX-Request-Id: ");
	if (x)
		sscanf(x + 16, "%63[^\r]", xrid);
	static const char body1[] = "{\"id\":\"mmsg\",\"object\":\"text_completion\",";
	static const char body2[] = "\"choices\":[{\"index\":0,\"text\":\" tok0 tok1\"}]}";
	int hl = snprintf(head, sizeof(head),
			  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Request-Id: %s\r\n"
			  "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			  xrid, strlen(body1) + strlen(body2));
	struct iovec out[3] = {{head, (size_t)hl}, {(void *)body1, strlen(body1)},
			       {(void *)body2, strlen(body2)}};
	memset(m, 0, sizeof(m));
	for (int i = 0; i < 3; i++) {
		m[i].msg_hdr.msg_iov = &out[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	sendmmsg(c, m, 3, 0);
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (argc != 3)
		return 2;
	sa.sin_port = htons((unsigned short)atoi(argv[1]));
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 16))
		return 1;
	fclose(fopen(argv[2], "w"));
	for (;;) {
		int c = accept(s, NULL, NULL);
		if (c < 0)
			continue;
		serve(c);
		close(c);
	}
}
