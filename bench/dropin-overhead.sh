#!/bin/bash
# Usage: bench/dropin-overhead.sh BENCH DROPIN [N] [ROUNDS]
#
# The cost of libopmsg-mongoc.so to an ordinary libmongoc program:
#  1. ping and find round trips against FerretDB (tests/peers/with-ferretdb.sh)
#     or, when FerretDB is not installed, the local test server
#     (tests/dropin/hostile_server.py, mode "plain"): ROUNDS rounds of N timed
#     operations, stock and drop-in alternating so drift hits both alike;
#     reports the median over rounds of each round's median and p99.
#  2. _mongoc_rpc_scatter alone, per call, on a find reply (stock, drop-in,
#     and the drop-in merging a cursor.firstBatch sequence).
# Targets: round-trip overhead <= 2 %; per reply without sequences <= 20 ns
# (issue 29), the last line: "dropin: +H ns per reply without sequences".
set -eu
bench=$1
dropin=$2
n=${3:-2000}
rounds=${4:-7}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

if [ -z "${OPMSG_BENCH_URI:-}" ]; then
  if [ -x "$root/tests/peers/with-ferretdb.sh" ] &&
     "$root/tests/peers/with-ferretdb.sh" true >/dev/null 2>&1; then
    exec "$root/tests/peers/with-ferretdb.sh" env OPMSG_BENCH_SERVER=FerretDB \
      bash -c 'OPMSG_BENCH_URI=$OPMSG_FERRETDB_URI exec "$0" "$@"' "$0" "$@"
  fi
  portfile=$(mktemp)
  /usr/bin/env python3 "$root/tests/dropin/hostile_server.py" plain >"$portfile" &
  server=$!
  for _ in $(seq 50); do [ -s "$portfile" ] && break; sleep 0.1; done
  OPMSG_BENCH_URI="mongodb://127.0.0.1:$(cat "$portfile")/"
  export OPMSG_BENCH_URI OPMSG_BENCH_SERVER="the local test server (FerretDB not installed)"
fi

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -z "${server:-}" ] || kill "$server" 2>/dev/null || true; rm -f "${portfile:-}"' EXIT
echo "server: ${OPMSG_BENCH_SERVER:-$OPMSG_BENCH_URI}; $rounds rounds x $n operations each" \
     "($(( (n + 9) / 10 )) for find1000)"
# Which libmongoc, and whether the drop-in replaces its reply path there.
LD_PRELOAD=$dropin OPMSG_MONGOC_DEBUG=1 "$bench" 2>&1 | grep -m1 '^opmsg-mongoc:' ||
  echo "opmsg-mongoc: (no word from the drop-in)"
printf '%-8s %13s %13s %13s %13s %9s %9s\n' op "stock median" "drop-in med." \
  "stock p99" "drop-in p99" "d median" "d p99"
for op in ping find find1000; do
  : >"$tmp/s"; : >"$tmp/d"
  # A find of 1,000 documents is ten round trips: a tenth as many of them.
  ops=$n; [ "$op" = find1000 ] && ops=$(( (n + 9) / 10 ))
  for r in $(seq "$rounds"); do
    # Alternate which goes first so slow drift hits both alike.
    if [ $((r % 2)) -eq 1 ]; then order="s d"; else order="d s"; fi
    for who in $order; do
      if [ "$who" = s ]; then
        "$bench" "$OPMSG_BENCH_URI" "$op" "$ops" >>"$tmp/s" || exit 1
      else
        LD_PRELOAD=$dropin "$bench" "$OPMSG_BENCH_URI" "$op" "$ops" >>"$tmp/d" || exit 1
      fi
    done
  done
  sm=$(cut -d' ' -f1 "$tmp/s" | median); dm=$(cut -d' ' -f1 "$tmp/d" | median)
  echo "$op $sm" >>"$tmp/medians"
  sp=$(cut -d' ' -f2 "$tmp/s" | median); dp=$(cut -d' ' -f2 "$tmp/d" | median)
  awk -v op="$op" -v sm="$sm" -v dm="$dm" -v sp="$sp" -v dp="$dp" 'BEGIN {
    printf "%-8s %10.1f us %10.1f us %10.1f us %10.1f us %+8.2f%% %+8.2f%%\n",
      op, sm/1000, dm/1000, sp/1000, dp/1000, (dm-sm)*100/sm, (dp-sp)*100/sp }'
done

# The fastest of 7 alternating runs each: the least disturbed by other load.
rc=0
"$bench" scatter 10 >/dev/null || rc=$?
case $rc in
  0) ;;
  77) echo "per-reply figures skipped: this libmongoc has neither reply path"; exit 0 ;;
  *) exit 1 ;;
esac
for _ in 1 2 3 4 5 6 7; do
  "$bench" scatter 200000 | cut -d' ' -f1 >>"$tmp/scatter_s"
  LD_PRELOAD=$dropin "$bench" scatter 200000 >>"$tmp/scatter_d"
done
stock_plain=$(sort -n "$tmp/scatter_s" | head -1)
drop_plain=$(cut -d' ' -f1 "$tmp/scatter_d" | sort -n | head -1)
drop_seq=$(cut -d' ' -f2 "$tmp/scatter_d" | sort -n | head -1)
echo "the parse functions per reply (1.23: _mongoc_rpc_scatter; 1.30, 2.x:" \
     "mcd_rpc_message_from_data_in_place + get_body) on a 2-document find reply," \
     "thread CPU time, fastest of 7 alternating runs: stock ${stock_plain} ns," \
     "drop-in ${drop_plain} ns (checked at its level, $(LD_PRELOAD=$dropin OPMSG_MONGOC_DEBUG=1 "$bench" 2>&1 |
       sed -n 's/^opmsg-mongoc: active: .*check \([a-z-]*\)$/\1/p' | head -1))," \
     "drop-in merging the batch sent as a cursor.firstBatch sequence ${drop_seq} ns"
# Round trips on a shared machine drift by more than the drop-in costs; the
# per-reply cost above is deterministic. Each ping or find is one reply.
# find1000 is ten replies (batches of 101).
while read -r op sm; do
  replies=1; [ "$op" = find1000 ] && replies=10
  awk -v op="$op" -v sm="$sm" -v s="$stock_plain" -v d="$drop_plain" -v r="$replies" 'BEGIN {
    printf "%s: the drop-in adds %.0f ns per reply x %d = %.4f%% of the stock median\n",
      op, d - s, r, (d - s) * r * 100 / sm }'
done <"$tmp/medians"
# The summary (issue 29): what the drop-in adds to a reply without
# sequences, the difference of the two fastest runs above.
awk -v s="$stock_plain" -v d="$drop_plain" 'BEGIN { printf "dropin: %+.1f ns per reply without sequences\n", d - s }'
