#!/usr/bin/env python3
"""Structural check of a Perfetto trace written by `latsplit timeline`,
reading the protobuf wire format itself (no Perfetto library):

- it parses as Trace { repeated TracePacket packet = 1 } to the last byte;
- the first packet holds a ClockSnapshot with BOOTTIME (6) and MONOTONIC (3);
- every packet carries trusted_packet_sequence_id; every event packet
  timestamp_clock_id 3 (MONOTONIC);
- every event's track was described by an earlier packet; every interned
  name iid was defined before (or in) its first use;
- per track, slice begins and ends pair, never ending what was not begun;
- timestamps never go back within the sequence.

  perfetto_check.py TRACE [MIN_REQUEST_TRACKS]
Prints a summary line and PASS/FAIL lines.
"""
import sys


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i


def fields(b):
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        f, t = key >> 3, key & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 1:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif t == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
            if i > len(b):
                raise ValueError("length past the end")
        elif t == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ValueError(f"wire type {t}")
        out.append((f, v))
    return out


def get(fs, f, default=None):
    for k, v in fs:
        if k == f:
            return v
    return default


data = open(sys.argv[1], "rb").read()
min_req = int(sys.argv[2]) if len(sys.argv) > 2 else 1
bad = []
packets = [v for f, v in fields(data) if f == 1]
described, named, depth = set(), set(), {}
last_ts = 0
nslices = ninst = ncount = 0
req_tracks = 0
clocks = set()
for n, p in enumerate(packets):
    fs = fields(p)
    if get(fs, 10) is None:
        bad.append(f"packet {n}: no trusted_packet_sequence_id")
    cs = get(fs, 6)
    if cs is not None:
        clocks |= {get(fields(c), 1) for f, c in fields(cs) if f == 1}
    td = get(fs, 60)
    if td is not None:
        tdf = fields(td)
        described.add(get(tdf, 1))
        if get(tdf, 5) == 1:
            req_tracks += 1
    idata = get(fs, 12)
    if idata is not None:
        for f, en in fields(idata):
            if f == 2:
                named.add(get(fields(en), 1))
    te = get(fs, 11)
    if te is None:
        continue
    ts = get(fs, 8)
    if get(fs, 58) != 3:
        bad.append(f"packet {n}: timestamp_clock_id {get(fs, 58)}, not 3")
    if ts is None or ts < last_ts:
        bad.append(f"packet {n}: timestamp {ts} goes back from {last_ts}")
    last_ts = ts or last_ts
    tf = fields(te)
    track, typ, iid = get(tf, 11), get(tf, 9), get(tf, 10)
    if track not in described:
        bad.append(f"packet {n}: track {track} not described before")
    if iid is not None and iid not in named:
        bad.append(f"packet {n}: name iid {iid} not interned")
    if typ == 1:
        depth[track] = depth.get(track, 0) + 1
        nslices += 1
    elif typ == 2:
        depth[track] = depth.get(track, 0) - 1
        if depth[track] < 0:
            bad.append(f"packet {n}: track {track} ends a slice it never began")
    elif typ == 3:
        ninst += 1
    elif typ == 4:
        ncount += 1
open_ = [t for t, d in depth.items() if d]
if open_:
    bad.append(f"{len(open_)} tracks end with slices still open")
if not {3, 6} <= clocks:
    bad.append(f"clock snapshot has {sorted(clocks)}, not BOOTTIME (6) and MONOTONIC (3)")
print(f"  {len(packets)} packets, {len(described)} tracks ({req_tracks} requests), {nslices} slices, "
      f"{ninst} instants, {ncount} counter values, {len(named)} interned names")
for b in bad[:5]:
    print("   ", b)
print(("PASS" if not bad else "FAIL") + " timeline.structure: descriptors before events, begins and ends "
      "paired, timestamps monotonic, clocks and sequence ids set")
print(("PASS" if req_tracks >= min_req else "FAIL") + f" timeline.requests: {req_tracks} request tracks (want >= {min_req})")
