#!/usr/bin/python3
"""Regenerates the seed corpora tests/fuzz/corpus/<target>/ from tests/data.

Every vector under tests/data becomes seeds for each target, in that target's
input format (see the comment at the top of each fuzz_<target>.c). Streams
(the captures) are cut into messages by messageLength where a target takes
one message. Output is deterministic; run it again after adding vectors:

    python3 tests/fuzz/make_corpus.py [TARGET...]
"""
import hashlib
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
CORPUS = os.path.join(HERE, "corpus")

OP_REPLY, OP_QUERY, OP_COMPRESSED, OP_MSG = 1, 2004, 2012, 2013

# Control byte bits shared by the targets (harness.h).
FULL_VALIDATE, SKIP_CHECKSUM, REQUEST = 0x1, 0x2, 0x4


def vectors():
    """(name, bytes) of every .bin under tests/data, sorted."""
    out = []
    for root, _, files in os.walk(DATA):
        for f in files:
            if f.endswith(".bin"):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, DATA).replace(os.sep, "_")[:-4]
                with open(path, "rb") as fh:
                    out.append((rel, fh.read()))
    return sorted(out)


def split_messages(data):
    """Cuts a stream into messages; a malformed tail stays one piece."""
    out, off = [], 0
    while off + 16 <= len(data):
        (length,) = struct.unpack_from("<i", data, off)
        if length < 16 or off + length > len(data):
            break
        out.append(data[off:off + length])
        off += length
    if off < len(data):
        out.append(data[off:])
    return out


# Seeds stay small: larger messages are left to tests/data (the fuzzer
# would not mutate them usefully anyway).
MAX_SEED = 16384


def messages():
    """(name, message) for each distinct message of each vector (messages
    that differ only in requestID/responseTo are kept once)."""
    out, seen = [], set()
    for name, data in vectors():
        parts = split_messages(data)
        for i, msg in enumerate(parts):
            key = msg[:4] + msg[12:]
            if len(msg) > MAX_SEED or key in seen:
                continue
            seen.add(key)
            out.append((name if len(parts) == 1 else "%s-m%d" % (name, i), msg))
    return out


def cut_stream(data):
    """The longest prefix of whole messages within MAX_SEED (or the first
    MAX_SEED bytes when even the first message is larger)."""
    if len(data) <= MAX_SEED:
        return data
    end = 0
    for msg in split_messages(data):
        if end + len(msg) > MAX_SEED:
            break
        end += len(msg)
    return data[:end] if end else data[:MAX_SEED]


def hash_index(name):
    return int(hashlib.sha1(name.encode()).hexdigest()[:8], 16)


def opcode(msg):
    return struct.unpack_from("<i", msg, 12)[0] if len(msg) >= 16 else None


# --- codecs, written out by hand so no Python module beyond zlib is needed ---

def snappy_literal(data):
    """A valid snappy block made of literals only."""
    out = bytearray()
    n = len(data)
    while True:  # varint of the uncompressed length
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            break
    pos = 0
    while pos < len(data):
        chunk = data[pos:pos + 65536]
        k = len(chunk) - 1
        if k < 60:
            out.append(k << 2)
        elif k < 256:
            out += bytes([60 << 2, k])
        else:
            out += bytes([61 << 2]) + struct.pack("<H", k)
        out += chunk
        pos += len(chunk)
    return bytes(out)


def zstd_raw(data):
    """A zstd frame with the content size and one raw block (max 128 KiB)."""
    assert len(data) < 65536 + 256
    if len(data) < 256:
        header = bytes([0x20, len(data)])  # single segment, 1-byte size
    else:
        header = bytes([0x60]) + struct.pack("<H", len(data) - 256)
    block = struct.pack("<I", 1 | (len(data) << 3))[:3]  # last, raw
    return struct.pack("<I", 0xFD2FB528) + header + block + data


def compress(msg, compressor_id):
    """Wraps a whole message in OP_COMPRESSED with the given codec."""
    length, request_id, response_to, original = struct.unpack_from("<iiii", msg)
    payload = msg[16:]
    packed = {0: lambda b: b, 1: snappy_literal, 2: lambda b: zlib.compress(b, 6),
              3: zstd_raw}[compressor_id](payload)
    body = struct.pack("<iiB", original, len(payload), compressor_id) + packed
    return struct.pack("<iiii", 16 + len(body), request_id, response_to,
                       OP_COMPRESSED) + body


# --- targets ---

def seeds_fuzz_parse():
    for name, msg in messages():
        yield "%s-c00" % name, bytes([0]) + msg
        yield "%s-c03" % name, bytes([FULL_VALIDATE | SKIP_CHECKSUM]) + msg


def seeds_fuzz_compressed():
    for name, msg in messages():
        op = opcode(msg)
        if op not in (OP_MSG, OP_QUERY, OP_REPLY) or struct.unpack_from("<i", msg)[0] != len(msg):
            if op == OP_COMPRESSED:
                yield "%s-c00" % name, bytes([0]) + msg
            continue
        # Every codec for the hand-made vectors; one codec each, in turn, for
        # the many real captures; zlib alone for the large seeds.
        if len(msg) > 4096:
            codecs = (2,)
        elif name.startswith("captures_real"):
            codecs = (hash_index(name) % 4,)
        else:
            codecs = (0, 1, 2, 3)
        for cid in codecs:
            yield "%s-z%d" % (name, cid), bytes([SKIP_CHECKSUM]) + compress(msg, cid)


def reader_input(sizes, stream):
    return bytes([0, len(sizes)]) + bytes(sizes) + stream


def seeds_fuzz_reader():
    streams = [(n, cut_stream(d)) for n, d in vectors()]
    # Every vector alone, in a few piece patterns.
    for name, data in streams:
        yield "%s-p0" % name, reader_input([], data) if len(data) <= 1024 else reader_input([0x7f], data)
        yield "%s-p3" % name, reader_input([6, 0, 0x45], data)
    # Whole conversations: the captures of one connection back to back, and
    # one stream cut short inside a message.
    thirdparty = b"".join(d for n, d in streams if n.startswith("thirdparty_ferretdb_handshake"))
    yield "ferretdb-handshakes-p2", reader_input([15, 200], thirdparty)
    yield "ferretdb-handshakes-cut", reader_input([3], thirdparty[:-7])
    # Reply mode (control bit 5): an exhaust sequence of three replies, each
    # answering the one before, the middle one compressed; and the replies
    # of each server-to-client capture.
    yield "exhaust-sequence", bytes([0x20, 2, 9, 0x41]) + exhaust_stream()
    for name, data in streams:
        if name.endswith("s2c") and not name.startswith("captures_real"):
            yield "%s-replies" % name, bytes([0x20, 1, 0x10]) + data


def exhaust_stream():
    body = [m for n, m in messages() if opcode(m) == OP_MSG and "s2c" in n][0]
    out, prev = b"", 7
    for i, (more, packed) in enumerate(((True, False), (True, True), (False, False))):
        rid = 100 + i
        msg = bytearray(body)
        struct.pack_into("<iii", msg, 4, rid, prev, OP_MSG)
        flags = struct.unpack_from("<I", msg, 16)[0] & ~2
        struct.pack_into("<I", msg, 16, flags | (2 if more else 0))
        out += compress(bytes(msg), 2) if packed else bytes(msg)
        prev = rid
    return out


def seeds_fuzz_legacy():
    for name, msg in messages():
        op = opcode(msg)
        if op in (OP_QUERY, OP_REPLY):
            yield "%s-c00" % name, bytes([0]) + msg
            yield "%s-c01" % name, bytes([FULL_VALIDATE]) + msg
        elif len(msg) <= 1024:
            # Other opcodes with the control byte forcing OP_REPLY / OP_QUERY.
            yield "%s-as-reply" % name, bytes([0x20]) + msg
            yield "%s-as-query" % name, bytes([0x40]) + msg


def op_msg_sections(msg):
    """(kind, identifier, documents bytes) of an OP_MSG, best effort."""
    out = []
    if opcode(msg) != OP_MSG or len(msg) < 21:
        return out
    (flags,) = struct.unpack_from("<I", msg, 16)
    end = len(msg) - (4 if flags & 1 else 0)
    off = 20
    while off + 5 <= end:
        kind = msg[off]
        if kind == 0:
            (n,) = struct.unpack_from("<i", msg, off + 1)
            out.append((0, None, msg[off + 1:off + 1 + n]))
            off += 1 + n
        elif kind == 1:
            (n,) = struct.unpack_from("<i", msg, off + 1)
            nul = msg.find(b"\0", off + 5)
            if nul < 0:
                break
            out.append((1, msg[off + 5:nul], msg[nul + 1:off + 1 + n]))
            off += 1 + n
        else:
            break
    return out


def build_input(control, cmd, ident, max_msg, batch, max_bson, payload):
    return bytes([control, cmd, ident]) + struct.pack("<H", max_msg) + \
        bytes([batch, max_bson]) + struct.pack("<I", 1000) + payload


def seeds_fuzz_build():
    # Raw runs: every sequence and every body of the vectors, with limits
    # loose, tight and tiny.
    for name, msg in messages():
        for i, (kind, ident, docs) in enumerate(op_msg_sections(msg)):
            if len(docs) > 4096:
                continue
            yield "%s-s%d-raw" % (name, i), build_input(0x20, 0, 0, 0, 0, 0, docs)
            yield "%s-s%d-raw-tight" % (name, i), build_input(0x21, 0, 0, 40, 2, 60, docs)
    # Generated documents from assorted bytes, with several limit settings.
    for name, msg in messages()[:24]:
        payload = msg[16:400]
        yield "%s-gen" % name, build_input(0x00, 1, 1, 0, 0, 0, payload)
        yield "%s-gen-small" % name, build_input(0x41, 2, 5, 30, 3, 40, payload)
        yield "%s-gen-multi" % name, build_input(0x40, 0, 7, 200, 0, 0, payload)


TARGETS = {
    "fuzz_build": seeds_fuzz_build,
    "fuzz_parse": seeds_fuzz_parse,
    "fuzz_compressed": seeds_fuzz_compressed,
    "fuzz_reader": seeds_fuzz_reader,
    "fuzz_legacy": seeds_fuzz_legacy,
}


def write(target, seeds):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    seen = set()
    count = 0
    for name, data in seeds:
        digest = hashlib.sha1(data).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        with open(os.path.join(d, name + ".bin"), "wb") as fh:
            fh.write(data)
        count += 1
    print("%s: %d seeds" % (target, count))


def main(argv):
    names = argv[1:] or sorted(TARGETS)
    for t in names:
        if not os.path.exists(os.path.join(HERE, t + ".c")):
            print("%s: no fuzz_%s.c yet, skipped" % (t, t))
            continue
        write(t, TARGETS[t]())


if __name__ == "__main__":
    main(sys.argv)
