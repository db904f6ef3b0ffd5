#!/usr/bin/env python3
"""test-libmongoc on upstream's CTest registration, and two runs compared, for
scripts/libmongoc-suite.sh and scripts/fork-check.sh (docs/libmongoc-suite.md
and docs/fork.md say how they use it; tests/fork/test_junit_compare.py).

  run --exe BIN --src DIR --out DIR [--jobs N] [--timeout S] [--repeat N]
      [--match PREFIX]... [--names FILE] [--strip PATH]... [--test-env K=V]...
      [--stop-file FILE] -- ENV...
    OUT/CTestTestfile.cmake includes the tree's build/cmake/LoadTests.cmake;
    ctest runs it under `env -i ENV` (--test-env: for the tests only), the
    fixtures left out, into OUT/junit.xml; a stop file that is no longer empty
    ends the run. OUT/results.tsv: name (without "mongoc"), result (pass fail
    skip timeout absent), seconds, crash (ctest's "Exception: X" or -),
    active (the drop-in's "opmsg-mongoc: active": yes no -), message.
  compare A B --out DIR --labels LA LB [--again A2 B2] [--explained FILE]...
    Tests whose results differ (one side's only too) go to DIR/differ.list
    (those both sides register, to run again: --again); a test whose results
    overlap between the sides over the tries is flaky. An explanation is the
    reason of the first "pattern<TAB>reason" line of the files, in order,
    whose shell pattern matches. Writes rows.md, flaky.md, unexplained.txt,
    crashes.txt (B's) and prints: RUN P0 F0 S0 T0 C0 P1 F1 S1 T1 C1
    DIFFERENCES EXPLAINED FLAKY INACTIVE (B's tests without "active").
"""
import argparse, fnmatch, os, re, signal, subprocess, sys, time
import xml.etree.ElementTree as ET

FAILISH = re.compile(r"FAIL|[Ff]ail|[Aa]ssert|[Ee]rror|precondition|Segmentation|Abort|timed out|expected|contain")
NOISE = re.compile(r'^ *("|\{|\}|\]|\[)|^opmsg-mongoc: active|^@@ctest|^ *$')
STATUS = re.compile(r"Test\s+#\d+: (\S+) \.*\s*(.*?)\s+[0-9.]+ sec")


def cm_regex(names):
    esc = lambda s: re.sub(r"([.\[\]()*+?^$|\\])", r"\\\1", s)
    return "^mongoc(" + "|".join(esc(n) for n in names) + ")"


def run(a):
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    for f in ("junit.xml", "ctest.log", "results.tsv"):
        if os.path.exists(os.path.join(out, f)):
            os.remove(os.path.join(out, f))
    test_env = ";".join(["TEST_KMS_PROVIDER_HOST=localhost:14987"] + a.test_env)
    with open(os.path.join(out, "CTestTestfile.cmake"), "w") as f:
        f.write(f"""# Written by opmsg's scripts/lib/junit-compare.py: upstream's registration of test-libmongoc.
set (TEST_LIBMONGOC_EXE [[{os.path.abspath(a.exe)}]])
set (SRC_ROOT [[{os.path.abspath(a.src)}]])
include ("${{SRC_ROOT}}/build/cmake/LoadTests.cmake")
foreach (t IN LISTS MONGOC_TESTS lines)
   if (t MATCHES "^/")
      set_tests_properties ("mongoc${{t}}" PROPERTIES TIMEOUT {a.timeout} ENVIRONMENT [[{test_env}]])
   endif ()
endforeach ()
""")
    names = None
    if a.names:
        names = [l.strip() for l in open(a.names) if l.strip()]
    cmd = ["ctest", "--test-dir", out, "-j", str(a.jobs), "--timeout", str(a.timeout),
           "--repeat", f"until-pass:{a.repeat}", "--output-junit", os.path.join(out, "junit.xml"),
           "-FA", ".*", "--test-output-size-passed", "4096", "--test-output-size-failed", "65536"]
    if names is not None:
        cmd += ["-R", cm_regex(names) + "$"]
    elif a.match:
        cmd += ["-R", cm_regex(a.match)]
    t0 = time.time()
    stopped = ""
    with open(os.path.join(out, "ctest.log"), "w") as log:
        if names != []:
            ctest = subprocess.Popen(["env", "-i"] + a.env + cmd, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
            while ctest.poll() is None:
                # (A stop file that is no longer empty, as when the server the
                # tests use is gone, ends the run: its tests would only wait.)
                if a.stop_file and os.path.exists(a.stop_file) and os.path.getsize(a.stop_file):
                    stopped = open(a.stop_file).readline().strip()
                    os.killpg(ctest.pid, signal.SIGTERM)
                    ctest.wait()
                    break
                time.sleep(1)
    if stopped:
        with open(os.path.join(out, "junit.xml"), "w") as f:
            f.write("<testsuite>\n" + "".join(
                f'<testcase name="mongoc{n}" status="fail"><failure/><system-out>not run: {stopped}</system-out></testcase>\n'
                for n in names or []) + "</testsuite>\n")
    with open(os.path.join(out, "seconds"), "w") as f:
        f.write("%d\n" % round(time.time() - t0))
    with open(os.path.join(out, "strip"), "w") as f:
        f.writelines(s + "\n" for s in a.strip)
    res = load(out)
    if names is None:
        names = list(res)
    with open(os.path.join(out, "results.tsv"), "w") as f:
        for n in names:
            r = res.get(n) or {"result": "absent", "secs": "0", "crash": "-", "active": "-", "msg": "not registered"}
            f.write("\t".join([n, r["result"], r["secs"], r["crash"], r["active"], r["msg"]]) + "\n")
    if not os.path.exists(os.path.join(out, "junit.xml")) and names != []:
        sys.exit(f"junit-compare: ctest wrote no JUnit file (log: {out}/ctest.log)")


def message(text, strip):
    body = [l for l in text.splitlines() if not NOISE.search(l)]
    refusal = next((l for l in body if re.match(r"opmsg-mongoc: (rejected|refused)", l)), "")
    fails = [l for l in body if FAILISH.search(l) and not l.startswith("opmsg-mongoc")][:2]
    last = body[-1] if body else ""
    parts = ([refusal] if refusal else []) + fails
    if last and last != (fails[-1] if fails else None) and last != refusal:
        parts.append(last)
    msg = " ".join(parts)
    for s in strip:
        msg = msg.replace(s.rstrip("/") + "/", "")
    return re.sub(r"\s+", " ", msg).strip()[:300]


def load(d):
    """A run folder's results: name -> {result, secs, crash, active, msg}."""
    status = {}
    strip = [l.strip() for l in open(os.path.join(d, "strip"))] if os.path.exists(os.path.join(d, "strip")) else []
    try:
        for line in open(os.path.join(d, "ctest.log"), errors="replace"):
            m = STATUS.search(line)
            if m:
                status[m.group(1)] = m.group(2)
    except FileNotFoundError:
        pass
    res = {}
    junit = os.path.join(d, "junit.xml")
    if not os.path.exists(junit):
        return res
    for tc in ET.parse(junit).getroot().iter("testcase"):
        full = tc.get("name")
        if not full.startswith("mongoc/"):
            continue
        out = tc.findtext("system-out") or ""
        st = status.get(full, "")
        # (ctest's "***Exception:" with the kind before or after it; a test's
        # own abort, "Subprocess aborted", is a failure, not a crash.)
        kind = re.sub(r"\*+|Exception:", " ", st).split()
        crash = kind[0] if "Exception" in st and not re.search("aborted|Interrupt", st) and kind else "-"
        kind = tc.get("status")
        if kind == "run":
            result = "pass"
        elif kind == "notrun" and "@@ctest-skipped@@" in out:
            result = "skip"
        elif "Timeout" in st:
            result = "timeout"
        else:
            result = "fail"
        active = "yes" if "opmsg-mongoc: active:" in out else "no" if "opmsg-mongoc: inactive" in out else "-"
        msg = ""
        if result in ("fail", "timeout"):
            msg = message(out, strip)
            if result == "timeout":
                msg = "no result in time" + (f"; {msg}" if msg else "")
            msg = msg or re.sub(r"\*+", " ", st).strip() or "failed"
        res[full[len("mongoc"):]] = {"result": result, "secs": "%.2f" % float(tc.get("time") or 0),
                                     "crash": crash, "active": active, "msg": msg or "-"}
    return res


def explain(name, files):
    for f in files:
        if not os.path.isfile(f):
            continue
        for line in open(f):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            pat, _, reason = line.partition("\t")
            if fnmatch.fnmatchcase(name, pat):
                return reason or "(no reason given)"
    return ""


def cell(s):
    return s.replace("|", "\\|").replace("`", "'")


def compare(a):
    A, B = load(a.a), load(a.b)
    A2, B2 = (load(a.again[0]), load(a.again[1])) if a.again else ({}, {})
    la, lb = a.labels
    absent = {"result": "absent", "msg": "not registered", "crash": "-", "active": "-"}
    names = list(A) + [n for n in B if n not in A]
    differ = [n for n in names if A.get(n, absent)["result"] != B.get(n, absent)["result"]]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "differ.list"), "w") as f:
        f.writelines(n + "\n" for n in differ if n in A and n in B)  # (to run again)
    rows, flaky, unexplained, nexpl = [], [], [], 0
    for n in differ:
        ra, rb = A.get(n, absent), B.get(n, absent)
        ta = [ra["result"]] + ([A2[n]["result"]] if n in A2 else [])
        tb = [rb["result"]] + ([B2[n]["result"]] if n in B2 else [])
        if a.again and "absent" not in ta + tb and set(ta) & set(tb):
            m = rb["msg"] if rb["msg"] != "-" else ra["msg"]
            flaky.append(f"| `{n}` | {','.join(ta)} | {','.join(tb)} | {cell(m)} |\n")
            continue
        reason = explain(n, a.explained)
        if reason:
            nexpl += 1
        else:
            unexplained.append(n)
        msg = rb["msg"] if ra["result"] == "pass" else f"{la}: {ra['msg']}; {lb}: {rb['msg']}"
        rows.append(f"| `{n}` | {ra['result']} | {rb['result']} | {cell(msg)} | {cell(reason or '**unexplained**')} |\n")
    for f, lines in (("rows.md", rows), ("flaky.md", flaky), ("unexplained.txt", [n + "\n" for n in unexplained]),
                     ("crashes.txt", [n + "\n" for n, r in B.items() if r["crash"] != "-"])):
        with open(os.path.join(a.out, f), "w") as fh:
            fh.writelines(lines)

    def counts(r):
        c = [sum(1 for x in r.values() if x["result"] == k) for k in ("pass", "fail", "skip", "timeout")]
        return c + [sum(1 for x in r.values() if x["crash"] != "-")]
    inactive = sum(1 for x in B.values() if x["active"] != "yes")
    print(" ".join(map(str, [len(names)] + counts(A) + counts(B) + [len(rows), nexpl, len(flaky), inactive])))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    for o in ("--exe", "--src", "--out"):
        r.add_argument(o, required=True)
    for o, d in (("--jobs", 2), ("--timeout", 60), ("--repeat", 3)):
        r.add_argument(o, type=int, default=d)
    for o in ("--match", "--strip", "--test-env"):
        r.add_argument(o, action="append", default=[])
    r.add_argument("--names")
    r.add_argument("--stop-file")
    r.add_argument("env", nargs="*")
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--out", required=True)
    c.add_argument("--labels", nargs=2, default=["A", "B"])
    c.add_argument("--again", nargs=2)
    c.add_argument("--explained", action="append", default=[])
    a = p.parse_args()
    run(a) if a.cmd == "run" else compare(a)


if __name__ == "__main__":
    main()
