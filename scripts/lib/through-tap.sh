# shellcheck shell=bash
# Usage: . scripts/lib/through-tap.sh, then through_tap OPMSG OUT NAME SECONDS PROGRAM [ARGS...]
# Sourced: through_tap OPMSG OUT NAME SECONDS PROGRAM [ARGS...]
#
# Runs PROGRAM through `opmsg tap` in front of the FerretDB that
# tests/peers/with-ferretdb.sh started ($OPMSG_FERRETDB_PORT): the tap
# listens on a free 127.0.0.1 port and logs every message to OUT/NAME.jsonl;
# each ARG "{uri}" becomes mongodb://127.0.0.1:PORT/. PROGRAM's output goes to
# OUT/NAME.out and .err, its exit status (124 on timeout, 1 when the tap did
# not start) to OUT/NAME.rc. The tap is stopped, and its log complete, when
# this returns.
through_tap() {
  local opmsg=$1 out=$2 name=$3 seconds=$4 tap port rc a
  shift 4
  "$opmsg" tap --listen 127.0.0.1:0 --upstream "127.0.0.1:$OPMSG_FERRETDB_PORT" \
    --out "$out/$name.jsonl" 2>"$out/$name.tap.err" &
  tap=$!
  port=""
  for _ in $(seq 1 200); do   # up to 10 s
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out/$name.tap.err")
    [ -n "$port" ] && break
    kill -0 "$tap" 2>/dev/null || break
    sleep 0.05
  done
  if [ -n "$port" ]; then
    local args=()
    for a in "$@"; do args+=("${a//\{uri\}/mongodb://127.0.0.1:$port/}"); done
    rc=0
    timeout "$seconds" "${args[@]}" >"$out/$name.out" 2>"$out/$name.err" || rc=$?
    echo "$rc" >"$out/$name.rc"
  else
    echo "tap did not start" >"$out/$name.err"; echo 1 >"$out/$name.rc"
  fi
  sleep 0.3   # the log lags the traffic by about 10 ms
  kill -TERM "$tap" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$tap" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$tap" 2>/dev/null || true
  wait "$tap" 2>/dev/null || true
}
