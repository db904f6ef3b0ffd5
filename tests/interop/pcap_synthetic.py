"""`opmsg tap --pcap` on captures written from recorded real traffic.

Usage: pcap_synthetic.py --tap OPMSG CAPTURES_DIR

For each client directory of CAPTURES_DIR (tests/data/captures/real/*: the
messages `opmsg tap --raw` saved, and tap.jsonl, the live tap's log of the
same session), this writes two pcap files of the same conversation:
 - "clean": Ethernet + IPv4, one TCP segment per message, in order;
 - "rough": raw IPv6, every message cut into 700-byte segments, the first two
   of each message swapped (out of order), the first sent again (a
   retransmission) and the last sent again overlapping its predecessor, with
   the server's sequence numbers wrapping past 2^32;
runs `opmsg tap --pcap` on each and checks it logs the live tap's lines
(times, latencies, connection ids and close reasons aside).
Exit status 0 pass, 1 fail.
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

SERVER_PORT = 27017
SEGMENT = 700


def load(client_dir):
    msgs = []
    for name in sorted(os.listdir(client_dir)):
        m = re.match(r"(\d+)-conn(\d+)-(c2s|s2c)\.bin$", name)
        if m:
            with open(os.path.join(client_dir, name), "rb") as f:
                msgs.append((int(m.group(2)), m.group(3), f.read()))
    return msgs


class Pcap:
    def __init__(self, path, linktype):
        self.f = open(path, "wb")
        self.f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144,
                                 linktype))
        self.t = 1700000000 * 1000000
        self.linktype = linktype

    def packet(self, frame):
        self.t += 1000
        self.f.write(struct.pack("<IIII", self.t // 1000000, self.t % 1000000,
                                 len(frame), len(frame)))
        self.f.write(frame)

    def close(self):
        self.f.close()


def tcp(sport, dport, seq, ack, flags, payload):
    return struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF,
                       ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0) + payload


def ipv4_eth(src, dst, segment):
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(segment), 0, 0x4000,
                     64, 6, 0, bytes(src), bytes(dst))
    return b"\x02\0\0\0\0\x01" + b"\x02\0\0\0\0\x02" + b"\x08\x00" + ip + segment


def ipv6_raw(src, dst, segment):
    return struct.pack(">IHBB16s16s", 6 << 28, len(segment), 6, 64,
                       bytes(src), bytes(dst)) + segment


SYN, FIN, ACK, PSH = 0x02, 0x01, 0x10, 0x08


def write_pcap(path, msgs, rough):
    pcap = Pcap(path, 101 if rough else 1)  # LINKTYPE_RAW or ETHERNET
    if rough:
        client_ip = [0] * 15 + [1]                # ::1
        server_ip = [0] * 15 + [1]
        frame = ipv6_raw
    else:
        client_ip = [127, 0, 0, 1]
        server_ip = [127, 0, 0, 1]
        frame = ipv4_eth
    state = {}

    def send(conn, direction, seq, flags, payload=b""):
        st = state[conn]
        cport = 40000 + conn
        if direction == "c2s":
            seg = tcp(cport, SERVER_PORT, seq, st["s2c"], flags, payload)
            pcap.packet(frame(client_ip, server_ip, seg))
        else:
            seg = tcp(SERVER_PORT, cport, seq, st["c2s"], flags, payload)
            pcap.packet(frame(server_ip, client_ip, seg))

    def open_conn(conn):
        # The server's sequence numbers start near 2^32 to make them wrap.
        isn = {"c2s": 1000 * conn, "s2c": 0xFFFFFF00 - 300 * conn}
        state[conn] = {"c2s": isn["c2s"] + 1, "s2c": isn["s2c"] + 1}
        send(conn, "c2s", isn["c2s"], SYN)
        send(conn, "s2c", isn["s2c"], SYN | ACK)
        send(conn, "c2s", isn["c2s"] + 1, ACK)

    for conn, direction, data in msgs:
        if conn not in state:
            open_conn(conn)
        start = state[conn][direction]
        if not rough:
            send(conn, direction, start, PSH | ACK, data)
        else:
            chunks = [(start + i, data[i:i + SEGMENT])
                      for i in range(0, len(data), SEGMENT)]
            order = list(chunks)
            if len(order) >= 2:
                order[0], order[1] = order[1], order[0]
            for seq, chunk in order:
                send(conn, direction, seq, PSH | ACK, chunk)
            send(conn, direction, chunks[0][0], PSH | ACK, chunks[0][1])
            if len(data) > 100:
                send(conn, direction, start + len(data) - 100 - 50, PSH | ACK,
                     data[-150:])
        state[conn][direction] = start + len(data)
    for conn in sorted(state):
        send(conn, "c2s", state[conn]["c2s"], FIN | ACK)
        send(conn, "s2c", state[conn]["s2c"], FIN | ACK)
    pcap.close()


def comparable(lines):
    conns = {}
    for x in lines:
        if x.get("event") == "open":
            continue
        y = {k: v for k, v in x.items()
             if k not in ("t", "conn", "latency_us", "detail")}
        conns.setdefault(x["conn"], []).append(json.dumps(y, sort_keys=True))
    return [conns[c] for c in sorted(conns)]


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tap", required=True)
    ap.add_argument("captures")
    args = ap.parse_args()
    failures = 0
    clients = sorted(d for d in os.listdir(args.captures)
                     if os.path.isfile(os.path.join(args.captures, d, "tap.jsonl")))
    if not clients:
        print("FAIL: no recordings under %s" % args.captures)
        return 1
    with tempfile.TemporaryDirectory(prefix="opmsg-pcap-") as work:
        for client in clients:
            cdir = os.path.join(args.captures, client)
            msgs = load(cdir)
            live = read_log(os.path.join(cdir, "tap.jsonl"))
            # The recording was logged with --max-array 0 (nothing elided).
            for rough in (False, True):
                kind = "rough" if rough else "clean"
                pcap = os.path.join(work, "%s-%s.pcap" % (client, kind))
                out = os.path.join(work, "%s-%s.jsonl" % (client, kind))
                write_pcap(pcap, msgs, rough)
                r = subprocess.run([args.tap, "tap", "--pcap", pcap, "--port",
                                    str(SERVER_PORT), "--out", out,
                                    "--max-array", "0"])
                got = read_log(out) if r.returncode == 0 else []
                ok = r.returncode == 0 and comparable(got) == comparable(live)
                print("%s: %s %s capture, %d messages: %s" % (
                    "ok" if ok else "FAIL", client, kind, len(msgs),
                    "same lines as the live tap" if ok else
                    "differs from the live tap (exit %d)" % r.returncode))
                if not ok:
                    failures += 1
                    a, b = comparable(got), comparable(live)
                    for i, (x, y) in enumerate(zip(a, b)):
                        for j, (p, q) in enumerate(zip(x, y)):
                            if p != q:
                                print("  conn #%d line %d:\n  got  %s\n  want %s"
                                      % (i, j, p[:300], q[:300]))
                                break
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
