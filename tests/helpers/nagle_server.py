#!/usr/bin/env python3
"""A plain Python streaming HTTP/1.1 server, the kind that meets Nagle: per
request it writes the response head in one send() and then each SSE token
in its own small send(), keep-alive, no TCP_NODELAY unless --nodelay. With
the client's delayed ACK, a small write behind unacknowledged data waits
for that ACK (Nagle), up to the client's delayed-ACK timer.

  nagle_server.py --port P [--tokens N] [--gap-ms MS] [--nodelay] [--ready-file F]
"""
import argparse
import socket
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--host", default="127.0.0.1")
ap.add_argument("--tokens", type=int, default=4)
ap.add_argument("--gap-ms", type=float, default=2.0)
ap.add_argument("--nodelay", action="store_true")
ap.add_argument("--ready-file")
a = ap.parse_args()


def serve(c):
    if a.nodelay:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return
            buf += d
        head, _, rest = buf.partition(b"\r\n\r\n")
        n = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":")[1])
        while len(rest) < n:
            d = c.recv(65536)
            if not d:
                return
            rest += d
        buf = rest[n:]
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        for i in range(a.tokens):
            if i and a.gap_ms:
                time.sleep(a.gap_ms / 1000)
            ev = b'data: {"choices":[{"text":" tok%d"}]}\n\n' % i
            c.sendall(b"%x\r\n%s\r\n" % (len(ev), ev))
        end = b"data: [DONE]\n\n"
        c.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(end), end))


s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((a.host, a.port))
s.listen(64)
if a.ready_file:
    open(a.ready_file, "w").close()
while True:
    conn, _ = s.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
