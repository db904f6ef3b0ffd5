#!/bin/bash
# opmsg on other Debian releases, each in its own test system (a root made
# by scripts/debian-root.sh): `make check-distros` runs this (Makefile,
# docs/distros.md).
#
# Usage: scripts/check-distros.sh [--no-tests] [--no-package] [SUITE...]
#
# For each SUITE (default: trixie sid):
#  1. make the root, or reuse it (build/roots/SUITE);
#  2. copy the working tree into it (/src/opmsg: the files git knows, tracked
#     or not ignored; a fresh copy every time) and build it there with plain
#     `make`, so the build itself is proved on the release;
#  3. run the whole CTest suite there (-j 2), FerretDB included: the
#     machine's FerretDB (OPMSG_FERRETDB, `ferretdb` on PATH, or
#     $(go env GOPATH)/bin/ferretdb) is copied in; tests whose peer is
#     missing (Node, Go) skip with exit 77;
#  4. ask the freshly built drop-in what it does with the release's
#     libmongoc (OPMSG_MONGOC_DEBUG=1, a libmongoc program against the local
#     test server);
#  5. `make package` there (lintian --fail-on error), install the .deb files
#     with apt, check that libopmsg-mongoc depends on the package that owns
#     the release's libmongoc, run a libmongoc program with the installed
#     drop-in (LD_PRELOAD=/usr/lib/<triplet>/libopmsg-mongoc.so), and
#     remove the packages again.
# Prints one summary line per release and exits 1 if any build, test or
# package step failed there.
#
# A release whose libmongoc series is not one the drop-in supports
# (OPMSG_DROPIN_SERIES in cmake/packaging.cmake) is not a failure: the check
# says so loudly, and the drop-in tests' results there are shown but not
# counted (the drop-in only forwards on such a release).
#
# Environment: OPMSG_ROOTS (directory of the roots, default build/roots),
# DISTRO_CTEST_ARGS (extra ctest arguments, e.g. "-L dropin"),
# JOBS (parallel build and test jobs, default nproc).
# Every release is checked: each step's status goes into its summary line (if, || rc=$?).
set -euo pipefail
cd "$(dirname "$0")/.." || exit 1

tests=1
package=1
suites=()
for a in "$@"; do
  case $a in
    --no-tests) tests=0 ;;
    --no-package) package=0 ;;
    -h|--help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-distros: unknown option $a" >&2; exit 2 ;;
    *) suites+=("$a") ;;
  esac
done
[ ${#suites[@]} -gt 0 ] || suites=(trixie sid)
roots=${OPMSG_ROOTS:-build/roots}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
logs=$roots/logs

if [ "$(id -u)" -ne 0 ]; then
  echo "check-distros: must run as root (debootstrap, chroot, mount); try: sudo make check-distros" >&2
  exit 1
fi
mkdir -p "$logs"

# The libmongoc series the drop-in supports: the list packaging uses.
supported=$(sed -n 's/^set(OPMSG_DROPIN_SERIES "\([0-9.;]*\)".*/\1/p' cmake/packaging.cmake | tr ';' ' ')
supported=${OPMSG_DROPIN_SERIES_OVERRIDE:-$supported}

ferretdb=""
for c in "${OPMSG_FERRETDB:-}" "$(command -v ferretdb 2>/dev/null)" \
         "$(command -v go >/dev/null 2>&1 && echo "$(go env GOPATH 2>/dev/null)/bin/ferretdb")"; do
  if [ -n "$c" ] && [ -x "$c" ]; then ferretdb=$c; break; fi
done

now() { date +%s; }
say() { echo "check-distros: $*"; }

# copy_tree DEST: the working tree as git sees it.
. scripts/lib/copy-tree.sh

# "ctest" output -> "passed failed skipped"
ctest_counts() {
  local log=$1 total failed skipped
  total=$(sed -n 's/.*tests passed, [0-9]* tests\{0,1\} failed out of \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  failed=$(sed -n 's/.*tests passed, \([0-9]*\) tests\{0,1\} failed out of.*/\1/p' "$log" | tail -n 1)
  skipped=$(grep -cE '^[[:space:]]+[0-9]+ - .* \((Skipped|Disabled|Not Run)\)$' "$log" || true)
  total=${total:-0}; failed=${failed:-0}
  echo "$((total - failed - skipped)) $failed $skipped"
}

summaries=()
status=0

for suite in "${suites[@]}"; do
  dir=$roots/$suite
  in_root() { scripts/debian-root.sh --exec "$suite" "$dir" -- "$@"; }
  line="distro $suite:"
  bad=0
  say "== $suite"

  t0=$(now)
  if ! scripts/debian-root.sh "$suite" "$dir" 2>&1 | tee "$logs/$suite-root.log"; then
    summaries+=("$line FAILED: no root (log: $logs/$suite-root.log)")
    status=1
    continue
  fi
  t_root=$(( $(now) - t0 ))
  mongoc=$(in_root sh -c 'pkg-config --modversion mongoc2 2>/dev/null || pkg-config --modversion libmongoc-1.0 2>/dev/null' || true)
  series=$(echo "$mongoc" | cut -d. -f1-2)
  line="$line libmongoc ${mongoc:-?},"
  ours=1
  case " $supported " in *" $series "*) ;; *) ours=0 ;; esac
  if [ $ours -eq 0 ]; then
    say "!!! WARNING: $suite has libmongoc $mongoc; the drop-in supports the series $supported only:"
    say "!!! there it stays inactive (forwards to libmongoc), and its tests are not counted."
    line="$line UNSUPPORTED by the drop-in (it supports $supported),"
  fi

  # --- build ----------------------------------------------------------------
  t0=$(now)
  if ! copy_tree "$dir/src/opmsg"; then
    summaries+=("$line FAILED: the tree was not copied in")
    status=1
    continue
  fi
  if [ -n "$ferretdb" ]; then
    install -m 755 "$ferretdb" "$dir/usr/local/bin/ferretdb"
  fi
  # shellcheck disable=SC2016
  # OPMSG_WERROR (CI sets it) reaches the root's make: the release's
  # compiler is held to the same warnings; its `make package` never is.
  if in_root env JOBS="$jobs" OPMSG_WERROR="${OPMSG_WERROR:-}" sh -c 'cd /src/opmsg && make JOBS=$JOBS' \
    >"$logs/$suite-build.log" 2>&1; then
    line="$line build ok ($(( $(now) - t0 )) s),"
  else
    tail -n 40 "$logs/$suite-build.log"
    summaries+=("$line build FAILED (log: $logs/$suite-build.log)")
    status=1
    continue
  fi

  # --- tests ----------------------------------------------------------------
  if [ $tests -eq 1 ]; then
    t0=$(now)
    fdb_env="OPMSG_FERRETDB="
    [ -n "$ferretdb" ] && fdb_env="OPMSG_FERRETDB=/usr/local/bin/ferretdb"
    # ctest's status is the verdict. Not the drop-in's release: its own
    # tests (label dropin) run after the others, reported, not counted.
    # (Not the suites that drive these roots from outside: fork, distros.)
    gate="-LE ^(fork|distros)$"
    [ $ours -eq 1 ] || gate="-LE ^(dropin|fork|distros)$"
    rc=0
    # shellcheck disable=SC2016
    in_root env "$fdb_env" JOBS="$jobs" GATE="$gate" DISTRO_CTEST_ARGS="${DISTRO_CTEST_ARGS:-}" sh -c \
      'cd /src/opmsg/build && ctest -j "$JOBS" --output-on-failure --timeout 900 -E "^(soak\.short|valgrind\.cli)$" $GATE $DISTRO_CTEST_ARGS' \
      >"$logs/$suite-test.log" 2>&1 || rc=$?
    if [ $ours -eq 0 ]; then
      # shellcheck disable=SC2016
      in_root env JOBS="$jobs" sh -c 'cd /src/opmsg/build && ctest -j "$JOBS" -L dropin' \
        >"$logs/$suite-test-dropin.log" 2>&1 || true
    fi
    read -r passed failed skipped < <(ctest_counts "$logs/$suite-test.log")
    t_test=$(( $(now) - t0 ))
    failed_names=$(sed -n '/The following tests FAILED:/,$p' "$logs/$suite-test.log" |
                   sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) .*/\1/p')
    tolerated=0
    if [ $ours -eq 0 ]; then
      read -r _ tolerated _ < <(ctest_counts "$logs/$suite-test-dropin.log")
    fi
    line="$line tests $passed passed, $failed failed, $skipped skipped ($t_test s),"
    if [ -n "$failed_names" ]; then
      say "$suite: failed: $(echo "$failed_names" | tr '\n' ' ')(log: $logs/$suite-test.log)"
    fi
    # The hostile-reply harness's stock vs drop-in table for this release's
    # libmongoc (ctest dropin.table), kept beside the logs for the docs.
    if cp "$dir/src/opmsg/build/tests/dropin/dropin-table.md" "$logs/$suite-dropin-table.md" 2>/dev/null; then
      tail -n 1 "$logs/$suite-dropin-table.md" | sed "s/^/$suite harness: /"
    fi
    if [ $rc -ne 0 ]; then
      bad=1
    elif [ "$tolerated" -gt 0 ]; then
      line="$line ($tolerated drop-in failures not counted: unsupported libmongoc),"
    fi
  fi

  # --- what the drop-in does here ----------------------------------------------
  # shellcheck disable=SC2016
  probe='
    dropin=$1; client=$2
    port_file=$(mktemp)
    python3 /src/opmsg/tests/dropin/hostile_server.py plain >"$port_file" &
    server=$!
    for _ in $(seq 50); do [ -s "$port_file" ] && break; sleep 0.1; done
    LD_PRELOAD=$dropin OPMSG_MONGOC_DEBUG=1 "$client" "mongodb://127.0.0.1:$(cat "$port_file")/" ping 2>&1 >/dev/null |
      grep -m 1 "^opmsg-mongoc: \(active\|inactive\)"
    kill $server 2>/dev/null; rm -f "$port_file"'
  gate=$(in_root bash -c "$probe" probe /src/opmsg/build/src/mongoc-dropin/libopmsg-mongoc.so \
           /src/opmsg/build/tests/dropin/dropin-client 2>/dev/null || true)
  gate=${gate#opmsg-mongoc: }
  say "$suite: drop-in (build tree): ${gate:-no answer}"
  case $gate in
    active*) line="$line drop-in active," ;;
    *)
      if [ $ours -eq 1 ]; then
        line="$line drop-in NOT active (${gate:-no answer}),"
        bad=1
      else
        line="$line drop-in inactive (libmongoc $series unsupported: expected),"
      fi ;;
  esac

  # --- packages ---------------------------------------------------------------
  if [ $package -eq 1 ]; then
    t0=$(now)
    # shellcheck disable=SC2016
    pkg_script='
      set -eu
      cd /src/opmsg
      OPMSG_SKIP_DEPS=1 make package
      echo "== control"
      for d in dist/*.deb; do
        echo "$(dpkg-deb -f "$d" Package): $(dpkg-deb -f "$d" Depends)"
      done
      echo "== install"
      apt-get install -y -q ./dist/*.deb >/dev/null
      libdir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)
      client=/src/opmsg/build/tests/dropin/dropin-client
      # The package that owns the libmongoc the program uses must be the one
      # libopmsg-mongoc depends on.
      lib=$(ldd "$client" | sed -n "s/.*libmongoc[^ ]* => \([^ ]*\) .*/\1/p" | head -n 1)
      owner=$(dpkg -S "$(readlink -f "$lib")" | cut -d: -f1)
      want=$(dpkg-query -W -f="\${Depends}" libopmsg-mongoc | cut -d" " -f1)
      echo "libmongoc: $lib, package $owner; libopmsg-mongoc depends on $want"
      [ "$owner" = "$want" ]
      /usr/bin/opmsg --version | head -n 1
      port_file=$(mktemp)
      python3 tests/dropin/hostile_server.py plain >"$port_file" &
      server=$!
      for _ in $(seq 50); do [ -s "$port_file" ] && break; sleep 0.1; done
      echo "== LD_PRELOAD=$libdir/libopmsg-mongoc.so OPMSG_MONGOC_DEBUG=1 dropin-client ping"
      LD_PRELOAD=$libdir/libopmsg-mongoc.so OPMSG_MONGOC_DEBUG=1 \
        "$client" "mongodb://127.0.0.1:$(cat "$port_file")/" ping 2>&1 | grep -v "^$" | head -n 5
      kill $server 2>/dev/null; rm -f "$port_file"
      echo "== remove"
      apt-get purge -y -q $(for d in dist/*.deb; do dpkg-deb -f "$d" Package; done) >/dev/null'
    if in_root bash -c "$pkg_script" >"$logs/$suite-package.log" 2>&1; then
      deps=$(sed -n 's/^libopmsg-mongoc: //p' "$logs/$suite-package.log" | cut -d, -f1-2)
      installed=$(grep -m 1 '^opmsg-mongoc: ' "$logs/$suite-package.log" || true)
      say "$suite: installed drop-in: ${installed:-no debug line}"
      line="$line packages ok ($(( $(now) - t0 )) s, libopmsg-mongoc: $deps)"
      sed -n '/^== control/,/^== remove/p' "$logs/$suite-package.log" | grep -v '^== remove'
    else
      tail -n 30 "$logs/$suite-package.log"
      line="$line packages FAILED (log: $logs/$suite-package.log)"
      bad=1
      # Leave the root as it was for the next run.
      # The runtime package is named for the SONAME (OPMSG_SOVERSION).
      soversion=$(sed -n 's/^set(OPMSG_SOVERSION \([0-9]*\))$/\1/p' CMakeLists.txt)
      in_root sh -c "apt-get purge -y -q libopmsg$soversion libopmsg-dev opmsg libopmsg-mongoc" >/dev/null 2>&1 || true
    fi
  fi
  line="${line%,}"
  [ "$t_root" -gt 5 ] && line="$line; root made in $t_root s"
  summaries+=("$line")
  [ $bad -eq 0 ] || status=1
done

echo
for s in "${summaries[@]}"; do
  echo "$s"
done
[ -n "$ferretdb" ] || echo "check-distros: note: no FerretDB on this machine: its tests were skipped in every root"
exit $status
