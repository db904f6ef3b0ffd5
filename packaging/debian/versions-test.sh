#!/bin/sh
# Usage: packaging/debian/versions-test.sh
# The local versions of scripts/fork-debs.sh (docs/debian.md, "Versions"),
# checked with dpkg --compare-versions; exit 1 when one is not as stated.
# Every ordering is checked, the failures counted.
set -eu
fail=0
check() {  # A OP B
  if dpkg --compare-versions "$1" "$2" "$3"; then echo "ok   $1 $2 $3"; else echo "FAIL $1 $2 $3"; fail=1; fi
}
check 1.23.1-1+deb12u4~opmsg1 gt 1.23.1-1+deb12u3       # above the installed revision
check 1.23.1-1+deb12u4~opmsg1 lt 1.23.1-1+deb12u4       # below Debian's next: it replaces ours
check 1.23.1-1+deb12u4~opmsg1 lt 1.23.1-1+deb12u4+b1    # and that revision's binNMU
check 1.23.1-1+deb12u4~opmsg2 gt 1.23.1-1+deb12u4~opmsg1 # a local rebuild upgrades the last
check 1.23.1-1+deb12u4~opmsg1 gt 1.23.1-1+deb12u3+b1    # above a binNMU of the installed revision
check 1.23.1-1+deb12u4~opmsg1 lt 1.23.1-1+deb12u5~opmsg1 # the rebuild on Debian's next revision
check 1.23.1-1+deb12u4~opmsg1+features gt 1.23.1-1+deb12u3  # the features track: above the installed revision
check 1.23.1-1+deb12u4~opmsg1+features lt 1.23.1-1+deb12u4  # and below Debian's next
# Test builds (trixie, sid: on Debian's older trees) sort below the archive's.
check 1.30.4-1+deb13u3~opmsg1 lt 1.30.4-1+deb13u5
check 2.5.0-2~opmsg1 lt 2.5.7-1
exit $fail
