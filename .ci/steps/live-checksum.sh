#!/bin/bash
# CI step: OP_MSG checksums, live (`make check-checksum`,
# scripts/check-checksum.sh, docs/fork.md): the fork's libmongoc with the URI
# option opMsgChecksum=true against stock FerretDB v1.24.2 through `opmsg tap`,
# and the option's cost per message. Runs after .ci/steps/fork.sh, which
# leaves the fork's build (build/fork/master/builds/all/prefix); without it
# the step fails, saying so. Budget: under a minute on the 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/../.."

start=$(date +%s)
make --no-print-directory check-checksum
echo "live-checksum: CI step done in $(( $(date +%s) - start )) s"
