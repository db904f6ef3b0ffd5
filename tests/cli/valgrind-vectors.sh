#!/bin/bash
# Usage: valgrind-vectors.sh CLI DATA_DIR   (CTest: valgrind.cli, label valgrind)
#
# valgrind over the CLI: `opmsg check --full-validate` and `opmsg merge --bson`
# on every wire vector under tests/data (each file read with --stream, so
# captures of whole conversations work too). valgrind runs with
# --error-exitcode=1 and full leak checking. The CLI itself exits 1 for an
# invalid message, an expected result for the vectors that must be
# rejected, so a run fails when valgrind's ERROR SUMMARY is above 0
# (definite and indirect leaks count) or the CLI exits with anything but 0
# or 1. Runs in parallel, one valgrind per core.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 CLI DATA_DIR" >&2; exit 2; }
cli=$1
data=$2
if ! command -v valgrind >/dev/null; then
  echo "valgrind: not installed (scripts/install-deps.sh installs it)"
  exit 1
fi

logdir=$(mktemp -d)
trap 'rm -rf "$logdir"' EXIT

# One run: prints nothing when clean, the command and valgrind's report
# otherwise.
one() {
  local cli=$1 logdir=$2 cmd=$3 vector=$4
  local log
  log=$(mktemp "$logdir/run.XXXXXX")
  # shellcheck disable=SC2086
  valgrind --error-exitcode=1 --leak-check=full \
    --errors-for-leak-kinds=definite,indirect \
    --log-file="$log" "$cli" $cmd "$vector" >/dev/null 2>&1
  local rc=$?
  local errors
  errors=$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -n 1)
  # No summary at all means valgrind itself did not run properly.
  if [ "${errors:-1}" -gt 0 ] || { [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; }; then
    echo "valgrind: FAILED: opmsg $cmd $vector (exit $rc)"
    grep -v '^==[0-9]*== *$' "$log" | sed -n '1,40p'
  fi
  rm -f "$log"
}
export -f one

find "$data" -name '*.bin' -type f | sort >"$logdir/vectors"
nvec=$(wc -l <"$logdir/vectors")
{
  while IFS= read -r v; do
    printf '%s\0%s\0' "check --stream --full-validate" "$v"
    printf '%s\0%s\0' "merge --stream --bson" "$v"
  done <"$logdir/vectors"
} | xargs -0 -n 2 -P "$(nproc 2>/dev/null || echo 2)" \
    bash -c 'one "$0" "$1" "$2" "$3"' "$cli" "$logdir" >"$logdir/report"

cat "$logdir/report"
failed=$(grep -c '^valgrind: FAILED' "$logdir/report" || true)
echo "valgrind: $((nvec * 2)) runs over $nvec vectors, $failed failed"
[ "$failed" -eq 0 ]
