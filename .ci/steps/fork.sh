#!/bin/bash
# CI step: the fork's patch series on mongo-c-driver master (`make
# check-fork`, mk/fork.mk, docs/fork.md): every commit built and tested
# alone with upstream's maintainer flags, test-libmongoc unpatched vs
# patched test by test, the new tests, the live tests against FerretDB,
# the hostile-reply harness with no preload, and client-side encryption in
# the sid root (made by the distros step before this one; skipped, and
# said, without it). Prints the phases' times and the check's last line.
#
# Until the series is in the repository (fork/master/*.patch) there is
# nothing to check, and without the pristine tree (../shared/upstream/ next
# to the clone, or FORK_SOURCE=DIR) nothing to check it on: the step says
# so loudly and passes.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! ls fork/master/*.patch >/dev/null 2>&1; then
  echo "fork: SKIPPED: no series in fork/master/ yet"
  exit 0
fi
if [ -z "${FORK_SOURCE:-}" ] && ! ls ../shared/upstream/mongo-c-driver-master-*.tar.xz >/dev/null 2>&1; then
  echo "fork: SKIPPED: no mongo-c-driver master tree (../shared/upstream/ or FORK_SOURCE=DIR)"
  exit 0
fi
start=$(date +%s)
make --no-print-directory check-fork FORK_TARGET=master FORK_SOURCE="${FORK_SOURCE:-}" FORK_ARGS="${FORK_CI_ARGS:-}"
echo "fork: CI step done in $(( $(date +%s) - start )) s"
