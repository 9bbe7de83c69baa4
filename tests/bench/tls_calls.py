#!/usr/bin/env python3
"""TLS calls in a loop, for the uprobe cost per call (make bench): a client
and a server SSLObject in this one process, over memory BIOs (no socket:
only libssl's own work and whatever a uprobe adds). Each round trip is 2
SSL_write_ex and 2 SSL_read_ex calls that move 100 bytes each.

  tls_calls.py CERT KEY N     prints: ns per round trip
"""
import ssl
import sys
import time

cert, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
sctx.load_cert_chain(cert, key)
cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
cctx.check_hostname = False
cctx.verify_mode = ssl.CERT_NONE
b = [ssl.MemoryBIO() for _ in range(4)]  # c->s, s->c: each side's in and out
srv = sctx.wrap_bio(b[0], b[1], server_side=True)
cli = cctx.wrap_bio(b[2], b[3])


def pump():
    b[0].write(b[3].read())
    b[2].write(b[1].read())


for _ in range(10):  # the handshake, both sides stepping in turn
    for side in (cli, srv):
        try:
            side.do_handshake()
        except ssl.SSLWantReadError:
            pass
        pump()
msg = b"x" * 100
t0 = time.perf_counter_ns()
for _ in range(n):
    cli.write(msg)
    pump()
    srv.read(100)
    srv.write(msg)
    pump()
    cli.read(100)
print((time.perf_counter_ns() - t0) / n)
