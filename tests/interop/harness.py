"""Runs one real client through `opmsg tap` to FerretDB and checks the log.

Runs against the FerretDB of the CTest fixture "ferretdb" (its port in
$OPMSG_FERRETDB_STATE/port), or under tests/peers/with-ferretdb.sh (which
exports OPMSG_FERRETDB_URI and OPMSG_FERRETDB_PORT):

  harness.py --tap OPMSG --client NAME [--tcpdump] [--record DIR] -- CMD...

CMD is the client's command line; "{uri}" and "{coll}" in it are replaced by
the tap's URI and the collection to use. Checks:
 (a) the client exits 0 and prints its "OK" line (it checks its own results);
 (b) every logged command of the workload merges to what the client sent,
     compared with what FerretDB stored and returns (read directly, not
     through the tap): the inserted documents, the updates and deletes, the
     find/getMore batches and the aggregate's result;
 (c) the tap's per-connection byte counts equal the logged messages' lengths
     and the --raw files; with --tcpdump also the bytes on the wire between
     the tap and FerretDB (the direct leg), and `opmsg tap --pcap` on that
     capture logs the same lines as the live tap.
With --record DIR the --raw files and the log are kept in DIR.
Exit status: 0 pass, 1 fail, 77 skip.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload  # noqa: E402

SKIP = 77
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what)
    return cond


def canon(v):
    """Relaxed Extended JSON and pymongo values to one comparable form."""
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, list):
        return [canon(x) for x in v]
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def start_tap(tap, upstream_port, work, name, extra=()):
    log = os.path.join(work, name + ".jsonl")
    raw = os.path.join(work, name + "-raw")
    err = open(os.path.join(work, name + ".err"), "w+")
    proc = subprocess.Popen(
        [tap, "tap", "--listen", "127.0.0.1:0", "--upstream",
         "127.0.0.1:%d" % upstream_port, "--out", log, "--raw", raw,
         "--max-array", "0"] + list(extra),
        stderr=err)
    port = None
    for _ in range(200):
        err.seek(0)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", err.read())
        if m:
            port = int(m.group(1))
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    if port is None:
        proc.kill()
        err.seek(0)
        print("tap did not start: " + err.read())
        sys.exit(1)
    return proc, port, log, raw


def stop_tap(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "killed"
    check(rc == 0, "tap exits 0 on SIGTERM (got %r)" % (rc,))


def read_log(path):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return lines


def messages(lines):
    return [x for x in lines if "dir" in x]


def replies_by_conn(lines):
    out = {}
    for x in messages(lines):
        if x["dir"] == "s2c":
            out[(x["conn"], x["responseTo"])] = x
    return out


def direct_client(uri):
    import pymongo
    return pymongo.MongoClient(uri, serverSelectionTimeoutMS=20000)


def check_rules(lines):
    bad = [x for x in messages(lines) if "error" in x]
    for x in bad[:5]:
        print("rule broken: conn %s %s requestID %s: %s: %s" % (
            x["conn"], x["dir"], x["requestID"], x["error"],
            x.get("error_message")))
    check(not bad, "no logged message breaks a rule (%d do)" % len(bad))
    check(not [x for x in lines if x.get("event") in ("desync", "gap")],
          "every stream could be framed")


def workload_commands(lines, coll):
    """The client's commands on the collection, in the order sent."""
    return [x for x in messages(lines)
            if x["dir"] == "c2s" and x.get("db") == workload.DB and
            "doc" in x and coll in (x["doc"].get(x.get("command")),
                                    x["doc"].get("collection"))]


def check_merges(lines, coll, uri):
    """(b): the logged commands merge to what the client sent; compare with
    what FerretDB holds and answers directly."""
    cmds = workload_commands(lines, coll)
    replies = replies_by_conn(lines)
    by_name = {}
    for x in cmds:
        by_name.setdefault(x["command"], []).append(x)
    print("commands on %s: %s" % (coll, ", ".join(
        "%s x%d" % (k, len(v)) for k, v in by_name.items())))
    seq = sorted({s["id"] for x in cmds for s in x.get("sequences", [])})
    print("document sequences used: %s" % (", ".join(seq) or "none"))

    # Inserts: the merged "documents" are the workload's, in order.
    inserted = [d for x in by_name.get("insert", []) for d in x["doc"]["documents"]]
    check(canon(inserted) == canon(workload.initial_docs()),
          "logged inserts carry the %d documents the client sent (got %d)"
          % (workload.N_DOCS, len(inserted)))

    # Updates and deletes, as the workload issues them.
    updates = [u for x in by_name.get("update", []) for u in x["doc"]["updates"]]
    want_u = [({"_id": i}, {"$set": {"upd": 1}}, False) for i in range(10)]
    want_u.append(({"n": {"$gte": 290}}, {"$inc": {"n": 1000}}, True))
    got_u = [(canon(u["q"]), canon(u["u"]), bool(u.get("multi", False)))
             for u in updates]
    check(got_u == want_u, "logged updates are the 11 the client sent: %r"
          % (got_u[:3],))
    deletes = [d for x in by_name.get("delete", []) for d in x["doc"]["deletes"]]
    want_d = [({"_id": i}, 1) for i in range(280, 290)]
    want_d.append(({"even": False, "n": {"$lt": 20}}, 0))
    got_d = [(canon(d["q"]), int(d["limit"])) for d in deletes]
    check(got_d == want_d, "logged deletes are the 11 the client sent: %r"
          % (got_d[:3],))

    client = direct_client(uri)
    direct = client[workload.DB][coll]
    stored = list(direct.find({}, sort=[("_id", 1)]))
    check(canon(stored) == canon(workload.final_docs()),
          "FerretDB holds the expected %d documents (has %d)"
          % (len(workload.final_docs()), len(stored)))
    # Documents the updates did not touch are stored as the log shows them.
    logged = {d["_id"]: d for d in inserted}
    for d in stored:
        if 10 <= d["_id"] < 290:
            if not check(canon(logged.get(d["_id"])) == canon(d),
                         "stored document %s equals the logged one" % d["_id"]):
                break

    # find + getMore: the batches in the replies are what FerretDB returns.
    finds = by_name.get("find", [])
    if check(len(finds) == 1, "one find logged (got %d)" % len(finds)):
        f = finds[0]
        check(canon(f["doc"].get("filter", {})) == {} and
              canon(f["doc"].get("sort")) == {"_id": 1},
              "the logged find has the client's filter and sort")
        r = replies.get((f["conn"], f["requestID"]))
        docs, n_get_more = [], 0
        if check(r is not None, "the find's reply is logged"):
            cur = r["doc"]["cursor"]
            docs += cur["firstBatch"]
            cursor_id = cur["id"]
            for g in by_name.get("getMore", []):
                if g["doc"]["getMore"] != cursor_id:
                    continue
                n_get_more += 1
                gr = replies.get((g["conn"], g["requestID"]))
                if check(gr is not None, "each getMore's reply is logged"):
                    docs += gr["doc"]["cursor"]["nextBatch"]
        check(n_get_more >= 5, "the cursor needed getMore (%d)" % n_get_more)
        check(canon(docs) == canon(stored),
              "find+getMore batches in the log equal FerretDB's documents "
              "(%d logged, %d stored)" % (len(docs), len(stored)))

    aggs = by_name.get("aggregate", [])
    if check(len(aggs) == 1, "one aggregate logged (got %d)" % len(aggs)):
        a = aggs[0]
        check(canon(a["doc"]["pipeline"]) == canon(workload.PIPELINE),
              "the logged pipeline is the client's")
        r = replies.get((a["conn"], a["requestID"]))
        got = r["doc"]["cursor"]["firstBatch"] if r else None
        want = list(direct.aggregate(workload.PIPELINE))
        check(canon(got) == canon(want) == canon(workload.AGGREGATE_RESULT),
              "the logged aggregate result equals FerretDB's direct answer")
    client.close()


def check_bytes(lines, raw):
    """(c): byte counts per connection and direction."""
    closes = {x["conn"]: x for x in lines if x.get("event") == "close"}
    opens = {x["conn"] for x in lines if x.get("event") == "open"}
    check(opens and opens == set(closes), "every connection opened is closed")
    sums = {}
    for x in messages(lines):
        k = (x["conn"], x["dir"])
        sums[k] = sums.get(k, 0) + x["len"]
    files = {}
    for name in os.listdir(raw):
        m = re.match(r"\d+-conn(\d+)-(c2s|s2c)\.bin$", name)
        if check(m, "raw file name %s" % name):
            k = (int(m.group(1)), m.group(2))
            files[k] = files.get(k, 0) + os.path.getsize(os.path.join(raw, name))
    total = 0
    for conn, c in closes.items():
        for d in ("c2s", "s2c"):
            b = c["bytes_" + d]
            total += b
            check(b == sums.get((conn, d), 0) == files.get((conn, d), 0) and
                  c["unframed_" + d] == 0,
                  "conn %d %s: forwarded %d bytes = logged %d = raw files %d"
                  % (conn, d, b, sums.get((conn, d), 0), files.get((conn, d), 0)))
    print("tap: %d connections, %d messages, %d bytes" % (
        len(closes), len(messages(lines)), total))
    return closes


def comparable(lines):
    """Log lines without what differs between two observers of the same
    bytes: times, latencies, connection ids and close reasons."""
    conns = {}
    for x in lines:
        c = x["conn"]
        y = {k: v for k, v in x.items()
             if k not in ("t", "conn", "latency_us", "detail")}
        if x.get("event") == "open":
            continue
        conns.setdefault(c, []).append(json.dumps(y, sort_keys=True))
    return [conns[c] for c in sorted(conns)]


def run_tcpdump_check(args, tap, ferret_port, tap_port, work, live):
    """Compare the live log with `opmsg tap --pcap` on a capture of both
    legs, and the bytes of the two legs."""
    pcap = os.path.join(work, "lo.pcap")
    cap_log = os.path.join(work, "tcpdump.err")
    with open(cap_log, "w") as err:
        td = subprocess.Popen(
            # Immediate mode gives every packet a ring frame as large as the
            # snapshot length: with the default 256 KiB snapshot and 2 MiB
            # buffer that is 8 frames, and a busy machine drops packets. A
            # loopback packet fits in 66,000 bytes; 64 MiB holds ~1,000.
            [args.tcpdump_bin, "-i", "lo", "--immediate-mode", "-U", "-s", "66000",
             "-B", "65536", "-n", "-w", pcap,
             "tcp port %d or tcp port %d" % (ferret_port, tap_port)],
            stdout=subprocess.DEVNULL, stderr=err)
    return td, pcap, cap_log


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tap", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--tcpdump", action="store_true")
    ap.add_argument("--tcpdump-bin", default="tcpdump")
    ap.add_argument("--record")
    ap.add_argument("--prepare",
                    help="a command line to run first (builds the client)")
    ap.add_argument("--need", action="append", default=[],
                    help="a file or command the client needs; skip without it")
    ap.add_argument("--need-node", metavar="VERSION",
                    help="the oldest Node.js the client runs on; skip on an older one")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd

    for need in args.need:
        if not (os.path.exists(need) or shutil.which(need)):
            print("SKIP: %s client: %s is missing (scripts/install-deps.sh "
                  "installs it)" % (args.client, need))
            return SKIP
    if args.need_node:
        out = subprocess.run(["node", "--version"], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.strip()
        have = tuple(int(x) for x in re.findall(r"\d+", out)[:3])
        want = tuple(int(x) for x in args.need_node.split("."))
        if have < want:
            print("SKIP: %s client: needs Node.js >= %s, node is %s"
                  % (args.client, args.need_node, out or "unknown"))
            return SKIP
    state = os.path.join(os.environ.get("OPMSG_FERRETDB_STATE", "/nonexistent"), "port")
    if not os.environ.get("OPMSG_FERRETDB_URI") and os.path.exists(state):
        with open(state) as f:
            port = f.read().strip()
        os.environ["OPMSG_FERRETDB_PORT"] = port
        os.environ["OPMSG_FERRETDB_URI"] = "mongodb://127.0.0.1:%s/" % port
    uri = os.environ.get("OPMSG_FERRETDB_URI")
    if not uri:
        print("SKIP: no FerretDB (the CTest fixture ferretdb did not start one: is it installed?),"
              " and not run under tests/peers/with-ferretdb.sh")
        return SKIP
    try:
        import pymongo  # noqa: F401
    except ImportError:
        print("SKIP: python3-pymongo is missing (the harness reads FerretDB with it)")
        return SKIP
    if args.prepare:
        # Not timed with the workload: compiling can take minutes on a busy
        # machine the first time.
        r = subprocess.run(shlex.split(args.prepare), timeout=1800)
        if r.returncode != 0:
            print("FAIL: preparing the client failed: " + args.prepare)
            return 1
    ferret_port = int(os.environ["OPMSG_FERRETDB_PORT"])
    work = tempfile.mkdtemp(prefix="opmsg-interop-")
    coll = "c_" + re.sub(r"\W", "_", args.client)
    proc = td = None
    try:
        proc, port, log, raw = start_tap(args.tap, ferret_port, work, "live")
        if args.tcpdump:
            if not shutil.which(args.tcpdump_bin):
                stop_tap(proc)
                print("SKIP: tcpdump is not installed (apt-get install tcpdump)")
                return SKIP
            td, pcap, cap_err = run_tcpdump_check(args, args.tap, ferret_port,
                                                  port, work, log)
            for _ in range(100):
                with open(cap_err) as f:
                    text = f.read()
                if "listening on" in text or td.poll() is not None:
                    break
                time.sleep(0.05)
            if td.poll() is not None:
                stop_tap(proc)
                print("SKIP: tcpdump cannot capture on lo here: " + text.strip())
                return SKIP
        env = dict(os.environ, OPMSG_INTEROP_COLLECTION=coll,
                   OPMSG_INTEROP_DIR=os.path.dirname(os.path.abspath(__file__)),
                   HOME=work)  # mongosh writes its logs under $HOME
        tap_uri = "mongodb://127.0.0.1:%d/" % port
        argv = [a.replace("{uri}", tap_uri).replace("{coll}", coll) for a in cmd]
        res = subprocess.run(argv, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True,
                             timeout=300)
        sys.stdout.write(res.stdout)
        sys.stdout.write(res.stderr[-3000:])
        # (a)
        check(res.returncode == 0 and "client: OK" in res.stdout,
              "%s sees the right results through the tap (exit %d)"
              % (args.client, res.returncode))
        time.sleep(0.3)  # let the client's last FIN reach the tap
        stop_tap(proc)
        if td is not None:
            # Stop capturing before the checks below talk to FerretDB.
            time.sleep(0.3)
            td.send_signal(signal.SIGINT)
            td.wait(timeout=20)
            with open(cap_err) as f:
                m = re.search(r"(\d+) packets? dropped by kernel", f.read())
            if m and int(m.group(1)) > 0:
                # Not the tap's fault, and nothing to compare against.
                print("SKIP: the capture is incomplete: tcpdump says %s packets "
                      "were dropped by the kernel" % m.group(1))
                return SKIP
        lines = read_log(log)
        check_rules(lines)
        check_merges(lines, coll, uri)
        live_closes = check_bytes(lines, raw)
        if td is not None:
            legs = {}
            for name, p in (("upstream", ferret_port), ("client", port)):
                out = os.path.join(work, "pcap-%s.jsonl" % name)
                r = subprocess.run([args.tap, "tap", "--pcap", pcap, "--port",
                                    str(p), "--out", out, "--max-array", "0"])
                check(r.returncode == 0, "tap --pcap exits 0")
                legs[name] = read_log(out)
                check(comparable(legs[name]) == comparable(lines),
                      "tap --pcap on the %s leg logs the live tap's lines" % name)
            # The direct leg (tap <-> FerretDB) carries as many bytes as the
            # client leg, and as the tap says it forwarded.
            for name, leg in legs.items():
                b = sorted((c["bytes_c2s"], c["bytes_s2c"])
                           for c in leg if c.get("event") == "close")
                want = sorted((c["bytes_c2s"], c["bytes_s2c"])
                              for c in live_closes.values())
                check(b == want, "bytes on the %s leg per connection equal "
                      "the tap's counts" % name)
        if args.record:
            if os.path.isdir(args.record):
                shutil.rmtree(args.record)
            shutil.copytree(raw, args.record)
            shutil.copy(log, os.path.join(args.record, "tap.jsonl"))
    finally:
        # Whatever happened, leave no tap or tcpdump behind.
        for p in (proc, td):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        if os.environ.get("OPMSG_INTEROP_KEEP"):
            print("kept " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    print("PASS: %s through opmsg tap" % args.client)
    return 0


if __name__ == "__main__":
    sys.exit(main())
