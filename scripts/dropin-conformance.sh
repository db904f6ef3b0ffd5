#!/bin/bash
# The conformance vectors (tests/data/conformance/manifest.tsv) through the
# drop-in: each served as the raw reply to a {ping: 1} of a program linked
# with the host's stock libmongoc (1.23.1 on Debian 12) and run with
# LD_PRELOAD=libopmsg-mongoc.so, compared with libopmsg's verdict at the
# level the drop-in checks at by default (the one its activation line names).
# The model is the drop-in's hostile-reply harness (tests/dropin/): the peer
# reuses hostile_server.py's handshake, the client is dropin-client.c's
# kind (tests/dropin/conformance-client.c, built here with pkg-config).
#
# Usage: scripts/dropin-conformance.sh [--build DIR] [--no-preload] [--out DIR]
#   --build       the project's build directory (default build/, `make` first)
#   --no-preload  the stock libmongoc alone (what the drop-in fixes)
#   --out         where the client and results go (default BUILD/dropin-conformance)
# Ends with:
#   dropin conformance: libmongoc 1.23.1, vectors V, same verdict S, different D
# Exit status 0 when V >= 50, S >= 90 % of V and every difference is
# explained (tests/data/conformance/differences.tsv, "dropin" or "*"); 1
# otherwise; 2 when the check could not run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build OUT='' PRELOAD=yes
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --no-preload) PRELOAD=; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//;/^set -e/d'; exit 0 ;;
    *) echo "dropin-conformance: unknown argument $1" >&2; exit 2 ;;
  esac
done
die() { echo "dropin-conformance: $*" >&2; exit 2; }
OUT=${OUT:-$BUILD/dropin-conformance}
OPMSG=$BUILD/tools/opmsg
DROPIN=$BUILD/src/mongoc-dropin/libopmsg-mongoc.so
DATA=$ROOT/tests/data
[ -x "$OPMSG" ] || die "no $OPMSG: run make first"
[ -z "$PRELOAD" ] || [ -f "$DROPIN" ] || die "no $DROPIN: run make first"
pkg-config --exists libmongoc-1.0 || die "libmongoc-1.0 not found (scripts/install-deps.sh installs libmongoc-dev)"
VERSION=$(pkg-config --modversion libmongoc-1.0)

mkdir -p "$OUT"
# shellcheck disable=SC2046
cc -std=c11 -O1 -Wall -Wextra -Werror -o "$OUT/conformance-client" "$ROOT/tests/dropin/conformance-client.c" \
  $(pkg-config --cflags --libs libmongoc-1.0) || die "could not build the client"

/usr/bin/python3 "$ROOT/tests/dropin/conformance_run.py" --client "$OUT/conformance-client" \
  --manifest "$DATA/conformance/manifest.tsv" --data "$DATA" --out "$OUT/results.tsv" \
  ${PRELOAD:+--dropin "$DROPIN"} | tee "$OUT/activation.txt"

# The level the drop-in checked at, as its activation line says; without the
# preload, libopmsg's default level stands in.
LEVEL=$(sed -n 's/.*active: .*check \([a-z-]*\).*/\1/p' "$OUT/activation.txt" | head -1)
if [ -n "$PRELOAD" ] && [ -z "$LEVEL" ]; then
  die "the drop-in did not say it was active (see $OUT/activation.txt)"
fi
if [ -z "$LEVEL" ]; then
  if "$OPMSG" check --check spec "$DATA/conformance/ok_plain.bin" 2>/dev/null; then LEVEL=spec; else LEVEL=top-level; fi
fi
/usr/bin/python3 "$ROOT/scripts/lib/conformance-compare.py" \
  --label "dropin conformance$([ -n "$PRELOAD" ] || echo " (stock, no preload)")" --extra "libmongoc $VERSION" \
  --who dropin --results "$OUT/results.tsv" --manifest "$DATA/conformance/manifest.tsv" --data "$DATA" \
  --opmsg "$OPMSG" --level "$LEVEL" --differences "$DATA/conformance/differences.tsv" \
  --report "$OUT/dropin-conformance.md"
