#!/bin/sh
# Usage: scripts/package.sh   (make package)
#
# The .deb files in dist/: the workflow preset pkg (build-pkg/, configured
# afresh for /usr with every optional part required, never -Werror, and
# the flags dpkg-buildflags gives a Debian package with every hardening
# feature), CPack's DEB generator, then lintian on them (errors fail; the
# warnings kept are overridden in packaging/lintian/, each with its reason).
set -eu
cd "$(dirname "$0")/.."
[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
command -v lintian >/dev/null || { echo "lintian: not installed (make deps installs it)" >&2; exit 1; }
# CMake takes CFLAGS and LDFLAGS from the environment when it first
# configures a tree (hence --fresh); it reads no CPPFLAGS.
flags() { DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get "$1"; }
CFLAGS="$(flags CFLAGS) $(flags CPPFLAGS)" LDFLAGS=$(flags LDFLAGS)
export CFLAGS LDFLAGS
rm -f dist/*.deb
cmake --workflow --preset pkg --fresh
rm -rf dist/_CPack_Packages
ls -1 dist/*.deb
lintian --fail-on error --display-level '>=warning' dist/*.deb
echo "lintian: no errors"
