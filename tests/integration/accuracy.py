#!/usr/bin/env python3
"""Compare latsplit's split with the mock engine's ground truth.

  accuracy.py NAME MODE REPORT.jsonl TRUTH.jsonl VERDICT.txt EXPECT

MODE: events (tolerance max(1 ms, 2%)) or inferred (max(5 ms, 10%)).
Ground truth, per request, over latsplit's own served window [T_sched, T_out]
(T_sched from the engine's truth) and, with engine events, its front-end
window [T_read, T_queued], which DESIGN.md §6 classifies the same way (a parse
preempted for a slice is CPU there, or compute while another batch's kernels
run): the engine's step intervals and every request's parse partitioned with
the same precedence as DESIGN.md §6 — compute, then transfer (H2D, D2H), then
CPU work of the engine group as host + queueing.cpu together (the mock knows
its wall time there, not which part a thread spent runnable), then other.
CPU work is the engine thread's (scheduling, host burn, handing out tokens)
and the front end's (from a token being ready to its write returning). The
mock cannot tell when, after the simulated device finished, its thread was
waiting for a CPU (queueing.cpu) or still asleep in the timer (other): the
truth for host + queueing.cpu is therefore a range, from "CPU work begins when
the thread noticed" to "when the device finished", and latsplit must land in
it, give or take the tolerance.
With NO_CPU_CHECK (lossy scenario) host + queueing.cpu, compute and transfer
are not compared: time blocked in writes is network first (DESIGN.md §6),
and the mock's truth does not see it. queueing.engine is the
engine's true scheduling time minus latsplit's T_queued (its T_read without
engine events): DESIGN.md §6 defines it as [T_queued, T_sched], so this
isolates the T_sched error; the mock's own read mark comes after the read
returns, late by any CPU wait in between. frontend_ns ([T_read, T_queued])
is compared with the mock's own queued mark minus latsplit's T_read. The mock
takes its queued and scheduled marks just before the probe fires and again
after it returns (t_queued_hi, t_sched_hi): a thread preempted in between
leaves those truths a range, and latsplit must land in it. Prints a
per-component error table and a PASS/FAIL line per check.
"""
import json
import sys

name, mode, rep_path, truth_path, verdict_path, expect = sys.argv[1:7]
engine_only = len(sys.argv) > 7 and sys.argv[7] == "NO_CPU_CHECK"
# CPU contention without engine events: when the engine's scheduler thread is
# starved, the moment it admits a request is invisible to any inference from
# the GPU and scheduler timelines; a request here and there is off by one
# starved slice. Reported, not asserted (engine events make it exact).
sched_info_only = mode == "inferred" and len(sys.argv) > 7 and sys.argv[7] == "STARVED"
tol_abs, tol_rel = (1e6, 0.02) if mode == "events" else (5e6, 0.10)

steps, truth = [], {}
for line in open(truth_path):
    j = json.loads(line)
    if "step" in j:
        steps.append(j)
    else:
        truth[j["x_request_id"]] = j
reqs = [r for r in map(json.loads, open(rep_path)) if r.get("type") != "verdict"]

fe = [f for t in truth.values() for f in t.get("fe", [])]
# every request's parse, from the mock's read mark to its queued marks
parse = [(t["t_read"], t.get("t_queued_hi") or t["t_queued"]) for t in truth.values()]
parse_lo = [(t["t_read"], t["t_queued"]) for t in truth.values()]
layers = {"compute": [tuple(s["compute"]) for s in steps],
          "transfer": [tuple(s["h2d"]) for s in steps] + [tuple(s["d2h"]) for s in steps],
          "cpu": [(s["busy_from"], s["host"][1]) for s in steps] + [(f[0], f[2]) for f in fe] + parse,
          "cpu_lo": [(s["noticed"], s["host"][1]) for s in steps] + [(f[1], f[2]) for f in fe] + parse_lo}
ORDER = ["compute", "transfer", "cpu"]


def merged(spans):
    out = []
    for b, e in sorted(x for x in spans if x[1] > x[0]):
        if out and b <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return out


layers = {k: merged(v) for k, v in layers.items()}


def partition(a, b, order=ORDER, extra=None):
    """Nanoseconds of [a, b) per class, highest precedence first; extra:
    one more span of the last class."""
    lay = {k: layers[k] for k in order}
    if extra:
        lay[order[-1]] = merged([tuple(x) for x in lay[order[-1]]] + [tuple(extra)])
    pts = {a, b}
    for k in order:
        for s, e in lay[k]:
            if e > a and s < b:
                pts.update((max(s, a), min(e, b)))
    pts = sorted(pts)
    out = dict.fromkeys(order + ["other"], 0)
    for t0, t1 in zip(pts, pts[1:]):
        mid = (t0 + t1) / 2
        for k in order:
            if any(s <= mid < e for s, e in lay[k] if s <= t1):
                out[k] += t1 - t0
                break
        else:
            out["other"] += t1 - t0
    return out


def ok_err(got, want, lo=None):
    """Within tolerance of want, or of the range [lo, want]."""
    if lo is not None and lo <= got <= want:
        return True
    ref = want if lo is None or got > want else lo
    return abs(got - ref) <= max(tol_abs, tol_rel * abs(ref))


rows = {k: [] for k in ["queueing.engine", "frontend", "compute", "transfer", "host+queueing.cpu"]}
bad, matched, sums_bad = [], 0, 0
for r in reqs:
    t = truth.get(r["x_request_id"] or "")
    if not t or r["outcome"] != "ok" or r["total_ns"] is None:
        continue
    matched += 1
    c = r["components"]
    if all(v is not None for v in c.values()) and sum(c.values()) != r["total_ns"]:
        sums_bad += 1
    m = r["marks"]
    if m["t_sched"] is None:
        bad.append((r["x_request_id"], "no T_sched (T_read %s, T_first %s, truth T_sched %s)"
                    % (m.get("t_read"), m.get("t_first"), t["t_sched"])))
        continue
    # the mock marks T_queued / T_sched just before its probe fires and
    # again after it returns: a thread preempted in between (the contention
    # scenario) leaves each truth a range [mark, mark_hi]
    sched_hi = t.get("t_sched_hi") or t["t_sched"]
    queued_hi = t.get("t_queued_hi") or t["t_queued"]
    tp = partition(t["t_sched"], m["t_out"])
    lo = partition(sched_hi, m["t_out"], ["compute", "transfer", "cpu_lo"])["cpu_lo"]
    # The front-end window [T_read, T_queued] is classified like the served
    # one (DESIGN §6): a parse preempted for a slice shows there as CPU, or
    # as compute when another batch's kernels were in flight. Its truth: the
    # same layers, with this request's parse as CPU from latsplit's T_read
    # (the read returning; the mock marks after it) to the queued marks.
    if m.get("t_queued"):
        ft = partition(m["t_read"], m["t_queued"], extra=(m["t_read"], queued_hi))
        flo = partition(m["t_read"], m["t_queued"], ["compute", "transfer", "cpu_lo"])
        tp = {k: tp[k] + ft[k] for k in tp}
        lo += flo["cpu_lo"]
    sub = r["sub"]
    got = {"queueing.engine": sub["queueing.engine"], "compute": c["compute"],
           "transfer": c["transfer"], "host+queueing.cpu": c["host"] + sub["queueing.cpu"]}
    if r.get("frontend_ns") is not None and "frontend" in rows:
        got["frontend"] = r["frontend_ns"]
    # queueing.engine starts at the engine's queued event when there is one
    # (DESIGN §6), else at T_read; the front end is [T_read, T_queued]
    q_from = m.get("t_queued") or m["t_read"]
    want = {"queueing.engine": sched_hi - q_from, "compute": tp["compute"],
            "transfer": tp["transfer"], "host+queueing.cpu": tp["cpu"],
            "frontend": queued_hi - m["t_read"]}
    lows = {"host+queueing.cpu": lo, "queueing.engine": t["t_sched"] - q_from,
            "frontend": t["t_queued"] - m["t_read"]}
    for k in rows:
        if engine_only and k != "queueing.engine":
            continue
        if k not in got:
            continue
        low = lows.get(k)
        ref = want[k] if low is None or got[k] > want[k] else (low if got[k] < low else got[k])
        rows[k].append((got[k] - ref, ref, low))
        if not ok_err(got[k], want[k], low):
            if sched_info_only and k in ("queueing.engine", "host+queueing.cpu"):
                continue  # shown in the table
            bad.append((r["x_request_id"], k, round(got[k] / 1e6, 3), round(want[k] / 1e6, 3)))

print(f"  {name} ({mode}): {matched} requests matched to ground truth; error = latsplit - truth (ms;"
      " for host+queueing.cpu, distance from the truth range)")
print(f"  {'component':20s} {'truth mean':>11s} {'err p50':>9s} {'err max':>9s} {'within tol':>11s}")
for k, v in rows.items():
    if not v:
        continue
    errs = sorted(abs(e) for e, _, _ in v)
    within = sum(ok_err(w + e, w) for e, w, _ in v)
    mean = sum(w for _, w, _ in v) / len(v)
    print(f"  {k:20s} {mean / 1e6:11.3f} {errs[len(errs) // 2] / 1e6:9.3f} "
          f"{errs[-1] / 1e6:9.3f} {within:5d}/{len(v):<5d}")
verdict = open(verdict_path).read()
vline = next((l for l in verdict.splitlines() if l.startswith("verdict:")), "")
if sched_info_only:
    print("  (queueing.engine and host+queueing.cpu of this scenario are reported, not asserted:"
          " a starved scheduler's admission time cannot be inferred)")
print(("PASS" if matched >= 5 and not bad else "FAIL") +
      f" accuracy.{name}.{mode}: {len(bad)} component(s) out of tolerance" +
      (f", e.g. {bad[:3]}" if bad else ""))
print(("PASS" if sums_bad == 0 and matched else "FAIL") +
      f" accuracy.{name}.{mode}.sums: components sum to total for all {matched} requests"
      + (f" ({sums_bad} do not)" if sums_bad else ""))
print(("PASS" if f"verdict: {expect}" in vline else "FAIL") +
      f" accuracy.{name}.{mode}.verdict: {vline} (want {expect}...)")
