#!/usr/bin/python3
"""One soak run (docs/soak.md): the peer (soak_peer.py), the client
(soak-client) as one long process and several fresh ones, then the score.

    run_soak.py --build DIR --kind stock|preload|preload-asan|fork [options]

KIND says what the client runs with: its libmongoc as it is (stock), the
drop-in preloaded (preload: --dropin), the drop-in built under ASan preloaded
after the ASan runtime (preload-asan: --dropin and --asan-runtime), or the
libmongoc of --fork-libdir first on LD_LIBRARY_PATH (fork).

The operations are split between a long process (threads on a pool with
streaming monitors, plus single-threaded clients; RSS and descriptors
measured after a warm-up and at the end) and --fresh short processes whose
threads start together, every other one loading libmongoc late (soak-late),
so that a preloaded drop-in decides at its first, concurrent, calls. A
process that crashes is reported with its backtrace; the long one is started
again for the operations left, up to --max-crashes.

Each operation is scored against what the peer logged for it:
  right  the result the peer's legal replies make (documents byte for byte,
         counts, merged sequences), or exactly the server error it sent;
  clean  an error where the peer sent an illegal reply, a fault or an
         "either" reply (the wrong responseTo, an OP_REPLY where an OP_MSG
         belongs), or for a request that never reached the peer (server
         selection, after a fault elsewhere);
  wrong  anything else: a different result, a lost sequence, an error for a
         legal reply, a success for an illegal reply or a fault.
Heartbeats are scored the same way (a hello reply the client accepted must
have been legal, or "either", and complete; heartbeats may fail only as
often as the peer sent hello replies that were not legal).

Ends with the line
  soak VERSION KIND: operations N, right R, clean errors E, wrong W, crashes C, rss growth K KiB, fd growth F
and exits 1 when --require-clean is given and the run is not: wrong or
crashes above 0, fewer operations than asked, RSS growth of 1 MiB or more
(unless --no-rss-limit), descriptor growth, or a drop-in that was not active.
"""
import argparse
import bisect
import collections
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))

SERVER_SELECTION = 15  # MONGOC_ERROR_SERVER_SELECTION
CURSOR_COMMANDS = ("find", "aggregate")
RSS_LIMIT_KIB = 1024
URI_OPTIONS = ("compressors=snappy,zlib,zstd&socketTimeoutMS={sto}&connectTimeoutMS=1000"
               "&serverSelectionTimeoutMS=4000&heartbeatFrequencyMS=500&appname={app}")


def _no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the backtrace is on stderr


def read_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a line cut by a crash
    return out


# ---------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------

class Score:
    def __init__(self):
        self.ops = collections.Counter()  # right, clean, wrong: operations only
        self.undelivered = 0
        self.wrong = []  # (what, reason): operations, heartbeats, requests
        self.beats = collections.Counter()
        self.peer_errors = []  # the harness's own failures

    def add(self, verdict, what, reason="", op=True):
        if op:
            self.ops[verdict] += 1
        if verdict == "wrong":
            self.wrong.append((what, reason))


def _kinds(chain):
    return ", ".join("%s:%s" % (e.get("cmd"), e.get("kind")) for e in chain)


def attempt(exchanges):
    """The exchanges of an operation's last attempt: from its last command
    that is not a getMore (a retried read starts again)."""
    start = 0
    for i, e in enumerate(exchanges):
        if e.get("cmd") not in ("getMore", "killCursors"):
            start = i
    return [e for e in exchanges[start:] if e.get("cmd") != "killCursors"]


def judge_op(rec, exchanges):
    """(verdict, reason) for one operation: its client record and the peer's
    records of its requests, in order."""
    chain = attempt(exchanges)
    if not chain:
        if rec.get("ok"):
            return "wrong", "a success, but the peer never saw the request"
        if rec.get("domain") == SERVER_SELECTION:
            return "undelivered", ""
        return "wrong", "error %s.%s (%s) for a request the peer never saw" % (
            rec.get("domain"), rec.get("code"), rec.get("msg"))
    bad = [e for e in chain if e["cls"] in ("illegal", "fault")]
    cmd = rec["cmd"]
    expected_docs = []
    for e in chain:
        if e["cls"] in ("legal", "either"):
            expected_docs += e.get("docs", [])
    got = rec.get("docs", [])
    if got != expected_docs[:len(got)]:
        return "wrong", "documents differ from what the peer sent (%d received; %s)" % (len(got), _kinds(chain))
    if rec.get("ok"):
        if bad:
            return "wrong", "success after %s" % _kinds(bad)
        if any(e.get("expect") == "error" for e in chain):
            return "wrong", "success after a server error (%s)" % _kinds(chain)
        last = chain[-1]
        if cmd in CURSOR_COMMANDS:
            limited = rec.get("limit", -1) >= 0 and len(got) == rec["limit"]
            if not limited and (len(got) != len(expected_docs) or last.get("more")):
                return "wrong", "the cursor ended after %d of %d documents (%s)" % (
                    len(got), len(expected_docs), _kinds(chain))
            return "right", ""
        if cmd == "insert":
            if rec.get("n") != last.get("n"):
                return "wrong", "insertedCount %s, the peer counted %s" % (rec.get("n"), last.get("n"))
            return "right", ""
        return compare_fields(rec.get("fields", {}), last.get("fields", {}), last.get("kind"))
    last = chain[-1]
    if last["cls"] in ("illegal", "fault", "either"):
        return "clean", ""
    if last.get("expect") == "error":
        if rec.get("code") == last.get("code"):
            return "right", ""
        return "wrong", "error code %s for the server's error %s" % (rec.get("code"), last.get("code"))
    if cmd in CURSOR_COMMANDS and last.get("more") and len(got) == len(expected_docs) \
            and rec.get("domain") == SERVER_SELECTION:
        return "undelivered", ""  # its getMore never left the client
    return "wrong", "error %s.%s (%s) for a legal reply (%s)" % (
        rec.get("domain"), rec.get("code"), rec.get("msg"), _kinds(chain))


def compare_fields(got, want, kind):
    """The merged arrays a reply must show (soakEcho, the shape's
    sequences), compared as CRC lists."""
    if got.get("ok") != 1.0:
        return "wrong", "ok is %r (%s)" % (got.get("ok"), kind)
    for key, value in want.items():
        if isinstance(value, dict):
            sub = got.get(key)
            if not isinstance(sub, dict):
                return "wrong", "%s missing (%s)" % (key, kind)
            verdict = compare_fields(dict(sub, ok=1.0), value, kind)
            if verdict[0] != "right":
                return verdict
        elif got.get(key) != value:
            return "wrong", "%s %s (%s)" % (key, "missing" if key not in got else "differs", kind)
    return "right", ""


def score_run(client_records, peer_records):
    """Scores every operation and heartbeat of one run."""
    score = Score()
    exchanges = collections.defaultdict(list)
    beats_sent = {}
    bad_beats = collections.Counter()  # per process: hello replies that may fail
    for r in peer_records:
        role = r.get("role")
        if role in ("app", "background") and r.get("op"):
            exchanges[r["op"]].append(r)
        elif role in ("beat", "handshake"):
            beats_sent[r["beat"]] = r
            if r["cls"] in ("illegal", "fault", "either"):
                bad_beats[r.get("app")] += 1
        elif role == "bad-request":
            score.add("wrong", "a request", "the peer could not read it: %s" % r.get("error"), op=False)
        elif role == "peer-error":
            score.peer_errors.append(r.get("error"))
    failed_beats = collections.Counter()
    for rec in client_records:
        if "op" in rec and rec.get("cmd") != "settle":
            verdict, reason = judge_op(rec, exchanges.get(rec["op"], []))
            if verdict == "undelivered":
                score.undelivered += 1
                verdict = "clean"
            score.add(verdict, rec["op"], reason)
        elif "beat" in rec:
            if rec.get("ok"):
                sent = beats_sent.get(rec["beat"])
                if sent is None:
                    verdict, reason = "wrong", "a heartbeat with a hello reply the peer never sent"
                elif sent["cls"] in ("illegal", "fault"):
                    verdict, reason = "wrong", "a heartbeat accepted %s" % sent["kind"]
                else:
                    verdict, reason = compare_fields(rec.get("fields", {}), sent.get("fields", {}), sent["kind"])
                score.beats[verdict] += 1
                if verdict == "wrong":
                    score.add("wrong", "heartbeat %s" % rec["beat"], reason, op=False)
            elif rec.get("domain"):
                failed_beats[rec.get("app")] += 1  # (0.0 errors are cancellations)
                score.beats["failed"] += 1
    for app, n in failed_beats.items():
        if n > bad_beats[app]:
            score.add("wrong", "heartbeats of %s" % app,
                      "%d heartbeats failed, the peer sent %d hello replies that may fail" % (n, bad_beats[app]),
                      op=False)
    score.beats["bad sent"] = sum(bad_beats.values())
    return score


# ---------------------------------------------------------------------------
# Crashes: where
# ---------------------------------------------------------------------------

FRAME = re.compile(r"^soak-client:\s+#(\d+) (\S+)\+0x([0-9a-f]+) \((\S+)\+0x([0-9a-f]+)\)")


def symbolize(path, offset, build):
    """function at file:line for our own objects (they have debug info)."""
    if not build or not os.path.realpath(path).startswith(os.path.realpath(build)):
        return None
    try:
        out = subprocess.run(["addr2line", "-f", "-C", "-e", path, "0x%x" % offset],
                             capture_output=True, text=True, timeout=30).stdout.split("\n")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if len(out) >= 2 and out[0] != "??":
        return "%s at %s" % (out[0], os.path.basename(out[1]))
    return None


_EXPORTS = {}


def near_export(path, offset):
    """The exported function at or before offset in a system library: for a
    static function (no name of its own in a stripped library) the nearest
    one before it, which names its source file's neighbourhood."""
    if path not in _EXPORTS:
        syms = []
        try:
            out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True,
                                 timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TtWi":
                syms.append((int(parts[0], 16), parts[2]))
        _EXPORTS[path] = sorted(syms)
    syms = _EXPORTS[path]
    i = bisect.bisect_right(syms, (offset, "\xff")) - 1
    if i < 0:
        return "?"
    return "near %s+0x%x" % (syms[i][1], offset - syms[i][0])


def crash_report(stderr, build, tids):
    """The lines that say where a process crashed: the signal and thread,
    then the frames under the signal handler (or the sanitizer's report)."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if "ERROR: AddressSanitizer" in line or "ERROR: LeakSanitizer" in line or ": runtime error:" in line:
            frames = [l.strip() for l in lines[i + 1:] if re.match(r"\s+#\d+ ", l)]
            return [line.strip()] + frames[:12]
    start = next((i for i, l in enumerate(lines) if l.startswith("soak-client: CRASH")), None)
    if start is None:
        return ["(no report on standard error)"] + lines[-5:]
    head = lines[start][len("soak-client: "):]
    m = re.search(r"in thread (\d+) of process (\d+)", head)
    if m:
        tid, pid = int(m.group(1)), int(m.group(2))
        who = ("the main thread" if tid == pid else
               "worker %s" % tids[tid] if tid in tids else "a libmongoc thread (monitor or RTT)")
        head += " [%s]" % who
    out = [head]
    frames = []
    for line in lines[start + 1:]:
        f = FRAME.match(line)
        if not f:
            continue
        path, off, sym, symoff = f.group(2), int(f.group(3), 16), f.group(4), int(f.group(5), 16)
        where = symbolize(path, off, build) or (
            "%s+0x%x" % (sym, symoff) if sym != "?" else
            "? in %s" % os.path.basename(path) if os.path.basename(path).startswith("libc.") else
            near_export(path, off))
        frames.append("#%s %s (%s+0x%x)" % (f.group(1), where, os.path.basename(path), off))
    # Frames 0-1 are the handler and the signal trampoline (in libc).
    body = [f for f in frames if "crash_handler" not in f]
    if body and "(libc.so" in body[0]:
        body = body[1:]
    return out + body[:12]


def in_flight(prefix, worker, client_records, peer_records):
    """What the peer had sent this process that it never answered for, the
    crashed thread's first: the likely cause of a crash."""
    done = {r["op"] for r in client_records if "op" in r}
    mine = [r for r in peer_records if r.get("app") == prefix and r.get("role") in ("app", "beat")]
    pending = [r for r in mine if r.get("role") == "app" and r.get("op") not in done]
    mark = "%s-%s-" % (prefix, worker)
    own = [r for r in pending if worker is not None and (r.get("op") or "").startswith(mark)]
    others = [r for r in pending if r not in own]
    beats = [r for r in mine if r.get("role") == "beat"][-2:]
    def what(r):
        if r.get("role") == "beat":
            return "heartbeat %s" % r.get("beat")
        return r.get("op") or "(a request of no operation)"
    return ["%s%s %s <- %s (%s)" % ("the crashed thread's " if r in own else "", what(r), r.get("cmd"),
                                    r.get("kind"), r.get("cls")) for r in own[-3:] + others[-3:] + beats]


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

class Runner:
    def __init__(self, args):
        self.args = args
        self.out = args.out or tempfile.mkdtemp(prefix="opmsg-soak.")
        os.makedirs(self.out, exist_ok=True)
        for name in os.listdir(self.out):  # an earlier run's logs
            if name.startswith(("client-", "peer.")):
                os.remove(os.path.join(self.out, name))
        self.client = os.path.join(args.build, "tests", "soak", "soak-client")
        self.late = os.path.join(args.build, "tests", "soak", "soak-late")
        self.client_lib = os.path.join(args.build, "tests", "soak", "libsoak-client.so")
        self.peer_log = os.path.join(self.out, "peer.jsonl")
        self.crashes = []  # (prefix, report lines, in flight)
        self.processes = []  # (prefix, client log)
        self.notes = []

    def env(self):
        env = dict(os.environ)
        for name in list(env):
            if name in ("LD_PRELOAD", "LD_LIBRARY_PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS") or \
                    name.startswith("OPMSG_MONGOC_"):
                del env[name]
        kind = self.args.kind
        if kind in ("preload", "preload-asan"):
            preload = [self.args.dropin]
            if kind == "preload-asan":
                # The ASan runtime must come first in a program not built with it.
                preload = self.args.asan_runtime.split(":") + preload
                env["ASAN_OPTIONS"] = ("detect_leaks=1:halt_on_error=1:exitcode=86:abort_on_error=0:"
                                       "quarantine_size_mb=32:malloc_context_size=20")
                env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
            env["LD_PRELOAD"] = " ".join(preload)
            env["OPMSG_MONGOC_DEBUG"] = "1"
        elif kind == "fork":
            env["LD_LIBRARY_PATH"] = self.args.fork_libdir
        # No per-thread malloc caches: what they hold counts as RSS and as
        # memory in use, and fills slowly over a run (about 500 KiB with 8
        # threads, drop-in or not), hiding a leak of a few bytes an operation.
        env["GLIBC_TUNABLES"] = "glibc.malloc.tcache_count=0"
        return env

    def run_client(self, prefix, ops, warmup, late, crash_at=-1):
        """Runs one client process; returns (client records, crashed)."""
        log = os.path.join(self.out, "client-%s.jsonl" % prefix)
        err = os.path.join(self.out, "client-%s.stderr" % prefix)
        uri = "mongodb://127.0.0.1:%d/?%s" % (self.port, URI_OPTIONS.format(
            sto=self.args.socket_timeout_ms, app=prefix))
        cmd = ([self.late, self.client_lib] if late else [self.client]) + [
            "--uri", uri, "--log", log, "--prefix", prefix, "--seed", str(self.args.seed),
            "--threads", str(self.args.threads), "--singles", str(self.args.singles),
            "--ops", str(ops), "--warmup", str(warmup)]
        if self.args.kind == "preload-asan":
            cmd.append("--no-crash-handler")  # ASan reports crashes itself
        if crash_at >= 0:
            cmd += ["--crash-at", str(crash_at)]
        timeout = self.args.process_timeout or max(120, ops * 0.1)
        with open(err, "w") as errf:
            p = subprocess.Popen(cmd, env=self.env(), stdout=subprocess.DEVNULL, stderr=errf,
                                 preexec_fn=_no_core)
            try:
                rc = p.wait(timeout)
                hung = False
            except subprocess.TimeoutExpired:
                hung = True
                self.dump_hang(p.pid, err)
                p.kill()
                rc = p.wait()
        self.processes.append((prefix, log))
        records = read_jsonl(log)
        for r in records:
            r["app"] = prefix  # the peer knows each connection's process by its appname
        with open(err, errors="replace") as f:
            stderr = f.read()
        if self.args.kind in ("preload", "preload-asan") and "opmsg-mongoc: active" not in stderr:
            self.notes.append("%s: the drop-in did not report itself active" % prefix)
        sanitizer = "ERROR: AddressSanitizer" in stderr or "ERROR: LeakSanitizer" in stderr or \
            ": runtime error:" in stderr
        if rc == 0 and not hung and not sanitizer:
            return records, False
        tids = {r["tid"]: r["thread"] for r in records if "tid" in r}
        report = (["hang: no end after %d s (threads dumped in %s)" % (timeout, err)] if hung else
                  crash_report(stderr, self.args.build, tids))
        if rc not in (0, 86) and rc > 0 and not hung and not sanitizer:
            report = ["exit %d" % rc] + stderr.splitlines()[-5:]
        m = re.search(r"\[worker (\d+)\]", report[0])
        self.crashes.append((prefix, report, in_flight(prefix, int(m.group(1)) if m else None, records,
                                                       read_jsonl(self.peer_log))))
        return records, True

    def dump_hang(self, pid, err):
        """All threads' stacks of a hung process, when gdb is there."""
        if not shutil.which("gdb"):
            return
        try:
            out = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                                 capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            return
        with open(err, "a") as f:
            f.write(out)

    def start_peer(self):
        cmd = [sys.executable, os.path.join(HERE, "soak_peer.py"),
               "--libopmsg", self.args.libopmsg, "--log", self.peer_log, "--seed", str(self.args.seed),
               "--socket-timeout-ms", str(self.args.socket_timeout_ms),
               "--max-seconds", str(self.args.max_seconds)]
        if self.args.weights:
            cmd += ["--weights", self.args.weights]
        if self.args.without:
            cmd += ["--without", self.args.without]
        if self.args.peer_lie:
            cmd += ["--lie", str(self.args.peer_lie)]
        self.peer = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                                     stderr=open(os.path.join(self.out, "peer.stderr"), "w"))
        line = self.peer.stdout.readline()
        if not line.strip().isdigit():
            raise SystemExit("soak: the peer did not start (%s)" % os.path.join(self.out, "peer.stderr"))
        self.port = int(line)

    def stop_peer(self):
        self.peer.send_signal(signal.SIGTERM)
        try:
            self.peer.wait(30)
        except subprocess.TimeoutExpired:
            self.peer.kill()
            self.peer.wait()

    def run(self):
        a = self.args
        fresh_ops = min(a.fresh_ops, a.ops // max(1, 2 * a.fresh)) if a.fresh else 0
        long_ops = a.ops - a.fresh * fresh_ops
        self.start_peer()
        started = time.monotonic()
        client_records = []
        mem = None
        try:
            # Fresh processes: all threads start at once; every other one loads
            # libmongoc late, so the drop-in decides at its first calls.
            for i in range(a.fresh):
                records, _ = self.run_client("f%d" % i, fresh_ops, 0, late=(i % 2 == 1),
                                             crash_at=a.crash_at if i == 0 else -1)
                client_records += records
                if len(self.crashes) >= a.max_crashes:
                    break
            # The long process, started again after a crash for what is left.
            left, n = long_ops, 0
            while left > 0 and len(self.crashes) < a.max_crashes:
                records, crashed = self.run_client("L%d" % n, left, min(left // 5, a.warmup), late=False)
                client_records += records
                done = sum(1 for r in records if "op" in r and r.get("cmd") != "settle")
                marks = {r["mem"]: r for r in records if "mem" in r}
                if "warm" in marks and "end" in marks:
                    mem = (marks["end"]["rss_kib"] - marks["warm"]["rss_kib"],
                           marks["end"]["fds"] - marks["warm"]["fds"],
                           marks["warm"].get("steady") and marks["end"].get("steady"))
                if not crashed:
                    break
                left -= done
                n += 1
        finally:
            self.stop_peer()
        elapsed = time.monotonic() - started
        peer_records = read_jsonl(self.peer_log)
        return self.report(client_records, peer_records, mem, elapsed)

    def print_crashes(self):
        """The first crashes in full; then every crash site once, with how
        often and under which replies it was reached."""
        for prefix, report, flight in self.crashes[:2]:
            print("  CRASH in process %s: %s" % (prefix, report[0]))
            for line in report[1:]:
                print("      %s" % line)
            for line in flight:
                print("      in flight: %s" % line)
        if len(self.crashes) > 2:
            sites = collections.OrderedDict()
            for prefix, report, flight in self.crashes:
                # The first frame outside libc (abort() and raise() say little).
                frames = [f for f in report[1:] if "(libc.so" not in f] or report[1:] or report[:1]
                top = re.sub(r"^#\d+ | \(\S+\+0x[0-9a-f]+\)$", "", frames[0])
                worker = "worker" in report[0]
                own = [l for l in flight if l.startswith("the crashed thread's")] if worker else \
                    [l for l in flight if l.startswith("heartbeat")]
                reply = own[-1].rsplit(" <- ", 1)[1] if own else "?"
                key = "%s in %s (%s)" % (top, "a worker" if worker else "a libmongoc thread",
                                         ("its operation's last reply: " if worker else "the last hello reply: ")
                                         + reply)
                sites.setdefault(key, []).append(prefix)
            print("  crash sites (first frame outside libc under the signal):")
            for key, prefixes in sites.items():
                print("    %dx %s (processes %s)" % (len(prefixes), key, " ".join(prefixes)))

    def report(self, client_records, peer_records, mem, elapsed):
        a = self.args
        score = score_run(client_records, peer_records)
        version = next((r["version"] for r in client_records if r.get("start")), "?")
        paths = {r["libmongoc"] for r in client_records if r.get("start")}
        if a.kind == "fork":
            # The file the loader opened (not resolved: the fork's directory
            # may hold links).
            foreign = [p for p in paths if os.path.dirname(os.path.abspath(p)) != os.path.abspath(a.fork_libdir)]
            if foreign:
                self.notes.append("the client did not load the fork's libmongoc: %s" % ", ".join(foreign))
        sent = collections.Counter((r.get("cls")) for r in peer_records if r.get("role") == "app")
        kinds = collections.Counter(r.get("kind") for r in peer_records if r.get("role") in ("app", "beat"))
        n = sum(score.ops.values())
        print("soak %s %s: seed %s, %d processes in %.0f s, logs in %s" % (
            version, a.kind, a.seed, len(self.processes), elapsed, self.out))
        print("  replies to operations: %s; %d kinds drawn (operations and heartbeats)" % (
            ", ".join("%s %d" % kv for kv in sorted(sent.items())), len(kinds)))
        print("  heartbeats: %d right, %d wrong, %d failed (the peer sent %d hello replies that may fail)" % (
            score.beats["right"], score.beats["wrong"], score.beats["failed"], score.beats["bad sent"]))
        print("  clean errors include %d requests that never reached the peer (server selection)" %
              score.undelivered)
        for op, reason in score.wrong[:12]:
            print("  WRONG %s: %s" % (op, reason))
        if len(score.wrong) > 12:
            print("  ... and %d more (scored from %s)" % (len(score.wrong) - 12, self.out))
        self.print_crashes()
        for error in score.peer_errors[:5]:
            print("  PEER ERROR (the harness failed, see peer.stderr): %s" % error)
        if score.peer_errors:
            self.notes.append("%d errors of the peer itself" % len(score.peer_errors))
        for note in self.notes:
            print("  NOTE %s" % note)
        rss = "%d KiB" % mem[0] if mem else "unmeasured"
        fds = "%d" % mem[1] if mem else "unmeasured"
        print("soak %s %s: operations %d, right %d, clean errors %d, wrong %d, crashes %d, rss growth %s, "
              "fd growth %s" % (version, a.kind, n, score.ops["right"], score.ops["clean"],
                                len(score.wrong), len(self.crashes), rss, fds))
        if a.require_clean:
            problems = []
            if score.wrong:
                problems.append("%d wrong" % len(score.wrong))
            if self.crashes:
                problems.append("%d crashes" % len(self.crashes))
            if n < a.ops:
                problems.append("%d of %d operations" % (n, a.ops))
            if not mem:
                problems.append("RSS and descriptors not measured")
            else:
                if mem[0] >= RSS_LIMIT_KIB and not a.no_rss_limit:
                    problems.append("RSS grew by %d KiB" % mem[0])
                if mem[1] != 0:
                    problems.append("descriptors grew by %d" % mem[1])
            if score.ops["right"] < n // 3:
                problems.append("only %d right answers: the soak exercised too little" % score.ops["right"])
            problems += self.notes
            if problems:
                print("soak %s %s: FAILED: %s (replay: SOAK_SEED=%s)" % (version, a.kind, "; ".join(problems),
                                                                         a.seed))
                return 1
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="the build tree with tests/soak/ and src/libopmsg.so")
    ap.add_argument("--kind", required=True, choices=("stock", "preload", "preload-asan", "fork"))
    ap.add_argument("--libopmsg", help="libopmsg.so for the peer (default BUILD/src/libopmsg.so)")
    ap.add_argument("--dropin", help="libopmsg-mongoc.so (preload kinds)")
    ap.add_argument("--asan-runtime", help="the ASan runtime to preload first (preload-asan), ':'-separated")
    ap.add_argument("--fork-libdir", help="the fork's libmongoc directory (fork)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ops", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--singles", type=int, default=2)
    ap.add_argument("--fresh", type=int, default=6, help="short fresh processes")
    ap.add_argument("--fresh-ops", type=int, default=150)
    ap.add_argument("--warmup", type=int, default=2000, help="operations before the first measurement")
    ap.add_argument("--socket-timeout-ms", type=int, default=1500,
                    help="the client's socketTimeoutMS: a reply later than this is a timeout, so it must "
                         "leave room for a peer slowed down by a busy machine")
    ap.add_argument("--max-crashes", type=int, default=4)
    ap.add_argument("--max-seconds", type=int, default=1800, help="the peer's own limit")
    ap.add_argument("--process-timeout", type=int, default=0)
    ap.add_argument("--weights", default="", help="the peer's draw (soak_peer.py --weights)")
    ap.add_argument("--without", default="", help="reply kinds the peer never draws (soak_peer.py --without)")
    ap.add_argument("--peer-lie", type=float, default=0.0, help="(the scorer's test) soak_peer.py --lie")
    ap.add_argument("--crash-at", type=int, default=-1, help="(the crash report's test) soak-client --crash-at")
    ap.add_argument("--out", help="directory for the logs (default: a new temporary one)")
    ap.add_argument("--require-clean", action="store_true")
    ap.add_argument("--no-rss-limit", action="store_true")
    args = ap.parse_args()
    args.libopmsg = args.libopmsg or os.path.join(args.build, "src", "libopmsg.so")
    if args.kind in ("preload", "preload-asan") and not args.dropin:
        ap.error("--kind %s needs --dropin" % args.kind)
    if args.kind == "preload-asan" and not args.asan_runtime:
        ap.error("--kind preload-asan needs --asan-runtime")
    if args.kind == "fork" and not args.fork_libdir:
        ap.error("--kind fork needs --fork-libdir")
    return Runner(args).run()


if __name__ == "__main__":
    sys.exit(main())
