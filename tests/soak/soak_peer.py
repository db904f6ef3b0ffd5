#!/usr/bin/python3
"""The soak's peer (docs/soak.md): a MongoDB wire-protocol server on
127.0.0.1 that answers every request with a reply drawn from a seed, and logs
what it sent so that every outcome of the client can be scored.

    soak_peer.py --libopmsg PATH --log FILE --seed S [options]

prints its port on standard output and serves until --max-seconds pass,
--max-ops application requests have been answered, or SIGTERM.

It speaks what libmongoc needs: the handshake (hello/isMaster over OP_QUERY
and OP_MSG, with compression negotiated per connection), the streaming
monitor's awaitable hello (exhaustAllowed, answered with a stream of
moreToCome replies), the RTT monitor's hellos, ping, insert, find, aggregate,
getMore, killCursors and endSessions. Each request is one "exchange" of the
log, and its reply is one of:

  legal    a normal reply in one of the hostile harness's legal shapes
           (tests/dropin/hostile_server.py: sequences before and after the
           body, several, empty, checksums, an optional flag bit, a cursor
           batch as a sequence), possibly inside OP_COMPRESSED with snappy,
           zlib or zstd; or a server error ({ok: 0, code: 2}), which the
           client must report as that error;
  illegal  every illegal mode of the hostile harness;
  fault    the connection closed before the reply or in the middle of it, a
           stall past socketTimeoutMS;
  either   a correct reply sent to the wrong responseTo, or as a legacy
           OP_REPLY where an OP_MSG belongs. libmongoc checks neither
           everywhere (no version matches responseTo; no streaming monitor
           checks the opcode of its reply, and 1.23 checks it nowhere), so a
           right answer and a clean error are both accepted; a crash, or an
           answer that differs from the one sent, is not.

The first message of every connection (its handshake) is always answered
legally. Every decision is a function of the seed and of the operation's id
(which the client puts in each command as soakOp) or the heartbeat's number,
so a seed replays the same replies for the same operations.

Messages are read with libopmsg itself (opmsg_parse, then the merge, or the
decompression and merge for OP_COMPRESSED) through ctypes, decoded with
pymongo's bson, and written with the hostile harness's builders; OP_COMPRESSED
replies are made by opmsg_compress(). No wire encoding lives here.
"""
import argparse
import asyncio
import ctypes
import json
import os
import random
import signal
import struct
import sys
import time
import zlib

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dropin"))
import bson  # noqa: E402  (pymongo's)
import hostile_server as hs  # noqa: E402
from run_case import expected_ping_fields  # noqa: E402

CODECS = {"snappy": 1, "zlib": 2, "zstd": 3}
HANDSHAKE = {"hello", "ismaster", "isMaster"}
OP_FLAG_MORE_TO_COME = 1 << 1
OP_FLAG_EXHAUST_ALLOWED = 1 << 16

# The reply kinds. Legal shapes are the hostile harness's legal modes; the
# ones that compress already (zlib, zlib_seq) get no codec on top.
LEGAL_SHAPES = [m for m, legal in hs.MODES.items() if legal]
ILLEGAL = [m for m, legal in hs.MODES.items() if not legal]
EITHER = ["wrong_response_to", "op_reply"]
# Stalls are rarer: each holds a client thread for socketTimeoutMS.
FAULTS = {"close_before_reply": 4, "close_mid_message": 4, "stall": 1}
# The drawing weights of each class (--weights overrides them). hello_op_reply
# is drawn for hello replies only: an OP_REPLY answering the streaming
# monitor's awaitable hello (an OP_MSG) is a known way to crash 1.23.1 (and
# stock 1.30 and 2.5), so it comes more often than its share of "either"
# would give.
WEIGHTS = {"plain": 40, "rare": 25, "server_error": 3, "illegal": 18, "fault": 9, "either": 5,
           "hello_op_reply": 3}
SERVER_ERROR_CODE = 2  # BadValue: not retryable, not a state change
QUIET_SECONDS = 5  # after a settling ping: longer than the client's measurement


class Opmsg:
    """libopmsg and its libbson through ctypes: the peer's only reader of
    requests and its compressor."""

    MSG_SIZE = 1024  # opmsg_msg_t, opaque here (its real size is far less)
    ERROR_SIZE = 512  # bson_error_t: domain, code, message

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        lib.opmsg_parse.argtypes = [ctypes.c_char_p, sz, vp, vp, vp]
        lib.opmsg_parse.restype = ctypes.c_bool
        lib.opmsg_merge_bson.argtypes = [vp, vp]
        lib.opmsg_merge_bson.restype = vp
        lib.opmsg_merge_compressed.argtypes = [vp, vp, vp]
        lib.opmsg_merge_compressed.restype = vp
        lib.opmsg_compress.argtypes = [ctypes.c_char_p, sz, ctypes.c_int, ctypes.c_int,
                                       ctypes.POINTER(sz), vp]
        lib.opmsg_compress.restype = vp
        lib.opmsg_compressor_available.argtypes = [ctypes.c_int]
        lib.opmsg_compressor_available.restype = ctypes.c_bool
        lib.opmsg_error_name.argtypes = [ctypes.c_uint32]
        lib.opmsg_error_name.restype = ctypes.c_char_p
        # libbson, found through libopmsg's own dependencies.
        lib.bson_get_data.argtypes = [vp]
        lib.bson_get_data.restype = vp
        lib.bson_destroy.argtypes = [vp]
        lib.bson_free.argtypes = [vp]
        self.lib = lib
        # Each codec is optional in a build of libopmsg: draw only its own.
        self.codecs = sorted(c for c, cid in CODECS.items() if lib.opmsg_compressor_available(cid))

    def _error(self, err):
        code = struct.unpack_from("<I", err.raw, 4)[0]
        message = err.raw[8:].split(b"\x00", 1)[0].decode(errors="replace")
        return "%s: %s" % (self.lib.opmsg_error_name(code).decode(), message)

    def merged(self, data):
        """The merged document of one request (OP_MSG, OP_QUERY, or either of
        them inside OP_COMPRESSED) as raw BSON, or raises ValueError with
        libopmsg's error."""
        msg = ctypes.create_string_buffer(self.MSG_SIZE)
        err = ctypes.create_string_buffer(self.ERROR_SIZE)
        if not self.lib.opmsg_parse(data, len(data), None, msg, err):
            raise ValueError(self._error(err))
        if struct.unpack_from("<i", data, 12)[0] == hs.OP_COMPRESSED:
            doc = self.lib.opmsg_merge_compressed(msg, None, err)
        else:
            doc = self.lib.opmsg_merge_bson(msg, err)
        if not doc:
            raise ValueError(self._error(err))
        try:
            ptr = self.lib.bson_get_data(doc)
            size = struct.unpack("<i", ctypes.string_at(ptr, 4))[0]
            return ctypes.string_at(ptr, size)
        finally:
            self.lib.bson_destroy(doc)

    def compress(self, msg, codec):
        """msg wrapped in OP_COMPRESSED with codec (opmsg_compress())."""
        out_len = ctypes.c_size_t(0)
        err = ctypes.create_string_buffer(self.ERROR_SIZE)
        out = self.lib.opmsg_compress(msg, len(msg), CODECS[codec], -1, ctypes.byref(out_len), err)
        if not out:
            raise ValueError(self._error(err))
        try:
            return ctypes.string_at(out, out_len.value)
        finally:
            self.lib.bson_free(out)


def crcs(docs):
    """The CRC-32 of each document's bytes: what the client records for every
    document it is handed, so the two sides compare byte for byte."""
    return [zlib.crc32(hs.encode(d)) for d in docs]


def expected_fields(mode, echo):
    """The array fields a command or hello reply in this legal shape shows
    once merged: the body's soakEcho and the shape's sequences (the harness's
    own table, run_case.expected_ping_fields), as CRC lists."""
    def as_crcs(value):
        if isinstance(value, list):
            return crcs(value)
        return {k: as_crcs(v) for k, v in value.items()}
    want = {"soakEcho": crcs(echo)} if echo is not None else {}
    for key, value in expected_ping_fields(mode).items():
        want[key] = as_crcs(value)
    return want


class Peer:
    def __init__(self, args):
        self.args = args
        self.opmsg = Opmsg(args.libopmsg)
        self.weights = dict(WEIGHTS)
        for item in filter(None, args.weights.split(",")):
            name, value = item.split("=")
            if name not in self.weights:
                raise SystemExit("soak_peer: unknown weight %s (have %s)" % (name, ", ".join(self.weights)))
            self.weights[name] = float(value)
        # Line-buffered: after a crash the runner reads what was in flight.
        self.without = set(filter(None, args.without.split(",")))
        self.log = open(args.log, "w", buffering=1)
        self.start = time.monotonic()
        self.conns = 0
        self.beats = 0
        self.app_exchanges = 0
        self.exchanges_of = {}  # op id -> requests seen
        self.cursors = {}  # cursor id -> {"op", "docs" (left to send), "ns"}
        self.next_cursor = 1000
        self.process_id = hs.ObjectId(random.Random("%s/process" % args.seed).randbytes(12))
        self.quiet_until = {}  # appname -> time: its monitors get plain replies until then
        self.stopping = asyncio.Event()
        self.writers = set()

    # -- the log -----------------------------------------------------------

    def record(self, conn=None, **fields):
        if conn is not None:
            # The client process's appname (its prefix), from the handshake.
            fields["conn"], fields["app"] = conn["id"], conn.get("app")
        fields["t"] = round(time.monotonic() - self.start, 4)
        self.log.write(json.dumps(fields, separators=(",", ":")) + "\n")

    def rng(self, key):
        return random.Random("%s/%s" % (self.args.seed, key))

    def lie(self, rng, values):
        """--lie: now and then log a CRC the peer did not send (the scorer's
        own test: it must then find the operation wrong)."""
        if self.args.lie and values and rng.random() < self.args.lie:
            values = list(values)
            values[0] ^= 1
        return values

    # -- choosing a reply --------------------------------------------------

    def draw(self, rng, hello=False):
        """(class, kind): a weighted draw, redrawn while --without names the
        kind. Hello replies are never compressed (the spec forbids it) and
        never stalled (the monitors wait connectTimeoutMS, or
        heartbeatFrequencyMS more, not socketTimeoutMS)."""
        role = "beat" if hello else "app"
        while True:
            cls, kind = self._draw(rng, hello)
            if kind not in self.without and "%s:%s" % (role, kind) not in self.without:
                return cls, kind

    def _draw(self, rng, hello):
        classes = [c for c in self.weights if self.weights[c] > 0 and (hello or c != "hello_op_reply")]
        cls = rng.choices(classes, [self.weights[c] for c in classes])[0]
        if cls == "hello_op_reply":
            return "either", "op_reply"
        if cls == "plain":
            return "legal", "plain"
        if cls == "rare":
            shape = rng.choice([s for s in LEGAL_SHAPES if not (hello and s.startswith("zlib"))])
            if not hello and not shape.startswith("zlib") and self.opmsg.codecs and rng.random() < 0.4:
                shape += "+" + rng.choice(self.opmsg.codecs)
            return "legal", shape
        if cls == "server_error":
            return "legal", "server_error"
        if cls == "illegal":
            return "illegal", rng.choice(ILLEGAL)
        if cls == "either":
            return "either", rng.choice(EITHER)
        faults = [f for f in FAULTS if not (hello and f == "stall")]
        return "fault", rng.choices(faults, [FAULTS[f] for f in faults])[0]

    def build(self, kind, command, body, rid, flags=0):
        """The bytes of a reply of this kind (for a fault: the plain reply it
        cuts short)."""
        if kind in FAULTS or kind == "server_error":
            kind = "plain"
        if kind == "wrong_response_to":
            return hs.craft("plain", command, 0, rid + 7919, b=body, flags=flags)
        shape, _, codec = kind.partition("+")
        msg = hs.craft(shape, command, 0, rid, b=body, flags=flags)
        return self.opmsg.compress(msg, codec) if codec else msg

    # -- the commands ------------------------------------------------------

    def hello_doc(self, conn, request, op_msg, beat):
        doc = hs.hello_doc(op_msg)
        doc.pop("ok")
        doc.update({
            "topologyVersion": {"processId": self.process_id, "counter": hs.Int64(0)},
            "maxWireVersion": 17, "logicalSessionTimeoutMinutes": 30,
            "connectionId": conn["id"], "soakBeat": hs.Int64(beat), "ok": 1.0,
        })
        offered = request.get("compression")
        if isinstance(offered, list) and "compression" not in conn:
            # Per connection: one of the client's compressors (that libopmsg
            # can read), or none.
            offered = [c for c in offered if c in self.opmsg.codecs]
            choice = conn["rng"].choice(offered + [None]) if offered else None
            conn["compression"] = [choice] if choice else []
        if conn.get("compression"):
            doc["compression"] = conn["compression"]
        return doc

    def cursor_docs(self, op):
        rng = self.rng("%s/docs" % op)
        words = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
        return [{"_id": i, "op": op, "w": rng.choice(words) * rng.randint(1, 6),
                 "n": hs.Int64(rng.getrandbits(40)), "sub": {"i": i, "f": rng.random()}}
                for i in range(rng.randint(0, 24))]

    def answer(self, command, request, op, rng, cls, kind):
        """(body, what the log expects of it) for one application command of
        operation op (an exchange key when the request names none)."""
        if kind == "server_error":
            return ({"ok": 0.0, "errmsg": "soak: server error for %s" % op, "code": SERVER_ERROR_CODE,
                     "codeName": "BadValue"}, {"expect": "error", "code": SERVER_ERROR_CODE})
        if command == "insert":
            n = len(request.get("documents", []))
            return {"n": n, "ok": 1.0}, {"n": n}
        if command in ("find", "aggregate", "getMore"):
            if command == "getMore":
                state = self.cursors.get(request.get("getMore"))
                if state is None:
                    return ({"ok": 0.0, "errmsg": "cursor not found", "code": 43, "codeName": "CursorNotFound"},
                            {"expect": "error", "code": 43})
                batch_size = request.get("batchSize") or 101
                field = "nextBatch"
            else:
                state = {"op": op, "docs": self.cursor_docs(op), "ns": "soak." + str(request.get(command))}
                batch_size = (request.get("batchSize") if command == "find"
                              else request.get("cursor", {}).get("batchSize")) or 101
                field = "firstBatch"
            batch = state["docs"][:batch_size]
            left = state["docs"][batch_size:]
            cursor_id = request.get("getMore") if command == "getMore" else 0
            if left and not cursor_id:
                cursor_id, self.next_cursor = self.next_cursor, self.next_cursor + 1
            if cls in ("legal", "either"):
                # Only a reply the client can read moves the cursor on.
                if left:
                    self.cursors[cursor_id] = dict(state, docs=left)
                else:
                    self.cursors.pop(cursor_id, None)
            body = {"cursor": {field: batch, "id": hs.Int64(cursor_id if left else 0), "ns": state["ns"]},
                    "ok": 1.0}
            return body, {"docs": self.lie(rng, crcs(batch)), "more": bool(left)}
        if command == "killCursors":
            ids = request.get("cursors", [])
            for i in ids:
                self.cursors.pop(i, None)
            return {"cursorsKilled": [hs.Int64(i) for i in ids], "cursorsNotFound": [], "cursorsAlive": [],
                    "cursorsUnknown": [], "ok": 1.0}, {}
        if command == "endSessions":
            return {"ok": 1.0}, {}
        if command == "ping":
            echo = [{"e": i, "op": op} for i in range(rng.randint(0, 3))]
            shape = kind.partition("+")[0]
            return {"soakEcho": echo, "ok": 1.0}, {"fields": expected_fields(shape, echo)}
        return ({"ok": 0.0, "errmsg": "no such command: %s" % command, "code": 59, "codeName": "CommandNotFound"},
                {"expect": "error", "code": 59})

    def op_of(self, command, request):
        """The operation a request belongs to: its soakOp, or for getMore and
        killCursors the operation that opened the cursor."""
        if "soakOp" in request:
            return request["soakOp"]
        ids = [request.get("getMore")] if command == "getMore" else request.get("cursors", [])
        for i in ids:
            if i in self.cursors:
                return self.cursors[i]["op"]
        return None

    # -- a connection ------------------------------------------------------

    async def send(self, writer, data):
        writer.write(data)
        await writer.drain()

    async def fault(self, writer, kind, reply):
        if kind == "close_mid_message":
            cut = 1 + (len(reply) - 2) * 2 // 3 if len(reply) > 2 else 1
            await self.send(writer, reply[:cut])
        elif kind == "stall":
            await asyncio.sleep(self.args.socket_timeout_ms / 1000 + 0.3)
        writer.close()

    async def reply_with(self, writer, cls, kind, reply):
        """Sends reply as its class says; False when the connection is gone."""
        if cls == "fault":
            await self.fault(writer, kind, reply)
            return False
        await self.send(writer, reply)
        return True

    def beat_reply(self, conn, request, rid, op_msg, streaming):
        """One hello reply of the monitor (or of an RTT check): its bytes, class
        and kind, logged with its beat number."""
        self.beats += 1
        beat = self.beats
        rng = self.rng("beat/%d" % beat)
        first = conn["messages"] == 1
        quiet = time.monotonic() < self.quiet_until.get(conn.get("app"), 0)
        cls, kind = ("legal", "plain") if first or quiet else self.draw(rng, hello=True)
        if kind == "server_error" or (not op_msg and cls != "fault"):
            cls, kind = "legal", "plain"  # OP_QUERY is answered with a plain OP_REPLY
        doc = self.hello_doc(conn, request, op_msg, beat)
        if not op_msg:
            reply = hs.craft("op_reply", "hello", 0, rid, b=doc)
        else:
            more = streaming and cls == "legal" and rng.random() < 0.9
            reply = self.build(kind, "hello", doc, rid, flags=OP_FLAG_MORE_TO_COME if more else 0)
            conn["streaming"] = more
        shape = kind.partition("+")[0]
        fields = expected_fields(shape, None) if cls in ("legal", "either") else None
        self.record(conn=conn, rid=rid, role="handshake" if first else "beat", beat=beat,
                    cmd="hello", cls=cls, kind=kind, streamed=streaming,
                    **({"fields": fields} if fields is not None else {}))
        return cls, kind, reply

    async def serve(self, reader, writer):
        self.conns += 1
        conn = {"id": self.conns, "rng": self.rng("conn/%d" % self.conns), "messages": 0, "streaming": False}
        self.writers.add(writer)
        last_rid = 0
        try:
            while not self.stopping.is_set():
                if conn["streaming"]:
                    # Streaming: the next hello reply comes unasked unless the
                    # client speaks (or hangs up) first.
                    delay = conn["rng"].uniform(0.02, min(0.15, conn["await_ms"] / 1000))
                    try:
                        head = await asyncio.wait_for(reader.readexactly(16), delay)
                    except asyncio.TimeoutError:
                        cls, kind, reply = self.beat_reply(conn, conn["request"], last_rid, True, True)
                        last_rid = 0x0D0D
                        if not await self.reply_with(writer, cls, kind, reply):
                            return
                        continue
                else:
                    head = await reader.readexactly(16)
                conn["streaming"] = False
                length, rid, _, opcode = struct.unpack("<iiii", head)
                if length < 16 or length > 48000000:
                    self.record(conn=conn, rid=rid, role="bad-request", error="length %d" % length)
                    return
                data = head + await reader.readexactly(length - 16)
                conn["messages"] += 1
                try:
                    request = bson.decode(self.opmsg.merged(data))
                except ValueError as e:
                    self.record(conn=conn, rid=rid, role="bad-request", error=str(e))
                    return
                command = next(iter(request), "")
                if conn["messages"] == 1:
                    conn["app"] = request.get("client", {}).get("application", {}).get("name")
                flags = hs._parse_msg_request(data)[0] if opcode == hs.OP_MSG else 0
                if command in HANDSHAKE:
                    streaming = bool(flags & OP_FLAG_EXHAUST_ALLOWED) and "topologyVersion" in request
                    if streaming:
                        conn["request"], conn["await_ms"] = request, request.get("maxAwaitTimeMS", 500)
                    op_msg = opcode != hs.OP_QUERY
                    cls, kind, reply = self.beat_reply(conn, request, rid, op_msg, streaming)
                    last_rid = 0x0D0D
                    if not await self.reply_with(writer, cls, kind, reply):
                        return
                    continue
                if not await self.application(conn, writer, command, request, rid, flags):
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        except Exception as e:  # noqa: BLE001 (the peer's own bug: the run must fail)
            self.record(conn=conn, role="peer-error", error=repr(e))
            raise
        finally:
            self.writers.discard(writer)
            writer.close()

    async def application(self, conn, writer, command, request, rid, flags):
        op = self.op_of(command, request)
        key = op if op is not None else "conn/%d/%d" % (conn["id"], conn["messages"])
        k = self.exchanges_of.get(key, 0)
        self.exchanges_of[key] = k + 1
        rng = self.rng("%s/%d" % (key, k))
        if request.get("soakSettle"):
            # The client is about to measure itself: a plain reply, and plain
            # hello replies for a while, so every connection is open then.
            cls, kind = "legal", "plain"
            self.quiet_until[conn.get("app")] = time.monotonic() + QUIET_SECONDS
        else:
            cls, kind = self.draw(rng)
        if kind == "server_error" and command not in ("ping", "insert", "find", "aggregate", "getMore"):
            cls, kind = "legal", "plain"
        body, expect = self.answer(command, request, key, rng, cls, kind)
        role = "app" if command in ("ping", "insert", "find", "aggregate", "getMore") else "background"
        self.record(conn=conn, rid=rid, role=role, op=op, k=k, cmd=command, cls=cls, kind=kind, **expect)
        if role == "app":
            self.app_exchanges += 1
            if self.app_exchanges >= self.args.max_ops:
                self.record(role="stop", why="max-ops")
                self.stopping.set()
        if flags & OP_FLAG_MORE_TO_COME:
            return True  # the client expects no reply
        return await self.reply_with(writer, cls, kind, self.build(kind, command, body, rid))

    async def run(self):
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        server = await asyncio.start_server(self.serve, "127.0.0.1", self.args.port)
        print(server.sockets[0].getsockname()[1], flush=True)
        try:
            await asyncio.wait_for(self.stopping.wait(), self.args.max_seconds)
        except asyncio.TimeoutError:
            self.record(role="stop", why="max-seconds")
        server.close()
        for w in list(self.writers):
            w.close()
        self.log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--libopmsg", required=True, help="libopmsg.so of the build")
    ap.add_argument("--log", required=True, help="JSON lines: one per request")
    ap.add_argument("--seed", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=600)
    ap.add_argument("--max-ops", type=int, default=1000000, help="application requests")
    ap.add_argument("--socket-timeout-ms", type=int, default=1500, help="the client's socketTimeoutMS")
    ap.add_argument("--weights", default="", help="class=weight,... (%s)" %
                    ",".join("%s=%g" % kv for kv in WEIGHTS.items()))
    ap.add_argument("--without", default="",
                    help="KIND or ROLE:KIND (ROLE app or beat),...: kinds never drawn, e.g. app:op_reply")
    ap.add_argument("--lie", type=float, default=0.0,
                    help="share of cursor batches logged with a CRC that was not sent (tests the scorer)")
    args = ap.parse_args()
    asyncio.run(Peer(args).run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
