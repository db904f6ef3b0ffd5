#!/usr/bin/python3
"""A wire-protocol proxy that adds compression to a server without it.

    compressing_proxy.py UPSTREAM_PORT

prints its own port on stdout and relays every connection to
127.0.0.1:UPSTREAM_PORT. In the handshake reply it offers the first
compressor of the client's list that it supports (zstd, zlib, noop), as a
server would; afterwards it decompresses the client's OP_COMPRESSED messages
for the upstream server and compresses the upstream's replies with the
negotiated compressor (hello and isMaster replies never, as the spec says).
FerretDB 1.24 negotiates no compression, so this is how the end-to-end test
gets libmongoc to decompress real replies with zlib and zstd.
Standard library plus libzstd through ctypes.
"""
import ctypes
import ctypes.util
import os
import socket
import struct
import sys
import threading
import zlib

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_server as hs  # noqa: E402

_zstd = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
_zstd.ZSTD_compressBound.restype = ctypes.c_size_t
_zstd.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
_zstd.ZSTD_compress.restype = ctypes.c_size_t
_zstd.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                ctypes.c_size_t, ctypes.c_int]
_zstd.ZSTD_decompress.restype = ctypes.c_size_t
_zstd.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                  ctypes.c_size_t]
_zstd.ZSTD_isError.restype = ctypes.c_uint
_zstd.ZSTD_isError.argtypes = [ctypes.c_size_t]

IDS = {"noop": 0, "zlib": 2, "zstd": 3}
HANDSHAKE = {"hello", "ismaster", "isMaster"}


def compress(cid, data):
    if cid == 2:
        return zlib.compress(data)
    if cid == 3:
        out = ctypes.create_string_buffer(_zstd.ZSTD_compressBound(len(data)))
        n = _zstd.ZSTD_compress(out, len(out), data, len(data), 3)
        assert not _zstd.ZSTD_isError(n)
        return out.raw[:n]
    return data


def decompress(cid, data, size):
    if cid == 2:
        return zlib.decompress(data)
    if cid == 3:
        out = ctypes.create_string_buffer(size)
        n = _zstd.ZSTD_decompress(out, size, data, len(data))
        assert not _zstd.ZSTD_isError(n) and n == size
        return out.raw
    return data


# Top-level BSON walking: (key, type, value offset, value end) per element.
_FIXED = {1: 8, 6: 0, 7: 12, 8: 1, 9: 8, 10: 0, 16: 4, 17: 8, 18: 8, 19: 16,
          0x7F: 0, 0xFF: 0}


def elements(doc):
    off = 4
    while doc[off] != 0:
        t = doc[off]
        nul = doc.index(b"\x00", off + 1)
        key = doc[off + 1:nul].decode()
        v = nul + 1
        if t in _FIXED:
            end = v + _FIXED[t]
        elif t in (2, 13, 14):
            end = v + 4 + struct.unpack_from("<i", doc, v)[0]
        elif t in (3, 4, 15):
            end = v + struct.unpack_from("<i", doc, v)[0]
        elif t == 5:
            end = v + 5 + struct.unpack_from("<i", doc, v)[0]
        elif t == 11:
            end = doc.index(b"\x00", doc.index(b"\x00", v) + 1) + 1
        elif t == 12:
            end = v + 4 + struct.unpack_from("<i", doc, v)[0] + 12
        else:
            raise ValueError("BSON type %d" % t)
        yield key, t, v, end
        off = end


def client_compressors(doc):
    for key, t, v, end in elements(doc):
        if key == "compression" and t == 4:
            arr = doc[v:end]
            return [arr[s + 4:e - 1].decode() for _, tt, s, e in elements(arr) if tt == 2]
    return []


def add_compression(doc, name):
    extra = b"\x04compression\x00" + hs.encode({"0": name})
    body = doc[4:-1] + extra
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def command_doc(msg):
    """(offset, length) of the command document of an OP_QUERY/OP_MSG/OP_REPLY."""
    opcode = struct.unpack_from("<i", msg, 12)[0]
    if opcode == hs.OP_QUERY:
        off = msg.index(b"\x00", 20) + 9
    elif opcode == hs.OP_REPLY:
        off = 36
    else:
        flags = struct.unpack_from("<I", msg, 16)[0]
        end = len(msg) - (4 if flags & 1 else 0)
        off = 20
        while off < end:
            if msg[off] == 0:
                off += 1
                break
            off += 1 + struct.unpack_from("<i", msg, off + 1)[0]
    return off, struct.unpack_from("<i", msg, off)[0]


def read_msg(sock):
    head = hs._recv_exact(sock, 16)
    if head is None:
        return None
    rest = hs._recv_exact(sock, struct.unpack_from("<i", head)[0] - 16)
    return None if rest is None else head + rest


NAMES = {v: k for k, v in IDS.items()}


def relay(client):
    upstream = socket.create_connection(("127.0.0.1", UPSTREAM))
    counts = {"requests": 0, "replies": 0}
    try:
        _relay(client, upstream, counts)
    finally:
        client.close()
        upstream.close()
        if counts["requests"] or counts["replies"]:
            # One line per connection that used compression, for the test.
            sys.stderr.write("proxy: %s: %d compressed requests, %d compressed replies\n"
                             % (counts.get("name"), counts["requests"], counts["replies"]))
            sys.stderr.flush()


def _relay(client, upstream, counts):
    cid = None
    while True:
        msg = read_msg(client)
        if msg is None:
            return
        if struct.unpack_from("<i", msg, 12)[0] == hs.OP_COMPRESSED:
            orig, size, c = struct.unpack_from("<iiB", msg, 16)
            raw = decompress(c, msg[25:], size)
            counts["requests"] += 1
            counts["name"] = NAMES.get(c)
            msg = struct.pack("<iiii", 16 + size, *struct.unpack_from("<ii", msg, 4), orig) + raw
        off, length = command_doc(msg)
        doc = msg[off:off + length]
        handshake = hs.first_key(doc) in HANDSHAKE
        offer = None
        if handshake:
            wanted = [n for n in client_compressors(doc) if n in IDS]
            offer = wanted[0] if wanted else None
            if offer:
                cid = IDS[offer]
        upstream.sendall(msg)
        if struct.unpack_from("<i", msg, 12)[0] == hs.OP_MSG and \
                struct.unpack_from("<I", msg, 16)[0] & 2:
            continue   # moreToCome: no reply
        reply = read_msg(upstream)
        if reply is None:
            return
        if handshake:
            if offer:
                flags = struct.unpack_from("<I", reply, 16)[0] if \
                    struct.unpack_from("<i", reply, 12)[0] == hs.OP_MSG else 0
                if flags & 1:   # drop a checksum that would no longer match
                    reply = reply[:16] + struct.pack("<I", flags & ~1) + reply[20:-4]
                off, length = command_doc(reply)
                new_doc = add_compression(reply[off:off + length], offer)
                reply = reply[:off] + new_doc + reply[off + length:]
                reply = struct.pack("<i", len(reply)) + reply[4:]
        elif cid is not None:
            orig = struct.unpack_from("<i", reply, 12)[0]
            data = compress(cid, reply[16:])
            payload = struct.pack("<iiB", orig, len(reply) - 16, cid) + data
            reply = struct.pack("<iiii", 16 + len(payload), *struct.unpack_from("<ii", reply, 4),
                                hs.OP_COMPRESSED) + payload
            counts["replies"] += 1
            counts["name"] = NAMES.get(cid)
        client.sendall(reply)


def main():
    global UPSTREAM
    UPSTREAM = int(sys.argv[1])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=relay, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
