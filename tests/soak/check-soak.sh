#!/bin/bash
# Usage: tests/soak/check-soak.sh   (`make check-soak`, CTest's soak.short; docs/soak.md)
#
# For each release of SOAK_RELEASES (host: this machine; trixie, sid: the
# Debian roots of scripts/debian-root.sh, needing root) and each kind of
# SOAK_KINDS, one soak run (tests/soak/run_soak.py): the pooled client
# against the fault-injecting peer, SOAK_OPS operations, seed SOAK_SEED.
#
#   stock          the release's libmongoc as it is: expected to crash, and
#                  the run says where; never a failure of the target
#   preload        the drop-in preloaded
#   preload-asan   the drop-in built with ASan and UBSan, preloaded after the
#                  ASan runtime (RSS growth reported, not held to 1 MiB: the
#                  sanitizer keeps freed memory in quarantine)
#   fork           the libmongoc in SOAK_FORK_LIBDIR first on LD_LIBRARY_PATH
#                  (for a root: SOAK_FORK_LIBDIR/SUITE; for this machine
#                  SOAK_FORK_LIBDIR/CODENAME when present, else
#                  SOAK_FORK_LIBDIR); skipped, saying so, when unset
#
# preload, preload-asan and fork must have 0 wrong and 0 crashes over all
# SOAK_OPS operations, no descriptor growth, RSS growth under 1 MiB; the
# script exits 1 otherwise. It ends with one line per run.
#
# SOAK_REQUIRE_ALL=1 (make check-soak-fork) makes a skipped run (no fork
# libmongoc for a release, no root) a failure.
#
# Environment: BUILD (this machine's build tree, default build), SOAK_SEED,
# SOAK_OPS, SOAK_KINDS, SOAK_RELEASES, SOAK_THREADS, SOAK_FORK_LIBDIR,
# SOAK_ARGS (more run_soak.py options), SOAK_LOGS (default BUILD/soak-logs),
# OPMSG_ROOTS (where the roots are). Inside a root it runs as
#   check-soak.sh --inside SUITE
# with the settings passed as OPMSG_SOAK_* (the only variables a root lets
# through).
# Every release and kind runs: each run's status is recorded (PIPESTATUS, fail), and the
# stock kind crashes by design.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
python=/usr/bin/python3
[ -x "$python" ] || python=python3

for v in SEED OPS KINDS RELEASES THREADS FORK_LIBDIR ARGS; do
  inner=OPMSG_SOAK_$v
  outer=SOAK_$v
  [ -n "${!outer:-}" ] || eval "$outer=\${$inner:-}"
done
SOAK_SEED=${SOAK_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
SOAK_OPS=${SOAK_OPS:-10000}
SOAK_KINDS=${SOAK_KINDS:-stock preload preload-asan fork}
SOAK_RELEASES=${SOAK_RELEASES:-host trixie sid}
SOAK_THREADS=${SOAK_THREADS:-8}

say() { echo "check-soak: $*"; }
# 1 once a run that must be clean is not (its exit status), or cannot run.
failed=0
# fail LINE: a result line on descriptor 3, and the whole check fails.
fail() { echo "$1" >&3; failed=1; }
# skip LINE: a skipped run; a failure under SOAK_REQUIRE_ALL=1.
skip() {
  echo "$1" >&3
  [ "${SOAK_REQUIRE_ALL:-0}" != 1 ] || failed=1
}

# The sanitised drop-in: a build of its own (the asan preset leaves the
# drop-in out: a sanitised process cannot take a preload ahead of its
# runtime, but an ordinary one can, with the runtime first).
build_asan_dropin() { # SRC BUILD_DIR
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPMSG_SANITIZE=ON \
    -DOPMSG_PARTS=src/mongoc-dropin -DOPMSG_BUILD_TOOLS=OFF -DOPMSG_TEST_SUITES= >"$2.log" 2>&1 &&
    cmake --build "$2" --target opmsg_mongoc >>"$2.log" 2>&1
}

# Runs every kind for one release; prints the runs' output, and one result
# line per kind on the file descriptor 3.
run_kinds() { # RELEASE BUILD SRC LOGS FORKDIR
  local release=$1 build=$2 src=$3 logs=$4 forkdir=$5 kind rc
  local -a args
  mkdir -p "$logs"
  for kind in $SOAK_KINDS; do
    args=(--build "$build" --kind "$kind" --seed "$SOAK_SEED" --ops "$SOAK_OPS" --threads "$SOAK_THREADS"
          --out "$logs/$release-$kind")
    case $kind in
      stock) args+=(--max-crashes 10) ;; # it crashes early: a few more processes say where
      preload) args+=(--dropin "$build/src/mongoc-dropin/libopmsg-mongoc.so" --require-clean) ;;
      preload-asan)
        local runtime
        runtime=$(readlink -f "$(cc -print-file-name=libasan.so)" || true)
        if [ ! -f "$runtime" ]; then
          fail "soak $release preload-asan: FAILED: no ASan runtime (cc -print-file-name=libasan.so)"
          continue
        fi
        if ! build_asan_dropin "$src" "$build/soak-asan"; then
          tail -n 20 "$build/soak-asan.log"
          fail "soak $release preload-asan: FAILED: the ASan drop-in does not build ($build/soak-asan.log)"
          continue
        fi
        args+=(--dropin "$build/soak-asan/src/mongoc-dropin/libopmsg-mongoc.so" --asan-runtime "$runtime"
               --require-clean --no-rss-limit) ;;
      fork)
        if [ -z "$forkdir" ]; then
          skip "soak $release fork: skipped: no fork libmongoc for $release (SOAK_FORK_LIBDIR)"
          continue
        fi
        args+=(--fork-libdir "$forkdir" --require-clean) ;;
      *) fail "soak $release $kind: FAILED: unknown kind (stock, preload, preload-asan, fork)"; continue ;;
    esac
    # shellcheck disable=SC2086
    "$python" "$here/run_soak.py" "${args[@]}" $SOAK_ARGS 2>&1 | tee "$logs/$release-$kind.txt"
    rc=${PIPESTATUS[0]}
    # The run's own line, for the summary; whether it passed is its status.
    grep -E "^soak \S+ $kind: (operations|FAILED)" "$logs/$release-$kind.txt" >&3 ||
      echo "soak $release $kind: no result line ($logs/$release-$kind.txt)" >&3
    [ "$rc" -eq 0 ] || fail "soak $release $kind: FAILED (exit $rc)"
  done
}

# --- inside a root ----------------------------------------------------------
if [ "${1:-}" = --inside ]; then
  suite=$2
  work=$(cd "$here/../../.." && pwd) # .../opmsg-soak-ID, holding tree/
  cmake -S "$work/tree" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DOPMSG_PARTS=src/mongoc-dropin;tests" -DOPMSG_TEST_SUITES=soak >"$work/build.log" 2>&1 &&
    cmake --build "$work/build" --target opmsg opmsg_mongoc soak-client soak_client_lib soak-late \
      >>"$work/build.log" 2>&1 || {
    tail -n 30 "$work/build.log"
    echo "soak $suite: FAILED: the soak does not build there ($work/build.log)"
    exit 1
  }
  fork=""
  [ -d "$work/fork" ] && fork=$work/fork
  run_kinds "$suite" "$work/build" "$work/tree" "$work/logs" "$fork" 3>"$work/results"
  echo "== results"
  cat "$work/results"
  exit $failed
fi

# --- this machine, then the roots --------------------------------------------
cd "$top" || exit 1
# copy_tree DEST: the working tree as git sees it.
. scripts/lib/copy-tree.sh
build=$(realpath -m "${BUILD:-build}")
logs=$(realpath -m "${SOAK_LOGS:-$build/soak-logs}")
results=$(mktemp)
trap 'rm -f "$results"' EXIT
mkdir -p "$logs"
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-host}")
say "seed $SOAK_SEED (replay: make check-soak SOAK_SEED=$SOAK_SEED), $SOAK_OPS operations a run," \
    "kinds: $SOAK_KINDS; releases: $SOAK_RELEASES"
start=$(date +%s)

for release in $SOAK_RELEASES; do
  if [ "$release" = host ] || [ "$release" = "$codename" ]; then
    fork=""
    if [ -n "${SOAK_FORK_LIBDIR:-}" ]; then
      fork=$(realpath -m "$SOAK_FORK_LIBDIR")
      [ -d "$fork/$codename" ] && fork=$fork/$codename
    fi
    say "== $codename (this machine)"
    run_kinds "$codename" "$build" "$top" "$logs" "$fork" 3>>"$results"
    continue
  fi
  if [ "$(id -u)" -ne 0 ]; then
    skip "soak $release: skipped: the Debian roots need root (chroot)" 3>>"$results"
    continue
  fi
  root=$(scripts/debian-root.sh --path "$release")
  if [ ! -e "$(dirname "$root")/READY-$(basename "$root")" ]; then
    skip "soak $release: skipped: no usable $release root (make distro-roots makes it)" 3>>"$results"
    continue
  fi
  say "== $release (root $root)"
  # One work directory per source tree, so a rerun builds incrementally.
  id=$(echo "$top" | sha1sum | cut -c1-8)
  work=$root/tmp/opmsg-soak-$id
  copy_tree "$work/tree" || exit 1
  rm -rf "$work/fork" "$work/logs" "$work/results"
  if [ -n "${SOAK_FORK_LIBDIR:-}" ] && [ -d "$SOAK_FORK_LIBDIR/$release" ]; then
    cp -a "$SOAK_FORK_LIBDIR/$release" "$work/fork"
  fi
  OPMSG_SOAK_SEED=$SOAK_SEED OPMSG_SOAK_OPS=$SOAK_OPS OPMSG_SOAK_KINDS=$SOAK_KINDS \
    OPMSG_SOAK_THREADS=$SOAK_THREADS OPMSG_SOAK_ARGS=${SOAK_ARGS:-} \
    scripts/debian-root.sh --exec "$release" -- /bin/bash "/tmp/opmsg-soak-$id/tree/tests/soak/check-soak.sh" \
    --inside "$release" | tee "$logs/$release.txt"
  rc=${PIPESTATUS[0]}
  [ -f "$work/results" ] && cat "$work/results" >>"$results"
  [ "$rc" -eq 0 ] || fail "soak $release: FAILED (exit $rc in the root, $logs/$release.txt)" 3>>"$results"
  rm -rf "${logs:?}/$release"
  [ ! -d "$work/logs" ] || cp -a "$work/logs" "$logs/$release"
done

echo
echo "== check-soak: seed $SOAK_SEED, $(( $(date +%s) - start )) s, logs in $logs"
cat "$results"
exit $failed
