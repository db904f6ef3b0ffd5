#!/bin/bash
# CI step: every committed fork series (fork/TARGET/*.patch, each folder with
# a generate.json: master, trixie, ...) is exactly what its hand-written
# hunks and the generated files from src/ give (scripts/fork-patches.sh
# --check, once per series, looped over by make fork-patches-check): a
# change to src/ that a series does not carry yet fails here. No compiling;
# about 15 seconds a series (the first run of a clang-format series installs
# its PyPI wheel).
set -euo pipefail
cd "$(dirname "$0")/../.."
make --no-print-directory fork-patches-check
