"""What the tests' small HTTP/1.1 servers (tail_server.py, iov_server.py)
share: one request read off a connection, whatever the reads, and the
accept loop (a thread per connection; READY_FILE made once listening)."""
import socket
import threading


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


def serve_forever(host, port, ready_file, handle):
    """Listens on host:port, creates ready_file, and runs handle(conn) in a
    thread per accepted connection."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
    s.listen(64)
    open(ready_file, "w").close()
    while True:
        c, _ = s.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()
