"""The request side of the tests' small HTTP/1.1 servers (tail_server.py,
iov_server.py): one request read off a connection, whatever the reads."""


def read_request(recv, buf):
    """Reads one request with recv() (bytes, b"" at EOF) after buf, the bytes
    already read. Returns (headers, body, rest), headers lower-cased, rest
    the bytes after it; None when the connection ended first."""
    while b"\r\n\r\n" not in buf:
        d = recv()
        if not d:
            return None
        buf += d
    head, _, buf = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    hdr = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    n = int(hdr.get("content-length", "0"))
    while len(buf) < n:
        d = recv()
        if not d:
            return None
        buf += d
    return hdr, buf[:n], buf[n:]
