#!/bin/bash
# CI step: the fork's bookworm fixes track as Debian packages
# (docs/debian.md): `make fork-debs`, judged by its exit status, which is 0
# only when its line is all yes, 0 and P/P. It needs root, a Debian 12
# machine and the network (the Debian mirror of the machine's apt sources:
# the source, sbuild's and the testbed's tarball); it publishes make
# package's dist/ too, so the package step runs first. Measured on the 2-core machine, cold (no tarball, key
# or repository): 153 s when otherwise idle, up to about 11 minutes under
# the load of other jobs (docs/debian.md).
# Usage: .ci/steps/fork-debs.sh   (a step of .ci/run; no arguments)
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
[ "$(id -u)" -eq 0 ] || { echo "fork-debs: CI step FAILED: needs root" >&2; exit 1; }
packaging/debian/versions-test.sh
make --no-print-directory fork-debs FORK_DEBS=bookworm FORK_DEBS_TRACKS=fixes
echo "fork-debs: CI step done in $(( $(date +%s) - start )) s"
