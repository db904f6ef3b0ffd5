#!/bin/bash
# Usage: scripts/demo-dropin.sh [BUILD_DIR]
#
# Part of `make demo`: the same unmodified libmongoc program against a local
# server that sends a few rare-but-legal and hostile OP_MSG replies, first
# with the system's libmongoc as it is, then with LD_PRELOAD=libopmsg-mongoc.so
# (tests/dropin/run_case.py --demo, which judges each answer as the drop-in's
# tests do). Exits 1 when the drop-in gets one wrong.
set -eu
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
client="$build/tests/dropin/dropin-client"
dropin="$build/src/mongoc-dropin/libopmsg-mongoc.so"
if [ ! -x "$client" ] || [ ! -f "$dropin" ]; then
  echo "demo-dropin: $client or $dropin not built; skipping the drop-in demo"
  exit 0
fi
exec /usr/bin/env python3 "$root/tests/dropin/run_case.py" --client "$client" --dropin "$dropin" --demo
