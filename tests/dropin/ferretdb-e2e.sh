#!/bin/bash
# ferretdb-e2e.sh CLIENT DROPIN
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
set -u
client=$1
dropin=$2
here=$(cd "$(dirname "$0")" && pwd)

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

# Does FerretDB negotiate compression at all? (The answer decides whether
# zlib/zstd below exercise the compressed path or just fall back.)
/usr/bin/env python3 "$here/probe_compression.py" "$OPMSG_FERRETDB_PORT" || true

proxy_log="$work/proxy.log"
/usr/bin/env python3 "$here/compressing_proxy.py" "$OPMSG_FERRETDB_PORT" \
  >"$work/proxy.port" 2>"$proxy_log" &
proxy=$!
trap 'kill $proxy 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do [ -s "$work/proxy.port" ] && break; sleep 0.1; done
proxy_uri="mongodb://127.0.0.1:$(cat "$work/proxy.port")/"

for comp in none direct-zstd zlib zstd; do
  case $comp in
    none) uri="${OPMSG_FERRETDB_URI}?appname=opmsg-dropin-e2e" ;;
    direct-zstd) uri="${OPMSG_FERRETDB_URI}?appname=opmsg-dropin-e2e&compressors=zstd" ;;
    *) uri="${proxy_uri}?appname=opmsg-dropin-e2e&compressors=$comp" ;;
  esac
  : >"$proxy_log"
  "$client" "$uri" workload "e2e_${run_id}_${comp}_stock" 4 \
    >"$work/stock.out" 2>"$work/stock.err"
  rc_stock=$?
  OPMSG_MONGOC_DEBUG=1 LD_PRELOAD=$dropin "$client" "$uri" workload \
    "e2e_${run_id}_${comp}_dropin" 4 >"$work/dropin.out" 2>"$work/dropin.err"
  rc_dropin=$?
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
  case $comp in
    zlib|zstd)
      # Both runs must have received compressed replies. The proxy logs a
      # connection when it sees it close: give it a moment.
      for _ in $(seq 50); do
        n=$(grep -c "^proxy: $comp: [0-9]* compressed requests, [1-9][0-9]* compressed replies" "$proxy_log")
        [ "$n" -ge 2 ] && break
        sleep 0.1
      done
      echo "   connections with $comp-compressed replies (stock + drop-in): $n"
      if [ "$n" -lt 2 ]; then
        echo "FAIL: $comp was not negotiated through the proxy"; cat "$proxy_log"; fail=1
      fi ;;
  esac
  if grep -q "opmsg-mongoc: rejected" "$work/dropin.err"; then
    echo "FAIL: the drop-in rejected a FerretDB reply"; cat "$work/dropin.err"; fail=1
  fi
done

# Single-client operations too (ping and find), stock vs drop-in.
for op in ping find; do
  a=$("$client" "$OPMSG_FERRETDB_URI" "$op" 2>/dev/null)
  b=$(LD_PRELOAD=$dropin "$client" "$OPMSG_FERRETDB_URI" "$op" 2>/dev/null)
  echo "== $op: $b"
  if [ "$a" != "$b" ] || [ "${a#RESULT ok}" = "$a" ]; then
    echo "FAIL: $op stock '$a' vs drop-in '$b'"; fail=1
  fi
done
[ "$fail" -eq 0 ] && echo "ferretdb end to end: identical results with and without the drop-in"
exit "$fail"
