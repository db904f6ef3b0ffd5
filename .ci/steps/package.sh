#!/bin/bash
# CI step: the Debian packages and the source tarball.
#  1. scripts/package.sh (`make package`: the .deb files in dist/, lintian without errors); ask
#     apt what they would pull in on a minimal Debian 12 (only Debian's own
#     packages may appear); install them with dpkg (apt-get -f install adds
#     Debian's packages for missing dependencies), check what they installed,
#     and remove them again with everything apt added, so the machine is
#     left as it was.
#  2. `make dist`, then unpack the tarball in a temporary directory and
#     build it there with no network (a network namespace of its own when
#     the machine allows one) and run the unit tests.
# Usage: package.sh [all|deb-only|dist-only]. Runs as root (dpkg, apt-get).
set -euo pipefail
cd "$(dirname "$0")/../.."

mode=${1:-all}
version=$(sed -n 's/^  VERSION \([0-9.]*\)$/\1/p' CMakeLists.txt)
# The runtime package is named for the SONAME (CMakeLists.txt's OPMSG_SOVERSION).
soversion=$(sed -n 's/^set(OPMSG_SOVERSION \([0-9]*\))$/\1/p' CMakeLists.txt)
ours="libopmsg$soversion libopmsg-dev opmsg libopmsg-mongoc"
export DEBIAN_FRONTEND=noninteractive

say() { echo "package: $*"; }
fail() { echo "package: FAILED: $*" >&2; exit 1; }

# apt_state_save/restore, apt_is_installed, apt_installed_list
. scripts/lib/apt-state.sh

# What installing the packages pulls in on a minimal Debian 12 (Essential and
# required packages only), whatever this machine has: apt must resolve every
# dependency from Debian's own archive.
fresh_machine() {
  local status plan foreign
  status=$(mktemp)
  python3 packaging/minimal-status.py >"$status"
  plan=$(apt-get -s --no-install-recommends -o Dir::State::status="$status" \
           install "$PWD"/dist/*_"${version}"-*.deb 2>&1) || {
    rm -f "$status"; echo "$plan" >&2; fail "apt cannot install the packages on a minimal system"; }
  rm -f "$status"
  # "Inst NAME (VERSION ORIGIN [ARCH])": ours are local-deb, the rest Debian's.
  foreign=$(awk '$1 == "Inst" && $0 !~ /\(.* (local-deb|Debian[^ ]*:[^ ]*) / {print $2}' <<<"$plan")
  for p in $ours; do
    grep -q "^Inst $p " <<<"$plan" || fail "apt's plan does not install $p"
  done
  [ -z "$foreign" ] || fail "dependencies from outside Debian: $foreign"
  say "on a minimal Debian 12, apt adds $(grep -c '^Inst' <<<"$plan") packages, all Debian's or ours"
}

debs() {
  scripts/package.sh
  local p
  for p in $ours; do
    ls dist/"${p}"_"${version}"-*.deb >/dev/null 2>&1 || fail "no .deb for $p"
  done
  fresh_machine
  if [ "$(id -u)" -ne 0 ]; then
    say "not root: the install test is skipped"
    return 0
  fi
  for p in $ours; do
    if apt_is_installed "$p"; then
      say "$p is already installed on this machine: the install test is skipped"
      return 0
    fi
  done

  local state work
  state=$(mktemp -d)
  work=$(mktemp -d)
  apt_state_save "$state"
  # Whatever happens below, take off what this step put on.
  cleanup() {
    apt_state_restore "$state" | sed 's/^/package: /'
    rm -rf "$state" "$work"
  }
  trap cleanup EXIT

  if ! dpkg -i dist/*_"${version}"-*.deb; then
    say "dpkg left dependencies missing; apt-get -f install"
    apt-get -f install -y -q
  fi
  say "installed: $(LC_ALL=C comm -13 <(cut -d' ' -f1 "$state/installed") <(apt_installed_list) | tr '\n' ' ')"
  for p in $ours; do
    apt_is_installed "$p" || fail "$p is not installed"
  done

  local libdir
  libdir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
  [ "$(command -v opmsg)" = /usr/bin/opmsg ] || fail "opmsg is not /usr/bin/opmsg"
  # (Outputs are captured first: with pipefail, grep -q closing a pipe early
  # would fail the writer.)
  local out
  out=$(opmsg --version)
  grep -qF "$version" <<<"$out" || fail "opmsg --version does not say $version"
  say "opmsg --version: ${out%%$'\n'*}"
  opmsg-bench --list >/dev/null || fail "opmsg-bench --list"
  [ "$(pkg-config --modversion opmsg)" = "$version" ] || fail "pkg-config --modversion opmsg"
  [ -f "$libdir/libopmsg-mongoc.so" ] || fail "libopmsg-mongoc.so is not in $libdir"
  # The ldconfig trigger ran: both are in the cache.
  out=$(ldconfig -p)
  grep -q "libopmsg\\.so\\.$soversion " <<<"$out" || fail "libopmsg.so.$soversion is not in the ldconfig cache"
  grep -q 'libopmsg-mongoc\.so ' <<<"$out" || fail "libopmsg-mongoc.so is not in the ldconfig cache"
  for m in man1/opmsg.1 man1/opmsg-bench.1 man7/libopmsg-mongoc.7; do
    [ -f "/usr/share/man/$m.gz" ] || fail "no /usr/share/man/$m.gz"
  done

  # A program against the installed headers and library: pkg-config ...
  cat >"$work/t.c" <<'EOF'
#include <opmsg/opmsg.h>
#include <stdio.h>
int main(void) { puts(opmsg_version_string()); return 0; }
EOF
  # shellcheck disable=SC2046
  cc -std=c11 -Wall -Werror -o "$work/t" "$work/t.c" $(pkg-config --cflags --libs opmsg)
  [ "$("$work/t")" = "$version" ] || fail "pkg-config program prints $("$work/t"), not $version"
  # The symbols file gives a program linked with libopmsg its dependency.
  mkdir -p "$work/debian"
  printf 'Source: t\n\nPackage: t\nArchitecture: any\n' >"$work/debian/control"
  out=$(cd "$work" && dpkg-shlibdeps -O t 2>/dev/null)
  grep -q "libopmsg$soversion (>= " <<<"$out" || fail "dpkg-shlibdeps gives no libopmsg$soversion dependency: $out"
  say "dpkg-shlibdeps for a libopmsg program: ${out#shlibs:Depends=}"
  # ... and find_package(opmsg).
  cat >"$work/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(t C)
find_package(opmsg REQUIRED)
add_executable(t t.c)
target_link_libraries(t PRIVATE opmsg::opmsg)
EOF
  cmake -S "$work" -B "$work/build" >/dev/null
  cmake --build "$work/build" >/dev/null
  [ "$("$work/build/t")" = "$version" ] || fail "find_package program"
  say "installed packages work (pkg-config and find_package consumers built and ran)"
  cleanup
  trap - EXIT
  for p in $ours; do
    if apt_is_installed "$p"; then
      fail "$p is still installed"
    fi
  done
  say "packages removed"
}

dist() {
  make dist
  local tarball=dist/opmsg-$version.tar.gz tmp net=""
  [ -f "$tarball" ] || fail "no $tarball"
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  tar -xzf "$tarball" -C "$tmp"
  [ -f "$tmp/opmsg-$version/CMakeLists.txt" ] || fail "the tarball has no opmsg-$version/CMakeLists.txt"
  # No network: a namespace with only a loopback device, when allowed.
  if unshare -n true 2>/dev/null; then
    net="unshare -n"
  else
    say "no network namespace here: building without one"
  fi
  (
    cd "$tmp/opmsg-$version"
    $net cmake -S . -B build -G Ninja >/dev/null
    $net cmake --build build -j "$(nproc 2>/dev/null || echo 2)"
    $net ctest --test-dir build -R '^unit\.' --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"
  ) || fail "the tarball does not build offline"
  say "$tarball builds offline and passes its unit tests"
  rm -rf "$tmp"
  trap - EXIT
}

case $mode in
  all) debs; dist ;;
  deb-only) debs ;;
  dist-only) dist ;;
  *) fail "usage: $0 [all|deb-only|dist-only]" ;;
esac
