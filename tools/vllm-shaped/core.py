"""The engine core of the vLLM-shaped test engine: a separate process, as
vLLM V1's EngineCore, fed over ZMQ by the API server.

A continuous-batching loop: requests arrive on a PULL socket and join the
waiting queue; each step admits waiting requests while fewer than
--max-running run (FCFS), runs one step of real CPU work (numpy matmuls
standing in for the GPU: a prefill costs per prompt token, a decode step per
running sequence), and sends every running request one token on a PUSH
socket. Engine events (arrived, queued, scheduled, first_token, finished)
go through latsplit_engine.py unless --no-engine-events. Ground truth, one
JSON line per request: core receive, scheduled, first token, finished, on
CLOCK_MONOTONIC (time.monotonic_ns); core_recv_hi and scheduled_hi are taken
again once the queued / scheduled event returned, so a process preempted
between its mark and its event leaves the truth a range, not a wrong point.
"""
import argparse
import collections
import json
import os
import sys
import time

import numpy as np
import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from latsplit_engine import Engine  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--in-addr", required=True)
    ap.add_argument("--out-addr", required=True)
    ap.add_argument("--max-running", type=int, default=4)
    ap.add_argument("--step-us", type=int, default=3000, help="CPU work of one decode step")
    ap.add_argument("--prefill-us-per-token", type=float, default=20.0)
    ap.add_argument("--truth")
    ap.add_argument("--no-engine-events", action="store_true")
    a = ap.parse_args()

    ev = Engine() if not a.no_engine_events else None
    truth = open(a.truth, "a", buffering=1) if a.truth else None
    ctx = zmq.Context()
    rx = ctx.socket(zmq.PULL)
    rx.bind(a.in_addr)
    tx = ctx.socket(zmq.PUSH)
    tx.connect(a.out_addr)
    poller = zmq.Poller()
    poller.register(rx, zmq.POLLIN)

    # a matmul of this size is the unit of "device" work; calibrate it
    m = np.random.default_rng(1).random((96, 96))
    t0 = time.perf_counter()
    for _ in range(50):
        m @ m
    unit_us = (time.perf_counter() - t0) / 50 * 1e6

    def work(us):
        for _ in range(max(1, int(us / unit_us))):
            m @ m

    waiting = collections.deque()
    running = []
    next_id = 1
    while True:
        timeout = 0 if (waiting or running) else 100
        for sock, _ in poller.poll(timeout):
            while True:
                try:
                    msg = sock.recv_json(zmq.NOBLOCK)
                except zmq.Again:
                    break
                if msg.get("op") == "stop":
                    return
                t = time.monotonic_ns()
                r = {"rid": next_id, "xrid": msg["xrid"], "prompt_tokens": msg["prompt_tokens"],
                     "max_tokens": msg["max_tokens"], "done": 0, "recv": t}
                next_id += 1
                if ev:
                    ev.arrived(r["rid"], r["xrid"])
                waiting.append(r)
                if ev:
                    ev.queued(r["rid"], r["prompt_tokens"])
                r["recv_hi"] = time.monotonic_ns()
        if not waiting and not running:
            continue
        # schedule: FCFS while there is room
        admitted = []
        while waiting and len(running) < a.max_running:
            r = waiting.popleft()
            r["sched"] = time.monotonic_ns()
            running.append(r)
            admitted.append(r)
        for r in admitted:
            if ev:
                ev.scheduled(r["rid"], len(running))
            r["sched_hi"] = time.monotonic_ns()
        # one step: prefill of the admitted, a decode of everyone
        work(a.step_us + sum(r["prompt_tokens"] for r in admitted) * a.prefill_us_per_token)
        now = time.monotonic_ns()
        for r in list(running):
            r["done"] += 1
            last = r["done"] >= r["max_tokens"]
            if r["done"] == 1:
                r["first"] = now
                if ev:
                    ev.first_token(r["rid"])
            out = {"xrid": r["xrid"], "i": r["done"], "last": last}
            if r["done"] == 1:  # the core's own marks, as vLLM's EngineCore reports them
                out.update(queued=r["recv"], scheduled=r["sched"], first=r["first"])
            if last:
                out["last_token"] = now
            tx.send_json(out)
            if last:
                running.remove(r)
                r["finish"] = time.monotonic_ns()
                if ev:
                    ev.finished(r["rid"], 0)
                if truth:
                    truth.write(json.dumps({"x_request_id": r["xrid"], "core_recv": r["recv"],
                                            "scheduled": r["sched"], "first_token": r["first"],
                                            "core_recv_hi": r["recv_hi"], "scheduled_hi": r["sched_hi"],
                                            "finished": r["finish"],
                                            "prompt_tokens": r["prompt_tokens"]}) + "\n")


if __name__ == "__main__":
    main()
