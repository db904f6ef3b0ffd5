#!/bin/bash
# libmongoc's own test suite (test-libmongoc, built for the installed libmongoc, linked with its
# shared libraries) run stock and with the drop-in preloaded, or --libdir's patched libmongoc
# loaded; the two JUnit files compared (docs/libmongoc-suite.md). The last line:
#   libmongoc-suite 1.23.1: run N, stock passed P0, drop-in passed P1, differences D, explained E, active yes
# (--libdir: "patched passed P1, ..., loaded yes"). Exit status 0 when every difference is
# explained and the drop-in was active; 1 otherwise; 2 when the suite could not be built or run.
#
# Usage: scripts/libmongoc-suite.sh [OPTIONS]
#   --dropin PATH        the drop-in (default build/src/mongoc-dropin/libopmsg-mongoc.so)
#   --libdir DIR         the second run loads DIR's libmongoc and libbson instead
#   --source DIR         a mongo-c-driver source tree (default: apt-get source)
#   --upstream-git DIR   a mongo-c-driver repository: its tag of the version, or the nearest
#   --root DIR           run inside this Debian root (chroot)
#   --work DIR           work files (default build/libmongoc-suite)
#   --jobs N --timeout SECONDS --repeat N
#                        ctest -j N (2), a time limit per test (60), until-pass:N (3)
#   --subset FILE        test-name prefixes, one a line (# comments, "!PREFIX" excludes)
#   --match PREFIX       only tests whose names start with PREFIX (repeatable)
#   --explained FILE     "test-name<TAB>reason" (default scripts/libmongoc-suite.explained)
#   --no-ferretdb        no FerretDB on 127.0.0.1:27017
#   --ferretdb PATH      the FerretDB binary (default: PATH, then $(go env GOPATH)/bin)
#   --live, --live-only  also (only) the live tests against FerretDB (WORK/VERSION/live.md, not gating)
#   --rebuild            build test-libmongoc again even when cached
#   --allow-config-mismatch  go on when mongoc-config.h differs from the installed one
set -euo pipefail
export LC_ALL=C

prog=libmongoc-suite
top=$(cd "$(dirname "$0")/.." && pwd)
# say, die, usage, packages, two CTest runs compared, FerretDB (shared with scripts/fork-check.sh)
. "$top/scripts/lib/suite-common.sh"

# --- Options: each sets the variable of its name (--upstream-git: upstream_git) ---

dropin=$top/build/src/mongoc-dropin/libopmsg-mongoc.so libdir="" source="" upstream_git="" root=""
work=$top/build/libmongoc-suite jobs=2 timeout=60 repeat=3 subset="" ferretdb="" inside_root=""
explained=$top/scripts/libmongoc-suite.explained
no_ferretdb=0 live=0 live_only=0 rebuild=0 allow_config_mismatch=0
matches=()
fwd=()   # the options again, paths absolute, for the run inside --root
while [ $# -gt 0 ]; do
  o=$1 v=""
  case $o in
    --dropin|--libdir|--source|--upstream-git|--root|--work|--subset|--explained|--ferretdb)
      v=$(realpath -m -- "${2:?$o needs a path}") ;;
    --jobs|--timeout|--repeat)
      v=${2:-}; case $v in ''|*[!0-9]*|0) die "$o needs a positive number" ;; esac ;;
    --match|--inside-root) v=${2:?$o needs a value} ;;   # (--inside-root: set by --root)
    --no-ferretdb|--live|--live-only|--rebuild|--allow-config-mismatch) ;;
    -h|--help) usage; exit 0 ;;
    *) echo "$prog: unknown option $o" >&2; usage >&2; exit 2 ;;
  esac
  var=${o#--} var=${var//-/_}
  if [ "$o" = --match ]; then matches+=("$v")
  elif [ -n "$v" ]; then printf -v "$var" %s "$v"
  else printf -v "$var" 1; fi
  [ "$o" = --root ] || fwd+=("$o" ${v:+"$v"})
  shift $((${#v} > 0 ? 2 : 1))
done
[ "$live_only" -eq 0 ] || live=1
[ -z "$subset" ] || [ -f "$subset" ] || die "no subset file $subset"
[ -z "$inside_root" ] || root=""
LIVE=0   # 1 for the live runs
# The second run: the drop-in preloaded, or a patched libmongoc (--libdir).
if [ -n "$libdir" ]; then second=patched second_label=patched second_word=loaded second_title=patched
else second=dropin second_label=drop-in second_word="" second_title="with the drop-in"; fi

# --- --root: this script again, inside the root --------------------------------
# (a mount namespace of its own with /proc, /dev, the tree and every path
# given mounted at the same places, then chroot; the network is the machine's)

if [ -n "$root" ]; then
  [ "$(id -u)" -eq 0 ] || die "--root needs root (chroot, mount)"
  [ -x "$root/bin/sh" ] || die "$root is not a Debian root"
  unshare -m --propagation private true 2>/dev/null || die "--root needs a mount namespace (unshare -m)"
  if [ -z "$ferretdb" ] && { [ "$no_ferretdb" -eq 0 ] || [ "$live" -eq 1 ]; }; then
    if ferretdb=$(suite_find_ferretdb); then fwd+=(--ferretdb "$ferretdb"); else ferretdb=""; fi
  fi
  mkdir -p "$work"
  binds=("$top")
  for p in "$work" "$dropin" "$libdir" "$source" "$upstream_git" "$subset" "$explained" "$ferretdb"; do
    case $p/ in /|"$top"/*) ;; *) binds+=("$p") ;; esac
  done
  envs=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
        DEBIAN_FRONTEND=noninteractive TERM="${TERM:-dumb}")
  while read -r v; do envs+=("$v=${!v}"); done < <(compgen -e | grep '^OPMSG_' || true)
  made=()   # the mount points created here, removed again afterwards
  for p in "${binds[@]}"; do
    [ -e "$p" ] || continue
    d=$root$p; [ -d "$p" ] || d=$(dirname "$d")
    mapfile -t -O "${#made[@]}" made < <(mkdir -pv "$d" | sed -n "s/^mkdir: created directory '\(.*\)'\$/\1/p")
    if [ ! -e "$root$p" ]; then : >"$root$p"; made+=("$root$p"); fi
  done
  say "running inside $root"
  rc=0
  # shellcheck disable=SC2016
  unshare -m --propagation private bash -c '
    set -e
    root=$1 n=$2; shift 2
    for _ in $(seq 1 "$n"); do if [ -e "$1" ]; then mount --bind "$1" "$root$1"; fi; shift; done
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    exec chroot "$root" /usr/bin/env -i "$@"' inner "$root" "${#binds[@]}" "${binds[@]}" \
    "${envs[@]}" bash "$top/scripts/libmongoc-suite.sh" "${fwd[@]}" --inside-root "$(basename "$root")" || rc=$?
  printf '%s\n' "${made[@]}" | tac | while read -r m; do rm -f "$m" 2>/dev/null || rmdir "$m" 2>/dev/null || true; done
  exit $rc
fi

# --- The installed libmongoc ----------------------------------------------------

command -v pkg-config >/dev/null || die "pkg-config is missing"
mongoc_pc=$(for pc in mongoc2 libmongoc-1.0; do if pkg-config --exists "$pc"; then echo "$pc"; break; fi; done 2>/dev/null)
[ -n "$mongoc_pc" ] || die "no libmongoc development files (libmongoc-dev) on this system"
case $mongoc_pc in mongoc2) bson_pc=bson2 ;; *) bson_pc=libbson-1.0 ;; esac
version=$(pkg-config --modversion "$mongoc_pc")
syslib=$(pkg-config --variable=libdir "$mongoc_pc")

so_of() { echo "$syslib/lib$(pkg-config --libs-only-l "$1" | sed 's/^-l//; s/ .*//').so"; }   # PC: the linker's .so
mongoc_so=$(so_of "$mongoc_pc") bson_so=$(so_of "$bson_pc")
for so in "$mongoc_so" "$bson_so"; do [ -e "$so" ] || die "no $so"; done
# (libmongoc-1.0.so.0, libmongoc2.so.2)
mongoc_soname=$(objdump -p "$mongoc_so" | awk '$1 == "SONAME" {print $2}')
[ -n "$mongoc_soname" ] || die "no SONAME in $mongoc_so"
mongoc_real=$(realpath "$syslib/$mongoc_soname")

deb_version="" src_pkg="" src_version=""
deb_pkg=$(dpkg -S "$syslib/$mongoc_soname" 2>/dev/null | head -n 1 | cut -d: -f1 || true)
if [ -n "$deb_pkg" ]; then
  # shellcheck disable=SC2016
  read -r deb_version src_pkg src_version < <(dpkg-query -W -f='${Version} ${source:Package} ${source:Version}\n' "$deb_pkg")
fi
say "installed: libmongoc $version${deb_pkg:+, Debian package $deb_pkg $deb_version (source $src_pkg $src_version)}${inside_root:+ (inside the $inside_root root)}"

vdir=$work/$version
mkdir -p "$vdir"
notes=()     # lines for differences.md

# --- Build dependencies -----------------------------------------------------------
# (ICU's headers decide MONGOC_ENABLE_ICU, which must match the installed library's)

installed_config=$(pkg-config --cflags-only-I "$mongoc_pc" | tr ' ' '\n' |
  sed -n 's|^-I\(.*\)|\1/mongoc/mongoc-config.h|p' | while read -r f; do [ ! -f "$f" ] || echo "$f"; done | head -n 1 || true)
if command -v dpkg-query >/dev/null; then
  deps=(cmake pkg-config gcc libc6-dev libssl-dev libsasl2-dev libsnappy-dev libzstd-dev zlib1g-dev)
  grep -qs '^#define MONGOC_ENABLE_ICU 1' "${installed_config:-/dev/null}" && deps+=(libicu-dev)
  command -v ninja >/dev/null || deps+=(ninja-build)
  [ -n "$source$upstream_git" ] || deps+=(dpkg-dev)
  [ -z "$upstream_git" ] || command -v git >/dev/null || deps+=(git)
  suite_need_pkgs "${deps[@]}"
fi

# --- The source ------------------------------------------------------------------

note() { say "NOTE: $1"; notes+=("$2"); }   # SAID NOTED

. "$top/scripts/lib/apt-source.sh"   # apt_source PACKAGE VERSION DEST: through a private configuration
# shellcheck disable=SC2034 # (apt-source.sh reads it)
apt_source_dir=$work/apt

if [ -n "$source" ]; then
  [ -f "$source/CMakeLists.txt" ] && [ -d "$source/src/libmongoc" ] || die "$source is not a mongo-c-driver source tree"
  src=$source
  src_origin="source tree $source"
elif [ -n "$upstream_git" ]; then
  git -C "$upstream_git" rev-parse --git-dir >/dev/null 2>&1 || die "$upstream_git is not a git repository"
  # The version's tag, else the closest older one of the same major.minor, else the closest newer one.
  tags=$(git -C "$upstream_git" tag -l "${version%.*}.*" | grep -E '^[0-9]+\.[0-9]+\.[0-9]+$' | sort -V || true)
  tag=$(for t in $tags; do if dpkg --compare-versions "$t" le "$version"; then echo "$t"; fi; done | tail -n 1)
  tag=${tag:-$(echo "$tags" | head -n 1)}
  [ -n "$tag" ] || die "$upstream_git has no release tag near $version"
  src=$vdir/src-$tag
  if [ ! -f "$src/.opmsg-suite-tag" ]; then
    rm -rf "$src"
    mkdir -p "$src"
    # A mirror may lack some large blobs: those files are left out (and said).
    git -C "$upstream_git" ls-tree -r "$tag" >"$src.tree"
    awk '$2 == "blob" {print $3}' "$src.tree" | git -C "$upstream_git" cat-file --batch-check |
      awk 'NR == FNR { if ($2 == "missing") miss[$1]; next } $3 in miss { sub(/^[^\t]*\t/, ""); print }' - "$src.tree" \
      >"$src/.opmsg-suite-missing"
    mapfile -t missing <"$src/.opmsg-suite-missing"
    git -C "$upstream_git" archive "$tag" -- . "${missing[@]/#/:(exclude,literal)}" 2>/dev/null | tar -x -C "$src"
    rm -f "$src.tree"
    echo "$tag $(git -C "$upstream_git" rev-parse "$tag^{commit}")" >"$src/.opmsg-suite-tag"
  fi
  if [ -s "$src/.opmsg-suite-missing" ]; then
    m=$(tr '\n' ' ' <"$src/.opmsg-suite-missing")
    note "not in the repository, left out of the tree: $m" "source: files missing from the repository, left out: $m"
  fi
  src_origin="upstream tag $tag ($(cut -d' ' -f2 "$src/.opmsg-suite-tag" | cut -c1-12))"
  if [ "$tag" != "$version" ]; then
    note "no tag $version in the repository; the nearest one, $tag, is used" "source: no upstream tag $version; the nearest one, $tag, is used"
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
  m="$src_pkg $src_version is not on the mirror; $got is used (same upstream version)"
  [ "$got" = "$src_version" ] || note "$m" "source: $m"
fi
case $(cat "$src/VERSION_CURRENT" 2>/dev/null || true) in
  ''|0.0.0) build_version=$version ;;    # Debian's tarball says 0.0.0
  *) build_version=$(cat "$src/VERSION_CURRENT") ;;
esac
[ -z "${tag:-}" ] || build_version=$tag
say "source: $src_origin"

# --- Building test-libmongoc against the system's libraries ---------------------------

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
case $(grep -s '^#define MONGOC_NO_AUTOMATIC_GLOBALS [01]' "${installed_config:-/dev/null}") in
  *1) cmake_args+=(-DENABLE_AUTOMATIC_INIT_AND_CLEANUP=OFF) ;;
  *0) cmake_args+=(-DENABLE_AUTOMATIC_INIT_AND_CLEANUP=ON) ;;
esac
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
  # When the link misses private functions the shared libraries do not export, their
  # files from the tree are compiled in (hidden), and the build goes on; at most three rounds.
  private=()
  for round in 1 2 3 4; do
    rc=0
    cmake --build "$bdir" --target test-libmongoc -j "$jobs" >"$bdir/link.log" 2>&1 || rc=$?
    cat "$bdir/link.log" >>"$bdir/build.log"
    [ "$rc" -ne 0 ] || break
    syms=$(grep -o "undefined reference to \`[^']*'" "$bdir/link.log" | sed "s/.*\`//; s/'$//" | sort -u || true)
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
    mapfile -t private < <(printf '%s\n' "${private[@]}" | sort -u)
    say "build: the shared libraries do not export ${syms//$'\n'/ }: compiling $(printf '%s\n' "${private[@]}" | sed "s|^$src/||" | tr '\n' ' ')into the test (hidden)"
    cmake -S "$src" -B "$bdir" "-DOPMSG_SUITE_PRIVATE_SOURCES=$(IFS=';'; echo "${private[*]}")" >>"$bdir/build.log" 2>&1 ||
      die "cmake configure failed (log: $bdir/build.log)"
  done
  rm -f "$bdir/link.log"
  build_secs=$(( $(date +%s) - t0 ))
  echo "$build_key" >"$bdir/.opmsg-suite-key"
  say "build: done in $build_secs s"
fi
[ -x "$test_bin" ] || test_bin=$(find "$bdir" -name test-libmongoc -type f -perm -u+x | head -n 1)
[ -x "$test_bin" ] || die "no test-libmongoc after the build"
if [ -s "$bdir/private.txt" ]; then
  notes+=("compiled into test-libmongoc from the tree, hidden, because the shared libraries do not export them (only the tests' own calls reach them): $(awk '{printf "%s%s (%s)", sep, $1, $2; sep = ", "}' "$bdir/private.txt")")
fi

# The suite's feature macros must be the installed library's: private
# structs the tests touch depend on them.
built_config=$(find "$bdir" -path '*/mongoc/mongoc-config.h' | head -n 1)
if [ -n "$installed_config" ] && [ -n "$built_config" ]; then
  pick() { grep -E '^#define MONGOC_' "$1" | grep -vE 'MONGOC_(USER_SET_CFLAGS|USER_SET_LDFLAGS|CC|CONFIG_H)\b' | sort; }
  config_diff=$(diff <(pick "$installed_config") <(pick "$built_config") | grep '^[<>]' || true)
  if [ -z "$config_diff" ]; then
    say "build: mongoc-config.h matches the installed library's"
  else
    echo "$config_diff" | sed 's/^</  installed:/; s/^>/  suite:    /' >&2
    [ "$allow_config_mismatch" -eq 1 ] ||
      die "mongoc-config.h of the suite differs from the installed one (above); --allow-config-mismatch goes on"
    say "WARNING: mongoc-config.h of the suite differs from the installed one (above)"
    notes+=("WARNING: the suite's mongoc-config.h differs from the installed one: $(echo "$config_diff" | tr '\n' ' ')")
  fi
else
  say "WARNING: could not compare mongoc-config.h (installed: ${installed_config:-none}, suite: ${built_config:-none})"
fi

# --- Which libmongoc gets loaded ----------------------------------------------------

base_env=(PATH="$PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 LD_LIBRARY_PATH="$syslib")
[ -n "${TMPDIR:-}" ] && base_env+=(TMPDIR="$TMPDIR")
suite() { (cd "$src" && env -i "${base_env[@]}" MONGOC_TEST_SKIP_LIVE=on "$@"); }   # ENV... TEST-LIBMONGOC ARGS...
loads() {  # WANT ENV... : dies unless test-libmongoc, run with ENV, maps WANT as its libmongoc
  local want=$1 got; shift
  got=$(suite "$@" LD_DEBUG=files "$test_bin" --list-tests 2>&1 >/dev/null |
        sed -n "s/.*calling init: \(.*\/$mongoc_soname\)\$/\1/p" | head -n 1)
  [ "$(realpath "${got:-/nonexistent}")" = "$(realpath "$want")" ] ||
    die "${*:-without LD_PRELOAD}: test-libmongoc loads ${got:-no $mongoc_soname}, not $want"
  echo "$got"
}
ldd "$test_bin" | awk -v so="$mongoc_soname" '$1 == so {f = 1} END {exit !f}' || die "test-libmongoc does not link $mongoc_soname (ldd)"
got=$(loads "$mongoc_real")
if [ -n "$(find "$bdir" -name "$mongoc_soname" -o -name 'libmongoc*.a' | head -n 1)" ]; then
  die "the build made its own libmongoc; test-libmongoc must use the system's"
fi
say "loader: test-libmongoc loads $got (the system's $mongoc_soname, $(basename "$mongoc_real"))"
if [ -n "$libdir" ]; then
  [ -e "$libdir/$mongoc_soname" ] || die "no $mongoc_soname in $libdir"
  got=$(loads "$libdir/$mongoc_soname" LD_LIBRARY_PATH="$libdir:$syslib")
  say "loader: with LD_LIBRARY_PATH, test-libmongoc loads $got"
  second_note="patched: $mongoc_soname of $libdir (sha256 $(sha256sum "$libdir/$mongoc_soname" | cut -c1-16)...), loaded through LD_LIBRARY_PATH"
else
  [ -f "$dropin" ] || die "no drop-in at $dropin (build it, or pass --dropin PATH)"
  loads "$mongoc_real" LD_PRELOAD="$dropin" >/dev/null
  bound=$(suite LD_PRELOAD="$dropin" LD_DEBUG=bindings "$test_bin" --list-tests 2>&1 >/dev/null |
          grep -F "/$mongoc_soname [0] to " | grep -F "$(basename "$dropin") [0]" |
          sed -n "s/.*symbol \`\([^']*\)'.*/\1/p" | sort -u | tr '\n' ' ' || true)
  say "loader: with LD_PRELOAD, libmongoc binds to the drop-in: ${bound:-nothing}"
  second_note="drop-in: $(basename "$dropin") (sha256 $(sha256sum "$dropin" | cut -c1-16)...); libmongoc binds to it: ${bound:-nothing}"
fi

# --- The tests ------------------------------------------------------------------------

suite "$test_bin" --list-tests | grep '^/' >"$vdir/tests.txt" || die "test-libmongoc --list-tests failed"
total=$(wc -l <"$vdir/tests.txt")
{ [ -z "$subset" ] || sed 's/#.*//; s/^[[:space:]]*//; s/[[:space:]]*$//; /^$/d' "$subset"
  [ ${#matches[@]} -eq 0 ] || printf '%s\n' "${matches[@]}"; } >"$vdir/prefixes.txt"
selection_list=""
if [ -s "$vdir/prefixes.txt" ]; then
  # A test is run when it starts with one of the prefixes and with none of
  # the "!PREFIX" exclusions.
  awk 'NR == FNR { if (substr($0, 1, 1) == "!") x[++m] = substr($0, 2); else p[++n] = $0; next }
       { for (i = 1; i <= m; i++) if (index($0, x[i]) == 1) next
         for (i = 1; i <= n; i++) if (index($0, p[i]) == 1) { print; next } }' \
    "$vdir/prefixes.txt" "$vdir/tests.txt" >"$vdir/selected.txt"
  selection_list=$vdir/selected.txt
  selection="$(wc -l <"$vdir/selected.txt") of $total tests ($(wc -l <"$vdir/prefixes.txt") prefixes${subset:+ from $(basename "$subset")})"
else
  cp "$vdir/tests.txt" "$vdir/selected.txt"
  selection="all $total tests"
fi
count=$(wc -l <"$vdir/selected.txt")
[ "$count" -gt 0 ] || die "no test selected"
say "tests: $selection"

# --- FerretDB on 127.0.0.1:27017 --------------------------------------------------------

fdb_bin="" fdb_version=""
if [ "$no_ferretdb" -eq 0 ] || [ "$live" -eq 1 ]; then
  if fdb_bin=$(suite_find_ferretdb "$ferretdb"); then
    fdb_version=$("$fdb_bin" --version 2>/dev/null | sed -n 's/^version: //p' | head -n 1)
  else
    note "FerretDB is not installed (scripts/install-deps.d/peers.sh): tests that try localhost:27017 wait for server selection" \
      "no FerretDB: tests that try localhost:27017 waited for server selection"
    fdb_bin="" no_ferretdb=1 live=0
  fi
fi
trap suite_stop_ferretdb EXIT; trap 'exit 130' INT; trap 'exit 143' TERM

# --- The runs ---------------------------------------------------------------------------

counts() {  # RESULTS.tsv -> "run passed failed skipped timeout"
  awk -F'\t' '{n++; c[$2]++} END {printf "%d %d %d %d %d\n", n, c["pass"], c["fail"], c["skip"], c["timeout"]}' "$1"
}

# MODE is stock, dropin or patched; LIST the tests (empty: the selection);
# live when LIVE=1; a fresh FerretDB on 127.0.0.1:27017 unless --no-ferretdb.
# With a LABEL the run is said.
run_tests() {  # MODE LIST OUT JOBS [LABEL]
  local mode=$1 out=$3 fdb=no where="" n p f s t
  local -a sel=(--names "${2:-$selection_list}") tenv=() env_run=("${base_env[@]}")
  [ -n "${2:-$selection_list}" ] || sel=()
  [ "$LIVE" -eq 1 ] || env_run+=(MONGOC_TEST_SKIP_LIVE=on)
  # (The drop-in and the patched library for the tests only, not for ctest.)
  [ "$mode" != dropin ] || tenv=(--test-env "LD_PRELOAD=$dropin" --test-env OPMSG_MONGOC_DEBUG=1)
  [ "$mode" != patched ] || tenv=(--test-env "LD_LIBRARY_PATH=$libdir:$syslib")
  if [ "$no_ferretdb" -eq 0 ] || [ "$LIVE" -eq 1 ]; then
    suite_start_ferretdb "$fdb_bin" "$out.ferretdb" 27017 && fdb=yes where=", FerretDB on 127.0.0.1:27017"
  fi
  [ -z "${5:-}" ] || say "run $5: $count tests, ctest -j $jobs, ${timeout} s each at most, until-pass:$repeat$where"
  rm -rf "$out"
  "$jc" run --exe "$test_bin" --src "$src" --out "$out" --jobs "$4" --timeout "$timeout" --repeat "$repeat" \
    --strip "$src" "${sel[@]}" "${tenv[@]}" -- "${env_run[@]}" || die "ctest did not run (log: $out/ctest.log)"
  suite_stop_ferretdb; rm -rf "$out.ferretdb"; echo "$fdb" >"$out.fdb"
  read -r n p f s t <<<"$(counts "$out/results.tsv")"
  [ -z "${5:-}" ] || say "run $5: $n tests in $(cat "$out/seconds") s: passed $p, failed $f, skipped $s, timed out $t"
}
# A test that differs runs again, one at a time, once per mode (jcompare).
confirm_stock() { run_tests stock "$1" "$2" 1; }
confirm_second() { run_tests "$second" "$1" "$2" 1; }

both() {  # PREFIX LABEL-PREFIX: the two runs compared, into PREFIX-compare
  run_tests stock "" "$vdir/${1}stock" "$jobs" "${2}stock"
  run_tests "$second" "" "$vdir/$1$second" "$jobs" "$2$second_label"
  jcompare "$vdir/${1}stock" "$vdir/$1$second" "$vdir/${1}compare" stock "$second_label" \
    confirm_stock confirm_second "$explained"
}

table() {  # COLUMN...: a markdown table, its rows from stdin
  printf '| %s ' "$@"; echo '|'
  printf '|---%.0s' "$@"; echo '|'
  cat
}
row() {  # LABEL DIR: a run's row
  echo "| $1 | $(counts "$2/results.tsv" | sed 's/ / | /g') | $(cat "$2/seconds") s |"
}
runs_table() {  # PREFIX LABEL-PREFIX
  { row "${2}stock" "$vdir/${1}stock"; row "$2$second_label" "$vdir/$1$second"; } |
    table run tests passed failed skipped "timed out" "wall time"
}

# --- The runs without a live server, the verdict -----------------------------------------

if [ "$live_only" -eq 0 ]; then
  both "" ""
  p0=$CMP_P0 p1=$CMP_P1 ndiff=$CMP_NDIFF nexpl=$CMP_NEXPL nflaky=$CMP_NFLAKY
  n0=$(wc -l <"$vdir/stock/results.tsv")
  # (LoadTests.cmake lists the tests with --no-fork: those the suite registers
  # only when it may fork are not CTest tests.)
  [ "$n0" -eq "$count" ] || notes+=("CTest registers $n0 of the $count tests --list-tests names (build/cmake/LoadTests.cmake lists them with --no-fork; not registered: $(cut -f1 "$vdir/stock/results.tsv" | grep -vxF -f - "$vdir/selected.txt" | head -n 5 | tr '\n' ' '))")
  # (The patched library: the loader check above stops the run unless
  # test-libmongoc loads it.)
  active=yes
  if [ "$second" = dropin ] && [ "$CMP_INACTIVE" -ne 0 ]; then
    active=no; say "the drop-in did not report itself active in $CMP_INACTIVE test processes"; fi
  # (the patched library: "loaded")
  line="libmongoc-suite $version: run $n0, stock passed $p0, $second_label passed $p1, differences $ndiff, explained $nexpl, ${second_word:-active} $active"
  {
    printf '# libmongoc %s: test-libmongoc, stock and %s\n\n' "$version" "$second_title"
    echo "- libmongoc: ${deb_pkg:+Debian package $deb_pkg $deb_version, }$mongoc_soname (loaded from the system's library directory: checked with ldd and LD_DEBUG)${inside_root:+, inside the $inside_root root}"
    echo "- source of the suite: $src_origin"
    echo "- $second_note"
    echo "- tests: $selection; upstream's CTest registration (build/cmake/LoadTests.cmake), \`ctest -j $jobs --timeout $timeout --repeat until-pass:$repeat --output-junit\`; MONGOC_TEST_SKIP_LIVE=on"
    echo "- FerretDB ${fdb_version:-} on 127.0.0.1:27017 during the runs: $(cat "$vdir/stock.fdb") (tests that still try localhost:27017 fail fast instead of waiting for server selection)"
    echo "- build of test-libmongoc: ${build_secs}$([ "$build_secs" = cached ] || echo " s")"
    for nline in "${notes[@]}"; do echo "- $nline"; done
    echo
    runs_table "" ""
    printf '\n## Differences: %s, explained %s\n\n' "$ndiff" "$nexpl"
    echo "Each try is ctest's until-pass:$repeat; each difference ran once more per mode, one test at a time,"
    printf "with the same result in every try.\nExplanations: \`scripts/%s\`.\n\n" "$(basename "$explained")"
    if [ "$ndiff" -gt 0 ]; then
      table test stock "$second_label" message explanation <"$vdir/compare/rows.md"
    else
      echo "None."
    fi
    [ "$nflaky" -eq 0 ] || { printf '\n## Flaky: %s (results overlap between the modes over the tries; not counted)\n\n' "$nflaky"
      table test "stock tries" "$second_label tries" message <"$vdir/compare/flaky.md"; }
  } >"$vdir/differences.md"
fi

# --- Live tests against FerretDB (reported, not gating) -----------------------------------

if [ "$live" -eq 1 ]; then
  LIVE=1 both live- "live "
  {
    printf '## libmongoc %s: live tests against FerretDB %s (not gating)\n\n' "$version" "$fdb_version"
    printf 'Without MONGOC_TEST_SKIP_LIVE, against a fresh FerretDB (SQLite) on 127.0.0.1:27017 per run.\n\n'
    runs_table live- "live "
    printf '\nDifferences: %s (flaky: %s)\n' "$CMP_NDIFF" "$CMP_NFLAKY"
    [ "$CMP_NDIFF" -eq 0 ] || { echo; table test stock "$second_label" message explanation <"$vdir/live-compare/rows.md"; }
    [ "$CMP_NFLAKY" -eq 0 ] || { echo; table test "stock tries" "$second_label tries" message <"$vdir/live-compare/flaky.md"; }
  } >"$vdir/live.md"
  [ "$live_only" -eq 1 ] || { echo; sed 's/^## libmongoc [^:]*: l/## L/' "$vdir/live.md"; } >>"$vdir/differences.md"
  say "live (FerretDB $fdb_version): run $(wc -l <"$vdir/live-stock/results.tsv"), stock passed $CMP_P0, $second_label passed $CMP_P1, differences $CMP_NDIFF, flaky $CMP_NFLAKY ($vdir/live.md)"
fi
[ "$live_only" -eq 0 ] || exit 0

say "differences: $vdir/differences.md"
[ "$nflaky" -eq 0 ] || say "flaky (not counted): $nflaky, listed in differences.md"
[ "$ndiff" -le "$nexpl" ] || sed "s|^|$prog: unexplained: |" "$vdir/compare/unexplained.txt" >&2
echo "$line" >"$vdir/summary.txt"
echo "$line"
# The status is the verdict: tests ran, every difference explained, the drop-in active.
[ "$n0" -gt 0 ] && [ "$ndiff" -eq "$nexpl" ] && [ "$active" = yes ]
