#!/usr/bin/python3
"""Serves each conformance vector as the raw reply to a libmongoc client's
{ping: 1} and records what the client made of it.

  conformance_run.py --client CONFORMANCE_CLIENT --manifest MANIFEST
      --data DATA_DIR --out RESULTS.tsv [--dropin LIBOPMSG_MONGOC.so]

The peer answers the handshake as hostile_server.py does (legacy OP_QUERY
isMaster, or OP_MSG hello), then sends the vector's bytes exactly as they
are, whatever the ping's requestID (the vectors' responseTo is 0). One line
per vector goes to RESULTS: FILE, accepted/rejected, the reply's hex ("-"),
the error ("-"); a crash or a hang is "rejected" with that as the error.
With --dropin the client runs with LD_PRELOAD and OPMSG_MONGOC_DEBUG=1, and
the drop-in's activation line ("active: ... check LEVEL") is printed once.
"""
import argparse
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_server as hs  # noqa: E402

TIMEOUT = 30


def serve(conn, vector):
    with conn:
        try:
            while True:
                head = hs._recv_exact(conn, 16)
                if head is None:
                    return
                length, rid, _, opcode = struct.unpack("<iiii", head)
                rest = hs._recv_exact(conn, length - 16)
                if rest is None:
                    return
                msg = head + rest
                if opcode == hs.OP_QUERY:
                    nul = msg.index(b"\x00", 20)
                    reply = hs.op_reply(hs.hello_doc(False), rid)
                elif opcode == hs.OP_MSG:
                    _, doc, _ = hs._parse_msg_request(msg)
                    if hs.first_key(doc) in hs.HANDSHAKE:
                        reply = hs.op_msg([hs.body(hs.hello_doc(True))], rid)
                    else:
                        reply = vector
                else:
                    return
                conn.sendall(reply)
        except (ConnectionError, OSError):
            pass


class Peer:
    def __init__(self, vector):
        self.vector = vector
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn, self.vector), daemon=True).start()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def _no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(client, port, dropin):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("OPMSG_MONGOC_")}
    if dropin:
        env["LD_PRELOAD"] = dropin
        env["OPMSG_MONGOC_DEBUG"] = "1"
    uri = ("mongodb://127.0.0.1:%d/?serverSelectionTimeoutMS=5000&connectTimeoutMS=5000"
           "&socketTimeoutMS=1500" % port)
    try:
        p = subprocess.run([client, uri], env=env, capture_output=True, text=True, errors="replace",
                           timeout=TIMEOUT, preexec_fn=_no_core)
    except subprocess.TimeoutExpired:
        return "rejected", "-", "hang: no answer after %ds" % TIMEOUT, ""
    if p.returncode < 0:
        return "rejected", "-", "crash: " + signal.Signals(-p.returncode).name, p.stderr
    line = next((l for l in p.stdout.splitlines() if l.startswith("RESULT ")), "")
    parts = line.split(" ", 3)
    if len(parts) < 4:
        return "rejected", "-", "no result: exit %d %s" % (p.returncode, p.stderr[-200:].strip()), p.stderr
    return parts[1], parts[2], parts[3], p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dropin")
    args = ap.parse_args()
    files = [l.split("\t", 1)[0] for l in open(args.manifest) if l.strip() and not l.startswith("#")]
    said = False
    with open(args.out, "w") as out:
        for name in files:
            with open(os.path.join(args.data, name), "rb") as f:
                vector = f.read()
            peer = Peer(vector)
            try:
                verdict, hexdoc, err, stderr = run(args.client, peer.port, args.dropin)
            finally:
                peer.close()
            if args.dropin and not said:
                active = [l for l in stderr.splitlines() if "active:" in l or "inactive:" in l]
                print(active[0] if active else "dropin: no activation line on stderr", flush=True)
                said = True
            out.write("%s\t%s\t%s\t%s\n" % (name, verdict, hexdoc, err.replace("\t", " ")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
