#!/bin/bash
# CI step: the fork's pull requests on mongo-c-driver master (`make
# check-fork-ci`: scripts/fork-check.sh --ci, docs/fork.md).
# For each pull request fork/master/K-NAME/: git am on its base, every commit
# built alone with upstream's maintainer flags (no warning) and
# clang-format-checked, its tests at each commit, its new tests on the base
# (built with its test sources) and patched; then the whole no-server suite
# once through upstream's CTest registration (ctest --output-junit, the two
# JUnit files compared), unpatched master against the four applied (not once per pull
# request, as `make check-fork` does: that is most of the time saved), the
# live tests against FerretDB, the hostile-reply harness with no preload,
# client-side encryption in the sid root (made by the distros step before
# this one; skipped, and said, without it), the conformance vectors and the
# exported symbols. Prints the phases' times and the check's lines.
#
# Without the pull requests (fork/master/K-NAME/) or the pristine tree
# (../shared/upstream/ next to the clone, or FORK_SOURCE=DIR) there is
# nothing to check: the step fails, saying which (CI has ../shared).
# FORK_CI_ARGS passes more options (e.g. --no-live).
# Usage: .ci/steps/fork.sh   (a step of .ci/run; FORK_SOURCE, FORK_CI_ARGS)
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! ls fork/master/[0-9]*-*/0001-*.patch >/dev/null 2>&1; then
  echo "fork: FAILED: no pull requests in fork/master/ (K-NAME/0001-*.patch)" >&2
  exit 1
fi
if [ -z "${FORK_SOURCE:-}" ] && ! ls ../shared/upstream/mongo-c-driver-master-*.tar.xz >/dev/null 2>&1; then
  echo "fork: FAILED: no mongo-c-driver master tree (../shared/upstream/ next to the clone, or FORK_SOURCE=DIR)" >&2
  exit 1
fi
for c in ctest python3 git; do
  command -v "$c" >/dev/null || { echo "fork: FAILED: $c is missing (the suite runs on upstream's CTest registration)" >&2; exit 1; }
done
start=$(date +%s)
make --no-print-directory check-fork-ci FORK_SOURCE="${FORK_SOURCE:-}" FORK_ARGS="${FORK_CI_ARGS:-}"
echo "fork: CI step done in $(( $(date +%s) - start )) s"
