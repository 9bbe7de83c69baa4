#!/usr/bin/python3
"""A grpcio client of tools/servers/grpc-stream.py that logs its own marks
in loadgen's format (one JSON line per RPC: x_request_id, total_ns from the
call to the stream's end, ttft_ns to the first message, the waits for a
CPU in between of the calling thread and of gRPC's core threads (they carry
the bytes), from schedstat, as first_wait_ns and end_wait_ns, and the time
call() took to start the call as start_wait_ns). C threads share one
channel: one HTTP/2 connection carries their streams at once.

  grpc_client.py HOST:PORT OUT.jsonl -c C -n N [--tokens T --token-ms MS --prefill-ms MS]
                 [--prompt TEXT] [--meta NAME=VALUE]...
"""
import argparse
import gc
import json
import os
import sys
import threading
import time

import grpc


def run_delays():
    """Each thread's time waiting for a CPU (schedstat), by thread: gRPC's
    core reads the socket and hands messages over in threads of its own, so
    the calling thread's count alone misses a wait that delays its mark."""
    got = {}
    for t in os.listdir("/proc/self/task"):
        try:
            got[t] = int(open(f"/proc/self/task/{t}/schedstat").read().split()[1])
        except (OSError, IndexError, ValueError):
            pass  # a thread that ended
    got["steal"] = steal_ns()
    return got


def steal_ns():
    """Time the hypervisor ran others on this machine's CPUs (/proc/stat's
    steal, all CPUs, in 10 ms ticks): no thread's schedstat shows it, and a
    client mark taken after it is late by it (seen: 4% of 2 CPUs stolen)."""
    return int(open("/proc/stat").readline().split()[8]) * 10_000_000


WORKERS = set()  # the other calling threads' ids: their waits are not this call's


def waited(since):
    """CPU waits since `since` (run_delays(), with the steal under key
    "steal") of this thread and of gRPC's own threads, and the machine's
    stolen time; a thread that ended meanwhile takes its waits with it."""
    me = str(threading.get_native_id())
    now = run_delays()
    return sum(max(0, v - since.get(t, 0)) for t, v in now.items()
               if t == "steal" or t == me or t not in WORKERS)


def worker(call, a, k, out, lock):
    WORKERS.add(str(threading.get_native_id()))
    # unlogged first calls: grpcio sets up its per-thread paths (the first
    # call's marks came 1.5 ms late)
    for i in range(3):
        for _ in call(f"1,0,0,{a.prompt}".encode(), metadata=(("x-request-id", f"warm-{k}-{i}"),) + a.meta):
            pass
    for i in range(a.n):
        xid = f"{a.id_prefix}{k}-{i}"
        d0 = run_delays()
        t0 = time.monotonic_ns()
        first = first_wait = None
        n = 0
        rec = {"x_request_id": xid}
        try:
            # the call is started (its batch handed to gRPC's core) when
            # call() returns: until then the request had not left, so that
            # time is the client's (start_wait_ns: a range, as CPU waits)
            it = call(f"{a.tokens},{a.token_ms},{a.prefill_ms},{a.prompt}".encode(),
                      metadata=(("x-request-id", xid),) + a.meta)
            started = time.monotonic_ns() - t0
            for _ in it:
                if first is None:
                    first = time.monotonic_ns()
                    first_wait = waited(d0)
                n += 1
            t1 = time.monotonic_ns()
            rec.update(total_ns=t1 - t0, ttft_ns=first - t0, start_wait_ns=started,
                       first_wait_ns=first_wait, end_wait_ns=waited(d0), tokens=n, status=0)
        except grpc.RpcError as e:
            rec.update(error=str(e.code()))
        with lock:
            out.write(json.dumps(rec) + "\n")
        time.sleep(0.01)


def main():
    # Threads wait for the GIL up to the switch interval (5 ms by default)
    # while blocked, which no schedstat shows: this client's marks were up
    # to 1.3 ms late with it. 0.2 ms keeps them within a fraction of that.
    sys.setswitchinterval(0.0002)
    # and a collection pauses the thread that allocates, running: no
    # schedstat shows that either (all 4 threads' marks 2 ms late at once)
    gc.disable()
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("out")
    ap.add_argument("-c", type=int, default=4)
    ap.add_argument("-n", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=8)
    ap.add_argument("--token-ms", type=int, default=10)
    ap.add_argument("--prefill-ms", type=int, default=20)
    ap.add_argument("--id-prefix", default="grpc-")
    ap.add_argument("--prompt", default="hello")
    ap.add_argument("--meta", action="append", default=[], help="NAME=VALUE metadata on every call")
    a = ap.parse_args()
    a.meta = tuple(tuple(m.split("=", 1)) for m in a.meta)
    channel = grpc.insecure_channel(a.target)
    grpc.channel_ready_future(channel).result(timeout=10)
    call = channel.unary_stream("/llm.Generate/Stream")
    lock = threading.Lock()
    with open(a.out, "w") as out:
        ts = [threading.Thread(target=worker, args=(call, a, k, out, lock)) for k in range(a.c)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()


if __name__ == "__main__":
    main()
