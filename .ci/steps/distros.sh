#!/bin/bash
# CI step: opmsg on Debian 13 (trixie) and sid, each in a debootstrap root
# (`make check-distros`, mk/distros.mk, docs/distros.md): the build with
# plain `make`, the whole test suite, the drop-in's answer, the packages
# (lintian, installed, the installed drop-in run). Prints one summary line
# per release and the time it took. The roots are made on the first run
# (about 2 minutes each) and reused by later ones.
#
# A release whose libmongoc moved to a series the drop-in does not support
# (sid past 2.5) is reported loudly, not failed (scripts/check-distros.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

start=$(date +%s)
rc=0
make check-distros || rc=$?
echo "distros: $(( $(date +%s) - start )) s for ${DISTROS:-trixie sid} (roots, builds, tests, packages)"
exit $rc
