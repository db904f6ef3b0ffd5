#!/usr/bin/python3
"""Checks what the example programs print against expected BSON, for
consumer-test.sh. The expectations come from the seed vectors' .merged.bson
files (decoded here with the bson package of python3-pymongo), never from
libopmsg itself.

  check_output.py json OUT BSON        line 1 of OUT (canonical Extended JSON)
                                       is the document in the file BSON
  check_output.py view OUT BSON        OUT is what examples/view printed for the
                                       message whose merged form is BSON
  check_output.py people OUT           line 1 of OUT is the insert examples/encode
                                       builds (see the comment at its top)
  check_output.py batches OUT N SIZE   OUT lists N documents split into batches
                                       of SIZE ("batch i: documents a-b (n), ...")
  check_output.py cursor-reply MSG     writes to MSG a find reply whose batch is a
                                       kind-1 "cursor.firstBatch" sequence
  check_output.py cursor-json OUT      line 1 of OUT is that reply, merged
  check_output.py cursor-view OUT      OUT is what examples/view printed for it
Exit 0 when it matches, 1 with a message on stderr otherwise.
"""
import re
import struct
import sys

import bson
from bson import json_util
from bson.codec_options import CodecOptions
from bson.son import SON

JSON_OPTS = json_util.JSONOptions(json_mode=json_util.JSONMode.CANONICAL,
                                  document_class=SON)
CODEC = CodecOptions(document_class=SON)


def shape(value):
    """A comparable form that keeps key order and BSON types (an int32 and
    an int64 differ, a double is compared by its bits so NaN equals NaN)."""
    if isinstance(value, dict):
        return ("doc", [(k, shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("array", [shape(v) for v in value])
    if isinstance(value, float):
        return ("double", struct.pack("<d", value))
    return (type(value).__name__, value)


def fail(msg):
    sys.stderr.write("check_output: %s\n" % msg)
    sys.exit(1)


def load_bson(path):
    with open(path, "rb") as f:
        return bson.decode(f.read(), CODEC)


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def from_json(line):
    return json_util.loads(line, json_options=JSON_OPTS)


def check_json(out, expected_path):
    lines = read_lines(out)
    if not lines:
        fail("%s is empty" % out)
    if shape(from_json(lines[0])) != shape(load_bson(expected_path)):
        fail("the JSON in %s is not the document in %s" % (out, expected_path))


def expect_line(lines, i, want):
    if i >= len(lines) or lines[i] != want:
        got = lines[i] if i < len(lines) else "<end of output>"
        fail("line %d: expected %r, got %r" % (i + 1, want, got))


def check_view(out, expected_path):
    """The view's output, rebuilt from the expected merged document: the
    first key, $db, "ordered", then every array of documents that a
    sequence became (top level only, which is what the seed vectors have)."""
    lines = read_lines(out)
    doc = load_bson(expected_path)
    keys = list(doc.keys())
    i = 0
    expect_line(lines, i, "command: %s" % keys[0])
    i += 1
    if isinstance(doc.get("$db"), str):
        expect_line(lines, i, "$db: %s" % doc["$db"])
        i += 1
    if isinstance(doc.get("ordered"), bool):
        expect_line(lines, i, "ordered: %s" % str(doc["ordered"]).lower())
        i += 1
    n_seq = 0
    while i < len(lines) and lines[i].startswith("sequence "):
        m = re.match(r"sequence (\S+): (\d+) documents, (\d+) bytes$", lines[i])
        if not m:
            fail("line %d: malformed %r" % (i + 1, lines[i]))
        name, count, nbytes = m.group(1), int(m.group(2)), int(m.group(3))
        arr = doc.get(name)
        if not isinstance(arr, list):
            fail("sequence %s is not an array of the merged document" % name)
        if count != len(arr):
            fail("sequence %s: %d documents, expected %d" % (name, count, len(arr)))
        want_bytes = sum(len(bson.encode(d, codec_options=CODEC)) for d in arr)
        if nbytes != want_bytes:
            fail("sequence %s: %d bytes, expected %d" % (name, nbytes, want_bytes))
        i += 1
        for k, want in enumerate(arr):
            if i >= len(lines) or not lines[i].startswith("  "):
                fail("sequence %s: document %d missing" % (name, k))
            if shape(from_json(lines[i][2:])) != shape(want):
                fail("sequence %s: document %d differs" % (name, k))
            i += 1
        n_seq += 1
    # Top-level arrays of documents that are not body fields are the
    # sequences; the seed vectors' bodies hold no such arrays of their own.
    m = re.match(r"merged top level: (\d+) fields \((\d+) from the body, "
                 r"(\d+) sequences, (\d+) paths\)$", lines[i] if i < len(lines) else "")
    if not m:
        fail("line %d: expected the 'merged top level' summary" % (i + 1))
    top, body, seqs, paths = (int(g) for g in m.groups())
    if top != len(keys) or seqs != n_seq or body != len(keys) - n_seq or paths != 0:
        fail("summary %r does not match %d keys and %d sequences"
             % (lines[i], len(keys), n_seq))
    if i + 1 != len(lines):
        fail("unexpected output after line %d" % (i + 1))


def check_people(out):
    """examples/encode's message, merged: written out here from its
    description, not taken from the program."""
    people = [SON([("_id", i + 1), ("name", n)])
              for i, n in enumerate(["Ada", "Grace", "Edsger"])]
    want = SON([("insert", "people"), ("ordered", True), ("$db", "example"),
                ("documents", people)])
    lines = read_lines(out)
    if not lines or shape(from_json(lines[0])) != shape(want):
        fail("line 1 of %s is not the encoded insert" % out)


# A find reply as a server could legally send it: the batch travels as a
# document sequence whose identifier is the dotted path cursor.firstBatch.
CURSOR_BODY = SON([("cursor", SON([("id", bson.int64.Int64(0)), ("ns", "db.coll")])),
                   ("ok", 1.0)])
CURSOR_BATCH = [SON([("_id", 1), ("v", "a")]), SON([("_id", 2), ("v", "b")])]


def write_cursor_reply(path):
    body = bson.encode(CURSOR_BODY, codec_options=CODEC)
    docs = b"".join(bson.encode(d, codec_options=CODEC) for d in CURSOR_BATCH)
    ident = b"cursor.firstBatch\x00"
    seq = struct.pack("<i", 4 + len(ident) + len(docs)) + ident + docs
    payload = struct.pack("<I", 0) + b"\x00" + body + b"\x01" + seq
    header = struct.pack("<iiii", 16 + len(payload), 7, 3, 2013)
    with open(path, "wb") as f:
        f.write(header + payload)


def check_cursor_json(out):
    """The merge puts the batch inside the body's cursor, after its fields."""
    cursor = SON(list(CURSOR_BODY["cursor"].items()) + [("firstBatch", CURSOR_BATCH)])
    want = SON([("cursor", cursor), ("ok", 1.0)])
    lines = read_lines(out)
    if not lines or shape(from_json(lines[0])) != shape(want):
        fail("line 1 of %s is not the merged cursor reply" % out)


def check_cursor_view(out):
    lines = read_lines(out)
    want = ["command: cursor", "path cursor gains a sequence",
            "merged top level: 2 fields (1 from the body, 1 sequences, 1 paths)"]
    seq_lines = [l for l in lines if l.startswith("sequence ")]
    if seq_lines != ["sequence cursor.firstBatch: 2 documents, %d bytes"
                     % sum(len(bson.encode(d, codec_options=CODEC)) for d in CURSOR_BATCH)]:
        fail("sequence lines %r" % seq_lines)
    docs = [l[2:] for l in lines if l.startswith("  ")]
    if [shape(from_json(d)) for d in docs] != [shape(d) for d in CURSOR_BATCH]:
        fail("the batch's documents differ")
    rest = [l for l in lines if not l.startswith("sequence ") and not l.startswith("  ")]
    if rest != want:
        fail("expected %r, got %r" % (want, rest))


def check_batches(out, total, size):
    lines = read_lines(out)
    batches = [l for l in lines if l.startswith("batch ")]
    want = (total + size - 1) // size
    if len(batches) != want:
        fail("%d batches, expected %d" % (len(batches), want))
    for idx, line in enumerate(batches):
        m = re.match(r"batch (\d+): documents (\d+)-(\d+) \((\d+)\), (\d+) bytes$", line)
        if not m:
            fail("malformed %r" % line)
        b, first, last, n, nbytes = (int(g) for g in m.groups())
        count = min(size, total - idx * size)
        if (b, first, last, n) != (idx, idx * size, idx * size + count - 1, count):
            fail("%r: expected batch %d with documents %d-%d"
                 % (line, idx, idx * size, idx * size + count - 1))
        if nbytes <= 16:
            fail("%r: a message is longer than its header" % line)


def main(argv):
    if len(argv) == 4 and argv[1] == "json":
        check_json(argv[2], argv[3])
    elif len(argv) == 4 and argv[1] == "view":
        check_view(argv[2], argv[3])
    elif len(argv) == 3 and argv[1] == "people":
        check_people(argv[2])
    elif len(argv) == 3 and argv[1] == "cursor-reply":
        write_cursor_reply(argv[2])
    elif len(argv) == 3 and argv[1] == "cursor-json":
        check_cursor_json(argv[2])
    elif len(argv) == 3 and argv[1] == "cursor-view":
        check_cursor_view(argv[2])
    elif len(argv) == 5 and argv[1] == "batches":
        check_batches(argv[2], int(argv[3]), int(argv[4]))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
