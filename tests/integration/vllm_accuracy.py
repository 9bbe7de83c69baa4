#!/usr/bin/env python3
"""Accuracy of the split on the vLLM-shaped engine (tools/vllm-shaped), per
request, against truths latsplit never computed:

- queueing.engine vs the core's own (scheduled - received), max(1 ms, 2%);
- frontend_ns vs (core received - the API server's uvicorn data_received of
  the request), max(1 ms, 5%);
- total_ns vs the client's own send-to-last-byte (loadgen), max(1 ms, 2%);
- ttft_ns vs the client's send-to-first-token, max(1 ms, 2%);
  a client mark is taken when its thread runs after recv() returns; the
  kernel's own count of how long that thread then waited for a CPU
  (first_wait_ns / end_wait_ns, from schedstat's run_delay), and how long
  it waited between its start mark and its send returning (start_wait_ns;
  on a new connection, its connect() call: client_marks.start_late),
  make each client truth a range [mark - waits, mark], and the error is
  the distance from that range;
- the core takes its received and scheduled marks before its engine event
  and again after the event returned (core_recv_hi, scheduled_hi): a
  process preempted in between leaves those truths ranges too;
- components sum exactly to total_ns, TTFT components to ttft_ns.

  vllm_accuracy.py NAME REPORT.jsonl TRUTH.jsonl LOADGEN.jsonl [--info QUANTITY]...

--info QUANTITY: its errors are printed in the table, not judged (a source
that cannot place that mark as well as the tolerance asks, stated by the
caller).

Prints the error table (p50 / max absolute error and the worst request) and
one PASS/FAIL line per check.
"""
import json
import sys

from client_marks import waits

name, rep_path, truth_path, lg_path = sys.argv[1:5]
info = {sys.argv[i + 1] for i in range(5, len(sys.argv) - 1) if sys.argv[i] == "--info"}
reqs = {r["x_request_id"]: r for r in map(json.loads, open(rep_path))
        if r.get("type") != "verdict" and r.get("x_request_id")}
api, core = {}, {}
for line in open(truth_path):
    j = json.loads(line)
    (api if j.get("side") == "api" else core)[j["x_request_id"]] = j
client = {j["x_request_id"]: j for j in map(json.loads, open(lg_path)) if not j.get("error")}

checks = {"queueing.engine": (1e6, 0.02), "frontend_ns": (1e6, 0.05),
          "total_ns": (1e6, 0.02), "ttft_ns": (1e6, 0.02)}
errs = {k: [] for k in checks}
bad = {k: [] for k in checks}
sums_bad = []
n = 0
for xrid, c in client.items():
    r = reqs.get(xrid)
    if not r or xrid not in core or xrid not in api:
        continue
    n += 1
    t = core[xrid]
    # each truth is a range [lo, hi]: the core marks before its engine event
    # and again after it returned (a preempted process); a client mark is
    # late by the CPU wait its thread had after recv() returned
    recv_hi = t.get("core_recv_hi", t["core_recv"])
    sched_hi = t.get("scheduled_hi", t["scheduled"])
    rng = {"queueing.engine": (t["scheduled"] - recv_hi, sched_hi - t["core_recv"]),
           "frontend_ns": (t["core_recv"] - api[xrid]["http_read"], recv_hi - api[xrid]["http_read"]),
           "total_ns": (c["total_ns"] - waits(c, "total_ns"), c["total_ns"]),
           "ttft_ns": (c["ttft_ns"] - waits(c, "ttft_ns"), c["ttft_ns"])}
    got = {"queueing.engine": r["sub"].get("queueing.engine"), "frontend_ns": r.get("frontend_ns"),
           "total_ns": r["total_ns"], "ttft_ns": r["ttft_ns"]}
    for k, (ab, rel) in checks.items():
        lo, hi = rng[k]
        want = hi if got[k] is None or got[k] >= hi else lo if got[k] <= lo else got[k]
        if got[k] is None:
            bad[k].append((xrid, None, lo, hi))
            continue
        e = got[k] - want
        errs[k].append((abs(e), xrid, got[k], want))
        if abs(e) > max(ab, rel * want):
            bad[k].append((xrid, got[k], lo, hi))
    comps = [v for v in r["components"].values() if v is not None]
    tcomps = [v for v in r["ttft_components"].values() if v is not None]
    if sum(comps) != r["total_ns"] or (r["ttft_ns"] is not None and sum(tcomps) != r["ttft_ns"]):
        sums_bad.append(xrid)

print(f"  {name}: {n} requests matched (client {len(client)}, report {len(reqs)}, truth {len(core)})")
print(f"  {'quantity':18s} {'tolerance':>16s} {'p50 err ms':>10s} {'max err ms':>10s}  worst (got / truth ms)")
for k, (ab, rel) in checks.items():
    e = sorted(errs[k])
    if not e:
        print(f"  {k:18s} no values")
        continue
    w = e[-1]
    print(f"  {k:18s} {f'max({ab/1e6:.0f} ms, {rel*100:.0f}%)':>16s} {e[len(e)//2][0]/1e6:10.3f} "
          f"{w[0]/1e6:10.3f}  {w[1]} ({w[2]/1e6:.3f} / {w[3]/1e6:.3f})")
ok = n >= 0.9 * len(client) and n > 0
print(("PASS" if ok else "FAIL") + f" vllm.{name}.matched: {n} of {len(client)} client requests found in report and truth")
print(("PASS" if not sums_bad else "FAIL") + f" vllm.{name}.sums: components sum exactly for all {n}"
      + (f" (not: {sums_bad[:3]})" if sums_bad else ""))
for k in checks:
    if k in info:
        print(f"  {k}: not judged (--info): {n - len(bad[k])}/{n} within tolerance")
        continue
    print(("PASS" if not bad[k] else "FAIL") + f" vllm.{name}.{k}: {n - len(bad[k])}/{n} within tolerance"
          + (f"; off (id, got, truth range ms): "
             f"{[(x, g and round(g/1e6, 3), round(lo/1e6, 3), round(hi/1e6, 3)) for x, g, lo, hi in bad[k][:3]]}"
             if bad[k] else ""))
