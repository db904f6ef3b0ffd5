#!/bin/bash
# Usage: bench/tap-latency.sh BENCH OPMSG [N] [ROUNDS]
#
# What `opmsg tap` adds to a round trip on loopback: ROUNDS rounds of N pings
# (bench/tap-latency.c), direct and through the tap alternately so drift hits
# both alike, against
#  - a trivial local server that answers every message with {ok: 1} (the
#    tap's cost, not hidden by the server's), and
#  - FerretDB, when it is installed (tests/peers/with-ferretdb.sh).
# The tap logs every message to a file, as in real use. Reports the median
# over rounds of each round's median and p99, in microseconds.
# Target: <= 50 us added at the median.
set -eu
bench=$1
opmsg=$2
n=${3:-2000}
rounds=${4:-5}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

if [ -z "${OPMSG_FERRETDB_PORT:-}" ] && [ -z "${OPMSG_TAP_BENCH_NO_FERRETDB:-}" ] &&
   "$root/tests/peers/with-ferretdb.sh" true >/dev/null 2>&1; then
  exec "$root/tests/peers/with-ferretdb.sh" "$0" "$@"
fi

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

tport=""
start_tap() { # upstream port; sets tport to the tap's port
  local err=$tmp/tap-$1.err
  tport=""
  "$opmsg" tap --listen 127.0.0.1:0 --upstream "127.0.0.1:$1" --out "$tmp/tap-$1.jsonl" \
    </dev/null >/dev/null 2>"$err" &
  pids+=($!)
  for _ in $(seq 100); do
    tport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$err")
    [ -n "$tport" ] && return 0
    sleep 0.05
  done
  echo "tap-latency: the tap did not start" >&2
  exit 1
}

measure() { # name port
  local name=$1 port=$2
  start_tap "$port"
  : >"$tmp/direct" ; : >"$tmp/tap"
  for _ in $(seq "$rounds"); do
    "$bench" ping "$port" "$n" >>"$tmp/direct" || exit 1
    "$bench" ping "$tport" "$n" >>"$tmp/tap" || exit 1
  done
  local dm dp tm tp
  dm=$(cut -d' ' -f1 "$tmp/direct" | median); dp=$(cut -d' ' -f2 "$tmp/direct" | median)
  tm=$(cut -d' ' -f1 "$tmp/tap" | median);    tp=$(cut -d' ' -f2 "$tmp/tap" | median)
  awk -v n="$name" -v dm="$dm" -v tm="$tm" -v dp="$dp" -v tp="$tp" 'BEGIN {
    printf "%-22s %10.1f %10.1f %10.1f %10.1f %12.1f %12.1f\n", n, dm, tm, dp, tp, tm - dm, tp - dp }'
  awk -v dm="$dm" -v tm="$tm" 'BEGIN { printf "%.1f\n", tm - dm }' >"$tmp/added-$name"
}

"$bench" serve </dev/null >"$tmp/echo.port" &
pids+=($!)
for _ in $(seq 50); do [ -s "$tmp/echo.port" ] && break; sleep 0.1; done

echo "opmsg tap latency: $rounds rounds x $n pings, direct vs through the tap (logging to a file)"
printf '%-22s %10s %10s %10s %10s %12s %12s\n' server "direct p50" "tap p50" "direct p99" \
  "tap p99" "added p50" "added p99"
measure "echo server" "$(cat "$tmp/echo.port")"
if [ -n "${OPMSG_FERRETDB_PORT:-}" ]; then
  measure "FerretDB 1.24.2" "$OPMSG_FERRETDB_PORT"
fi
added=$(cat "$tmp/added-echo server")
if awk -v a="$added" 'BEGIN { exit !(a <= 50) }'; then
  echo "target (<= 50 us added at the median, echo server): met ($added us)"
else
  echo "target (<= 50 us added at the median, echo server): MISSED ($added us)"
fi
