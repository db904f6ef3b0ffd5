#!/bin/bash
# CI step: a short soak (docs/soak.md) on this machine only: stock libmongoc
# and the drop-in preloaded, SOAK_CI_OPS operations each against the
# fault-injecting peer, with a fixed seed (printed: a failure replays with
# `make check-soak SOAK_RELEASES=host SOAK_SEED=...`). Fails when the
# drop-in's run has a wrong answer, a crash, descriptor growth or RSS growth
# of 1 MiB or more; stock crashing is reported, not failed. The long soak
# (10,000 operations a run, every kind, Debian 13 and sid too) is
# `make check-soak`. Budget: 2 minutes on the 2-core machine (measured in
# docs/soak.md).
set -euo pipefail
cd "$(dirname "$0")/../.."

start=$(date +%s)
make --no-print-directory check-soak SOAK_RELEASES=host SOAK_KINDS="stock preload" \
  SOAK_OPS="${SOAK_CI_OPS:-2000}" SOAK_SEED="${SOAK_CI_SEED:-20261203}"
echo "soak: CI step done in $(( $(date +%s) - start )) s"
