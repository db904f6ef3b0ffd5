#!/usr/bin/env python3
"""scripts/lib/junit-compare.py compare, on the hand-written runs of junit/.

junit/base and junit/patched are two run folders (junit.xml and ctest.log,
as `junit-compare.py run` leaves them); junit/again-* the differing tests
run once more per side. The tests:

  /t/same      pass, pass                 no difference
  /t/fixed     fail, pass                 explained (junit/explained)
  /t/skipped   skip, skip                 no difference (@@ctest-skipped@@)
  /t/slow      timeout, pass              explained by a pattern, no reason
  /t/flaky     fail, pass (again: pass)   unexplained; flaky with --again
  /t/crashes   pass, SegFault             unexplained, and a crash of B
  /t/aborts    pass, Subprocess aborted   unexplained, a failure, not a crash
  /t/new       only in B                  explained by junit/new-tests.explained
  bson/...     not test-libmongoc's       left out
"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
JC = os.path.join(HERE, "..", "..", "scripts", "lib", "junit-compare.py")
FIX = os.path.join(HERE, "junit")
FIELDS = ("run p0 f0 s0 t0 c0 p1 f1 s1 t1 c1 differences explained flaky inactive").split()


class Compare(unittest.TestCase):
    def compare(self, a, b, *args):
        """Runs compare A B ARGS...; -> (the printed counts, the files it wrote)."""
        out = tempfile.mkdtemp(prefix="jc-test-")
        self.addCleanup(subprocess.run, ["rm", "-rf", out])
        p = subprocess.run([sys.executable, JC, "compare", os.path.join(FIX, a), os.path.join(FIX, b),
                            "--out", out, "--labels", "base", "patched"] + list(args),
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        counts = dict(zip(FIELDS, map(int, p.stdout.split())))
        files = {}
        for f in ("differ.list", "rows.md", "flaky.md", "unexplained.txt", "crashes.txt"):
            with open(os.path.join(out, f)) as fh:
                files[f] = fh.read().splitlines()
        return counts, files

    def explained(self):
        return ["--explained", os.path.join(FIX, "new-tests.explained"), "--explained", os.path.join(FIX, "explained")]

    def test_identical_runs(self):
        c, f = self.compare("base", "base", *self.explained())
        self.assertEqual(c, dict(run=7, p0=3, f0=2, s0=1, t0=1, c0=0, p1=3, f1=2, s1=1, t1=1, c1=0,
                                 differences=0, explained=0, flaky=0, inactive=7))
        self.assertEqual([f[k] for k in ("differ.list", "rows.md", "flaky.md", "unexplained.txt", "crashes.txt")],
                         [[]] * 5)

    def test_counts(self):
        c, _ = self.compare("base", "patched")
        # (B has /t/new; bson/not-mongoc is not counted.)
        self.assertEqual(c, dict(run=8, p0=3, f0=2, s0=1, t0=1, c0=0, p1=5, f1=2, s1=1, t1=0, c1=1,
                                 differences=6, explained=0, flaky=0, inactive=8))

    def test_differences_unexplained_without_a_list(self):
        c, f = self.compare("base", "patched")
        self.assertEqual(f["unexplained.txt"], ["/t/fixed", "/t/slow", "/t/flaky", "/t/crashes", "/t/aborts", "/t/new"])
        self.assertEqual(len(f["rows.md"]), 6)
        self.assertTrue(all(r.endswith("| **unexplained** |") for r in f["rows.md"]))
        # To run again: the differing tests both sides register (not /t/new).
        self.assertEqual(f["differ.list"], ["/t/fixed", "/t/slow", "/t/flaky", "/t/crashes", "/t/aborts"])

    def test_explanations(self):
        c, f = self.compare("base", "patched", *self.explained())
        self.assertEqual((c["differences"], c["explained"]), (6, 3))
        self.assertEqual(f["unexplained.txt"], ["/t/flaky", "/t/crashes", "/t/aborts"])
        rows = {r.split(" | ")[0].strip("| `"): r for r in f["rows.md"]}
        # The first line that matches, of the files in order.
        self.assertTrue(rows["/t/fixed"].endswith("| fixed by PR 1 |"), rows["/t/fixed"])
        self.assertTrue(rows["/t/new"].endswith("| new test of PR 1 (new-tests.txt) |"), rows["/t/new"])
        # A pattern with no reason explains all the same.
        self.assertTrue(rows["/t/slow"].endswith("| (no reason given) |"), rows["/t/slow"])
        self.assertNotIn("/t/same", rows)
        self.assertNotIn("/t/skipped", rows)

    def test_rows(self):
        _, f = self.compare("base", "patched", *self.explained())
        rows = {r.split(" | ")[0].strip("| `"): r for r in f["rows.md"]}
        self.assertEqual(rows["/t/new"].split(" | ")[1:3], ["absent", "pass"])
        self.assertEqual(rows["/t/slow"].split(" | ")[1:4], ["timeout", "pass", "base: no result in time; waiting for a reply; patched: -"])
        self.assertEqual(rows["/t/fixed"].split(" | ")[3], "base: FAIL: t/fixed: assertion failed: reply != NULL; patched: -")
        # Passing on the base: B's message alone, made safe for a table.
        self.assertEqual(rows["/t/aborts"].split(" | ")[1:4], ["pass", "fail", "FAIL: t/aborts: expected an error \\| got 'none'"])

    def test_crashes(self):
        c, f = self.compare("base", "patched")
        # ctest's "Exception: SegFault" is a crash; a test's own abort
        # ("Subprocess aborted***Exception:") is a failure.
        self.assertEqual(f["crashes.txt"], ["/t/crashes"])
        self.assertEqual((c["c0"], c["c1"]), (0, 1))

    def test_again_flaky(self):
        c, f = self.compare("base", "patched", "--again", os.path.join(FIX, "again-base"),
                            os.path.join(FIX, "again-patched"), *self.explained())
        # /t/flaky passed on both sides over the tries: not a difference.
        self.assertEqual((c["differences"], c["explained"], c["flaky"]), (5, 3, 1))
        self.assertEqual([r.split(" | ")[0:3] for r in f["flaky.md"]], [["| `/t/flaky`", "fail,pass", "pass,pass"]])
        self.assertEqual(f["unexplained.txt"], ["/t/crashes", "/t/aborts"])


if __name__ == "__main__":
    unittest.main()
