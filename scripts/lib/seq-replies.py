#!/usr/bin/env python3
"""The cursor replies in an `opmsg tap` log (scripts/check-sequences.sh).

Usage: seq-replies.py all LOG       every cursor reply has document sequences
       seq-replies.py none LOG      no cursor reply has document sequences
       seq-replies.py dump LOG      the cursor replies, one JSON line each

A cursor reply answers a find, aggregate or getMore (paired by responseTo
with the request on the same connection). all and none print "N M" (replies
with sequences, cursor replies) and exit 0 when the log has cursor replies,
no message breaks a wire rule, and N = M (all) or N = 0 (none); else 1.
dump prints each cursor reply's merged document in log order, with the
cursor id reduced to whether it is 0, for comparing two servers' answers.
"""
import json
import sys

CURSOR_COMMANDS = ("find", "aggregate", "getMore")


def cursor_replies(path):
    requests, replies, errors = {}, [], 0
    with open(path) as f:
        for line in f:
            m = json.loads(line)
            if "error" in m:
                errors += 1
                sys.stderr.write("seq-replies: a message breaks a rule: %s\n" % line[:300])
            if m.get("dir") == "c2s":
                requests[(m["conn"], m["requestID"])] = m.get("command")
            elif m.get("dir") == "s2c":
                if requests.get((m["conn"], m["responseTo"])) in CURSOR_COMMANDS:
                    replies.append(m)
    return replies, errors


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("all", "none", "dump"):
        sys.stderr.write("usage: seq-replies.py all|none|dump LOG\n")
        return 2
    mode, path = sys.argv[1:]
    replies, errors = cursor_replies(path)
    if mode == "dump":
        for r in replies:
            doc = r.get("doc", {})
            cur = doc.get("cursor")
            if isinstance(cur, dict) and "id" in cur:
                cur["id"] = "zero" if cur["id"] in (0, {"$numberLong": "0"}) else "nonzero"
            print(json.dumps(doc, sort_keys=False))
        return 1 if errors or not replies else 0
    with_seq = sum(1 for r in replies if r.get("sequences"))
    print("%d %d" % (with_seq, len(replies)))
    if errors or not replies:
        return 1
    return 0 if with_seq == (len(replies) if mode == "all" else 0) else 1


if __name__ == "__main__":
    sys.exit(main())
