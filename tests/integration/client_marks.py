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
