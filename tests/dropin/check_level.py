#!/usr/bin/python3
"""OPMSG_MONGOC_CHECK: the drop-in checks every reply at the level it names
(libopmsg's spec, top-level, full; spec, the spec's rules and the
frames, when unset), says the level in its activation line, and on an
unknown value warns once and checks at spec without failing the
application.

  check_level.py --client dropin-client --dropin libopmsg-mongoc.so

Runs the unmodified libmongoc program against hostile_server.py's probes:
seq_bad_element (a sequence document whose second top-level element has
the unknown type 0x42, inside a sound frame; zlib_seq_bad_element, the same
inside OP_COMPRESSED) and seq_bad_utf8 (invalid
UTF-8 one level down in a sequence document), and seq_doc_overrun (a frame
error). What libmongoc 1.23.1 does with a reply the spec level
lets through was recorded and is asserted: it takes the merged body (ping finds
its "ok", find reads its cursor: neither iterates into the "extra" array)
and the application gets a reply libbson cannot print (bson_iter stops at
the bad element, so bson_as_relaxed_extended_json() returns NULL): the
client says "unprintable". Exit 0 pass, 1 fail.
"""
import argparse
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_server as hs  # noqa: E402
import run_case  # noqa: E402

LEVELS = ("spec", "top-level", "full")
failures = []


def check(cond, what):
    print("%s %s" % ("PASS" if cond else "FAIL", what))
    if not cond:
        failures.append(what)
    return cond


def run(client, dropin, mode, op, env, debug=True):
    server = hs.Server(mode).start()
    try:
        return run_case.run_op(client, server.port, op, dropin, env_extra=env, debug=debug)
    finally:
        server.stop()


def lines(stderr, word):
    return [l for l in stderr.splitlines() if word in l]


# libmongoc's own log lines ("2026/12/02 05:24:20.0013: [ 1116]:  WARNING:
# mongoc: Falling back to malloc for counters." where a root has no shared
# memory for its counters) are libmongoc's business, not the drop-in's.
MONGOC_LOG = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+: \[ *\d+\]: +\w+: +\w+: ")


def ours(stderr):
    return [l for l in stderr.splitlines() if not MONGOC_LOG.match(l)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", required=True)
    ap.add_argument("--dropin", required=True)
    args = ap.parse_args()
    c, d = args.client, args.dropin

    refused = ("error", "3.14 ")  # libmongoc's MONGOC_ERROR_PROTOCOL_INVALID_REPLY
    # (env, mode, op) -> (level the drop-in must report, kind, detail prefix,
    # the rule of the refusal or None)
    cases = [
        # The default, spec: a sequence document's elements are not read
        # (libbson's iterator reads them): accepted and
        # merged; libmongoc takes it, libbson cannot print it; find reads
        # its cursor and ignores "extra".
        ({}, "seq_bad_element", "ping", "spec", ("unprintable", "reply of "), None),
        ({"OPMSG_MONGOC_CHECK": ""}, "seq_bad_element", "ping", "spec", ("unprintable", "reply of "), None),
        ({"OPMSG_MONGOC_CHECK": "spec"}, "seq_bad_element", "find", "spec",
         ("ok", '[{ "_id" : 1, "a" : "x" }, { "_id" : 2, "a" : "y" }]'), None),
        ({}, "zlib_seq_bad_element", "ping", "spec", ("unprintable", "reply of "), None),
        # top-level and full: the bad element is refused.
        ({"OPMSG_MONGOC_CHECK": "top-level"}, "seq_bad_element", "ping", "top-level", refused,
         "document-element"),
        ({"OPMSG_MONGOC_CHECK": "full"}, "seq_bad_element", "ping", "full", refused,
         "document-element"),
        # 0.4's "frames" is no level since 0.5.0 (the unknown values below).
        # The message inside OP_COMPRESSED is checked at the same level.
        ({"OPMSG_MONGOC_CHECK": "spec"}, "zlib_seq_bad_element", "ping", "spec",
         ("unprintable", "reply of "), None),
        ({"OPMSG_MONGOC_CHECK": "top-level"}, "zlib_seq_bad_element", "ping", "top-level",
         refused, "document-element"),
        # Nested invalid UTF-8: only full reads that deep.
        ({"OPMSG_MONGOC_CHECK": "top-level"}, "seq_bad_utf8", "ping", "top-level",
         ("unprintable", "reply of "), None),
        ({"OPMSG_MONGOC_CHECK": "full"}, "seq_bad_utf8", "ping", "full", refused, "invalid-utf8"),
        # A frame error is refused at every level, spec included.
        ({}, "seq_doc_overrun", "ping", "spec", refused, "sequence-overrun"),
        ({}, "body_no_terminator", "ping", "spec", refused, "document-terminator"),
        ({"OPMSG_MONGOC_CHECK": "spec"}, "seq_doc_overrun", "ping", "spec", refused,
         "sequence-overrun"),
        ({"OPMSG_MONGOC_CHECK": "top-level"}, "body_no_terminator", "ping", "top-level", refused,
         "document-terminator"),
        # Legal replies stay right at every level.
        ({}, "find_seq", "find", "spec",
         ("ok", '[{ "_id" : 1, "a" : "x" }, { "_id" : 2, "a" : "y" }]'), None),
        ({"OPMSG_MONGOC_CHECK": "top-level"}, "find_seq", "find", "top-level",
         ("ok", '[{ "_id" : 1, "a" : "x" }, { "_id" : 2, "a" : "y" }]'), None),
        ({"OPMSG_MONGOC_CHECK": "full"}, "seq_after", "ping", "full",
         ("ok", '{ "ok" : 1.0, "extra" : [ { "x" : 1 }, { "x" : 2 } ] }'), None),
    ]
    for env, mode, op, level, (kind, detail), rule in cases:
        what = "%s %s/%s" % (" ".join("%s=%r" % kv for kv in env.items()) or "(unset)", mode, op)
        k, det, err = run(c, d, mode, op, env)
        ok = check(k == kind and det.startswith(detail), "%s: %s %s" % (what, k, det))
        ok &= check(len(lines(err, "opmsg-mongoc: active: ")) == 1
                    and lines(err, "opmsg-mongoc: active: ")[0].endswith(", check " + level),
                    "%s: the activation line names check %s" % (what, level))
        rejected = lines(err, "opmsg-mongoc: rejected ")
        ok &= check(all(l.endswith("(%s)" % rule) for l in rejected) and (len(rejected) > 0) == bool(rule),
                    "%s: rejected %s" % (what, rule or "nothing"))
        ok &= check(not lines(err, "OPMSG_MONGOC_CHECK"), "%s: no warning" % what)
        if not ok:
            sys.stdout.write(err[-2000:])

    # An unknown value: one warning naming it and the three levels, then
    # spec (the bad element is let through, as unset), and
    # the application runs on. Said without OPMSG_MONGOC_DEBUG too, and a
    # control character in the value does not break the line.
    warning = ("opmsg-mongoc: OPMSG_MONGOC_CHECK=%s is not a check level "
               "(spec, top-level or full); checking at spec")
    for value, shown, debug, mode, op, want in [
            ("bogus", "bogus", True, "seq_bad_element", "ping", ("unprintable", "reply of ")),
            ("frames", "frames", True, "seq_bad_element", "ping", ("unprintable", "reply of ")),
            ("Frames", "Frames", True, "seq_bad_utf8", "ping", ("unprintable", "reply of ")),
            ("fr\names", "fr?ames", False, "plain", "ping", ("ok", '{ "ok" : 1.0 }')),
            ("none", "none", False, "seq_bad_element", "find",
             ("ok", '[{ "_id" : 1, "a" : "x" }, { "_id" : 2, "a" : "y" }]'))]:
        what = "OPMSG_MONGOC_CHECK=%r (debug %s) %s/%s" % (value, debug, mode, op)
        k, det, err = run(c, d, mode, op, {"OPMSG_MONGOC_CHECK": value}, debug)
        ok = check(k == want[0] and det.startswith(want[1]), "%s: %s %s" % (what, k, det))
        ok &= check(lines(err, "OPMSG_MONGOC_CHECK") == [warning % shown],
                    "%s: one warning line" % what)
        active = lines(err, "opmsg-mongoc: active: ")
        ok &= check(active[-1:] == [] if not debug else
                    (len(active) == 1 and active[0].endswith(", check spec")),
                    "%s: %s" % (what, "the activation line says spec" if debug
                                else "nothing else without OPMSG_MONGOC_DEBUG"))
        if not debug:
            ok &= check(len(ours(err)) == 1, "%s: stderr is the warning alone" % what)
        if not ok:
            sys.stdout.write(err[-2000:])

    print("%d check(s) failed" % len(failures) if failures else "check-level: all cases passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
