#!/usr/bin/python3
"""Runs the unmodified libmongoc program (dropin-client) against the hostile
test server, stock and/or with LD_PRELOAD=libopmsg-mongoc.so, and judges each
result.

  run_case.py --client C --dropin D --mode M [--valgrind]
      asserts: with the drop-in, mode M gives the right result for ping, find
      and insert_many (legal reply: the right answer, merged fields visible;
      illegal reply: a clean error) and nothing crashes; with --valgrind
      also no memory error or leak. Exit 0 pass, 1 fail.
  run_case.py --client C --dropin D --mode M --ops stream
      the same for a mode of hostile_server.MONITOR_MODES (the default
      operation there): a pooled client whose server monitor streams, and
      the awaitable hellos answered as the mode says.
  run_case.py --client C --dropin D --table OUT.md
      runs every mode stock and with the drop-in and writes the comparison
      table (recorded, not asserted: exit 0 unless the harness itself fails).
  run_case.py --client C --dropin D --demo
      make demo's part (scripts/demo-dropin.sh): a few of the replies, stock
      and with the drop-in, each answer shown with its verdict, and a count
      of each side. Exit 1 when the drop-in got one wrong.
  run_case.py --client C [--dropin D] --all
      asserts every mode (as --mode does) and ends with the line
      "harness RIGHT/MODES, crashes N". Without --dropin (here and with
      --mode) nothing is preloaded: the client runs with whatever libmongoc
      it loads, e.g. a patched one installed as the system's (make fork-debs).
"""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_server as hs  # noqa: E402

OPS = ("ping", "find", "insert")
TIMEOUT = 60  # seconds: only a hang reaches it


def _no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def uri(port):
    return ("mongodb://127.0.0.1:%d/?serverSelectionTimeoutMS=5000"
            "&connectTimeoutMS=5000&socketTimeoutMS=20000" % port)


def run_op(client, port, op, dropin=None, valgrind=False, env_extra=None, debug=True):
    """Runs one operation; returns (kind, detail, stderr) where kind is
    ok / error / unprintable (libmongoc accepted a reply libbson cannot
    print) / crash / hang / valgrind. env_extra: more environment (the
    drop-in's OPMSG_MONGOC_* variables); debug: OPMSG_MONGOC_DEBUG=1 with
    the drop-in."""
    env = dict(os.environ)
    for name in list(env):
        if name == "LD_PRELOAD" or name.startswith("OPMSG_MONGOC_"):
            del env[name]
    if dropin:
        env["LD_PRELOAD"] = dropin
        if debug:
            env["OPMSG_MONGOC_DEBUG"] = "1"
    env.update(env_extra or {})
    cmd = [client, uri(port), op]
    if valgrind:
        cmd = ["valgrind", "--quiet", "--error-exitcode=1", "--leak-check=full",
               "--errors-for-leak-kinds=definite,possible",
               "--show-leak-kinds=definite,possible"] + cmd
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                           errors="replace", timeout=TIMEOUT, preexec_fn=_no_core)
    except subprocess.TimeoutExpired:
        return "hang", "no answer after %ds" % TIMEOUT, ""
    if p.returncode < 0:
        return "crash", signal.Signals(-p.returncode).name, p.stderr
    line = next((l for l in p.stdout.splitlines() if l.startswith("RESULT ")), "")
    if valgrind and p.returncode == 1:
        return "valgrind", "valgrind reported errors", p.stderr
    if p.returncode == 0 and line.startswith("RESULT ok "):
        return "ok", line[len("RESULT ok "):], p.stderr
    if p.returncode == 2 and line.startswith("RESULT error "):
        return "error", line[len("RESULT error "):], p.stderr
    if p.returncode == 3 and line.startswith("RESULT unprintable "):
        return "unprintable", line[len("RESULT unprintable "):], p.stderr
    return "crash", "exit %d: %s" % (p.returncode, (line or p.stderr[-300:]).strip()), p.stderr


def expected_ping_fields(mode):
    """Fields the merged ping reply must show for a legal mode."""
    extra = hs.EXTRA
    return {
        "seq_after": {"extra": extra}, "seq_before": {"extra": extra},
        "checksum_ok_seq": {"extra": extra}, "zlib_seq": {"extra": extra},
        "empty_seq": {"extra": []},
        "three_seqs": {"sa": extra, "sb": extra, "sc": extra},
        "eight_seqs": {"s%d" % i: [{"i": i}] for i in range(8)},
        "find_seq": {"cursor": {"firstBatch": hs.FIND_DOCS}},
    }.get(mode, {})


def has_fields(got, want):
    """got is want, or, for a document, holds want's fields (find_seq's
    cursor keeps the body's id and ns beside the merged firstBatch)."""
    if isinstance(want, dict) and isinstance(got, dict):
        return all(has_fields(got.get(k), v) for k, v in want.items())
    return got == want


def judge_stream(mode, value):
    """(right, short label) for the stream operation: both pings answered,
    the monitor streamed, and its awaitable hellos ended as the mode allows:
    a legal answer read (the client waits for two), an illegal one refused
    (the heartbeat failed) or, where libmongoc reads it correctly as what it
    is (1.30 and 2.5 read an OP_REPLY through mcd_rpc_message_get_body),
    read. The crash this mode exists for is judged before."""
    pings = (value.get("ping"), value.get("ping_after"))
    started = value.get("awaited_started", 0)
    succeeded = value.get("awaited_succeeded", 0)
    failed = value.get("awaited_failed", 0)
    if pings != ("ok", "ok"):
        return False, "pings %s, %s" % pings
    if started == 0:
        return False, "the monitor never sent an awaitable hello"
    if hs.MONITOR_MODES[mode]:
        return (succeeded >= 2 and failed == 0), "awaited %d read, %d failed" % (succeeded, failed)
    if failed > 0:
        return True, "refused"
    return succeeded > 0, "read (%d)" % succeeded


def judge(mode, op, kind, detail):
    """(right, short label) for one result."""
    if mode in hs.OP_REPLY_MODES and kind == "error":
        return True, "error"
    # OP_REPLY_MODES otherwise as a legal reply: the right answer.
    legal = hs.MODES.get(mode, hs.MONITOR_MODES.get(mode, True))
    if kind in ("crash", "hang", "valgrind"):
        return False, "%s (%s)" % (kind.upper(), detail)
    if op == "stream":
        # One answer per run, legal or not: the monitor's verdict is in it.
        if kind != "ok":
            return False, kind + ": " + detail
        return judge_stream(mode, json.loads(detail))
    if not legal:
        return (kind == "error"), ("error" if kind == "error" else "accepted")
    if kind in ("error", "unprintable"):
        return False, kind + ": " + detail
    try:
        value = json.loads(detail)
    except ValueError:
        return False, "unparsable: " + detail
    if op == "find":
        return (value == hs.FIND_DOCS), "%d docs" % len(value)
    if op == "threads":
        ping = value.get("ping", {})
        want = expected_ping_fields(mode)
        return (value.get("operations") == 80 and all(has_fields(ping.get(k), v) for k, v in want.items()),
                "%s operations right" % value.get("operations"))
    if op == "insert":
        return (value.get("insertedCount") == 3), "insertedCount=%s" % value.get("insertedCount")
    if value.get("ok") != 1:
        return False, "ok=%r" % value.get("ok")
    for key, want in expected_ping_fields(mode).items():
        if not has_fields(value.get(key), want):
            return False, "%s missing or wrong" % key
    return True, "ok"


def run_mode(client, mode, dropin=None, valgrind=False, ops=OPS):
    """[(op, right, label, stderr)] for one mode, each op on a fresh server."""
    results = []
    for op in ops:
        server = hs.Server(mode).start()
        try:
            kind, detail, stderr = run_op(client, server.port, op, dropin, valgrind)
        finally:
            server.stop()
        right, label = judge(mode, op, kind, detail)
        results.append((op, right, label, stderr))
    return results


def verdict(results):
    """(all right, crashed or hung) for one mode's results."""
    crashed = any(r[2].startswith(("CRASH", "HANG")) for r in results)
    return all(r[1] for r in results), crashed


def short(right, label):
    if right:
        return "right"
    for word in ("CRASH", "HANG", "VALGRIND"):
        if label.startswith(word):
            return label.split(" ", 1)[1].strip("()") if word == "CRASH" else word.lower()
    return "WRONG (%s)" % label[:40]


def cell(results):
    """One table cell: each operation's verdict."""
    return "; ".join("%s: %s" % (r[0], short(r[1], r[2])) for r in results)


def mongoc_version(client, dropin):
    """The libmongoc version the client runs with, as the drop-in's gate
    reports it when it loads (the client is linked with libmongoc)."""
    env = dict(os.environ, LD_PRELOAD=dropin, OPMSG_MONGOC_DEBUG="1")
    p = subprocess.run([client], env=env, capture_output=True, text=True,
                       errors="replace", timeout=TIMEOUT)
    for line in p.stderr.splitlines():
        for word in ("active: libmongoc ", "inactive: libmongoc "):
            if word in line:
                return line.split(word, 1)[1].split()[0]
    return "(unknown version)"


def table(client, dropin, out):
    rows, stock_right, stock_crash, dropin_right = [], 0, 0, 0
    dropin_crash = stock_wrong = dropin_wrong = 0
    version = mongoc_version(client, dropin)
    for mode, legal in hs.MODES.items():
        stock = run_mode(client, mode)
        pre = run_mode(client, mode, dropin)
        s_ok, s_crash = verdict(stock)
        d_ok, d_crash = verdict(pre)
        stock_right += s_ok
        dropin_right += d_ok
        stock_crash += s_crash
        dropin_crash += d_crash
        stock_wrong += not s_ok and not s_crash
        dropin_wrong += not d_ok and not d_crash
        rows.append("| %s | %s | %s | %s |" % (
            mode, "legal" if legal else "illegal", cell(stock), cell(pre)))
        print(rows[-1], flush=True)
    n = len(hs.MODES)
    # Outside the 36 (so their counts stay comparable): the pooled client's
    # streaming monitor (MONITOR_MODES) and OP_REPLY answering commands
    # (OP_REPLY_MODES), where a clean error and the right answer are both
    # right.
    extra_rows, x_stock_right, x_stock_crash, x_dropin_right = [], 0, 0, 0
    extras = [(m, ("stream",), "legal" if legal else "illegal")
              for m, legal in hs.MONITOR_MODES.items()]
    extras += [(m, OPS, "illegal, readable") for m in hs.OP_REPLY_MODES]
    for mode, ops, what in extras:
        stock = run_mode(client, mode, ops=ops)
        pre = run_mode(client, mode, dropin, ops=ops)
        x_stock_right += all(r[1] for r in stock)
        x_dropin_right += all(r[1] for r in pre)
        x_stock_crash += any(r[2].startswith(("CRASH", "HANG")) for r in stock)
        extra_rows.append("| %s | %s | %s | %s |" % (
            mode, what, cell(stock), cell(pre)))
        print(extra_rows[-1], flush=True)
    with open(out, "w") as f:
        f.write("# libmongoc %s: stock vs libopmsg-mongoc.so (generated %s)\n\n" %
                (version, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
        f.write("\"right\": a legal reply gave the right result (merged fields visible,\n"
                "find returned its 2 documents, insert_many counted 3); an illegal\n"
                "one gave a clean error. Anything else is named.\n\n")
        f.write("| mode | reply | stock libmongoc %s | with the drop-in |\n|---|---|---|---|\n"
                % version)
        f.write("\n".join(rows) + "\n\n")
        f.write("More cases: a pooled client whose server monitor streams (op stream: "
                "awaitable hellos), and OP_REPLY answering commands:\n\n"
                "| mode | reply | stock libmongoc %s | with the drop-in |\n|---|---|---|---|\n"
                % version)
        f.write("\n".join(extra_rows) + "\n\n")
        # The last line: make check-distros prints it.
        f.write("Stock: %d of %d cases right, %d crashed or hung, %d wrong. "
                "Drop-in: %d of %d right, %d crashed or hung, %d wrong. "
                "More cases: stock %d of %d right, %d crashed or hung; drop-in %d of %d "
                "right.\n" %
                (stock_right, n, stock_crash, stock_wrong, dropin_right, n,
                 dropin_crash, dropin_wrong, x_stock_right, len(extras),
                 x_stock_crash, x_dropin_right, len(extras)))
    # One line for scripts (make check-distros collects them).
    print("dropin-table %s: modes %d, stock right %d crashed %d wrong %d, "
          "drop-in right %d crashed %d wrong %d; more cases %d, stock right %d "
          "crashed %d, drop-in right %d -> %s" %
          (version, n, stock_right, stock_crash, stock_wrong, dropin_right,
           dropin_crash, dropin_wrong, len(extras), x_stock_right,
           x_stock_crash, x_dropin_right, out))
    return 0


def all_modes(client, dropin):
    """Every mode asserted, one line each, then the summary line."""
    right = crashes = 0
    for mode in hs.MODES:
        results = run_mode(client, mode, dropin)
        ok, crashed = verdict(results)
        if dropin and not all("opmsg-mongoc: active" in r[3] for r in results):
            ok = False
            print("FAIL %s: the drop-in did not report itself active" % mode)
        right += ok
        crashes += crashed
        print("%s %s: %s" % ("PASS" if ok else "FAIL", mode,
                             "; ".join("%s: %s" % (r[0], short(r[1], r[2])) for r in results)),
              flush=True)
    print("harness %d/%d, crashes %d" % (right, len(hs.MODES), crashes))
    return 0 if right == len(hs.MODES) and crashes == 0 else 1


# make demo's replies: the mode, the operation, what the reply is.
DEMO = (
    ("checksum_ok", "ping", "a legal reply with a correct CRC-32C checksum"),
    ("seq_before", "ping", "a legal reply whose document sequence comes before the body"),
    ("find_seq", "find", "a legal find reply whose batch is a cursor.firstBatch sequence"),
    ("trailing_bytes", "ping", "an illegal reply with 3 stray bytes after the last section"),
    ("noop_wrong_size", "ping", "an illegal OP_COMPRESSED (noop) whose uncompressedSize is too small"),
    ("size_lie_huge", "ping", "an illegal OP_COMPRESSED claiming an uncompressed size near 2^31"),
)


def demo(client, dropin):
    """DEMO's replies to the libmongoc the client loads, then with the
    drop-in, judged as the harness judges them (judge())."""
    version = mongoc_version(client, dropin)
    print("libopmsg-mongoc.so: the OP_MSG reply path of this system's libmongoc %s, replaced\n"
          "without rebuilding anything (LD_PRELOAD). Same program, same server, same replies:"
          % version)
    sides = (("stock libmongoc " + version, None), ("with libopmsg-mongoc", dropin))
    right, crashed = [0, 0], [0, 0]
    for mode, op, what in DEMO:
        print("\n== %s: %s (%s)" % (mode, what, op))
        for i, (name, pre) in enumerate(sides):
            server = hs.Server(mode).start()
            try:
                kind, detail, stderr = run_op(client, server.port, op, pre)
            finally:
                server.stop()
            ok, why = judge(mode, op, kind, detail)
            right[i] += ok
            crashed[i] += kind in ("crash", "hang")
            if kind in ("crash", "hang"):
                said = why
            else:
                head = "right" if ok else "WRONG" if why.startswith(kind) else "WRONG (%s)" % why
                said = "%s, %s %s" % (head, "answered" if kind == "ok" else kind + ":", detail)
            print("   %-28s %s" % (name + ":", said))
            rejected = [l for l in stderr.splitlines() if l.startswith("opmsg-mongoc: rejected")]
            if rejected:
                print("      " + rejected[0])
    print()
    for i, (name, _) in enumerate(sides):
        print("%s: %d of %d right, %d crashed or hung" % (name, right[i], len(DEMO), crashed[i]))
    print("Every case, per libmongoc version: tests/dropin, docs/dropin.md.")
    return 0 if right[1] == len(DEMO) else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", required=True)
    ap.add_argument("--dropin", help="libopmsg-mongoc.so to preload (none: the client's own libmongoc)")
    ap.add_argument("--mode")
    ap.add_argument("--valgrind", action="store_true")
    ap.add_argument("--table")
    ap.add_argument("--all", action="store_true", help="every mode, then a summary line")
    ap.add_argument("--demo", action="store_true", help="make demo's few replies, shown")
    ap.add_argument("--ops", help="comma-separated: ping,find,insert,threads,stream "
                    "(default ping,find,insert; stream for a monitor mode)")
    args = ap.parse_args()
    if args.table:
        if not args.dropin:
            ap.error("--table needs --dropin")
        return table(args.client, args.dropin, args.table)
    if args.demo:
        if not args.dropin:
            ap.error("--demo needs --dropin")
        return demo(args.client, args.dropin)
    if args.all:
        return all_modes(args.client, args.dropin)
    runnable = list(hs.MODES) + list(hs.MONITOR_MODES) + list(hs.OP_REPLY_MODES)
    if args.mode not in runnable:
        ap.error("--mode must be one of: " + " ".join(runnable))
    ops = args.ops or ("stream" if args.mode in hs.MONITOR_MODES else ",".join(OPS))
    failed = 0
    for op, right, label, stderr in run_mode(args.client, args.mode, args.dropin,
                                              args.valgrind, ops.split(",")):
        print("%s %s/%s: %s" % ("PASS" if right else "FAIL", args.mode, op, label))
        if args.dropin and "opmsg-mongoc: active" not in stderr:
            print("FAIL %s/%s: the drop-in did not report itself active" % (args.mode, op))
            right = False
        if not right:
            failed += 1
            sys.stdout.write(stderr[-4000:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
