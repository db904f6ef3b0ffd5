#!/bin/sh
# Usage: scripts/check-portable.sh   (from the top of the tree; `make check-portable`)
#
# The portable code, which an x86-64 build never runs, built and tested:
#   nosimd  x86-64 with OPMSG_SIMD=OFF (preset nosimd, build-nosimd/): every
#           SSE2 path compiled out, the portable twins in their place
#   s390x   a big-endian build (preset s390x, build-s390x/, cmake/s390x.cmake)
#           whose unit tests ctest runs under qemu-s390x, with Debian's
#           s390x libraries unpacked by scripts/s390x-sysroot.sh
# Each builds the library and its unit tests. Prints one line per build,
# "portable NAME: tests P/R" (P passed of R run, from ctest's JUnit report);
# whether a build passed is ctest's exit status. A failing build's log
# (build-NAME/check-portable.log) goes to stderr; the status is then 1.
# OPMSG_WERROR=ON in the environment makes warnings errors, as in CI.
set -eu

[ $# -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
jobs=${JOBS:-2}
werror=""
[ -n "${OPMSG_WERROR:-}" ] && werror="-DOPMSG_WERROR=$OPMSG_WERROR"
gen=""
command -v ninja >/dev/null 2>&1 && gen="-G Ninja"

status=0
# run NAME: configure (once), build and test preset NAME into build-NAME/.
run() {
  dir=build-$1
  mkdir -p "$dir"
  log=$dir/check-portable.log
  junit=$dir/check-portable.xml
  rm -f "$junit"
  rc=0
  {
    if [ "$1" = s390x ]; then
      scripts/s390x-sysroot.sh "$dir"
    fi
    if [ -f "$dir/CMakeCache.txt" ]; then
      cmake $werror "$dir"
    else
      # shellcheck disable=SC2086 # $gen and $werror are each empty or one word pair
      cmake --preset "$1" $gen $werror
    fi
    cmake --build --preset "$1" -j "$jobs"
  } >"$log" 2>&1 || rc=$?
  if [ $rc -eq 0 ]; then
    ctest --preset "$1" -j "$jobs" --output-junit "$(pwd)/$junit" >>"$log" 2>&1 || rc=$?
  fi
  run_n=0
  failed=0
  if [ -f "$junit" ]; then
    # The <testsuite> element's attributes, written one a line.
    suite=$(sed -n '/<testsuite/,/>/p' "$junit" | tr '\n\t' '  ' | sed 's/>.*//')
    run_n=$(echo "$suite" | sed -n 's/.* tests="\([0-9]*\)".*/\1/p')
    failed=$(echo "$suite" | sed -n 's/.* failures="\([0-9]*\)".*/\1/p')
  fi
  echo "portable $1: tests $((${run_n:-0} - ${failed:-0}))/${run_n:-0}"
  if [ $rc -ne 0 ]; then
    cat "$log" >&2
    status=1
  fi
}

run nosimd
run s390x
exit $status
