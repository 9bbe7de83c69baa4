#!/usr/bin/env python3
"""Odd HTTP clients for integration tests (stdlib only).

  clients.py pipeline HOST PORT     3 requests in one send, read 3 responses
  clients.py garbage HOST PORT      binary garbage, then close
  clients.py half HOST PORT         half a request head, then close
  clients.py reset HOST PORT        start a streaming request, RST mid-stream
  clients.py odd HOST PORT          a request line with raw non-ASCII bytes, then
                                    one longer than --capture-bytes (3 KB query)
  clients.py idle HOST PORT MS XRID connect, pause MS, then one request
                                    (Connection: close); prints its own marks as
                                    JSON: connect_ns, idle_ns, total_ns (send to
                                    last byte), and how late those marks may be:
                                    start_wait_ns (the send call's own time),
                                    end_wait_ns (the last bytes' kernel arrival
                                    stamp, SO_TIMESTAMPNS, to the mark)
"""
import json
import socket
import struct
import sys
import time

# Linux's SO_TIMESTAMPNS (= SCM_TIMESTAMPNS), which Python's socket module
# does not name
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def connect(host, port):
    s = socket.create_connection((host, int(port)), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def post(path, body, stream=False, close=False):
    b = body.encode()
    return (f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(b)}\r\n{'Connection: close' + chr(13) + chr(10) if close else ''}"
            f"\r\n").encode() + b


def pipeline(host, port):
    s = connect(host, port)
    reqs = (b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n"
            + post("/v1/completions", '{"max_tokens": 2}')
            + post("/v1/chat/completions", '{"max_tokens": 3, "stream": true}')
            + b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n")
    s.sendall(reqs)
    data = b""
    deadline = time.time() + 10
    while data.count(b"HTTP/1.1 ") < 4 or not data.endswith((b"}", b"0\r\n\r\n")):
        chunk = s.recv(65536)
        if not chunk or time.time() > deadline:
            break
        data += chunk
    time.sleep(0.2)
    s.close()
    print(data.count(b"HTTP/1.1 "), "responses")


def garbage(host, port):
    s = connect(host, port)
    s.sendall(bytes(range(256)) * 4)
    time.sleep(0.2)
    s.close()


def half(host, port):
    s = connect(host, port)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Le")
    time.sleep(0.3)
    s.close()


def reset(host, port):
    s = connect(host, port)
    s.sendall(post("/v1/completions", '{"max_tokens": 200, "stream": true}'))
    data = b""
    while b"data:" not in data:  # some of the stream: at least one token
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()     # linger 0: RST


def odd(host, port):
    for line in (b"GET /caf\xc3\xa9 HTTP/1.1", b"GET /v1/models?q=" + b"a" * 3000 + b" HTTP/1.1"):
        s = connect(host, port)
        xrid = b"nonascii" if b"caf" in line else b"longline"
        s.sendall(line + b"\r\nHost: t\r\nX-Request-Id: " + xrid + b"\r\nConnection: close\r\n\r\n")
        while s.recv(65536):
            pass
        s.close()


def idle(host, port, ms, xrid):
    t0 = time.monotonic_ns()
    s = connect(host, port)
    t_est = time.monotonic_ns()
    time.sleep(int(ms) / 1000)
    req = post("/v1/completions", '{"max_tokens": 3}', close=True)
    req = req.replace(b"Host: t\r\n", b"Host: t\r\nX-Request-Id: " + xrid.encode() + b"\r\n")
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    t_send = time.monotonic_ns()
    s.sendall(req)
    start_wait = time.monotonic_ns() - t_send
    t_last, end_wait = t_send, 0
    while True:
        chunk, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(16))
        if not chunk:
            break
        t_last, now = time.monotonic_ns(), time.time_ns()
        end_wait = 0
        for level, kind, data in anc:  # struct timespec, CLOCK_REALTIME
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
                sec, nsec = struct.unpack("qq", data[:16])
                end_wait = max(0, now - (sec * 10**9 + nsec))
    s.close()
    print(json.dumps({"x_request_id": xrid, "connect_ns": t_est - t0, "idle_ns": t_send - t_est,
                      "total_ns": t_last - t_send, "start_wait_ns": start_wait,
                      "end_wait_ns": end_wait}))


if __name__ == "__main__":
    {"pipeline": pipeline, "garbage": garbage, "half": half, "reset": reset,
     "idle": idle, "odd": odd}[sys.argv[1]](*sys.argv[2:])
