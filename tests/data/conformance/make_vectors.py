#!/usr/bin/python3
"""Writes the conformance vectors (NAME.bin) and manifest.tsv next to itself.

Usage: /usr/bin/python3 tests/data/conformance/make_vectors.py

Standard library only. Every vector is one whole reply message, header
included: OP_MSG, or OP_COMPRESSED around one. The legal replies are built
here (define()). Each rule vector is a row of tests/data/rules/cases.tsv,
the table test_offsets.c also reads: a legal reply with "ok": 1.0 in its body
that breaks one rule, the way a case of the library's tests does (the
"source" column names the test, or is "opmsg: RULE" for a case the table
alone holds), as hex, with the expected verdict at each check level written
by hand from the tests' assertions (never read back from the library). The legal messages of tests/data are listed too: files
that are one message by reference, and the OP_MSG replies inside the
captures' server-to-client streams extracted to cap_*.bin.

The output is reproducible: the same bytes on every run.
"""
import base64
import json
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)

OP_COMPRESSED, OP_MSG = 2012, 2013
REQUEST_ID = 0x5EED  # every vector's requestID; responseTo is 0 (libmongoc ignores it)

# ---------------------------------------------------------------------------
# BSON, written by hand: a document is a list of (key, value) pairs (keys may
# repeat) or a dict.
# ---------------------------------------------------------------------------


class Int64(int):
    pass


def cstr(s):
    return (s.encode() if isinstance(s, str) else s) + b"\x00"


def element(key, value):
    k = cstr(key)
    if isinstance(value, bool):
        return b"\x08" + k + (b"\x01" if value else b"\x00")
    if isinstance(value, Int64):
        return b"\x12" + k + struct.pack("<q", value)
    if isinstance(value, int):
        return b"\x10" + k + struct.pack("<i", value)
    if isinstance(value, float):
        return b"\x01" + k + struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode()
        return b"\x02" + k + struct.pack("<i", len(raw) + 1) + raw + b"\x00"
    if value is None:
        return b"\x0a" + k
    if isinstance(value, bytes):  # a document given as its bytes
        return b"\x03" + k + value
    if isinstance(value, list) and (not value or not isinstance(value[0], tuple)):
        return b"\x04" + k + doc([(str(i), v) for i, v in enumerate(value)])
    return b"\x03" + k + doc(value)


def doc(d):
    items = d.items() if isinstance(d, dict) else d
    body = b"".join(element(*kv) for kv in items)
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def raw_doc(payload):
    """A document around raw element bytes (its length counted, its 0 added)."""
    return struct.pack("<i", len(payload) + 5) + payload + b"\x00"


OK = ("ok", 1.0)

# ---------------------------------------------------------------------------
# OP_MSG and OP_COMPRESSED
# ---------------------------------------------------------------------------

# The drop-in harness's CRC-32C, the one the test peers already use.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dropin"))
from hostile_server import crc32c  # noqa: E402


def body(d):
    return b"\x00" + (d if isinstance(d, bytes) else doc(d))


def seq(identifier, docs=(), raw=None):
    payload = raw if raw is not None else b"".join(d if isinstance(d, bytes) else doc(d) for d in docs)
    ident = cstr(identifier)
    return b"\x01" + struct.pack("<i", 4 + len(ident) + len(payload)) + ident + payload


def op_msg(*sections, flags=0, checksum=False, crc_xor=0):
    """An OP_MSG; with checksum, the CRC-32C appended (xor crc_xor)."""
    payload = struct.pack("<I", flags) + b"".join(sections)
    length = 16 + len(payload) + (4 if checksum else 0)
    msg = struct.pack("<iiii", length, REQUEST_ID, 0, OP_MSG) + payload
    if checksum:
        msg += struct.pack("<I", crc32c(msg) ^ crc_xor)
    return msg


def compressed(inner, compressor=0):
    """OP_COMPRESSED around inner (a whole message): noop (0) or zlib (2)."""
    raw = inner[16:]
    data = zlib.compress(raw, 6) if compressor == 2 else raw
    payload = struct.pack("<iiB", struct.unpack_from("<i", inner, 12)[0], len(raw), compressor) + data
    return struct.pack("<iiii", 16 + len(payload), REQUEST_ID, 0, OP_COMPRESSED) + payload


# ---------------------------------------------------------------------------
# The vectors
# ---------------------------------------------------------------------------

# The check levels in the order of what they check (opmsg_check_t's
# values): spec, the default, then top-level and full.
LEVELS = ("spec", "top-level", "full")
VECTORS = []  # (file, {level: verdict}, source, what)


def expect(all=None, spec=None, top=None, full=None):
    """Verdict per level: "ok" or the library's rule name. all= sets every
    level."""
    v = {"spec": spec or all, "top-level": top or all, "full": full or all}
    assert all is None or not (spec or top or full), "all= or per level"
    for level, verdict in v.items():
        assert verdict, level
    return v


def vec(name, data, verdicts, source, what):
    VECTORS.append((name + ".bin", data, verdicts, source, what))


OK_ALL = expect(all="ok")
CURSOR = [("cursor", [("id", Int64(0)), ("ns", "test.c")]), OK]
BATCH = [{"_id": 1}, {"_id": 2}]


# The rule cases tests/data/rules/cases.tsv holds, one a row: the message as
# hex (spaces between its fields), its verdict per level and the fault's
# offset. Every rule vector is a row of it; test_offsets.c reads the same
# table and checks libopmsg's error name and offset for each row.
RULE_CASES = os.path.join(DATA, "rules", "cases.tsv")


def read_rule_cases():
    """The rows of tests/data/rules/cases.tsv, by name in the table's order:
    (message, {level: verdict}, source, what)."""
    rows = {}
    with open(RULE_CASES) as fh:
        for line in fh:
            if line.startswith("#") or not line.strip():
                continue
            name, spec, top, full, offset, source, what, hexdata = line.rstrip("\n").split("\t")
            assert name not in rows, name
            data = bytes.fromhex(hexdata)
            verdicts = {"spec": spec, "top-level": top, "full": full}
            assert any(v != "ok" for v in verdicts.values()), name + ": a rule case breaks a rule"
            offsets = offset.split("/")
            if len(offsets) == 3:
                assert all((o == "-") == (verdicts[lv] == "ok") for o, lv in zip(offsets, LEVELS)), name
            else:
                assert len(offsets) == 1, name
            for o in offsets:
                assert o == "-" or 0 <= int(o) <= len(data), name
            rows[name] = (data, verdicts, source, what)
    return rows


def plain(flags=0, **kw):
    return op_msg(body([OK]), flags=flags, **kw)


def seq_reply(flags=0, **kw):
    return op_msg(body(CURSOR), seq("cursor.firstBatch", BATCH), flags=flags, **kw)


def define():
    # --- legal replies ------------------------------------------------------
    vec("ok_plain", plain(), OK_ALL, "test_parse.c test_reply_only", "body {ok: 1.0} alone")
    vec("ok_body_fields", op_msg(body([OK, ("n", 5), ("s", "x"), ("d", [("a", [1, 2])]), ("z", None)])),
        OK_ALL, "test_parse.c test_valid_insert", "body with several types")
    vec("ok_seq_after", seq_reply(), OK_ALL, "test_merge.c test_dotted_paths",
        "cursor.firstBatch after the body, merged inside cursor")
    vec("ok_seq_before", op_msg(seq("cursor.firstBatch", BATCH), body(CURSOR)), OK_ALL,
        "test_parse.c test_section_order", "the sequence before the body")
    vec("ok_three_seqs", op_msg(body([OK]), seq("a", [{"x": 1}]), seq("b", [{"y": 2}, {"y": 3}]), seq("c", [{}])),
        OK_ALL, "test_merge.c test_top_level_sequences", "three top-level sequences, wire order")
    vec("ok_seq_around_body", op_msg(seq("a", [{"x": 1}]), body([OK]), seq("b")), OK_ALL,
        "test_parse.c test_section_order", "sequences before and after the body, one empty")
    vec("ok_empty_seq", op_msg(body([OK]), seq("documents")), OK_ALL, "test_merge.c test_top_level_sequences",
        "an empty sequence merges as an empty array")
    vec("ok_dotted_deep", op_msg(body([("a", [("k", 1), ("b", [("m", 2)])]), OK]), seq("a.b.c", [{}])), OK_ALL,
        "test_merge.c test_dotted_paths", "a.b.c placed inside the body's a.b")
    vec("ok_dotted_sibling", op_msg(body([("a", [("c", 1)]), OK]), seq("a.b", [{"_id": 1}])), OK_ALL,
        "test_parse.c test_identifier_clash", "a.b beside the body's a.c")
    vec("ok_dotted_body_key", op_msg(body([("a.b", 1), OK]), seq("a", [{"_id": 1}])), OK_ALL,
        "test_parse.c test_identifier_clash", "body key \"a.b\" is one name: identifier a does not clash")
    vec("ok_prefix_name", op_msg(body([("documentsX", 1), OK]), seq("documents", [{"_id": 1}])), OK_ALL,
        "test_parse.c test_identifier_clash", "documentsX does not clash with documents")
    vec("ok_path_other_dup", op_msg(body([("a", [("x", 1), ("x", 2), ("b", {})]), OK]), seq("a.b.c", [{"_id": 1}])),
        OK_ALL, "test_parse.c test_identifier_clash", "a key twice beside the path in a sub-document")
    vec("ok_checksum", plain(flags=1, checksum=True), OK_ALL, "test_parse.c test_checksum",
        "checksumPresent with the right CRC-32C")
    vec("ok_checksum_seq", seq_reply(flags=1, checksum=True), OK_ALL, "test_parse.c test_checksum",
        "checksum and a sequence")
    vec("ok_optional_flags", plain(flags=0xFFFE0000), OK_ALL, "test_parse.c test_flags",
        "unknown optional flag bits 17-31 are ignored")
    vec("ok_exhaust_allowed", plain(flags=0x00010000), OK_ALL, "test_parse.c test_flags",
        "exhaustAllowed set")
    vec("ok_nested_dup", op_msg(body([OK, ("f", [("a", 1), ("a", 2)])])), OK_ALL,
        "test_parse.c test_duplicate_keys", "a key twice in a nested document")
    vec("ok_noop", compressed(plain()), OK_ALL, "test_parse.c test_reply_only",
        "OP_COMPRESSED noop around {ok: 1.0}")
    vec("ok_zlib_seq", compressed(seq_reply(), 2), OK_ALL, "test_compress.c",
        "OP_COMPRESSED zlib around a reply with cursor.firstBatch")
    vec("ok_zlib_checksum", compressed(plain(flags=1, checksum=True), 2), OK_ALL, "test_compress.c",
        "OP_COMPRESSED zlib around a checksummed reply")

    # --- rule vectors: every row of tests/data/rules/cases.tsv, in its order ---
    for name, (data, verdicts, source, what) in read_rule_cases().items():
        vec(name, data, verdicts, source, what)


def has_sequence(m):
    """True when the OP_MSG m has a kind-1 section."""
    off, end = 20, len(m) - (4 if struct.unpack_from("<I", m, 16)[0] & 1 else 0)
    while off < end:
        if m[off] == 1:
            return True
        off += 1 + struct.unpack_from("<i", m, off + 1)[0]
    return False


def define_data():
    """tests/data's OP_MSG / OP_COMPRESSED messages: by reference, or (inside
    the captures' server-to-client streams) extracted."""
    refs = []
    for rel, verdict, what in (
            ("seed/flat.bin", "ok", "seed: flat body (request shape, no ok)"),
            ("seed/deep.bin", "ok", "seed: deep body"),
            ("seed/seq.bin", "ok", "seed: body + documents sequence"),
            ("thirdparty/ferretdb_handshake5.bin", "ok", "FerretDB/wire: buildInfo request"),
            ("thirdparty/ferretdb_handshake6.bin", "ok", "FerretDB/wire: MongoDB 5.0 buildInfo reply"),
            ("thirdparty/ferretdb_import.bin", "ok", "FerretDB/wire: insert with documents sequence"),
            ("thirdparty/ferretdb_multisection_insert_crc.bin", "ok", "FerretDB/wire: sequence first, real CRC"),
            ("thirdparty/ferretdb_multisection_update_crc.bin", "ok", "FerretDB/wire: updates sequence, real CRC"),
            ("thirdparty/ferretdb_invalid_checksum.bin", "checksum-mismatch", "FerretDB/wire: stale checksum"),
            ("thirdparty/ferretdb_msg_fuzz1_invalid.bin", "required-flags", "FerretDB/wire: fuzzer flagBits"),
            ("thirdparty/mcdrpc_op_msg_kind_0.bin", "checksum-mismatch", "mongo-c-driver test: placeholder CRC"),
            ("thirdparty/mcdrpc_op_msg_kind_1_single.bin", "checksum-mismatch",
             "mongo-c-driver test: placeholder CRC"),
            ("thirdparty/mcdrpc_op_msg_kind_1_multiple.bin", "checksum-mismatch",
             "mongo-c-driver test: placeholder CRC"),
            ("thirdparty/mcdrpc_op_compressed.bin", "ok", "mongo-c-driver test: noop around a 20-byte OP_MSG"),
            ("compressed/pymongo_zlib_op_msg.bin", "ok", "pymongo zlib OP_MSG insert"),
            ("compressed/zstdcli_op_msg.bin", "ok", "zstd CLI frame around pymongo's OP_MSG")):
        refs.append((rel, expect(all=verdict), rel.split("/")[0] + "/ (see its README)", what))
    real = os.path.join(DATA, "captures", "real")
    for client in sorted(os.listdir(real)):
        d = os.path.join(real, client)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith("-s2c.bin"):
                continue
            with open(os.path.join(d, f), "rb") as fh:
                m = fh.read()
            if struct.unpack_from("<i", m, 12)[0] in (OP_MSG, OP_COMPRESSED):
                refs.append(("captures/real/%s/%s" % (client, f), OK_ALL, "captures/real/README.md",
                             "FerretDB 1.24.2 reply to %s" % client))
    caps = os.path.join(DATA, "captures")
    for f in sorted(os.listdir(caps)):
        if not f.endswith("_s2c.bin"):
            continue
        with open(os.path.join(caps, f), "rb") as fh:
            stream = fh.read()
        off, index = 0, 0
        while off + 16 <= len(stream):
            length, _, _, opcode = struct.unpack_from("<iiii", stream, off)
            if opcode == OP_MSG:
                m = stream[off:off + length]
                clash = f.startswith("mockseq") and has_sequence(m)
                verdict = expect(all="identifier-clash") if clash else OK_ALL
                VECTORS.append(("cap_%s_m%d.bin" % (f[:-len("_s2c.bin")], index), m, verdict,
                                "captures/%s message %d (offset %d)" % (f, index, off),
                                "python3-mockupdb reply" + (" with the cursor.firstBatch clash" if clash else "")))
            off += length
            index += 1
    return refs


# ---------------------------------------------------------------------------
# Driver-neutral outcomes (reply-cases.json, spec/)
#
# The outcome a driver following the OP_MSG specification gives each vector
# (source/message/OP_MSG.md with the "document sequences in replies" change,
# upstream/specifications/): "ok" with the merged document, or "error". It
# is the verdict of the spec column above (libopmsg's spec level is that
# text), in the specification's words, except where the specification does
# not decide (UNSPECIFIED). The merged document is computed here, by
# merge() below, not read back from the library.
# ---------------------------------------------------------------------------

DOCUMENT_SEQUENCES_ALLOWED = 1 << 17  # flagBits bit 17, optional

# libopmsg's rule name -> what the specification says is wrong.
REASONS = {
    "length-too-small": "messageLength is below the smallest OP_MSG",
    "length-too-large": "messageLength is above maxMessageSizeBytes (48,000,000 by default)",
    "truncated": "the message is shorter than its messageLength",
    "required-flags": "an undefined required flag bit (0-15) is set",
    "checksum-missing": "checksumPresent is set but the message has no room for the checksum",
    "no-body": "no section of payload type 0",
    "multiple-bodies": "more than one section of payload type 0",
    "unknown-section-kind": "an unknown payload type",
    "section-truncated": "a section is cut short by the end of the message",
    "trailing-bytes": "bytes after the last section that are not a section",
    "sequence-size": "a payload type 1 section's size does not hold its identifier and documents",
    "sequence-overrun": "a payload type 1 section's documents do not end where its size says",
    "document-length": "a document's length does not fit its section",
    "document-terminator": "a document does not end with its terminating 0",
    "document-element": "a document the driver must read to place a sequence is not valid BSON",
    "invalid-boolean": "a document the driver must read to place a sequence is not valid BSON (a boolean other "
                       "than 0 or 1)",
    "sequence-identifier": "an identifier that is empty, has an empty component, is not valid UTF-8 or is not "
                           "terminated",
    "duplicate-identifier": "two identifiers are equal, or one is a path prefix of the other",
    "identifier-clash": "the identifier names a field the body already has",
    "uncompressed-size": "OP_COMPRESSED: uncompressedSize is not the size of the decompressed message",
    "decompress": "OP_COMPRESSED: the compressed message does not decompress",
    "unknown-compressor": "OP_COMPRESSED: an unknown compressorId",
    "nested-compression": "OP_COMPRESSED: originalOpcode is OP_COMPRESSED",
    "bad-original-opcode": "OP_COMPRESSED: originalOpcode is not one a reply may carry",
}

# Vectors whose identifier-clash (or other) verdict has a more precise reason.
PARENT_MISSING = "a dotted identifier's parent is missing from the body (a parent is never created)"
NOT_A_DOCUMENT = "a dotted identifier's parent is not a document"
PARENT_TWICE = "a dotted identifier's parent is in its document more than once"
REASON_OF = {
    "id_clash_parent_scalar": NOT_A_DOCUMENT,
    "id_clash_parent_array": NOT_A_DOCUMENT,
    "id_clash_grandparent_scalar": NOT_A_DOCUMENT,
    "id_clash_ambiguous_nested": PARENT_TWICE,
    "id_clash_ambiguous_top": PARENT_TWICE,
    "id_clash_ambiguous_top_keyset": PARENT_TWICE,
    "id_clash_no_parent": PARENT_MISSING,
    "id_clash_no_parent_deep": PARENT_MISSING,
    "id_clash_no_parent_dotted_key": PARENT_MISSING,
    "seq_id_too_deep": PARENT_MISSING,  # "a.a...": the body has no "a" (libopmsg stops at its depth limit first)
    "id_clash_past_dup": "the identifier names a field the body already has",
    "id_clash_past_dup_keyset": "the identifier names a field the body already has",
}

CRC = "the specification reserves checksumPresent: a driver that verifies the checksum rejects this reply, " \
      "one that does not hands on the body as it is"
BSON_INSIDE = "a document no sequence is placed by is not valid BSON: whether the driver reads it (and fails) " \
              "is BSON's matter (bson-corpus decodeErrors), not OP_MSG's"
UNSPECIFIED = {
    "hdr_length_mismatch": "bytes after messageLength: a driver reads messageLength bytes from the stream and the "
                           "rest belongs to the next message",
    "crc_stored_wrong": CRC,
    "crc_body_flipped": CRC,
    "ferretdb_invalid_checksum": CRC,
    "mcdrpc_op_msg_kind_0": CRC,
    "mcdrpc_op_msg_kind_1_single": CRC,
    "mcdrpc_op_msg_kind_1_multiple": CRC,
}
for _n in ("lvl_body_bad_element", "lvl_body_bad_bool", "lvl_body_ends_early", "lvl_body_string_len",
           "lvl_seq_bad_element", "lvl_seq_bad_bool", "lvl_seq_nested_utf8", "lvl_body_nested_utf8",
           "lvl_body_nested_bool", "lvl_body_nested_bad_type", "lvl_seq_nested_key_utf8", "lvl_body_nested_binary_old",
           "lvl_seq_nested_bool"):
    UNSPECIFIED[_n] = BSON_INSIDE
# The bson_* rows (a nested value that breaks BSON's own rules, the full level's, in a body with no
# sequence) and the elem_* rows the spec level accepts (a bad element in a body alone, in a sequence
# document, or nested in a body beside a sequence).
for _n, (_data, _verdicts, _source, _what) in read_rule_cases().items():
    if _n.startswith(("bson_", "elem_")) and _verdicts["spec"] == "ok":
        UNSPECIFIED[_n] = BSON_INSIDE

# Where each folder's messages come from and under which licence (the
# folders' README.md files say so at length).
PROVENANCE = {
    "conformance": ("synthetic: written by tests/data/conformance/make_vectors.py", "Apache-2.0 (opmsg)"),
    "cap": ("captured: a python3-mockupdb 1.8.0 reply to a real driver, recorded for opmsg "
            "(tests/data/captures/README.md)", "Apache-2.0 (opmsg)"),
    "seed": ("rebuilt for opmsg; embedded documents from mongo-go-driver data/extended_bson/ "
             "(tests/data/seed/README.md)", "Apache-2.0"),
    "thirdparty": ("third party: FerretDB/wire@712828f8 or mongodb/mongo-c-driver@a047e0bc test data "
                   "(tests/data/thirdparty/manifest.tsv)", "Apache-2.0"),
    "compressed": ("made by pymongo 3.11.0 / the zstd CLI 1.5.4 run by tests/data/compressed/make_vectors.py",
                   "Apache-2.0 (opmsg; pymongo and zstd only run)"),
    "captures": ("captured: FerretDB 1.24.2's reply to a real client, recorded by opmsg tap "
                 "(tests/data/captures/real/README.md)", "Apache-2.0 (opmsg)"),
}


def elements(d):
    """The elements of the BSON document d: (type, key bytes, value bytes)."""
    out, off, end = [], 4, struct.unpack_from("<i", d, 0)[0] - 1
    while off < end:
        t = d[off]
        k_end = d.index(b"\x00", off + 1)
        key, v = d[off + 1:k_end], k_end + 1
        if t in (0x01, 0x09, 0x11, 0x12):
            n = 8
        elif t in (0x02, 0x0D, 0x0E):
            n = 4 + struct.unpack_from("<i", d, v)[0]
        elif t in (0x03, 0x04, 0x0F):
            n = struct.unpack_from("<i", d, v)[0]
        elif t == 0x05:
            n = 5 + struct.unpack_from("<i", d, v)[0]
        elif t == 0x07:
            n = 12
        elif t == 0x08:
            n = 1
        elif t in (0x06, 0x0A, 0x7F, 0xFF):
            n = 0
        elif t == 0x10:
            n = 4
        elif t == 0x13:
            n = 16
        elif t == 0x0B:
            n = d.index(b"\x00", d.index(b"\x00", v) + 1) + 1 - v
        elif t == 0x0C:
            n = 4 + struct.unpack_from("<i", d, v)[0] + 12
        else:
            raise ValueError("BSON type 0x%02x" % t)
        out.append((t, key, d[v:v + n]))
        off = v + n
    return out


def array_element(name, docs):
    items = b"".join(b"\x03" + cstr(str(i)) + dd for i, dd in enumerate(docs))
    return b"\x04" + cstr(name) + raw_doc(items)


def merge(body_doc, seqs, path=b""):
    """The merged document: body_doc with each sequence (identifier, docs)
    appended as an array to the document its identifier names. The caller
    has made sure every path is there (no parent is created)."""
    out = b""
    for t, key, value in elements(body_doc):
        if t == 0x03 and b"." not in key and any(i.startswith(path + key + b".") for i, _ in seqs):
            out += bytes([t]) + key + b"\x00" + merge(value, seqs, path + key + b".")
        else:
            out += bytes([t]) + key + b"\x00" + value
    for ident, docs in seqs:
        if ident.startswith(path) and b"." not in ident[len(path):]:
            out += array_element(ident[len(path):], docs)
    return raw_doc(out)


def sections(m):
    """flagBits, the body and the sequences [(identifier, [docs])] of the OP_MSG m."""
    flags = struct.unpack_from("<I", m, 16)[0]
    off, end = 20, len(m) - (4 if flags & 1 else 0)
    body_doc, seqs = None, []
    while off < end:
        if m[off] == 0:
            n = struct.unpack_from("<i", m, off + 1)[0]
            assert body_doc is None
            body_doc = m[off + 1:off + 1 + n]
            off += 1 + n
        else:
            assert m[off] == 1
            size = struct.unpack_from("<i", m, off + 1)[0]
            id_end = m.index(b"\x00", off + 5)
            ident, p, docs = m[off + 5:id_end], id_end + 1, []
            while p < off + 1 + size:
                n = struct.unpack_from("<i", m, p)[0]
                docs.append(m[p:p + n])
                p += n
            seqs.append((ident, docs))
            off += 1 + size
    return flags, body_doc, seqs


def inner_message(m):
    """The OP_MSG of m, decompressed when m is OP_COMPRESSED (noop or zlib);
    None for another compressor."""
    if struct.unpack_from("<i", m, 12)[0] != OP_COMPRESSED:
        return m
    orig, _, comp = struct.unpack_from("<iiB", m, 16)
    data = m[25:]
    if comp == 2:
        data = zlib.decompress(data)
    elif comp != 0:
        return None
    return struct.pack("<iiii", 16 + len(data), 0, 0, orig) + data


def ejson_value(t, v):
    if t == 0x01:
        f = struct.unpack("<d", v)[0]
        text = "Infinity" if f == float("inf") else "-Infinity" if f == -float("inf") else \
            "NaN" if f != f else repr(f)
        return '{"$numberDouble": "%s"}' % text
    if t == 0x02:
        return json.dumps(v[4:-1].decode("utf-8"), ensure_ascii=False)
    if t == 0x03:
        return ejson(v)
    if t == 0x04:
        return "[" + ", ".join(ejson_value(et, ev) for et, _, ev in elements(v)) + "]"
    if t == 0x05:
        sub = v[4]
        return '{"$binary": {"base64": "%s", "subType": "%02x"}}' % (base64.b64encode(v[5:]).decode(), sub)
    if t == 0x07:
        return '{"$oid": "%s"}' % v.hex()
    if t == 0x08:
        return "true" if v == b"\x01" else "false"
    if t == 0x09:
        return '{"$date": {"$numberLong": "%d"}}' % struct.unpack("<q", v)[0]
    if t == 0x0A:
        return "null"
    if t == 0x10:
        return '{"$numberInt": "%d"}' % struct.unpack("<i", v)[0]
    if t == 0x11:
        i, ts = struct.unpack("<II", v)
        return '{"$timestamp": {"t": %d, "i": %d}}' % (ts, i)
    if t == 0x12:
        return '{"$numberLong": "%d"}' % struct.unpack("<q", v)[0]
    if t == 0x7F:
        return '{"$maxKey": 1}'
    if t == 0xFF:
        return '{"$minKey": 1}'
    raise ValueError("no canonical Extended JSON here for BSON type 0x%02x" % t)


def ejson(d):
    """Canonical Extended JSON of the document d (key order and repeated keys kept)."""
    items = ["%s: %s" % (json.dumps(k.decode("utf-8"), ensure_ascii=False), ejson_value(t, v))
             for t, k, v in elements(d)]
    return "{" + ", ".join(items) + "}"


def neutral_case(rel, data, verdicts, source, what):
    """The driver-neutral case of one vector (without its request flags)."""
    stem = os.path.basename(rel)[:-len(".bin")]
    folder = rel.split("/")[0]
    provenance, licence = PROVENANCE["cap" if stem.startswith("cap_") else folder]
    # The vectors of this folder by their name, the others by their path (the
    # captures of several clients share file names).
    name = stem if folder == "conformance" else rel[:-len(".bin")]
    c = {"name": name, "file": rel, "what": what, "source": source, "reply": data.hex(),
         "provenance": provenance, "licence": licence, "synthetic": folder == "conformance" and
         not stem.startswith("cap_")}
    if stem in UNSPECIFIED:
        c["outcome"] = "unspecified"
        c["note"] = UNSPECIFIED[stem]
        return c
    if verdicts["spec"] != "ok":
        c["outcome"] = "error"
        c["error"] = REASON_OF.get(stem, REASONS[verdicts["spec"]])
        return c
    c["outcome"] = "ok"
    inner = inner_message(data)
    if inner is None:
        merged_path = os.path.join(DATA, rel[:-len(".bin")] + ".merged.bson")
        with open(merged_path, "rb") as fh:
            merged = fh.read()
    else:
        _, body_doc, seqs = sections(inner)
        merged = merge(body_doc, seqs)
    c["merged"] = {"canonical_extjson": ejson(merged), "bson": merged.hex()}
    c["has_sequences"] = inner is not None and bool(sections(inner)[2])
    return c


def write_neutral(rows):
    """reply-cases.json (every vector; the sequences' replies once more as
    answers to a request that did not set documentSequencesAllowed) and the
    specification's tests (spec/: the synthetic OP_MSG cases the text
    decides)."""
    cases = []
    for rel, data, verdicts, source, what in rows:
        c = neutral_case(rel, data, verdicts, source, what)
        asked = dict(c, requestFlagBits=DOCUMENT_SEQUENCES_ALLOWED)
        cases.append(asked)
        if c.get("has_sequences"):
            unasked = dict(c, requestFlagBits=0, name=c["name"] + "_unasked",
                           what=c["what"] + " (the request did not set documentSequencesAllowed)")
            cases.append(unasked)
    for c in cases:
        c.pop("has_sequences", None)
    assert len({c["name"] for c in cases}) == len(cases), "case names repeat"
    doc = {
        "description": "OP_MSG replies and what a driver following the OP_MSG specification with document "
                       "sequences in replies does with each: ok (the merged document) or error. Generated by "
                       "tests/data/conformance/make_vectors.py; README.md says how to read it.",
        "cases": cases,
    }
    with open(os.path.join(HERE, "reply-cases.json"), "w") as fh:
        json.dump(doc, fh, indent=1, ensure_ascii=True)
        fh.write("\n")
    write_spec_tests([c for c in cases if c["synthetic"] and c["outcome"] != "unspecified" and
                      c["name"] not in SPEC_SKIP and
                      struct.unpack_from("<i", bytes.fromhex(c["reply"]), 12)[0] == OP_MSG])
    return cases


def spec_test(c):
    t = {"description": c["what"], "reply": c["reply"], "requestFlagBits": c["requestFlagBits"]}
    if c["outcome"] == "ok":
        t["merged"] = c["merged"]["canonical_extjson"]
    else:
        t["error"] = True
        t["reason"] = c["error"]
    return t


def yaml_scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if all(" " <= ch <= "~" for ch in v) and "'" not in v:
        return "'%s'" % v  # single-quoted: nothing inside is an escape
    return json.dumps(v)  # a JSON string is a YAML double-quoted scalar


def yaml_lines(v, indent=""):
    """Block YAML for dicts of scalars and lists of such dicts."""
    out = []
    for k, x in v.items():
        if isinstance(x, list):
            out.append("%s%s:" % (indent, k))
            for item in x:
                first = True
                for ik, iv in item.items():
                    out.append("%s  %s %s: %s" % (indent, "-" if first else " ", ik, yaml_scalar(iv)))
                    first = False
                out.append("")
        else:
            out.append("%s%s: %s" % (indent, k, yaml_scalar(x)))
    return out


# Vectors the specification's tests leave out: a limit of libopmsg's, not of the text.
SPEC_SKIP = {"seq_id_too_deep"}
# ... and the sweep of elem_bodyseq_*: every kind of bad top-level element in a body beside a sequence,
# which the specification's tests have once (doc_body_bad_element_seq, doc_body_bad_element_seq_first).
SPEC_SKIP |= {_n for _n in read_rule_cases() if _n.startswith("elem_bodyseq_")}
# ... and the *_keyset rows: a case the tests have once, again among 12 sequences (libopmsg's key set).
SPEC_SKIP |= {_n for _n in read_rule_cases() if _n.endswith("_keyset")}

SPEC_FILES = (
    ("replies-valid", "OP_MSG replies a driver MUST accept: each gives the merged document (canonical Extended "
                      "JSON), the body with each document sequence appended as an array to the document its "
                      "identifier names.",
     lambda c: c["outcome"] == "ok"),
    ("replies-invalid", "OP_MSG replies a driver MUST reject as an invalid reply (a network error: the connection "
                        "is closed).",
     lambda c: c["outcome"] == "error"),
)


def write_spec_tests(cases):
    d = os.path.join(HERE, "spec")
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.endswith((".json", ".yml")):
            os.remove(os.path.join(d, f))
    for stem, description, keep in SPEC_FILES:
        doc = {"description": description, "tests": [spec_test(c) for c in cases if keep(c)]}
        with open(os.path.join(d, stem + ".yml"), "w") as fh:
            fh.write("\n".join(yaml_lines(doc)).rstrip("\n") + "\n")
        with open(os.path.join(d, stem + ".json"), "w") as fh:
            fh.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")  # as yaml2json.mjs writes it


def main():
    define()
    refs = define_data()
    names = set()
    for f in os.listdir(HERE):
        if f.endswith(".bin"):
            os.remove(os.path.join(HERE, f))
    rows = []
    for name, data, verdicts, source, what in VECTORS:
        assert name not in names, name
        names.add(name)
        op = struct.unpack_from("<i", data, 12)[0]
        assert op in (OP_MSG, OP_COMPRESSED), name
        with open(os.path.join(HERE, name), "wb") as fh:
            fh.write(data)
        rows.append(("conformance/" + name, verdicts, source, what))
    rows.extend(refs)
    neutral_rows = [("conformance/" + name, data, verdicts, source, what)
                    for name, data, verdicts, source, what in VECTORS]
    for rel, verdicts, source, what in refs:
        with open(os.path.join(DATA, rel), "rb") as fh:
            neutral_rows.append((rel, fh.read(), verdicts, source, what))
    cases = write_neutral(neutral_rows)
    with open(os.path.join(HERE, "manifest.tsv"), "w") as fh:
        fh.write("# file (under tests/data)\t" + "\t".join(LEVELS) + "\tsource\twhat\n")
        for f, verdicts, source, what in rows:
            fh.write("\t".join([f] + [verdicts[level] for level in LEVELS] + [source, what]) + "\n")
    print("%d vectors (%d written here, %d by reference); reply-cases.json: %d cases (%s)"
          % (len(rows), len(VECTORS), len(refs), len(cases),
             ", ".join("%d %s" % (sum(c["outcome"] == o for c in cases), o) for o in ("ok", "error", "unspecified"))))


if __name__ == "__main__":
    main()
