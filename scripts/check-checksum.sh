#!/bin/bash
# Usage: scripts/check-checksum.sh [BUILD]    (make check-checksum)
#
# OP_MSG checksums, live: the fork's libmongoc (FORK_PREFIX, default
# build/fork/master/builds/all/prefix, made by make check-fork; PR 3's URI
# option opMsgChecksum) against stock FerretDB v1.24.2 on 127.0.0.1
# (tests/peers/with-ferretdb.sh).
#  1. tests/fork/checksum_live.c runs its workload (ping, insert, find with
#     getMore, update, count, delete) with opMsgChecksum=true through
#     `opmsg tap` (BUILD/tools/opmsg), which checks every message's CRC-32C
#     itself: every OP_MSG request must carry a checksum that is right,
#     FerretDB must answer each (it verifies a request's checksum when it
#     reads the message and ends the connection, answering nothing, when the
#     checksum is wrong), every command must succeed (but endSessions, which
#     FerretDB does not have), and every reply that carries a checksum must
#     be right (FerretDB v1.24.2 sends none: its replies are new messages
#     with no flags).
#  2. The cost: checksum_live.c --cost twice, straight to FerretDB (the
#     client's thread CPU time per insert of 100 documents, option on minus
#     off); the two runs' values are the range.
# Prints one line:
#   fork checksum live: requests with checksum N of N, accepted N, replies with checksum M verified M, cost X-Y ns/message (B-byte requests)
# and exits 0 only when every part of 1 holds (the cost is a figure, not a
# test). Environment: FORK_PREFIX, OPMSG_FERRETDB (the binary; default
# ferretdb in PATH or $(go env GOPATH)/bin), OPMSG_CHECKSUM_KEEP=1 keeps the logs.
set -eu
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/.."
. scripts/lib/through-tap.sh

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ] || { [ "${1:-}" != --run ] && [ $# -gt 1 ]; } ||
   { [ "${1:-}" = --run ] && [ $# -ne 3 ]; }; then
  echo "usage: $0 [BUILD]" >&2
  exit 2
fi

# --- Inner: under with-ferretdb.sh: --run BUILD OUT ---------------------------------------
if [ "${1:-}" = "--run" ]; then
  build=$2 out=$3
  mkdir -p "$out"
  # The workload through the tap, which checks every CRC-32C: workload.jsonl, .out, .err, .rc.
  through_tap "$build/tools/opmsg" "$out" workload 300 "$build/checksum-live" "{uri}"
  for r in 1 2; do
    timeout 300 "$build/checksum-live" "$OPMSG_FERRETDB_URI" --cost >"$out/cost$r.out" 2>>"$out/cost.err" || true
  done
  exit 0
fi

# --- Outer -----------------------------------------------------------------------------------
build=${1:-build}
FORK_PREFIX=${FORK_PREFIX:-build/fork/master/builds/all/prefix}
fail() { echo "check-checksum: $*" >&2; exit 1; }

ls "$FORK_PREFIX"/lib/pkgconfig/mongoc2.pc >/dev/null 2>&1 ||
  fail "no fork build at FORK_PREFIX=$FORK_PREFIX (lib/pkgconfig/mongoc2.pc): run make check-fork first"
[ -x "$build/tools/opmsg" ] || fail "$build/tools/opmsg is missing: build the tree first (make)"

prefix=$(cd "$FORK_PREFIX" && pwd)
# shellcheck disable=SC2046
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$build/checksum-live" tests/fork/checksum_live.c \
  $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --define-prefix --cflags --libs mongoc2) \
  -Wl,-rpath,"$prefix/lib" || fail "tests/fork/checksum_live.c does not build against $FORK_PREFIX"

work=$(mktemp -d "${TMPDIR:-/tmp}/opmsg-checksum.XXXXXX")
if [ -n "${OPMSG_CHECKSUM_KEEP:-}" ]; then trap 'echo "check-checksum: logs kept in $work" >&2' EXIT
else trap 'rm -rf "$work"' EXIT; fi
trap 'exit 143' TERM
trap 'exit 130' INT
rc=0
timeout 900 tests/peers/with-ferretdb.sh "$self" --run "$build" "$work/run" || rc=$?
[ "$rc" -ne 77 ] || fail "FerretDB is not installed (make deps)"
[ "$rc" -eq 0 ] || fail "the run against FerretDB failed"

ok=1
if [ "$(cat "$work/run/workload.rc")" != 0 ]; then
  ok=0; cat "$work/run/workload.err" >&2
fi
# shellcheck disable=SC2046
set -- $(python3 scripts/lib/checksum-count.py "$work/run/workload.jsonl") || true
[ $# -eq 5 ] || { set -- 0 0 0 0 0; ok=0; }
req_ck=$1 req=$2 accepted=$3 rep_ck=$4 rep_ok=$5
{ [ "$req" -gt 0 ] && [ "$req_ck" -eq "$req" ] && [ "$accepted" -eq "$req" ] && [ "$rep_ok" -eq "$rep_ck" ]; } || ok=0

costs=$(cat "$work/run/cost1.out" "$work/run/cost2.out" 2>/dev/null | awk '$1 == "cost" {print $2}' | sort -n)
bytes=$(awk '$1 == "cost" {print $3; exit}' "$work/run/cost1.out" 2>/dev/null)
if [ "$(echo "$costs" | grep -c .)" -eq 2 ]; then
  cost="$(echo "$costs" | head -n 1)-$(echo "$costs" | tail -n 1) ns/message (${bytes}-byte requests)"
else
  cost="not measured"
  cat "$work/run/cost.err" >&2 2>/dev/null || true
fi
echo "fork checksum live: requests with checksum $req_ck of $req, accepted $accepted," \
  "replies with checksum $rep_ck verified $rep_ok, cost $cost"
[ "$ok" -eq 1 ]
