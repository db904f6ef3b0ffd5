#!/bin/bash
# The conformance vectors (tests/data/conformance/manifest.tsv) through a
# patched libmongoc, compared with libopmsg's verdict at the level that
# matches the fork's checks.
#
# For each vector, tests/fork/conformance.c (upstream's test framework, added
# here at check time and never into a patch) starts upstream's mock server,
# has a client run {ping: 1}, answers it with the vector's raw bytes
# (reply_to_request_with_bytes, PR 1) and records whether the client took
# the reply (and the document it got back, as bytes) or refused it (and the
# error). libopmsg's verdict is `opmsg merge --bson --check LEVEL FILE`.
# "Same verdict": both accept with the same merged document, or both reject.
# Every difference is printed with its reason from
# tests/data/conformance/differences.tsv ("unexplained" when it has none).
#
# Usage: scripts/fork-conformance.sh [--tree PATCHED_TREE --build PATCHED_BUILD]
#            [--opmsg PATH_TO_opmsg] [--level LEVEL] [--out DIR]
#   --tree, --build  a mongo-c-driver tree with the PRs applied, and its
#                    configured build directory (upstream's CMake, tests on);
#                    test-libmongoc-lib and mongoc_static are built there if
#                    needed. Without them: build/fork/conformance/wt (and
#                    wt-build), a worktree of build/fork/prs holding pr3
#                    with pr4 on top, made again when either branch moved.
#   --opmsg          the opmsg command (default build/tools/opmsg)
#   --level          libopmsg's level: default "spec" when the library has
#                    it, else "frames" (the closest one before it)
#   --out            where the program and results go
#                    (default build/fork/conformance/out)
# Then the specification's reply tests (tests/data/conformance/spec/, which
# upstream/specifications/0002 adds to the specifications repository) go
# through the same program, each judged by its file alone
# (tests/data/conformance/spec_tests.py), not by libopmsg.
# Ends with:
#   fork conformance: vectors V, same verdict S, different D
#   spec tests (fork): cases N, as specified P
# Exit status 0 when V >= 50, S >= 90 % of V, every difference is
# explained and P = N; 1 otherwise; 2 when the check could not run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TREE='' BUILD='' OPMSG=$ROOT/build/tools/opmsg LEVEL='' OUT=$ROOT/build/fork/conformance/out
while [ $# -gt 0 ]; do
  case $1 in
    --tree) TREE=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --opmsg) OPMSG=$2; shift 2 ;;
    --level) LEVEL=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//;/^set -e/d'; exit 0 ;;
    *) echo "fork-conformance: unknown argument $1" >&2; exit 2 ;;
  esac
done

DATA=$ROOT/tests/data
MANIFEST=$DATA/conformance/manifest.tsv
DIFFS=$DATA/conformance/differences.tsv
SRC=$ROOT/tests/fork/conformance.c
export CCACHE_BASEDIR=$ROOT/build/fork CCACHE_NOHASHDIR=1

die() { echo "fork-conformance: $*" >&2; exit 2; }
[ -x "$OPMSG" ] || die "no opmsg command at $OPMSG (run make first)"

# --- the patched tree -------------------------------------------------------
if [ -z "$TREE" ] && [ -z "$BUILD" ]; then
  PRS=$ROOT/build/fork/prs
  WORK=$ROOT/build/fork/conformance
  TREE=$WORK/wt BUILD=$WORK/wt-build
  pr3=$(git -C "$PRS" rev-parse pr3) pr4=$(git -C "$PRS" rev-parse pr4)
  master=$(git -C "$PRS" rev-parse master)
  [ "$pr3" != "$master" ] || die "branch pr3 has no commit yet: give --tree/--build (e.g. master + the old series)"
  stamp="$pr3 $pr4"
  if [ ! -d "$TREE" ] || [ "$(cat "$WORK/wt.stamp" 2>/dev/null)" != "$stamp" ]; then
    echo "fork-conformance: worktree $TREE = pr3 ($pr3) + pr4 ($pr4)" >&2
    if [ -d "$TREE" ]; then
      git -C "$TREE" checkout -q --detach "$pr3"
    else
      git -C "$PRS" worktree add -q --detach "$TREE" "$pr3"
    fi
    if [ "$pr4" != "$master" ]; then
      git -C "$TREE" cherry-pick -q "$master..$pr4" >/dev/null || die "pr4 does not apply on pr3"
    fi
    echo "$stamp" > "$WORK/wt.stamp"
  fi
  if [ ! -f "$BUILD/build.ninja" ]; then
    cmake -S "$TREE" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DENABLE_MAINTAINER_FLAGS=ON \
      -DENABLE_TESTS=ON -DENABLE_STATIC=ON -DENABLE_SHARED=ON -DENABLE_EXAMPLES=OFF \
      -DENABLE_MAN_PAGES=OFF -DENABLE_HTML_DOCS=OFF -DENABLE_ZLIB=SYSTEM -DENABLE_SNAPPY=ON \
      -DENABLE_ZSTD=ON -DENABLE_SSL=OPENSSL -DENABLE_SASL=CYRUS -DENABLE_CLIENT_SIDE_ENCRYPTION=OFF \
      -DCMAKE_C_COMPILER_LAUNCHER=ccache >/dev/null || die "cmake failed in $BUILD"
  fi
fi
[ -d "$TREE" ] && [ -f "$BUILD/build.ninja" ] || die "need --tree and --build (a configured Ninja build)"
TREE=$(cd "$TREE" && pwd) BUILD=$(cd "$BUILD" && pwd)
grep -q reply_to_request_with_bytes "$TREE/src/libmongoc/tests/mock_server/mock-server.h" ||
  die "$TREE has no reply_to_request_with_bytes (PR 1's mock server)"
nice -n 10 ninja -C "$BUILD" -j2 test-libmongoc-lib mongoc_static >/dev/null || die "build failed in $BUILD"

# --- our program: test-libmongoc-main.c's flags, test-libmongoc's link ----
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ninja -C "$BUILD" -t commands test-libmongoc >"$OUT/commands.txt"
compile=$(grep -m1 -- '-c [^ ]*/tests/test-libmongoc-main\.c$' "$OUT/commands.txt") ||
  die "no compile command for test-libmongoc-main.c in $BUILD"
link=$(grep -m1 -- '-o src/libmongoc/test-libmongoc ' "$OUT/commands.txt") ||
  die "no link command for test-libmongoc in $BUILD"
main_obj=src/libmongoc/CMakeFiles/test-libmongoc.dir/tests/test-libmongoc-main.c.o
compile=$(sed -E "s# -MD -MT [^ ]+ -MF [^ ]+##; s# -o [^ ]+ -c [^ ]+\$# -o $OUT/conformance.o -c $SRC#" <<<"$compile")
link=${link//$main_obj/$OUT/conformance.o}
link=${link//-o src\/libmongoc\/test-libmongoc /-o $OUT/fork-conformance }
(cd "$BUILD" && eval "$compile" && eval "$link") || die "could not build $SRC against $BUILD"

# --- the fork's verdicts ------------------------------------------------------
FORK=$OUT/fork.tsv
(cd "$TREE" && CONFORMANCE_MANIFEST=$MANIFEST CONFORMANCE_DATA=$DATA CONFORMANCE_OUT=$FORK \
  MONGOC_TEST_SKIP_LIVE=on MONGOC_TEST_OFFLINE=on "$OUT/fork-conformance" --no-fork \
  -l "/conformance/*" >"$OUT/fork-conformance.log" 2>&1) ||
  die "the conformance program failed (see $OUT/fork-conformance.log)"

# --- libopmsg's, and the comparison (shared with dropin-conformance.sh) -------
if [ -z "$LEVEL" ]; then
  if "$OPMSG" check --check spec "$DATA/conformance/ok_plain.bin" 2>/dev/null; then LEVEL=spec; else LEVEL=frames; fi
fi
rc=0
/usr/bin/python3 "$ROOT/scripts/lib/conformance-compare.py" --label "fork conformance" --who fork \
  --results "$FORK" --manifest "$MANIFEST" --data "$DATA" --opmsg "$OPMSG" --level "$LEVEL" \
  --differences "$DIFFS" --report "$OUT/fork-conformance.md" || rc=$?

# --- the specification's reply tests, judged by their files alone -------------
SPEC_TESTS=$DATA/conformance/spec_tests.py
/usr/bin/python3 "$SPEC_TESTS" prepare "$OUT/spec" || die "could not write the spec tests' replies"
(cd "$TREE" && CONFORMANCE_MANIFEST=$OUT/spec/manifest.tsv CONFORMANCE_DATA=$OUT/spec \
  CONFORMANCE_OUT=$OUT/spec.tsv MONGOC_TEST_SKIP_LIVE=on MONGOC_TEST_OFFLINE=on "$OUT/fork-conformance" \
  --no-fork -l "/conformance/*" >"$OUT/fork-spec-tests.log" 2>&1) ||
  die "the conformance program failed on the spec tests (see $OUT/fork-spec-tests.log)"
/usr/bin/python3 "$SPEC_TESTS" judge "$OUT/spec" "$OUT/spec.tsv" fork || rc=1
exit "$rc"
