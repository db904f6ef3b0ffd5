#!/usr/bin/python3
"""The specification's reply tests (spec/replies-valid.json, spec/replies-invalid.json: the files
upstream/specifications/0002 adds to mongodb/specifications) run against an implementation.

usage: spec_tests.py opmsg OPMSG             libopmsg, through `opmsg merge --bson --check spec`
       spec_tests.py prepare DIR             each case's reply as DIR/NNN.bin, and DIR/manifest.tsv
                                             (what tests/fork/conformance.c reads)
       spec_tests.py judge DIR RESULTS WHO   the results conformance.c wrote for DIR's cases
       spec_tests.py patch PATCH             PATCH (upstream/specifications/0002-*.patch) adds
                                             exactly the files of spec/ as source/message/tests/

Each case is judged by the test file alone, as the files' README tells a driver to: a case of
replies-valid.json passes when the reply is taken and the document handed to the caller is, byte for
byte, the BSON of its "merged" (canonical Extended JSON); a case of replies-invalid.json passes when
the reply is refused. Prints

    spec tests (WHO): cases N, as specified P

and exits 0 only when P = N (and N > 0).
"""
import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ("replies-valid.json", "replies-invalid.json")


class _Pairs(list):
    """A JSON object as its (key, value) pairs, in order."""


def _element(key, value):
    k = key.encode() + b"\0"
    if isinstance(value, _Pairs):  # a document
        if len(value) == 1 and value[0][0].startswith("$"):
            wrapper, text = value[0]
            if wrapper == "$numberInt":
                return b"\x10" + k + struct.pack("<i", int(text))
            if wrapper == "$numberLong":
                return b"\x12" + k + struct.pack("<q", int(text))
            if wrapper == "$numberDouble":
                return b"\x01" + k + struct.pack("<d", float(text))
            raise ValueError("a type these tests do not use: " + wrapper)
        return b"\x03" + k + _document(value)
    if isinstance(value, list):  # an array
        return b"\x04" + k + _document([(str(i), v) for i, v in enumerate(value)])
    if isinstance(value, bool):
        return b"\x08" + k + (b"\x01" if value else b"\x00")
    if value is None:
        return b"\x0a" + k
    if isinstance(value, str):
        v = value.encode() + b"\0"
        return b"\x02" + k + struct.pack("<i", len(v)) + v
    raise ValueError("not canonical Extended JSON: %r" % (value,))


def _document(pairs):
    body = b"".join(_element(k, v) for k, v in pairs)
    return struct.pack("<i", len(body) + 5) + body + b"\0"


def from_canonical_json(text):
    """The BSON of a document in canonical Extended JSON, keys in order and repeated keys kept (a
    dict would drop them: the tests have bodies that repeat a key, which the spec allows)."""
    return _document(json.loads(text, object_pairs_hook=_Pairs))


def cases():
    out = []
    for name in FILES:
        with open(os.path.join(HERE, "spec", name)) as fh:
            for t in json.load(fh)["tests"]:
                expected = None
                if "merged" in t:
                    expected = from_canonical_json(t["merged"])
                out.append((t["description"], bytes.fromhex(t["reply"]), expected))
    return out


def verdict(expected, accepted, got):
    """None when the outcome is the specified one, else why not."""
    if expected is None:
        return None if not accepted else "accepted a reply the spec says to refuse"
    if not accepted:
        return "refused a reply the spec says to take"
    if got != expected:
        return "handed %s, the spec says %s" % (got.hex(), expected.hex())
    return None


def report(who, results):
    bad = [(d, why) for d, why in results if why]
    for d, why in bad:
        print("  %s: %s" % (d, why))
    print("spec tests (%s): cases %d, as specified %d" % (who, len(results), len(results) - len(bad)))
    return 0 if results and not bad else 1


def run_opmsg(opmsg):
    results = []
    for description, reply, expected in cases():
        p = subprocess.run([opmsg, "merge", "--bson", "--check", "spec", "-"], input=reply,
                           capture_output=True)
        results.append((description, verdict(expected, p.returncode == 0, p.stdout)))
    return report("libopmsg", results)


def prepare(d):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "manifest.tsv"), "w") as manifest:
        manifest.write("# file\tdescription\n")
        for i, (description, reply, _) in enumerate(cases()):
            with open(os.path.join(d, "%03d.bin" % i), "wb") as fh:
                fh.write(reply)
            manifest.write("%03d.bin\t%s\n" % (i, description))
    return 0


def judge(d, results_path, who):
    got = {}
    with open(results_path) as fh:
        for line in fh:
            cols = line.rstrip("\n").split("\t")
            # FILE, accepted|rejected, HEX or "-", the error ("-" for none). A command error the
            # server's document states is still a reply taken.
            got[cols[0]] = (cols[1] == "accepted", bytes.fromhex(cols[2]) if cols[2] != "-" else b"")
    results = []
    for i, (description, _, expected) in enumerate(cases()):
        name = "%03d.bin" % i
        if name not in got:
            results.append((description, "no result"))
            continue
        accepted, doc = got[name]
        results.append((description, verdict(expected, accepted, doc)))
    return report(who, results)


def same_as_patch(patch):
    """Exit status 0 when the new files PATCH adds under source/message/tests/ are, byte for byte,
    spec/'s .json and .yml files (both ways: none missing, none extra)."""
    added, name = {}, None
    with open(patch, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for line in lines:
        if line.startswith("diff --git "):
            name = None
            path = line.split(" b/", 1)[1]
            if path.startswith("source/message/tests/") and path.endswith((".json", ".yml")):
                name = os.path.basename(path)
                added[name] = []
        elif name and line.startswith("+") and not line.startswith("+++"):
            added[name].append(line[1:])
        elif name and line.startswith("-- "):
            name = None
    ours = sorted(f for f in os.listdir(os.path.join(HERE, "spec")) if f.endswith((".json", ".yml")))
    bad = 0
    for f in sorted(set(ours) | set(added)):
        if f not in added or f not in ours:
            print("  %s: only in %s" % (f, "spec/" if f in ours else patch))
            bad += 1
            continue
        with open(os.path.join(HERE, "spec", f), encoding="utf-8") as fh:
            if fh.read() != "\n".join(added[f]) + "\n":
                print("  %s: differs" % f)
                bad += 1
    print("spec tests in the patch: files %d, the same %d" % (len(ours), len(ours) - bad))
    return 0 if ours and not bad else 1


def main(argv):
    if len(argv) == 3 and argv[1] == "opmsg":
        return run_opmsg(argv[2])
    if len(argv) == 3 and argv[1] == "prepare":
        return prepare(argv[2])
    if len(argv) == 3 and argv[1] == "patch":
        return same_as_patch(argv[2])
    if len(argv) == 5 and argv[1] == "judge":
        return judge(argv[2], argv[3], argv[4])
    sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
