#!/bin/sh
# Installs what opmsg needs on Debian 12, and only what is missing.
# Runs as root, or through sudo when there is one.
set -eu

PACKAGES="build-essential cmake ninja-build pkg-config git
  libbson-dev libmongoc-dev libsnappy-dev zlib1g-dev libzstd-dev libisal-dev
  libcmocka-dev clang llvm libclang-rt-14-dev libpcap-dev gnuplot-nox valgrind
  python3 python3-pymongo python3-mockupdb
  lintian debhelper fakeroot dpkg-dev file tcpdump abigail-tools"

# Node.js for the interop peers: Debian's only where no Node is installed
# already (a newer one from elsewhere must not be replaced).
command -v node >/dev/null 2>&1 || PACKAGES="$PACKAGES nodejs npm"

missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done

if [ -n "$missing" ]; then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "install-deps: installing:$missing"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
fi

# Real peers for the interop tests (FerretDB, the Node driver, mongosh): each
# script installs its own, when the tools it needs are on the machine.
for extra in scripts/install-deps.d/*.sh; do
  [ -f "$extra" ] && sh "$extra"
done
exit 0
