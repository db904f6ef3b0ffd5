#!/bin/bash
# Client-side encryption end to end with the patched mongo-c-driver master
# (part of `make check-fork`, docs/fork.md). Master needs libmongocrypt
# 1.20 or later (1.30.4, the trixie port's tree, 1.12), which Debian 12
# lacks, so this runs in the sid root (trixie's for the port) that
# scripts/debian-root.sh makes (`make distro-roots`; OPMSG_ROOTS says where
# the roots are): the tree is copied into the root, built there with
# upstream's CMake, ENABLE_MAINTAINER_FLAGS=ON and client-side encryption
# on, and installed into a prefix; tests/encryption's enc-client is built
# against it, then tests/encryption/run-encryption.sh runs it against a
# private FerretDB once with the root's own libmongoc and once with the patched
# one (OPMSG_ENC_LIBDIR: LD_LIBRARY_PATH, no preload). Ends with its line:
#
#   encryption 2.5.7 and patched 2.6.0-dev: operations 15, documents 26, equal patched yes, equal stock yes, ciphertext on server yes
#
# Usage: scripts/fork-check-encryption.sh --tree DIR [--suite SUITE]
#   --tree DIR    the patched mongo-c-driver tree (fork-check's build/fork/master/tree)
#   --suite S     the Debian root (default sid); the build is kept in the
#                 root's /tmp/opmsg-fork/ and reused while the tree's content
#                 is the same
# Exit status 0, 1 when the test fails, 2 when it cannot run, 77 (with a
# "SKIP: ..." line) when there is no usable root, no root privileges or no
# FerretDB.
set -euo pipefail

prog=fork-check-encryption
skip() { echo "SKIP: $*"; exit 77; }

# --- Inside the root ----------------------------------------------------------------------------

if [ "${1:-}" = --inside ]; then
  w=/tmp/opmsg-fork
  cd "$w"
  t0=$(date +%s)
  if [ ! -f build/.done ] || [ "$(cat build/.done)" != "$(cat src/.commit)" ]; then
    rm -rf build prefix
    # Client-side encryption ON: the configure fails without a new enough
    # libmongocrypt rather than building without it.
    cmake -S src -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DENABLE_MAINTAINER_FLAGS=ON \
      -DENABLE_TESTS=OFF -DENABLE_STATIC=OFF -DENABLE_EXAMPLES=OFF -DENABLE_MAN_PAGES=OFF \
      -DENABLE_HTML_DOCS=OFF -DENABLE_CLIENT_SIDE_ENCRYPTION=ON -DENABLE_ZLIB=SYSTEM \
      -DCMAKE_INSTALL_PREFIX="$w/prefix" >configure.log 2>&1 ||
      { tail -n 20 configure.log; echo "configure failed"; exit 2; }
    nice -n 10 cmake --build build -j "${JOBS:-2}" >build.log 2>&1 ||
      { grep -E -A3 'error|warning:' build.log | head -n 40; echo "the patched tree does not build here"; exit 1; }
    cmake --install build >install.log 2>&1 || { tail -n 20 install.log; exit 2; }
    cat src/.commit >build/.done
    echo "== built in $(( $(date +%s) - t0 )) s, $(grep -c 'warning:' build.log || true) warnings ($(gcc --version | head -n 1))"
  else
    echo "== build cached"
  fi
  grep -q '^#define MONGOC_ENABLE_CLIENT_SIDE_ENCRYPTION 1' \
    "$(find prefix/include -name mongoc-config.h | head -n 1)" ||
    { echo "the patched build has no client-side encryption"; exit 2; }
  # The installed library's pkg-config module: mongoc2 (2.x) or
  # libmongoc-1.0 (1.30, trixie's).
  pc=$(find "$w/prefix" -name mongoc2.pc -o -name libmongoc-1.0.pc | head -n 1)
  [ -n "$pc" ] || { echo "no libmongoc pkg-config file in the patched install"; exit 2; }
  libdir=$(dirname "$(dirname "$pc")")
  # enc-client against the patched headers; at run time it finds the root's
  # own libmongoc unless LD_LIBRARY_PATH points at the patched one.
  # shellcheck disable=SC2046 # pkg-config's flags, one word each
  cc -std=c11 -O2 opmsg/tests/encryption/enc-client.c -o enc-client \
    $(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs "$(basename "$pc" .pc)") ||
    { echo "enc-client does not build against the patched headers"; exit 2; }
  OPMSG_FERRETDB=$w/ferretdb OPMSG_ENC_LIBDIR=$libdir OPMSG_ENC_TRACE=0 \
    exec opmsg/tests/encryption/run-encryption.sh "$w/enc-client"
fi

# --- Outside: the root, the copies --------------------------------------------------------------

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/lib/suite-common.sh"   # say, die, suite_find_ferretdb
tree=""
suite=sid
while [ $# -gt 0 ]; do
  case $1 in
    --tree) tree=$(realpath -m -- "${2:?}"); shift 2 ;;
    --suite) suite=${2:?}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
[ -n "$tree" ] && [ -f "$tree/CMakeLists.txt" ] || die "--tree DIR: the patched mongo-c-driver tree"
[ "$(id -u)" -eq 0 ] || skip "building in the $suite root needs root (chroot)"
root=$("$top/scripts/debian-root.sh" --path "$suite")
[ -e "$(dirname "$root")/READY-$(basename "$root")" ] || skip "no usable $suite root ($root; make distro-roots makes it)"
ferretdb=$(suite_find_ferretdb) || skip "FerretDB is not installed (scripts/install-deps.d/peers.sh)"

# The root's /tmp/opmsg-fork: the tree (without its git data), the test's
# files and FerretDB. The build stays there between runs of the same tree.
w=$root/tmp/opmsg-fork
mkdir -p "$w/src" "$w/opmsg"
commit=$(git -C "$tree" rev-parse "HEAD^{tree}" 2>/dev/null || echo unknown)
if [ "$(cat "$w/src/.commit" 2>/dev/null)" != "$commit" ] || ! git -C "$tree" diff --quiet 2>/dev/null; then
  rm -rf "$w/src"
  mkdir -p "$w/src"
  tar -C "$tree" --exclude=.git -cf - . | tar -C "$w/src" -xf -
  echo "$commit" >"$w/src/.commit"
fi
rm -rf "$w/opmsg"
mkdir -p "$w/opmsg"
tar -C "$top" -cf - tests/encryption tests/peers | tar -C "$w/opmsg" -xf -
cp "$0" "$w/fork-check-encryption.sh"
cp "$ferretdb" "$w/ferretdb"
say "patched tree $(cut -c1-12 "$w/src/.commit") in the $suite root ($root)"
exec "$top/scripts/debian-root.sh" --exec "$suite" -- env JOBS="${JOBS:-2}" \
  /bin/bash /tmp/opmsg-fork/fork-check-encryption.sh --inside
