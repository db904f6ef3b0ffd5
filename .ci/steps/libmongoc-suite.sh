#!/bin/bash
# CI step: libmongoc's own test suite with the drop-in (docs/libmongoc-suite.md).
# On Debian 12 (libmongoc 1.23.1): builds the suite's test-libmongoc from
# Debian's source package, linked with the system's shared libmongoc, runs
# every test that needs no live server, stock and with the drop-in that
# `make check` built, and fails on a difference that
# scripts/libmongoc-suite.explained does not explain, or when the drop-in
# was not active. Measured at about 5 to 7 minutes (build and both runs) on
# the 2-core machine; the budget is about 12.
# LIBMONGOC_SUITE_CI_ARGS adds options (e.g. "--subset FILE" to run a fixed
# subset, should the suite outgrow the budget).
set -euo pipefail
cd "$(dirname "$0")/../.."

start=$(date +%s)
make --no-print-directory check-libmongoc-suite LIBMONGOC_SUITE_ARGS="${LIBMONGOC_SUITE_CI_ARGS:-}"
echo "libmongoc-suite: CI step done in $(( $(date +%s) - start )) s"
