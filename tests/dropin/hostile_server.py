#!/usr/bin/python3
"""A tiny MongoDB wire-protocol server that answers the handshake normally
and every other command with a reply crafted for one test mode: rare but
legal OP_MSG shapes, and hostile ones.

Used by run_case.py (the CTest cases) and by scripts/demo-dropin.sh. Run on
its own it prints its port on stdout and serves until killed:

    hostile_server.py MODE

Standard library only: the BSON needed here is written by hand, so the test
does not depend on a Python BSON package.
"""
import socket
import struct
import sys
import threading
import time
import zlib

OP_REPLY, OP_QUERY, OP_COMPRESSED, OP_MSG = 1, 2004, 2012, 2013

# ---------------------------------------------------------------------------
# Minimal BSON (the types these replies use)
# ---------------------------------------------------------------------------


class Int64(int):
    """An int that encodes as BSON int64."""


class ObjectId(bytes):
    """12 bytes that encode as a BSON ObjectId."""


def _cstring(s):
    return s.encode() + b"\x00"


def _element(key, value):
    k = _cstring(key)
    if isinstance(value, bool):
        return b"\x08" + k + (b"\x01" if value else b"\x00")
    if isinstance(value, ObjectId):
        return b"\x07" + k + bytes(value)
    if isinstance(value, Int64):
        return b"\x12" + k + struct.pack("<q", value)
    if isinstance(value, int):
        return b"\x10" + k + struct.pack("<i", value)
    if isinstance(value, float):
        return b"\x01" + k + struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode()
        return b"\x02" + k + struct.pack("<i", len(raw) + 1) + raw + b"\x00"
    if isinstance(value, dict):
        return b"\x03" + k + encode(value)
    if isinstance(value, list):
        return b"\x04" + k + encode({str(i): v for i, v in enumerate(value)})
    raise TypeError(type(value))


def encode(doc):
    body = b"".join(_element(k, v) for k, v in doc.items())
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def first_key(doc):
    """The first key of an encoded document (the command name)."""
    if len(doc) < 6 or doc[4] == 0:
        return ""
    end = doc.index(b"\x00", 5)
    return doc[5:end].decode(errors="replace")


def count_documents(raw):
    n, off = 0, 0
    while off + 4 <= len(raw):
        off += struct.unpack_from("<i", raw, off)[0]
        n += 1
    return n


# ---------------------------------------------------------------------------
# CRC-32C (Castagnoli), for the checksum modes
# ---------------------------------------------------------------------------

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283

# ---------------------------------------------------------------------------
# Message builders
# ---------------------------------------------------------------------------


def header(length, request_id, response_to, opcode):
    return struct.pack("<iiii", length, request_id, response_to, opcode)


def body(doc):
    return b"\x00" + encode(doc)


def seq(identifier, docs, raw_docs=None):
    payload = raw_docs if raw_docs is not None else b"".join(encode(d) for d in docs)
    ident = _cstring(identifier)
    return b"\x01" + struct.pack("<i", 4 + len(ident) + len(payload)) + ident + payload


def op_msg(sections, response_to, flags=0, checksum=False, bad_checksum=False):
    payload = struct.pack("<I", flags) + b"".join(sections)
    length = 16 + len(payload) + (4 if checksum else 0)
    msg = header(length, 0x0D0D, response_to, OP_MSG) + payload
    if checksum:
        crc = crc32c(msg) ^ (1 if bad_checksum else 0)
        msg += struct.pack("<I", crc)
    return msg


def op_reply(doc, response_to):
    payload = struct.pack("<iqii", 8, 0, 0, 1) + encode(doc)
    return header(16 + len(payload), 0x0E0E, response_to, OP_REPLY) + payload


def op_compressed(inner, compressor, usize_delta=0, usize=None):
    original = struct.unpack_from("<i", inner, 12)[0]
    raw = inner[16:]
    data = zlib.compress(raw) if compressor == 2 else raw
    size = usize if usize is not None else len(raw) + usize_delta
    payload = struct.pack("<iiB", original, size, compressor) + data
    return header(16 + len(payload), 0x0C0C, struct.unpack_from("<i", inner, 8)[0],
                  OP_COMPRESSED) + payload


def request_message(opcode, response_to):
    """A well-formed message of a request opcode (what a client sends, never
    what a server answers with): OP_UPDATE, OP_INSERT, OP_QUERY, OP_GET_MORE,
    OP_DELETE or OP_KILL_CURSORS."""
    ns = _cstring("test.c")
    doc = encode({"x": 1})
    zero = struct.pack("<i", 0)
    payload = {
        2001: zero + ns + zero + doc + encode({"$set": {"x": 2}}),   # OP_UPDATE
        2002: zero + ns + doc + doc,                                  # OP_INSERT
        OP_QUERY: zero + ns + zero + struct.pack("<i", 1) + doc,      # OP_QUERY
        2005: zero + ns + zero + struct.pack("<q", 12345),            # OP_GET_MORE
        2006: zero + ns + zero + doc,                                 # OP_DELETE
        2007: zero + struct.pack("<iq", 1, 12345),                    # OP_KILL_CURSORS
    }[opcode]
    return header(16 + len(payload), 0x0F0F, response_to, opcode) + payload


REQUEST_OPCODES = {"op_update": 2001, "op_insert": 2002, "op_query": OP_QUERY,
                   "op_get_more": 2005, "op_delete": 2006, "op_kill_cursors": 2007}

# ---------------------------------------------------------------------------
# Replies
# ---------------------------------------------------------------------------

FIND_DOCS = [{"_id": 1, "a": "x"}, {"_id": 2, "a": "y"}]
EXTRA = [{"x": 1}, {"x": 2}]


def hello_doc(op_msg_hello, streaming=False):
    """The handshake's reply. streaming: with a topologyVersion, which makes
    a pooled client's server monitor switch to awaitable hellos."""
    doc = {"helloOk": True, "isWritablePrimary" if op_msg_hello else "ismaster": True,
           "maxBsonObjectSize": 16777216, "maxMessageSizeBytes": 48000000,
           "maxWriteBatchSize": 100000, "minWireVersion": 0, "maxWireVersion": 13}
    if streaming:
        doc["topologyVersion"] = {"processId": ObjectId(b"opmsg-stream"), "counter": Int64(0)}
    doc["ok"] = 1.0
    return doc


def base_body(command, n_docs):
    """The normal reply to command."""
    if command == "find":
        return {"cursor": {"firstBatch": FIND_DOCS, "id": Int64(0), "ns": "test.c"},
                "ok": 1.0}
    if command == "insert":
        return {"n": n_docs, "ok": 1.0}
    return {"ok": 1.0}


def _with_ok_last(doc, **fields):
    """doc with fields added before "ok" (keeps replies looking natural)."""
    out = {k: v for k, v in doc.items() if k != "ok"}
    out.update(fields)
    out["ok"] = 1.0
    return out


def _overrunning_doc():
    raw = bytearray(encode({"x": 1}))
    struct.pack_into("<i", raw, 0, len(raw) + 4)   # claims 4 bytes more
    return bytes(raw)


def _body_past_end(doc):
    raw = bytearray(encode(doc))
    struct.pack_into("<i", raw, 0, len(raw) + 50)
    return b"\x00" + bytes(raw)


def _body_no_terminator(doc):
    raw = bytearray(encode(doc))
    raw[-1] = 0x01
    return b"\x00" + bytes(raw)


def _bad_element_doc():
    """{"x": 1, "y": 2} with y's type byte replaced by 0x42, which no BSON
    type has: the frame (length, terminating 0) is sound, the second
    top-level element is not."""
    raw = bytearray(encode({"x": 1, "y": 2}))
    raw[raw.index(b"y\x00") - 1] = 0x42
    return bytes(raw)


def _bad_utf8_doc():
    """{"x": {"s": "ab\xff"}}: invalid UTF-8 one level down."""
    raw = bytearray(encode({"x": {"s": "abc"}}))
    raw[raw.index(b"abc") + 2] = 0xFF
    return bytes(raw)


def _batch_to_sequence(b, keep_empty):
    """A cursor reply with its batch (cursor.firstBatch or cursor.nextBatch)
    moved into a document sequence at that dotted path: (body, path, docs).
    keep_empty leaves an empty batch in the body, which then clashes with the
    sequence. A body without a batch gets a cursor document ({id, ns}, as a
    find's reply has) and FIND_DOCS at cursor.firstBatch (with an empty
    cursor.firstBatch in that document when keep_empty): the sequence's
    parent is always there, since a receiver may refuse a dotted identifier
    whose parent the body lacks (the fork and libopmsg do)."""
    cursor = b.get("cursor")
    for name in ("firstBatch", "nextBatch"):
        if isinstance(cursor, dict) and name in cursor:
            inner = {k: ([] if k == name else v) for k, v in cursor.items() if keep_empty or k != name}
            return {k: (inner if k == "cursor" else v) for k, v in b.items()}, "cursor." + name, cursor[name]
    if keep_empty:
        b = _with_ok_last(b, cursor={"firstBatch": [], "id": Int64(0), "ns": "test.c"})
    else:
        b = _with_ok_last(b, cursor={"id": Int64(0), "ns": "test.c"})
    return b, "cursor.firstBatch", FIND_DOCS


def craft(mode, command, n_docs, rid, b=None, flags=0):
    """The reply for one command in one mode (rid: the request's id). b is the
    normal reply's body (base_body() when None) and flags are OR-ed into every
    OP_MSG's flag bits (the soak's streamed hello replies set moreToCome)."""
    if b is None:
        b = base_body(command, n_docs)

    def msg(sections, **kw):
        kw["flags"] = kw.get("flags", 0) | flags
        return op_msg(sections, rid, **kw)

    def batch_seq(keep_empty):
        body_, path, docs = _batch_to_sequence(b, keep_empty)
        return msg([body(body_), seq(path, docs)])

    plain = msg([body(b)])
    modes = {
        "plain": lambda: plain,
        "seq_after": lambda: msg([body(b), seq("extra", EXTRA)]),
        "seq_before": lambda: msg([seq("extra", EXTRA), body(b)]),
        "three_seqs": lambda: msg([body(b)] + [seq(n, EXTRA) for n in ("sa", "sb", "sc")]),
        "eight_seqs": lambda: msg([body(b)] + [seq("s%d" % i, [{"i": i}]) for i in range(8)]),
        "empty_seq": lambda: msg([body(b), seq("extra", [])]),
        "checksum_ok": lambda: msg([body(b)], flags=1, checksum=True),
        "checksum_ok_seq": lambda: msg([body(b), seq("extra", EXTRA)], flags=1, checksum=True),
        "checksum_bad": lambda: msg([body(b)], flags=1, checksum=True, bad_checksum=True),
        "checksum_no_bytes": lambda: msg([body(b)], flags=1),
        "required_flag": lambda: msg([body(b)], flags=1 << 5),
        "optional_flag": lambda: msg([body(b)], flags=1 << 20),
        "unknown_kind": lambda: msg([body(b), b"\x02" + encode({"t": 1})]),
        "two_bodies": lambda: msg([body(b), body({"z": 1})]),
        "no_body": lambda: msg([seq("extra", EXTRA)]),
        "dup_identifier": lambda: msg([body(b), seq("extra", EXTRA), seq("extra", EXTRA)]),
        "id_clash": lambda: msg([body(b), seq("ok", EXTRA)]),
        "body_past_end": lambda: msg([_body_past_end(b)]),
        "body_no_terminator": lambda: msg([_body_no_terminator(b)]),
        "seq_doc_overrun": lambda: msg([seq("extra", None, _overrunning_doc()), body(b)]),
        "trailing_bytes": lambda: plain + b"\x00\x00\x00",
        "zlib": lambda: op_compressed(plain, 2),
        "zlib_seq": lambda: op_compressed(msg([body(b), seq("extra", EXTRA)]), 2),
        "size_lie_small": lambda: op_compressed(plain, 2, usize_delta=3),
        "size_lie_huge": lambda: op_compressed(plain, 2, usize=0x7FFFFF00),
        "noop_wrong_size": lambda: op_compressed(plain, 0, usize_delta=-12),
        "find_seq": lambda: batch_seq(False),
        "find_seq_clash": lambda: batch_seq(True),
    }
    # The check-level probes (PROBES): a sequence document of "extra" whose
    # frame is sound but whose top-level element is not (also inside
    # OP_COMPRESSED), or whose nested string is not UTF-8.
    modes["seq_bad_element"] = lambda: op_msg(
        [body(b), seq("extra", None, encode({"x": 0}) + _bad_element_doc())], rid)
    modes["seq_bad_utf8"] = lambda: op_msg(
        [body(b), seq("extra", None, _bad_utf8_doc())], rid)
    modes["zlib_seq_bad_element"] = lambda: op_compressed(modes["seq_bad_element"](), 2)
    # OP_REPLY_MODES: the normal reply document in an OP_REPLY.
    modes["op_reply"] = lambda: op_reply(b, rid)
    # A request opcode where the reply belongs, plain and inside OP_COMPRESSED
    # (noop): stock libmongoc 1.24+ aborts on them, 1.23 reads garbage.
    for name, opcode in REQUEST_OPCODES.items():
        modes["reply_" + name] = (lambda o: lambda: request_message(o, rid))(opcode)
    for name in ("op_query", "op_insert"):
        modes["compressed_" + name] = (
            lambda o: lambda: op_compressed(request_message(o, rid), 0))(REQUEST_OPCODES[name])
    msg = modes[mode]()
    # Keep the header's messageLength the real length for every mode (the
    # crafted part is inside); trailing_bytes counts its extra bytes too.
    return struct.pack("<i", len(msg)) + msg[4:]


# Every mode and whether its reply is legal (the drop-in must accept legal
# ones and give the right result, and reject the others cleanly).
MODES = {
    "plain": True, "seq_after": True, "seq_before": True, "three_seqs": True,
    "eight_seqs": True, "empty_seq": True, "checksum_ok": True,
    "checksum_ok_seq": True, "checksum_bad": False, "checksum_no_bytes": False,
    "required_flag": False, "optional_flag": True, "unknown_kind": False,
    "two_bodies": False, "no_body": False, "dup_identifier": False,
    "id_clash": False, "body_past_end": False, "body_no_terminator": False,
    "seq_doc_overrun": False, "trailing_bytes": False, "zlib": True,
    "zlib_seq": True, "size_lie_small": False, "size_lie_huge": False,
    "noop_wrong_size": False, "find_seq": True, "find_seq_clash": False,
}
MODES.update({"reply_" + name: False for name in REQUEST_OPCODES})
MODES.update({"compressed_op_query": False, "compressed_op_insert": False})

# Replies whose verdict depends on the drop-in's check level
# (OPMSG_MONGOC_CHECK; check_level.py): not in MODES, so the stock vs
# drop-in table keeps its cases.
PROBES = ("seq_bad_element", "seq_bad_utf8", "zlib_seq_bad_element")

# Replies to a pooled client's streaming server monitor (run_case.py's
# "stream" operation): the handshake says topologyVersion, so the monitor
# sends awaitable hellos (OP_MSG, exhaustAllowed, maxAwaitTimeMS), and the
# mode decides how those are answered; every other command gets the plain
# reply. Legal or not, as MODES:
#   awaitable_op_msg         an OP_MSG hello, after a pause (as a server that
#                            waited for a topology change that did not come)
#   awaitable_op_reply       an OP_REPLY: a server answers OP_MSG with OP_MSG
#                            (OP_REPLY answers only OP_QUERY and OP_GET_MORE)
#   awaitable_more_op_reply  an OP_MSG hello with moreToCome, then, streamed
#                            on the same connection, an OP_REPLY
MONITOR_MODES = {"awaitable_op_msg": True, "awaitable_op_reply": False,
                 "awaitable_more_op_reply": False}

# An answer the protocol forbids that a libmongoc may still read correctly:
# every command (OP_MSG) answered with an OP_REPLY holding its normal reply
# document. Right is a clean error or the right answer (run_case.py), so
# outside MODES too. 1.23 reads it as OP_MSG (mongoc_cluster_run_opmsg);
# 1.30 and 2.5 read an OP_REPLY's document through get_body.
OP_REPLY_MODES = ("op_reply",)
AWAIT_PAUSE = 0.3  # seconds: keeps the monitor from spinning on instant answers
MORE_TO_COME = 1 << 1

ALL_MODES = list(MODES) + list(PROBES) + list(MONITOR_MODES) + list(OP_REPLY_MODES)

HANDSHAKE = {"hello", "ismaster", "isMaster"}

# ---------------------------------------------------------------------------
# Server
# ---------------------------------------------------------------------------


def _recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _parse_msg_request(msg):
    """(flags, body, {identifier: raw documents}) of an OP_MSG request."""
    flags = struct.unpack_from("<I", msg, 16)[0]
    end = len(msg) - (4 if flags & 1 else 0)
    off, doc, seqs = 20, b"", {}
    while off < end:
        kind = msg[off]
        off += 1
        size = struct.unpack_from("<i", msg, off)[0]
        if kind == 0:
            doc = msg[off:off + size]
        else:
            nul = msg.index(b"\x00", off + 4)
            seqs[msg[off + 4:nul].decode()] = msg[nul + 1:off + size]
        off += size
    return flags, doc, seqs


def _awaitable(doc):
    """An awaitable hello carries maxAwaitTimeMS (the command's keys are
    looked for as BSON element names: type byte before, NUL after)."""
    return b"maxAwaitTimeMS\x00" in doc


def _answer_awaitable(conn, mode, rid):
    """Sends MONITOR_MODES[mode]'s answer to an awaitable hello."""
    hello = hello_doc(True, streaming=True)
    if mode == "awaitable_op_msg":
        time.sleep(AWAIT_PAUSE)
        conn.sendall(op_msg([body(hello)], rid))
    elif mode == "awaitable_op_reply":
        conn.sendall(op_reply(hello, rid))
    else:
        # op_msg() gives every reply the requestID 0x0D0D: the streamed
        # follow-up answers that message, as a server's does.
        conn.sendall(op_msg([body(hello)], rid, flags=MORE_TO_COME))
        time.sleep(AWAIT_PAUSE)
        conn.sendall(op_reply(hello, 0x0D0D))


def _handle(conn, mode):
    try:
        _serve(conn, mode)
    except ConnectionError:
        pass  # the client went away (or crashed) mid-exchange: its verdict is elsewhere


def _serve(conn, mode):
    streaming = mode in MONITOR_MODES
    with conn:
        while True:
            head = _recv_exact(conn, 16)
            if head is None:
                return
            length, rid, _, opcode = struct.unpack("<iiii", head)
            rest = _recv_exact(conn, length - 16)
            if rest is None:
                return
            msg = head + rest
            if opcode == OP_QUERY:
                nul = msg.index(b"\x00", 20)
                query = msg[nul + 9:]
                if first_key(query) in HANDSHAKE:
                    reply = op_reply(hello_doc(False, streaming), rid)
                else:
                    reply = op_reply({"ok": 0.0, "errmsg": "OP_QUERY not supported"}, rid)
            elif opcode == OP_MSG:
                flags, doc, seqs = _parse_msg_request(msg)
                command = first_key(doc)
                if streaming and command in HANDSHAKE and _awaitable(doc):
                    _answer_awaitable(conn, mode, rid)
                    continue
                if command in HANDSHAKE:
                    reply = op_msg([body(hello_doc(True, streaming))], rid)
                elif streaming:
                    reply = craft("plain", command, 0, rid)
                else:
                    n_docs = sum(count_documents(v) for v in seqs.values())
                    reply = craft(mode, command, n_docs, rid)
                if flags & 2:   # moreToCome: the client expects no reply
                    continue
            else:
                return
            conn.sendall(reply)


class Server:
    """A listening socket on 127.0.0.1 with one thread per connection."""

    def __init__(self, mode):
        if mode not in ALL_MODES:
            raise ValueError("unknown mode %r" % mode)
        self.mode = mode
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=_handle, args=(conn, self.mode), daemon=True).start()

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def main(argv):
    if len(argv) != 2 or argv[1] not in ALL_MODES:
        sys.stderr.write("usage: hostile_server.py MODE\nmodes: %s\n" % " ".join(ALL_MODES))
        return 64
    server = Server(argv[1]).start()
    print(server.port, flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
