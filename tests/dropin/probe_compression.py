#!/usr/bin/python3
"""probe_compression.py PORT: asks the server at 127.0.0.1:PORT which
compressors it accepts (an OP_QUERY isMaster offering zlib, zstd and snappy,
as libmongoc's handshake does) and prints the answer."""
import os
import socket
import struct
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_server as hs  # noqa: E402


def main():
    port = int(sys.argv[1])
    doc = hs.encode({"isMaster": 1, "compression": ["zlib", "zstd", "snappy"]})
    payload = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + doc
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(hs.header(16 + len(payload), 1, 0, hs.OP_QUERY) + payload)
        head = hs._recv_exact(s, 16)
        rest = hs._recv_exact(s, struct.unpack_from("<i", head)[0] - 16)
    if b"\x04compression\x00" in rest:
        print("server compression: negotiated (reply lists compressors)")
    else:
        print("server compression: not offered (the hello reply has no 'compression' "
              "field), so requested compressors fall back to uncompressed messages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
