#!/bin/bash
# libmongoc's own test suite with the drop-in (docs/libmongoc-suite.md).
#
# For the libmongoc installed on this system: builds the suite's
# test-libmongoc from the source of exactly that version, linked with the
# system's *shared* libmongoc and libbson (upstream links it statically,
# where nothing can be interposed); runs every test that needs no live
# server twice through upstream's CTest registration (build/cmake/LoadTests.cmake:
# `ctest -j N --timeout S --repeat until-pass:R --output-junit`), stock and
# with libopmsg-mongoc.so preloaded; compares the two JUnit files
# (scripts/lib/junit-compare.py); writes the differences to
# WORK/VERSION/differences.md and ends with one line:
#
#   libmongoc-suite 1.23.1: run N, stock passed P0, drop-in passed P1, differences D, explained E, active yes
#
# With --libdir DIR the second run loads a patched libmongoc instead of the
# drop-in: DIR's libmongoc and libbson shared libraries (the fork's, built
# from Debian's source with its patches), through LD_LIBRARY_PATH; the same
# test-libmongoc, built against the stock headers, runs on both. The line
# then reads "patched passed P1, ..., loaded yes" (the patched library was
# the one loaded).
#
# Exit status: 0 when every difference is explained (EXPLAINED file) and the
# drop-in was active in every drop-in test process (the patched library
# loaded, with --libdir); 1 otherwise; 2 for a usage error or when the suite
# could not be built or run.
#
# Usage: scripts/libmongoc-suite.sh [OPTIONS]
#   --dropin PATH        the drop-in (default build/src/mongoc-dropin/libopmsg-mongoc.so)
#   --libdir DIR         the second run loads the libmongoc and libbson of DIR
#                        (LD_LIBRARY_PATH) instead of preloading the drop-in
#   --source DIR         a libmongoc source tree (an upstream checkout), used
#                        in place and not modified; default: `apt-get source`
#                        of the installed Debian version
#   --upstream-git DIR   a git repository of mongo-c-driver: the tag of the
#                        installed version, or the nearest one, is exported
#                        from it into WORK/VERSION/src-TAG
#   --root DIR           run inside this Debian root (chroot; the source tree,
#                        the work directory and the paths given are mounted
#                        at the same places inside)
#   --work DIR           work files (default build/libmongoc-suite)
#   --jobs N             tests run in parallel (ctest -j, default 2)
#   --timeout SECONDS    time limit per test (default 60)
#   --repeat N           ctest --repeat until-pass:N (default 3)
#   --subset FILE        only tests whose names start with one of the prefixes
#                        in FILE (one per line, # comments) and with none of
#                        its "!PREFIX" lines
#   --match PREFIX       only tests whose names start with PREFIX (repeatable)
#   --explained FILE     explained differences, "test-name<TAB>reason", the
#                        name may be a shell pattern
#                        (default scripts/libmongoc-suite.explained)
#   --no-ferretdb        do not start FerretDB on 127.0.0.1:27017 (tests that
#                        try a server there then wait for server selection)
#   --ferretdb PATH      the FerretDB binary (default: PATH, then $(go env GOPATH)/bin)
#   --live               also run the live tests against FerretDB (counts and
#                        differences in WORK/VERSION/live.md, not gating)
#   --live-only          only the live tests (exit 0 unless they cannot run)
#   --rebuild            build test-libmongoc again even when cached
#   --allow-config-mismatch
#                        go on when the suite's mongoc-config.h differs from
#                        the installed one's (struct layouts may then differ)
set -euo pipefail
export LC_ALL=C

prog=libmongoc-suite

top=$(cd "$(dirname "$0")/.." && pwd)
# say, die, packages, two CTest runs compared, FerretDB (shared with
# scripts/fork-check.sh).
. "$top/scripts/lib/suite-common.sh"

# --- Options -----------------------------------------------------------------

dropin=$top/build/src/mongoc-dropin/libopmsg-mongoc.so
patched_libdir=""
source_dir=""
upstream_git=""
root_dir=""
work=$top/build/libmongoc-suite
jobs=2
limit=60
repeat=3
subset=""
matches=()
explained=$top/scripts/libmongoc-suite.explained
use_ferretdb=1
ferretdb=""
live=0
nolive=1
rebuild=0
allow_mismatch=0
inside_root=""
orig_args=("$@")

abspath() { realpath -m -- "$1"; }

while [ $# -gt 0 ]; do
  case $1 in
    --dropin) dropin=$(abspath "${2:?}"); shift 2 ;;
    --libdir) patched_libdir=$(abspath "${2:?}"); shift 2 ;;
    --source) source_dir=$(abspath "${2:?}"); shift 2 ;;
    --upstream-git) upstream_git=$(abspath "${2:?}"); shift 2 ;;
    --root) root_dir=$(abspath "${2:?}"); shift 2 ;;
    --work) work=$(abspath "${2:?}"); shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --timeout) limit=${2:?}; shift 2 ;;
    --repeat) repeat=${2:?}; shift 2 ;;
    --subset) subset=$(abspath "${2:?}"); shift 2 ;;
    --match) matches+=("${2:?}"); shift 2 ;;
    --explained) explained=$(abspath "${2:?}"); shift 2 ;;
    --no-ferretdb) use_ferretdb=0; shift ;;
    --ferretdb) ferretdb=$(abspath "${2:?}"); shift 2 ;;
    --live) live=1; shift ;;
    --live-only) live=1; nolive=0; shift ;;
    --rebuild) rebuild=1; shift ;;
    --allow-config-mismatch) allow_mismatch=1; shift ;;
    --inside-root) inside_root=${2:?}; shift 2 ;;   # set by --root itself
    -h|--help) usage; exit 0 ;;
    *) echo "$prog: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
case $jobs in ''|*[!0-9]*|0) die "--jobs needs a positive number" ;; esac
case $limit in ''|*[!0-9]*|0) die "--timeout needs a positive number of seconds" ;; esac
case $repeat in ''|*[!0-9]*|0) die "--repeat needs a positive number" ;; esac
[ -z "$subset" ] || [ -f "$subset" ] || die "no subset file $subset"

find_ferretdb() { suite_find_ferretdb "$ferretdb"; }

# The second run: the drop-in preloaded, or a patched libmongoc (--libdir).
if [ -n "$patched_libdir" ]; then
  second=patched second_label=patched
else
  second=dropin second_label=drop-in
fi

# --- Running inside a Debian root ---------------------------------------------

# Re-runs this script inside DIR: a mount namespace of its own with /proc,
# /dev, the source tree and every path argument mounted at the same place,
# then chroot. The network (and so 127.0.0.1:27017) is the machine's.
if [ -n "$root_dir" ]; then
  [ "$(id -u)" -eq 0 ] || die "--root needs root (chroot, mount)"
  [ -x "$root_dir/bin/sh" ] || die "$root_dir is not a Debian root"
  unshare -m --propagation private true 2>/dev/null || die "--root needs a mount namespace (unshare -m)"
  if [ "$use_ferretdb" -eq 1 ] || [ "$live" -eq 1 ]; then
    ferretdb=$(find_ferretdb) || ferretdb=""
  fi
  # What must be visible inside: the tree, the work directory, the paths given.
  binds=("$top")
  for p in "$work" "$dropin" "$patched_libdir" "$source_dir" "$upstream_git" "$subset" "$explained" "$ferretdb"; do
    [ -n "$p" ] || continue
    case $p/ in "$top"/*) continue ;; esac
    binds+=("$p")
  done
  mkdir -p "$work"
  inner=(bash "$top/scripts/libmongoc-suite.sh")
  skip=0
  for a in "${orig_args[@]}"; do
    if [ "$skip" -eq 1 ]; then skip=0; continue; fi
    case $a in --root) skip=1; continue ;; esac
    inner+=("$a")
  done
  inner+=(--work "$work" --dropin "$dropin" --explained "$explained" --inside-root "$(basename "$root_dir")")
  [ -z "$patched_libdir" ] || inner+=(--libdir "$patched_libdir")
  [ -n "$ferretdb" ] && inner+=(--ferretdb "$ferretdb")
  envs=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
        DEBIAN_FRONTEND=noninteractive TERM="${TERM:-dumb}")
  for v in $(compgen -e); do
    case $v in OPMSG_*) envs+=("$v=${!v}") ;; esac
  done
  # Mount points created here are removed again afterwards.
  made=()
  make_dirs() {  # DIR: creates the missing directories, each one noted in made
    local d=$1
    [ -e "$d" ] && return 0
    make_dirs "$(dirname "$d")"
    mkdir "$d"
    made+=("$d")
  }
  for p in "${binds[@]}"; do
    if [ -d "$p" ]; then
      make_dirs "$root_dir$p"
    elif [ -f "$p" ] && [ ! -e "$root_dir$p" ]; then
      make_dirs "$(dirname "$root_dir$p")"
      : >"$root_dir$p"
      made+=("$root_dir$p")
    fi
  done
  say "running inside $root_dir"
  rc=0
  # shellcheck disable=SC2016
  unshare -m --propagation private bash -c '
    set -e
    root=$1; shift
    n=$1; shift
    for _ in $(seq 1 "$n"); do
      if [ -e "$1" ]; then mount --bind "$1" "$root$1"; fi
      shift
    done
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    exec chroot "$root" /usr/bin/env -i "$@"' inner "$root_dir" "${#binds[@]}" "${binds[@]}" \
    "${envs[@]}" "${inner[@]}" || rc=$?
  for ((i = ${#made[@]} - 1; i >= 0; i--)); do
    m=${made[$i]}
    if [ -f "$m" ]; then rm -f "$m"; else rmdir "$m" 2>/dev/null || true; fi
  done
  exit $rc
fi

# --- The installed libmongoc ---------------------------------------------------

command -v pkg-config >/dev/null || die "pkg-config is missing"
mongoc_pc=""
for pc in mongoc2 libmongoc-1.0; do
  if pkg-config --exists "$pc" 2>/dev/null; then mongoc_pc=$pc; break; fi
done
[ -n "$mongoc_pc" ] || die "no libmongoc development files (libmongoc-dev) on this system"
case $mongoc_pc in mongoc2) bson_pc=bson2 ;; *) bson_pc=libbson-1.0 ;; esac
version=$(pkg-config --modversion "$mongoc_pc")
libdir=$(pkg-config --variable=libdir "$mongoc_pc")

# The shared library's file and soname (libmongoc-1.0.so.0, libmongoc2.so.2).
shared_lib() {  # PC -> path of the .so the linker uses
  local name
  name=$(pkg-config --libs-only-l "$1" | tr ' ' '\n' | sed -n 's/^-l//p' | head -n 1)
  [ -e "$libdir/lib$name.so" ] || die "no $libdir/lib$name.so"
  echo "$libdir/lib$name.so"
}
mongoc_so=$(shared_lib "$mongoc_pc")
bson_so=$(shared_lib "$bson_pc")
mongoc_soname=$(objdump -p "$mongoc_so" | awk '$1 == "SONAME" {print $2}')
[ -n "$mongoc_soname" ] || die "no SONAME in $mongoc_so"
mongoc_real=$(realpath "$libdir/$mongoc_soname")

deb_pkg=""
deb_version=""
src_pkg=""
src_version=""
if command -v dpkg-query >/dev/null; then
  deb_pkg=$(dpkg -S "$libdir/$mongoc_soname" 2>/dev/null | head -n 1 | cut -d: -f1 || true)
  if [ -n "$deb_pkg" ]; then
    deb_version=$(dpkg-query -W -f='${Version}' "$deb_pkg")
    src_pkg=$(dpkg-query -W -f='${source:Package}' "$deb_pkg")
    src_version=$(dpkg-query -W -f='${source:Version}' "$deb_pkg")
  fi
fi
where=${inside_root:+ (inside the $inside_root root)}
say "installed: libmongoc $version${deb_pkg:+, Debian package $deb_pkg $deb_version (source $src_pkg $src_version)}$where"

vdir=$work/$version
mkdir -p "$vdir"
notes=()     # lines for differences.md

# --- Build dependencies ----------------------------------------------------------

# libmongoc-dev brings most of what the suite needs; ICU's headers decide
# MONGOC_ENABLE_ICU, which must match the installed library's.
need_pkgs() { suite_need_pkgs "$@"; }
installed_config=""
for d in $(pkg-config --cflags-only-I "$mongoc_pc" | tr ' ' '\n' | sed -n 's/^-I//p'); do
  [ -f "$d/mongoc/mongoc-config.h" ] && { installed_config=$d/mongoc/mongoc-config.h; break; }
done
if command -v dpkg-query >/dev/null; then
  deps=(cmake pkg-config gcc libc6-dev libssl-dev libsasl2-dev libsnappy-dev libzstd-dev zlib1g-dev)
  if [ -n "$installed_config" ] && grep -q '^#define MONGOC_ENABLE_ICU 1' "$installed_config"; then
    deps+=(libicu-dev)
  fi
  command -v ninja >/dev/null || deps+=(ninja-build)
  [ -n "$source_dir$upstream_git" ] || deps+=(dpkg-dev)
  [ -z "$upstream_git" ] || command -v git >/dev/null || deps+=(git)
  need_pkgs "${deps[@]}"
fi

# --- The source ------------------------------------------------------------------

# The nearest release tag: the version itself, else the closest older one of
# the same major.minor, else the closest newer one of it.
nearest_tag() {
  local want=$1 repo=$2 mm best="" t
  mm=$(echo "$want" | cut -d. -f1,2)
  if git -C "$repo" rev-parse -q --verify "refs/tags/$want^{commit}" >/dev/null; then
    echo "$want"; return 0
  fi
  local tags
  tags=$(git -C "$repo" tag -l "$mm.*" | grep -E '^[0-9]+\.[0-9]+\.[0-9]+$' | sort -t. -k3,3n || true)
  for t in $tags; do
    if dpkg --compare-versions "$t" le "$want"; then best=$t; fi
  done
  if [ -z "$best" ]; then
    for t in $tags; do best=$t; break; done
  fi
  [ -n "$best" ] && echo "$best"
}

# `apt-get source` through a private apt configuration (nothing under /etc
# changes): apt_source PACKAGE VERSION DEST.
. "$top/scripts/lib/apt-source.sh"
apt_source_dir=$work/apt

src_origin=""
if [ -n "$source_dir" ]; then
  [ -f "$source_dir/CMakeLists.txt" ] && [ -d "$source_dir/src/libmongoc" ] ||
    die "$source_dir is not a mongo-c-driver source tree"
  src=$source_dir
  src_origin="source tree $source_dir"
elif [ -n "$upstream_git" ]; then
  git -C "$upstream_git" rev-parse --git-dir >/dev/null 2>&1 || die "$upstream_git is not a git repository"
  tag=$(nearest_tag "$version" "$upstream_git") || tag=""
  [ -n "$tag" ] || die "$upstream_git has no release tag near $version"
  src=$vdir/src-$tag
  if [ ! -f "$src/.opmsg-suite-tag" ]; then
    rm -rf "$src"
    mkdir -p "$src"
    # A mirror may lack some large blobs: those files are left out (and said).
    missing_blobs=$(git -C "$upstream_git" ls-tree -r "$tag" | awk '$2 == "blob" {print $3}' |
              git -C "$upstream_git" cat-file --batch-check | awk '$2 == "missing" {print $1}')
    excludes=()
    if [ -n "$missing_blobs" ]; then
      while read -r path; do
        excludes+=(":(exclude,literal)$path")
      done < <(git -C "$upstream_git" ls-tree -r "$tag" | awk -v m="$(echo $missing_blobs)" '
                 BEGIN { n = split(m, a, " "); for (i = 1; i <= n; i++) miss[a[i]] = 1 }
                 $2 == "blob" && ($3 in miss) { sub(/^[^\t]*\t/, ""); print }')
    fi
    git -C "$upstream_git" archive "$tag" -- . "${excludes[@]}" 2>/dev/null | tar -x -C "$src"
    echo "$tag $(git -C "$upstream_git" rev-parse "$tag^{commit}")" >"$src/.opmsg-suite-tag"
    for e in "${excludes[@]}"; do echo "${e#:(exclude,literal)}"; done >"$src/.opmsg-suite-missing"
  fi
  if [ -s "$src/.opmsg-suite-missing" ]; then
    say "NOTE: not in the repository, left out of the tree: $(tr '\n' ' ' <"$src/.opmsg-suite-missing")"
    notes+=("source: files missing from the repository, left out: $(tr '\n' ' ' <"$src/.opmsg-suite-missing")")
  fi
  src_origin="upstream tag $tag ($(cut -d' ' -f2 "$src/.opmsg-suite-tag" | cut -c1-12))"
  if [ "$tag" != "$version" ]; then
    say "NOTE: no tag $version in the repository; the nearest one, $tag, is used"
    notes+=("source: no upstream tag $version; the nearest one, $tag, is used")
    src_origin="$src_origin, the nearest tag to $version"
  fi
else
  [ -n "$src_pkg" ] || die "libmongoc is not from a Debian package here: pass --source or --upstream-git"
  stamp=$vdir/src/.opmsg-suite-source
  if [ -f "$stamp" ] && [ "$(head -n 1 "$stamp")" = "$src_pkg $src_version" ]; then
    got=$(sed -n 2p "$stamp")
  else
    say "apt-get source $src_pkg=$src_version"
    got=$(apt_source "$src_pkg" "$src_version" "$vdir/src") ||
      die "no source for $src_pkg $src_version from the mirror: pass --source or --upstream-git"
    printf '%s\n%s\n' "$src_pkg $src_version" "$got" >"$stamp"
  fi
  src=$(find "$vdir/src" -mindepth 1 -maxdepth 1 -type d -name "$src_pkg-*" | head -n 1)
  [ -n "$src" ] || die "apt-get source left no $src_pkg-* directory in $vdir/src"
  src_origin="Debian source package $src_pkg $got (apt-get source)"
  if [ "$got" != "$src_version" ]; then
    say "NOTE: $src_pkg $src_version is not on the mirror; $got is used (same upstream version)"
    notes+=("source: $src_pkg $src_version is not on the mirror; $got is used (same upstream version)")
  fi
fi
src_version_file=$(cat "$src/VERSION_CURRENT" 2>/dev/null || true)
case $src_version_file in
  ''|0.0.0) build_version=$version ;;    # Debian's tarball says 0.0.0
  *) build_version=$src_version_file ;;
esac
[ -z "${tag:-}" ] || build_version=$tag
say "source: $src_origin"

# --- Building test-libmongoc against the system's libraries -------------------------

bdir=$vdir/build
test_bin=$bdir/src/libmongoc/test-libmongoc
# Included right after project(libmongoc): test-libmongoc linked with the
# system's shared libraries.
hook=$top/scripts/lib/libmongoc-suite-relink.cmake


gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake_args=(
  "${gen[@]}"
  -DENABLE_TESTS=ON -DENABLE_STATIC=ON -DENABLE_BSON=ON -DENABLE_MONGOC=ON
  -DENABLE_ZLIB=SYSTEM -DENABLE_EXAMPLES=OFF -DENABLE_MAN_PAGES=OFF -DENABLE_HTML_DOCS=OFF
  -DENABLE_MAINTAINER_FLAGS=OFF
  -DCMAKE_BUILD_TYPE= "-DBUILD_VERSION=$build_version"
  "-DCMAKE_PROJECT_libmongoc_INCLUDE=$hook"
  "-DOPMSG_SUITE_SYSTEM_LIBS=$mongoc_so;$bson_so"
)
# Options that show in mongoc-config.h: as the installed library was built.
if [ -n "$installed_config" ] && grep -q '^#define MONGOC_NO_AUTOMATIC_GLOBALS 1' "$installed_config"; then
  cmake_args+=(-DENABLE_AUTOMATIC_INIT_AND_CLEANUP=OFF)
elif [ -n "$installed_config" ] && grep -q '^#define MONGOC_NO_AUTOMATIC_GLOBALS 0' "$installed_config"; then
  cmake_args+=(-DENABLE_AUTOMATIC_INIT_AND_CLEANUP=ON)
fi
build_key=$( { echo "$src $build_version $mongoc_so $bson_so $deb_version"; printf '%s\n' "${cmake_args[@]}";
               cat "$hook"; cmake --version | head -n 1; } | sha256sum | cut -c1-16)
build_secs=cached
if [ "$rebuild" -eq 0 ] && [ -x "$test_bin" ] && [ "$(cat "$bdir/.opmsg-suite-key" 2>/dev/null)" = "$build_key" ]; then
  say "build: cached ($test_bin)"
else
  rm -rf "$bdir"
  mkdir -p "$bdir"
  t0=$(date +%s)
  say "build: configuring test-libmongoc $build_version (log: $bdir/build.log)"
  cmake -S "$src" -B "$bdir" "${cmake_args[@]}" >"$bdir/build.log" 2>&1 ||
    { tail -n 30 "$bdir/build.log" >&2; die "cmake configure failed"; }
  say "build: compiling test-libmongoc with $jobs jobs"
  # When the link misses private functions that the system's shared
  # libraries do not export, their defining files from the tree are added
  # (hidden), and the build goes on; at most three rounds.
  private=()
  for round in 1 2 3 4; do
    : >"$bdir/link.log"
    if cmake --build "$bdir" --target test-libmongoc -j "$jobs" >"$bdir/link.log" 2>&1; then
      cat "$bdir/link.log" >>"$bdir/build.log"
      break
    fi
    cat "$bdir/link.log" >>"$bdir/build.log"
    syms=$(grep -o "undefined reference to \`[^']*'" "$bdir/link.log" | sed "s/.*\`//; s/'$//" | sort -u)
    if [ "$round" -eq 4 ] || [ -z "$syms" ] || grep -qE '\.(c|h):[0-9]+:([0-9]+:)? (fatal )?error:' "$bdir/link.log"; then
      grep -E "error|undefined reference" "$bdir/link.log" | head -n 30 >&2
      die "building test-libmongoc failed"
    fi
    for sym in $syms; do
      file=$(grep -rlE "^$sym ?\(" --include='*.c' "$src/src/libbson/src" "$src/src/libmongoc/src" \
               "$src/src/common" 2>/dev/null | head -n 1 || true)
      [ -n "$file" ] || die "test-libmongoc needs $sym, which $(basename "$bson_so") and $(basename "$mongoc_so") do not export and no source file of the tree defines"
      case " ${private[*]} " in *" $file "*) die "$sym is still missing with $file compiled in" ;; esac
      private+=("$file")
      echo "$sym ${file#"$src"/}" >>"$bdir/private.txt"
    done
    say "build: the shared libraries do not export $(echo $syms): compiling $(printf '%s\n' "${private[@]}" | sed "s|^$src/||" | sort -u | tr '\n' ' ')into the test (hidden)"
    mapfile -t private < <(printf '%s\n' "${private[@]}" | sort -u)
    cmake -S "$src" -B "$bdir" "-DOPMSG_SUITE_PRIVATE_SOURCES=$(IFS=';'; echo "${private[*]}")" >>"$bdir/build.log" 2>&1 ||
      die "cmake configure failed (log: $bdir/build.log)"
  done
  rm -f "$bdir/link.log"
  [ -x "$test_bin" ] || test_bin=$(find "$bdir" -name test-libmongoc -type f -perm -u+x | head -n 1)
  [ -x "$test_bin" ] || die "no test-libmongoc after the build"
  build_secs=$(( $(date +%s) - t0 ))
  echo "$build_key" >"$bdir/.opmsg-suite-key"
  say "build: done in $build_secs s"
fi
[ -x "$test_bin" ] || test_bin=$(find "$bdir" -name test-libmongoc -type f -perm -u+x | head -n 1)
if [ -s "$bdir/private.txt" ]; then
  notes+=("compiled into test-libmongoc from the tree, hidden, because the shared libraries do not export them (only the tests' own calls reach them): $(awk '{printf "%s%s (%s)", sep, $1, $2; sep = ", "}' "$bdir/private.txt")")
fi

# The suite's feature macros must be the installed library's: private
# structs the tests touch depend on them.
built_config=$(find "$bdir" -path '*/mongoc/mongoc-config.h' | head -n 1)
config_diff=""
if [ -n "$installed_config" ] && [ -n "$built_config" ]; then
  pick() { grep -E '^#define MONGOC_' "$1" | grep -vE 'MONGOC_(USER_SET_CFLAGS|USER_SET_LDFLAGS|CC|CONFIG_H)\b' | sort; }
  config_diff=$(diff <(pick "$installed_config") <(pick "$built_config") | grep '^[<>]' || true)
  if [ -n "$config_diff" ]; then
    echo "$config_diff" | sed 's/^</  installed:/; s/^>/  suite:    /' >&2
    if [ "$allow_mismatch" -eq 1 ]; then
      say "WARNING: mongoc-config.h of the suite differs from the installed one (above)"
      notes+=("WARNING: the suite's mongoc-config.h differs from the installed one: $(echo "$config_diff" | tr '\n' ' ')")
    else
      die "mongoc-config.h of the suite differs from the installed one (above); --allow-config-mismatch goes on"
    fi
  else
    say "build: mongoc-config.h matches the installed library's"
  fi
else
  say "WARNING: could not compare mongoc-config.h (installed: ${installed_config:-none}, suite: ${built_config:-none})"
fi

# --- Which libmongoc gets loaded -----------------------------------------------------

loaded_mongoc() {  # ENV... -> the path of the libmongoc that the loader maps
  (cd "$src" && env "$@" LD_DEBUG=files "$test_bin" --list-tests 2>&1 >/dev/null) |
    sed -n "s/.*calling init: \(.*\/$mongoc_soname\)\$/\1/p" | head -n 1
}
base_env=(PATH="$PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 LD_LIBRARY_PATH="$libdir" MONGOC_TEST_SKIP_LIVE=on)
[ -n "${TMPDIR:-}" ] && base_env+=(TMPDIR="$TMPDIR")
linked=$(ldd "$test_bin" | awk -v so="$mongoc_soname" '$1 == so {print $3}')
[ -n "$linked" ] || die "test-libmongoc does not link $mongoc_soname (ldd)"
got=$(loaded_mongoc env -i "${base_env[@]}")
[ -n "$got" ] || die "LD_DEBUG shows no $mongoc_soname loaded"
[ "$(realpath "$got")" = "$mongoc_real" ] || die "test-libmongoc loads $got, not the system's $libdir/$mongoc_soname"
if [ -n "$(find "$bdir" -name "$mongoc_soname" -o -name 'libmongoc*.a' | head -n 1)" ]; then
  die "the build made its own libmongoc; test-libmongoc must use the system's"
fi
say "loader: test-libmongoc loads $got (the system's $mongoc_soname, $(basename "$mongoc_real"))"

if [ -n "$patched_libdir" ]; then
  [ -e "$patched_libdir/$mongoc_soname" ] || die "no $mongoc_soname in $patched_libdir"
  got=$(loaded_mongoc env -i "${base_env[@]}" LD_LIBRARY_PATH="$patched_libdir:$libdir")
  [ "$(realpath "${got:-/nonexistent}")" = "$(realpath "$patched_libdir/$mongoc_soname")" ] ||
    die "with LD_LIBRARY_PATH=$patched_libdir, test-libmongoc loads ${got:-no libmongoc}"
  say "loader: with LD_LIBRARY_PATH, test-libmongoc loads $got"
  dropin_sum=$(sha256sum "$patched_libdir/$mongoc_soname" | cut -c1-16)
else
  [ -f "$dropin" ] || die "no drop-in at $dropin (build it, or pass --dropin PATH)"
  got=$(loaded_mongoc env -i "${base_env[@]}" LD_PRELOAD="$dropin")
  [ "$(realpath "${got:-/nonexistent}")" = "$mongoc_real" ] || die "with the drop-in preloaded, test-libmongoc loads ${got:-no libmongoc}"
  bound=$( (cd "$src" && env -i "${base_env[@]}" LD_PRELOAD="$dropin" LD_DEBUG=bindings "$test_bin" --list-tests 2>&1 >/dev/null) |
           grep -F "/$mongoc_soname [0] to " | grep -F "$(basename "$dropin") [0]" |
           sed -n "s/.*symbol \`\([^']*\)'.*/\1/p" | sort -u | tr '\n' ' ' || true)
  say "loader: with LD_PRELOAD, libmongoc binds to the drop-in: ${bound:-nothing}"
  dropin_sum=$(sha256sum "$dropin" | cut -c1-16)
fi

# --- The tests --------------------------------------------------------------------------

(cd "$src" && env -i "${base_env[@]}" "$test_bin" --list-tests) | grep '^/' >"$vdir/tests.txt" ||
  die "test-libmongoc --list-tests failed"
total=$(wc -l <"$vdir/tests.txt")
prefixes=()
if [ -n "$subset" ]; then
  while IFS= read -r line; do
    line=${line%%#*}
    line=$(echo "$line" | sed 's/[[:space:]]*$//; s/^[[:space:]]*//')
    [ -n "$line" ] && prefixes+=("$line")
  done <"$subset"
fi
prefixes+=("${matches[@]}")
if [ ${#prefixes[@]} -gt 0 ]; then
  printf '%s\n' "${prefixes[@]}" >"$vdir/prefixes.txt"
  # A test is run when it starts with one of the prefixes and with none of
  # the "!PREFIX" exclusions.
  awk 'NR == FNR { if (substr($0, 1, 1) == "!") x[++m] = substr($0, 2); else p[++n] = $0; next }
       { for (i = 1; i <= m; i++) if (index($0, x[i]) == 1) next
         for (i = 1; i <= n; i++) if (index($0, p[i]) == 1) { print; next } }' \
    "$vdir/prefixes.txt" "$vdir/tests.txt" >"$vdir/selected.txt"
  selection_list=$vdir/selected.txt
  selection="$(wc -l <"$vdir/selected.txt") of $total tests (${#prefixes[@]} prefixes${subset:+ from $(basename "$subset")})"
else
  cp "$vdir/tests.txt" "$vdir/selected.txt"
  selection_list=""
  selection="all $total tests"
fi
count=$(wc -l <"$vdir/selected.txt")
[ "$count" -gt 0 ] || die "no test selected"
say "tests: $selection"

# --- FerretDB on 127.0.0.1:27017 ---------------------------------------------------------

fdb_bin=""
if [ "$use_ferretdb" -eq 1 ] || [ "$live" -eq 1 ]; then
  fdb_bin=$(find_ferretdb) || fdb_bin=""
  if [ -z "$fdb_bin" ]; then
    say "NOTE: FerretDB is not installed (scripts/install-deps.d/peers.sh): tests that try localhost:27017 wait for server selection"
    notes+=("no FerretDB: tests that try localhost:27017 waited for server selection")
    use_ferretdb=0; live=0
  fi
fi
fdb_version=""
[ -n "$fdb_bin" ] && fdb_version=$("$fdb_bin" --version 2>/dev/null | sed -n 's/^version: //p' | head -n 1)

stop_ferretdb() { suite_stop_ferretdb; }
trap stop_ferretdb EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A fresh FerretDB (SQLite in DIR) on 127.0.0.1:27017; false when the port is taken.
start_ferretdb() { suite_start_ferretdb "$fdb_bin" "$1" 27017; }

# --- One run -----------------------------------------------------------------------------


# run_tests MODE LIST OUTDIR JOBS: MODE is stock, dropin or patched; live
# when LIVE=1; LIST "-" the selection (every test, without a subset).
run_tests() {
  local mode=$1 list=$2 out=$3 n=$4 env_run
  local -a sel=(--names "$list") tenv=()
  [ "$list" != - ] || [ -n "$selection_list" ] || sel=()
  [ "$list" != - ] || [ -z "$selection_list" ] || sel=(--names "$selection_list")
  env_run=(PATH="$PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 LD_LIBRARY_PATH="$libdir")
  [ -n "${TMPDIR:-}" ] && env_run+=(TMPDIR="$TMPDIR")
  [ "${LIVE:-0}" -eq 1 ] || env_run+=(MONGOC_TEST_SKIP_LIVE=on)
  # (The drop-in and the patched library for the tests only, not for ctest.)
  [ "$mode" = dropin ] && tenv=(--test-env "LD_PRELOAD=$dropin" --test-env OPMSG_MONGOC_DEBUG=1)
  [ "$mode" = patched ] && tenv=(--test-env "LD_LIBRARY_PATH=$patched_libdir:$libdir")
  rm -rf "$out"
  "$jc" run --exe "$test_bin" --src "$src" --out "$out" --jobs "$n" --timeout "$limit" --repeat "$repeat" \
    --strip "$src" "${sel[@]}" "${tenv[@]}" -- "${env_run[@]}" || die "ctest did not run (log: $out/ctest.log)"
}

counts() {  # RESULTS.tsv -> "run passed failed skipped timeout"
  awk -F'\t' '{n++; c[$2]++} END {printf "%d %d %d %d %d\n", n, c["pass"], c["fail"], c["skip"], c["timeout"]}' "$1"
}

run_mode() {  # MODE OUTDIR LABEL
  local mode=$1 out=$2 label=$3
  local fdb_used=no
  if [ "$use_ferretdb" -eq 1 ] || [ "${LIVE:-0}" -eq 1 ]; then
    start_ferretdb "$out.ferretdb" && fdb_used=yes
  fi
  local where=""
  [ "$fdb_used" = no ] || where=", FerretDB on 127.0.0.1:27017"
  say "run $label: $count tests, ctest -j $jobs, ${limit} s each at most, until-pass:$repeat$where"
  run_tests "$mode" - "$out" "$jobs"
  stop_ferretdb
  rm -rf "$out.ferretdb"
  echo "$fdb_used" >"$out.fdb"
  read -r n p f s t <<<"$(counts "$out/results.tsv")"
  say "run $label: $n tests in $(cat "$out/seconds") s: passed $p, failed $f, skipped $s, timed out $t"
}

# --- Comparing ------------------------------------------------------------------------------

# A test that differs runs again, one at a time, once per mode (jcompare),
# with FerretDB as the first run had it.
confirm_run() {  # MODE LIST OUT
  if [ "$use_ferretdb" -eq 1 ] || [ "${LIVE:-0}" -eq 1 ]; then start_ferretdb "$vdir/confirm.ferretdb" || true; fi
  run_tests "$1" "$2" "$3" 1
  stop_ferretdb
  rm -rf "$vdir/confirm.ferretdb"
}
confirm_stock() { confirm_run stock "$@"; }
confirm_second() { confirm_run "$second" "$@"; }

# --- Main -------------------------------------------------------------------------------------

if [ "$nolive" -eq 1 ]; then
run_mode stock "$vdir/stock" stock
run_mode "$second" "$vdir/$second" "$second_label"

LIVE=0 jcompare "$vdir/stock" "$vdir/$second" "$vdir/compare" stock "$second_label" \
  confirm_stock confirm_second "$explained"
n0=$(wc -l <"$vdir/stock/results.tsv") p0=$CMP_P0 f0=$CMP_F0 s0=$CMP_S0 t0=$CMP_T0 p1=$CMP_P1 f1=$CMP_F1 s1=$CMP_S1 t1=$CMP_T1
n1=$(wc -l <"$vdir/$second/results.tsv")
# (LoadTests.cmake lists the tests with --no-fork: those the suite registers
# only when it may fork are not CTest tests.)
[ "$n0" -eq "$count" ] || notes+=("CTest registers $n0 of the $count tests --list-tests names (build/cmake/LoadTests.cmake lists them with --no-fork; not registered: $(cut -f1 "$vdir/stock/results.tsv" | grep -vxF -f - "$vdir/selected.txt" | head -n 5 | tr '\n' ' '))")
ndiff=$CMP_NDIFF nexpl=$CMP_NEXPL nflaky=$CMP_NFLAKY
active=yes
if [ "$second" = dropin ]; then
  [ "$CMP_INACTIVE" -eq 0 ] || active=no
  [ "$active" = yes ] || say "the drop-in did not report itself active in $CMP_INACTIVE test processes"
fi
# (The patched library: the loader check above stops the run unless
# test-libmongoc loads it.)

if [ "$second" = patched ]; then
  line="libmongoc-suite $version: run $n0, stock passed $p0, patched passed $p1, differences $ndiff, explained $nexpl, loaded $active"
else
  line="libmongoc-suite $version: run $n0, stock passed $p0, drop-in passed $p1, differences $ndiff, explained $nexpl, active $active"
fi

{
  echo "# libmongoc $version: test-libmongoc, stock and $([ "$second" = patched ] && echo "patched" || echo "with the drop-in")"
  echo
  echo "- libmongoc: ${deb_pkg:+Debian package $deb_pkg $deb_version, }$mongoc_soname (loaded from the system's library directory: checked with ldd and LD_DEBUG)${inside_root:+, inside the $inside_root root}"
  echo "- source of the suite: $src_origin"
  if [ "$second" = patched ]; then
    echo "- patched: $mongoc_soname of $patched_libdir (sha256 $dropin_sum...), loaded through LD_LIBRARY_PATH"
  else
    echo "- drop-in: $(basename "$dropin") (sha256 $dropin_sum...); libmongoc binds to it: ${bound:-nothing}"
  fi
  echo "- tests: $selection; upstream's CTest registration (build/cmake/LoadTests.cmake), \`ctest -j $jobs --timeout $limit --repeat until-pass:$repeat --output-junit\`; MONGOC_TEST_SKIP_LIVE=on"
  echo "- FerretDB ${fdb_version:-} on 127.0.0.1:27017 during the runs: $(cat "$vdir/stock.fdb") (tests that still try localhost:27017 fail fast instead of waiting for server selection)"
  echo "- build of test-libmongoc: ${build_secs}$([ "$build_secs" = cached ] || echo " s")"
  for nline in "${notes[@]}"; do echo "- $nline"; done
  echo
  echo "| run | tests | passed | failed | skipped | timed out | wall time |"
  echo "|---|---|---|---|---|---|---|"
  echo "| stock | $n0 | $p0 | $f0 | $s0 | $t0 | $(cat "$vdir/stock/seconds") s |"
  echo "| $second_label | $n1 | $p1 | $f1 | $s1 | $t1 | $(cat "$vdir/$second/seconds") s |"
  echo
  echo "## Differences: $ndiff, explained $nexpl"
  echo
  echo "Each try is ctest's until-pass:$repeat; each difference ran once more per mode, one test at a time,"
  echo "with the same result in every try."
  echo "Explanations: \`scripts/$(basename "$explained")\`."
  echo
  if [ "$ndiff" -gt 0 ]; then
    echo "| test | stock | $second_label | message | explanation |"
    echo "|---|---|---|---|---|"
    cat "$vdir/compare/rows.md"
  else
    echo "None."
  fi
  if [ "$nflaky" -gt 0 ]; then
    echo
    echo "## Flaky: $nflaky (results overlap between the modes over the tries; not counted)"
    echo
    echo "| test | stock tries | $second_label tries | message |"
    echo "|---|---|---|---|"
    cat "$vdir/compare/flaky.md"
  fi
} >"$vdir/differences.md"
fi

# --- Live tests against FerretDB (reported, not gating) ---------------------------------------------

if [ "$live" -eq 1 ]; then
  LIVE=1 run_mode stock "$vdir/live-stock" "live stock"
  LIVE=1 run_mode "$second" "$vdir/live-$second" "live $second_label"
  LIVE=1 jcompare "$vdir/live-stock" "$vdir/live-$second" "$vdir/live-compare" stock "$second_label" \
    confirm_stock confirm_second "$explained"
  read -r ln0 lp0 lf0 ls0 lt0 <<<"$(counts "$vdir/live-stock/results.tsv")"
  read -r ln1 lp1 lf1 ls1 lt1 <<<"$(counts "$vdir/live-$second/results.tsv")"
  ldiff=$CMP_NDIFF lflaky=$CMP_NFLAKY
  {
    echo "## libmongoc $version: live tests against FerretDB ${fdb_version} (not gating)"
    echo
    echo "Without MONGOC_TEST_SKIP_LIVE, against a fresh FerretDB (SQLite) on 127.0.0.1:27017 per run."
    echo
    echo "| run | tests | passed | failed | skipped | timed out | wall time |"
    echo "|---|---|---|---|---|---|---|"
    echo "| live stock | $ln0 | $lp0 | $lf0 | $ls0 | $lt0 | $(cat "$vdir/live-stock/seconds") s |"
    echo "| live $second_label | $ln1 | $lp1 | $lf1 | $ls1 | $lt1 | $(cat "$vdir/live-$second/seconds") s |"
    echo
    echo "Differences: $ldiff (flaky: $lflaky)"
    if [ "$ldiff" -gt 0 ]; then
      echo
      echo "| test | stock | $second_label | message | explanation |"
      echo "|---|---|---|---|---|"
      cat "$vdir/live-compare/rows.md"
    fi
    if [ "$lflaky" -gt 0 ]; then
      echo
      echo "| test | stock tries | $second_label tries | message |"
      echo "|---|---|---|---|"
      cat "$vdir/live-compare/flaky.md"
    fi
  } >"$vdir/live.md"
  if [ "$nolive" -eq 1 ]; then
    { echo; sed 's/^## libmongoc [^:]*: l/## L/' "$vdir/live.md"; } >>"$vdir/differences.md"
  fi
  say "live (FerretDB $fdb_version): run $ln0, stock passed $lp0, $second_label passed $lp1, differences $ldiff, flaky $lflaky ($vdir/live.md)"
fi
[ "$nolive" -eq 1 ] || exit 0

say "differences: $vdir/differences.md"
[ "$nflaky" -eq 0 ] || say "flaky (not counted): $nflaky, listed in differences.md"
if [ "$ndiff" -gt "$nexpl" ]; then
  sed "s|^|$prog: unexplained: |" "$vdir/compare/unexplained.txt" >&2
fi
echo "$line" >"$vdir/summary.txt"
echo "$line"
# The status is the verdict: tests ran, every difference explained, the drop-in active.
[ "$n0" -gt 0 ] && [ "$ndiff" -eq "$nexpl" ] && [ "$active" = yes ]
