"""Writes a capture's bytes as they would sit in memory: the file header,
then every frame's records decompressed (include/latsplit/capture.h). For
tests that grep what a capture holds, below any latsplit output.

usage: rawcap.py CAPTURE > RAW
"""
import struct
import sys
import zlib

FRAME = struct.Struct("<IHHIIIIQQQII")
MAGIC = 0x52465346

data = open(sys.argv[1], "rb").read()
hdr_size = struct.unpack_from("<I", data, 16)[0]
out = sys.stdout.buffer
out.write(data[:hdr_size])
at = hdr_size
while at + FRAME.size <= len(data):
    magic, _type, _flags, comp_len, _raw_len, *_ = FRAME.unpack_from(data, at)
    if magic != MAGIC:
        at += 1
        continue
    at += FRAME.size
    out.write(zlib.decompress(data[at:at + comp_len]))
    at += comp_len
