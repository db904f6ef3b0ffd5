# shellcheck shell=bash
# Usage: prog=NAME; . scripts/lib/suite-common.sh
# Sourced, not run: what scripts/libmongoc-suite.sh, scripts/fork-check.sh
# and scripts/fork-check-encryption.sh share. The caller sets prog (its name
# in messages) first: say, die and usage (its "# Usage:" comment); the Debian
# packages a script needs; two CTest runs compared; FerretDB. The runs are
# upstream's CTest registration of test-libmongoc, through
# scripts/lib/junit-compare.py (its "run" and "compare").
: "${prog:?the caller sets prog first}"
jc=$(dirname "${BASH_SOURCE[0]}")/junit-compare.py

say() { echo "$prog: $*"; }
die() { echo "$prog: error: $*" >&2; exit 2; }
usage() { sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

# --- Packages -------------------------------------------------------------------------------

# Installs the Debian packages of the list that are missing (as root), or
# stops naming them.
suite_need_pkgs() {  # PACKAGE...
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ]; then
    say "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
      { apt-get update -q >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; } ||
      die "could not install ${missing[*]}"
  else
    die "missing packages: ${missing[*]} (apt-get install them, or run as root)"
  fi
}

# --- Two runs compared -----------------------------------------------------------------------

# Two runs compared (junit-compare.py compare): the tests that differ run
# once more on each side, one at a time (RUN-A and RUN-B LIST OUT), before
# the verdict (a test whose results overlap over the tries is flaky). Sets
# CMP_* (the counts; a test killed by a signal other than its own abort
# crashed) and CMP_DIR (rows.md, flaky.md, unexplained.txt, crashes.txt).
# shellcheck disable=SC2034 # the CMP_* results are the caller's to read
jcompare() {  # A-DIR B-DIR DIR LABEL-A LABEL-B RUN-A RUN-B EXPLANATION-FILE...
  local a=$1 b=$2 c=$3 la=$4 lb=$5 ra=$6 rb=$7 f out
  shift 7
  local -a ex=() again=()
  for f in "$@"; do ex+=(--explained "$f"); done
  rm -rf "$c"
  mkdir -p "$c"
  "$jc" compare "$a" "$b" --out "$c" --labels "$la" "$lb" "${ex[@]}" >/dev/null || die "junit-compare.py failed"
  if [ -s "$c/differ.list" ]; then
    say "$(wc -l <"$c/differ.list") tests differ ($la, $lb): each runs again on both sides, one at a time"
    "$ra" "$c/differ.list" "$c/again-a"
    "$rb" "$c/differ.list" "$c/again-b"
    again=(--again "$c/again-a" "$c/again-b")
  fi
  out=$("$jc" compare "$a" "$b" --out "$c" --labels "$la" "$lb" "${again[@]}" "${ex[@]}") || die "junit-compare.py failed"
  read -r CMP_RUN CMP_P0 CMP_F0 CMP_S0 CMP_T0 CMP_C0 CMP_P1 CMP_F1 CMP_S1 CMP_T1 CMP_C1 CMP_NDIFF CMP_NEXPL CMP_NFLAKY CMP_INACTIVE <<<"$out"
  CMP_DIR=$c
}
# --- FerretDB ---------------------------------------------------------------------------------

# The FerretDB binary: EXPLICIT when given, else OPMSG_FERRETDB, PATH, then
# $(go env GOPATH)/bin (scripts/install-deps.d/peers.sh installs it there).
suite_find_ferretdb() {  # [EXPLICIT]
  if [ -n "${1:-}" ]; then
    [ -x "$1" ] && { echo "$1"; return 0; }
    return 1
  fi
  if [ -n "${OPMSG_FERRETDB:-}" ] && [ -x "$OPMSG_FERRETDB" ]; then
    echo "$OPMSG_FERRETDB"; return 0
  fi
  command -v ferretdb 2>/dev/null && return 0
  if command -v go >/dev/null 2>&1; then
    local gp
    gp=$(go env GOPATH 2>/dev/null || true)
    [ -n "$gp" ] && [ -x "$gp/bin/ferretdb" ] && { echo "$gp/bin/ferretdb"; return 0; }
  fi
  return 1
}

suite_port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

SUITE_FDB_PID=""
suite_stop_ferretdb() {
  if [ -n "$SUITE_FDB_PID" ] && kill -0 "$SUITE_FDB_PID" 2>/dev/null; then
    kill -TERM "$SUITE_FDB_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$SUITE_FDB_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SUITE_FDB_PID" 2>/dev/null || true
    wait "$SUITE_FDB_PID" 2>/dev/null || true
  fi
  SUITE_FDB_PID=""
}

# A fresh FerretDB FDB (SQLite in DIR) on 127.0.0.1:PORT; false when the
# port is taken or there is no FDB.
suite_start_ferretdb() {  # FDB DIR PORT
  local fdb=$1 dir=$2 port=$3
  [ -n "$fdb" ] || return 1
  if suite_port_open "$port"; then
    say "NOTE: 127.0.0.1:$port is already in use: FerretDB not started there"
    return 1
  fi
  rm -rf "$dir"
  mkdir -p "$dir/data" "$dir/state"
  "$fdb" --handler=sqlite --sqlite-url="file:$dir/data/" --listen-addr="127.0.0.1:$port" \
    --debug-addr=- --state-dir="$dir/state" --telemetry=disable --log-level=warn >"$dir/log" 2>&1 &
  SUITE_FDB_PID=$!
  for _ in $(seq 1 300); do
    suite_port_open "$port" && return 0
    kill -0 "$SUITE_FDB_PID" 2>/dev/null || break
    sleep 0.1
  done
  tail -n 20 "$dir/log" >&2
  suite_stop_ferretdb
  die "FerretDB did not start on 127.0.0.1:$port"
}

# Watches the FerretDB on 127.0.0.1:PORT in the background (its process id
# in SUITE_WATCH_PID) and writes "REASON" into STOP-FILE once it no longer
# listens: the run against it is then made again.
suite_watch_ferretdb() {  # PORT STOP-FILE REASON
  local port=$1 stop=$2 reason=$3
  (
    while suite_port_open "$port"; do sleep 2; done
    echo "$reason" >"$stop"
  ) &
  # shellcheck disable=SC2034 # the caller's, to stop the watcher
  SUITE_WATCH_PID=$!
}

# A port nobody listens on (the kernel's choice).
suite_free_port() {
  python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
