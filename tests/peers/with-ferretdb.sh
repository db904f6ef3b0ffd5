#!/bin/bash
# Usage: with-ferretdb.sh CMD [ARGS...]
#        with-ferretdb.sh --start DIR | --stop DIR   (a CTest fixture's setup, cleanup)
#
# Runs CMD against a private FerretDB (v1.24.2, SQLite handler): starts it on a
# free 127.0.0.1 port with its data in a temporary directory, waits until it
# accepts connections, exports
#   OPMSG_FERRETDB_URI=mongodb://127.0.0.1:PORT/   OPMSG_FERRETDB_PORT=PORT
# runs CMD, stops FerretDB and exits with CMD's status.
# Exits 77 (CTest/automake "skipped") with a "SKIP: ..." line when FerretDB is
# not installed (scripts/install-deps.d/peers.sh installs it).
#
# --start DIR starts one FerretDB that outlives the script (its port and
# process id in DIR/port, DIR/pid; nothing, and status 0, when FerretDB is
# missing); --stop DIR stops it. With OPMSG_FERRETDB_STATE=DIR in the
# environment, CMD runs against that FerretDB when it answers, instead of
# starting one (the interop tests' fixture, tests/interop/CMakeLists.txt).
#
# Environment: OPMSG_FERRETDB (path of the binary, optional),
#              OPMSG_FERRETDB_LOG (keep FerretDB's log in this file, optional).
# FerretDB is stopped whatever its state (a kill may find it gone: || true), and the
# exit status is CMD's.
set -eu

if [ $# -eq 0 ]; then
  echo "usage: $0 CMD [ARGS...] | --start DIR | --stop DIR" >&2
  exit 2
fi

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

if [ "$1" = --stop ]; then
  state=${2:?usage: $0 --stop DIR}
  if [ -f "$state/pid" ]; then
    pid=$(cat "$state/pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$state"
  exit 0
fi
if [ "$1" != --start ] && [ -n "${OPMSG_FERRETDB_STATE:-}" ] && [ -f "$OPMSG_FERRETDB_STATE/port" ]; then
  PORT=$(cat "$OPMSG_FERRETDB_STATE/port")
  if port_open "$PORT"; then
    export OPMSG_FERRETDB_URI="mongodb://127.0.0.1:$PORT/" OPMSG_FERRETDB_PORT="$PORT"
    exec "$@"
  fi
fi

find_ferretdb() {
  if [ -n "${OPMSG_FERRETDB:-}" ] && [ -x "$OPMSG_FERRETDB" ]; then
    echo "$OPMSG_FERRETDB"; return 0
  fi
  if command -v ferretdb >/dev/null 2>&1; then
    command -v ferretdb; return 0
  fi
  if command -v go >/dev/null 2>&1; then
    local gp
    gp=$(go env GOPATH 2>/dev/null)
    if [ -n "$gp" ] && [ -x "$gp/bin/ferretdb" ]; then
      echo "$gp/bin/ferretdb"; return 0
    fi
  fi
  return 1
}

FERRETDB=$(find_ferretdb) || {
  echo "SKIP: FerretDB v1.24.2 is not installed (no 'ferretdb' in PATH nor in \$(go env GOPATH)/bin);" \
       "run scripts/install-deps.sh (needs Go) to install it" >&2
  [ "$1" = --start ] && exit 0 # no fixture: each test then skips itself
  exit 77
}

# A port nobody listens on: bind port 0 and let the kernel choose.
free_port() {
  /usr/bin/env python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start=""
if [ "$1" = --start ]; then
  start=${2:?usage: $0 --start DIR}
  rm -rf "$start"
  mkdir -p "$start"
  WORK=$start
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/opmsg-ferretdb.XXXXXX")
fi
mkdir -p "$WORK/data" "$WORK/state"
LOG=${OPMSG_FERRETDB_LOG:-$WORK/ferretdb.log}
PID=""

cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
[ -n "$start" ] || trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The chosen port can be taken between free_port and FerretDB's bind: retry.
started=0
for attempt in 1 2 3 4 5; do
  PORT=$(free_port) || { echo "with-ferretdb: cannot pick a free port" >&2; exit 1; }
  # (A fixture's FerretDB in a session of its own: CTest ends the setup test.)
  ${start:+setsid} "$FERRETDB" \
    --handler=sqlite --sqlite-url="file:$WORK/data/" \
    --listen-addr="127.0.0.1:$PORT" --debug-addr=- \
    --state-dir="$WORK/state" --telemetry=disable \
    --log-level=warn </dev/null >>"$LOG" 2>&1 &
  PID=$!
  for _ in $(seq 1 300); do           # up to 30 s (the first start creates files)
    if port_open "$PORT"; then started=1; break; fi
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  [ "$started" -eq 1 ] && break
  kill -KILL "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  PID=""
  echo "with-ferretdb: FerretDB did not start on port $PORT (attempt $attempt)" >&2
done
if [ "$started" -ne 1 ]; then
  echo "with-ferretdb: FerretDB failed to start; its log:" >&2
  tail -n 30 "$LOG" >&2
  exit 1
fi
if [ -n "$start" ]; then
  echo "$PORT" >"$start/port"
  echo "$PID" >"$start/pid"
  echo "with-ferretdb: FerretDB on 127.0.0.1:$PORT (pid $PID) until --stop $start"
  exit 0
fi

export OPMSG_FERRETDB_URI="mongodb://127.0.0.1:$PORT/"
export OPMSG_FERRETDB_PORT="$PORT"
rc=0
"$@" || rc=$?
exit "$rc"
