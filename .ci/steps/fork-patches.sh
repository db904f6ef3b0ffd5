#!/bin/bash
# CI step: the committed fork series (fork/master/*.patch) is exactly what
# its hand-written hunks and the generated files from src/ give
# (scripts/fork-patches.sh --check): a change to src/ that the series does
# not carry yet fails here. No compiling; about 15 seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
make --no-print-directory fork-patches-check
