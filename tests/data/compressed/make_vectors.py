#!/usr/bin/python3
"""Regenerates the OP_COMPRESSED vectors in this directory with an
implementation independent of opmsg: pymongo 3.11's message encoder and
compressor (Debian 12 python3-pymongo) and the zstd command-line tool.

Usage: /usr/bin/python3 make_vectors.py   (writes next to itself)

Each NAME.bin is one OP_COMPRESSED message; NAME.merged.bson is the document
that merging it must give, encoded by pymongo's bson from the values the
script passed in (not read back from the message).
"""
import os
import random
import struct
import subprocess

import bson
from bson.son import SON
from pymongo import message
from pymongo.compression_support import ZlibContext
from pymongo.read_preferences import ReadPreference
from bson.codec_options import DEFAULT_CODEC_OPTIONS

HERE = os.path.dirname(os.path.abspath(__file__))
random.seed(20261130)  # pymongo draws requestIDs from random


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def op_msg_insert(ctx):
    docs = [SON([("_id", i), ("name", "item-%d" % i), ("qty", i * 3)])
            for i in range(3)]
    cmd = SON([("insert", "coll"), ("ordered", True), ("documents", docs)])
    _, data, _, _ = message._op_msg(0, cmd, "test",
                                    ReadPreference.PRIMARY, False, False,
                                    DEFAULT_CODEC_OPTIONS, ctx=ctx)
    # pymongo 3.11 appends $db and, for every read preference, also
    # $readPreference to the body.
    merged = SON([("insert", "coll"), ("ordered", True), ("$db", "test"),
                  ("$readPreference", SON([("mode", "primary")])),
                  ("documents", docs)])
    return data, merged


def main():
    # 1. pymongo: OP_MSG insert (body + kind-1 "documents"), zlib level -1.
    data, merged = op_msg_insert(ZlibContext(-1))
    write("pymongo_zlib_op_msg.bin", data)
    write("pymongo_zlib_op_msg.merged.bson", bson.encode(merged))

    # 2. pymongo: OP_QUERY find on test.coll, zlib level 9.
    query = SON([("find", "coll"), ("filter", SON([("qty", SON([("$gt", 1)]))]))])
    _, data, _ = message.query(0, "test.$cmd", 0, -1, query, None,
                               DEFAULT_CODEC_OPTIONS, ctx=ZlibContext(9))
    write("pymongo_zlib_op_query.bin", data)
    write("pymongo_zlib_op_query.merged.bson", bson.encode(query))

    # 3. zstd CLI frame (with content checksum) around pymongo's
    #    uncompressed OP_MSG; the 25-byte header is packed here.
    plain, merged = op_msg_insert(None)
    payload = plain[16:]
    frame = subprocess.run(["zstd", "-q", "-c", "-19", "--check", "-"],
                           input=payload, stdout=subprocess.PIPE,
                           check=True).stdout
    request_id = struct.unpack_from("<i", plain, 4)[0]
    header = struct.pack("<iiiiiiB", 25 + len(frame), request_id, 0, 2012,
                         2013, len(payload), 3)
    write("zstdcli_op_msg.bin", header + frame)
    write("zstdcli_op_msg.merged.bson", bson.encode(merged))


if __name__ == "__main__":
    main()
