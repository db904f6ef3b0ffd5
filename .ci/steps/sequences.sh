#!/bin/bash
# CI step: document sequences in replies, live (`make check-sequences`,
# scripts/check-sequences.sh, docs/fork.md): the fork's libmongoc against
# FerretDB with upstream/ferretdb/ (ferretdb-seq) and against stock FerretDB,
# and the other clients unchanged. Runs after .ci/steps/fork.sh, which
# leaves the fork's build (build/fork/master/builds/all/prefix); without it
# the step fails, saying so. Budget: about a minute on the 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/../.."

start=$(date +%s)
make --no-print-directory check-sequences
echo "sequences: CI step done in $(( $(date +%s) - start )) s"
