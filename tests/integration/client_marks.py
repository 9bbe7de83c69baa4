"""What a client's own marks (loadgen -o, clients.py) can tell, shared by the
accuracy checkers."""


def start_late(c):
    """How much later than the client's start mark the request may have
    started at the server: the CPU wait until its send returned
    (start_wait_ns); on a new connection the request starts with its SYN,
    which the receiving stack may process any time before connect()
    returned (connect_ns, from the start mark: a loaded host defers its
    softirqs to ksoftirqd while connect() sleeps, a wait no run_delay
    counts)."""
    return max(c.get("start_wait_ns", 0), c.get("connect_ns", 0))


# the client's CPU wait before each of its later marks
_MARK_WAIT = {"total_ns": "end_wait_ns", "ttft_ns": "first_wait_ns"}


def waits(c, k):
    """How much of the client's quantity k (total_ns or ttft_ns) may be
    the client's own: start_late, and its CPU waits before that mark
    (end_wait_ns, first_wait_ns: a mark taken after such a wait is late by
    it). A server-side time may be shorter than the client's by this."""
    return start_late(c) + c.get(_MARK_WAIT[k], 0)
