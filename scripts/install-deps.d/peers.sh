#!/bin/sh
# Installs the real peers of the interop tests (tests/interop/), each only when
# missing and only when the tool that installs it is on the machine:
#  - FerretDB v1.24.2, built with Go into $(go env GOPATH)/bin/ferretdb;
#  - beside it, ferretdb-seq: the same release with our series
#    upstream/ferretdb/*.patch (cursor batches as document sequences for a
#    client that sets OP_MSG flag bit 17), built offline from the module cache.
#    Only the tests that ask for sequences use it; ferretdb stays the peer;
#  - the MongoDB Node.js driver and mongosh, from npm into tests/interop/node/
#    (versions pinned by its package.json and package-lock.json);
#  - the Go driver modules of tests/interop/go/ (go.mod, go.sum).
# A peer that cannot be installed is reported and its tests skip (exit 77).
# Runs from the top of the source tree (scripts/install-deps.sh does so).
# Usage: scripts/install-deps.d/peers.sh   (no arguments)
set -eu

FERRETDB_VERSION=v1.24.2
FERRETDB_MODULE=github.com/FerretDB/FerretDB

top=$(cd "$(dirname "$0")/../.." && pwd)
status=0

ferretdb_ok() {
  # A plain `go install ...@v1.24.2` builds a binary that panics at start-up:
  # the module lacks build/version/version.txt (a generated file). So the
  # version must answer, not merely the file exist.
  [ -x "$1" ] && "$1" --version 2>/dev/null | grep -q "version: $FERRETDB_VERSION"
}

install_ferretdb() {
  if ! command -v go >/dev/null 2>&1; then
    echo "peers: Go is missing: FerretDB not installed (the interop tests will skip)"
    return 0
  fi
  gobin=$(go env GOPATH)/bin
  if command -v ferretdb >/dev/null 2>&1 && ferretdb_ok "$(command -v ferretdb)"; then
    return 0
  fi
  if ferretdb_ok "$gobin/ferretdb"; then
    return 0
  fi
  echo "peers: building FerretDB $FERRETDB_VERSION into $gobin"
  # Fetch the release's source through the module proxy, give it the version
  # file its build step would generate, and build the command from it.
  dir=$(go mod download -json "$FERRETDB_MODULE@$FERRETDB_VERSION" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "peers: could not download $FERRETDB_MODULE@$FERRETDB_VERSION"
    return 1
  fi
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferretdb-src.XXXXXX")
  cp -R "$dir/." "$tmp/" && chmod -R u+w "$tmp" &&
    echo "$FERRETDB_VERSION" >"$tmp/build/version/version.txt" &&
    mkdir -p "$gobin" &&
    (cd "$tmp" && go build -o "$gobin/ferretdb" ./cmd/ferretdb)
  rc=$?
  rm -rf "$tmp"
  if [ $rc -ne 0 ] || ! ferretdb_ok "$gobin/ferretdb"; then
    echo "peers: building FerretDB failed"
    return 1
  fi
}

# The series' fingerprint: `ferretdb-seq --version` reports it as its
# package ("package: opmsg-seq-<first 12 hex digits of the series' SHA-256>"),
# so a binary built from another series (or none) is rebuilt.
ferretdb_seq_stamp() {
  cat "$top"/upstream/ferretdb/[0-9][0-9][0-9][0-9]-*.patch | sha256sum | cut -c1-12
}

ferretdb_seq_ok() {
  ferretdb_ok "$1" && "$1" --version 2>/dev/null | grep -qx "package: opmsg-seq-$2"
}

install_ferretdb_seq() {
  command -v go >/dev/null 2>&1 || return 0
  ls "$top"/upstream/ferretdb/[0-9][0-9][0-9][0-9]-*.patch >/dev/null 2>&1 || return 0
  gobin=$(go env GOPATH)/bin
  stamp=$(ferretdb_seq_stamp)
  if ferretdb_seq_ok "$gobin/ferretdb-seq" "$stamp"; then
    return 0
  fi
  echo "peers: building FerretDB $FERRETDB_VERSION with upstream/ferretdb/*.patch into $gobin/ferretdb-seq"
  # A binary of another series must not stand in for this one if the build fails.
  rm -f "$gobin/ferretdb-seq"
  # Offline: the stock build above has put the module and its dependencies
  # into the module cache.
  dir=$(GOPROXY=off go mod download -json "$FERRETDB_MODULE@$FERRETDB_VERSION" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "peers: $FERRETDB_MODULE@$FERRETDB_VERSION is not in the module cache: ferretdb-seq not built"
    return 1
  fi
  src="$top/build/ferretdb-seq"
  rm -rf "$src" && mkdir -p "$src" &&
    cp -R "$dir/." "$src/" && chmod -R u+w "$src" || return 1
  # git apply inside build/ would look for the enclosing repository and apply
  # the patches relative to its top: stop it at the copy's parent.
  if ! (cd "$src" && GIT_CEILING_DIRECTORIES=$(dirname "$src") \
          git apply "$top"/upstream/ferretdb/[0-9][0-9][0-9][0-9]-*.patch); then
    echo "peers: upstream/ferretdb/*.patch do not apply to $FERRETDB_MODULE@$FERRETDB_VERSION"
    return 1
  fi
  echo "$FERRETDB_VERSION" >"$src/build/version/version.txt" &&
    echo "opmsg-seq-$stamp" >"$src/build/version/package.txt" &&
    mkdir -p "$gobin" &&
    (cd "$src" && GOPROXY=off GOFLAGS=-buildvcs=false go build -o "$gobin/ferretdb-seq" ./cmd/ferretdb)
  rc=$?
  if [ $rc -ne 0 ] || ! ferretdb_seq_ok "$gobin/ferretdb-seq" "$stamp"; then
    echo "peers: building ferretdb-seq failed (its source: build/ferretdb-seq)"
    return 1
  fi
  rm -rf "$src"
}

install_node() {
  nodedir="$top/tests/interop/node"
  if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    echo "peers: node/npm missing: the Node driver and mongosh are not installed" \
         "(apt-get install nodejs npm; their tests will skip)"
    return 0
  fi
  if [ -f "$nodedir/node_modules/mongodb/package.json" ] &&
     [ -x "$nodedir/node_modules/.bin/mongosh" ]; then
    return 0
  fi
  echo "peers: installing the Node driver and mongosh into tests/interop/node"
  (cd "$nodedir" && npm ci --no-audit --no-fund --loglevel=error)
}

install_go_driver() {
  command -v go >/dev/null 2>&1 || return 0
  (cd "$top/tests/interop/go" && go mod download)
}

install_ferretdb || status=1
install_ferretdb_seq || status=1
install_node || status=1
install_go_driver || status=1
# A peer that failed to install only makes its tests skip: never fail the
# whole install (and with it `make check`) for it.
[ $status -eq 0 ] || echo "peers: WARNING: some peers are missing; their interop tests will skip"
exit 0
