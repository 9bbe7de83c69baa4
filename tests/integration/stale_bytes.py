"""Counts bytes in a capture's records that no field put there: string
fields past their NUL, and the padding of variable-size records after their
payload (where each is: build/event-fields, from events.h). Those bytes were
once whatever the ring buffer or a per-CPU scratch held before, an earlier
record's socket payload among them: a capture must hold zeros there.

usage: stale_bytes.py EVENT_FIELDS_OUTPUT CAPTURE
prints: "records N checked M stale K" and up to 3 examples
"""
import struct
import sys

from rawcap import frames

strs, tails, segs = {}, {}, {}
for line in open(sys.argv[1]):
    kind, typ, *nums = line.split()
    {"str": strs, "tail": tails, "segs": segs}[kind].setdefault(int(typ), []).append(
        tuple(map(int, nums)))

n = checked = stale = 0
examples = []
for records in frames(open(sys.argv[2], "rb").read()):
    at = 0
    while at + 4 <= len(records):
        typ, size = struct.unpack_from("<HH", records, at)
        if size < 8:
            break
        rec = records[at:at + size]
        at += size
        n += 1
        bad = []
        for off, length in strs.get(typ, []):
            field = rec[off:off + length]
            nul = field.find(b"\0")
            if nul >= 0 and any(field[nul:]):
                bad.append(field)
        for len_off, len_size, data_off in tails.get(typ, []):
            used = int.from_bytes(rec[len_off:len_off + len_size], "little")
            end = len(rec)
            for n_off, n_size, entry in segs.get(typ, []):  # a table after the padding
                nseg = int.from_bytes(rec[n_off:n_off + n_size], "little")
                if nseg:
                    end = data_off + (used + 7) // 8 * 8
                    if any(rec[end + nseg * entry:]):
                        bad.append(rec[end + nseg * entry:])
            if any(rec[data_off + used:end]):
                bad.append(rec[data_off + used:end])
        if typ in strs or typ in tails:
            checked += 1
        if bad:
            stale += 1
            if len(examples) < 3:
                examples.append(f"type {typ}: {bad[0][:48]!r}")
print(f"records {n} checked {checked} stale {stale}")
for e in examples:
    print("  " + e)
