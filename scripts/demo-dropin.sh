#!/bin/bash
# Usage: scripts/demo-dropin.sh [BUILD_DIR]
#
# Part of `make demo`: the same unmodified libmongoc
# program against a local server that sends a few rare-but-legal and hostile
# OP_MSG replies, first with Debian's libmongoc as it is, then with
# LD_PRELOAD=libopmsg-mongoc.so.
# Stock libmongoc crashes on purpose here: each run's exit status is kept (|| rc=$?) and described.
set -eu
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
client="$build/tests/dropin/dropin-client"
dropin="$build/src/mongoc-dropin/libopmsg-mongoc.so"
server_py="$root/tests/dropin/hostile_server.py"

if [ ! -x "$client" ] || [ ! -f "$dropin" ]; then
  echo "demo-dropin: $client or $dropin not built; skipping the drop-in demo"
  exit 0
fi
ulimit -c 0   # the stock crashes are the point; no core files

describe() { # EXIT-STATUS LEGAL(1/0) -> words
  case $1 in
    0) if [ "$2" = 1 ]; then echo "answered:"; else echo "WRONG, accepted an illegal reply:"; fi ;;
    2) if [ "$2" = 1 ]; then echo "WRONG, failed on a legal reply:"; else echo "clean error:"; fi ;;
    134) echo "CRASHED: abort (SIGABRT)" ;;
    139) echo "CRASHED: segmentation fault (SIGSEGV)" ;;
    *) if [ "$1" -gt 128 ]; then echo "CRASHED: signal $(( $1 - 128 ))"; else echo "exit $1"; fi ;;
  esac
}

run_mode() { # MODE OP LEGAL WHAT-THE-REPLY-IS
  local mode=$1 op=$2 legal=$3 what=$4 portfile pid port out rc
  portfile=$(mktemp)
  /usr/bin/env python3 "$server_py" "$mode" >"$portfile" &
  pid=$!
  for _ in $(seq 50); do [ -s "$portfile" ] && break; sleep 0.1; done
  port=$(cat "$portfile")
  uri="mongodb://127.0.0.1:$port/?serverSelectionTimeoutMS=5000&socketTimeoutMS=20000"
  echo
  echo "== $mode: $what ($op)"
  rc=0; out=$("$client" "$uri" "$op" 2>/dev/null) || rc=$?
  printf '   stock libmongoc 1.23:  %s %s\n' "$(describe $rc "$legal")" "$(echo "$out" | sed -n 's/^RESULT \(ok\|error\) //p')"
  rc=0; out=$(OPMSG_MONGOC_DEBUG=1 LD_PRELOAD=$dropin "$client" "$uri" "$op" 2>&1) || rc=$?
  printf '   with libopmsg-mongoc:  %s %s\n' "$(describe $rc "$legal")" "$(echo "$out" | sed -n 's/^RESULT \(ok\|error\) //p')"
  echo "$out" | grep "opmsg-mongoc: rejected" | head -1 | sed 's/^/      /' || true
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$portfile"
}

echo "libopmsg-mongoc.so: the OP_MSG reply path of Debian 12's libmongoc 1.23, replaced"
echo "without rebuilding anything (LD_PRELOAD). Same program, same server, same replies:"
run_mode checksum_ok      ping 1 "a legal reply with a correct CRC-32C checksum"
run_mode seq_before       ping 1 "a legal reply whose document sequence comes before the body"
run_mode find_seq         find 1 "a legal find reply whose batch is a cursor.firstBatch sequence"
run_mode trailing_bytes   ping 0 "an illegal reply with 3 stray bytes after the last section"
run_mode noop_wrong_size  ping 0 "an illegal OP_COMPRESSED (noop) whose uncompressedSize is too small"
run_mode size_lie_huge    ping 0 "an illegal OP_COMPRESSED claiming an uncompressed size near 2^31"
echo
echo "Stock libmongoc crashes on legal replies, misreads others, and aborts or overflows its"
echo "heap on hostile ones. With the drop-in every legal reply gives the right answer and every"
echo "illegal one a clean error (the full 36-case table, per libmongoc version: tests/dropin, docs/dropin.md)."
