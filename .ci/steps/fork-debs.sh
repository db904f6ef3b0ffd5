#!/bin/bash
# CI step: the fork as Debian packages, bookworm (docs/fork.md, "Debian
# packages"): Debian 12's mongo-c-driver from `apt-get source` of the
# installed revision, the fork's quilt patches made at build time from
# fork/bookworm/, built stock and patched, compared (lintian, symbols),
# published in the apt repository build/fork-debs/apt/, installed from it
# over the machine's packages (an upgrade), tested (the hostile-reply
# harness with no preload, a program built on stock, FerretDB, client-side
# encryption) and put back (make fork-debs). trixie and sid run in
# `make check-fork-debs` outside CI.
#
# It fails, never passes, when something it needs is missing: root, a
# Debian 12 machine, dpkg-scanpackages, FerretDB, Debian's packaging tree
# (../shared/upstream or build/fork/src/bookworm), the fork's patches and
# the changelog text; and unless the line says the packages came from apt
# and are an upgrade. Measured on the 2-core machine: about 6 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() { echo "fork-debs: CI step FAILED: $*" >&2; exit 1; }
start=$(date +%s)
[ "$(id -u)" -eq 0 ] || fail "needs root"
[ "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" = bookworm ] || fail "needs a Debian 12 machine"
command -v dpkg-scanpackages >/dev/null || fail "dpkg-scanpackages is missing (dpkg-dev)"
[ -f fork/debian/bookworm/changelog ] && [ -s fork/debian/forwarded ] || fail "fork/debian/ is incomplete"
compgen -G "fork/bookworm/*/0001-*.patch" >/dev/null || compgen -G "fork/bookworm/0001-*.patch" >/dev/null ||
  fail "no patches in fork/bookworm/"
[ -d ../shared/upstream ] || [ -d build/fork/src/bookworm ] ||
  fail "no Debian packaging tree: ../shared/upstream is missing"
make --no-print-directory fork-debs FORK_DEBS=bookworm | tee build/fork-debs-ci.log ||
  fail "make fork-debs failed"
grep -q '^fork-deb bookworm .*: packages [1-9][0-9]*, from apt yes, upgrade yes, lintian new 0, symbols removed 0, harness 36/36, crashes 0, program built on stock runs yes, ferretdb yes, encryption yes, revert yes$' \
  build/fork-debs-ci.log || fail "the fork-deb bookworm line is not all yes"
echo "fork-debs: CI step done in $(( $(date +%s) - start )) s"
