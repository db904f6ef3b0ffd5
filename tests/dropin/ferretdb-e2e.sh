#!/bin/bash
# Usage: tests/dropin/ferretdb-e2e.sh CLIENT DROPIN
#        tests/dropin/ferretdb-e2e.sh CLIENT - REFERENCE-DIR
#
# End to end on a real server: the unmodified libmongoc program's workload
# (a pooled client, 4 threads, APM on: insert_many with document sequences,
# find with getMore, aggregate, update_many, delete_many) against FerretDB,
# stock and with LD_PRELOAD=DROPIN: the outputs must be identical, and the
# drop-in must say it is active. FerretDB 1.24 negotiates no compression, so
# the zlib and zstd runs go through compressing_proxy.py, which offers the
# compressor in the handshake and compresses FerretDB's replies (the test
# checks that it did); one run asks FerretDB itself for zstd (it falls back). Runs itself under tests/peers/with-ferretdb.sh; exits 77 (skipped)
# when that script or FerretDB is missing.
#
# With "-" for DROPIN nothing is preloaded: each workload runs once, with the
# libmongoc CLIENT loads. Its outputs are kept in REFERENCE-DIR when that
# holds none yet, and must equal the ones there otherwise: `make fork-debs`
# keeps the stock library's, then compares the patched package's with them.
# Every case runs: each exit status is collected (|| rc=$?, fail=1) and its FAIL said.
set -eu
client=$1
dropin=$2
reference=${3:-}
if [ "$dropin" = - ] && [ -z "$reference" ]; then
  echo "usage: $0 CLIENT DROPIN | CLIENT - REFERENCE-DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)

# The FerretDB of the CTest fixture (tests/interop/CMakeLists.txt) when there is one.
if [ -z "${OPMSG_FERRETDB_URI:-}" ] && [ -f "${OPMSG_FERRETDB_STATE:-/nonexistent}/port" ]; then
  OPMSG_FERRETDB_PORT=$(cat "$OPMSG_FERRETDB_STATE/port")
  export OPMSG_FERRETDB_PORT OPMSG_FERRETDB_URI="mongodb://127.0.0.1:$OPMSG_FERRETDB_PORT/"
fi
if [ -z "${OPMSG_FERRETDB_URI:-}" ]; then
  peer="$here/../peers/with-ferretdb.sh"
  if [ ! -x "$peer" ]; then
    echo "SKIP: tests/peers/with-ferretdb.sh not found"
    exit 77
  fi
  exec "$peer" "$0" "$@"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
run_id=$$
kept=0

# No drop-in: OUTPUT is kept as the reference NAME, or compared with it.
against_reference() { # OUTPUT NAME
  mkdir -p "$reference"
  if [ ! -f "$reference/$2" ]; then
    cp "$1" "$reference/$2"
    kept=$((kept + 1))
  elif ! diff -u "$reference/$2" "$1"; then
    echo "FAIL: $2 differs from the reference run's"; fail=1
  fi
}

# Does FerretDB negotiate compression at all? (The answer decides whether
# zlib/zstd below exercise the compressed path or just fall back.)
/usr/bin/env python3 "$here/probe_compression.py" "$OPMSG_FERRETDB_PORT" || true

proxy_log="$work/proxy.log"
/usr/bin/env python3 "$here/compressing_proxy.py" "$OPMSG_FERRETDB_PORT" \
  >"$work/proxy.port" 2>"$proxy_log" &
proxy=$!
trap 'kill $proxy 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 50); do [ -s "$work/proxy.port" ] && break; sleep 0.1; done
proxy_uri="mongodb://127.0.0.1:$(cat "$work/proxy.port")/"

for comp in none direct-zstd zlib zstd; do
  case $comp in
    none) uri="${OPMSG_FERRETDB_URI}?appname=opmsg-dropin-e2e" ;;
    direct-zstd) uri="${OPMSG_FERRETDB_URI}?appname=opmsg-dropin-e2e&compressors=zstd" ;;
    *) uri="${proxy_uri}?appname=opmsg-dropin-e2e&compressors=$comp" ;;
  esac
  : >"$proxy_log"
  rc_stock=0
  "$client" "$uri" workload "e2e_${run_id}_${comp}_stock" 4 \
    >"$work/stock.out" 2>"$work/stock.err" || rc_stock=$?
  runs=1
  if [ "$dropin" = - ]; then
    echo "== compressors=$comp: exit $rc_stock"
    cat "$work/stock.out"
    if [ "$rc_stock" -ne 0 ]; then
      echo "FAIL: the workload failed"; cat "$work/stock.err"; fail=1
    fi
    against_reference "$work/stock.out" "workload-$comp.out"
  else
    runs=2
    rc_dropin=0
    OPMSG_MONGOC_DEBUG=1 LD_PRELOAD=$dropin "$client" "$uri" workload \
      "e2e_${run_id}_${comp}_dropin" 4 >"$work/dropin.out" 2>"$work/dropin.err" || rc_dropin=$?
    echo "== compressors=$comp: stock exit $rc_stock, drop-in exit $rc_dropin"
    cat "$work/dropin.out"
    if [ "$rc_stock" -ne 0 ] || [ "$rc_dropin" -ne 0 ]; then
      echo "FAIL: the workload failed"; cat "$work/stock.err" "$work/dropin.err"; fail=1
    fi
    if ! diff -u "$work/stock.out" "$work/dropin.out"; then
      echo "FAIL: results differ with the drop-in (compressors=$comp)"; fail=1
    fi
    if ! grep -q "opmsg-mongoc: active" "$work/dropin.err"; then
      echo "FAIL: the drop-in did not report itself active"; cat "$work/dropin.err"; fail=1
    fi
    if grep -q "opmsg-mongoc: rejected" "$work/dropin.err"; then
      echo "FAIL: the drop-in rejected a FerretDB reply"; cat "$work/dropin.err"; fail=1
    fi
  fi
  case $comp in
    zlib|zstd)
      # Every run must have received compressed replies. The proxy logs a
      # connection when it sees it close: give it a moment.
      for _ in $(seq 50); do
        n=$(grep -c "^proxy: $comp: [0-9]* compressed requests, [1-9][0-9]* compressed replies" "$proxy_log" || true)
        [ "$n" -ge "$runs" ] && break
        sleep 0.1
      done
      echo "   connections with $comp-compressed replies: $n (runs: $runs)"
      if [ "$n" -lt "$runs" ]; then
        echo "FAIL: $comp was not negotiated through the proxy"; cat "$proxy_log"; fail=1
      fi ;;
  esac
done

# Single-client operations too (ping and find), stock vs drop-in, or (no
# drop-in) against the reference.
for op in ping find; do
  a=$("$client" "$OPMSG_FERRETDB_URI" "$op" 2>/dev/null || true)
  if [ "$dropin" = - ]; then
    echo "== $op: $a"
    if [ "${a#RESULT ok}" = "$a" ]; then
      echo "FAIL: $op: '$a'"; fail=1
    fi
    echo "$a" >"$work/$op.out"
    against_reference "$work/$op.out" "$op.out"
    continue
  fi
  b=$(LD_PRELOAD=$dropin "$client" "$OPMSG_FERRETDB_URI" "$op" 2>/dev/null || true)
  echo "== $op: $b"
  if [ "$a" != "$b" ] || [ "${a#RESULT ok}" = "$a" ]; then
    echo "FAIL: $op stock '$a' vs drop-in '$b'"; fail=1
  fi
done
if [ "$fail" -eq 0 ]; then
  if [ "$dropin" != - ]; then
    echo "ferretdb end to end: identical results with and without the drop-in"
  elif [ "$kept" -gt 0 ]; then
    echo "ferretdb end to end: the workloads ran; their results are the reference in $reference"
  else
    echo "ferretdb end to end: identical results to the reference in $reference"
  fi
fi
exit "$fail"
