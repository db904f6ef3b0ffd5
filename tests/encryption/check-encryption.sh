#!/bin/bash
# Usage: tests/encryption/check-encryption.sh CLIENT DROPIN [SUITE...]
#
# `make check-encryption`: the encryption test with this machine's libmongoc
# (run-encryption.sh CLIENT DROPIN; DROPIN may be ""), then inside the Debian
# root of each SUITE (in-root.sh SUITE: other libmongoc versions). Ends with
# their result lines, one per libmongoc version:
#   encryption 1.23.1: operations N, documents M, equal with drop-in yes, equal stock yes, ciphertext on server yes
# Exit status 1 when a run failed (a "no"), 77 when every run was skipped.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
client=${1:?usage: check-encryption.sh CLIENT DROPIN [SUITE...]}
dropin=${2:-}
shift 2 2>/dev/null || shift $#

log=$(mktemp "${TMPDIR:-/tmp}/opmsg-enc-check.XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT
failed=0
ran=0

lines() { grep -c '^encryption ' "$log" || true; }

one() { # LABEL COMMAND...
  local label=$1 rc before
  shift
  before=$(lines)
  "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  case $rc in
    0) ran=$((ran + 1)) ;;
    77) echo "encryption $label: skipped" >>"$log" ;;
    *) ran=$((ran + 1)); failed=1
       # A run that ended before its result line still gets one.
       [ "$(lines)" -gt "$before" ] ||
         echo "encryption $label: failed (exit $rc)" >>"$log" ;;
  esac
}

start=$(date +%s)
one "(this machine)" "$here/run-encryption.sh" "$client" $dropin
for suite in "$@"; do
  one "($suite root)" "$here/in-root.sh" "$suite"
done

echo "== check-encryption: $(( $(date +%s) - start )) s"
grep '^encryption ' "$log"
[ "$failed" -eq 0 ] || exit 1
[ "$ran" -gt 0 ] || exit 77
exit 0
