#!/bin/bash
# The fork's patch series on mongo-c-driver master, checked with upstream's
# own build and test suite (`make check-fork`, mk/fork.mk, docs/fork.md);
# with --target trixie, its port to Debian 13's 1.30.4 the same way.
#
# Takes the pristine tree (scripts/fork-source.sh), builds libmongoc
# and test-libmongoc with upstream's CMake and ENABLE_MAINTAINER_FLAGS=ON
# once, then applies the series with `git am` in the same tree and build
# directory, so that every later build is incremental, and checks:
#   1. every commit of the series applies, builds alone (no warning), is
#      formatted with upstream's clang-format and .clang-format on the files
#      it touches, keeps upstream's prelude rule (adds no header the series
#      base does not already fail it on), and passes the series'
#      tests that exist at that commit;
#   2. every test of test-libmongoc that needs no server, unpatched and
#      patched, compared test by test (scripts/lib/suite-runs.sh, shared with
#      scripts/libmongoc-suite.sh): every difference must be explained, by
#      the series' lists (fork/TARGET/new-tests.txt, changed-tests.txt) or
#      by scripts/fork-check.explained;
#   3. each new test of the series fails on the pristine library (built
#      with the series' test sources) and passes patched;
#   4. the live tests that FerretDB can serve (scripts/fork-check.live),
#      unpatched and patched, against a private FerretDB v1.24.2;
#   5. the hostile-reply harness (tests/dropin, every mode) against the
#      patched shared libraries with no preload, and the unpatched ones;
#   6. client-side encryption end to end with the patched tree built in
#      the sid root (trixie's for trixie; scripts/fork-check-encryption.sh),
#      when that root is there.
# Writes WORK/report.md and ends with one line:
#
#   fork master a047e0bc: patches N, suite run R, unpatched passed P0, patched passed P1, new tests T (fail unpatched F, guards G, pass patched S), differences D, explained E, harness 36/36, crashes 0
#
# (F + G = T when every new test is right: a guard passes on both sides.)
# Exit status 0 when all of it holds; 1 when something does not (said
# above the last line); 2 when the check could not run.
#
# Usage: scripts/fork-check.sh [OPTIONS]
#   --target NAME       the series to check: master (default), or a Debian
#                       port (trixie: fork/trixie/ on Debian's 1.30.4 tree
#                       with Debian's patches applied, scripts/fork-source.sh
#                       trixie); the defaults below follow it
#   --source DIR        the pristine tree, passed to scripts/fork-source.sh
#                       (default: ../shared/upstream/ next to the repository)
#   --series DIR        the series: *.patch, new-tests.txt, changed-tests.txt
#                       (default fork/TARGET)
#   --work DIR          builds and results (default build/fork/TARGET)
#   --jobs N            tests at a time (default 2)
#   --build-jobs N      compiler jobs (default 2)
#   --timeout SECONDS   time limit per test (default 60)
#   --explained FILE    more explained differences, "test-name<TAB>reason"
#                       (default scripts/fork-check.explained)
#   --live-subset FILE  the live tests to run (default scripts/fork-check.live)
#   --match PREFIX      only the tests whose names start with PREFIX, in the
#                       no-server and live runs (repeatable; for a quick look:
#                       `make check-fork` runs them all)
#   --no-live           leave out the live tests
#   --no-harness        leave out the hostile-reply harness
#   --no-encryption     leave out client-side encryption in the sid root
#                       (the trixie root for trixie)
#   --build-only        build unpatched, new tests and patched, then stop
#                       (what `make bench-fork` needs)
#   --rebuild           build everything again (the build directory is kept)
set -euo pipefail
export LC_ALL=C

prog=fork-check

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/lib/suite-runs.sh"

source_dir=""
target=master
series=""
work=""
jobs=2
bjobs=2
limit=60
explained=$top/scripts/fork-check.explained
live_subset=$top/scripts/fork-check.live
live=1
harness=1
encryption=1
build_only=0
rebuild=0
matches=()
while [ $# -gt 0 ]; do
  case $1 in
    --target) target=${2:?}; shift 2 ;;
    --source) source_dir=$(realpath -m -- "${2:?}"); shift 2 ;;
    --series) series=$(realpath -m -- "${2:?}"); shift 2 ;;
    --work) work=$(realpath -m -- "${2:?}"); shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --build-jobs) bjobs=${2:?}; shift 2 ;;
    --timeout) limit=${2:?}; shift 2 ;;
    --explained) explained=$(realpath -m -- "${2:?}"); shift 2 ;;
    --live-subset) live_subset=$(realpath -m -- "${2:?}"); shift 2 ;;
    --match) matches+=("${2:?}"); shift 2 ;;
    --no-live) live=0; shift ;;
    --no-harness) harness=0; shift ;;
    --no-encryption) encryption=0; shift ;;
    --build-only) build_only=1; shift ;;
    --rebuild) rebuild=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "$prog: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
series=${series:-$top/fork/$target}
work=${work:-$top/build/fork/$target}
# Where the target's client-side encryption can be built: a Debian root whose
# libmongocrypt is new enough for the tree (master 1.20, 1.30.4 1.12).
case $target in
  master) enc_suite=sid ;;
  trixie) enc_suite=trixie ;;
  *) echo "$prog: unknown target $target (master, trixie)" >&2; exit 2 ;;
esac
for n in "$jobs" "$bjobs" "$limit"; do
  case $n in ''|*[!0-9]*|0) die "--jobs, --build-jobs and --timeout need a positive number" ;; esac
done

# --- Phases and their times -----------------------------------------------------------------

# Wall time, and the CPU time of the processes it ran (user + system): the
# machine may be shared, and the CPU time says what a phase costs whatever
# the load.
cpu_now() {  # CPU_NOW: this shell's and its children's CPU seconds so far
  # (times must run in this shell, not in a subshell: not in $(...).)
  times >"$work/.times"
  CPU_NOW=$(awk '{ for (i = 1; i <= NF; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } }
                 END { printf "%d\n", t + 0.5 }' "$work/.times")
}
mkdir -p "$work/logs"
phase_names=()
phase_secs=()
phase_cpu=()
phase_mark=$(date +%s)
phase_start=$phase_mark
cpu_now
cpu_mark=$CPU_NOW
cpu_start=$cpu_mark
phase() {  # NAME: the phase that just ended, and how long it took
  local now cpu
  now=$(date +%s)
  cpu_now
  cpu=$CPU_NOW
  phase_names+=("$1")
  phase_secs+=($((now - phase_mark)))
  phase_cpu+=($((cpu - cpu_mark)))
  say "phase $1: $((now - phase_mark)) s (CPU $((cpu - cpu_mark)) s)"
  phase_mark=$now
  cpu_mark=$cpu
}

failures=()  # what makes the check fail, one line each
fail() { failures+=("$*"); say "FAIL: $*"; }

# --- What is needed -------------------------------------------------------------------------

if command -v dpkg-query >/dev/null; then
  deps=(cmake ninja-build gcc g++ pkg-config git python3 libssl-dev libsasl2-dev libsnappy-dev
        libzstd-dev zlib1g-dev)
  suite_need_pkgs "${deps[@]}"
fi

# --- The pristine tree and the series -------------------------------------------------------------

pristine=$("$top/scripts/fork-source.sh" "$target" ${source_dir:+--source "$source_dir"}) || exit 2
# Where the series applies: the pristine tree, or a Debian packaging tree
# with Debian's own patches applied (the same commit as opmsg-base for master).
base=$(git -C "$pristine" rev-parse opmsg-series-base)
upstream_commit=$(git -C "$pristine" log -1 --format=%s opmsg-base | sed -n 's/.*(\([0-9a-f]*\)).*/\1/p')
short=${upstream_commit:0:8}
# How the last line names the tree: master's commit, a Debian port's upstream
# version (its packaging branch's commit says nothing to a reader).
label=$short
[ "$target" = master ] || label=$(git -C "$pristine" show opmsg-base:VERSION_CURRENT)

[ -d "$series" ] || die "no series in ${series#"$top"/} (the patches of fork/$target/ come with the fork's patch series)"
mapfile -t patches < <(find "$series" -maxdepth 1 -name '*.patch' | sort)
npatches=${#patches[@]}
[ "$npatches" -gt 0 ] || die "no *.patch in ${series#"$top"/}"

# The series' lists: test names, one per line (a reason may follow the name
# after a TAB or spaces in changed-tests.txt); # starts a comment.
list_names() {  # FILE -> the test names
  [ -f "$1" ] || return 0
  sed 's/#.*//' "$1" | awk '$1 ~ /^\// {print $1}'
}
mkdir -p "$work/logs"
list_names "$series/new-tests.txt" >"$work/new-tests.names"
# A new test that pins behaviour master already has, which the series must
# keep, passes on both sides: the series says so after its name, "guard:
# why". Any other new test must fail on the pristine library.
sed 's/#.*//' "$series/new-tests.txt" 2>/dev/null |
  awk '$1 ~ /^\// { name = $1; sub(/^[^ \t]+[ \t]*/, ""); if (tolower($0) ~ /^guard/) print name }' \
  >"$work/guard-tests.names" || true
list_names "$series/changed-tests.txt" >"$work/changed-tests.names"
ntests=$(wc -l <"$work/new-tests.names")
# The explanations the series gives: every new test, and every changed
# test with its reason.
{
  while IFS= read -r t; do printf '%s\tnew test of the series (new-tests.txt)\n' "$t"; done <"$work/new-tests.names"
  if [ -f "$series/changed-tests.txt" ]; then
    # (A line may hold more fields after the name, TAB-separated: the
    # commit, the reason.)
    sed 's/#.*//' "$series/changed-tests.txt" | awk '$1 ~ /^\// {
      name = $1; sub(/^[^ \t]+[ \t]*/, ""); gsub(/\t+/, ": ")
      printf "%s\tchanged by the series (changed-tests.txt): %s\n", name, $0 }'
  fi
} >"$work/series.explained"
say "series: $npatches patches in ${series#"$top"/}, $ntests new tests, $(wc -l <"$work/changed-tests.names") changed tests"
phase source

# --- Builds ---------------------------------------------------------------------------------

tree=$work/tree
bdir=$work/build
cmake_args=(
  -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DENABLE_MAINTAINER_FLAGS=ON
  -DENABLE_TESTS=ON -DENABLE_STATIC=ON -DENABLE_SHARED=ON -DENABLE_EXAMPLES=OFF
  -DENABLE_MAN_PAGES=OFF -DENABLE_HTML_DOCS=OFF -DENABLE_ZLIB=SYSTEM -DENABLE_SNAPPY=ON
  -DENABLE_ZSTD=ON -DENABLE_SSL=OPENSSL -DENABLE_SASL=CYRUS
  # Debian 12's libmongocrypt (1.7.2) is older than master's minimum
  # (1.20) and 1.30.4's (1.12): encryption is checked in a Debian root
  # instead.
  -DENABLE_CLIENT_SIDE_ENCRYPTION=OFF
)
targets=(test-libmongoc mongoc_shared)
key_cfg=$( { printf '%s\n' "${cmake_args[@]}"; cmake --version | head -n 1; gcc --version | head -n 1; } |
           sha256sum | cut -c1-16)
key_base=$(echo "$key_cfg $base" | sha256sum | cut -c1-16)
key_series=$( { echo "$key_base"; cat "${patches[@]}"; } | sha256sum | cut -c1-16)
# The per-commit check also depends on the lists of tests.
key_commits=$( { echo "$key_series"; cat "$work/new-tests.names" "$work/changed-tests.names"; } |
               sha256sum | cut -c1-16)

have() {  # DIR KEY: DIR holds the artifacts of KEY
  [ "$rebuild" -eq 0 ] && [ -x "$1/bin/test-libmongoc" ] && [ "$(cat "$1/key" 2>/dev/null)" = "$2" ]
}

total_warnings=0
build() {  # LABEL TARGET...: an incremental build in $bdir; fails naming LABEL
  local label=$1 log=$work/logs/build-$1.log
  shift
  if ! nice -n 10 cmake --build "$bdir" -j "$bjobs" --target "$@" >"$log" 2>&1; then
    grep -E -A3 'error|warning:' "$log" | head -n 40 >&2
    say "build log: $log"
    return 1
  fi
  BUILD_WARNINGS=$(grep -c 'warning:' "$log" || true)
  BUILD_STEPS=$(grep -c '^\[[0-9]*/[0-9]*\] Building' "$log" || true)
  total_warnings=$((total_warnings + BUILD_WARNINGS))
  [ "$BUILD_WARNINGS" -eq 0 ] || fail "$label: $BUILD_WARNINGS compiler warnings (log: $log)"
}

# Keeps what later phases use from the build directory's current state:
# test-libmongoc, the shared and static libraries, and the headers (the
# tree's and the generated ones), so that the unpatched, new-tests and
# patched builds outlive the next incremental build.
save() {  # DEST KEY
  local dest=$1 key=$2
  rm -rf "$dest.new"
  mkdir -p "$dest.new/bin" "$dest.new/lib" "$dest.new/headers/tree" "$dest.new/headers/build"
  cp "$bdir/src/libmongoc/test-libmongoc" "$dest.new/bin/"
  # (libmongoc2 and libbson2 on master; libmongoc-1.0, libbson-1.0 and
  # their -static-1.0 archives on 1.30.)
  cp -P "$bdir"/src/libmongoc/libmongoc*.so* "$bdir"/src/libbson/libbson*.so* "$dest.new/lib/" 2>/dev/null || true
  cp "$bdir"/src/libmongoc/libmongoc*.a "$bdir"/src/libbson/libbson*.a "$dest.new/lib/" 2>/dev/null || true
  (cd "$tree" && find src -name '*.h' -o -name '*.th' -o -name '*.def' | grep -v '/tests/' |
     tar -cf - -T -) | tar -xf - -C "$dest.new/headers/tree"
  (cd "$bdir" && find src -name '*.h' -not -path '*/CMakeFiles/*' | tar -cf - -T -) |
    tar -xf - -C "$dest.new/headers/build"
  git -C "$tree" rev-parse HEAD >"$dest.new/commit"
  echo "$key" >"$dest.new/key"
  rm -rf "$dest"
  mv "$dest.new" "$dest"
}

# The series' test sources on the pristine library: the changes under the
# test folders, and the CMake lists of the series without the files it
# adds to the library (tokens naming them are dropped, and lines left
# empty by that).
apply_series_tests() {  # SERIES-HEAD
  local head=$1 f
  local -a testdirs=(src/libmongoc/tests src/libbson/tests)
  git -C "$tree" diff --binary "$base" "$head" -- "${testdirs[@]}" | git -C "$tree" apply --whitespace=nowarn
  git -C "$tree" diff --name-only --diff-filter=A "$base" "$head" -- . \
    ":(exclude)src/libmongoc/tests" ":(exclude)src/libbson/tests" >"$work/series-added.txt"
  for f in $(git -C "$tree" diff --name-only "$base" "$head" -- '*CMakeLists.txt' '*.cmake'); do
    git -C "$tree" show "$head:$f" | python3 -c '
import os, re, sys
added = [os.path.basename(l.strip()) for l in open(sys.argv[1]) if l.strip()]
for line in sys.stdin:
    new = line
    for name in added:
        new = re.sub(r"\S*" + re.escape(name) + r"\S*", "", new)
    if new != line and not new.strip():
        continue
    sys.stdout.write(new if new != line else line)' "$work/series-added.txt" >"$tree/$f"
  done
}

built_any=0
if have "$work/unpatched" "$key_base" && have "$work/newtests" "$key_series" && have "$work/patched" "$key_series" &&
   [ "$(head -n 1 "$work/commits.tsv" 2>/dev/null)" = "# $key_commits" ]; then
  say "builds: cached (unpatched $(cut -c1-12 "$work/unpatched/commit"), patched $(cut -c1-12 "$work/patched/commit"))"
else
  built_any=1
  # The tree: a clone of the pristine repository, reset to the base.
  if [ ! -d "$tree/.git" ]; then
    rm -rf "$tree"
    git clone -q "$pristine" "$tree"
  fi
  git -C "$tree" config user.name "opmsg fork-check"
  git -C "$tree" config user.email "fork-check@opmsg.invalid"
  git -C "$tree" am --abort >/dev/null 2>&1 || true
  git -C "$tree" fetch -q "$pristine" "+refs/tags/opmsg-base:refs/tags/opmsg-base" \
    "+refs/tags/opmsg-series-base:refs/tags/opmsg-series-base"
  git -C "$tree" checkout -q -f --detach "$base"
  git -C "$tree" clean -q -fdx
  if [ ! -f "$bdir/CMakeCache.txt" ] || [ "$(cat "$bdir/.fork-key" 2>/dev/null)" != "$key_cfg" ]; then
    rm -rf "$bdir"
    mkdir -p "$bdir"
    say "configure: upstream's CMake with ENABLE_MAINTAINER_FLAGS=ON (log: $work/logs/configure.log)"
    cmake -S "$tree" -B "$bdir" "${cmake_args[@]}" >"$work/logs/configure.log" 2>&1 ||
      { tail -n 30 "$work/logs/configure.log" >&2; die "cmake configure failed"; }
    echo "$key_cfg" >"$bdir/.fork-key"
  fi
  phase configure

  if ! have "$work/unpatched" "$key_base"; then
    say "build: unpatched $target ${short} (${targets[*]})"
    build unpatched "${targets[@]}" || die "the pristine tree does not build"
    say "build: unpatched: $BUILD_STEPS files compiled, $BUILD_WARNINGS warnings"
    save "$work/unpatched" "$key_base"
  else
    say "build: unpatched cached"
  fi
  phase build-unpatched

  # The series, applied in one go first: a patch that does not apply is
  # named before anything is built.
  git -C "$tree" checkout -q -f -B series "$base"
  for i in "${!patches[@]}"; do
    p=${patches[$i]}
    if ! git -C "$tree" am -q --keep-cr --committer-date-is-author-date "$p" >"$work/logs/am.log" 2>&1; then
      cat "$work/logs/am.log" >&2
      git -C "$tree" am --abort >/dev/null 2>&1 || true
      die "patch $((i + 1)) of $npatches, $(basename "$p"), does not apply to $target ${short} (git am, above)"
    fi
  done
  head=$(git -C "$tree" rev-parse HEAD)
  say "series: all $npatches patches apply (git am)"
  phase apply

  # Pristine library, the series' tests.
  git -C "$tree" checkout -q -f --detach "$base"
  apply_series_tests "$head"
  say "build: the series' tests on the pristine library (test-libmongoc)"
  build newtests test-libmongoc || die "the series' tests do not build on the pristine library"
  save "$work/newtests" "$key_series"
  say "build: new tests: $BUILD_STEPS files compiled"
  git -C "$tree" checkout -q -f series
  git -C "$tree" clean -q -fdx
  phase build-new-tests
fi

# --- Each commit alone ------------------------------------------------------------------------

# Environment of a test-libmongoc run without a server (nothing else: env -i).
run_env=(PATH="$PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 MONGOC_TEST_SKIP_LIVE=on MONGOC_TEST_OFFLINE=on)
[ -n "${TMPDIR:-}" ] && run_env+=(TMPDIR="$TMPDIR")

# One run of LIST with a build's test-libmongoc from its tree, JOBS at a
# time, into OUT (suite_run: each test in its own process).
# (Every build is compiled in the tree: its messages name files there.)
run_bin() {  # BIN SRC LIST OUT JOBS [ENV...] (default: run_env)
  local bin=$1 src=$2 list=$3 out=$4 n=$5
  shift 5
  [ $# -gt 0 ] || set -- "${run_env[@]}"
  SUITE_SRC=$src SUITE_BIN=$bin SUITE_LIMIT=$limit SUITE_STRIP=$tree suite_run "$list" "$out" "$n" ctest "$@"
}
list_tests() {  # BIN SRC -> the registered test names
  (cd "$2" && env -i "${run_env[@]}" "$1" --list-tests) | grep '^/' || true
}
selected() {  # the names of standard input that --match selects
  if [ ${#matches[@]} -eq 0 ]; then cat; return 0; fi
  awk 'BEGIN { for (i = 1; i < ARGC; i++) p[i] = ARGV[i]; n = ARGC - 1; ARGC = 1 }
       { for (i = 1; i <= n; i++) if (index($0, p[i]) == 1) { print; next } }' "${matches[@]}"
}

# upstream's tools/format.py formats these (its SOURCE_DIRS, SOURCE_PATTERNS
# and EXCLUDE_SOURCES).
format_scope() {  # FILE... -> those upstream's format.py covers
  local f
  for f in "$@"; do
    case $f in src/libbson/src/jsonsl/*) continue ;; esac
    case $f in src/common/*|src/libbson/*|src/libmongoc/*|tests/*) ;; *) continue ;; esac
    case $f in *.h|*.th|*.hpp|*.c|*.cpp) echo "$f" ;; esac
  done
}

# Formatted with the clang-format series of the target (its manifest) and
# the tree's own .clang-format: by upstream's tools/format.py where the tree
# has it (master); else (1.30, whose own check is clang-format --dry-run over
# every file, and whose pristine mongoc-cluster.c is already off in one place)
# on the lines each commit changes.
cf_pin=$(python3 "$top/fork/generate.py" "$target" --clang-format-pin)
format_check() {  # FILE...: in $tree, the files a commit touches
  if [ -f "$tree/tools/format.py" ]; then
    (cd "$tree" && python3 tools/format.py --mode check -j 2 --clang-format-bin "$clang_format" "$@")
    return
  fi
  local f lines status=0
  for f in "$@"; do
    mapfile -t lines < <(git -C "$tree" diff -U0 HEAD~1 HEAD -- "$f" |
      sed -n 's/^@@ -[0-9,]* +\([0-9]*\),\{0,1\}\([0-9]*\) @@.*/\1 \2/p' |
      awk '$2 != "0" {n = ($2 == "" ? 1 : $2); printf "--lines=%d:%d\n", $1, $1 + n - 1}')
    [ ${#lines[@]} -gt 0 ] || continue
    (cd "$tree" && "$clang_format" --dry-run -Werror --style=file:.clang-format "${lines[@]}" "$f") || status=1
  done
  return $status
}

# Upstream's check-preludes.py on a commit's public headers. It stops at the
# first header without its prelude, and a Debian tree can fail it before the
# series (trixie's validate-private.h, from Debian's own security patch), so
# the headers the series base already fails on are found once and left out:
# what is checked is that the series adds no such header.
prelude_headers=(src/libmongoc/src/mongoc src/libbson/src/bson src/common/src)
preludes_run() {  # COMMIT DIR: check-preludes.py on COMMIT's headers, minus $work/preludes-base.txt
  rm -rf "$2" && mkdir -p "$2/.evergreen/scripts"
  git -C "$tree" archive "$1" -- "${prelude_headers[@]}" | tar -xf - -C "$2"
  git -C "$tree" show "$1:.evergreen/scripts/check-preludes.py" >"$2/.evergreen/scripts/check-preludes.py"
  (cd "$2" && xargs -r rm -f <"$work/preludes-base.txt" && python3 .evergreen/scripts/check-preludes.py .)
}
preludes_base() {  # -> $work/preludes-base.txt, the base's headers that fail, one at a time
  local out i
  : >"$work/preludes-base.txt"
  for i in $(seq 1 50); do
    out=$(preludes_run "$base" "$work/preludes-scratch" 2>&1) && return 0
    out=$(sed -n 's/ did not include prelude$//p' <<<"$out")
    [ -n "$out" ] || die "check-preludes.py fails on the series base for another reason (run it there)"
    echo "$out" >>"$work/preludes-base.txt"
  done
  die "check-preludes.py: more than 50 headers of the series base fail it"
}

if [ "$built_any" -eq 1 ]; then
  preludes_base
  [ ! -s "$work/preludes-base.txt" ] ||
    say "preludes: the series base already fails check-preludes.py on $(tr '\n' ' ' <"$work/preludes-base.txt")(left out)"
  clang_format=$("$top/scripts/clang-format.sh" --pin "$cf_pin") || die "no clang-format $cf_pin (scripts/clang-format.sh)"
  mapfile -t commits < <(git -C "$tree" rev-list --reverse "$base..series")
  cat "$work/new-tests.names" "$work/changed-tests.names" | sort -u >"$work/series-tests.names"
  echo "# $key_commits" >"$work/commits.tsv.new"
  for k in "${!commits[@]}"; do
    c=${commits[$k]}
    n=$((k + 1))
    subject=$(git -C "$tree" log -1 --format=%s "$c")
    git -C "$tree" checkout -q -f --detach "$c"
    mapfile -t touched < <(git -C "$tree" diff --name-only --diff-filter=d "$c~1" "$c")
    mapfile -t scoped < <(format_scope "${touched[@]}")
    fmt=ok
    if [ ${#scoped[@]} -gt 0 ] && ! format_check "${scoped[@]}" >"$work/logs/format-$n.log" 2>&1; then
      fmt=FAIL
      fail "commit $n ($subject): not formatted with upstream's clang-format $("$clang_format" --version | sed 's/.*version //') (log: $work/logs/format-$n.log)"
    fi
    prel=ok
    if ! preludes_run "$c" "$work/preludes-scratch" >"$work/logs/preludes-$n.log" 2>&1; then
      prel=FAIL
      fail "commit $n ($subject): upstream's check-preludes.py: $(tail -n 1 "$work/logs/preludes-$n.log")"
    fi
    # (The shared libraries, which compile the same files again, only for
    # the last commit: the harness needs them.)
    commit_targets=(test-libmongoc)
    [ "$n" -lt "${#commits[@]}" ] || commit_targets=("${targets[@]}")
    if build "commit-$n" "${commit_targets[@]}"; then
      built="$BUILD_STEPS files, $BUILD_WARNINGS warnings"
      bin=$bdir/src/libmongoc/test-libmongoc
      list_tests "$bin" "$tree" | grep -xF -f "$work/series-tests.names" >"$work/commit-$n.tests" || true
      tests="-"
      if [ -s "$work/commit-$n.tests" ]; then
        run_bin "$bin" "$tree" "$work/commit-$n.tests" "$work/runs/commit-$n" "$jobs"
        read -r tn tp _ <<<"$(suite_counts "$work/runs/commit-$n/results.tsv")"
        tests="$tp of $tn pass"
        if [ "$tp" -ne "$tn" ]; then
          fail "commit $n ($subject): $((tn - tp)) of the series' tests fail there: $(awk -F'\t' '$2 != "pass" {printf "%s%s (%s)", s, $1, $6; s = ", "}' "$work/runs/commit-$n/results.tsv")"
        fi
      fi
    else
      built=FAIL
      tests=-
      fail "commit $n ($subject) does not build alone (log: $work/logs/build-commit-$n.log)"
    fi
    say "commit $n/${#commits[@]} $(git -C "$tree" rev-parse --short "$c") $subject: format $fmt, preludes $prel, build $built, tests $tests"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$(git -C "$tree" rev-parse --short=12 "$c")" "$subject" \
      "${#touched[@]}" "$fmt" "$prel" "$built" "$tests" >>"$work/commits.tsv.new"
  done
  mv "$work/commits.tsv.new" "$work/commits.tsv"
  git -C "$tree" checkout -q -f series
  [ -x "$bdir/src/libmongoc/test-libmongoc" ] && [ "$(awk -F'\t' 'END {print $7}' "$work/commits.tsv")" != FAIL ] ||
    die "the last commit of the series does not build"
  save "$work/patched" "$key_series"
  # A failed commit must not look cached on the next run.
  [ ${#failures[@]} -eq 0 ] || sed -i "1s/.*/# failed/" "$work/commits.tsv"
  phase commits
else
  # The verdicts of the cached walk.
  while IFS=$'\t' read -r n sha subject nfiles fmt prel built tests; do
    case $n in '#'*) continue ;; esac
    say "commit $n $sha $subject: format $fmt, preludes $prel, build $built, tests $tests (cached)"
  done <"$work/commits.tsv"
fi
ncommits=$(grep -vc '^#' "$work/commits.tsv" || true)
[ "$ncommits" -eq "$npatches" ] || fail "the series has $npatches patches but $ncommits commits"

if [ "$build_only" -eq 1 ]; then
  say "builds: unpatched $work/unpatched, new tests $work/newtests, patched $work/patched"
  exit 0
fi

# --- test-libmongoc without a server: unpatched and patched -------------------------------------

runs=$work/runs
mkdir -p "$runs"
unpatched_bin=$work/unpatched/bin/test-libmongoc
patched_bin=$work/patched/bin/test-libmongoc
newtests_bin=$work/newtests/bin/test-libmongoc
# The unpatched suite runs from the pristine tree, the others from the
# tree at the series' last commit (their JSON tests are read from there).
list_tests "$unpatched_bin" "$pristine" >"$runs/unpatched.all"
list_tests "$patched_bin" "$tree" >"$runs/patched.all"
selected <"$runs/unpatched.all" >"$runs/unpatched.list"
selected <"$runs/patched.all" >"$runs/patched.list"
[ ${#matches[@]} -eq 0 ] || say "suite: only the tests under ${matches[*]} (--match)"
# Tests on both sides, in the patched order; and those of one side only.
grep -xF -f "$runs/unpatched.list" "$runs/patched.list" >"$runs/both.list" || true
grep -vxF -f "$runs/unpatched.list" "$runs/patched.list" >"$runs/patched-only.list" || true
grep -vxF -f "$runs/patched.list" "$runs/unpatched.list" >"$runs/unpatched-only.list" || true
nrun=$(sort -u "$runs/unpatched.list" "$runs/patched.list" | wc -l)
say "suite: $(wc -l <"$runs/unpatched.list") tests unpatched, $(wc -l <"$runs/patched.list") patched, $jobs at a time"

run_unpatched() { run_bin "$unpatched_bin" "$pristine" "$1" "$2" "${3:-1}"; }
run_patched() { run_bin "$patched_bin" "$tree" "$1" "$2" "${3:-1}"; }

run_unpatched "$runs/unpatched.list" "$runs/unpatched" "$jobs"
read -r _ p0 f0 s0 t0 <<<"$(suite_counts "$runs/unpatched/results.tsv")"
say "suite: unpatched: passed $p0, failed $f0, skipped $s0, timed out $t0 in $(cat "$runs/unpatched/seconds") s"
phase suite-unpatched
run_patched "$runs/patched.list" "$runs/patched" "$jobs"
read -r _ p1 f1 s1 t1 <<<"$(suite_counts "$runs/patched/results.tsv")"
say "suite: patched: passed $p1, failed $f1, skipped $s1, timed out $t1 in $(cat "$runs/patched/seconds") s"
phase suite-patched

# The two runs side by side over the tests both have, for suite_confirm.
align() {  # RESULTS.tsv LIST OUT-DIR: RESULTS' lines of LIST, in LIST's order
  mkdir -p "$3"
  awk -F'\t' 'NR == FNR { r[$1] = $0; next } { print r[$0] }' "$1" "$2" >"$3/results.tsv"
}
align "$runs/unpatched/results.tsv" "$runs/both.list" "$runs/cmp-unpatched"
align "$runs/patched/results.tsv" "$runs/both.list" "$runs/cmp-patched"
suite_confirm "$runs/cmp-unpatched" "$runs/cmp-patched" "$runs" run_unpatched run_patched
# A test of one side only differs by being there.
awk -F'\t' 'FILENAME == ARGV[1] { p[$0] = 1; next }
            FILENAME == ARGV[2] { u[$0] = 1; next }
            FILENAME == ARGV[3] && ($1 in p) { print $1 "\tabsent\t" $2 "\tdifference\tnot registered\t" $6 }
            FILENAME == ARGV[4] && ($1 in u) { print $1 "\t" $2 "\tabsent\tdifference\t" $6 "\tnot registered" }' \
  "$runs/patched-only.list" "$runs/unpatched-only.list" "$runs/patched/results.tsv" "$runs/unpatched/results.tsv" \
  >>"$runs/cmp-patched/confirmed.tsv"
explanations=("$work/series.explained" "$explained")
suite_tally "$runs/cmp-patched/confirmed.tsv" unpatched patched "${explanations[@]}"
ndiff=$SUITE_NDIFF nexpl=$SUITE_NEXPL nflaky=$SUITE_NFLAKY
diff_rows=$SUITE_ROWS flaky_rows=$SUITE_FLAKY_ROWS
if [ "$ndiff" -gt "$nexpl" ]; then
  for t in $(suite_unexplained "$runs/cmp-patched/confirmed.tsv" "${explanations[@]}"); do
    fail "unexplained difference: $t"
  done
fi
say "suite: run $nrun, unpatched passed $p0, patched passed $p1, differences $ndiff, explained $nexpl, flaky $nflaky"

# A test killed by a signal other than its own abort (a failed assertion
# aborts) crashed.
crashes() {  # RESULTS.tsv... -> the names of the tests that crashed
  awk -F'\t' '$4 == 132 || $4 == 135 || $4 == 136 || $4 == 139 {print $1}' "$@"
}
patched_crashes=$(crashes "$runs/patched/results.tsv" | wc -l)
unpatched_crashes=$(crashes "$runs/unpatched/results.tsv" | wc -l)
[ "$patched_crashes" -eq 0 ] || fail "patched test-libmongoc crashed in: $(crashes "$runs/patched/results.tsv" | tr '\n' ' ')"
phase compare

# --- The new tests: fail on the pristine library, pass patched --------------------------------------

list_tests "$newtests_bin" "$tree" >"$runs/newtests.list"
ok_new=0 fail_unpatched=0 pass_patched=0 guards=0
new_rows=""
if [ "$ntests" -gt 0 ]; then
  run_bin "$newtests_bin" "$tree" "$work/new-tests.names" "$runs/new-unpatched" "$jobs"
  run_bin "$patched_bin" "$tree" "$work/new-tests.names" "$runs/new-patched" "$jobs"
  while IFS=$'\t' read -r name ures _ _ _ umsg; do
    IFS=$'\t' read -r _ pres _ _ _ pmsg < <(awk -F'\t' -v n="$name" '$1 == n' "$runs/new-patched/results.tsv")
    verdict=right
    guard=0
    grep -qxF -- "$name" "$work/guard-tests.names" && guard=1
    if ! grep -qxF -- "$name" "$runs/newtests.list"; then
      ures=absent; verdict="not registered on the pristine library"
    elif [ "$ures" = fail ] || [ "$ures" = timeout ]; then
      fail_unpatched=$((fail_unpatched + 1))
      [ "$guard" -eq 0 ] || verdict="**declared a guard, but $ures unpatched**"
    elif [ "$guard" -eq 1 ] && [ "$ures" = pass ]; then
      guards=$((guards + 1))
      verdict="right (a guard: passes on both, as declared)"
    else
      verdict="**$ures unpatched: it does not test the change**"
    fi
    if ! grep -qxF -- "$name" "$runs/patched.all"; then
      pres=absent; verdict="not registered patched"
    elif [ "$pres" = pass ]; then
      pass_patched=$((pass_patched + 1))
    else
      verdict="**$pres patched**"
    fi
    if [ "${verdict%% *}" = right ]; then
      ok_new=$((ok_new + 1))
    else
      fail "new test $name: ${verdict//\*/}"
    fi
    msg=$umsg
    [ "$pres" = pass ] || [ "$pres" = absent ] || msg="patched: $pmsg"
    new_rows+="| \`$name\` | $ures | $pres | $verdict | $(suite_md_cell "$(suite_first_msg "$msg")") |"$'\n'
  done <"$runs/new-unpatched/results.tsv"
fi
say "new tests: $ntests, fail unpatched $fail_unpatched, pass patched $pass_patched, declared guards passing on both $guards"
phase new-tests

# --- Live tests against FerretDB --------------------------------------------------------------

live_line="live: not run (--no-live)"
live_rows=""
if [ "$live" -eq 1 ]; then
  fdb=$(suite_find_ferretdb) || fdb=""
  if [ -z "$fdb" ]; then
    fail "live: FerretDB is not installed (scripts/install-deps.d/peers.sh installs v1.24.2)"
    live_line="live: FerretDB missing"
  else
    fdb_version=$("$fdb" --version 2>/dev/null | sed -n 's/^version: //p' | head -n 1)
    # The live tests: those the no-server runs skipped (on either side),
    # among the subset's prefixes (a "!PREFIX" line leaves tests out).
    awk -F'\t' '$2 == "skip" {print $1}' "$runs/cmp-unpatched/results.tsv" "$runs/cmp-patched/results.tsv" |
      sort -u >"$runs/skipped.names"
    sed 's/#.*//; s/[[:space:]]*$//; s/^[[:space:]]*//' "$live_subset" | grep -v '^$' >"$runs/live.prefixes"
    awk 'FILENAME == ARGV[1] { if (substr($0, 1, 1) == "!") x[++m] = substr($0, 2); else p[++n] = $0; next }
         FILENAME == ARGV[2] { skipped[$0] = 1; next }
         ($0 in skipped) {
           for (i = 1; i <= m; i++) if (index($0, x[i]) == 1) next
           for (i = 1; i <= n; i++) if (index($0, p[i]) == 1) { print; next } }' \
      "$runs/live.prefixes" "$runs/skipped.names" "$runs/both.list" >"$runs/live.list"
    # Each side runs its tests one at a time, against a FerretDB of its own,
    # and the two sides at once: upstream's live tests share databases and
    # collections (every GridFS test drops and recreates test.fs.files), so
    # two of them at once against one server disturb each other, and
    # FerretDB's SQLite backend has died of SIGBUS under two such tests.
    live_port_u=$(suite_free_port)
    live_port_p=$(suite_free_port)
    while [ "$live_port_p" = "$live_port_u" ]; do live_port_p=$(suite_free_port); done
    # Each run, and each run again of a difference, against a fresh FerretDB.
    # Should FerretDB die all the same, the run stops starting tests (each
    # would wait for a server that is gone) and runs once more against a
    # fresh one; a second death fails the check.
    live_run() {  # SIDE LIST OUT
      local side=$1 list=$2 out=$3 port bin src dir try stop env
      case $side in
        unpatched) port=$live_port_u bin=$unpatched_bin src=$pristine ;;
        *) port=$live_port_p bin=$patched_bin src=$tree ;;
      esac
      dir=$runs/ferretdb-$side stop=$runs/ferretdb-$side.stop
      for try in 1 2; do
        rm -f "$stop"
        suite_start_ferretdb "$fdb" "$dir" "$port" || die "live: 127.0.0.1:$port is taken"
        suite_watch_ferretdb "$port" "$stop" "FerretDB on 127.0.0.1:$port died"
        env=(PATH="$PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 MONGOC_TEST_OFFLINE=on
             "MONGOC_TEST_URI=mongodb://127.0.0.1:$port/")
        [ -z "${TMPDIR:-}" ] || env+=(TMPDIR="$TMPDIR")
        SUITE_STOP=$stop run_bin "$bin" "$src" "$list" "$out" 1 "${env[@]}"
        kill "$SUITE_WATCH_PID" 2>/dev/null || true
        wait "$SUITE_WATCH_PID" 2>/dev/null || true
        [ -s "$stop" ] || { suite_stop_ferretdb; return 0; }
        cp "$dir/log" "$work/logs/ferretdb-died-$side-$(basename "$out")-$try.log"
        suite_stop_ferretdb
        say "live: FerretDB died during the $side run of $(basename "$out") (log: $work/logs/ferretdb-died-$side-$(basename "$out")-$try.log)"
      done
      echo "live: FerretDB died twice during the $side run of $(basename "$out")" >>"$runs/live.failures"
    }
    trap suite_stop_ferretdb EXIT
    live_unpatched() { live_run unpatched "$1" "$2"; }
    live_patched() { live_run patched "$1" "$2"; }
    rm -f "$runs/live.failures"
    say "live: $(wc -l <"$runs/live.list") tests ($(basename "$live_subset")) against FerretDB $fdb_version, on 127.0.0.1:$live_port_u unpatched and :$live_port_p patched, the two at once"
    (
      trap suite_stop_ferretdb EXIT
      live_unpatched "$runs/live.list" "$runs/live-unpatched"
    ) &
    live_pid=$!
    live_patched "$runs/live.list" "$runs/live-patched"
    wait "$live_pid" || die "live: the unpatched run failed"
    suite_confirm "$runs/live-unpatched" "$runs/live-patched" "$runs" live_unpatched live_patched
    if [ -s "$runs/live.failures" ]; then
      while IFS= read -r f; do fail "$f"; done <"$runs/live.failures"
    fi
    rm -rf "$runs"/ferretdb-*
    read -r ln lp0 lf0 ls0 lt0 <<<"$(suite_counts "$runs/live-unpatched/results.tsv")"
    read -r _ lp1 lf1 ls1 lt1 <<<"$(suite_counts "$runs/live-patched/results.tsv")"
    suite_tally "$runs/live-patched/confirmed.tsv" unpatched patched "${explanations[@]}"
    live_rows=$SUITE_ROWS$SUITE_FLAKY_ROWS
    for t in $(suite_unexplained "$runs/live-patched/confirmed.tsv" "${explanations[@]}"); do
      fail "live: unexplained difference: $t"
    done
    lcrash=$(crashes "$runs/live-patched/results.tsv" | wc -l)
    patched_crashes=$((patched_crashes + lcrash))
    [ "$lcrash" -eq 0 ] || fail "live: patched test-libmongoc crashed in: $(crashes "$runs/live-patched/results.tsv" | tr '\n' ' ')"
    live_line="live (FerretDB $fdb_version): run $ln, unpatched passed $lp0, patched passed $lp1, differences $SUITE_NDIFF, explained $SUITE_NEXPL, flaky $SUITE_NFLAKY"
  fi
  say "$live_line"
  phase live
fi

# --- The hostile-reply harness, no preload ----------------------------------------------------------

harness_right="-" harness_line="harness: not run (--no-harness)"
if [ "$harness" -eq 1 ]; then
  # tests/dropin's client, an ordinary libmongoc program, built against
  # each build's headers and shared libraries, and run with
  # LD_LIBRARY_PATH set to them.
  harness_client() {  # SIDE
    local a=$work/$1 out=$work/harness/client-$1 mongoc bson
    mkdir -p "$work/harness"
    # The libraries' names: mongoc2 and bson2 on master, mongoc-1.0 and
    # bson-1.0 on 1.30.
    mongoc=$(cd "$a/lib" && ls libmongoc*.so | head -n 1)
    bson=$(cd "$a/lib" && ls libbson*.so | head -n 1)
    mongoc=${mongoc#lib} bson=${bson#lib}
    cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L \
      -I"$a/headers/build/src/libmongoc/src" -I"$a/headers/build/src/libbson/src" \
      -I"$a/headers/tree/src/libmongoc/src" -I"$a/headers/tree/src/libbson/src" \
      "$top/tests/dropin/dropin-client.c" -o "$out" -L"$a/lib" -l"${mongoc%.so}" -l"${bson%.so}" -pthread ||
      die "harness: dropin-client does not build against the $1 headers"
    local got
    got=$(LD_LIBRARY_PATH=$a/lib ldd "$out" | awk -v m="lib$mongoc" 'index($1, m) == 1 {print $3}')
    [ "$(realpath "$(dirname "$got")")" = "$(realpath "$a/lib")" ] ||
      die "harness: the $1 client loads ${got:-no lib$mongoc}, not $a/lib's"
  }
  # Every mode of the hostile server (run_case.py --all: "PASS|FAIL MODE:
  # op: result; ...", then "harness RIGHT/MODES, crashes N"), then the
  # streaming monitor's and the OP_REPLY modes ("PASS|FAIL MODE/op: ...").
  harness_side() {  # SIDE
    local out=$work/harness/$1.out m
    {
      LD_LIBRARY_PATH=$work/$1/lib python3 "$top/tests/dropin/run_case.py" \
        --client "$work/harness/client-$1" --all || true
      for m in $monitor_modes; do
        LD_LIBRARY_PATH=$work/$1/lib python3 "$top/tests/dropin/run_case.py" \
          --client "$work/harness/client-$1" --mode "$m" | grep -E '^(PASS|FAIL) ' || true
      done
    } >"$out" 2>&1
  }
  monitor_modes=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import hostile_server as h
print(" ".join(list(h.MONITOR_MODES) + list(h.OP_REPLY_MODES)))' "$top/tests/dropin")
  harness_client unpatched
  harness_client patched
  # The two sides at once: every operation has a server of its own.
  harness_side unpatched &
  hpid=$!
  harness_side patched
  wait "$hpid"
  for side in unpatched patched; do
    read -r r m c < <(sed -n 's|^harness \([0-9]*\)/\([0-9]*\), crashes \([0-9]*\)$|\1 \2 \3|p' \
                       "$work/harness/$side.out")
    [ -n "${r:-}" ] || { tail -n 20 "$work/harness/$side.out" >&2; die "harness: run_case.py gave no result ($side)"; }
    # Monitor and OP_REPLY modes: each failed operation, and each crash.
    mfail=$( (grep -E '^FAIL [a-z_]+/' "$work/harness/$side.out" || true) | cut -d/ -f1 | sort -u | wc -l)
    mcrash=$(grep -E '^FAIL [a-z_]+/' "$work/harness/$side.out" | grep -cE ': (CRASH|HANG)' || true)
    printf -v "h_$side" '%s %s %s %s %s' "$r" "$m" "$c" "$mfail" "$mcrash"
  done
  read -r hu_right nmodes hu_crash hu_mfail hu_mcrash <<<"$h_unpatched"
  read -r hp_right _ hp_crash hp_mfail hp_mcrash <<<"$h_patched"
  nmon=$(wc -w <<<"$monitor_modes")
  harness_right="$hp_right/$nmodes"
  patched_crashes=$((patched_crashes + hp_crash + hp_mcrash))
  [ "$hp_right" -eq "$nmodes" ] || fail "harness: patched $target right in $hp_right of $nmodes modes ($work/harness/patched.out)"
  [ "$hp_crash" -eq 0 ] || fail "harness: patched $target crashed or hung in $hp_crash modes"
  [ "$hp_mfail" -eq 0 ] || fail "harness: patched $target wrong in $hp_mfail of the $nmon monitor and OP_REPLY modes"
  harness_line="harness (no preload): patched right in $hp_right of $nmodes modes, crashed or hung in $hp_crash, and right in $((nmon - hp_mfail)) of the $nmon monitor and OP_REPLY modes; unpatched right in $hu_right, crashed or hung in $hu_crash, and right in $((nmon - hu_mfail)) of the $nmon"
  # The two sides by mode, for the report.
  harness_rows=$(awk '
    FNR == 1 { side++ }
    /^(PASS|FAIL) [a-z_0-9]+: / { m = $2; sub(/:$/, "", m); r = $0; sub(/^[A-Z]+ [^ ]+ /, "", r)
                                  if (!(m in seen)) { seen[m] = 1; order[++n] = m }; cell[m, side] = r }
    /^(PASS|FAIL) [a-z_0-9]+\// { split($2, a, "/"); m = a[1]; r = $0; sub(/^[A-Z]+ [^ ]+ /, "", r)
                                  if (!(m in seen)) { seen[m] = 1; order[++n] = m }
                                  cell[m, side] = cell[m, side] (cell[m, side] == "" ? "" : "; ") a[2] " " r }
    END { for (i = 1; i <= n; i++) printf "| %s | %s | %s |\n", order[i], cell[order[i], 1], cell[order[i], 2] }' \
    "$work/harness/unpatched.out" "$work/harness/patched.out")
  say "$harness_line"
  phase harness
fi

# --- Client-side encryption in a Debian root ------------------------------------------------------

enc_line="encryption: not run (--no-encryption)"
if [ "$encryption" -eq 1 ]; then
  rc=0
  enc_out=$("$top/scripts/fork-check-encryption.sh" --tree "$tree" --suite "$enc_suite" 2>&1 |
            tee "$work/logs/encryption.log") || rc=$?
  enc_line=$(grep '^encryption ' <<<"$enc_out" | tail -n 1 || true)
  case $rc in
    0) ;;
    77) enc_line="encryption: skipped: $(grep -m 1 '^SKIP' <<<"$enc_out" | sed 's/^SKIP: //' || true)" ;;
    *) fail "encryption: ${enc_line:-failed (log: $work/logs/encryption.log)}" ;;
  esac
  say "$enc_line"
  phase encryption
fi

# --- Report ---------------------------------------------------------------------------------

pristine_dirty=$(git -C "$pristine" status --porcelain | head -n 5)
[ -z "$pristine_dirty" ] || say "NOTE: the runs left files in the pristine tree: $pristine_dirty"
total=$(( $(date +%s) - phase_start ))
line="fork $target ${label}: patches $npatches, suite run $nrun, unpatched passed $p0, patched passed $p1, new tests $ntests (fail unpatched $fail_unpatched, guards $guards, pass patched $pass_patched), differences $ndiff, explained $nexpl, harness $harness_right, crashes $patched_crashes"
{
  echo "# The fork's series on mongo-c-driver $target ${short}"
  echo
  echo "- series: ${series#"$top"/}, $npatches patches; built with upstream's CMake, ENABLE_MAINTAINER_FLAGS=ON, $(gcc --version | head -n 1)"
  echo "- compiler warnings: $total_warnings"
  echo "- total time: $total s$([ "$built_any" -eq 1 ] || echo " (builds cached)")"
  echo
  echo "| phase | wall s | CPU s |"
  echo "|---|---|---|"
  for i in "${!phase_names[@]}"; do echo "| ${phase_names[$i]} | ${phase_secs[$i]} | ${phase_cpu[$i]} |"; done
  echo
  echo "## Each commit alone"
  echo
  echo "Applied with \`git am\`, built incrementally (test-libmongoc and the shared libraries), the"
  echo "touched files checked with upstream's tools/format.py and clang-format $("$top/scripts/clang-format.sh" --pin "$cf_pin" --print-version | sed 's/.*version //'), upstream's"
  echo "check-preludes.py, and the series' tests registered at that commit run."
  echo
  echo "| # | commit | subject | files | format | preludes | build | series' tests |"
  echo "|---|---|---|---|---|---|---|---|"
  awk -F'\t' '!/^#/ {printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8}' "$work/commits.tsv"
  echo
  echo "## test-libmongoc without a server"
  echo
  echo "Every test each build registers, each in its own process (\`--ctest-run\`), ${limit} s at most,"
  echo "$jobs at a time, MONGOC_TEST_SKIP_LIVE=on MONGOC_TEST_OFFLINE=on; unpatched from the pristine tree."
  echo
  echo "| run | tests | passed | failed | skipped | timed out | crashed | wall time |"
  echo "|---|---|---|---|---|---|---|---|"
  echo "| unpatched | $(wc -l <"$runs/unpatched.list") | $p0 | $f0 | $s0 | $t0 | $unpatched_crashes | $(cat "$runs/unpatched/seconds") s |"
  echo "| patched | $(wc -l <"$runs/patched.list") | $p1 | $f1 | $s1 | $t1 | $(crashes "$runs/patched/results.tsv" | wc -l) | $(cat "$runs/patched/seconds") s |"
  echo
  echo "### Differences: $ndiff, explained $nexpl"
  echo
  echo "Each was run twice more per side, one test at a time, with the same result in every try."
  echo "Explanations: the series' new-tests.txt and changed-tests.txt, then scripts/$(basename "$explained")."
  echo
  if [ "$ndiff" -gt 0 ]; then
    echo "| test | unpatched | patched | message | explanation |"
    echo "|---|---|---|---|---|"
    printf '%s' "$diff_rows"
  else
    echo "None."
  fi
  if [ "$nflaky" -gt 0 ]; then
    echo
    echo "Flaky (results overlap between the sides over three tries; not counted): $nflaky"
    echo
    echo "| test | unpatched tries | patched tries | message |"
    echo "|---|---|---|---|"
    printf '%s' "$flaky_rows"
  fi
  echo
  echo "## The new tests"
  echo
  echo "Each on the pristine library built with the series' test sources, and patched: each must fail"
  echo "unpatched and pass patched, except the guards new-tests.txt declares (\"guard: ...\" after the"
  echo "name: behaviour master has and the series keeps), which pass on both ($guards here)."
  echo
  if [ -n "$new_rows" ]; then
    echo "| test | unpatched | patched | verdict | message (why it fails unpatched) |"
    echo "|---|---|---|---|---|"
    printf '%s' "$new_rows"
  else
    echo "None listed in new-tests.txt."
  fi
  echo
  echo "## Live tests against FerretDB"
  echo
  echo "$live_line"
  if [ -n "$live_rows" ]; then
    echo
    echo "| test | unpatched | patched | message | explanation |"
    echo "|---|---|---|---|---|"
    printf '%s' "$live_rows"
  fi
  echo
  echo "## The hostile-reply harness"
  echo
  echo "$harness_line"
  if [ "$harness" -eq 1 ]; then
    echo
    echo "\"right\": a legal reply gave the right result (merged fields visible, find returned its"
    echo "documents, insert_many counted 3); an illegal one gave a clean error. Each client runs with"
    echo "LD_LIBRARY_PATH set to its build's libraries (tests/dropin/run_case.py --all, then the"
    echo "streaming monitor's and the OP_REPLY modes)."
    echo
    echo "| mode | unpatched $target | patched $target |"
    echo "|---|---|---|"
    echo "$harness_rows"
  fi
  echo
  echo "## Client-side encryption ($enc_suite root)"
  echo
  echo "$enc_line"
  if [ ${#failures[@]} -gt 0 ]; then
    echo
    echo "## Failures"
    echo
    printf -- '- %s\n' "${failures[@]}"
  fi
  echo
  echo "$line"
} >"$work/report.md"

say "report: $work/report.md"
for i in "${!phase_names[@]}"; do
  printf '%s  %-16s %5s s  CPU %5s s\n' "$prog:" "${phase_names[$i]}" "${phase_secs[$i]}" "${phase_cpu[$i]}"
done
cpu_now
say "total: $total s (CPU $((CPU_NOW - cpu_start)) s, load average $(cut -d' ' -f1-3 /proc/loadavg))"
if [ ${#failures[@]} -gt 0 ]; then
  say "${#failures[@]} failures:"
  printf '  %s\n' "${failures[@]}"
fi
echo "$line"
[ ${#failures[@]} -eq 0 ]
