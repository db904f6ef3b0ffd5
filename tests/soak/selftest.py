#!/usr/bin/python3
"""The soak's own tests: the scorer must be able to say "wrong" and "crash".

    selftest.py scorer
        run_soak.py's scoring rules on made-up client and peer records, one
        case per rule (the specification of a verdict).
    selftest.py live --build DIR [--dropin SO]
        short real runs: a peer that logs CRCs it did not send must be
        caught (wrong > 0), a client that faults on purpose must be reported
        with the faulting function, stock libmongoc must be caught losing
        sequences or crashing, and a run with legal replies only must pass
        --require-clean.
Exit 0 when every check holds.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_soak as rs  # noqa: E402

failures = []


def check(what, ok, detail=""):
    print("%s %s%s" % ("PASS" if ok else "FAIL", what, (": " + detail) if detail and not ok else ""))
    if not ok:
        failures.append(what)


# ---------------------------------------------------------------------------
# The rules, on made-up records
# ---------------------------------------------------------------------------

def ex(cmd, cls="legal", kind="plain", **kw):
    """One exchange as the peer logs it."""
    return dict(role="app", op="p-0-0", cmd=cmd, cls=cls, kind=kind, app="p", **kw)


def verdict(rec, exchanges):
    rec = dict({"op": "p-0-0", "app": "p"}, **rec)
    return rs.judge_op(rec, exchanges)[0]


def scorer():
    find = [ex("find", docs=[1, 2], more=True), ex("getMore", docs=[3], more=False)]
    check("a cursor read whole, as sent, is right",
          verdict({"cmd": "find", "ok": True, "docs": [1, 2, 3], "limit": -1}, find) == "right")
    check("a document that differs from the one sent is wrong",
          verdict({"cmd": "find", "ok": True, "docs": [1, 9, 3], "limit": -1}, find) == "wrong")
    check("a cursor that ends before the peer's last batch is wrong",
          verdict({"cmd": "find", "ok": True, "docs": [1, 2], "limit": -1}, find) == "wrong")
    check("a cursor abandoned after a few documents is right",
          verdict({"cmd": "find", "ok": True, "docs": [1, 2], "limit": 2}, find) == "right")
    bad = [ex("find", docs=[1, 2], more=True), ex("getMore", "illegal", "two_bodies", docs=[3], more=False)]
    check("success after an illegal reply is wrong",
          verdict({"cmd": "find", "ok": True, "docs": [1, 2, 3], "limit": -1}, bad) == "wrong")
    check("an error after an illegal reply is clean",
          verdict({"cmd": "find", "ok": False, "domain": 3, "code": 14, "docs": [1, 2], "limit": -1},
                  bad) == "clean")
    check("an error for a legal reply is wrong",
          verdict({"cmd": "find", "ok": False, "domain": 3, "code": 14, "docs": [1, 2], "limit": -1},
                  find) == "wrong")
    retried = [ex("find", "fault", "close_before_reply", docs=[7]), ex("find", docs=[1], more=False)]
    check("a read retried after a fault is scored by its retry",
          verdict({"cmd": "find", "ok": True, "docs": [1], "limit": -1}, retried) == "right")
    check("a success for a fault is wrong",
          verdict({"cmd": "insert", "ok": True, "n": 2}, [ex("insert", "fault", "stall", n=2)]) == "wrong")
    check("insertedCount as the peer counted is right",
          verdict({"cmd": "insert", "ok": True, "n": 2}, [ex("insert", n=2)]) == "right")
    check("another insertedCount is wrong",
          verdict({"cmd": "insert", "ok": True, "n": 3}, [ex("insert", n=2)]) == "wrong")
    server_error = [ex("ping", kind="server_error", expect="error", code=2)]
    check("the server's own error, as sent, is right",
          verdict({"cmd": "ping", "ok": False, "domain": 17, "code": 2}, server_error) == "right")
    check("another error code for a server error is wrong",
          verdict({"cmd": "ping", "ok": False, "domain": 17, "code": 5}, server_error) == "wrong")
    check("success for a server error is wrong",
          verdict({"cmd": "ping", "ok": True, "fields": {"ok": 1.0}}, server_error) == "wrong")
    seqs = [ex("ping", kind="seq_after", fields={"soakEcho": [5], "extra": [6, 7]})]
    check("a ping reply with its merged sequence is right",
          verdict({"cmd": "ping", "ok": True, "fields": {"ok": 1.0, "soakEcho": [5], "extra": [6, 7]}},
                  seqs) == "right")
    check("a lost sequence is wrong",
          verdict({"cmd": "ping", "ok": True, "fields": {"ok": 1.0, "soakEcho": [5]}}, seqs) == "wrong")
    nested = [ex("ping", kind="find_seq", fields={"soakEcho": [], "cursor": {"firstBatch": [8]}})]
    check("a dotted sequence merged at its path is right",
          verdict({"cmd": "ping", "ok": True, "fields": {"ok": 1.0, "soakEcho": [],
                                                          "cursor": {"firstBatch": [8]}}}, nested) == "right")
    check("a dotted sequence lost is wrong",
          verdict({"cmd": "ping", "ok": True, "fields": {"ok": 1.0, "soakEcho": []}}, nested) == "wrong")
    either = [ex("ping", "either", "wrong_response_to", fields={"soakEcho": [5]})]
    check("a reply to the wrong responseTo may be accepted",
          verdict({"cmd": "ping", "ok": True, "fields": {"ok": 1.0, "soakEcho": [5]}}, either) == "right")
    check("a reply to the wrong responseTo may be refused",
          verdict({"cmd": "ping", "ok": False, "domain": 2, "code": 4}, either) == "clean")
    check("a success the peer never saw is wrong", verdict({"cmd": "ping", "ok": True, "fields": {}}, []) == "wrong")
    check("a request that found no server is clean (not delivered)",
          verdict({"cmd": "ping", "ok": False, "domain": rs.SERVER_SELECTION, "code": 13}, []) == "undelivered")
    check("any other error for a request the peer never saw is wrong",
          verdict({"cmd": "ping", "ok": False, "domain": 3, "code": 14}, []) == "wrong")

    beats = [dict(role="beat", beat=1, cls="legal", kind="seq_after", fields={"extra": [1]}, app="p"),
             dict(role="beat", beat=2, cls="illegal", kind="two_bodies", app="p"),
             dict(role="beat", beat=3, cls="either", kind="op_reply", fields={}, app="p")]
    s = rs.score_run([{"beat": 1, "ok": True, "fields": {"ok": 1.0, "extra": [1]}, "app": "p"}], beats)
    check("a heartbeat with its merged sequence is right", s.beats["right"] == 1 and not s.wrong)
    s = rs.score_run([{"beat": 1, "ok": True, "fields": {"ok": 1.0}, "app": "p"}], beats)
    check("a heartbeat that lost a sequence is wrong", len(s.wrong) == 1)
    s = rs.score_run([{"beat": 2, "ok": True, "fields": {"ok": 1.0}, "app": "p"}], beats)
    check("a heartbeat that accepted an illegal hello reply is wrong", len(s.wrong) == 1)
    s = rs.score_run([{"beat": 3, "ok": True, "fields": {"ok": 1.0}, "app": "p"}], beats)
    check("a heartbeat may accept a hello reply in an OP_REPLY", not s.wrong and s.beats["right"] == 1)
    failed = {"beat": -1, "ok": False, "domain": 3, "code": 14, "app": "p"}
    s = rs.score_run([failed, dict(failed)], beats)
    check("heartbeats may fail on illegal hello replies and on OP_REPLY", not s.wrong and s.beats["failed"] == 2)
    s = rs.score_run([failed, dict(failed), dict(failed)], beats)
    check("more failed heartbeats than hello replies that may fail is wrong", len(s.wrong) == 1)
    s = rs.score_run([], [dict(role="bad-request", error="x", app="p")])
    check("a request the peer could not read is wrong", len(s.wrong) == 1)


# ---------------------------------------------------------------------------
# Short real runs
# ---------------------------------------------------------------------------

LEGAL_ONLY = "plain=5,rare=5,server_error=1,illegal=0,fault=0,either=0,hello_op_reply=0"


def soak(build, kind, dropin, out, *extra):
    cmd = [sys.executable, os.path.join(HERE, "run_soak.py"), "--build", build, "--kind", kind,
           "--out", out, "--seed", "11", "--fresh", "1", "--fresh-ops", "60", "--warmup", "100"]
    if dropin:
        cmd += ["--dropin", dropin]
    p = subprocess.run(cmd + list(extra), capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout + p.stderr


def last_line(text):
    lines = [l for l in text.splitlines() if re.match(r"soak \S+ \S+: operations", l)]
    return lines[-1] if lines else ""


def live(build, dropin):
    kind = "preload" if dropin else "stock"
    with tempfile.TemporaryDirectory(prefix="opmsg-soak-selftest.") as tmp:
        rc, out = soak(build, kind, dropin, os.path.join(tmp, "clean"), "--ops", "400", "--weights", LEGAL_ONLY,
                       "--require-clean")
        check("%s with legal replies only passes --require-clean" % kind, rc == 0, out[-1500:])
        rc, out = soak(build, kind, dropin, os.path.join(tmp, "lie"), "--ops", "400", "--weights", LEGAL_ONLY,
                       "--peer-lie", "0.2", "--require-clean")
        m = re.search(r"wrong (\d+)", last_line(out))
        check("a peer that logs what it did not send is caught (wrong > 0, the run fails)",
              rc == 1 and m and int(m.group(1)) > 0 and "documents differ" in out, out[-1500:])
        rc, out = soak(build, kind, dropin, os.path.join(tmp, "crash"), "--ops", "200", "--weights", LEGAL_ONLY,
                       "--crash-at", "3", "--max-crashes", "1", "--require-clean")
        check("a crash is reported with its function and the run fails",
              rc == 1 and "crashes 1" in last_line(out) and "soak_crash_on_purpose" in out, out[-1500:])
        # Stock libmongoc, a real broken reader: it drops document sequences
        # (every version), and 1.23 crashes on some legal shapes.
        rc, out = soak(build, "stock", None, os.path.join(tmp, "stock"), "--ops", "300",
                       "--weights", "plain=0,rare=1,server_error=0,illegal=0,fault=0,either=0,hello_op_reply=0",
                       "--max-crashes", "2")
        m = re.search(r"wrong (\d+), crashes (\d+)", last_line(out))
        check("stock libmongoc given legal sequences is caught (wrong or crashes > 0)",
              m and int(m.group(1)) + int(m.group(2)) > 0, out[-1500:])


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "scorer":
        scorer()
    elif len(sys.argv) >= 4 and sys.argv[1] == "live" and sys.argv[2] == "--build":
        dropin = sys.argv[5] if len(sys.argv) >= 6 and sys.argv[4] == "--dropin" else None
        live(sys.argv[3], dropin)
    else:
        sys.stderr.write(__doc__)
        return 64
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
