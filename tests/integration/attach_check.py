"""Checks for test_attach.sh: a capture's requests against the clients' own
logs (loadgen JSONL, or the Python client's), with no truth taken from
latsplit itself.

usage: attach_check.py NAME REPORT.jsonl WINDOW CLIENT.jsonl [CLIENT.jsonl...]
         [--partial-min N] [--pids N] [--method M --path P]

WINDOW is "t0,t1" (CLOCK_MONOTONIC ns): the capture's first and last
instants. Every client request that started after t0 + 50 ms and ended before
t1 - 50 ms (so it began after the capture met its connection) must be found
by its X-Request-Id, with outcome ok, the right method/path/status, a split
whose components sum exactly to its total, and a total within
[client total - waits - srtt - 2 ms, client total + 2 ms]: the client's own
view, less the first byte's trip and the last ACK's, and less the time the
client itself waited for a CPU around its marks (loadgen's start_wait_ns and
end_wait_ns, the Python client's wait_ns: schedstat's run_delay) or ran
(the Python client's cpu_ns), which the server never saw. Requests latsplit marks
partial have no split. No request may carry a method/path that no client sent
(a body misparsed as a head).
"""
import argparse
import json
import sys


def ok(name, cond, detail=""):
    print(("PASS " if cond else "FAIL ") + name + (": " + detail if detail else ""))
    return cond


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("report")
    ap.add_argument("window")
    ap.add_argument("clients", nargs="+")
    ap.add_argument("--partial-min", type=int, default=0)
    ap.add_argument("--pids", type=int, default=0)
    ap.add_argument("--method", default="POST")
    ap.add_argument("--path", default="/v1/completions")
    a = ap.parse_args()
    t0, t1 = (int(x) for x in a.window.split(","))
    rs = [r for r in map(json.loads, open(a.report)) if r.get("type") != "verdict"]
    cl = [json.loads(l) for f in a.clients for l in open(f)]
    by_xid = {}
    for r in rs:
        if r["x_request_id"]:
            by_xid.setdefault(r["x_request_id"], []).append(r)

    inside = [c for c in cl if c["start_ns"] > t0 + 50_000_000 and c["end_ns"] < t1 - 50_000_000
              and not c.get("error")]
    missing, wrong, far = [], [], []
    for c in inside:
        got = by_xid.get(c["x_request_id"], [])
        if len(got) != 1:
            missing.append(c["x_request_id"])
            continue
        r = got[0]
        if r["outcome"] != "ok" or r["method"] != a.method or r["path"] != a.path or \
                r["status"] != c["status"]:
            wrong.append((c["x_request_id"], r["outcome"], r["method"], r["path"], r["status"]))
            continue
        slack = 2_000_000 + (r["srtt_us"] or 0) * 1000
        waits = (c.get("start_wait_ns", 0) + c.get("end_wait_ns", 0) + c.get("wait_ns", 0) +
                 c.get("cpu_ns", 0))
        if not (c["total_ns"] - waits - slack <= r["total_ns"] <= c["total_ns"] + 2_000_000):
            far.append((c["x_request_id"], r["total_ns"], c["total_ns"], r["srtt_us"], waits))
    ok(f"attach.{a.name}.found", inside and not missing and not wrong,
       f"{len(inside) - len(missing) - len(wrong)} of {len(inside)} client requests inside the "
       f"capture found ok; missing {missing[:3]} wrong {wrong[:3]}")
    ok(f"attach.{a.name}.client_view", inside and not far,
       f"{len(inside) - len(far)} of {len(inside)} totals within the client's +- srtt + 2 ms; "
       f"off: {far[:3]}")

    whole = [r for r in rs if r["total_ns"] is not None]
    exact = [r for r in whole if sum(v for v in r["components"].values() if v is not None)
             == r["total_ns"]]
    ok(f"attach.{a.name}.sums", whole and len(exact) == len(whole),
       f"{len(exact)}/{len(whole)} requests' components sum exactly to the total")

    sent = {(a.method, a.path)}
    heads = [r for r in rs if r["method"] is not None]
    bad = [(r["id"], r["method"], r["path"]) for r in heads if (r["method"], r["path"]) not in sent
           or (r["x_request_id"] and r["x_request_id"] not in {c["x_request_id"] for c in cl})]
    ok(f"attach.{a.name}.no_misparse", not bad, f"{len(heads)} request heads, all sent by a "
       f"client; bad: {bad[:3]}")

    partial = [r for r in rs if r["outcome"] == "partial"]
    split = [r["id"] for r in partial if r["total_ns"] is not None or r["ttft_ns"] is not None]
    if a.partial_min:
        ok(f"attach.{a.name}.partial", len(partial) >= a.partial_min and not split,
           f"{len(partial)} requests in flight when the capture began shown partial (want >= "
           f"{a.partial_min}), none split; split: {split[:3]}")
    if a.pids:
        pids = {r["pid"] for r in rs if r["outcome"] == "ok"}
        ok(f"attach.{a.name}.pids", len(pids) == a.pids,
           f"requests answered by {len(pids)} server processes (want {a.pids})")


try:
    main()
except Exception as e:  # a broken input is a failed check, never a silent one
    print(f"FAIL attach.{sys.argv[1] if len(sys.argv) > 1 else '?'}.check: {type(e).__name__}: {e}")
