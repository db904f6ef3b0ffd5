#!/bin/bash
# CI step: libmongoc's own test suite with the drop-in (docs/libmongoc-suite.md).
# On Debian 12 (libmongoc 1.23.1): builds the suite's test-libmongoc from
# Debian's source package, linked with the system's shared libmongoc, runs
# every test that needs no live server through upstream's CTest registration
# (ctest -j2 --timeout --repeat until-pass --output-junit), stock and with
# the drop-in that `make check` built, compares the two JUnit files, and
# fails on a difference that scripts/libmongoc-suite.explained does not
# explain, or when the drop-in was not active. The budget is about 12 minutes.
# Without what it needs (libmongoc's development files, ctest, python3)
# the step fails, saying which: it never passes having run nothing.
# LIBMONGOC_SUITE_CI_ARGS adds options (e.g. "--subset FILE" to run a fixed
# subset, should the suite outgrow the budget).
set -euo pipefail
cd "$(dirname "$0")/../.."

missing=()
command -v ctest >/dev/null || missing+=("ctest (cmake)")
command -v python3 >/dev/null || missing+=(python3)
pkg-config --exists libmongoc-1.0 2>/dev/null || pkg-config --exists mongoc2 2>/dev/null ||
  missing+=("libmongoc's development files (libmongoc-dev)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "libmongoc-suite: FAILED: missing ${missing[*]}" >&2
  exit 1
fi
start=$(date +%s)
rm -f build/libmongoc-suite/*/summary.txt
make --no-print-directory check-libmongoc-suite LIBMONGOC_SUITE_ARGS="${LIBMONGOC_SUITE_CI_ARGS:-}"
grep -q '^libmongoc-suite [^:]*: run [1-9]' build/libmongoc-suite/*/summary.txt 2>/dev/null ||
  { echo "libmongoc-suite: FAILED: no summary line with tests run" >&2; exit 1; }
echo "libmongoc-suite: CI step done in $(( $(date +%s) - start )) s"
