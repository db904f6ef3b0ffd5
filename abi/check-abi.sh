#!/bin/sh
# check-abi.sh LIB SYMBOLS: fails when LIB no longer exports a symbol listed
# in SYMBOLS (name@@version, one per line), or exports anything that is not
# part of the opmsg_ API. New symbols are fine: add them to SYMBOLS.
set -eu
lib=$1
list=$2
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDRBVW]$/ {print $3}' | grep -v '^OPMSG_' | sort)
status=0
for sym in $(grep -v '^#' "$list"); do
  if ! printf '%s\n' "$exported" | grep -qx "$sym"; then
    echo "abi: $sym is no longer exported by $(basename "$lib")" >&2
    status=1
  fi
done
stray=$(printf '%s\n' "$exported" | grep -v '^opmsg_' || true)
if [ -n "$stray" ]; then
  echo "abi: symbols outside the opmsg_ API are exported: $stray" >&2
  status=1
fi
exit $status
