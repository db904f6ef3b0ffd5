#!/bin/bash
# One release of `make fork-debs` (scripts/fork-debs.sh runs it on this
# machine for bookworm and inside the Debian root for trixie and sid):
# Debian's mongo-c-driver of the revision the system runs, built twice,
# stock and with the fork's quilt patches (made now by
# scripts/fork-debian-patches.sh), checked against each other, published in
# a local apt repository, installed from it over the stock packages the way
# a user would, tested, and reverted to stock (docs/fork.md, "Debian packages").
#
#   scripts/fork-debs-release.sh --release REL --fallback DIR --work DIR --apt DIR
#                                [--test-root]
#
#   --release   bookworm, trixie or unstable (shown as sid)
#   --fallback  Debian's packaging tree of the release (debian/ inside,
#               Debian's patches unapplied): the source when the archive does
#               not serve the installed revision's
#   --work      where everything goes (emptied first)
#   --apt       the apt repository: pool/DIST/ and dists/DIST/main/binary-amd64/
#               (DIST: bookworm, trixie, sid) are written there
#   --test-root this is a test root (make check-distros'), not a machine
#               of use: a test build may be installed over newer packages
#               (apt --allow-downgrades; when apt still refuses because other
#               installed packages need the newer revision, dpkg
#               --force-depends-version, said in the output)
#
# The source: `apt-get source mongo-c-driver` of exactly the revision
# installed (scripts/lib/apt-source.sh, a private apt configuration); the
# packages are then INSTALLED+opmsgN, an upgrade of the stock ones keeping
# every Debian fix. When the archive does not serve that revision, the
# packaging tree: TREE+opmsgN, a test build that only a test system should
# install (the line says "upgrade test-build"). N is FORK_DEBS_REVISION
# (default 1). Every version comparison is dpkg --compare-versions.
#
# Steps, each timed: the source and the fork's patches; the build
# dependencies (apt-get build-dep, arch-only, nodoc profile), both builds
# with `dpkg-buildpackage -us -uc -B -Pnodoc` and DEB_BUILD_OPTIONS="nocheck
# nodoc parallel=2", the build dependencies removed again; lintian on the
# binary and source packages, tags compared with the stock build's; each
# library's SONAME and dynamic symbols; a libmongoc program and the
# encryption test program built against stock and a FerretDB reference run;
# the apt repository (dpkg-scanpackages, a Release file); a sources.list
# entry for it ([trusted=yes] file:), apt-get update of that source alone,
# apt-get install of the fork's packages (no --allow-downgrades for an
# upgrade); the hostile-reply harness with no preload; the program built on
# stock; FerretDB against the reference; client-side encryption; the entry
# removed and the stock packages back. Whatever fails, the packages and
# /etc/apt are put back on exit.
#
# Ends with one line:
#   fork-deb NAME VERSION: packages K, from apt yes, upgrade yes|test-build, lintian new 0, symbols removed 0, harness 36/36, crashes 0, program built on stock runs yes, ferretdb yes, encryption yes, revert yes
# and one with the time of each step. Exit 1 when a check failed.
# OPMSG_FERRETDB names the FerretDB binary (else the PATH, else Go's bin).
set -euo pipefail
export LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/lib/apt-state.sh"
. "$top/scripts/lib/apt-source.sh"

rel="" fallback="" work="" apt_repo="" test_root=0
while [ $# -gt 0 ]; do
  case $1 in
    --release) rel=$2; shift 2 ;;
    --fallback) fallback=$(realpath "$2"); shift 2 ;;
    --work) work=$(realpath -m "$2"); shift 2 ;;
    --apt) apt_repo=$(realpath -m "$2"); shift 2 ;;
    --test-root) test_root=1; shift ;;
    *) echo "fork-debs-release: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$rel" ] && [ -d "$fallback/debian" ] && [ -n "$work" ] && [ -n "$apt_repo" ] ||
  { echo "usage: $0 --release REL --fallback DIR --work DIR --apt DIR [--test-root]" >&2; exit 2; }
dist=$rel
[ "$rel" = unstable ] && dist=sid

say() { echo "fork-debs $dist: $*"; }
# The system's Python: the harness needs only its standard library, and a
# Python of the user's (pyenv) may lack what others need.
python=/usr/bin/python3
[ -x $python ] || python=python3
logs=$work/logs
times=()
bad=()
# timed NAME COMMAND...: runs COMMAND (a function here, or a program) with
# its output in logs/NAME.log, notes the time it took and sets step_ok to
# yes or no. A function runs in a subshell with errexit in force: the first
# command that fails ends it. (Called from an if or a ||, bash would ignore
# errexit inside it, so timed is never called that way and returns 0.)
timed() {
  local name=$1 t0 rc=0
  shift
  t0=$(date +%s)
  ("$@") >"$logs/$name.log" 2>&1 &
  wait $! || rc=$?
  times+=("$name $(( $(date +%s) - t0 )) s")
  if [ $rc -eq 0 ]; then step_ok=yes; else step_ok=no; fi
}
failed() { bad+=("$1"); say "FAILED: $1 (log: $logs/$2.log)"; tail -n 25 "$logs/$2.log" | sed 's/^/  | /'; }

rm -rf "$work"
mkdir -p "$logs"
t_start=$(date +%s)

# --- The source: the installed revision's, or the packaging tree --------------
# The revision installed: the source version of the installed libmongoc
# runtime package (libmongoc-1.0-0, -0t64, libmongoc2-2).
installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${source:Package} ${source:Version}\n' |
  awk '$1 == "ii" && $3 == "mongo-c-driver" && $2 ~ /^libmongoc[0-9.-]*[0-9](t64)?$/ {print $4}' | sort -u | head -n 1)
[ -n "$installed" ] || { say "no libmongoc runtime package of mongo-c-driver is installed (make deps)"; exit 1; }
revision=${FORK_DEBS_REVISION:-1}
test_build=0
apt_source_dir=$work/apt-source
got=$(apt_source mongo-c-driver "$installed" "$work/apt-source/src" 2>"$logs/apt-source.log") || got=""
if [ -n "$got" ] && dpkg --compare-versions "$got" eq "$installed"; then
  upstream=${installed#*:}
  upstream=${upstream%-*}
  source=$work/apt-source/src/mongo-c-driver-$upstream
  say "source: apt-get source mongo-c-driver=$installed, the installed revision"
else
  test_build=1
  source=$fallback
  say "source: the archive here does not serve mongo-c-driver $installed, the installed revision" \
      "(got: ${got:-nothing}; $logs/apt-source.log)"
  say "source: Debian's packaging tree $(dpkg-parsechangelog -l "$source/debian/changelog" -S Version) instead:" \
      "a TEST BUILD that only a test system should install"
fi
stock_version=$(dpkg-parsechangelog -l "$source/debian/changelog" -S Version)
upstream=${stock_version#*:}
upstream=${upstream%-*}
fork_version=$stock_version+opmsg$revision
dpkg --compare-versions "$fork_version" gt "$stock_version" || { say "$fork_version does not sort above $stock_version"; exit 1; }
if [ $test_build -eq 0 ]; then
  dpkg --compare-versions "$fork_version" gt "$installed" || { say "$fork_version is no upgrade of $installed"; exit 1; }
  upgrade=yes
else
  upgrade=test-build
fi
# The fork's quilt patches, series lines and changelog entry, made now.
gen_args=(--release "$rel" --version "$fork_version" --out "$work/debian")
[ $test_build -eq 0 ] || gen_args+=(--test-build)
patches() {
  local applied=$work/applied
  cp -a "$source" "$applied"
  dpkg-source --before-build "$applied"
  "$top/scripts/fork-debian-patches.sh" --tree "$applied" "${gen_args[@]}"
  rm -rf "$applied"
}
timed patches patches
[ $step_ok = yes ] || { failed "the fork's quilt patches" patches; exit 1; }
sed -n 's/^fork-debian-patches: //p' "$logs/patches.log" | sed "s/^/fork-debs $dist: /"
debian=$work/debian

# --- Whatever happens, the packages as they were ------------------------------
# (and no sources.list entry for the fork's apt repository: install_fork's)
entry=/etc/apt/sources.list.d/mongo-c-driver-fork.list
remove_entry() {
  rm -f "$entry"
  rm -f /var/lib/apt/lists/*"$(echo "${apt_repo#/}" | tr / _)"_dists_"$dist"_*
}
apt_state_save "$work/state"
restored=0
put_back() {
  [ $restored -eq 1 ] && return 0
  restored=1
  remove_entry
  apt_state_restore "$work/state" >"$logs/put-back.log" 2>&1 ||
    { say "could not put the packages back: see $logs/put-back.log"; return 1; }
}
trap 'put_back' EXIT

# --- Sources: stock and fork, each also as a source package -------------------
prepare() {
  local d
  for d in stock fork; do
    mkdir -p "$work/$d"
    cp -a "$source" "$work/$d/mongo-c-driver-$upstream"
    if [ $test_build -eq 0 ]; then
      cp "$work/apt-source/src/mongo-c-driver_$upstream.orig.tar."* "$work/$d/"
    else
      tar -C "$source" --exclude=./debian --transform "s|^\./|mongo-c-driver-$upstream/|" \
        -czf "$work/$d/mongo-c-driver_$upstream.orig.tar.gz" .
    fi
  done
  d=$work/fork/mongo-c-driver-$upstream
  cp "$debian"/patches/*.patch "$d/debian/patches/"
  cat "$debian/series" >>"$d/debian/patches/series"
  { cat "$debian/changelog"; echo; cat "$d/debian/changelog"; } >"$d/debian/changelog.new"
  mv "$d/debian/changelog.new" "$d/debian/changelog"
  for d in stock fork; do
    (cd "$work/$d" && dpkg-source -b "mongo-c-driver-$upstream")
  done
}
timed source prepare
[ $step_ok = yes ] || { failed "source packages" source; exit 1; }

# --- Build dependencies, both builds, build dependencies off again ------------
timed build-deps apt-get -y -q -o DPkg::Lock::Timeout=900 build-dep --arch-only -P nodoc \
  "$work/stock/mongo-c-driver-$upstream"
[ $step_ok = yes ] || { failed "build dependencies" build-deps; exit 1; }
build() {
  cd "$work/$1/mongo-c-driver-$upstream"
  DEB_BUILD_OPTIONS="nocheck nodoc parallel=2" nice -n 10 dpkg-buildpackage -us -uc -B -Pnodoc
}
timed build-stock build stock
[ $step_ok = yes ] || { failed "stock build" build-stock; exit 1; }
timed build-fork build fork
[ $step_ok = yes ] || { failed "fork build" build-fork; exit 1; }
timed build-deps-off apt_state_restore "$work/state"
[ $step_ok = yes ] || { failed "removing the build dependencies" build-deps-off; exit 1; }

debs() { ls "$work/$1"/*_"$2"_*.deb | grep -v -- '-dbgsym_'; }
mapfile -t fork_debs < <(debs fork "$fork_version")
mapfile -t stock_debs < <(debs stock "$stock_version")
packages=${#fork_debs[@]}
[ "$packages" -eq "${#stock_debs[@]}" ] && [ "$packages" -gt 0 ] ||
  bad+=("packages: the fork built $packages, stock ${#stock_debs[@]}")

# --- lintian -------------------------------------------------------------------
# "package tag" for every tag lintian shows at error, warning and info level
# (what `lintian -I` shows); pedantic and experimental ones are listed in the
# log, not counted.
lintian_tags() {
  lintian -I -E --pedantic "$@" 2>/dev/null |
    sed -n -e 's/^\([EWIPX]\): \([^ :]*\) source: \([^ ]*\).*/\1 \2:source \3/p' \
           -e 's/^\([EWIPX]\): \([^ :]*\): \([^ ]*\).*/\1 \2 \3/p' | sort -u || true
}
lint() {
  lintian_tags "${stock_debs[@]}" "$work/stock/"*.dsc >"$work/lintian-stock"
  lintian_tags "${fork_debs[@]}" "$work/fork/"*.dsc >"$work/lintian-fork"
  echo "== stock"; cat "$work/lintian-stock"
  echo "== fork"; cat "$work/lintian-fork"
  # By package and tag name: the level and the context (versions, lines) aside.
  awk 'NR == FNR {seen[$2 " " $3] = 1; next} !(($2 " " $3) in seen)' \
    "$work/lintian-stock" "$work/lintian-fork" >"$work/lintian-new-all"
  # Tags the fork has by design, each with its reason: listed, not counted.
  sed 's/#.*//' "$top/fork/debian/lintian-expected" | awk -F'\t' 'NF >= 2 {print $1 "\t" $2}' \
    >"$work/lintian-expected"
  echo "== new in the fork's (package, tag), expected (fork/debian/lintian-expected)"
  awk -F'\t' 'NR == FNR {why[$1] = $2; next} {split($0, f, " ")} (f[3] in why) {print $0 " -- " why[f[3]]}' \
    "$work/lintian-expected" "$work/lintian-new-all" | tee "$work/lintian-new-expected"
  echo "== new in the fork's (package, tag)"
  awk -F'\t' 'NR == FNR {why[$1] = 1; next} {split($0, f, " ")} !(f[3] in why)' \
    "$work/lintian-expected" "$work/lintian-new-all" | tee "$work/lintian-new"
}
timed lintian lint
lintian_new=$(grep -c '^[EWI] ' "$work/lintian-new" || true)
if grep -q '^[EWI] ' "$work/lintian-new-expected"; then
  say "lintian: expected, not counted (fork/debian/lintian-expected):"
  grep '^[EWI] ' "$work/lintian-new-expected" | sed 's/^/  | /'
fi
[ "$lintian_new" -eq 0 ] || bad+=("lintian: $lintian_new new tags ($(grep '^[EWI] ' "$work/lintian-new" | cut -d' ' -f2- | tr '\n' ';'))")

# --- Libraries: SONAME and dynamic symbols -----------------------------------------
symbols() {
  local deb lib soname removed=0
  for deb in "${stock_debs[@]}"; do dpkg-deb -x "$deb" "$work/unpacked-stock"; done
  for deb in "${fork_debs[@]}"; do dpkg-deb -x "$deb" "$work/unpacked-fork"; done
  for lib in $(find "$work/unpacked-stock" -type f -name 'lib*.so.*' | sort); do
    soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
    local other=$work/unpacked-fork${lib#"$work/unpacked-stock"}
    if [ ! -f "$other" ]; then
      echo "$soname: no ${lib#"$work/unpacked-stock"} in the fork's packages"; removed=$((removed + 1)); continue
    fi
    if [ "$(objdump -p "$other" | awk '$1 == "SONAME" {print $2}')" != "$soname" ]; then
      echo "$soname: the fork's library has another SONAME"; removed=$((removed + 1))
    fi
    # Against the library installed now (on trixie and sid a newer revision
    # of the package than the tree's): said, not counted.
    local installed
    installed=$(find /usr/lib /lib -name "$soname" 2>/dev/null | head -n 1)
    if [ -n "$installed" ]; then
      nm -D --defined-only "$installed" | awk '{print $NF}' | sort -u >"$work/syms-installed"
      nm -D --defined-only "$other" | awk '{print $NF}' | sort -u |
        comm -23 "$work/syms-installed" - >"$work/syms-installed-only"
      echo "$soname: the installed $(dpkg -S "$(readlink -f "$installed")" | cut -d: -f1)" \
        "$(dpkg-query -W -f='${Version}' "$(dpkg -S "$(readlink -f "$installed")" | cut -d: -f1)")" \
        "exports $(wc -l <"$work/syms-installed-only") symbols the fork's build does not" \
        "($(grep -vc '^_' "$work/syms-installed-only" || true) of them public, without a leading _):" \
        "$(tr '\n' ' ' <"$work/syms-installed-only")"
    fi
    nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u >"$work/syms-stock"
    nm -D --defined-only "$other" | awk '{print $NF}' | sort -u >"$work/syms-fork"
    echo "$soname: stock $(wc -l <"$work/syms-stock") symbols, fork $(wc -l <"$work/syms-fork");" \
      "removed: $(comm -23 "$work/syms-stock" "$work/syms-fork" | tr '\n' ' ')" \
      "added: $(comm -13 "$work/syms-stock" "$work/syms-fork" | tr '\n' ' ')"
    removed=$((removed + $(comm -23 "$work/syms-stock" "$work/syms-fork" | wc -l)))
  done
  echo "removed $removed"
}
timed symbols symbols
symbols_removed=$(sed -n 's/^removed //p' "$logs/symbols.log")
grep 'the installed' "$logs/symbols.log" | cut -d: -f1-2 | sed "s/^/fork-debs $dist: /" || true
symbols_removed=${symbols_removed:-?}
[ "$symbols_removed" = 0 ] || failed "symbols removed or SONAME changed" symbols

# --- Programs built against the stock packages, and the reference run --------
kit=$work/kit
client=$kit/tests/dropin/dropin-client
enc_client=$kit/tests/encryption/enc-client
kit_build() {
  cmake -S "$top" -B "$kit" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DOPMSG_PARTS=src/mongoc-dropin;tests" "-DOPMSG_TEST_SUITES=dropin;encryption"
  cmake --build "$kit" -j 2 --target dropin-client enc-client
  sha256sum "$client" "$enc_client" >"$work/programs.sha256"
  $python "$top/tests/dropin/run_case.py" --client "$client" --mode plain
  "$top/tests/dropin/ferretdb-e2e.sh" "$client" - "$work/reference"
}
timed stock-programs kit_build
[ $step_ok = yes ] || { failed "programs built against stock, reference run" stock-programs; exit 1; }

# --- The fork's packages over stock ------------------------------------------------
# --- The apt repository ------------------------------------------------------------
# pool/NAME/ the fork's packages; dists/NAME/main/binary-amd64/Packages(.gz)
# by dpkg-scanpackages; dists/NAME/Release with the indexes' checksums.
repo() {
  local arch dir
  arch=$(dpkg --print-architecture)
  rm -rf "$apt_repo/pool/$dist" "$apt_repo/dists/$dist"
  mkdir -p "$apt_repo/pool/$dist" "$apt_repo/dists/$dist/main/binary-$arch"
  cp "${fork_debs[@]}" "$apt_repo/pool/$dist/"
  dir=dists/$dist/main/binary-$arch
  (cd "$apt_repo" && dpkg-scanpackages -m "pool/$dist" /dev/null >"$dir/Packages")
  gzip -9nk "$apt_repo/$dir/Packages"
  {
    echo "Origin: mongo-c-driver fork"
    echo "Label: mongo-c-driver fork"
    echo "Suite: $dist"
    echo "Codename: $dist"
    echo "Date: $(date -u -R)"
    echo "Architectures: $arch"
    echo "Components: main"
    echo "Description: Debian's mongo-c-driver with the fork's patches"
    local sum f
    for sum in MD5Sum:md5sum SHA256:sha256sum; do
      echo "${sum%%:*}:"
      for f in main/binary-$arch/Packages main/binary-$arch/Packages.gz; do
        printf ' %s %8d %s\n' "$(${sum#*:} <"$apt_repo/dists/$dist/$f" | cut -d' ' -f1)" \
          "$(stat -c %s "$apt_repo/dists/$dist/$f")" "$f"
      done
    done
  } >"$apt_repo/dists/$dist/Release"
  cat "$apt_repo/dists/$dist/Release"
  grep -c '^Package: ' "$apt_repo/$dir/Packages"
}
timed apt-repo repo
[ $step_ok = yes ] || { failed "the apt repository" apt-repo; exit 1; }

# --- The fork's packages over stock, from the apt repository ----------------------
# As a user would: a sources.list entry, apt-get update of that source
# alone, apt-get install. Taken out again (and its lists) by remove_entry.
from_apt=no
install_fork() {
  echo "deb [trusted=yes] file:$apt_repo $dist main" >"$entry"
  cat "$entry"
  apt-get -q -o Dir::Etc::SourceList="$entry" -o Dir::Etc::SourceParts=- \
    -o APT::Get::List-Cleanup=0 update
  local deb pkg want=() args=()
  for deb in "${fork_debs[@]}"; do want+=("$(dpkg-deb -f "$deb" Package)=$fork_version"); done
  [ $test_build -eq 0 ] || args+=(--allow-downgrades)
  echo "apt-get install ${args[*]} ${want[*]}"
  if ! apt-get -y -q -o DPkg::Lock::Timeout=900 install "${args[@]}" "${want[@]}"; then
    [ $test_build -eq 1 ] && [ $test_root -eq 1 ] || return 1
    echo "apt refuses: installed packages need a newer revision than the tree's; in this test root:"
    echo "dpkg -i --force-depends-version ${fork_debs[*]}"
    dpkg -i --force-depends-version "${fork_debs[@]}"
  fi
  for deb in "${fork_debs[@]}"; do
    pkg=$(dpkg-deb -f "$deb" Package)
    dpkg --compare-versions "$(dpkg-query -W -f='${Version}' "$pkg")" eq "$fork_version" ||
      { echo "$pkg is not at $fork_version"; return 1; }
    dpkg -V "$pkg"
    echo "$pkg $fork_version installed, its files as packaged"
  done
  apt-cache policy "$(dpkg-deb -f "${fork_debs[0]}" Package)"
}
timed install install_fork
[ $step_ok = yes ] || { failed "installing the fork's packages" install; exit 1; }
if grep -q '^dpkg -i --force-depends-version' "$logs/install.log"; then
  say "apt refused the test build (installed packages were built against the newer stock revision):"
  grep -A3 'have unmet dependencies' "$logs/install.log" | sed 's/^/  | /'
  say "installed with dpkg --force-depends-version, as only a test root may: from apt no"
else
  from_apt=yes
  [ $test_build -eq 0 ] ||
    say "installed from the apt repository with --allow-downgrades: a test build, in a test root"
fi

harness="?/?" crashes="?"
timed harness $python "$top/tests/dropin/run_case.py" --client "$client" --all
line=$(grep '^harness ' "$logs/harness.log" | tail -n 1)
if [ -n "$line" ]; then
  harness=$(echo "$line" | sed 's/^harness \([^,]*\),.*/\1/')
  crashes=$(echo "$line" | sed 's/.*crashes \([0-9]*\).*/\1/')
fi
if [ "$harness" != "36/36" ] || [ "$crashes" != 0 ]; then
  failed "harness $harness, crashes $crashes" harness
fi

program=no
program_check() {
  sha256sum -c "$work/programs.sha256"
  local lib owner
  lib=$(ldd "$client" | sed -n 's/.*libmongoc[^ ]* => \([^ ]*\) .*/\1/p' | head -n 1)
  owner=$(dpkg -S "$(readlink -f "$lib")" | cut -d: -f1)
  echo "$client loads $lib ($(readlink -f "$lib")), from $owner $(dpkg-query -W -f='${Version}' "$owner")"
  dpkg --compare-versions "$(dpkg-query -W -f='${Version}' "$owner")" eq "$fork_version"
  $python "$top/tests/dropin/run_case.py" --client "$client" --mode plain
}
timed program program_check
if [ $step_ok = yes ]; then program=yes; else failed "the program built on stock" program; fi

ferretdb=no
timed ferretdb "$top/tests/dropin/ferretdb-e2e.sh" "$client" - "$work/reference"
if [ $step_ok = yes ]; then ferretdb=yes; else failed "FerretDB end to end" ferretdb; fi

encryption=no
timed encryption env OPMSG_ENC_TRACE=0 "$top/tests/encryption/run-encryption.sh" "$enc_client"
enc_line=$(grep '^encryption ' "$logs/encryption.log" | tail -n 1)
case $enc_line in
  *"equal stock yes, ciphertext on server yes"*) encryption=yes ;;
  *) failed "client-side encryption: ${enc_line:-no result}" encryption ;;
esac

# --- Back to stock -----------------------------------------------------------------
revert=no
revert_check() {
  remove_entry
  apt_state_restore "$work/state"
  local deb pkg
  for deb in "${fork_debs[@]}"; do
    pkg=$(dpkg-deb -f "$deb" Package)
    if apt_is_installed "$pkg"; then
      echo "$pkg $(dpkg-query -W -f='${Version}' "$pkg")"
    fi
  done
  $python "$top/tests/dropin/run_case.py" --client "$client" --mode plain
}
timed revert revert_check
restored=1
if [ $step_ok = yes ]; then revert=yes; else failed "reverting to stock" revert; fi

total=$(( $(date +%s) - t_start ))
times+=("total $total s")
(IFS=,; echo "fork-deb-times $dist: ${times[*]}") | sed 's/,/, /g' | tee "$work/times"
for b in "${bad[@]}"; do say "FAILED: $b"; done
[ $test_build -eq 0 ] || say "TEST BUILD: $fork_version is older than the installed $installed; only a test system should install it"
echo "fork-deb $dist $fork_version: packages $packages, from apt $from_apt, upgrade $upgrade, lintian new $lintian_new, symbols removed $symbols_removed, harness $harness, crashes $crashes, program built on stock runs $program, ferretdb $ferretdb, encryption $encryption, revert $revert" |
  tee "$work/result"
[ ${#bad[@]} -eq 0 ]
