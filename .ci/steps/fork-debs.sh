#!/bin/bash
# CI step: the fork as Debian packages (docs/fork.md, "Debian packages").
#  1. fork/debian/ is what the fork's series give
#     (make fork-debian-patches-check);
#  2. bookworm: Debian 12's mongo-c-driver (apt-get source of the installed
#     revision) built stock and with the fork's patches, compared (lintian,
#     symbols), installed over the machine's own packages, tested (the
#     hostile-reply harness with no preload, a program built on stock,
#     FerretDB, client-side encryption) and put back (make fork-debs).
# Measured in a whole .ci/run on a clean clone (2-core machine, nothing else
# running, 2026-12-03): 156 s, of which the bookworm build and checks 148 s
# (stock and fork builds 42 and 44 s). trixie and sid (Debian 13 and sid, in
# the roots of make check-distros) took 530 s and 282 s here and run in
# `make check-fork-debs` outside CI; FORK_DEBS_CI="bookworm trixie unstable"
# runs them here too (after the distros step has made the roots).
set -euo pipefail
cd "$(dirname "$0")/../.."

start=$(date +%s)
make --no-print-directory fork-debian-patches-check
make --no-print-directory fork-debs FORK_DEBS="${FORK_DEBS_CI:-bookworm}"
echo "fork-debs: CI step done in $(( $(date +%s) - start )) s"
