#!/usr/bin/env python3
"""The split of servers we did not write, against the client's own marks
(loadgen -o): every request the client sent is found by its X-Request-Id
with outcome ok, its components sum exactly to total_ns (TTFT components to
ttft_ns), and total_ns / ttft_ns are within max(1 ms, 2%) of the client's
send-to-last-byte / send-to-first-token. A client mark is taken when its
thread runs after recv() returns: the kernel's count of that thread's CPU
waits (loadgen's *_wait_ns, from schedstat) makes each truth a range
[mark - waits, mark], and the error is the distance from it; a new
connection's SYN may have been processed up to connect()'s return
(client_marks.start_late).

  client_accuracy.py NAME REPORT.jsonl LOADGEN.jsonl [--inner TRANSPORT] [--allow N]

--allow N: up to N requests may be off, each on the side of a client mark
taken late (a client whose marks carry lateness of its own that no counter
ties to a call: the Python gRPC client's thread handoffs); any beyond N, or
one where latsplit's value is the larger, fails.

--inner: the report was taken at an inner hop (behind a proxy), so its
totals are not the client's: each request must be found, ok, of that
transport, and sum exactly; total and TTFT are not compared.

Prints the error table and one PASS/FAIL line per check.
"""
import json
import sys

from client_marks import waits

name, rep_path, lg_path = sys.argv[1:4]
opts = sys.argv[4:]
inner = opts[opts.index("--inner") + 1] if "--inner" in opts else None
allow = int(opts[opts.index("--allow") + 1]) if "--allow" in opts else 0
reqs = {}
for r in map(json.loads, open(rep_path)):
    if r.get("type") in (None, "request") and r.get("x_request_id"):
        reqs.setdefault(r["x_request_id"], []).append(r)
client = {j["x_request_id"]: j for j in map(json.loads, open(lg_path)) if not j.get("error")}

missing, dup, not_ok, sums_bad = [], [], [], []
errs = {"total_ns": [], "ttft_ns": []}
bad = {"total_ns": [], "ttft_ns": []}
for xrid, c in client.items():
    rs = reqs.get(xrid)
    if not rs:
        missing.append(xrid)
        continue
    if len(rs) > 1:
        dup.append(xrid)
    r = rs[0]
    if r.get("outcome") != "ok" or (inner and r.get("transport") != inner):
        not_ok.append((xrid, r.get("outcome"), r.get("transport"), r.get("unparsed_why")))
        continue
    comps = [v for v in r["components"].values() if v is not None]
    tcomps = [v for v in r["ttft_components"].values() if v is not None]
    if sum(comps) != r["total_ns"] or (r["ttft_ns"] is not None and sum(tcomps) != r["ttft_ns"]):
        sums_bad.append(xrid)
    rng = {"total_ns": (c["total_ns"] - waits(c, "total_ns"), c["total_ns"]),
           "ttft_ns": (c["ttft_ns"] - waits(c, "ttft_ns"), c["ttft_ns"])}
    for k, (lo, hi) in ([] if inner else rng.items()):
        got = r.get(k)
        if got is None:
            bad[k].append((xrid, None, lo, hi))
            continue
        want = hi if got >= hi else lo if got <= lo else got
        e = got - want
        errs[k].append((abs(e), xrid, got, want))
        if abs(e) > max(1e6, 0.02 * want):
            bad[k].append((xrid, got, lo, hi))

n = len(client)
print(f"  {name}: client {n} requests, report {sum(len(v) for v in reqs.values())} with an id")
print(f"  {'quantity':10s} {'p50 err ms':>10s} {'max err ms':>10s}  worst (got / truth ms)")
for k, e in errs.items():
    e.sort()
    if e:
        w = e[-1]
        print(f"  {k:10s} {e[len(e)//2][0]/1e6:10.3f} {w[0]/1e6:10.3f}  {w[1]} ({w[2]/1e6:.3f} / {w[3]/1e6:.3f})")


def line(ok, check, what, off):
    print(("PASS" if ok else "FAIL") + f" {name}.{check}: {what}" + ("" if ok else f"; {off}"))


line(n > 0 and not missing and not dup, "found",
     f"{n - len(missing)} of {n} client requests found once", f"missing {missing[:3]}, twice {dup[:3]}")
line(n > 0 and not not_ok, "outcome", f"{n - len(missing) - len(not_ok)} of {n - len(missing)} ok"
     + (f", transport {inner}" if inner else ""),
     f"not ok: {not_ok[:3]}")
line(not sums_bad, "sums", "components sum exactly", f"not: {sums_bad[:3]}")
for k in [] if inner else errs:
    m = len(errs[k]) + len([b for b in bad[k] if b[1] is None])
    late = [b for b in bad[k] if b[1] is not None and b[1] < b[2]]  # the client's mark the later
    ok = n > 0 and len(bad[k]) <= allow and len(late) == len(bad[k])
    line(ok, k, f"{m - len(bad[k])}/{m} within max(1 ms, 2%) of the client's"
         + (f" ({len(bad[k])} allowed, its mark the later: {[b[0] for b in bad[k]]})" if ok and bad[k] else ""),
         "off (id, got, truth range ms): "
         f"{[(x, g and round(g/1e6, 3), round(lo/1e6, 3), round(hi/1e6, 3)) for x, g, lo, hi in bad[k][:3]]}")
