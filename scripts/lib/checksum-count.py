#!/usr/bin/env python3
"""OP_MSG checksums in an `opmsg tap` log (scripts/check-checksum.sh).

Usage: checksum-count.py LOG

Prints "REQ_CK REQ ACCEPTED REP_CK REP_OK":
  REQ       OP_MSG requests (client to server; compressed ones by their original opcode)
  REQ_CK    of those, the ones with checksumPresent whose checksum the tap found right
  ACCEPTED  the requests of REQ_CK the server answered (paired by responseTo on the
            same connection): a server that finds a checksum wrong answers nothing
            (FerretDB's wire.ReadMessage fails and the connection ends)
  REP_CK    replies (server to client) with checksumPresent, or refused for their checksum
  REP_OK    of those, the ones whose checksum the tap found right
The tap parses every message with libopmsg, which verifies a checksum when the flag is
set: a wrong one is logged as an error naming the rule.
"""
import json
import sys


def is_op_msg(m):
    for key in ("originalOpcode", "opcode"):
        if key in m:
            return m[key] in ("OP_MSG", 2013)
    return False


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: checksum-count.py LOG\n")
        return 2
    requests = {}
    req = req_ck = accepted = rep_ck = rep_ok = 0
    with open(sys.argv[1]) as f:
        for line in f:
            m = json.loads(line)
            if "dir" not in m or not is_op_msg(m):
                continue
            flagged = "checksumPresent" in m.get("flags", [])
            err = json.dumps(m.get("error", "")).lower()
            if m["dir"] == "c2s":
                req += 1
                good = flagged and "error" not in m
                req_ck += good
                requests[(m.get("conn"), m.get("requestID"))] = good
            elif m["dir"] == "s2c":
                if flagged or "checksum" in err:
                    rep_ck += 1
                    rep_ok += "error" not in m
                if requests.pop((m.get("conn"), m.get("responseTo")), False):
                    accepted += 1
    print(req_ck, req, accepted, rep_ck, rep_ok)
    return 0


if __name__ == "__main__":
    sys.exit(main())
