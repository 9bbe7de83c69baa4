#!/usr/bin/env python3
"""A server whose responses end in a segment of their own that a test can
drop by its content: POST /v1/completions answers with Content-Length, the
head and body less its tail in one send, then, 20 ms later, the tail: the
16 bytes TAILTAILTAILTAIL (TCP_NODELAY: a segment by itself). Stdlib only.

  tail_server.py HOST PORT READY_FILE
"""
import socket
import sys
import time

from minihttp import read_request, serve_forever

TAIL = b"TAILTAILTAILTAIL"


def serve(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    while True:
        req = read_request(lambda: c.recv(65536), buf)
        if not req:
            c.close()
            return
        hdr, _, buf = req
        xrid = hdr.get("x-request-id", "none")
        body = b'{"id":"' + xrid.encode() + b'","text":"' + b"x" * 200 + b'"}' + TAIL
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Request-Id: " +
                  xrid.encode() + b"\r\nContent-Length: " + str(len(body)).encode() +
                  b"\r\n\r\n" + body[:-len(TAIL)])
        time.sleep(0.02)
        c.sendall(TAIL)
        if hdr.get("connection", "").lower() == "close":
            c.close()
            return


serve_forever(sys.argv[1], sys.argv[2], sys.argv[3], serve)
