#!/bin/bash
# CI step: libopmsg built without its optional parts (no snappy, zlib, zstd
# or ISA-L: make check-no-codecs, mk/codecs.mk) in build-nocodecs/, and only
# the tests that say what such a build does: what it lacks is
# compressor-unavailable to the library, the CLI and the tap, the rest works.
# It builds the library, the CLI and five unit tests (59 compilations) and
# runs six tests: measured at 8-10 s on the 2-core machine, about a minute
# with other builds running.
set -euo pipefail
cd "$(dirname "$0")/../.."

start=$(date +%s)
make --no-print-directory check-no-codecs
echo "codecs: CI step done in $(( $(date +%s) - start )) s"
