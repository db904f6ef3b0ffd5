#!/bin/sh
# add-test-suite.sh BUILD SUITE: a build tree configured before the test
# suite SUITE (tests/SUITE/) existed gets it added to its OPMSG_TEST_SUITES.
# A tree with the default list (the variable unset) already has every suite.
# Used by the make targets that build one suite's programs (mk/*.mk).
set -eu
build=${1:?usage: add-test-suite.sh BUILD SUITE}
suite=${2:?usage: add-test-suite.sh BUILD SUITE}
suites=$(sed -n 's/^OPMSG_TEST_SUITES:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
case ";$suites;" in
  *";$suite;"* | ";;") ;;
  *)
    echo "add-test-suite: adding $suite to OPMSG_TEST_SUITES in $build"
    cmake -DOPMSG_TEST_SUITES="$suites;$suite" "$build" >/dev/null
    ;;
esac
