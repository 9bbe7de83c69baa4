"""Writes a capture's bytes as they would sit in memory: the file header,
then every frame's records decompressed (include/latsplit/capture.h), and
for column-transformed frames (LS_FRAME_F_COLUMNS) laid back out record by
record, by this file's own reading of the layout in user/core/columns.h (a
secret spread over byte columns would not be found by a grep). For tests
that grep what a capture holds, below any latsplit output.

usage: rawcap.py CAPTURE > RAW   (or import it: frames())
"""
import struct
import sys
import zlib

FRAME = struct.Struct("<IHHIIIIQQQII")
MAGIC = 0x52465346
COLUMNS = 2


def uncolumn(b, nrec):
    """u16 ngroups; nrec group bytes; ngroups x (u16 type, u16 size, u32
    count); then each group's records byte-column by byte-column; each
    record's ts (bytes 8..16) a delta to the previous record's."""
    ngroups = struct.unpack_from("<H", b, 0)[0]
    idx = b[2:2 + nrec]
    at = 2 + nrec
    groups = []
    for g in range(ngroups):
        _type, size, count = struct.unpack_from("<HHI", b, at + 8 * g)
        groups.append([size, count, 0, 0])
    at += 8 * ngroups
    for g in groups:
        g[2] = at
        at += g[0] * g[1]
    out, prev = bytearray(), 0
    for k in range(nrec):
        size, count, base, nxt = groups[idx[k]]
        groups[idx[k]][3] += 1
        rec = bytearray(b[base + i * count + nxt] for i in range(size))
        prev = (prev + struct.unpack_from("<Q", rec, 8)[0]) & (2**64 - 1)
        struct.pack_into("<Q", rec, 8, prev)
        out += rec
    return bytes(out)

def frames(data):
    """Each frame's records, decompressed and laid out record by record."""
    at = struct.unpack_from("<I", data, 16)[0]
    while at + FRAME.size <= len(data):
        magic, _type, flags, comp_len, _raw_len, nrec, *_ = FRAME.unpack_from(data, at)
        if magic != MAGIC:
            at += 1
            continue
        at += FRAME.size
        raw = zlib.decompress(data[at:at + comp_len])
        yield uncolumn(raw, nrec) if flags & COLUMNS else raw
        at += comp_len


if __name__ == "__main__":
    data = open(sys.argv[1], "rb").read()
    out = sys.stdout.buffer
    out.write(data[:struct.unpack_from("<I", data, 16)[0]])
    for records in frames(data):
        out.write(records)
