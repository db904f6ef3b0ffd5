#!/bin/bash
# Usage: scripts/check-sequences.sh [BUILD]    (make check-sequences)
#
# Document sequences in replies, live: the fork's libmongoc (FORK_PREFIX,
# default build/fork/master/builds/all/prefix, made by make check-fork) and
# the other clients against FerretDB with upstream/ferretdb/ (ferretdb-seq)
# and against stock FerretDB, each on 127.0.0.1 (tests/peers/with-ferretdb.sh).
#  1. tests/fork/seq_live.c, built against the fork, reads with find,
#     aggregate and getMore in batches of 1, 101 and 10,000 documents and one
#     batch of 16 MiB - 1 KiB; its output (counts, FNV-1a hashes of the
#     documents' canonical Extended JSON in order) must be the same from both
#     servers, and through `opmsg tap` every cursor reply of ferretdb-seq must
#     carry document sequences (scripts/lib/seq-replies.py all).
#  2. pymongo, the Node driver, mongosh, the Go driver and libmongoc 1.23
#     with and without the drop-in (BUILD/src/mongoc-dropin/libopmsg-mongoc.so)
#     run the interop workload (tests/interop/harness.py) against both: each
#     passes, gets no sequence from ferretdb-seq, and its cursor replies are
#     the same from both servers (seq-replies.py none and dump).
# Prints one line:
#   live sequences: server ferretdb-seq, fork replies with sequences N of N, documents D = D stock, peers unchanged P/P
# and exits 0 only when every part holds.
# Environment: FORK_PREFIX, OPMSG_FERRETDB_SEQ, OPMSG_FERRETDB_STOCK (binaries;
# default ferretdb-seq and ferretdb in PATH or $(go env GOPATH)/bin),
# OPMSG_SEQ_KEEP=1 keeps the logs.
set -eu
cd "$(dirname "$0")/.."

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ] || [ $# -gt 1 ]; then
  echo "usage: $0 [BUILD]" >&2
  exit 2
fi
PEERS="pymongo node mongosh go mongoc mongoc-preload"
. scripts/lib/through-tap.sh

# --- One server (OPMSG_FERRETDB_PORT, OPMSG_FERRETDB_URI): run_on BUILD OUT, in a subshell ---
run_on() (
  build=$1 out=$2
  mkdir -p "$out"
  opmsg=$build/tools/opmsg
  # The fork's program through the tap: fork.jsonl, .out, .err, .rc.
  through_tap "$opmsg" "$out" fork 600 "$build/seq-live" "{uri}"

  node_bin=tests/interop/node/node_modules/.bin
  preload=$PWD/$build/src/mongoc-dropin/libopmsg-mongoc.so
  for p in $PEERS; do
    case $p in
      pymongo) cmd=(/usr/bin/python3 tests/interop/client_pymongo.py "{uri}" "{coll}") ;;
      node) cmd=(node tests/interop/client_node.js "{uri}" "{coll}") ;;
      mongosh) cmd=("$node_bin/mongosh" --quiet --norc "{uri}interop" --file tests/interop/client_mongosh.js) ;;
      go) cmd=("$build/tests/interop/interop-go" "{uri}" "{coll}") ;;
      mongoc) cmd=("$build/tests/interop/interop-client-mongoc" "{uri}" "{coll}") ;;
      mongoc-preload) cmd=(env "LD_PRELOAD=$preload" "$build/tests/interop/interop-client-mongoc" "{uri}" "{coll}") ;;
    esac
    rc=0
    timeout 600 /usr/bin/python3 tests/interop/harness.py --tap "$opmsg" --client "$p" \
      --record "$out/$p" -- "${cmd[@]}" >"$out/$p.log" 2>&1 || rc=$?
    echo "$rc" >"$out/$p.rc"
  done
)

# --- Outer -----------------------------------------------------------------------------------
build=${1:-build}
FORK_PREFIX=${FORK_PREFIX:-build/fork/master/builds/all/prefix}
fail() { echo "check-sequences: $*" >&2; exit 1; }

if ! ls "$FORK_PREFIX"/lib/pkgconfig/mongoc2.pc >/dev/null 2>&1; then
  fail "no fork build at FORK_PREFIX=$FORK_PREFIX (lib/pkgconfig/mongoc2.pc): run make check-fork first"
fi
find_bin() {  # NAME ENV-VALUE
  if [ -n "$2" ]; then [ -x "$2" ] && echo "$2"; return; fi
  command -v "$1" 2>/dev/null && return
  local gp; gp=$(go env GOPATH 2>/dev/null) && [ -x "$gp/bin/$1" ] && echo "$gp/bin/$1"
}
seq_bin=$(find_bin ferretdb-seq "${OPMSG_FERRETDB_SEQ:-}") || fail "no ferretdb-seq: run make deps"
stock_bin=$(find_bin ferretdb "${OPMSG_FERRETDB_STOCK:-}") || fail "no ferretdb: run make deps"
for f in tools/opmsg tests/interop/interop-client-mongoc src/mongoc-dropin/libopmsg-mongoc.so; do
  [ -e "$build/$f" ] || fail "$build/$f is missing: build the tree first (make)"
done

# The fork's program, and the interop Go client (outside the runs' time limits).
prefix=$(cd "$FORK_PREFIX" && pwd)
# shellcheck disable=SC2046
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$build/seq-live" tests/fork/seq_live.c \
  $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --define-prefix --cflags --libs mongoc2) \
  -Wl,-rpath,"$prefix/lib" || fail "tests/fork/seq_live.c does not build against $FORK_PREFIX"
timeout 1800 go -C tests/interop/go build -o "$PWD/$build/tests/interop/interop-go" . ||
  fail "the Go client does not build"

work=$(mktemp -d "${TMPDIR:-/tmp}/opmsg-sequences.XXXXXX")
stop_servers() { for d in "$work"/*-server; do if [ -d "$d" ]; then tests/peers/with-ferretdb.sh --stop "$d"; fi; done; }
if [ -n "${OPMSG_SEQ_KEEP:-}" ]; then trap 'stop_servers; echo "check-sequences: logs kept in $work" >&2' EXIT
else trap 'stop_servers; rm -rf "$work"' EXIT; fi
trap 'exit 143' TERM
trap 'exit 130' INT
for s in seq stock; do
  bin=$seq_bin; [ $s = stock ] && bin=$stock_bin
  OPMSG_FERRETDB=$bin tests/peers/with-ferretdb.sh --start "$work/$s-server" >/dev/null &&
    [ -f "$work/$s-server/port" ] || fail "$bin does not start"
  OPMSG_FERRETDB_PORT=$(cat "$work/$s-server/port")
  export OPMSG_FERRETDB_PORT OPMSG_FERRETDB_URI="mongodb://127.0.0.1:$OPMSG_FERRETDB_PORT/"
  rc=0
  run_on "$build" "$work/$s" || rc=$?
  tests/peers/with-ferretdb.sh --stop "$work/$s-server"
  [ $rc -eq 0 ] || fail "the run against $bin failed"
done

# 1. The fork: both runs pass, the same documents, every ferretdb-seq cursor reply has sequences.
ok=1 seqs="0 0"
sr=scripts/lib/seq-replies.py
if [ "$(cat "$work/seq/fork.rc")" = 0 ] && [ "$(cat "$work/stock/fork.rc")" = 0 ]; then
  cmp -s "$work/seq/fork.out" "$work/stock/fork.out" || { ok=0; echo "check-sequences: the fork's reads differ:" >&2
    diff "$work/seq/fork.out" "$work/stock/fork.out" >&2 || true; }
else
  ok=0; cat "$work/seq/fork.err" "$work/stock/fork.err" >&2
fi
seqs=$(python3 $sr all "$work/seq/fork.jsonl") || ok=0
[ -n "$seqs" ] || seqs="0 0"
python3 $sr none "$work/stock/fork.jsonl" >/dev/null || { ok=0; echo "check-sequences: stock FerretDB sent sequences" >&2; }
d_seq=$(awk '$1 == "documents" {print $2}' "$work/seq/fork.out")
d_stock=$(awk '$1 == "documents" {print $2}' "$work/stock/fork.out")

# 2. The peers: each passes against both, no sequences, the same cursor replies.
pass=0 total=0
for p in $PEERS; do
  total=$((total + 1))
  if [ "$(cat "$work/seq/$p.rc")" = 0 ] && [ "$(cat "$work/stock/$p.rc")" = 0 ] &&
     python3 $sr none "$work/seq/$p/tap.jsonl" >/dev/null &&
     python3 $sr dump "$work/seq/$p/tap.jsonl" >"$work/$p.seq.json" &&
     python3 $sr dump "$work/stock/$p/tap.jsonl" >"$work/$p.stock.json" &&
     cmp -s "$work/$p.seq.json" "$work/$p.stock.json"; then
    pass=$((pass + 1))
  else
    echo "check-sequences: peer $p is not unchanged:" >&2
    tail -n 5 "$work/seq/$p.log" "$work/stock/$p.log" >&2
  fi
done
[ "$pass" -eq "$total" ] || ok=0

# shellcheck disable=SC2086
set -- $seqs
echo "live sequences: server ferretdb-seq, fork replies with sequences $1 of $2," \
  "documents ${d_seq:-0} = ${d_stock:-0} stock, peers unchanged $pass/$total"
[ "$ok" -eq 1 ]
