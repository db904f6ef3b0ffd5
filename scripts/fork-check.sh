#!/bin/bash
# The fork's pull requests (fork/TARGET/K-NAME/) checked on mongo-c-driver
# with upstream's own CMake and CTest: each applied with `git am` on its
# base, every commit built alone and format-checked, test-libmongoc's
# no-server suite compared (scripts/lib/junit-compare.py) and the new tests
# failing unpatched, passing patched; then all applied: the hostile-reply
# harness, live tests against FerretDB, encryption, conformance, symbols.
# docs/fork.md says how, step by step, and what each printed line means.
# Each step's data stays in WORK (docs/fork.md names the files); exit status
# 0 when all holds, 1 when something does not, 2 when the check could not run.
#
# Usage: scripts/fork-check.sh [OPTIONS]
#   --target NAME       master (default), or a Debian port on Debian's tree:
#                       bookworm (1.23.1) or trixie (1.30.4)
#   --source DIR        the pristine tree for scripts/fork-source.sh
#                       (default: ../shared/upstream/ next to the repository)
#   --series DIR        the fork's folder (default fork/TARGET)
#   --work DIR          builds and results (default build/fork/TARGET)
#   --pr K              check only pull request K (number or folder;
#                       repeatable): nothing with all of them applied
#   --ci                the whole suite once, master against all (not per PR)
#   --speed-pr K        a PR whose new tests may all be guards (default 4;
#                       repeatable, the first use replaces the default)
#   --jobs N, --build-jobs N   tests, compiler jobs at a time (default 2)
#   --timeout S, --repeat N    a test's limit (default 60), ctest --repeat
#                       until-pass:N (default 3)
#   --explained FILE    explained differences, "test-name<TAB>reason"
#                       (default scripts/fork-check.explained)
#   --live-subset FILE  the live tests (default scripts/fork-check.live)
#   --match PREFIX      only the tests whose names start with PREFIX
#                       (no-server and live runs; repeatable)
#   --no-live, --no-harness, --no-encryption, --no-conformance
#                       leave that step out
#   --build-only        the builds, then stop (what `make bench-fork` needs)
#   --rebuild           build everything again (the build directory too)
set -euo pipefail
export LC_ALL=C
prog=fork-check top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/lib/suite-common.sh"
source_dir="" target=master series="" work="" jobs=2 bjobs=2 limit=60 repeat=3
explained=$top/scripts/fork-check.explained live_subset=$top/scripts/fork-check.live
live=1 harness=1 encryption=1 conformance=1 build_only=0 rebuild=0 ci=0
matches=() only=() speed_prs=(4) speed_set=0
while [ $# -gt 0 ]; do
  case $1 in
    --target) target=${2:?}; shift 2 ;;
    --source) source_dir=$(realpath -m -- "${2:?}"); shift 2 ;;
    --series|--work|--explained|--live-subset) v=${1#--}; printf -v "${v/-/_}" '%s' "$(realpath -m -- "${2:?}")"; shift 2 ;;
    --pr) only+=("${2:?}"); shift 2 ;;
    --ci) ci=1; shift ;;
    --speed-pr) [ "$speed_set" -eq 1 ] || speed_prs=(); speed_set=1; speed_prs+=("${2:?}"); shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --build-jobs) bjobs=${2:?}; shift 2 ;;
    --timeout) limit=${2:?}; shift 2 ;;
    --repeat) repeat=${2:?}; shift 2 ;;
    --match) matches+=("${2:?}"); shift 2 ;;
    --no-live|--no-harness|--no-encryption|--no-conformance) printf -v "${1#--no-}" 0; shift ;;
    --build-only) build_only=1; shift ;;
    --rebuild) rebuild=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "$prog: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
series=${series:-$top/fork/$target}
work=${work:-$top/build/fork/$target}
# The Debian root whose libmongocrypt is new enough for the tree's
# encryption, and the clang-format series of upstream's pins.
case $target in
  master) enc_suite=sid cf_pin=20.1.8 ;;
  trixie) enc_suite=trixie cf_pin=17.0.6 ;;
  bookworm) enc_suite=bookworm cf_pin=17.0.6 ;;
  *) echo "$prog: unknown target $target (master, trixie, bookworm)" >&2; exit 2 ;;
esac
for n in "$jobs" "$bjobs" "$limit" "$repeat"; do
  case $n in ''|*[!0-9]*|0) die "--jobs, --build-jobs, --timeout and --repeat need a positive number" ;; esac
done

# Each phase's wall and CPU time (`times`: in this shell, not in $(...)).
cpu_now() {
  times >"$work/.times"
  CPU_NOW=$(awk '{ for (i = 1; i <= NF; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } }
                 END { printf "%d\n", t + 0.5 }' "$work/.times")
}
mkdir -p "$work/logs"
phase_names=() phase_secs=() phase_cpu=() phase_mark=$(date +%s)
phase_start=$phase_mark
cpu_now
cpu_mark=$CPU_NOW cpu_start=$CPU_NOW
phase() {  # NAME: the phase that just ended
  local now
  now=$(date +%s)
  cpu_now
  phase_names+=("$1") phase_secs+=($((now - phase_mark))) phase_cpu+=($((CPU_NOW - cpu_mark)))
  say "phase $1: $((now - phase_mark)) s (CPU $((CPU_NOW - cpu_mark)) s)"
  phase_mark=$now cpu_mark=$CPU_NOW
}

failures=()  # what makes the check fail, one line each
fail() { failures+=("$*"); say "FAIL: $*"; }

command -v dpkg-query >/dev/null && suite_need_pkgs cmake ninja-build gcc g++ pkg-config git python3 \
  libssl-dev libsasl2-dev libsnappy-dev libzstd-dev zlib1g-dev binutils ccache

# --- The pristine tree and the fork's layout ----------------------------------------------------
pristine=$("$top/scripts/fork-source.sh" "$target" ${source_dir:+--source "$source_dir"}) || exit 2
# Where the fork applies, and how the lines name it: master's commit, a
# port's upstream version (1.23.1's in its changelog, as BUILD_VERSION).
base_ref=$(git -C "$pristine" rev-parse opmsg-series-base)
upstream_commit=$(git -C "$pristine" log -1 --format=%s opmsg-base | sed -n 's/.*(\([0-9a-f]*\)).*/\1/p')
label=${upstream_commit:0:8} build_version=()
if [ "$target" != master ]; then
  label=$(git -C "$pristine" show opmsg-base:VERSION_CURRENT 2>/dev/null) || {
    label=$(git -C "$pristine" show opmsg-base:debian/changelog | sed -n '1s/^[^(]*(\([0-9]*:\)\{0,1\}\([^)-]*\).*/\2/p')
    build_version=("-DBUILD_VERSION=$label")
  }
  [ -n "$label" ] || die "no upstream version in the $target tree"
fi

[ -d "$series" ] || die "no folder ${series#"$top"/}"
# The units: the pull requests (folders K-NAME/), each on its base.
units=()
declare -A u_dir u_num u_base u_label u_head u_applied u_selected u_speed
mapfile -t pr_dirs < <(find "$series" -mindepth 1 -maxdepth 1 -type d -name '[0-9]*-*' | sort -V)
[ ${#pr_dirs[@]} -gt 0 ] || die "no pull request folders in ${series#"$top"/} (K-NAME/0001-*.patch)"
for d in "${pr_dirs[@]}"; do
  name=$(basename "$d") num=${name%%-*}
  case $num in ''|*[!0-9]*) die "$name: a pull request folder is NUMBER-NAME" ;; esac
  units+=("$name") u_dir[$name]=$d u_num[$name]=$num u_label[$name]="PR $num ${name#*-}"
done
named() {  # UNIT WORD...: true when a WORD names UNIT (its folder or its number)
  local u=$1 o
  shift
  for o in "$@"; do [ "$o" != "$u" ] && [ "$o" != "${u_num[$u]}" ] || return 0; done
  return 1
}
checked=()
for name in "${units[@]}"; do
  b=master
  if [ -f "${u_dir[$name]}/base" ]; then
    b=$(sed 's/#.*//; s/^[[:space:]]*[Bb]ase:[[:space:]]*//' "${u_dir[$name]}/base" | awk 'NF {print $1; exit}')
    b=${b:-master}
  elif grep -qiE 'applies (only )?on (top of )?PR [0-9]' "${u_dir[$name]}/0000-cover-letter.patch" 2>/dev/null; then
    die "$name: its cover letter says it applies on another pull request, but $name/base does not say which (one line: the folder, e.g. 1-no-abort)"
  fi
  if [ "$b" != master ]; then
    found=""
    for other in "${units[@]}"; do ! named "$other" "$b" "${b#PR}" || found=$other; done
    [ -n "$found" ] || die "$name/base names '$b': no such pull request folder"
    [ "${u_num[$found]}" -lt "${u_num[$name]}" ] || die "$name/base names $found: a base must have a lower number"
    b=$found
  fi
  u_base[$name]=$b u_selected[$name]=1 u_speed[$name]=0
  [ ${#only[@]} -eq 0 ] || named "$name" "${only[@]}" || u_selected[$name]=0
  ! named "$name" "${speed_prs[@]}" || u_speed[$name]=1
  [ "${u_selected[$name]}" -eq 0 ] || checked+=("$name")
done
[ ${#checked[@]} -gt 0 ] || die "--pr ${only[*]}: no such pull request in ${series#"$top"/}"
whole=1  # (all, live, harness, ...: every pull request checked)
[ ${#checked[@]} -eq ${#units[@]} ] || whole=0

unit_patches() {  # NAME -> its patches, in order (not the cover letter)
  find "${u_dir[$1]}" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' ! -name '0000-*' | sort
}
# A list's lines: "/test-name", maybe a reason after a TAB or spaces; #
# starts a comment.
list_entries() {  # FILE -> "name<TAB>the rest"
  [ ! -f "$1" ] || sed 's/#.*//' "$1" | awk '$1 ~ /^\// { n = $1; sub(/^[^ \t]+[ \t]*/, ""); print n "\t" $0 }'
}
for name in "${units[@]}"; do
  d=${u_dir[$name]} w=$work/units/$name
  mkdir -p "$w"
  list_entries "$d/new-tests.txt" | cut -f1 >"$w/new-tests.names"
  list_entries "$d/new-tests.txt" | awk -F'\t' 'tolower($2) ~ /^guard/ {print $1}' >"$w/guard-tests.names"
  list_entries "$d/changed-tests.txt" | cut -f1 >"$w/changed-tests.names"
  sort -u "$w/new-tests.names" "$w/changed-tests.names" >"$w/tests.names"
  {  # (the differences it explains)
    sed "s/\$/\tnew test of ${u_label[$name]} (new-tests.txt)/" "$w/new-tests.names"
    list_entries "$d/changed-tests.txt" | awk -v who="${u_label[$name]}" '{ n = $1; sub(/^[^\t]*\t/, ""); gsub(/\t+/, ": ")
      printf "%s\tchanged by %s (changed-tests.txt): %s\n", n, who, $0 }'
  } >"$w/explained"
  n=$(unit_patches "$name" | wc -l)
  [ "$n" -gt 0 ] || die "no patches in ${d#"$top"/}"
  [ -s "$w/new-tests.names" ] || say "NOTE: ${d#"$top"/}/new-tests.txt is missing or names no test"
  say "${u_label[$name]}: $n patches in ${d#"$top"/}, on ${u_base[$name]}, $(wc -l <"$w/new-tests.names") new tests ($(wc -l <"$w/guard-tests.names") guards), $(wc -l <"$w/changed-tests.names") changed$([ "${u_selected[$name]}" -eq 1 ] || echo " (not checked: --pr)")"
done
phase source

# --- The working tree, and every unit applied -----------------------------------------------
# One working tree and build directory moved by checkouts; `git am` in a worktree of its own.
tree=$work/tree bdir=$work/build apply=$work/apply
[ "$rebuild" -eq 0 ] || rm -rf "$bdir" "$work/builds" "$work/verdicts"
[ -d "$tree/.git" ] || { rm -rf "$tree"; git clone -q "$pristine" "$tree"; }
git -C "$tree" config user.name "opmsg fork-check"
git -C "$tree" config user.email "fork-check@opmsg.invalid"
git -C "$tree" config core.autocrlf false
git -C "$tree" am --abort >/dev/null 2>&1 || true
git -C "$tree" fetch -q "$pristine" "+refs/tags/opmsg-base:refs/tags/opmsg-base" \
  "+refs/tags/opmsg-series-base:refs/tags/opmsg-series-base"
git -C "$tree" worktree prune
[ -e "$apply/.git" ] || { rm -rf "$apply"; git -C "$tree" worktree add -q --detach "$apply" "$base_ref"; }
git -C "$apply" am --abort >/dev/null 2>&1 || true

# (The committer dated as the author: the same patches give the same commits.)
am() {  # BRANCH START NAME: NAME's patches on START, as BRANCH; sets AM_HEAD
  local p i=0 log=$work/logs/am-${1//\//-}.log ps=()
  mapfile -t ps < <(unit_patches "$3")
  git -C "$apply" checkout -q -f -B "$1" "$2"
  for p in "${ps[@]}"; do
    i=$((i + 1))
    git -C "$apply" am -q --keep-cr --committer-date-is-author-date "$p" >"$log" 2>&1 && continue
    git -C "$apply" am --abort >/dev/null 2>&1 || true
    AM_FAILED="patch $i of ${#ps[@]}, $(basename "$p"): $(grep -m 1 -E '^error:' "$log" || echo "see $log")"
    return 1
  done
  AM_HEAD=$(git -C "$apply" rev-parse HEAD)
}
for name in "${units[@]}"; do
  b=${u_base[$name]} u_applied[$name]=no start=$base_ref on="$target $label"
  if [ "$b" != master ]; then
    start=${u_head[$b]:-} on=${u_label[$b]}
    [ "${u_applied[$b]}" = yes ] || { fail "${u_label[$name]}: not applied: its base, $on, does not apply"; continue; }
  fi
  if am "fork/$name" "$start" "$name"; then
    u_applied[$name]=yes u_head[$name]=$AM_HEAD
    say "${u_label[$name]}: applies on $on (git am, $(git -C "$tree" rev-list --count "$start..$AM_HEAD") commits)"
  else
    fail "${u_label[$name]} does not apply on $on: $AM_FAILED"
  fi
done
# Every pull request, in order, on the base.
all_head=""
if [ "$whole" -eq 1 ]; then
  start=$base_ref
  for name in "${units[@]}"; do
    am fork/all "$start" "$name" || { fail "all: ${u_label[$name]} does not apply after the pull requests before it: $AM_FAILED"; start=""; break; }
    start=$AM_HEAD
  done
  all_head=$start
  [ -z "$all_head" ] || say "all: the ${#units[@]} pull requests apply together, in order ($(git -C "$tree" rev-list --count "$base_ref..$all_head") commits)"
fi
git -C "$apply" checkout -q -f --detach "$base_ref"
phase apply

# --- Builds ---------------------------------------------------------------------------------
# (Debian 12's libmongocrypt is too old for the trees: encryption in a Debian
# root. 1.23's uninstall script loops for ever on another install prefix.)
cmake_args=(
  -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DENABLE_MAINTAINER_FLAGS=ON
  -DENABLE_TESTS=ON -DENABLE_STATIC=ON -DENABLE_SHARED=ON -DENABLE_EXAMPLES=OFF
  -DENABLE_MAN_PAGES=OFF -DENABLE_HTML_DOCS=OFF -DENABLE_ZLIB=SYSTEM -DENABLE_SNAPPY=ON
  -DENABLE_ZSTD=ON -DENABLE_SSL=OPENSSL -DENABLE_SASL=CYRUS -DENABLE_CLIENT_SIDE_ENCRYPTION=OFF
  "${build_version[@]}"
)
[ "$target" != bookworm ] || cmake_args+=(-DENABLE_UNINSTALL=OFF)
# The key of everything built: the options and the compilers.
key_cfg=$( { printf '%s\n' "${cmake_args[@]}"; cmake --version | head -n 1; gcc --version | head -n 1; } |
           sha256sum | cut -c1-16)
launcher=()
if command -v ccache >/dev/null; then
  # (The pull requests' own worktrees under build/fork/ share the cache.)
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$top/build/fork CCACHE_NOHASHDIR=1
  [[ $work/ == "$top"/build/fork/* ]] || CCACHE_BASEDIR=$work
fi
targets=(test-libmongoc mongoc_shared)

if [ ! -f "$bdir/CMakeCache.txt" ] || [ "$(cat "$bdir/.fork-key" 2>/dev/null)" != "$key_cfg ${launcher[*]}" ]; then
  rm -rf "$bdir" && mkdir -p "$bdir"
  say "configure: upstream's CMake with ENABLE_MAINTAINER_FLAGS=ON${launcher[*]:+, ccache} (log: $work/logs/configure.log)"
  cmake -S "$tree" -B "$bdir" "${cmake_args[@]}" "${launcher[@]}" >"$work/logs/configure.log" 2>&1 ||
    { tail -n 30 "$work/logs/configure.log" >&2; die "cmake configure failed"; }
  echo "$key_cfg ${launcher[*]}" >"$bdir/.fork-key"
fi

build() {  # LABEL TARGET...: an incremental build in $bdir; fails naming LABEL
  local label=$1 log=$work/logs/build-$1.log
  shift
  nice -n 10 cmake --build "$bdir" -j "$bjobs" --target "$@" >"$log" 2>&1 ||
    { grep -E -A3 'error|warning:' "$log" | head -n 40 >&2; say "build log: $log"; return 1; }
  # The pristine tree's own warnings ("FILE: warning: MESSAGE" as base's
  # build recorded them; 1.23.1 has six with gcc 12 and OpenSSL 3) not counted.
  grep -o '[^ ]*: warning: .*' "$log" | sed -E 's/:[0-9]+:([0-9]+:)? warning:/: warning:/' | sort -u >"$log.warnings" || true
  [ "$label" != base ] || cp "$log.warnings" "$work/base-warnings.txt"
  touch "$work/base-warnings.txt"
  BUILD_WARNINGS=$(comm -23 "$log.warnings" "$work/base-warnings.txt" | wc -l)
  BUILD_STEPS=$(grep -c '^\[[0-9]*/[0-9]*\] Building' "$log" || true)
  [ "$label" = base ] || [ "$BUILD_WARNINGS" -eq 0 ] || fail "$label: $BUILD_WARNINGS compiler warnings (log: $log)"
  [ "$label" != base ] || [ ! -s "$log.warnings" ] || say "build: the pristine tree's own warnings, not counted: $(wc -l <"$log.warnings") ($log.warnings)"
}
goto() {  # COMMIT: the working tree there, clean (nothing done when it is)
  if [ "$(git -C "$tree" rev-parse HEAD)" != "$(git -C "$tree" rev-parse "$1^{commit}")" ] ||
     [ -n "$(git -C "$tree" status --porcelain --ignored | head -n 1)" ]; then
    git -C "$tree" checkout -q -f --detach "$1"
    git -C "$tree" clean -q -fdx
  fi
}
# A build kept in builds/NAME: test-libmongoc, the libraries, the headers
# (the tree's and generated), with --install `cmake --install`ed in prefix/.
save() {  # NAME KEY COMMIT [--install]
  local dest=$work/builds/$1 key=$2 commit=$3
  rm -rf "$dest.new"
  mkdir -p "$dest.new/bin" "$dest.new/lib" "$dest.new/headers/tree" "$dest.new/headers/build"
  cp "$bdir/src/libmongoc/test-libmongoc" "$dest.new/bin/"
  cp -P "$bdir"/src/libmongoc/libmongoc*.so* "$bdir"/src/libbson/libbson*.so* "$dest.new/lib/" 2>/dev/null || true
  cp "$bdir"/src/libmongoc/libmongoc*.a "$bdir"/src/libbson/libbson*.a "$dest.new/lib/" 2>/dev/null || true
  (cd "$tree" && find src -name '*.h' -o -name '*.th' -o -name '*.def' | grep -v '/tests/' |
     tar -cf - -T -) | tar -xf - -C "$dest.new/headers/tree"
  (cd "$bdir" && find src -name '*.h' -not -path '*/CMakeFiles/*' | tar -cf - -T -) |
    tar -xf - -C "$dest.new/headers/build"
  # (From $work: 1.23's install writes mongoc_install_manifest.txt where it runs.)
  if [ "${4:-}" = --install ] && ! (cd "$work" && cmake --install "$bdir" --prefix "$dest.new/prefix") >"$work/logs/install-$1.log" 2>&1; then
    tail -n 20 "$work/logs/install-$1.log" >&2
    die "cmake --install of $1 failed (log: $work/logs/install-$1.log)"
  fi
  git -C "$tree" rev-parse "$commit^{commit}" >"$dest.new/commit"
  git -C "$tree" rev-parse "$commit^{tree}" >"$dest.new/tree"
  echo "$key" >"$dest.new/key"
  rm -rf "$dest" && mv "$dest.new" "$dest"
}
state_key() {  # COMMIT KIND -> the key of COMMIT's tree built as KIND
  echo "$key_cfg $(git -C "$tree" rev-parse "$1^{tree}") $2" | sha256sum | cut -c1-16
}
have() {  # NAME KEY: a kept build of KEY (whose tree the repository still has)
  [ -x "$work/builds/$1/bin/test-libmongoc" ] && [ "$(cat "$work/builds/$1/key" 2>/dev/null)" = "$2" ] &&
    git -C "$tree" cat-file -e "$(cat "$work/builds/$1/tree")^{tree}" 2>/dev/null
}
# NAME: COMMIT built as KIND (full: with the shared libraries; tests) and
# kept, unless it is already (--install: mongoc-stat too, which it wants).
ensure() {  # NAME COMMIT KIND [--install]
  local name=$1 commit=$2 key t=("${targets[@]}")
  key=$(state_key "$commit" "$3${4:-}")
  if have "$name" "$key"; then
    say "build: $name: kept from an earlier run ($(cut -c1-12 "$work/builds/$name/commit"))"
    return 0
  fi
  goto "$commit"
  [ "$3" = full ] || t=(test-libmongoc)
  [ "${4:-}" != --install ] || ! grep -q '^mongoc-stat:' <<<"$(ninja -C "$bdir" -t targets all 2>/dev/null)" || t+=(mongoc-stat)
  say "build: $name (${t[*]})"
  build "$name" "${t[@]}" || return 1
  say "build: $name: $BUILD_STEPS files compiled, $BUILD_WARNINGS warnings"
  save "$name" "$key" "$commit" ${4:-}
}

# NAME's test sources on its base (docs/fork.md), as a commit made through
# an index of its own: its test folders, its CMake lists without the files
# it adds to the library, and its stubs K-NAME/unpatched/PATH.
testdirs=(src/libmongoc/tests src/libbson/tests)
newtests_commit() {  # BASE HEAD UNIT-DIR -> the commit
  local b=$1 h=$2 idx=$work/newtests.index f blob
  rm -f "$idx"
  GIT_INDEX_FILE=$idx git -C "$tree" read-tree "$b"
  if ! git -C "$tree" diff --quiet "$b" "$h" -- "${testdirs[@]}"; then
    git -C "$tree" diff --binary "$b" "$h" -- "${testdirs[@]}" |
      GIT_INDEX_FILE=$idx git -C "$tree" apply --cached --whitespace=nowarn
  fi
  git -C "$tree" diff --name-only --diff-filter=A "$b" "$h" -- . \
    ":(exclude)src/libmongoc/tests" ":(exclude)src/libbson/tests" >"$work/added.txt"
  # The folders those files add.
  awk -F/ '{ p = ""; for (i = 1; i < NF; i++) { p = p (i > 1 ? "/" : "") $i; print p } }' "$work/added.txt" | sort -u |
    while read -r f; do git -C "$tree" cat-file -e "$b:$f" 2>/dev/null || echo "$f/"; done >>"$work/added.txt"
  for f in $(git -C "$tree" diff --name-only --diff-filter=M "$b" "$h" -- '*CMakeLists.txt' '*.cmake' \
               ":(exclude)src/libmongoc/tests" ":(exclude)src/libbson/tests"); do
    blob=$(git -C "$tree" show "$h:$f" | python3 -c '
import os, re, sys
added = [os.path.basename(l.strip().rstrip("/")) for l in open(sys.argv[1]) if l.strip()]
for line in sys.stdin:
    new = line
    for name in added:
        new = re.sub(r"\S*" + re.escape(name) + r"\S*", "", new)
    # (A line left empty, or a bare command, as "add_subdirectory (fuzz)" leaves, goes.)
    if new != line and re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)?\s*", new):
        continue
    sys.stdout.write(new if new != line else line)' "$work/added.txt" | git -C "$tree" hash-object -w --stdin)
    GIT_INDEX_FILE=$idx git -C "$tree" update-index --cacheinfo "100644,$blob,$f"
  done
  if [ -d "$3/unpatched" ]; then
    (cd "$3/unpatched" && find . -type f | sed 's|^\./||' | sort) | while IFS= read -r f; do
      blob=$(git -C "$tree" hash-object -w -- "$3/unpatched/$f")
      GIT_INDEX_FILE=$idx git -C "$tree" update-index --add --cacheinfo "100644,$blob,$f"
    done
  fi
  GIT_AUTHOR_NAME=fork-check GIT_AUTHOR_EMAIL=fork-check@opmsg.invalid GIT_AUTHOR_DATE=2000-01-01T00:00:00Z \
  GIT_COMMITTER_NAME=fork-check GIT_COMMITTER_EMAIL=fork-check@opmsg.invalid GIT_COMMITTER_DATE=2000-01-01T00:00:00Z \
    git -C "$tree" commit-tree "$(GIT_INDEX_FILE=$idx git -C "$tree" write-tree)" -p "$b" -m "the new tests on the base"
  rm -f "$idx"
}

# One CTest run (junit-compare.py run) of a test-libmongoc from SRC into
# OUT: the tests named in LIST, or with "-" every test (--match's); in ENV,
# by default without a server. (Messages name files in $tree: built there.)
run_env=(PATH="$PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 MONGOC_TEST_SKIP_LIVE=on MONGOC_TEST_OFFLINE=on)
[ -z "${TMPDIR:-}" ] || run_env+=(TMPDIR="$TMPDIR")
run_bin() {  # BIN SRC LIST OUT JOBS [ENV...]
  local bin=$1 src=$2 list=$3 out=$4 n=$5 m sel=(--names "$3")
  shift 5
  [ $# -gt 0 ] || set -- "${run_env[@]}"
  if [ "$list" = - ]; then sel=(); for m in "${matches[@]}"; do sel+=(--match "$m"); done; fi
  rm -rf "$out"
  "$jc" run --exe "$bin" --src "$src" --out "$out" --jobs "$n" --timeout "$limit" --repeat "${RUN_REPEAT:-$repeat}" \
    --strip "$src" --strip "$tree" --strip ../tree "${sel[@]}" ${RUN_STOP:+--stop-file "$RUN_STOP"} -- "$@" ||
    die "ctest did not run (log: $out/ctest.log)"
}
counts() {  # RESULTS.tsv -> "run passed failed skipped timeout"
  awk -F'\t' '{n++; c[$2]++} END {printf "%d %d %d %d %d\n", n, c["pass"], c["fail"], c["skip"], c["timeout"]}' "$1"
}
# A kept build's test-libmongoc, run from its tree (made once per check).
declare -A src_made
run_state() {  # NAME LIST OUT [JOBS]
  local d=$work/builds/$1
  if [ -z "${src_made[$1]:-}" ]; then
    rm -rf "$d/src" && mkdir -p "$d/src"
    git -C "$tree" archive "$(cat "$d/tree")" | tar -x -C "$d/src"
    src_made[$1]=1
  fi
  run_bin "$d/bin/test-libmongoc" "$d/src" "$2" "$3" "${4:-1}"
}

format_scope() {  # FILE... -> those upstream's tools/format.py formats (SOURCE_DIRS, ...)
  local f
  for f in "$@"; do
    case $f in src/libbson/src/jsonsl/*) continue ;; esac
    case $f in src/common/*|src/libbson/*|src/libmongoc/*|tests/*) ;; *) continue ;; esac
    case $f in *.h|*.th|*.hpp|*.c|*.cpp) echo "$f" ;; esac
  done
}
# By upstream's tools/format.py where the tree has it (master); else (1.30,
# whose pristine mongoc-cluster.c is off in one place) the lines changed.
format_check() {  # FILE...: in $tree, the files a commit touches
  [ ! -f "$tree/tools/format.py" ] ||
    { (cd "$tree" && python3 tools/format.py --mode check -j 2 --clang-format-bin "$clang_format" "$@"); return; }
  local f lines status=0
  for f in "$@"; do
    mapfile -t lines < <(git -C "$tree" diff -U0 HEAD~1 HEAD -- "$f" |
      sed -n 's/^@@ -[0-9,]* +\([0-9]*\),\{0,1\}\([0-9]*\) @@.*/\1 \2/p' |
      awk '$2 != "0" {n = ($2 == "" ? 1 : $2); printf "--lines=%d:%d\n", $1, $1 + n - 1}')
    [ ${#lines[@]} -eq 0 ] || (cd "$tree" && "$clang_format" --dry-run -Werror --style=file:.clang-format "${lines[@]}" "$f") || status=1
  done
  return $status
}

# Upstream's check-preludes.py on a commit's public headers, less those the
# base already fails (trixie's validate-private.h), found one at a time.
prelude_headers=(src/libmongoc/src/mongoc src/libbson/src/bson src/common/src)
preludes_run() {  # COMMIT DIR: check-preludes.py on COMMIT's headers, minus $work/preludes-base.txt
  rm -rf "$2" && mkdir -p "$2/.evergreen/scripts"
  git -C "$tree" archive "$1" -- "${prelude_headers[@]}" | tar -xf - -C "$2"
  git -C "$tree" show "$1:.evergreen/scripts/check-preludes.py" >"$2/.evergreen/scripts/check-preludes.py"
  (cd "$2" && xargs -r rm -f <"$work/preludes-base.txt" && python3 .evergreen/scripts/check-preludes.py .)
}
: >"$work/preludes-base.txt"
for i in $(seq 1 51); do
  [ "$i" -le 50 ] || die "check-preludes.py: more than 50 headers of the base fail it"
  out=$(preludes_run "$base_ref" "$work/preludes-scratch" 2>&1) && break
  out=$(sed -n 's/ did not include prelude$//p' <<<"$out")
  [ -n "$out" ] || die "check-preludes.py fails on the base for another reason (run it there)"
  echo "$out" >>"$work/preludes-base.txt"
done
[ ! -s "$work/preludes-base.txt" ] ||
  say "preludes: the base already fails check-preludes.py on $(tr '\n' ' ' <"$work/preludes-base.txt")(left out)"
clang_format=$("$top/scripts/clang-format.sh" --pin "$cf_pin") || die "no clang-format $cf_pin (scripts/clang-format.sh)"
cf_version=$("$clang_format" --version | sed 's/.*version //')

ensure base "$base_ref" full --install || die "the pristine tree does not build"
phase build-base

# Each unit: its new tests on its base, then each commit alone (a verdict
# kept once it holds). In CI mode a unit's build is test-libmongoc alone.
mkdir -p "$work/verdicts"
declare -A u_newtests u_built
ukind=full
[ "$ci" -eq 0 ] || ukind=tests
for name in "${units[@]}"; do
  [ "${u_applied[$name]}" = yes ] || continue
  b=${u_base[$name]} bcommit=$base_ref
  if [ "$b" != master ]; then
    bcommit=${u_head[$b]}
    # (A base not checked, --pr, is built here, once.)
    [ -n "${u_built[$b]:-}" ] || { u_built[$b]=0; ! ensure "$b" "$bcommit" "$ukind" || u_built[$b]=1; }
    [ "${u_selected[$name]}" -eq 0 ] || [ "${u_built[$b]}" = 1 ] ||
      fail "${u_label[$name]}: its base, ${u_label[$b]}, does not build: nothing to compare it with"
  fi
  [ "${u_selected[$name]}" -eq 1 ] || continue
  w=$work/units/$name
  nc=$(newtests_commit "$bcommit" "${u_head[$name]}" "${u_dir[$name]}")
  u_newtests[$name]=1
  ensure "$name.newtests" "$nc" tests || { u_newtests[$name]=0
    fail "${u_label[$name]}: its tests do not build on its base (log: $work/logs/build-$name.newtests.log)"; }
  mapfile -t commits < <(git -C "$tree" rev-list --reverse "$bcommit..${u_head[$name]}")
  : >"$w/commits.tsv"
  for k in "${!commits[@]}"; do
    c=${commits[$k]} n=$((k + 1)) last=0
    [ "$n" -lt "${#commits[@]}" ] || last=1
    subject=$(git -C "$tree" log -1 --format=%s "$c")
    what="${u_label[$name]} commit $n ($subject)"
    vkey=$( { echo "$key_cfg $cf_version"; git -C "$tree" rev-parse "$c~1^{tree}" "$c^{tree}"; cat "$w/tests.names"; } |
            sha256sum | cut -c1-16)
    fkey=$(state_key "$c" "$ukind")
    if [ -s "$work/verdicts/$vkey" ] && { [ "$last" -eq 0 ] || have "$name" "$fkey"; }; then
      cat "$work/verdicts/$vkey" >>"$w/commits.tsv"
      IFS=$'\t' read -r _ sha _ _ fmt prel built tests <"$work/verdicts/$vkey"
      say "${u_label[$name]} commit $n/${#commits[@]} $sha $subject: format $fmt, preludes $prel, build $built, tests $tests (kept)"
      continue
    fi
    goto "$c"
    failed_before=${#failures[@]} fmt=ok prel=ok tests=- log=$work/logs/format-$name-$n.log
    mapfile -t touched < <(git -C "$tree" diff --name-only --diff-filter=d "$c~1" "$c")
    mapfile -t scoped < <(format_scope "${touched[@]}")
    [ ${#scoped[@]} -eq 0 ] || format_check "${scoped[@]}" >"$log" 2>&1 ||
      { fmt=FAIL; fail "$what: not formatted with upstream's clang-format $cf_version (log: $log)"; }
    preludes_run "$c" "$work/preludes-scratch" >"$work/logs/preludes-$name-$n.log" 2>&1 ||
      { prel=FAIL; fail "$what: upstream's check-preludes.py: $(tail -n 1 "$work/logs/preludes-$name-$n.log")"; }
    # (The shared libraries only for the last commit: it is kept.)
    commit_targets=(test-libmongoc)
    [ "$last" -eq 0 ] || [ "$ukind" != full ] || commit_targets=("${targets[@]}")
    if build "$name-$n" "${commit_targets[@]}"; then
      built="$BUILD_STEPS files, $BUILD_WARNINGS warnings" r=$work/runs/commit-$name-$n
      [ ! -s "$w/tests.names" ] || run_bin "$bdir/src/libmongoc/test-libmongoc" "$tree" "$w/tests.names" "$r" "$jobs"
      # (Those of its tests this commit registers.)
      if [ -s "$w/tests.names" ] && awk -F'\t' '$2 != "absent"' "$r/results.tsv" >"$r/registered.tsv" && [ -s "$r/registered.tsv" ]; then
        read -r tn tp _ <<<"$(counts "$r/registered.tsv")"
        tests="$tp of $tn pass"
        [ "$tp" -eq "$tn" ] ||
          fail "$what: $((tn - tp)) of its tests fail there: $(awk -F'\t' '$2 != "pass" {printf "%s%s (%s)", s, $1, $6; s = ", "}' "$r/registered.tsv")"
      fi
      [ "$last" -eq 0 ] || save "$name" "$fkey" "$c"
    else
      built=FAIL
      fail "$what does not build alone (log: $work/logs/build-$name-$n.log)"
    fi
    line=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$n" "$(git -C "$tree" rev-parse --short=12 "$c")" "$subject" \
      "${#touched[@]}" "$fmt" "$prel" "$built" "$tests")
    echo "$line" >>"$w/commits.tsv"
    # (Kept only when it holds, so that a failure is looked at again.)
    [ ${#failures[@]} -ne "$failed_before" ] || echo "$line" >"$work/verdicts/$vkey"
    say "${u_label[$name]} commit $n/${#commits[@]} $(git -C "$tree" rev-parse --short "$c") $subject: format $fmt, preludes $prel, build $built, tests $tests"
  done
  u_built[$name]=0
  ! have "$name" "$(state_key "${u_head[$name]}" "$ukind")" || u_built[$name]=1
  phase "commits-$name"
done

# Every pull request applied; and what make bench-fork reads.
all_state=""
if [ -n "$all_head" ]; then
  ensure all "$all_head" full --install && all_state=all ||
    fail "all: the pull requests applied together do not build (log: $work/logs/build-all.log)"
  phase build-all
fi
rm -rf "${work:?}/unpatched" "$work/patched" "$work/newtests"
ln -sfn builds/base "$work/unpatched"
[ -z "$all_state" ] || ln -sfn "builds/$all_state" "$work/patched"

if [ "$build_only" -eq 1 ]; then
  say "builds: $(cd "$work/builds" && ls -d -- */ | tr -d / | tr '\n' ' ')in $work/builds"
  [ ${#failures[@]} -eq 0 ] || { printf '  %s\n' "${failures[@]}"; exit 1; }
  exit 0
fi

# --- test-libmongoc without a server ---------------------------------------------------------
runs=$work/runs
mkdir -p "$runs"
# The whole suite on a kept build, once per check: runs/NAME/.
declare -A suite_done
suite_state() {  # NAME
  [ -z "${suite_done[$1]:-}" ] || return 0
  say "suite: $1: ctest, $jobs at a time, ${limit} s a test, until-pass:$repeat"
  run_state "$1" - "$runs/$1" "$jobs"
  cut -f1 "$runs/$1/results.tsv" >"$runs/$1.list"
  read -r n p f s t <<<"$(counts "$runs/$1/results.tsv")"
  say "suite: $1: $n tests: passed $p, failed $f, skipped $s, timed out $t in $(cat "$runs/$1/seconds") s"
  suite_done[$1]=1
  phase "suite-$1"
}
[ ${#matches[@]} -eq 0 ] || say "suite: only the tests under ${matches[*]} (--match)"

# Fails on an unexplained difference or a crash of B (of jcompare's runs).
cmp_verdict() {  # WHO B-NAME
  while IFS= read -r t; do fail "$1: unexplained difference: $t"; done <"$CMP_DIR/unexplained.txt"
  [ "$CMP_C1" -eq 0 ] || fail "$1: $2 crashed in: $(tr '\n' ' ' <"$CMP_DIR/crashes.txt")"
}
cmp_a="" cmp_b=""
run_cmp_a() { run_state "$cmp_a" "$@"; }
run_cmp_b() { run_state "$cmp_b" "$@"; }
compare() {  # A B WHO EXPLANATION-FILE...: two kept builds' suites
  local a=$1 b=$2 who=$3
  shift 3
  suite_state "$a"
  suite_state "$b"
  cmp_a=$a cmp_b=$b
  jcompare "$runs/$a" "$runs/$b" "$runs/cmp-$a-vs-$b" "$a" "$b" run_cmp_a run_cmp_b "$@"
  cmp_verdict "$who" "$b's test-libmongoc"
  say "suite: $who ($a against $b): run $CMP_RUN, passed $CMP_P0 and $CMP_P1, differences $CMP_NDIFF, explained $CMP_NEXPL, flaky $CMP_NFLAKY"
}

case ${#units[@]} in 2) all_words=two ;; 3) all_words=three ;; 4) all_words=four ;; *) all_words=${#units[@]} ;; esac
all_expl=("${units[@]/#/$work/units/}")  # (every unit's explanations)
all_expl=("${all_expl[@]/%//explained}" "$explained")

# All against the base first: in CI mode its figures stand on every line.
declare -A u_suite
all_suite="" patched_crashes=0
if [ -n "$all_state" ] && [ "$whole" -eq 1 ]; then
  compare base "$all_state" "all" "${all_expl[@]}"
  all_suite="suite run $CMP_RUN (all $all_words), unpatched passed $CMP_P0, patched passed $CMP_P1"
  all_diff="differences $CMP_NDIFF, explained $CMP_NEXPL"
  patched_crashes=$CMP_C1
fi
for name in "${checked[@]}"; do
  [ "${u_built[$name]:-0}" = 1 ] || continue
  b=${u_base[$name]} bstate=base
  [ "$b" = master ] || bstate=$b
  if [ "$ci" -eq 1 ]; then
    [ -z "$all_suite" ] || u_suite[$name]="$all_suite, NEW, $all_diff"
    continue
  fi
  [ "$bstate" = base ] || [ "${u_built[$b]:-0}" = 1 ] || continue
  compare "$bstate" "$name" "${u_label[$name]}" "$work/units/$name/explained" "$explained"
  u_suite[$name]="suite run $CMP_RUN, unpatched passed $CMP_P0, patched passed $CMP_P1, NEW, differences $CMP_NDIFF, explained $CMP_NEXPL"
done
phase compare

# --- The new tests: fail on the base, pass patched --------------------------------------------
declare -A u_new
for name in "${checked[@]}"; do
  w=$work/units/$name u=$runs/new-$name-unpatched p=$runs/new-$name-patched
  nt=$(wc -l <"$w/new-tests.names")
  fu=0 pp=0 gd=0
  if [ "${u_newtests[$name]:-0}" = 1 ] && [ "${u_built[$name]:-0}" = 1 ] && [ "$nt" -gt 0 ]; then
    run_state "$name.newtests" "$w/new-tests.names" "$u" "$jobs"
    run_state "$name" "$w/new-tests.names" "$p" "$jobs"
    while IFS=$'\t' read -r t ures _; do
      IFS=$'\t' read -r _ pres _ < <(awk -F'\t' -v n="$t" '$1 == n' "$p/results.tsv")
      guard=0
      ! grep -qxF -- "$t" "$w/guard-tests.names" || guard=1
      case $guard:$ures in
        *:absent) verdict="not registered on the base" ;;
        0:fail|0:timeout) fu=$((fu + 1)) verdict=right ;;
        1:fail|1:timeout) fu=$((fu + 1)) verdict="declared a guard, but $ures on the base" ;;
        1:pass) gd=$((gd + 1)) verdict="right (a guard: passes on both, as declared)" ;;
        *) verdict="$ures on the base: it does not test the change" ;;
      esac
      case $pres in
        absent) verdict="not registered patched" ;;
        pass) pp=$((pp + 1)) ;;
        *) verdict="$pres patched" ;;
      esac
      [ "${verdict%% *}" = right ] || fail "${u_label[$name]}: new test $t: $verdict"
    done <"$u/results.tsv"
  elif [ "$nt" -gt 0 ]; then
    fail "${u_label[$name]}: its new tests could not run (a build is missing)"
  fi
  u_new[$name]="new tests $nt (fail unpatched $fu, guards $gd, pass patched $pp)"
  # T = F + G = S; and, but for a speed change, F >= 2 and G <= T/4.
  [ $((fu + gd)) -eq "$nt" ] && [ "$pp" -eq "$nt" ] ||
    fail "${u_label[$name]}: new tests $nt, but fail unpatched $fu + guards $gd = $((fu + gd)) and pass patched $pp"
  if [ "${u_speed[$name]}" -eq 0 ]; then
    [ "$fu" -ge 2 ] || fail "${u_label[$name]}: $fu new tests fail unpatched (at least 2 must)"
    [ $((4 * gd)) -le "$nt" ] || fail "${u_label[$name]}: $gd guards of $nt new tests (at most a quarter)"
  fi
  say "${u_label[$name]}: ${u_new[$name]}"
done
phase new-tests

# --- Every pull request applied: live tests, harness, encryption ------------------------------
live_line="live: not run (--no-live)" live_word="not run"
harness_right="-" harness_line="harness: not run (--no-harness)"
enc_line="encryption: not run (--no-encryption)" enc_word="not run"
if [ -z "$all_state" ] || [ "$whole" -eq 0 ]; then
  why="not run (no build of every pull request applied)"
  live_line="live: $why" harness_line="harness: $why" enc_line="encryption: $why" live=0 harness=0 encryption=0 conformance=0
fi

fdb=""
[ "$live" -eq 0 ] || fdb=$(suite_find_ferretdb) || {
  fail "live: FerretDB is not installed (scripts/install-deps.d/peers.sh installs v1.24.2)"
  live_line="live: FerretDB missing" live_word=no; }
if [ -n "$fdb" ]; then
  live_failed=${#failures[@]}
  fdb_version=$("$fdb" --version 2>/dev/null | sed -n 's/^version: //p' | head -n 1)
  suite_state base
  suite_state "$all_state"
  # The live tests: those the no-server runs skipped (on either side),
  # among the subset's prefixes (a "!PREFIX" line leaves tests out).
  awk -F'\t' '$2 == "skip" {print $1}' "$runs/base/results.tsv" "$runs/$all_state/results.tsv" |
    sort -u >"$runs/skipped.names"
  grep -xF -f "$runs/base.list" "$runs/$all_state.list" >"$runs/live-both.list" || true
  sed 's/#.*//; s/[[:space:]]*$//; s/^[[:space:]]*//' "$live_subset" | grep -v '^$' >"$runs/live.prefixes"
  awk 'FILENAME == ARGV[1] { if (substr($0, 1, 1) == "!") x[++m] = substr($0, 2); else p[++n] = $0; next }
       FILENAME == ARGV[2] { skipped[$0] = 1; next }
       ($0 in skipped) {
         for (i = 1; i <= m; i++) if (index($0, x[i]) == 1) next
         for (i = 1; i <= n; i++) if (index($0, p[i]) == 1) { print; next } }' \
    "$runs/live.prefixes" "$runs/skipped.names" "$runs/live-both.list" >"$runs/live.list"
  # Each side once, one test at a time, against a fresh FerretDB of its own,
  # the two sides at once (docs/fork.md says why); a run during which
  # FerretDB dies is made again, a second death fails.
  live_port_u=$(suite_free_port)
  live_port_p=$(suite_free_port)
  while [ "$live_port_p" = "$live_port_u" ]; do live_port_p=$(suite_free_port); done
  live_run() {  # SIDE LIST OUT
    local side=$1 list=$2 out=$3 port=$live_port_p state=$all_state dir=$runs/ferretdb-$1 stop=$runs/ferretdb-$1.stop try env log
    [ "$side" != unpatched ] || port=$live_port_u state=base
    for try in 1 2; do
      rm -f "$stop"
      suite_start_ferretdb "$fdb" "$dir" "$port" || die "live: 127.0.0.1:$port is taken"
      suite_watch_ferretdb "$port" "$stop" "FerretDB on 127.0.0.1:$port died"
      env=(PATH="$PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 MONGOC_TEST_OFFLINE=on "MONGOC_TEST_URI=mongodb://127.0.0.1:$port/")
      [ -z "${TMPDIR:-}" ] || env+=(TMPDIR="$TMPDIR")
      RUN_REPEAT=1 RUN_STOP=$stop run_bin "$work/builds/$state/bin/test-libmongoc" "$work/builds/$state/src" "$list" "$out" 1 "${env[@]}"
      kill "$SUITE_WATCH_PID" 2>/dev/null || true
      wait "$SUITE_WATCH_PID" 2>/dev/null || true
      [ -s "$stop" ] || { suite_stop_ferretdb; return 0; }
      log=$work/logs/ferretdb-died-$side-$(basename "$out")-$try.log
      cp "$dir/log" "$log"
      suite_stop_ferretdb
      say "live: FerretDB died during the $side run of $(basename "$out") (log: $log)"
    done
    echo "live: FerretDB died twice during the $side run of $(basename "$out")" >>"$runs/live.failures"
  }
  trap suite_stop_ferretdb EXIT
  live_unpatched() { live_run unpatched "$1" "$2"; }
  live_patched() { live_run patched "$1" "$2"; }
  rm -f "$runs/live.failures"
  say "live: $(wc -l <"$runs/live.list") tests ($(basename "$live_subset")) against FerretDB $fdb_version, on 127.0.0.1:$live_port_u unpatched and :$live_port_p patched, the two at once"
  ( trap suite_stop_ferretdb EXIT; live_unpatched "$runs/live.list" "$runs/live-unpatched" ) &
  live_pid=$!
  live_patched "$runs/live.list" "$runs/live-patched"
  wait "$live_pid" || die "live: the unpatched run failed"
  jcompare "$runs/live-unpatched" "$runs/live-patched" "$runs/cmp-live" unpatched patched \
    live_unpatched live_patched "${all_expl[@]}"
  [ ! -s "$runs/live.failures" ] || while IFS= read -r f; do fail "$f"; done <"$runs/live.failures"
  rm -rf "$runs"/ferretdb-*
  cmp_verdict live "patched test-libmongoc"
  patched_crashes=$((patched_crashes + CMP_C1))
  live_line="live (FerretDB $fdb_version): run $CMP_RUN, unpatched passed $CMP_P0, patched passed $CMP_P1, differences $CMP_NDIFF, explained $CMP_NEXPL, flaky $CMP_NFLAKY"
  live_word=no
  [ ${#failures[@]} -ne "$live_failed" ] || [ "$CMP_RUN" -eq 0 ] || live_word=yes
fi
[ "$live" -eq 0 ] || { say "$live_line"; phase live; }

if [ "$harness" -eq 1 ]; then
  # tests/dropin's client built against each build's headers and libraries
  # (1.23's headers include their neighbours by bare name), run on them.
  harness_client() {  # SIDE STATE
    local a=$work/builds/$2 out=$work/harness/client-$1 mongoc bson got hinc=() d
    mkdir -p "$work/harness"
    mongoc=$(cd "$a/lib" && ls libmongoc*.so | head -n 1)
    bson=$(cd "$a/lib" && ls libbson*.so | head -n 1)
    mongoc=${mongoc#lib} bson=${bson#lib}
    for d in build/src/libmongoc/src build/src/libbson/src tree/src/libmongoc/src tree/src/libbson/src; do hinc+=(-I"$a/headers/$d"); done
    [ "$target" != bookworm ] || hinc+=(-I"$a/headers/build/src/libbson/src/bson" -I"$a/headers/tree/src/libbson/src/bson"
                                        -I"$a/headers/build/src/libmongoc/src/mongoc" -I"$a/headers/tree/src/libmongoc/src/mongoc")
    cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L "${hinc[@]}" \
      "$top/tests/dropin/dropin-client.c" -o "$out" -L"$a/lib" -l"${mongoc%.so}" -l"${bson%.so}" -pthread ||
      die "harness: dropin-client does not build against the $1 headers"
    got=$(LD_LIBRARY_PATH=$a/lib ldd "$out" | awk -v m="lib$mongoc" 'index($1, m) == 1 {print $3}')
    [ "$(realpath "$(dirname "$got")")" = "$(realpath "$a/lib")" ] ||
      die "harness: the $1 client loads ${got:-no lib$mongoc}, not $a/lib's"
  }
  # Every mode (run_case.py --all: "PASS|FAIL MODE: ...", "harness R/M, crashes
  # N"), then the monitor's and OP_REPLY modes ("PASS|FAIL MODE/op: ...").
  harness_side() {  # SIDE STATE
    local m run=(env LD_LIBRARY_PATH="$work/builds/$2/lib" python3 "$top/tests/dropin/run_case.py" --client "$work/harness/client-$1")
    {
      "${run[@]}" --all || true
      for m in $monitor_modes; do "${run[@]}" --mode "$m" | grep -E '^(PASS|FAIL) ' || true; done
    } >"$work/harness/$1.out" 2>&1
  }
  monitor_modes=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import hostile_server as h
print(" ".join(list(h.MONITOR_MODES) + list(h.OP_REPLY_MODES)))' "$top/tests/dropin")
  harness_client unpatched base
  harness_client patched "$all_state"
  # The two sides at once: every operation has a server of its own.
  harness_side unpatched base &
  hpid=$!
  harness_side patched "$all_state"
  wait "$hpid"
  h_unpatched='' h_patched=''
  for side in unpatched patched; do
    out=$work/harness/$side.out
    read -r r m c < <(sed -n 's|^harness \([0-9]*\)/\([0-9]*\), crashes \([0-9]*\)$|\1 \2 \3|p' "$out")
    [ -n "${r:-}" ] || { tail -n 20 "$out" >&2; die "harness: run_case.py gave no result ($side)"; }
    # Monitor and OP_REPLY modes: each failed operation, and each crash.
    mfail=$( (grep -E '^FAIL [a-z_]+/' "$out" || true) | cut -d/ -f1 | sort -u | wc -l)
    mcrash=$(grep -E '^FAIL [a-z_]+/' "$out" | grep -cE ': (CRASH|HANG)' || true)
    printf -v "h_$side" '%s %s %s %s %s' "$r" "$m" "$c" "$mfail" "$mcrash"
  done
  read -r hu_right nmodes hu_crash hu_mfail _ <<<"$h_unpatched"
  read -r hp_right _ hp_crash hp_mfail hp_mcrash <<<"$h_patched"
  nmon=$(wc -w <<<"$monitor_modes")
  harness_right="$hp_right/$nmodes"
  patched_crashes=$((patched_crashes + hp_crash + hp_mcrash))
  [ "$hp_right" -eq "$nmodes" ] || fail "harness: patched right in $hp_right of $nmodes modes ($work/harness/patched.out)"
  [ "$hp_crash" -eq 0 ] || fail "harness: patched crashed or hung in $hp_crash modes"
  [ "$hp_mfail" -eq 0 ] || fail "harness: patched wrong in $hp_mfail of the $nmon monitor and OP_REPLY modes"
  harness_line="harness (no preload): patched right in $hp_right of $nmodes modes, crashed or hung in $hp_crash, and right in $((nmon - hp_mfail)) of the $nmon monitor and OP_REPLY modes; unpatched right in $hu_right, crashed or hung in $hu_crash, and right in $((nmon - hu_mfail)) of the $nmon"
  say "$harness_line"
  phase harness
fi

# The working tree and build directory at "all", for encryption and conformance.
if [ -n "$all_state" ] && [ "$whole" -eq 1 ] && { [ "$encryption" -eq 1 ] || [ "$conformance" -eq 1 ]; }; then
  goto "$(cat "$work/builds/$all_state/commit")"
  build all-final "${targets[@]}" || die "the build of all does not build again"
fi

if [ "$encryption" -eq 1 ]; then
  rc=0
  enc_out=$("$top/scripts/fork-check-encryption.sh" --tree "$tree" --suite "$enc_suite" 2>&1 |
            tee "$work/logs/encryption.log") || rc=$?
  enc_line=$(grep '^encryption ' <<<"$enc_out" | tail -n 1 || true)
  skip=$(grep -m 1 '^SKIP' <<<"$enc_out" | sed 's/^SKIP: //' || true)
  case $rc in
    0) enc_word=yes ;;
    77) enc_word="skipped ($skip)" enc_line="encryption: skipped: $skip" ;;
    *) enc_word=no; fail "encryption: ${enc_line:-failed (log: $work/logs/encryption.log)}" ;;
  esac
  say "$enc_line"
  phase encryption
fi

# --- Conformance and symbols (the pull requests) ------------------------------------------------
conf_line="" clog=$work/logs/conformance.log
if [ "$target" = master ] && [ "$whole" -eq 1 ]; then
  if [ "$conformance" -eq 0 ]; then
    conf_line="fork conformance: not run$([ -n "$all_state" ] && echo " (--no-conformance)" || echo " (no build of every pull request applied)")"
  else
    rc=0
    bash "$top/scripts/fork-conformance.sh" --tree "$tree" --build "$bdir" >"$clog" 2>&1 || rc=$?
    conf_line=$(grep -E '^(fork conformance|spec tests \(fork\)):' "$clog" | tail -n 2 || true)
    [ -n "$conf_line" ] || conf_line="fork conformance: no line (log: $clog)"
    [ "$rc" -eq 0 ] || fail "conformance: scripts/fork-conformance.sh exited with $rc (log: $clog)"
    grep '^fork conformance' "$clog" | grep -v '^fork conformance:' | sed 's/^/  /' || true
  fi
  say "$conf_line"
  phase conformance
fi

# The exported symbols (public: a word of the installed headers) and the
# installed headers of base and all; Debian's symbols files (sid's for master).
sym_line=""
if [ -n "$all_state" ] && [ "$whole" -eq 1 ]; then
  sd=$work/symbols pa=$work/builds/base/prefix pb=$work/builds/$all_state/prefix
  rm -rf "$sd" && mkdir -p "$sd"
  for s in base:"$pa" all:"$pb"; do
    lib=$(find "${s#*:}" -name 'libmongoc2.so' -o -name 'libmongoc-1.0.so' | head -n 1)
    [ -n "$lib" ] || die "symbols: no libmongoc in ${s#*:}"
    nm -D --defined-only "$(realpath "$lib")" | awk 'NF >= 3 {print $3}' | sed 's/@.*//' | sort -u >"$sd/${s%%:*}.syms"
    grep -rhoE '[A-Za-z_][A-Za-z0-9_]*' "${s#*:}/include" | sort -u >"$sd/${s%%:*}.words"
  done
  comm -13 "$sd/base.syms" "$sd/all.syms" >"$sd/added"
  comm -23 "$sd/base.syms" "$sd/all.syms" >"$sd/removed"
  npa=$(comm -12 "$sd/added" "$sd/all.words" | tee "$sd/public-added" | wc -l)
  npr=$(comm -12 "$sd/removed" "$sd/base.words" | tee "$sd/public-removed" | wc -l)
  nia=$(comm -23 "$sd/added" "$sd/all.words" | wc -l) nir=$(comm -23 "$sd/removed" "$sd/base.words" | wc -l)
  [ "$npa" -eq 0 ] || fail "symbols: public symbols added: $(tr '\n' ' ' <"$sd/public-added")"
  [ "$npr" -eq 0 ] || fail "symbols: public symbols removed: $(tr '\n' ' ' <"$sd/public-removed")"
  diff -r "$pa/include" "$pb/include" >"$sd/headers.diff" 2>&1 ||
    fail "symbols: the installed headers differ (diff: $sd/headers.diff): $(grep -E '^(Only in|diff )' "$sd/headers.diff" | head -n 5 | tr '\n' ' ')"
  deb=$pristine deb_name=$target
  [ "$target" != master ] || { deb=$("$top/scripts/fork-source.sh" unstable 2>/dev/null) || deb=""; deb_name=sid; }
  symfiles=()
  [ -z "$deb" ] || mapfile -t symfiles < <(find "$deb/debian" -maxdepth 1 -name '*symbols*' -type f | sort)
  if [ -z "$deb" ]; then
    deb_note="Debian's $deb_name packaging tree is missing (scripts/fork-source.sh unstable): its symbols files not checked"
    fail "symbols: $deb_note"
  elif [ ${#symfiles[@]} -eq 0 ]; then
    deb_note="Debian's $deb_name packaging ($(cd "$deb" && dpkg-parsechangelog -S Version 2>/dev/null || echo unstable)) has no symbols file (debian/*.symbols): no removed symbol is listed there"
  else
    awk '/^ / {print $1}' "${symfiles[@]}" | sed 's/@.*//' | sort -u >"$sd/debian.syms"
    comm -12 "$sd/removed" "$sd/debian.syms" >"$sd/debian-removed"
    deb_note="Debian's $deb_name symbols files ($(printf '%s ' "${symfiles[@]##*/}")): $(wc -l <"$sd/debian.syms") symbols, $(wc -l <"$sd/debian-removed") of them removed"
    [ ! -s "$sd/debian-removed" ] || fail "symbols: removed, yet listed in Debian's symbols files: $(tr '\n' ' ' <"$sd/debian-removed")"
  fi
  say "symbols: $deb_note"
  sym_line="fork symbols: public added $npa, removed $npr, internal added $nia, internal removed $nir"
  say "$sym_line"
  phase symbols
fi

# --- The lines -------------------------------------------------------------------------
lines=()
for name in "${checked[@]}"; do
  b=${u_base[$name]} ok=${u_applied[$name]}
  applies="applies on PR ${u_num[$b]:-}$([ "$ok" = yes ] || echo " no")"
  [ "$b" != master ] || applies="applies alone $ok"
  s=${u_suite[$name]:-suite run -, unpatched passed -, patched passed -, NEW, differences -, explained -}
  lines+=("fork $target $label ${u_label[$name]}: patches $(unit_patches "$name" | wc -l), $applies, ${s/NEW/${u_new[$name]:-new tests -}}")
done
if [ "$whole" -eq 1 ]; then
  lines+=("fork $target $label all: harness $harness_right, crashes $patched_crashes, live ferretdb $live_word, encryption $enc_word")
  [ -z "$conf_line" ] || lines+=("$conf_line")
  [ -z "$sym_line" ] || lines+=("$sym_line")
fi

pristine_dirty=$(git -C "$pristine" status --porcelain | head -n 5)
[ -z "$pristine_dirty" ] || say "NOTE: the runs left files in the pristine tree: $pristine_dirty"
total=$(( $(date +%s) - phase_start ))
for i in "${!phase_names[@]}"; do
  printf '%s  %-24s %5s s  CPU %5s s\n' "$prog:" "${phase_names[$i]}" "${phase_secs[$i]}" "${phase_cpu[$i]}"
done
cpu_now
say "total: $total s (CPU $((CPU_NOW - cpu_start)) s, load average $(cut -d' ' -f1-3 /proc/loadavg))"
[ ${#failures[@]} -eq 0 ] || { say "${#failures[@]} failures:"; printf '  %s\n' "${failures[@]}"; }
printf '%s\n' "${lines[@]}"
[ ${#failures[@]} -eq 0 ]
