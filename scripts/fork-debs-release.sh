#!/bin/bash
# One release of `make fork-debs` (scripts/fork-debs.sh runs it on this
# machine for bookworm and inside the Debian root for trixie and sid):
# Debian's mongo-c-driver built twice from the same source, stock and with
# the fork's quilt patches, checked against each other, installed over the
# stock packages, tested, and reverted to stock (docs/fork-debian.md).
#
#   scripts/fork-debs-release.sh --release REL --source DIR --debian DIR
#                                --work DIR [--orig FILE]
#
#   --source  the release's unpacked source package (Debian's patches
#             applied or not); it is copied, never changed
#   --debian  the fork's side (fork/debian/REL/): patches/, series, changelog
#   --orig    the upstream tarball (default: made from --source without
#             debian/), for the source packages lintian reads
#   --work    where everything goes (emptied first)
#   --test-root  this is a test root (make check-distros'), not a machine
#             of use: when apt refuses the fork's packages because they are
#             older than what other installed packages were built against
#             (sid's libmongocrypt0 needs libbson2-2 >= 2.5.6 and the tree is
#             2.5.0), dpkg installs them with --force-depends-version
#
# Steps, each timed: the build dependencies (apt-get build-dep, arch-only,
# nodoc profile), then both builds with `dpkg-buildpackage -us -uc -B
# -Pnodoc` and DEB_BUILD_OPTIONS="nocheck nodoc parallel=2" (-B: the -doc
# packages are left out; debian/control gives them no <!nodoc> profile),
# and the build dependencies removed again; lintian on the binary and the
# source packages, tags compared by package and name with the stock build's;
# each library's SONAME and dynamic symbols; a libmongoc program and the
# encryption test program built against the stock packages and a FerretDB
# run kept as the reference; the fork's packages installed over stock (apt,
# downgrades allowed: a test machine or root only); the hostile-reply
# harness with no preload; the program built on stock; FerretDB end to end
# against the reference; client-side encryption end to end; the stock
# packages back (apt install NAME=VERSION) and the machine's package list
# as it was. Whatever fails, the packages are put back on exit.
#
# Ends with one line:
#   fork-deb REL VERSION: packages K, lintian new 0, symbols removed 0, harness 36/36, crashes 0, program built on stock runs yes, ferretdb yes, encryption yes, revert yes
# and one with the time of each step. Exit 1 when a check failed. When
# --debian holds a PLACEHOLDER file (no real series yet), the harness and
# crash counts are stock's and are reported, not failed on.
# OPMSG_FERRETDB names the FerretDB binary (else the PATH, else Go's bin).
set -euo pipefail
export LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/lib/apt-state.sh"

rel="" source="" debian="" work="" orig="" test_root=0
while [ $# -gt 0 ]; do
  case $1 in
    --release) rel=$2; shift 2 ;;
    --source) source=$(realpath "$2"); shift 2 ;;
    --debian) debian=$(realpath "$2"); shift 2 ;;
    --work) work=$(realpath -m "$2"); shift 2 ;;
    --orig) orig=$(realpath "$2"); shift 2 ;;
    --test-root) test_root=1; shift ;;
    *) echo "fork-debs-release: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$rel" ] && [ -d "$source/debian" ] && [ -f "$debian/changelog" ] && [ -n "$work" ] ||
  { echo "usage: $0 --release REL --source DIR --debian DIR --work DIR [--orig FILE]" >&2; exit 2; }

say() { echo "fork-debs $rel: $*"; }
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
stock_version=$(dpkg-parsechangelog -l "$source/debian/changelog" -S Version)
upstream=${stock_version%-*}
fork_version=$(dpkg-parsechangelog -l "$debian/changelog" -S Version)
[ "$fork_version" = "$stock_version+opmsg1" ] || {
  say "the fork's changelog entry is $fork_version, not $stock_version+opmsg1: it was made for another revision"
  say "of Debian's package; make fork-debian-patches against $stock_version"
  exit 1
}
placeholder=0
[ -f "$debian/PLACEHOLDER" ] && placeholder=1

# --- Whatever happens, the packages as they were ------------------------------
apt_state_save "$work/state"
restored=0
put_back() {
  [ $restored -eq 1 ] && return 0
  restored=1
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
    if [ -n "$orig" ]; then
      cp "$orig" "$work/$d/"
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
grep 'the installed' "$logs/symbols.log" | cut -d: -f1-2 | sed "s/^/fork-debs $rel: /" || true
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
install_fork() {
  if ! apt-get -y -q -o DPkg::Lock::Timeout=900 install --allow-downgrades "${fork_debs[@]}"; then
    [ $test_root -eq 1 ] || return 1
    echo "apt refuses: installed packages need a newer revision than the tree's; in this test root:"
    echo "dpkg -i --force-depends-version ${fork_debs[*]}"
    dpkg -i --force-depends-version "${fork_debs[@]}"
  fi
  local deb pkg
  for deb in "${fork_debs[@]}"; do
    pkg=$(dpkg-deb -f "$deb" Package)
    [ "$(dpkg-query -W -f='${Version}' "$pkg")" = "$fork_version" ] || { echo "$pkg is not at $fork_version"; return 1; }
    dpkg -V "$pkg"
    echo "$pkg $fork_version installed, its files as packaged"
  done
  apt-cache policy "$(dpkg-deb -f "${fork_debs[0]}" Package)"
}
timed install install_fork
[ $step_ok = yes ] || { failed "installing the fork's packages" install; exit 1; }
if grep -q '^dpkg -i --force-depends-version' "$logs/install.log"; then
  say "apt refused the downgrade (installed packages were built against the newer stock revision):"
  grep -A3 'have unmet dependencies' "$logs/install.log" | sed 's/^/  | /'
  say "installed with dpkg --force-depends-version, as only a test root may"
fi

harness="?/?" crashes="?"
timed harness $python "$top/tests/dropin/run_case.py" --client "$client" --all
line=$(grep '^harness ' "$logs/harness.log" | tail -n 1)
if [ -n "$line" ]; then
  harness=$(echo "$line" | sed 's/^harness \([^,]*\),.*/\1/')
  crashes=$(echo "$line" | sed 's/.*crashes \([0-9]*\).*/\1/')
fi
if [ "$harness" != "36/36" ] || [ "$crashes" != 0 ]; then
  if [ $placeholder -eq 1 ]; then
    say "the harness gives $harness, crashes $crashes: stock libmongoc's behaviour, as the series is a placeholder (not failed)"
  else
    failed "harness $harness, crashes $crashes" harness
  fi
fi

program=no
program_check() {
  sha256sum -c "$work/programs.sha256"
  local lib owner
  lib=$(ldd "$client" | sed -n 's/.*libmongoc[^ ]* => \([^ ]*\) .*/\1/p' | head -n 1)
  owner=$(dpkg -S "$(readlink -f "$lib")" | cut -d: -f1)
  echo "$client loads $lib ($(readlink -f "$lib")), from $owner $(dpkg-query -W -f='${Version}' "$owner")"
  [ "$(dpkg-query -W -f='${Version}' "$owner")" = "$fork_version" ]
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
(IFS=,; echo "fork-deb-times $rel: ${times[*]}") | sed 's/,/, /g' | tee "$work/times"
[ $placeholder -eq 0 ] ||
  say "PLACEHOLDER: built with $(wc -l <"$debian/series") throwaway patch(es), not the fork: the harness and crash counts are stock libmongoc's"
for b in "${bad[@]}"; do say "FAILED: $b"; done
echo "fork-deb $rel $fork_version: packages $packages, lintian new $lintian_new, symbols removed $symbols_removed, harness $harness, crashes $crashes, program built on stock runs $program, ferretdb $ferretdb, encryption $encryption, revert $revert" |
  tee "$work/result"
[ ${#bad[@]} -eq 0 ]
