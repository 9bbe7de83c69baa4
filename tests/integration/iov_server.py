#!/usr/bin/env python3
"""An HTTP/1.1 server that reads and writes with vectored I/O at awkward
boundaries, for the secrets test: requests are read with recvmsg_into into
buffers of 7, 5 and 11 bytes then 4 KiB (a header value cut across
iovecs), responses go out with one sendmsg of many iovecs (each head line
cut in two, a Set-Cookie value among them) and streams as uvloop writes
them (size line, data, CRLF; the last with [DONE] and the 0-chunk). A body
with "split": true streams each event in three chunks, each its own
sendmsg ('data: ', the JSON, the blank line: a server writing an event in
pieces, a proxy re-chunking it); one with "ndjson": true answers as
Ollama's API does (chunked application/x-ndjson, a JSON line per chunk).
Every body carries PLANTEDCOMPLETION0009. Stdlib only.

  iov_server.py HOST PORT READY_FILE
"""
import sys

from minihttp import read_request, serve_forever

SECRET_COOKIE = b"session=PLANTEDSETCOOKIE0008"
TEXT = b"PLANTEDCOMPLETION0009 jumps over"


def recv_some(c):
    bufs = [bytearray(7), bytearray(5), bytearray(11), bytearray(4096)]
    n = c.recvmsg_into(bufs)[0]
    return b"".join(bytes(b) for b in bufs)[:n]


def halves(line):
    k = max(1, len(line) // 2)
    return [line[:k], line[k:]]


def serve(c):
    buf = b""
    while True:
        req = read_request(lambda: recv_some(c), buf)
        if not req:
            c.close()
            return
        hdr, body, buf = req
        xrid = hdr.get("x-request-id", "none").encode()
        stream = b'"stream": true' in body
        split = b'"split": true' in body
        ndjson = b'"ndjson": true' in body
        hl = [b"HTTP/1.1 200 OK\r\n", b"X-Request-Id: " + xrid + b"\r\n",
              b"Set-Cookie: " + SECRET_COOKIE + b"\r\n"]
        if ndjson:
            hl += [b"Content-Type: application/x-ndjson\r\n", b"Transfer-Encoding: chunked\r\n\r\n"]
            c.sendmsg(hl)
            for i in range(4):
                line = b'{"response": "' + TEXT + b'", "done": %s}\n' % (b"true" if i == 3 else b"false")
                c.sendmsg([b"%x\r\n" % len(line), line, b"\r\n"] + ([b"0\r\n\r\n"] if i == 3 else []))
        elif split:
            hl += [b"Content-Type: text/event-stream\r\n", b"Transfer-Encoding: chunked\r\n\r\n"]
            c.sendmsg(hl)
            for i in range(3):
                for part in (b"data: ", b'{"text": "' + TEXT + b" " + str(i).encode() + b'"}', b"\n\n"):
                    c.sendmsg([b"%x\r\n" % len(part), part, b"\r\n"])
            c.sendmsg([b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"])
        elif stream:
            hl += [b"Content-Type: text/event-stream\r\n", b"Transfer-Encoding: chunked\r\n\r\n"]
            iov = [p for l in hl for p in halves(l)]
            c.sendmsg(iov)
            for i in range(3):
                ev = b'data: {"text": "' + TEXT + b" " + str(i).encode() + b'"}\n\n'
                iov = [b"%x\r\n" % len(ev), ev, b"\r\n"]
                if i == 2:
                    done = b"data: [DONE]\n\n"
                    iov += [b"%x\r\n" % len(done), done, b"\r\n", b"0\r\n\r\n"]
                c.sendmsg(iov)
        else:
            payload = b'{"text": "' + TEXT + b'"}'
            hl += [b"Content-Type: application/json\r\n",
                   b"Content-Length: " + str(len(payload)).encode() + b"\r\n\r\n"]
            c.sendmsg([p for l in hl for p in halves(l)] + [payload[:9], payload[9:]])


serve_forever(sys.argv[1], sys.argv[2], sys.argv[3], serve)
