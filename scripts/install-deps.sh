#!/bin/sh
# Installs what opmsg needs on Debian 12, and only what is missing.
# Runs as root, or through sudo when there is one.
#
# On other Debian releases (13, sid) the same list is used; a package the
# release does not have is reported and left out. OPMSG_SKIP_DEPS=1 skips
# everything: `make check-distros` sets it inside its test systems, which
# scripts/debian-root.sh has provisioned (docs/distros.md).
# Usage: scripts/install-deps.sh   (make deps; no arguments)
set -eu

if [ "${OPMSG_SKIP_DEPS:-0}" = 1 ]; then
  echo "install-deps: skipped (OPMSG_SKIP_DEPS=1)"
  exit 0
fi

# libFuzzer's runtime comes with the clang of the release (14 on Debian 12).
clang_major=14
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
if [ "$codename" != bookworm ] && command -v apt-cache >/dev/null 2>&1; then
  v=$(apt-cache depends clang 2>/dev/null | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
  [ -n "$v" ] && clang_major=$v
fi

# The test unit.shell_lint runs shellcheck (tests/lint-shell.sh).
# pandoc: docs/opmsg.1 is generated from docs/cli.md (scripts/gen-man.sh,
# checked by the test docs.man_page).
PACKAGES="build-essential cmake ninja-build pkg-config git
  libbson-dev libmongoc-dev libsnappy-dev zlib1g-dev libzstd-dev libisal-dev
  libcmocka-dev clang llvm libclang-rt-$clang_major-dev libpcap-dev gnuplot-nox valgrind
  python3 python3-venv python3-pymongo python3-mockupdb
  lintian debhelper fakeroot dpkg-dev file tcpdump abigail-tools
  gcc-s390x-linux-gnu libc6-dev-s390x-cross qemu-user
  sbuild mmdebstrap uidmap reprepro autopkgtest devscripts libdistro-info-perl
  patchutils gnupg pandoc shellcheck"

# Node.js for the interop peers: Debian's only where no Node is installed
# already (a newer one from elsewhere must not be replaced).
command -v node >/dev/null 2>&1 || PACKAGES="$PACKAGES nodejs npm"
# Go for FerretDB and the Go driver's peer, likewise: Debian's where there is none.
command -v go >/dev/null 2>&1 || PACKAGES="$PACKAGES golang-go"

missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done

if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
if [ -n "$missing" ]; then
  $SUDO apt-get update -q
  # Off Debian 12, leave out what this release does not have.
  if [ "$codename" != bookworm ]; then
    have=""
    for p in $missing; do
      if apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [^(]'; then
        have="$have $p"
      else
        echo "install-deps: $codename has no $p: left out"
      fi
    done
    missing=$have
  fi
fi
if [ -n "$missing" ]; then
  echo "install-deps: installing:$missing"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
fi

# sbuild's and autopkgtest's unshare mode (make fork-debs) map root's
# namespace onto subordinate ids.
if [ "$(id -u)" -eq 0 ]; then
  for f in /etc/subuid /etc/subgid; do
    grep -q '^root:' "$f" 2>/dev/null || echo 'root:100000:65536' >>"$f"
  done
fi

# FerretDB v1.24.2 (the peer) needs Go 1.24, Debian 12's golang-go is 1.19:
# where the go found is older, its release's toolchain is fetched as the
# module golang.org/toolchain through the Go module proxy (checked against
# the checksum database, as Go >= 1.21 does by itself for GOTOOLCHAIN),
# copied to /usr/local/lib/go$GO_TOOLCHAIN and linked as /usr/local/bin/go.
GO_TOOLCHAIN=1.24.3
go_ok() {
  v=$(go env GOVERSION 2>/dev/null) || return 1
  [ "$(printf '%s\n' 1.24 "${v#go}" | sort -V | head -n 1)" = 1.24 ]
}
if command -v go >/dev/null 2>&1 && ! go_ok; then
  echo "install-deps: $(go env GOVERSION) is older than FerretDB's Go 1.24: installing go$GO_TOOLCHAIN into /usr/local"
  mod=golang.org/toolchain@v0.0.1-go$GO_TOOLCHAIN.$(go env GOOS)-$(go env GOARCH)
  dir=$(cd / && go mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  dest=/usr/local/lib/go$GO_TOOLCHAIN
  if [ -n "$dir" ] && [ -f "$dir/bin/go" ]; then
    # Module files carry no modes: the commands get their execute bits back.
    $SUDO rm -rf "$dest" && $SUDO cp -R "$dir" "$dest" && $SUDO chmod -R u+w,a+rX "$dest" &&
      $SUDO chmod a+x "$dest"/bin/* "$dest"/pkg/tool/*/* &&
      $SUDO ln -sf "$dest/bin/go" "$dest/bin/gofmt" /usr/local/bin/ ||
      echo "install-deps: installing go$GO_TOOLCHAIN failed (the FerretDB tests will skip)"
    hash -r 2>/dev/null || true
    go_ok || echo "install-deps: $(command -v go) comes before /usr/local/bin/go in PATH (the FerretDB tests will skip)"
  else
    echo "install-deps: could not download $mod (the FerretDB tests will skip)"
  fi
fi

# Real peers for the interop tests (FerretDB, the Node driver, mongosh): each
# script installs its own, when the tools it needs are on the machine.
for extra in scripts/install-deps.d/*.sh; do
  [ -f "$extra" ] && sh "$extra"
done
exit 0
