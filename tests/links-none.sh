#!/bin/sh
# Usage: links-none.sh LIBRARY NAME...
# Fails when LIBRARY's dynamic section needs libNAME.so for any NAME (the
# build without optional parts, preset nocodecs, must link none of them).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 LIBRARY NAME..." >&2; exit 2; }
lib=$1
shift
needed=$(LC_ALL=C readelf -d "$lib" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
status=0
for name in "$@"; do
  if echo "$needed" | grep -qx "lib$name\.so.*"; then
    echo "$lib links lib$name" >&2
    status=1
  fi
done
[ $status -ne 0 ] || echo "$lib links none of: $*"
exit $status
