#!/bin/bash
# CI step: the fork's fuzz target of the reply path (PR 4), `make fork-fuzz`
# (scripts/fork-fuzz.sh --edit): PR 4's tree built with clang,
# libFuzzer, ASan and UBSan (upstream's MONGO_FUZZ=ON), its CTest test
# `ctest -L fuzz` (200,000 inputs) seeded by the conformance vectors, then
# libFuzzer for FORK_FUZZ_SECONDS (default 60). A crash, a sanitizer report or
# a broken round trip fails the step. Needs the pristine tree (../shared/upstream/
# or FORK_SOURCE), as the fork step does. Budget: 153 s on the 2-core machine
# without ccache (the ASan build about 85 s, the CTest test 2 s, 61 s of libFuzzer).
# Usage: .ci/steps/fork-fuzz.sh   (a step of .ci/run; FORK_FUZZ_SECONDS, FORK_SOURCE)
set -euo pipefail
cd "$(dirname "$0")/../.."

start=$(date +%s)
make --no-print-directory fork-fuzz FORK_FUZZ_SECONDS="${FORK_FUZZ_SECONDS:-60}" FORK_SOURCE="${FORK_SOURCE:-}"
echo "fork-fuzz: CI step done in $(( $(date +%s) - start )) s"
