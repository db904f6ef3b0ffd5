#!/usr/bin/python3
"""Compares a client's verdicts on the conformance vectors with libopmsg's.

Used by scripts/fork-conformance.sh and scripts/dropin-conformance.sh:

  conformance-compare.py --label LABEL --who fork|dropin --results FILE
      --manifest MANIFEST --data DATA_DIR --opmsg OPMSG --level LEVEL
      --differences DIFFERENCES.tsv [--report OUT.md] [--extra WORDS]

RESULTS has one line per vector: FILE, "accepted" or "rejected", the reply
document's bytes in hex ("-" when rejected), the error ("-" when none).
libopmsg's verdict is `opmsg merge --bson --check LEVEL DATA/FILE`: accepted
with the merged document, or rejected with the rule it names. Same verdict:
both accepted with the same document, or both rejected.

DIFFERENCES.tsv: FILE, WHO (fork, dropin or *), the reason; a difference it
lists is explained. Prints each difference and ends with
  LABEL: [WORDS, ]vectors V, same verdict S, different D
Exit status 0 when V >= 50, S >= 90 % of V and every difference is
explained, else 1.
"""
import argparse
import re
import subprocess
import sys


def libopmsg(opmsg, level, path):
    p = subprocess.run([opmsg, "merge", "--bson", "--check", level, path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode == 0:
        return "accepted", p.stdout.hex(), ""
    err = p.stderr.decode(errors="replace").strip().splitlines()
    m = re.match(r"opmsg: ([a-z0-9-]+):", err[0] if err else "")
    return "rejected", "-", (m.group(1) if m else (err[0] if err else "exit %d" % p.returncode))


def describe(verdict, detail):
    return verdict if not detail or detail == "-" else "%s (%s)" % (verdict, detail)


def main():
    ap = argparse.ArgumentParser()
    for a in ("label", "who", "results", "manifest", "data", "opmsg", "level", "differences"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--report")
    ap.add_argument("--extra", help="words after the label in the last line (\"libmongoc 1.23.1\")")
    args = ap.parse_args()

    reasons = {}
    with open(args.differences) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, who, reason = line.rstrip("\n").split("\t", 2)
            if who in ("*", args.who):
                reasons[name] = reason

    client = {}
    with open(args.results) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 4:
                client[cols[0]] = (cols[1], cols[2], cols[3])

    files = []
    with open(args.manifest) as f:
        for line in f:
            if not line.startswith("#") and line.strip():
                files.append(line.split("\t", 1)[0])

    same, diffs, missing = 0, [], []
    rows = []
    for name in files:
        if name not in client:
            missing.append(name)
            continue
        cv, chex, cerr = client[name]
        lv, lhex, lrule = libopmsg(args.opmsg, args.level, "%s/%s" % (args.data, name))
        if cv == lv and (cv == "rejected" or chex == lhex):
            same += 1
            rows.append((name, cv, lrule or "ok", "same"))
            continue
        if cv == lv:
            what = "both accept, different documents (%s: %d bytes, libopmsg: %d bytes)" % (
                args.who, len(chex) // 2, len(lhex) // 2)
        else:
            what = "%s %s, libopmsg %s" % (args.who, describe(cv, cerr if cv == "rejected" else ""),
                                           describe(lv, lrule))
        diffs.append((name, what, reasons.get(name)))
        rows.append((name, cv, lrule or "ok", "DIFFERENT"))

    v = len(files) - len(missing)
    for name in missing:
        print("  %s: no result from the client" % name)
    for name, what, reason in diffs:
        print("  different %s: %s: %s" % (name, what, reason or "UNEXPLAINED"))
    unexplained = sum(1 for d in diffs if not d[2])
    if args.report:
        with open(args.report, "w") as f:
            f.write("| vector | %s | libopmsg at %s | verdict |\n|---|---|---|---|\n" % (args.who, args.level))
            for name, cv, lr, s in rows:
                f.write("| %s | %s | %s | %s |\n" % (name, cv, lr, s))
    print("%s: libopmsg level %s, explained %d of %d differences" % (args.label, args.level,
                                                                      len(diffs) - unexplained, len(diffs)))
    print("%s: %svectors %d, same verdict %d, different %d" % (args.label, args.extra + ", " if args.extra else "",
                                                              v, same, len(diffs)))
    ok = v >= 50 and same * 10 >= v * 9 and unexplained == 0 and not missing
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
