#!/bin/sh
# The main job on the bundled samples: merge real messages, show what a
# strict parser refuses, and how fast merging is against decode/re-encode.
# Called by `make demo` with the build directory.
# Usage: scripts/demo.sh [BUILD_DIR]   (make demo; default build)
set -eu
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
opmsg="$build/tools/opmsg"
data="$top/tests/data"

say() { printf '\n== %s\n' "$*"; }
short() { cut -c1-"${COLUMNS:-160}"; }

say "Merging the report's messages (body + document sequence -> one document)"
for name in flat deep seq; do
  printf '%s.bin -> ' "$name"
  "$opmsg" merge "$data/seed/$name.bin" | short
  if "$opmsg" merge --bson "$data/seed/$name.bin" | cmp -s - "$data/seed/$name.merged.bson"; then
    echo "   byte-for-byte equal to $name.merged.bson"
  else
    echo "   DIFFERS from $name.merged.bson" >&2
    exit 1
  fi
done

say "A real libmongoc 1.23 insert_many, recorded on the wire (one line per message)"
"$opmsg" merge --stream "$data/captures/mongoc_c1_c2s.bin" | short

say "What the wire looked like (opmsg dump of the insert)"
"$opmsg" dump --stream "$data/captures/mongoc_c1_c2s.bin" | tail -n 2 | short

say "Broken and hostile messages get a clear error naming the rule"
for f in thirdparty/ferretdb_invalid_checksum.bin thirdparty/ferretdb_msg_fuzz1_invalid.bin \
         captures/mockseq_mongoc_c1_s2c.bin; do
  printf '%s: ' "$f"
  if "$opmsg" check --stream "$data/$f" 2>&1 >/dev/null | head -n 1; then :; fi
done

say "Speed: opmsg against a full libbson decode and re-encode (ns per message)"
"$build/bench/opmsg-bench" --quick --cpu-time --brief --case flat,deep,seq --check spec,top-level 2>&1 || true

if [ -x "$top/scripts/demo-dropin.sh" ]; then
  say "The libmongoc drop-in: the stock libmongoc against hostile replies, then with libopmsg-mongoc.so"
  "$top/scripts/demo-dropin.sh" "$build"
fi
