"""`opmsg tap` against a scripted local server: no peer needed.

Usage: tap_rules.py --tap OPMSG

Checks that the tap
 - forwards every byte unchanged in both directions, including messages that
   break rules and bytes it cannot frame;
 - logs each message with the rule it breaks (checksum-mismatch,
   identifier-clash, missing-db, duplicate-key), flags by name, the command
   and $db, reply latencies, OP_COMPRESSED (zlib) decompressed, long arrays
   elided with --max-array, a desync event for an impossible length;
 - serves 20 concurrent connections;
 - exits 0 on SIGTERM with a close line for a connection still open;
 - reports an upstream that refuses connections, and a bad --pcap file.
Exit status 0 pass, 1 fail.
"""
import argparse
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

FAILURES = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        FAILURES.append(what)
    return cond


# --- A little BSON and wire encoding (enough for these tests) -------------

def bson_doc(items):
    out = b""
    for key, val in items:
        k = key.encode() + b"\0"
        if isinstance(val, bool):
            out += b"\x08" + k + (b"\x01" if val else b"\x00")
        elif isinstance(val, int):
            out += b"\x10" + k + struct.pack("<i", val)
        elif isinstance(val, float):
            out += b"\x01" + k + struct.pack("<d", val)
        elif isinstance(val, str):
            s = val.encode() + b"\0"
            out += b"\x02" + k + struct.pack("<i", len(s)) + s
        elif isinstance(val, list):
            out += b"\x04" + k + bson_doc([(str(i), v) for i, v in enumerate(val)])
        else:  # a list of pairs: a sub-document
            out += b"\x03" + k + bson_doc(val)
    return struct.pack("<i", len(out) + 5) + out + b"\0"


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def op_msg(request_id, body, sequences=(), flags=0, response_to=0,
           bad_checksum=False):
    payload = struct.pack("<I", flags) + b"\0" + body
    for ident, docs in sequences:
        sec = ident.encode() + b"\0" + b"".join(docs)
        payload += b"\x01" + struct.pack("<i", len(sec) + 4) + sec
    length = 16 + len(payload) + (4 if flags & 1 else 0)
    msg = struct.pack("<iiii", length, request_id, response_to, 2013) + payload
    if flags & 1:
        crc = crc32c(msg)
        msg += struct.pack("<I", crc ^ (0xFF if bad_checksum else 0))
    return msg


def op_compressed_zlib(msg):
    length, rid, rto, opcode = struct.unpack("<iiii", msg[:16])
    z = zlib.compress(msg[16:])
    return struct.pack("<iiiiiiB", 25 + len(z), rid, rto, 2012, opcode,
                       len(msg) - 16, 2) + z


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def recv_message(sock):
    head = recv_exact(sock, 16)
    length = struct.unpack("<i", head[:4])[0]
    return head + recv_exact(sock, length - 16)


# --- The scripted server ----------------------------------------------------

class Server:
    """Answers each OP_MSG with {ok: 1.0} (or, for the command "dupreply",
    a body with "ok" twice); records every byte received and sent."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.received = {}  # client port seen by the server -> bytes
        self.sent = {}
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        key = conn.getpeername()[1]
        buf = b""
        rid = 1
        with self.lock:
            self.received[key] = b""
            self.sent[key] = b""
        while True:
            try:
                chunk = conn.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            with self.lock:
                self.received[key] += chunk
            buf += chunk
            while len(buf) >= 16:
                length, req, _, opcode = struct.unpack("<iiii", buf[:16])
                if length < 16 or length > 1 << 24:
                    buf = b""  # not framable any more: just record
                    break
                if len(buf) < length:
                    break
                msg, buf = buf[:length], buf[length:]
                flags = struct.unpack("<I", msg[16:20])[0] if opcode == 2013 else 0
                if flags & 2:
                    continue  # moreToCome: no reply
                if b"dupreply" in msg:
                    body = bson_doc([("ok", 1.0), ("ok", 1.0)])
                else:
                    body = bson_doc([("ok", 1.0)])
                reply = op_msg(rid, body, response_to=req)
                rid += 1
                conn.sendall(reply)
                with self.lock:
                    self.sent[key] += reply
        conn.close()


# --- The tap ----------------------------------------------------------------

def start_tap(tap, upstream, work, name, extra=()):
    log = os.path.join(work, name + ".jsonl")
    err_path = os.path.join(work, name + ".err")
    err = open(err_path, "w")
    proc = subprocess.Popen([tap, "tap", "--listen", "127.0.0.1:0", "--upstream",
                             "127.0.0.1:%d" % upstream, "--out", log] + list(extra),
                            stderr=err)
    for _ in range(200):
        with open(err_path) as f:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
        if m:
            return proc, int(m.group(1)), log
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("the tap did not start")


def stop_tap(proc):
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=20)


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_rules(tap, server, work):
    proc, port, log = start_tap(tap, server.port, work, "rules",
                                ["--max-array", "100"])
    c = socket.create_connection(("127.0.0.1", port))
    sent, got = b"", b""

    def rt(msg, reply=True):
        nonlocal sent, got
        c.sendall(msg)
        sent += msg
        if reply:
            r = recv_message(c)
            got += r
            return r
        return None

    ping = bson_doc([("ping", 1), ("$db", "admin")])
    rt(op_msg(1, ping))
    rt(op_msg(2, ping, flags=1, bad_checksum=True))
    rt(op_msg(3, ping, flags=1))
    clash = bson_doc([("insert", "c"), ("documents", []), ("$db", "t")])
    rt(op_msg(4, clash, [("documents", [bson_doc([("_id", 1)])])]))
    rt(op_msg(5, bson_doc([("ping", 1)])))
    docs = [bson_doc([("_id", i), ("s", "x" * 20)]) for i in range(150)]
    insert = op_msg(6, bson_doc([("insert", "c"), ("$db", "t")]),
                    [("documents", docs)])
    rt(op_compressed_zlib(insert))
    rt(op_msg(7, bson_doc([("insert", "c"), ("$db", "t")]),
              [("documents", docs[:2])], flags=2), reply=False)
    rt(op_msg(8, bson_doc([("dupreply", 1), ("$db", "admin")])))
    junk = struct.pack("<iiii", 3, 9, 0, 2013) + b"junk that cannot be framed"
    rt(junk, reply=False)
    time.sleep(0.3)
    c.close()
    time.sleep(0.3)
    rc = stop_tap(proc)
    check(rc == 0, "the tap exits 0 on SIGTERM")
    with server.lock:
        srv_in = [v for v in server.received.values() if v.startswith(sent[:16])]
        srv_out = [server.sent[k] for k, v in server.received.items()
                   if v.startswith(sent[:16])]
    check(srv_in == [sent], "the server received exactly the bytes the client sent")
    check(srv_out == [got], "the client received exactly the bytes the server sent")

    lines = read_log(log)
    msgs = {(x["dir"], x["requestID"]): x for x in lines if "dir" in x}
    c2s = lambda rid: msgs.get(("c2s", rid), {})  # noqa: E731
    m = c2s(1)
    check(m.get("command") == "ping" and m.get("db") == "admin" and
          "error" not in m and m.get("doc") == {"ping": 1, "$db": "admin"},
          "a valid ping is logged with its command, $db and document")
    replies = [x for x in lines if x.get("dir") == "s2c"]
    check(all("latency_us" in x and x["latency_us"] >= 0 for x in replies),
          "every reply has a round-trip latency")
    check(replies and replies[0]["responseTo"] == 1 and "command" not in replies[0],
          "a reply names no command")
    check(c2s(2).get("error") == "checksum-mismatch",
          "a wrong CRC-32C is logged as checksum-mismatch")
    check(c2s(3).get("flags") == ["checksumPresent"] and "error" not in c2s(3),
          "a right CRC-32C passes, flags by name")
    check(c2s(4).get("error") == "identifier-clash",
          "a sequence named like a body field is logged as identifier-clash")
    check(c2s(5).get("error") == "missing-db", "a command without $db: missing-db")
    m = c2s(6)
    arr = m.get("doc", {}).get("documents", [])
    check(m.get("opcode") == "OP_COMPRESSED" and m.get("compressor") == "zlib" and
          m.get("originalOpcode") == "OP_MSG" and m.get("command") == "insert" and
          m.get("sequences") == [{"id": "documents", "count": 150}],
          "OP_COMPRESSED is decompressed for the log")
    check(len(arr) == 101 and arr[99] == {"_id": 99, "s": "x" * 20} and
          arr[100] == {"$elided": 50},
          "--max-array 100 keeps 100 elements and marks the 50 left out")
    check(c2s(7).get("flags") == ["moreToCome"], "moreToCome is named")
    dup = [x for x in replies if x["responseTo"] == 8]
    check(dup and dup[0].get("error") == "duplicate-key",
          "a reply with a key twice is logged as duplicate-key")
    desync = [x for x in lines if x.get("event") == "desync"]
    check(len(desync) == 1 and "length-too-small" in desync[0].get("detail", ""),
          "an impossible messageLength gives one desync event")
    close = [x for x in lines if x.get("event") == "close"]
    check(len(close) == 1 and close[0]["bytes_c2s"] == len(sent) and
          close[0]["bytes_s2c"] == len(got),
          "the close line counts every byte forwarded")


def test_concurrent(tap, server, work):
    proc, port, log = start_tap(tap, server.port, work, "many")
    n_conn, n_msg = 20, 50
    errors = []
    barrier = threading.Barrier(n_conn)

    def client(k):
        try:
            s = socket.create_connection(("127.0.0.1", port))
            barrier.wait()
            for i in range(n_msg):
                rid = k * 1000 + i
                s.sendall(op_msg(rid, bson_doc([("ping", 1), ("$db", "admin")])))
                r = recv_message(s)
                if struct.unpack("<i", r[8:12])[0] != rid:
                    errors.append("conn %d: wrong responseTo" % k)
            s.close()
        except Exception as e:  # noqa: BLE001
            errors.append("conn %d: %s" % (k, e))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(n_conn)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(0.3)
    check(stop_tap(proc) == 0, "the tap exits 0 after 20 connections")
    check(not errors, "20 concurrent clients each get their 50 replies: %s"
          % errors[:3])
    lines = read_log(log)
    closes = [x for x in lines if x.get("event") == "close"]
    check(len(closes) == n_conn and
          all(x["messages_c2s"] == n_msg and x["messages_s2c"] == n_msg
              for x in closes),
          "20 connections logged, 50 messages each way")


def test_sigterm_open(tap, server, work):
    proc, port, log = start_tap(tap, server.port, work, "open")
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(op_msg(1, bson_doc([("ping", 1), ("$db", "admin")])))
    recv_message(s)
    check(stop_tap(proc) == 0, "SIGTERM with a connection open: exit 0")
    s.settimeout(5)
    try:
        eof = s.recv(1) == b""
    except OSError:
        eof = True
    check(eof, "the client's connection is closed")
    lines = read_log(log)
    check([x.get("detail") for x in lines if x.get("event") == "close"] ==
          ["tap stopped"] and len([x for x in lines if "dir" in x]) == 2,
          "the open connection's lines and its close line are in the log")


def test_refused(tap, work):
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    port = dead.getsockname()[1]
    dead.close()  # nobody listens there now
    proc, tport, log = start_tap(tap, port, work, "refused")
    s = socket.create_connection(("127.0.0.1", tport))
    s.settimeout(5)
    try:
        closed = s.recv(1) == b""
    except OSError:
        closed = True
    check(closed, "a client is disconnected when the upstream refuses")
    check(stop_tap(proc) == 0, "exit 0")
    lines = read_log(log)
    check(any(x.get("event") == "close" and "upstream connect" in x.get("detail", "")
              for x in lines), "the refusal is logged")


def test_bad_pcap(tap, work):
    bad = os.path.join(work, "bad.pcap")
    with open(bad, "wb") as f:
        f.write(b"this is not a capture")
    r = subprocess.run([tap, "tap", "--pcap", bad], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    check(r.returncode == 2 and r.stderr, "a file that is no capture: exit 2 and a message")
    r = subprocess.run([tap, "tap", "--listen", "127.0.0.1:0"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(r.returncode == 2, "--listen without --upstream: usage error")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tap", required=True)
    args = ap.parse_args()
    server = Server()
    with tempfile.TemporaryDirectory(prefix="opmsg-tap-") as work:
        test_rules(args.tap, server, work)
        test_concurrent(args.tap, server, work)
        test_sigterm_open(args.tap, server, work)
        test_refused(args.tap, work)
        test_bad_pcap(args.tap, work)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
