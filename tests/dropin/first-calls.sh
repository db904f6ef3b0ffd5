#!/bin/sh
# Usage: tests/dropin/first-calls.sh GATE_TEST DROPIN [RUNS] [THREADS]
# The first calls into the drop-in, made at once by THREADS threads (16) of a fresh process, in RUNS
# fresh processes (40). libmongoc (the fake) is dlopen()ed after start-up, so
# no constructor has decided the gate: the threads race to make it decide,
# and each must still get libmongoc's contract. Passes when no thread of any
# run got the wrong one or failed otherwise.
set -eu
test_bin=$1
dropin=$2
runs=${3:-40}
threads=${4:-16}
wrong=0
failed_runs=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

for _ in $(seq "$runs"); do
  rc=0
  FAKE_MONGOC_VERSION=1.23.1 LD_PRELOAD=$dropin "$test_bin" first-calls "$threads" >"$out" 2>&1 || rc=$?
  n=$(sed -n 's/^first-calls: \([0-9]*\) of .*/\1/p' "$out")
  if [ "$rc" -gt 1 ] || [ -z "$n" ]; then
    echo "FAIL: exit $rc:"; cat "$out"; exit 1
  fi
  wrong=$((wrong + n))
  [ "$n" -gt 0 ] && failed_runs=$((failed_runs + 1))
done
echo "first calls: $wrong wrong contracts in $failed_runs of $runs fresh processes ($threads threads each)"
[ "$wrong" -eq 0 ]
