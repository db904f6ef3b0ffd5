#!/bin/bash
# CI smoke of the fuzz targets: `make fuzz` (mk/fuzz.mk) with a short run per
# target, so that all of them together stay under about 4 minutes of fuzzing.
# A crash, leak, timeout or broken property fails the step and the log names
# the reproducer (see docs/fuzzing.md for turning it into a regression).
set -euo pipefail
cd "$(dirname "$0")/../.."

targets=$(find tests/fuzz -maxdepth 1 -name 'fuzz_*.c' | wc -l)
if [ "$targets" -eq 0 ]; then
  echo "fuzz: no targets"
  exit 0
fi
seconds=$((200 / targets))
[ "$seconds" -gt 30 ] && seconds=30
make fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-$seconds}"
