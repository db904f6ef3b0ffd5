#!/usr/bin/python3
# Tests of the `opmsg` command-line tool, run by CTest:
#
#   cli_test.py OPMSG_BINARY TESTS_DATA_DIR GROUP
#
# Each GROUP is one CTest test. Exit 0 = pass, 1 = fail. Expected values
# come from the vectors' manifests and from an independent reading of the
# bytes here (Python's bson module from python3-bson), never from the tool's
# own output.
#
# Copyright 2026 The opmsg authors. Licensed under the Apache License 2.0.

import glob
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import bson
from bson import json_util
from bson.codec_options import CodecOptions
from bson.son import SON

OPMSG = sys.argv[1]
DATA = sys.argv[2]
GROUP = sys.argv[3]

ERROR_LINE = re.compile(r"^opmsg: ([a-z0-9]+(?:-[a-z0-9]+)*): (.+)$")
ORDERED = CodecOptions(document_class=SON)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def run(args, stdin=None):
    p = subprocess.run([OPMSG] + args, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def data(*parts):
    return os.path.join(DATA, *parts)


def read(*parts):
    with open(data(*parts), "rb") as f:
        return f.read()


def error_lines(stderr):
    """The stderr lines, each checked against the contract's format."""
    lines = stderr.splitlines()
    for line in lines:
        check(ERROR_LINE.match(line), "stderr line format: %r" % line)
    return lines


def expect_rule(args, rule, what, stdin=None):
    """args must fail with exit 1 and exactly one line naming rule."""
    rc, out, err = run(args, stdin)
    lines = error_lines(err)
    check(rc == 1, "%s: exit %d, want 1 (stderr %r)" % (what, rc, err))
    check(len(lines) == 1, "%s: %d stderr lines, want 1: %r" % (what, len(lines), err))
    if lines:
        m = ERROR_LINE.match(lines[0])
        check(m and m.group(1) == rule,
              "%s: rule in %r, want %s" % (what, lines[0], rule))
    return rc, out, err


# --- an independent encoder of wire messages ------------------------------

def enc(doc):
    """BSON of doc with its keys in their order (bson.encode moves a
    top-level _id first; a nested document keeps its order)."""
    wrapped = bson.encode(SON([("x", doc)]))
    n = struct.unpack_from("<i", wrapped, 7)[0]
    return wrapped[7:7 + n]


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def kind0(doc):
    return b"\x00" + (doc if isinstance(doc, bytes) else enc(doc))


def kind1(ident, docs):
    payload = ident.encode() + b"\x00" + b"".join(
        d if isinstance(d, bytes) else enc(d) for d in docs)
    return b"\x01" + struct.pack("<i", 4 + len(payload)) + payload


def op_msg(sections, flags=0, checksum=False, request_id=0, response_to=0):
    if checksum:
        flags |= 1
    rest = struct.pack("<I", flags) + b"".join(sections)
    length = 16 + len(rest) + (4 if checksum else 0)
    msg = struct.pack("<iiii", length, request_id, response_to, 2013) + rest
    if checksum:
        msg += struct.pack("<I", crc32c(msg))
    return msg


def frames(stream):
    """Cuts a stream of messages by their headers."""
    out, off = [], 0
    while off < len(stream):
        n = struct.unpack_from("<i", stream, off)[0]
        out.append(stream[off:off + n])
        off += n
    return out


def decode(raw):
    return bson.decode(raw, codec_options=ORDERED)


def from_json(text):
    return json_util.loads(text, json_options=json_util.CANONICAL_JSON_OPTIONS.with_options(document_class=SON))


def body_of(msg):
    """The kind-0 document and the sequences of an OP_MSG, in wire order."""
    flags = struct.unpack_from("<I", msg, 16)[0]
    end = len(msg) - (4 if flags & 1 else 0)
    off, body, seqs = 20, None, []
    while off < end:
        kind = msg[off]
        if kind == 0:
            n = struct.unpack_from("<i", msg, off + 1)[0]
            body = msg[off + 1:off + 1 + n]
            off += 1 + n
        else:
            size = struct.unpack_from("<i", msg, off + 1)[0]
            sec = msg[off + 5:off + 1 + size]
            nul = sec.index(b"\x00")
            ident, docs, p = sec[:nul].decode(), [], nul + 1
            while p < len(sec):
                n = struct.unpack_from("<i", sec, p)[0]
                docs.append(sec[p:p + n])
                p += n
            seqs.append((ident, docs))
            off += 1 + size
    return body, seqs


def expected_merge(msg):
    """The merged document by the rules of the wire digest (top-level
    identifiers only; the seed and capture messages need no more)."""
    body, seqs = body_of(msg)
    doc = decode(body)
    for ident, docs in seqs:
        if "." in ident:
            head, tail = ident.split(".", 1)
            sub = doc.setdefault(head, SON())
            sub[tail] = [decode(d) for d in docs]
        else:
            doc[ident] = [decode(d) for d in docs]
    return doc


def has_clash(msg):
    """True when a dotted identifier names an existing body field."""
    if struct.unpack_from("<i", msg, 12)[0] != 2013:
        return False
    body, seqs = body_of(msg)
    doc = decode(body)
    for ident, _ in seqs:
        cur, hit = doc, True
        for part in ident.split("."):
            if not isinstance(cur, dict) or part not in cur:
                hit = False
                break
            cur = cur[part]
        if hit:
            return True
    return False


# --- groups ---------------------------------------------------------------

SEEDS = ["flat", "deep", "seq"]


def group_merge_seed():
    for name in SEEDS:
        want = read("seed", name + ".merged.bson")
        rc, out, err = run(["merge", "--bson", data("seed", name + ".bin")])
        check(rc == 0 and err == "", "merge --bson %s: exit %d %r" % (name, rc, err))
        check(out == want, "merge --bson %s: bytes differ from .merged.bson" % name)
        # The same from stdin.
        rc, out, err = run(["merge", "--bson", "-"], read("seed", name + ".bin"))
        check(rc == 0 and out == want, "merge --bson - < %s" % name)
        # --full-validate accepts them too.
        rc, out, err = run(["merge", "--bson", "--full-validate",
                            data("seed", name + ".bin")])
        check(rc == 0 and out == want, "merge --bson --full-validate %s" % name)


def group_merge_json():
    for name in SEEDS:
        want = read("seed", name + ".merged.bson")
        rc, out, err = run(["merge", data("seed", name + ".bin")])
        check(rc == 0, "merge %s: exit %d %r" % (name, rc, err))
        text = out.decode()
        check(text.endswith("\n") and text.count("\n") == 1,
              "merge %s: not exactly one line" % name)
        json.loads(text)  # plain JSON too
        doc = from_json(text)
        check(enc(doc) == want,
              "merge %s: JSON does not parse back to the merged document" % name)
    # A real driver's insert (body + kind-1 "documents").
    msg = read("thirdparty", "ferretdb_import.bin")
    rc, out, err = run(["merge", "-"], msg)
    check(rc == 0, "merge ferretdb_import: %d %r" % (rc, err))
    if rc == 0:
        check(enc(from_json(out.decode())) == enc(expected_merge(msg)),
              "merge ferretdb_import: JSON differs from the expected merge")
    # Sequences in any order, with a checksum: body fields first, then arrays.
    for name in ["ferretdb_multisection_insert_crc", "ferretdb_multisection_update_crc"]:
        msg = read("thirdparty", name + ".bin")
        rc, out, err = run(["merge", "--bson", data("thirdparty", name + ".bin")])
        check(rc == 0 and out == enc(expected_merge(msg)),
              "merge %s: %d %r" % (name, rc, err))
    # A dotted identifier lands inside the body's sub-document.
    msg = op_msg([kind1("cursor.firstBatch", [{"a": 1}, {"b": 2}]),
                  kind0(SON([("cursor", SON([("id", bson.Int64(0)), ("ns", "db.c")])),
                             ("ok", 1.0)]))])
    rc, out, err = run(["merge", "--bson", "-"], msg)
    want = SON([("cursor", SON([("id", bson.Int64(0)), ("ns", "db.c"),
                                ("firstBatch", [{"a": 1}, {"b": 2}])])), ("ok", 1.0)])
    check(rc == 0 and out == enc(want), "merge dotted identifier: %d %r" % (rc, err))


def legacy_query_doc(msg):
    nul = msg.index(b"\x00", 20)
    off = nul + 1 + 8
    n = struct.unpack_from("<i", msg, off)[0]
    return msg[off:off + n]


def group_legacy():
    for name in ["ferretdb_handshake1", "ferretdb_handshake3", "mcdrpc_op_query"]:
        msg = read("thirdparty", name + ".bin")
        rc, out, err = run(["merge", "--bson", data("thirdparty", name + ".bin")])
        check(rc == 0 and out == legacy_query_doc(msg),
              "merge OP_QUERY %s -> its query document: %d %r" % (name, rc, err))
    for name in ["ferretdb_handshake2", "ferretdb_handshake4"]:
        msg = read("thirdparty", name + ".bin")
        n = struct.unpack_from("<i", msg, 36)[0]
        rc, out, err = run(["merge", "--bson", data("thirdparty", name + ".bin")])
        check(rc == 0 and out == msg[36:36 + n],
              "merge OP_REPLY %s -> its document: %d %r" % (name, rc, err))
        rc, out, err = run(["merge", data("thirdparty", name + ".bin")])
        check(rc == 0 and enc(from_json(out.decode())) == msg[36:36 + n],
              "merge OP_REPLY %s as JSON" % name)


def manifest():
    rows = {}
    with open(data("thirdparty", "manifest.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            # One row may name several files: "a_op_x.bin / op_y / op_z".
            names = [n.strip() for n in cols[0].split(" / ")]
            prefix = names[0][:names[0].find("op_")]
            for n in names:
                if not n.endswith(".bin"):
                    n = prefix + n + ".bin"
                rows[n] = cols[-1]
    return rows


# Opcodes removed in MongoDB 5.1: the library checks their framing (the
# manifest accepts them) but they have no document to merge.
REMOVED_OPCODES = {2001, 2002, 2005, 2006, 2007}


def group_thirdparty():
    rows = manifest()
    files = sorted(os.path.basename(p) for p in glob.glob(data("thirdparty", "*.bin")))
    check(len(files) >= 20, "thirdparty vectors present")
    for name in files:
        msg = read("thirdparty", name)
        opcode = struct.unpack_from("<i", msg, 12)[0]
        verdict = rows.get(name, "")
        path = data("thirdparty", name)
        if name.startswith("mcdrpc_op_msg_"):
            check("CRC wrong" in verdict, "manifest says %s has a placeholder CRC" % name)
            expect_rule(["check", path], "checksum-mismatch", "check " + name)
        elif name == "ferretdb_invalid_checksum.bin":
            check("reject" in verdict, "manifest: %s rejected" % name)
            expect_rule(["check", path], "checksum-mismatch", "check " + name)
        elif name == "ferretdb_msg_fuzz1_invalid.bin":
            check("reject" in verdict, "manifest: %s rejected" % name)
            expect_rule(["check", path], "required-flags", "check " + name)
        elif opcode in REMOVED_OPCODES:
            check(verdict.startswith("accept"), "manifest: %s accepted" % name)
            rc, out, err = run(["check", path])
            check(rc == 0 and err == "", "check %s: exit %d %r" % (name, rc, err))
            expect_rule(["merge", path], "wrong-opcode", "merge " + name)
        else:
            check(verdict.startswith("accept") or name.startswith("mcdrpc_op_"),
                  "manifest: %s accepted (%r)" % (name, verdict))
            rc, out, err = run(["check", path])
            check(rc == 0 and out == b"" and err == "",
                  "check %s: exit %d %r" % (name, rc, err))
            rc, out, err = run(["check", "--full-validate", path])
            check(rc == 0, "check --full-validate %s: exit %d %r" % (name, rc, err))
    # The mcdrpc OP_MSGs are structurally fine: with the right CRC they pass.
    for name in files:
        if name.startswith("mcdrpc_op_msg_"):
            msg = bytearray(read("thirdparty", name))
            struct.pack_into("<I", msg, len(msg) - 4, crc32c(bytes(msg[:-4])))
            rc, out, err = run(["check", "-"], bytes(msg))
            check(rc == 0, "check %s with its CRC fixed: %d %r" % (name, rc, err))


def capture_files():
    files = sorted(glob.glob(data("captures", "*.bin")))
    check(len(files) >= 20, "capture vectors present")
    return files


def group_stream():
    clashes = 0
    for path in capture_files():
        name = os.path.basename(path)
        stream = read("captures", name)
        msgs = frames(stream)
        bad = [i for i, m in enumerate(msgs) if has_clash(m)]
        if bad:
            clashes += 1
            check(name.startswith("mockseq_") and name.endswith("_s2c.bin"),
                  "%s: only the mockseq find replies clash" % name)
        rc, out, err = run(["check", "--stream", path])
        lines = error_lines(err)
        oks = out.decode().splitlines()
        check(rc == (1 if bad else 0), "check --stream %s: exit %d" % (name, rc))
        check(len(oks) + len(lines) == len(msgs),
              "check --stream %s: %d+%d lines for %d messages" % (name, len(oks), len(lines), len(msgs)))
        check(len(lines) == len(bad), "check --stream %s: error lines %r" % (name, lines))
        for i, line in zip(bad, lines):
            check(ERROR_LINE.match(line).group(1) == "identifier-clash"
                  and ("message %d " % i) in line,
                  "check --stream %s: %r" % (name, line))
        good = [i for i in range(len(msgs)) if i not in bad]
        for i, line in zip(good, oks):
            check(line.split()[:2] == ["ok", str(i)], "check --stream %s: %r" % (name, line))
        # merge: one JSON line per valid message, equal to the expected merge.
        rc, out, err = run(["merge", "--stream", path])
        docs = out.decode().splitlines()
        check(len(docs) == len(good), "merge --stream %s: %d lines" % (name, len(docs)))
        for i, line in zip(good, docs):
            m = msgs[i]
            opcode = struct.unpack_from("<i", m, 12)[0]
            if opcode == 2013:
                want = enc(expected_merge(m))
            elif opcode == 2004:
                want = legacy_query_doc(m)
            else:
                want = m[36:36 + struct.unpack_from("<i", m, 36)[0]]
            check(enc(from_json(line)) == want,
                  "merge --stream %s message %d" % (name, i))
        # --bson: the merged documents back to back.
        rc, out, err = run(["merge", "--stream", "--bson", "-"], stream)
        check(rc == (1 if bad else 0), "merge --stream --bson %s" % name)
        # dump: one JSON object per message, valid or not.
        rc, out, err = run(["dump", "--stream", path])
        objs = [json.loads(l) for l in out.decode().splitlines()]
        check(len(objs) == len(msgs), "dump --stream %s: %d objects" % (name, len(objs)))
        for i, o in enumerate(objs):
            check(o["valid"] == (i not in bad), "dump --stream %s #%d valid" % (name, i))

    check(clashes >= 2, "the mockseq find reply clashes are in the vectors")

    # All captures back to back: still one stream.
    stream = b"".join(read("captures", os.path.basename(p)) for p in capture_files()
                      if not os.path.basename(p).startswith("mockseq_"))
    n = len(frames(stream))
    rc, out, err = run(["check", "--stream", "-"], stream)
    check(rc == 0 and len(out.decode().splitlines()) == n,
          "check --stream over every capture: %d %r" % (rc, err))

    # A truncated tail: the complete messages pass, then stream-truncated.
    whole = read("captures", "mongoc_c1_c2s.bin")
    n = len(frames(whole))
    for cut in (1, 10, 17):
        rc, out, err = run(["check", "--stream", "-"], whole[:-cut])
        lines = error_lines(err)
        check(rc == 1 and len(out.decode().splitlines()) == n - 1,
              "truncated stream (-%d): exit %d, %r" % (cut, rc, out))
        check(len(lines) == 1 and ERROR_LINE.match(lines[0]).group(1) == "stream-truncated",
              "truncated stream (-%d): %r" % (cut, err))
    # A bad message in the middle whose framing holds: reported, and the
    # stream goes on.
    bad = bytearray(op_msg([kind0({"ping": 1, "$db": "admin"})]))
    bad[16] = 0x04  # unknown required flag bit 2
    good = op_msg([kind0({"ping": 1, "$db": "admin"})])
    rc, out, err = run(["check", "--stream", "-"], good + bytes(bad) + good)
    lines = error_lines(err)
    check(rc == 1 and out.decode().split("\n")[:2] == ["ok 0 0 OP_MSG %d top-level" % len(good),
                                                       "ok 2 %d OP_MSG %d top-level" % (len(good) + len(bad), len(good))],
          "stream continues after a bad message: %r" % out)
    check(len(lines) == 1 and "required-flags" in lines[0] and "message 1 at offset %d" % len(good) in lines[0],
          "stream bad message line: %r" % lines)
    # A lying length loses the framing: the stream stops there.
    liar = struct.pack("<iiii", 3, 0, 0, 2013)
    rc, out, err = run(["check", "--stream", "-"], good + liar + good)
    lines = error_lines(err)
    check(rc == 1 and len(out.decode().splitlines()) == 1 and len(lines) == 1,
          "stream with a lying length: %d %r %r" % (rc, out, err))
    # An empty stream is valid and prints nothing.
    rc, out, err = run(["check", "--stream", "-"], b"")
    check(rc == 0 and out == b"" and err == "", "empty stream")


def group_real():
    """Traffic between real drivers and a real server, one message per file
    (NNNNNNNN-connK-DIR.bin, in the order seen): every message is valid,
    alone and as the stream of its connection and direction."""
    root = data("captures", "real")
    files = sorted(glob.glob(os.path.join(root, "*", "*.bin")))
    if not files:
        print("note: no captures/real vectors in this tree")
        return
    streams = {}
    for path in files:
        m = re.match(r"^(\d+)-conn(\d+)-(c2s|s2c)\.bin$", os.path.basename(path))
        if not check(m, "file name %s" % path):
            continue
        key = (os.path.basename(os.path.dirname(path)), int(m.group(2)), m.group(3))
        streams.setdefault(key, []).append((int(m.group(1)), path))
        rc, out, err = run(["check", path])
        check(rc == 0 and err == "", "check %s: %d %r" % (path, rc, err))
    for key, parts in sorted(streams.items()):
        parts.sort()
        stream = b"".join(open(p, "rb").read() for _, p in parts)
        rc, out, err = run(["check", "--stream", "-"], stream)
        check(rc == 0 and len(out.decode().splitlines()) == len(parts),
              "check --stream %r: %d %r" % (key, rc, err))
        rc, out, err = run(["merge", "--stream", "-"], stream)
        check(rc == 0 and len(out.decode().splitlines()) == len(parts),
              "merge --stream %r: %d %r" % (key, rc, err))
        rc, out, err = run(["dump", "--stream", "-"], stream)
        check(rc == 0 and all(json.loads(l)["valid"] for l in out.decode().splitlines()),
              "dump --stream %r: %d %r" % (key, rc, err))


def group_errors():
    ping = SON([("ping", 1), ("$db", "admin")])
    cases = [
        ("empty input", b"", "truncated"),
        ("short header", b"\x10\x00\x00", "truncated"),
        ("unknown opcode", struct.pack("<iiii", 16, 0, 0, 9999), "unknown-opcode"),
        ("required flag bit", op_msg([kind0(ping)], flags=1 << 5), "required-flags"),
        ("no body", op_msg([kind1("documents", [{"a": 1}])]), "no-body"),
        ("two bodies", op_msg([kind0(ping), kind0(ping)]), "multiple-bodies"),
        ("unknown section kind", op_msg([kind0(ping), b"\x02" + enc({"a": 1})]),
         "unknown-section-kind"),
        ("duplicate identifier", op_msg([kind0(ping), kind1("d", [{}]), kind1("d", [{}])]),
         "duplicate-identifier"),
        ("identifier clash", op_msg([kind0(ping), kind1("ping", [{}])]), "identifier-clash"),
        ("checksum mismatch", op_msg([kind0(ping)], checksum=True)[:-1] + b"\x00",
         "checksum-mismatch"),
    ]
    for what, msg, rule in cases:
        for cmd in ("check", "merge"):
            rc, out, err = expect_rule([cmd, "-"], rule, "%s %s" % (cmd, what), msg)
            check(out == b"", "%s %s: no output" % (cmd, what))
    # A length in the header that disagrees with the bytes given.
    msg = op_msg([kind0(ping)])
    rc, _, err = run(["check", "-"], msg + b"\x00")
    check(rc == 1 and len(error_lines(err)) == 1, "trailing byte after the message: %r" % err)
    rc, _, err = run(["check", "-"], msg[:-1])
    check(rc == 1 and len(error_lines(err)) == 1, "message cut short: %r" % err)
    # The size limit, and raising it for reading.
    flat = data("seed", "flat.bin")
    expect_rule(["check", "--max-message-size", "1000", flat], "length-too-large",
                "check over --max-message-size")
    rc, _, _ = run(["check", "--max-message-size=7000", flat])
    check(rc == 0, "check under --max-message-size=7000")
    # Full validation: invalid UTF-8 inside a nested document.
    nested = bytearray(enc(SON([("ping", 1), ("$db", "admin"),
                                        ("x", {"s": "abc"})])))
    nested[nested.index(b"abc")] = 0xFF
    bad_utf8 = op_msg([kind0(bytes(nested))])
    rc, out, err = run(["check", "-"], bad_utf8)
    check(rc == 0, "nested documents stay opaque without --full-validate: %d %r" % (rc, err))
    rc, out, err = run(["merge", "--bson", "-"], bad_utf8)
    check(rc == 0 and out == bytes(nested), "merge --bson copies nested bytes: %d" % rc)
    # JSON cannot carry it: merge says why, as full validation finds it.
    expect_rule(["merge", "-"], "invalid-utf8", "merge to JSON of invalid UTF-8", bad_utf8)
    expect_rule(["check", "--full-validate", "-"], "invalid-utf8", "check --full-validate", bad_utf8)
    expect_rule(["merge", "--full-validate", "-"], "invalid-utf8", "merge --full-validate", bad_utf8)


def group_usage():
    seed = data("seed", "flat.bin")
    usage = [
        [],
        ["frobnicate"],
        ["merge"],
        ["merge", seed, seed],
        ["merge", "--no-such-option", seed],
        ["check", "--bson", seed],
        ["dump", "--max-message-size", "abc", seed],
        ["dump", "--max-message-size"],
        ["build"],
    ]
    for args in usage:
        rc, out, err = run(args)
        check(rc == 2, "usage error %r: exit %d" % (args, rc))
        check(err.startswith("opmsg: "), "usage error %r says why: %r" % (args, err))
        if args != ["build"]:
            check("usage:" in err, "usage error %r prints the usage: %r" % (args, err))
    # `opmsg tap` is dispatched to tools/tap/.
    rc, out, err = run(["tap", "--help"])
    check(rc == 0 and b"opmsg tap" in out, "tap --help: %d %r" % (rc, out[:200]))
    rc, out, err = run(["tap", "--no-such-option"])
    check(rc == 2, "tap with a bad option: %d" % rc)
    # Options may follow the file; "--" ends them.
    rc, out, err = run(["merge", seed, "--bson"])
    check(rc == 0 and out == read("seed", "flat.merged.bson"), "merge FILE --bson: %d %r" % (rc, err))
    rc, out, err = run(["check", "--", "--stream"])
    check(rc == 2 and err.startswith("opmsg: cannot open --stream"), "check -- --stream: %d %r" % (rc, err))
    rc, out, err = run(["check", os.path.join(DATA, "no", "such", "file.bin")])
    check(rc == 2 and err.startswith("opmsg: cannot open") and err.count("\n") == 1,
          "missing file: %d %r" % (rc, err))
    rc, out, err = run(["--version"])
    check(rc == 0 and out.startswith(b"opmsg ") and re.search(rb"\d+\.\d+\.\d+", out),
          "--version: %r" % out)
    # Every build has every part; scripts still read this line.
    check(b"\nfeatures: build compress tap\n" in out, "--version features: %r" % out)
    for args in (["help"], ["--help"], ["help", "merge"], ["merge", "--help"]):
        rc, out, err = run(args)
        check(rc == 0 and b"opmsg merge" in out, "%r: %d %r" % (args, rc, out))


def group_dump():
    # seq.bin: body at offset 20, then a kind-1 "documents" of 100 documents.
    msg = read("seed", "seq.bin")
    rc, out, err = run(["dump", data("seed", "seq.bin")])
    check(rc == 0 and err == "", "dump seq: %d %r" % (rc, err))
    d = json.loads(out)
    check(out.count(b"\n") == 1, "dump prints one line")
    check(d["opcode"] == {"number": 2013, "name": "OP_MSG"}, "dump opcode: %r" % d.get("opcode"))
    check(d["header"]["messageLength"] == len(msg) and d["header"]["requestID"] == 0
          and d["header"]["responseTo"] == 0, "dump header: %r" % d["header"])
    check(d["flags"]["number"] == 0 and d["flags"]["names"] == [], "dump flags: %r" % d["flags"])
    body, seqs = body_of(msg)
    s = d["sections"]
    check(len(s) == 2 and s[0]["kind"] == 0 and s[0]["offset"] == 20
          and s[0]["bytes"] == 1 + len(body) and s[0]["documents"] == 1,
          "dump seq body section: %r" % s[:1])
    check(s[1]["kind"] == 1 and s[1]["identifier"] == "documents"
          and s[1]["documents"] == len(seqs[0][1]) == 100
          and s[1]["offset"] == 21 + len(body) and s[1]["offset"] + s[1]["bytes"] == len(msg),
          "dump seq kind-1 section: %r" % s[1:])
    check(d["checksum"]["present"] is False, "dump checksum absent")
    check(d["valid"] is True and "error" not in d, "dump valid")
    check(d.get("mergedBytes") == len(read("seed", "seq.merged.bson")), "dump mergedBytes")

    # Sequence before body, and a real CRC.
    name = "ferretdb_multisection_insert_crc.bin"
    msg = read("thirdparty", name)
    rc, out, err = run(["dump", data("thirdparty", name)])
    d = json.loads(out)
    check(rc == 0 and [x["kind"] for x in d["sections"]] == [1, 0], "dump %s sections" % name)
    check(d["flags"]["names"] == ["checksumPresent"], "dump %s flags" % name)
    stored = struct.unpack_from("<I", msg, len(msg) - 4)[0]
    check(d["checksum"] == {"present": True, "stored": stored, "computed": crc32c(msg[:-4]),
                            "valid": True}, "dump %s checksum: %r" % (name, d["checksum"]))

    # An invalid message: described anyway, with the error, exit 1.
    name = "ferretdb_invalid_checksum.bin"
    rc, out, err = run(["dump", data("thirdparty", name)])
    d = json.loads(out)
    check(rc == 1 and d["valid"] is False and d["checksum"]["valid"] is False,
          "dump %s: %d %r" % (name, rc, d.get("checksum")))
    check(d.get("error", {}).get("rule") == "checksum-mismatch"
          and d["error"].get("message"), "dump %s error member: %r" % (name, d.get("error")))
    check(len(d["sections"]) >= 1, "dump %s still lists sections" % name)
    check(len(error_lines(err)) == 1, "dump of an invalid message: one stderr line")

    name = "ferretdb_msg_fuzz1_invalid.bin"
    rc, out, err = run(["dump", data("thirdparty", name)])
    d = json.loads(out)
    flags = 0x30303030
    check(rc == 1 and d["flags"]["number"] == flags, "dump %s flags number" % name)
    check(d["flags"]["unknownRequiredBits"] == [b for b in range(2, 16) if flags >> b & 1]
          and d["flags"]["unknownOptionalBits"] == [b for b in range(17, 32) if flags >> b & 1],
          "dump %s unknown bits: %r" % (name, d["flags"]))
    check(d["error"]["rule"] == "required-flags", "dump %s error" % name)

    # Flag names, an unknown optional bit, request ids.
    msg = op_msg([kind0({"getMore": bson.Int64(5), "$db": "x"})],
                 flags=(1 << 1) | (1 << 16) | (1 << 17) | (1 << 20), request_id=7, response_to=3)
    rc, out, err = run(["dump", "-"], msg)
    d = json.loads(out)
    check(rc == 0 and d["flags"]["names"] == ["moreToCome", "exhaustAllowed", "documentSequencesAllowed"]
          and d["flags"]["unknownOptionalBits"] == [20] and d["flags"]["unknownRequiredBits"] == [],
          "dump flags names: %r" % d["flags"])
    check(d["header"]["requestID"] == 7 and d["header"]["responseTo"] == 3, "dump ids")

    # Legacy: OP_QUERY and OP_REPLY fields.
    msg = read("thirdparty", "ferretdb_handshake1.bin")
    rc, out, err = run(["dump", data("thirdparty", "ferretdb_handshake1.bin")])
    d = json.loads(out)
    q = d.get("query", {})
    check(rc == 0 and d["opcode"]["name"] == "OP_QUERY" and q.get("fullCollectionName") == "admin.$cmd"
          and q.get("numberToReturn") == -1 and q.get("queryBytes") == len(legacy_query_doc(msg)),
          "dump OP_QUERY: %r" % q)
    msg = read("thirdparty", "ferretdb_handshake2.bin")
    rc, out, err = run(["dump", data("thirdparty", "ferretdb_handshake2.bin")])
    d = json.loads(out)
    r = d.get("reply", {})
    check(rc == 0 and r.get("responseFlags", {}).get("names") == ["awaitCapable"]
          and r.get("numberReturned") == 1 and r.get("cursorID") == 0
          and r.get("documentsBytes") == len(msg) - 36,
          "dump OP_REPLY: %r" % r)
    # A removed opcode is named; an unknown one is described with its error.
    rc, out, err = run(["dump", data("thirdparty", "mcdrpc_op_insert.bin")])
    d = json.loads(out)
    check(rc == 0 and d["opcode"] == {"number": 2002, "name": "OP_INSERT"}
          and d["valid"] is True, "dump OP_INSERT: %r" % d)
    rc, out, err = run(["dump", "-"], struct.pack("<iiii", 16, 5, 0, 2003))
    d = json.loads(out)
    check(rc == 1 and d["opcode"] == {"number": 2003, "name": "unknown"}
          and d["header"]["requestID"] == 5
          and d["error"]["rule"] == "unknown-opcode", "dump opcode 2003: %r" % d)
    # Fewer bytes than a header.
    rc, out, err = run(["dump", "-"], b"\x01\x02")
    d = json.loads(out)
    check(rc == 1 and d["error"]["rule"] == "truncated" and d["bytesGiven"] == 2,
          "dump of 2 bytes: %r" % d)
    # A section that cannot be framed is listed as incomplete.
    msg = bytearray(op_msg([kind0({"ping": 1, "$db": "a"}), kind1("docs", [{"a": 1}])]))
    off = len(msg) - (len(kind1("docs", [{"a": 1}])))
    struct.pack_into("<i", msg, off + 1, 1000)
    rc, out, err = run(["dump", "-"], bytes(msg))
    d = json.loads(out)
    check(rc == 1 and d["sections"][-1].get("complete") is False and d["sections"][-1]["kind"] == 1,
          "dump of a bad kind-1 size: %r" % d.get("sections"))


# --- build (needs <opmsg/build.h>) ------------------------------------------

def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


DOCS = [
    '{"_id": 1, "name": "alpha", "score": 1.5}',
    '{"_id": {"$numberLong": "2"}, "tags": ["a", "b"], "nested": {"x": null}}',
    '{"_id": 3, "big": 1099511627776, "flag": true}',
    '{"_id": 4, "when": {"$date": {"$numberLong": "1700000000000"}}}',
    '{"_id": 5, "pad": "' + "p" * 200 + '"}',
]


def jsonl_docs(lines):
    return [from_json(l) for l in lines]


def build(args, tmp):
    rc, out, err = run(["build"] + args)
    return rc, out, err


def group_build():
    with tempfile.TemporaryDirectory() as tmp:
        cmd_text = '{"insert": "coll", "ordered": true, "$db": "test"}'
        cmd = write(tmp, "cmd.json", cmd_text)
        docs = write(tmp, "docs.jsonl", "\n".join(DOCS) + "\n")
        command = from_json(cmd_text)
        want_docs = jsonl_docs(DOCS)

        # Body only.
        rc, out, err = build(["--command", cmd], tmp)
        check(rc == 0 and err == "", "build body only: %d %r" % (rc, err))
        check(out[12:16] == struct.pack("<i", 2013) and len(out) == struct.unpack_from("<i", out)[0],
              "build writes one OP_MSG")
        rc2, merged, err2 = run(["merge", "--bson", "-"], out)
        check(rc2 == 0 and merged == enc(command), "build -> merge body: %d %r" % (rc2, err2))

        # With a sequence: merge gives the command plus the documents array.
        rc, out, err = build(["--command", cmd, "--sequence", "documents=" + docs], tmp)
        check(rc == 0, "build with a sequence: %d %r" % (rc, err))
        body, seqs = body_of(out)
        check(decode(body) == command and [s[0] for s in seqs] == ["documents"]
              and [enc(x) for x in want_docs] == seqs[0][1],
              "build: body and kind-1 as given")
        want = SON(command)
        want["documents"] = want_docs
        rc2, merged, err2 = run(["merge", "--bson", "-"], out)
        check(rc2 == 0 and merged == enc(want), "build -> merge: %d %r" % (rc2, err2))

        # Two sequences, header fields and flags.
        upd = write(tmp, "u.jsonl", '{"q": {}, "u": {"$set": {"a": 1}}}\n')
        rc, out, err = build(["--command", cmd, "--sequence", "documents=" + docs,
                              "--sequence", "updates=" + upd, "--request-id", "42",
                              "--response-to", "-7", "--more-to-come", "--exhaust-allowed",
                              "--document-sequences-allowed"], tmp)
        check(rc == 0, "build with two sequences: %d %r" % (rc, err))
        rid, rto = struct.unpack_from("<ii", out, 4)
        flags = struct.unpack_from("<I", out, 16)[0]
        check(rid == 42 and rto == -7 and flags == (1 << 1) | (1 << 16) | (1 << 17),
              "build header: %d %d %#x" % (rid, rto, flags))
        check([s[0] for s in body_of(out)[1]] == ["documents", "updates"], "two sequences in order")

        # Checksum: present and right.
        rc, out, err = build(["--command", cmd, "--sequence", "documents=" + docs, "--checksum"], tmp)
        check(rc == 0 and struct.unpack_from("<I", out, 16)[0] & 1
              and struct.unpack_from("<I", out, len(out) - 4)[0] == crc32c(out[:-4]),
              "build --checksum: %d %r" % (rc, err))
        rc2, merged, _ = run(["merge", "--bson", "-"], out)
        check(rc2 == 0 and merged == enc(want), "build --checksum -> merge")

        # Splitting: one document per message.
        rc, out, err = build(["--command", cmd, "--sequence", "documents=" + docs,
                              "--max-batch", "1"], tmp)
        msgs = frames(out) if rc == 0 else []
        check(rc == 0 and len(msgs) == len(DOCS), "--max-batch 1: %d messages %r" % (len(msgs), err))
        got = []
        rc2, merged, err2 = run(["merge", "--stream", "-"], out)
        for line in merged.decode().splitlines():
            doc = from_json(line)
            got.extend(doc.pop("documents"))
            check(doc == command, "split message keeps the command")
        check(rc2 == 0 and [enc(x) for x in got] == [enc(x) for x in want_docs],
              "--max-batch 1: reassembly equals the input")

        # Splitting by size: every message within the limit, order kept.
        many = ['{"_id": %d, "v": "%s"}' % (i, "x" * (i % 50)) for i in range(300)]
        mpath = write(tmp, "many.jsonl", "\n".join(many) + "\n")
        limit = 2000
        rc, out, err = build(["--command", cmd, "--sequence", "documents=" + mpath,
                              "--max-message-size", str(limit)], tmp)
        msgs = frames(out) if rc == 0 else []
        check(rc == 0 and len(msgs) > 1 and all(len(m) <= limit for m in msgs),
              "--max-message-size %d: %r %r" % (limit, [len(m) for m in msgs], err))
        got = []
        for m in msgs:
            got.extend(body_of(m)[1][0][1])
        check(got == [enc(x) for x in jsonl_docs(many)],
              "--max-message-size: reassembly equals the input")
        # Each message is as full as it may be: the next document would not fit.
        for m, nxt in zip(msgs, msgs[1:]):
            first_next = body_of(nxt)[1][0][1][0]
            check(len(m) + len(first_next) > limit, "split messages are full")

        # A document alone over the limit.
        huge = write(tmp, "huge.jsonl", '{"a": "%s"}\n' % ("z" * 5000))
        expect_rule(["build", "--command", cmd, "--sequence", "documents=" + huge,
                     "--max-message-size", "2000"], "document-over-limit", "build over limit")

        # Bad input: one rule line, exit 1, nothing written.
        for text, rule in (('{"insert": ', "bad-command"), ("[1, 2]", "bad-command"),
                           ("", "bad-command"), ('{"a": 1} {"b": 2}', "bad-command"),
                           ('{"insert": "c", "insert": "d"}', "bad-command")):
            badcmd = write(tmp, "bad.json", text)
            rc, out, err = expect_rule(["build", "--command", badcmd], rule,
                                       "build --command %r" % text)
            check(out == b"", "build --command %r writes nothing" % text)
        for text in ('{"a": 1} {"b": 2}\n', "[1]\n", '{"a": 1}\n{"a": \n'):
            baddocs = write(tmp, "bad.jsonl", text)
            rc, out, err = expect_rule(["build", "--command", cmd, "--sequence", "documents=" + baddocs],
                                       "invalid-argument", "build --sequence %r" % text)
            check(out == b"" and (" line 2:" in err) == text.startswith('{"a": 1}\n'),
                  "build --sequence %r names the line: %r" % (text, err))
        # An identifier naming a command field.
        expect_rule(["build", "--command", cmd, "--sequence", "insert=" + docs],
                    "identifier-clash", "build with a clashing identifier")
        # Blank lines are skipped; an empty file is an empty sequence.
        empty = write(tmp, "empty.jsonl", "\n\n")
        rc, out, err = build(["--command", cmd, "--sequence", "documents=" + empty], tmp)
        rc2, merged, _ = run(["merge", "--bson", "-"], out)
        want_empty = SON(command)
        want_empty["documents"] = []
        check(rc == 0 and merged == enc(want_empty), "build with an empty sequence: %d %r" % (rc, err))
        for args in (["--sequence", "documents=" + docs],
                     ["--command", cmd, "--sequence", "nodocs"],
                     ["--command", cmd, "--compress", "lz4"],
                     ["--command", cmd, "--request-id", "x"],
                     ["--command", cmd, "--sequence", "a=" + docs, "--sequence", "b=" + docs,
                      "--max-batch", "1"],
                     ["--command", cmd, "--bogus"]):
            rc, out, err = run(["build"] + args)
            check(rc == 2 and out == b"" and err.startswith("opmsg: "), "build usage %r: %d %r" % (args, rc, err))


def group_split():
    """Splitting at exact boundaries, and the default limits on 100,001
    documents; sizes computed here from the wire layout."""
    with tempfile.TemporaryDirectory() as tmp:
        command = SON([("insert", "c"), ("$db", "t")])
        cmd = write(tmp, "cmd.json", json.dumps(command))
        # Documents of one size, so every batch but the last is full.
        lines = ['{"_id": %d, "s": "%s"}' % (i, "y" * 20) for i in range(40)]
        docs = [enc(d) for d in jsonl_docs(lines)]
        size = len(docs[0])
        check(all(len(d) == size for d in docs), "documents of one size")
        path = write(tmp, "d.jsonl", "\n".join(lines))  # no final newline
        for checksum in ([], ["--checksum"]):
            fixed = 16 + 4 + 1 + len(enc(command)) + 1 + 4 + len("documents") + 1 \
                + (4 if checksum else 0)
            for k in (1, 2, 5, 13):
                exact = fixed + k * size
                # To the byte: k fit; one byte less: k - 1; one byte short of
                # k + 1: still k.
                for limit, per in ((exact, k), (exact - 1, k - 1), (exact + size - 1, k)):
                    args = ["build", "--command", cmd, "--sequence", "documents=" + path,
                            "--max-message-size", str(limit)] + checksum
                    if per == 0:
                        expect_rule(args, "document-over-limit", "a document one byte over")
                        continue
                    rc, out, err = run(args)
                    msgs = frames(out) if rc == 0 else []
                    want = [per] * (len(docs) // per) + ([len(docs) % per] if len(docs) % per else [])
                    got_counts = [len(body_of(m)[1][0][1]) for m in msgs]
                    check(rc == 0 and got_counts == want and all(len(m) <= limit for m in msgs),
                          "split at %d (k=%d %r): batches %r, want %r; %r" % (
                              limit, k, checksum, got_counts, want, err))
                    check(any(len(m) == limit for m in msgs) == (limit == exact),
                          "split at %d: a full message is exactly the limit" % limit)
                    got = [d for m in msgs for d in body_of(m)[1][0][1]]
                    check(got == docs, "split at %d: reassembly" % limit)
                    ids = [struct.unpack_from("<i", m, 4)[0] for m in msgs]
                    check(ids == list(range(len(msgs))), "split request ids count up: %r" % ids)
                    if checksum:
                        check(all(struct.unpack_from("<I", m, len(m) - 4)[0] == crc32c(m[:-4])
                                  for m in msgs), "every split message has its CRC")

        # 100,001 small documents: the default maxWriteBatchSize (100,000)
        # cuts them in two; --max-batch 30000 in four.
        n = 100001
        big = write(tmp, "big.jsonl", "".join('{"i": %d}\n' % i for i in range(n)))
        rc, out, err = run(["build", "--command", cmd, "--sequence", "documents=" + big,
                            "--max-message-size", "48000000"])
        msgs = frames(out) if rc == 0 else []
        check(rc == 0 and [len(body_of(m)[1][0][1]) for m in msgs] == [100000, 1],
              "100,001 documents with the default batch size: %r" % err)
        rc, out, err = run(["build", "--command", cmd, "--sequence", "documents=" + big,
                            "--max-batch", "30000"])
        msgs = frames(out) if rc == 0 else []
        check([len(body_of(m)[1][0][1]) for m in msgs] == [30000, 30000, 30000, 10001],
              "--max-batch 30000: %r" % err)
        rc, merged, err = run(["merge", "--stream", "--bson", "-"], out)
        ids = []
        raw = merged
        while raw:
            size = struct.unpack_from("<i", raw)[0]
            ids.extend(d["i"] for d in decode(raw[:size])["documents"])
            raw = raw[size:]
        check(rc == 0 and ids == list(range(n)), "100,001 documents reassembled in order")


CODECS = ["noop", "snappy", "zlib", "zstd"]


def group_compress():
    # Vectors from independent encoders (pymongo's zlib, the zstd CLI).
    for path in sorted(glob.glob(data("compressed", "*.bin"))):
        name = os.path.basename(path)[:-4]
        msg = read("compressed", name + ".bin")
        rc, out, err = run(["check", path])
        check(rc == 0, "check %s: %d %r" % (name, rc, err))
        rc, out, err = run(["merge", "--bson", path])
        check(rc == 0 and out == read("compressed", name + ".merged.bson"),
              "merge %s: %d %r" % (name, rc, err))
        rc, out, err = run(["dump", path])
        d = json.loads(out)
        check(rc == 0 and d["compressed"]["compressorId"] == msg[24]
              and d["compressed"]["compressor"] == CODECS[msg[24]]
              and d["compressed"]["uncompressedSize"] == struct.unpack_from("<i", msg, 20)[0]
              and d["compressed"]["inner"]["valid"] is True, "dump %s" % name)
    # The noop vector from mongo-c-driver.
    path = data("thirdparty", "mcdrpc_op_compressed.bin")
    msg = read("thirdparty", "mcdrpc_op_compressed.bin")
    rc, out, err = run(["check", path])
    check(rc == 0, "check OP_COMPRESSED noop vector: %d %r" % (rc, err))
    inner = struct.pack("<iiii", 16 + struct.unpack_from("<i", msg, 20)[0],
                        *struct.unpack_from("<ii", msg, 4), struct.unpack_from("<i", msg, 16)[0]) + msg[25:]
    rc, out, err = run(["merge", "--bson", path])
    check(rc == 0 and out == enc(expected_merge(inner)), "merge OP_COMPRESSED noop: %d %r" % (rc, err))
    rc, out, err = run(["dump", path])
    d = json.loads(out) if out else {}
    c = d.get("compressed", {})
    check(rc == 0 and c.get("compressor") == "noop" and c.get("compressorId") == 0
          and c.get("uncompressedSize") == len(msg) - 25
          and c.get("inner", {}).get("opcode", {}).get("name") == "OP_MSG",
          "dump OP_COMPRESSED: %r" % d)
    # Hand-made: a reserved compressor id, a size that lies.
    ping = op_msg([kind0({"ping": 1, "$db": "admin"})])

    def compressed(payload, cid, usize):
        rest = struct.pack("<iiB", 2013, usize, cid) + payload
        return struct.pack("<iiii", 16 + len(rest), 1, 0, 2012) + rest
    expect_rule(["check", "-"], "unknown-compressor", "reserved compressor id",
                compressed(ping[16:], 9, len(ping) - 16))
    expect_rule(["check", "-"], "uncompressed-size", "uncompressedSize lies",
                compressed(ping[16:], 0, len(ping) - 15))
    with tempfile.TemporaryDirectory() as tmp:
        cmd = write(tmp, "cmd.json", '{"insert": "coll", "$db": "test"}')
        docs = write(tmp, "docs.jsonl", "\n".join(DOCS) + "\n")
        rc, plain, _ = run(["build", "--command", cmd, "--sequence", "documents=" + docs])
        _, want, _ = run(["merge", "--bson", "-"], plain)
        for codec in CODECS:
            for extra in ([], ["--checksum"]):
                rc, out, err = run(["build", "--command", cmd, "--sequence", "documents=" + docs,
                                    "--compress", codec] + extra)
                check(rc == 0 and out[12:16] == struct.pack("<i", 2012),
                      "build --compress %s %r: %d %r" % (codec, extra, rc, err))
                check(out[24] == CODECS.index(codec), "compressor id of %s" % codec)
                rc, merged, err = run(["merge", "--bson", "-"], out)
                check(rc == 0 and merged == want, "build --compress %s -> merge: %d %r" % (codec, rc, err))
                rc, dumped, err = run(["dump", "-"], out)
                d = json.loads(dumped)
                check(d["compressed"]["compressor"] == codec
                      and d["compressed"]["inner"]["checksum"]["present"] == bool(extra),
                      "dump of %s %r" % (codec, extra))
        # --compress none writes a plain OP_MSG.
        rc, out, err = run(["build", "--command", cmd, "--sequence", "documents=" + docs,
                            "--compress", "none"])
        check(rc == 0 and out == plain, "--compress none")
        # Forbidden commands are never compressed.
        for name in ("hello", "isMaster", "ISMASTER", "saslStart", "createUser"):
            fcmd = write(tmp, "f.json", '{"%s": 1, "$db": "admin"}' % name)
            expect_rule(["build", "--command", fcmd, "--compress", "zlib"],
                        "compression-forbidden", "compress %s" % name)
        # A split stream, each message compressed.
        rc, out, err = run(["build", "--command", cmd, "--sequence", "documents=" + docs,
                            "--max-batch", "2", "--compress", "zstd"])
        msgs = frames(out) if rc == 0 else []
        check(len(msgs) == 3 and all(m[12:16] == struct.pack("<i", 2012) for m in msgs),
              "split + zstd: %d messages" % len(msgs))
        rc, merged, err = run(["merge", "--stream", "--bson", "-"], out)
        check(rc == 0, "merge --stream of compressed messages: %d %r" % (rc, err))


def group_codecs():
    # The codecs of this build (CMake's OPMSG_WITH_*; tests/cli/CMakeLists.txt
    # passes them): --version lists exactly those, a message compressed with
    # one of them works, and one compressed with any other is refused with
    # compressor-unavailable by check, merge and dump, and by build --compress.
    have = os.environ.get("OPMSG_TEST_CODECS", "").split()
    check("noop" in have, "OPMSG_TEST_CODECS names the build's codecs: %r" % have)
    rc, out, err = run(["--version"])
    listed = [line for line in out.decode().splitlines() if line.startswith("codecs:")]
    check(rc == 0 and listed == ["codecs: " + " ".join(have)],
          "--version lists %r, the build has %r" % (listed, have))
    ping = op_msg([kind0({"ping": 1, "$db": "admin"})])
    want = enc(expected_merge(ping))
    tapped = []  # (codec, message) for the tap below
    with tempfile.TemporaryDirectory() as tmp:
        cmd = write(tmp, "cmd.json", '{"ping": 1, "$db": "admin"}')
        for cid, codec in enumerate(CODECS):
            rc, out, err = run(["build", "--command", cmd, "--compress", codec])
            if codec in have:
                check(rc == 0 and len(out) > 25 and out[24] == cid, "build --compress %s: %d %r" % (codec, rc, err))
                rc, merged, err = run(["merge", "--bson", "-"], out)
                check(rc == 0 and merged == want, "merge of %s: %d %r" % (codec, rc, err))
                tapped.append((codec, out))
                continue
            first = err.splitlines()[:1]
            check(rc == 2 and out == b"" and first and "'%s'" % codec in first[0] and "built without" in first[0],
                  "build --compress %s without it: %d %r" % (codec, rc, err))
            # A message that uses it: valid on the wire, but this build cannot open it.
            rest = struct.pack("<iiB", 2013, len(ping) - 16, cid) + b"\x5a" * 40
            msg = struct.pack("<iiii", 16 + len(rest), 1, 0, 2012) + rest
            for args in (["check", "-"], ["merge", "-"], ["dump", "-"]):
                rc, out, err = expect_rule(args, "compressor-unavailable", "%s of a %s message" % (args[0], codec), msg)
                check(codec in err, "%s names %s: %r" % (args[0], codec, err))
            rc, out, err = run(["dump", "-"], msg)
            d = json.loads(out) if out else {}
            check(d.get("compressed", {}).get("compressor") == codec
                  and d.get("error", {}).get("rule") == "compressor-unavailable",
                  "dump of a %s message: %r" % (codec, d))
            tapped.append((codec, msg))
        # The tap says at the start which codecs it lacks (nothing when it
        # has them all), and logs each message it cannot open with the rule.
        pcap = os.path.join(tmp, "codecs.pcap")
        with open(pcap, "wb") as f:
            f.write(pcap_of([m for _, m in tapped]))
        rc, out, err = run(["tap", "--pcap", pcap])
        msgs = [x for x in (json.loads(l) for l in out.decode().splitlines()) if "dir" in x]
        got = [(m.get("compressor"), m.get("error")) for m in msgs]
        check(rc == 0 and got == [(c, None if c in have else "compressor-unavailable") for c, _ in tapped],
              "tap --pcap of every codec: %d %r %r" % (rc, got, err))
        lacks = [c for c in CODECS if c not in have]
        warned = [line for line in err.splitlines() if "compressor-unavailable" in line]
        check(warned == (["opmsg tap: this build has no %s: OP_COMPRESSED messages that use it are logged with "
                          '"error":"compressor-unavailable"' % " ".join(lacks)] if lacks else []),
              "tap's start: %r" % err)


def group_mutate():
    """Mutated vectors (a fixed seed, so every run is the same): the tool
    never crashes, dump always prints parseable JSON, and check, dump and
    merge agree on the verdict with one rule line per invalid message."""
    import random
    rng = random.Random(20261129)
    seeds = [read("seed", "seq.bin"), read("thirdparty", "ferretdb_multisection_insert_crc.bin"),
             read("thirdparty", "ferretdb_handshake1.bin"), read("thirdparty", "ferretdb_handshake2.bin"),
             read("thirdparty", "mcdrpc_op_compressed.bin"), read("thirdparty", "ferretdb_import.bin")]
    for n in range(80):
        msg = bytearray(rng.choice(seeds))
        how = rng.randrange(4)
        if how == 0:
            for _ in range(rng.randrange(1, 4)):
                msg[rng.randrange(len(msg))] = rng.randrange(256)
        elif how == 1:
            del msg[rng.randrange(len(msg)):]
        elif how == 2:
            pos = rng.randrange(16, len(msg))
            msg[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 6)))
        else:
            # Keep the header's length in step with an edit inside.
            pos = rng.randrange(20, len(msg))
            msg[pos] = rng.randrange(256)
            struct.pack_into("<i", msg, 0, len(msg))
        msg = bytes(msg)
        rc_check, _, err_check = run(["check", "-"], msg)
        rc_dump, out, err_dump = run(["dump", "-"], msg)
        rc_merge, _, err_merge = run(["merge", "--bson", "-"], msg)
        what = "mutation %d (%s)" % (n, msg[:24].hex())
        check(rc_check in (0, 1) and rc_dump == rc_check, "%s: check %d dump %d" % (what, rc_check, rc_dump))
        check(len(error_lines(err_check)) == rc_check and len(error_lines(err_dump)) == rc_dump,
              "%s: one line per invalid message" % what)
        try:
            d = json.loads(out)
            check(d["valid"] == (rc_check == 0) and ("error" in d) == (rc_check == 1),
                  "%s: dump verdict" % what)
        except ValueError:
            check(False, "%s: dump output is not JSON: %r" % (what, out[:200]))
        check(rc_merge in (0, 1) and (rc_check == 0 or rc_merge == 1) and len(error_lines(err_merge)) == rc_merge,
              "%s: merge %d" % (what, rc_merge))
        if rc_check == 1 and rc_merge == 1:
            # check also names the level it checked at.
            check(err_check == err_merge[:-1] + " (check: top-level)\n",
                  "%s: merge and check name the same rule: %r %r" % (what, err_merge, err_check))
    # The same mutations as one stream never crash either.
    stream = b"".join(seeds) + bytes(rng.randrange(256) for _ in range(40))
    rc, out, err = run(["dump", "--stream", "-"], stream)
    check(rc == 1 and all(json.loads(l) for l in out.decode().splitlines()), "dump --stream of junk")


# --- check levels ----------------------------------------------------------

LEVELS = ("spec", "top-level", "full")


def bad_element_doc():
    """A document whose frame is sound (length, terminating 0) but whose
    second top-level element has the unknown type 0x42."""
    doc = bytearray(enc(SON([("a", 1), ("b", 2)])))
    doc[doc.index(b"b\x00") - 1] = 0x42
    return bytes(doc)


def raw_doc(elements):
    """A document of hand-written elements (type, key, value bytes), which
    may break rules no encoder would (a duplicate key)."""
    body = b"".join(bytes([t]) + k.encode() + b"\x00" + v for t, k, v in elements)
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def raw_array(docs):
    return raw_doc([(0x03, str(i), d) for i, d in enumerate(docs)])


def noop_compressed(msg):
    inner = msg[16:]
    rest = struct.pack("<iiB", 2013, len(inner), 0) + inner
    return struct.pack("<iiii", 16 + len(rest), 0, 0, 2012) + rest


def pcap_of(c2s):
    """A classic pcap (Ethernet, IPv4) of one connection to port 27017 that
    carries the messages c2s from the client, one TCP segment each."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)]
    seq = [1000]

    def packet(flags, payload=b""):
        tcp = struct.pack(">HHIIBBHHH", 40001, 27017, seq[0], 1, 5 << 4, flags,
                          65535, 0, 0) + payload
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64,
                         6, 0, bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1]))
        frame = b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00" + ip + tcp
        out.append(struct.pack("<IIII", 1700000000, len(out), len(frame), len(frame)) + frame)
        seq[0] += len(payload) + (1 if flags & 0x02 else 0)

    packet(0x02)  # SYN
    for m in c2s:
        packet(0x18, m)  # PSH | ACK
    packet(0x11)  # FIN | ACK
    return b"".join(out)


def group_check_levels():
    """--check spec|top-level|full (and --full-validate, its synonym for
    full): what each level accepts, that frame errors are refused at every
    level, that the level reaches OP_COMPRESSED's inner message, merge, dump
    and tap, that check says the level, and that an unknown level is a
    usage error."""
    cmd = SON([("insert", "c"), ("$db", "test")])
    good_doc = enc(SON([("_id", 1)]))
    bad_elem = op_msg([kind0(cmd), kind1("documents", [good_doc, bad_element_doc()])])
    i32 = lambda v: struct.pack("<i", v)
    dup_body = raw_doc([(0x10, "ping", i32(1)), (0x02, "$db", i32(6) + b"admin\x00"),
                        (0x10, "x", i32(1)), (0x10, "x", i32(2))])
    dup_key = op_msg([kind0(dup_body)])
    nested = bytearray(enc(SON([("_id", 1), ("x", SON([("s", "abc")]))])))
    nested[nested.index(b"abc")] = 0xFF
    bad_utf8 = op_msg([kind0(cmd), kind1("documents", [bytes(nested)])])

    # What each level accepts (True) or refuses with its rule.
    verdicts = [
        ("bad top-level element in a sequence document", bad_elem,
         {"spec": True, "top-level": "document-element", "full": "document-element"}),
        ("duplicate body key", dup_key,
         {"spec": True, "top-level": "duplicate-key", "full": "duplicate-key"}),
        ("nested invalid UTF-8 in a sequence document", bad_utf8,
         {"spec": True, "top-level": True, "full": "invalid-utf8"}),
    ]
    # Frame errors: refused at every level, by the same rule.
    over = bytearray(good_doc)
    struct.pack_into("<i", over, 0, len(over) + 4)
    unterminated = bytearray(good_doc)
    unterminated[-1] = 0x01
    body_past = bytearray(enc(SON([("ping", 1), ("$db", "admin")])))
    struct.pack_into("<i", body_past, 0, len(body_past) + 10)
    for what, msg, rule in [
            ("a sequence document runs past its section",
             op_msg([kind0(cmd), kind1("documents", [bytes(over)])]), "sequence-overrun"),
            ("a sequence document without its terminating 0",
             op_msg([kind0(cmd), kind1("documents", [bytes(unterminated)])]), "document-terminator"),
            ("a sequence document shorter than 5 bytes",
             op_msg([kind0(cmd), kind1("documents", [i32(4)])]), "document-length"),
            ("the body runs past the message",
             op_msg([kind0(bytes(body_past))]), "document-length")]:
        verdicts.append((what, msg, {level: rule for level in LEVELS}))

    for what, msg, want in verdicts:
        for args, level in [(["--check", "spec"], "spec"), (["--check=spec"], "spec"),
                            (["--check", "top-level"], "top-level"), ([], "top-level"),
                            (["--check", "full"], "full"), (["--full-validate"], "full"),
                            # The last one given wins.
                            (["--full-validate", "--check", "spec"], "spec"),
                            (["--check", "spec", "--full-validate"], "full")]:
            label = "check %s: %s" % (" ".join(args) or "(default)", what)
            if want[level] is True:
                rc, out, err = run(["check"] + args + ["-"], msg)
                check(rc == 0 and out == b"" and err == "", "%s: accepted: %d %r" % (label, rc, err))
            else:
                rc, out, err = expect_rule(["check"] + args + ["-"], want[level], label, msg)
                check(err.rstrip("\n").endswith(" (check: %s)" % level),
                      "%s: the error line names the level: %r" % (label, err))
        # Inside OP_COMPRESSED, at each level.
        for level in LEVELS:
            label = "check --check %s of a compressed message: %s" % (level, what)
            if want[level] is True:
                rc, out, err = run(["check", "--check", level, "-"], noop_compressed(msg))
                check(rc == 0, "%s: accepted: %d %r" % (label, rc, err))
            else:
                expect_rule(["check", "--check", level, "-"], want[level], label,
                            noop_compressed(msg))
        # dump: the level and the verdict.
        for level in LEVELS:
            rc, out, err = run(["dump", "--check", level, "-"], msg)
            d = json.loads(out)
            ok = want[level] is True
            check(rc == (0 if ok else 1) and d.get("check") == level and d["valid"] is ok
                  and (ok or d["error"]["rule"] == want[level]),
                  "dump --check %s: %s: %d %r" % (level, what, rc, d))

    # merge at the spec level: the sequence is merged as it is, byte for
    # byte (the bad element copied, never read); JSON cannot carry it, and
    # the error names the rule, as full validation finds it.
    want = enc(cmd)[:-1] + b"\x04documents\x00" + raw_array([good_doc, bad_element_doc()]) + b"\x00"
    want = struct.pack("<i", len(want)) + want[4:]
    rc, out, err = run(["merge", "--bson", "--check", "spec", "-"], bad_elem)
    check(rc == 0 and out == want, "merge --bson --check spec of a bad element: %d %r" % (rc, err))
    expect_rule(["merge", "--bson", "-"], "document-element", "merge --bson (top-level) of a bad element",
                bad_elem)
    expect_rule(["merge", "--check", "spec", "-"], "document-element",
                "merge to JSON --check spec of a bad element", bad_elem)
    rc, out, err = run(["merge", "--bson", "--check", "spec", "-"], dup_key)
    check(rc == 0 and out == dup_body, "merge --bson --check spec of a duplicate key: %d %r" % (rc, err))
    expect_rule(["merge", "--bson", "--check", "full", "-"], "invalid-utf8",
                "merge --bson --check full of nested invalid UTF-8", bad_utf8)

    # check --stream: every ok line ends with the level.
    good = op_msg([kind0(SON([("ping", 1), ("$db", "admin")]))])
    stream = good + bad_elem + dup_key
    rc, out, err = run(["check", "--stream", "--check", "spec", "-"], stream)
    check(rc == 0 and err == "" and out.decode().splitlines() == [
        "ok 0 0 OP_MSG %d spec" % len(good),
        "ok 1 %d OP_MSG %d spec" % (len(good), len(bad_elem)),
        "ok 2 %d OP_MSG %d spec" % (len(good) + len(bad_elem), len(dup_key))],
        "check --stream --check spec: %d %r %r" % (rc, out, err))
    rc, out, err = run(["check", "--stream", "-"], stream)
    lines = error_lines(err)
    check(rc == 1 and out.decode().splitlines() == ["ok 0 0 OP_MSG %d top-level" % len(good)]
          and len(lines) == 2 and "document-element: message 1 " in lines[0]
          and "duplicate-key: message 2 " in lines[1]
          and all(l.endswith(" (check: top-level)") for l in lines),
          "check --stream (top-level): %d %r %r" % (rc, out, err))

    # tap --pcap logs the rule a message breaks at its level (full unless
    # --check says otherwise).
    with tempfile.TemporaryDirectory() as tmp:
        pcap = os.path.join(tmp, "levels.pcap")
        with open(pcap, "wb") as f:
            f.write(pcap_of([bad_elem, dup_key, bad_utf8]))
        for args, want in [([], ["document-element", "duplicate-key", "invalid-utf8"]),
                           (["--full-validate"], ["document-element", "duplicate-key", "invalid-utf8"]),
                           (["--check", "top-level"], ["document-element", "duplicate-key", None]),
                           (["--check=spec", "--max-array", "1"], [None, None, None])]:
            rc, out, err = run(["tap", "--pcap", pcap] + args)
            msgs = [x for x in (json.loads(l) for l in out.decode().splitlines()) if "dir" in x]
            check(rc == 0 and [m.get("error") for m in msgs] == want,
                  "tap --pcap %s: %d %r %r" % (" ".join(args), rc, [m.get("error") for m in msgs], err))
            # An accepted message is logged with its merged document unless
            # libbson cannot read all of it (then without, never cut short).
            readable = {0: False, 1: True, 2: False}
            check(all(("doc" in m) == (m.get("error") is None and readable[i])
                      for i, m in enumerate(msgs)),
                  "tap --pcap %s: doc members %r" % (" ".join(args), [sorted(m) for m in msgs]))

    # An unknown or missing level is a usage error of every command that
    # parses, naming the three levels.
    seed = data("seed", "flat.bin")
    for args, bad in ((["check", "--check", "bogus", seed], "bogus"),
                      (["merge", "--check=Full", seed], "Full"),
                      (["dump", seed, "--check", "frame"], "frame"),
                      # 0.4's second name for spec's checks is gone (0.5.0).
                      (["check", seed, "--check", "frames"], "frames"),
                      (["check", seed, "--check"], None),
                      (["tap", "--pcap", seed, "--check", "none"], "none")):
        rc, out, err = run(args)
        first = err.splitlines()[0] if err else ""
        check(rc == 2 and first.startswith("opmsg: ") and "--check" in first
              and all(level in first for level in LEVELS) and "usage:" in err,
              "%r: exit %d %r" % (args, rc, err))
        check(bad is None or "'%s'" % bad in first, "%r names the bad level: %r" % (args, first))


GROUPS = {
    "merge_seed": group_merge_seed,
    "merge_json": group_merge_json,
    "legacy": group_legacy,
    "thirdparty": group_thirdparty,
    "stream": group_stream,
    "real": group_real,
    "errors": group_errors,
    "usage": group_usage,
    "dump": group_dump,
    "build": group_build,
    "split": group_split,
    "compress": group_compress,
    "codecs": group_codecs,
    "mutate": group_mutate,
    "check_levels": group_check_levels,
}

if __name__ == "__main__":
    GROUPS[GROUP]()
    if failures:
        print("%d check(s) failed in group %s" % (len(failures), GROUP))
        sys.exit(1)
    print("group %s: all checks passed" % GROUP)
    sys.exit(0)
