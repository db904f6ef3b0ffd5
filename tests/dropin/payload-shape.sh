#!/bin/sh
# Usage: tests/dropin/payload-shape.sh PROGRAM DROPIN
# _mongoc_cmd_append_payload_as_array gives
# the same bytes with the drop-in as libmongoc's own.
set -eu
rc=0; stock=$("$1") || rc=$?
[ "$rc" -eq 77 ] && { echo "$stock"; exit 77; }
err=$(mktemp)
rc2=0; dropin=$(OPMSG_MONGOC_DEBUG=1 LD_PRELOAD=$2 "$1" 2>"$err") || rc2=$?
active=$(grep -c "opmsg-mongoc: active" "$err" || true); rm -f "$err"
echo "$dropin"
if [ "$rc" -ne 0 ] || [ "$rc2" -ne 0 ] || [ "$active" -ne 1 ]; then
  echo "FAIL: exit $rc / $rc2, drop-in active lines: $active"; exit 1
fi
if [ "$stock" != "$dropin" ]; then
  echo "FAIL: the arrays differ; stock:"; echo "$stock"; exit 1
fi
echo "payload arrays identical to libmongoc's"
