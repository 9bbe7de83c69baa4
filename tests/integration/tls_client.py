#!/usr/bin/env python3
"""A TLS client for an OpenAI-compatible streaming server, logging its own
marks as loadgen does (one JSONL line per request: x_request_id, total_ns,
ttft_ns and the waits that may make a mark late), for client_accuracy.py.

  tls_client.py HOST:PORT OUT.jsonl [-c N] [-n N] [--max-tokens N]
                [--prompt-bytes N] [--header 'Name: value'] [--id-prefix P]

Each of the -c workers is a process (no GIL between a mark and its
thread) with one keep-alive TLS connection; the first request on it is
timed from before connect(), so its TCP and TLS handshakes are in its total
(as the server side sees them), less the client's own time from connect()'s
return to its ClientHello leaving (client_idle_ns; the server counts that
the client's too). A mark is taken when the process runs after recv()
returns: how late it may be (the larger of the kernel's count of its CPU
waits, schedstat run_delay plus the machine's stolen time, across that
recv, and the time since the kernel stamped the bytes as arrived), and the
CPU waits from the start mark until the request was sent, are logged as
end_wait_ns, first_wait_ns and start_wait_ns.
"""
import argparse
import json
import os
import socket
import ssl
import struct
import sys
import time


def steal_ns():
    """The machine's stolen time, all CPUs (10 ms ticks): no schedstat shows it."""
    with open("/proc/stat") as f:
        v = f.readline().split()
    return int(v[8]) * (10**9 // os.sysconf("SC_CLK_TCK")) if len(v) > 8 else 0


def waits():
    """This process's run_delay plus the machine's steal, ns."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) + steal_ns()


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


class Conn:
    """TLS over a raw socket through memory BIOs, so this client sees its
    own ciphertext: when its ClientHello left (the time from connect()'s
    return to then is the client's own, outside the server's total), and
    the kernel's arrival stamp of what each recv() brought
    (SO_TIMESTAMPNS, taken before the receive softirq: a mark is at most
    that late)."""

    def __init__(self, host, port, ctx):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.connect((host, port))
        self.connected = time.monotonic_ns()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.inc, self.out, server_hostname="localhost")
        self.hello = None
        while True:
            try:
                self.tls.do_handshake()
                self.flush()
                break
            except ssl.SSLWantReadError:
                self.flush()
                self.fill()

    def flush(self):
        data = self.out.read()
        if data:
            if self.hello is None:
                self.hello = time.monotonic_ns()
            self.sock.sendall(data)

    def fill(self):
        """One recv into the TLS object; the monotonic time its newest
        bytes reached the host (0: unknown); b"" at EOF."""
        data, anc, _, _ = self.sock.recvmsg(65536, socket.CMSG_SPACE(16))
        at = 0
        for level, kind, c in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(c) >= 16:
                sec, nsec = struct.unpack("qq", c[:16])
                real, mono = time.time_ns(), time.monotonic_ns()
                at = mono - (real - (sec * 10**9 + nsec))
        if data:
            self.inc.write(data)
        return data, at

    def send(self, data):
        self.tls.write(data)
        self.flush()

    def read(self):
        """Plaintext from one recv (possibly b"" when only TLS records
        without data came), the arrival stamp; None at EOF."""
        data, at = self.fill()
        if not data:
            return None, 0
        got = b""
        while True:
            try:
                got += self.tls.read(65536)
            except ssl.SSLWantReadError:
                return got, at


def late(mark, d0, at):
    """How late a mark may be: this process's CPU waits since d0, or the
    time since its bytes reached the host."""
    return max(waits() - d0, mark - at if at else 0)


def one(c, host, port, a, xrid, ctx):
    body = json.dumps({"model": "m", "max_tokens": a.max_tokens, "stream": True,
                       "prompt": "x" * a.prompt_bytes}).encode()
    head = (f"POST /v1/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Content-Type: application/json\r\nX-Request-Id: {xrid}\r\n"
            + "".join(h + "\r\n" for h in a.header)
            + f"Content-Length: {len(body)}\r\n\r\n").encode()
    w0 = waits()
    t0 = time.monotonic_ns()
    r = {"x_request_id": xrid}
    if c is None:
        c = Conn(host, port, ctx)
        r["client_idle_ns"] = c.hello - c.connected  # connect() returned .. ClientHello sent
    c.send(head + body)
    r["start_wait_ns"] = waits() - w0
    buf, first = b"", None
    while True:
        d0 = waits()
        data, at = c.read()
        now = time.monotonic_ns()
        if data is None:
            r["error"] = "eof"
            return None, r
        buf += data
        if first is None and b"data:" in buf.split(b"\r\n\r\n", 1)[-1]:
            first = now
            r["first_wait_ns"] = late(now, d0, at)
        if buf.endswith(b"0\r\n\r\n"):
            r["end_wait_ns"] = late(now, d0, at)
            break
    idle = r.get("client_idle_ns", 0)
    r["ttft_ns"] = first - t0 - idle
    r["total_ns"] = now - t0 - idle
    r["status"] = int(buf.split(b" ", 2)[1])
    return c, r


def worker(w, a, host, port, out):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    c = None
    # the first name lookup of a process loads NSS modules: a millisecond or
    # two before the first SYN that no server sees; done before any mark
    socket.getaddrinfo(host, port)
    with open(out, "a", buffering=1) as f:
        for i in range(w, a.n, a.c):
            c, r = one(c, host, port, a, f"{a.id_prefix}{i}", ctx)
            f.write(json.dumps(r) + "\n")
    if c:
        c.sock.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("addr")
    ap.add_argument("out")
    ap.add_argument("-c", type=int, default=2)
    ap.add_argument("-n", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--prompt-bytes", type=int, default=200)
    ap.add_argument("--header", action="append", default=[])
    ap.add_argument("--id-prefix", default="tls-")
    a = ap.parse_args()
    host, port = a.addr.rsplit(":", 1)
    open(a.out, "w").close()
    kids = []
    for w in range(a.c):
        pid = os.fork()
        if pid == 0:
            try:
                worker(w, a, host, int(port), a.out)
            finally:
                os._exit(0)
        kids.append(pid)
    bad = sum(os.waitpid(k, 0)[1] != 0 for k in kids)
    n = sum(1 for _ in open(a.out))
    print(f"tls_client: {n} requests by {a.c} workers", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
