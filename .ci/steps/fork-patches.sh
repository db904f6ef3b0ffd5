#!/bin/bash
# CI step: the fork's committed patches are what they should be
# (scripts/fork-patches.sh --check, `make fork-patches-check`): every pull
# request folder fork/master/K-NAME/ has its cover letter and lists, applies
# with git am on its base (master, or the pull request its file `base`
# names), and is byte for byte what `make fork-patches` exports from it; the
# Debian ports (fork/trixie/, fork/bookworm/) the same way on their trees.
# No compiling; a few seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
make --no-print-directory fork-patches-check
