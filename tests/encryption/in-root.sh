#!/bin/bash
# Usage: tests/encryption/in-root.sh SUITE
#
# The encryption test on another Debian release: inside the root that
# scripts/debian-root.sh made for SUITE (build/roots/SUITE, usable when
# build/roots/READY-SUITE exists), with that release's libmongoc and
# libmongocrypt. Copies the sources it needs and this machine's FerretDB (a
# static binary) to /tmp/opmsg-enc/ in the root, builds enc-client and the
# drop-in there and runs run-encryption.sh, which ends with the line
# "encryption VERSION: ...". Run from anywhere in the source tree, as root.
# Exits 77 when the root or FerretDB is missing.
set -eu

if [ "${1:-}" = --inside ]; then
  # Inside the root.
  work=/tmp/opmsg-enc
  cd "$work/tree" || exit 1
  if ! cmake -S . -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
         "-DOPMSG_PARTS=src/mongoc-dropin;tests" -DOPMSG_TEST_SUITES=encryption \
         >"$work/configure.log" 2>&1; then
    echo "in-root: configure failed:"; tail -n 20 "$work/configure.log"; exit 1
  fi
  if ! cmake --build "$work/build" --target enc-client >"$work/build.log" 2>&1; then
    echo "in-root: enc-client does not build:"; tail -n 20 "$work/build.log"; exit 1
  fi
  dropin=$work/build/src/mongoc-dropin/libopmsg-mongoc.so
  if ! cmake --build "$work/build" --target opmsg_mongoc >"$work/dropin.log" 2>&1; then
    echo "in-root: the drop-in does not build here (stock only):"
    grep -m 5 -i 'error' "$work/dropin.log" || true
    dropin=""
  fi
  OPMSG_FERRETDB=$work/ferretdb exec tests/encryption/run-encryption.sh \
    "$work/build/tests/encryption/enc-client" $dropin
fi

suite=${1:?usage: in-root.sh SUITE}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: running inside the $suite root needs root (chroot)"; exit 77
fi
if [ ! -x scripts/debian-root.sh ]; then
  echo "SKIP: scripts/debian-root.sh is missing"; exit 77
fi
root=$(scripts/debian-root.sh --path "$suite") || exit 1
if [ ! -e "$(dirname "$root")/READY-$(basename "$root")" ]; then
  echo "SKIP: no usable $suite root ($root; scripts/debian-root.sh $suite makes it)"
  exit 77
fi

ferretdb=${OPMSG_FERRETDB:-}
[ -n "$ferretdb" ] || ferretdb=$(command -v ferretdb 2>/dev/null || true)
if [ -z "$ferretdb" ] && command -v go >/dev/null 2>&1; then
  ferretdb=$(go env GOPATH)/bin/ferretdb
fi
if [ ! -x "$ferretdb" ]; then
  echo "SKIP: FerretDB is not installed (scripts/install-deps.sh installs it)"; exit 77
fi

work=$root/tmp/opmsg-enc
mkdir -p "$work/tree" || exit 1
# What configuring and building enc-client and the drop-in needs, no more.
parts=(CMakeLists.txt cmake src include abi packaging tests/CMakeLists.txt
       tests/testutil.c tests/testutil.h tests/view_rebuild.c tests/view_rebuild.h
       tests/encryption tests/peers)
present=()
for p in "${parts[@]}"; do [ -e "$p" ] && present+=("$p"); done
rsync -aR --delete "${present[@]}" "$work/tree/" || exit 1
cp "$ferretdb" "$work/ferretdb" || exit 1
echo "== $suite root"
scripts/debian-root.sh --exec "$suite" -- /bin/bash /tmp/opmsg-enc/tree/tests/encryption/in-root.sh --inside
