# Sourced, not run: libmongoc's test-libmongoc run test by test, and two
# runs of it compared. One home for scripts/libmongoc-suite.sh (stock
# libmongoc against the drop-in, docs/libmongoc-suite.md) and
# scripts/fork-check.sh (mongo-c-driver unpatched against the patch series,
# docs/fork.md).
#
# The caller sets prog (its name in messages) before sourcing this file,
# which gives it say, die and usage (its "# Usage:" comment), and sets
# before a run:
#   SUITE_SRC    the source tree test-libmongoc runs from (its JSON spec
#                tests are read relative to it)
#   SUITE_BIN    the test-libmongoc program
#   SUITE_LIMIT  seconds a test may take
#   SUITE_STRIP  (optional) another path to take out of the messages: the
#                tree the program was compiled in, when it runs from another
#   SUITE_STOP   (optional) a file that, once it exists and is not empty,
#                stops the run: the tests not started yet are recorded as
#                failed, "not run: " and its first line
#
# Results are TAB-separated lines, one per test, in the order of the list:
#   name, result (pass fail skip timeout), seconds, exit status,
#   active (the drop-in's "opmsg-mongoc: active" line seen: yes no -), message
# and a comparison writes, per test whose results differ, the line
#   name, A's tries, B's tries, difference|flaky, A's message, B's message

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

# --- One test, one process ------------------------------------------------------------------

# Runs FUNC LINE for each line of standard input, N at a time, in a bash
# that has the functions below and RUN_ENV (the test's environment).
suite_each_line() {  # N FUNC ENV...
  local n=$1 fn=$2 decl
  shift 2
  local -a run_env=("$@")
  decl=$(declare -p run_env | sed 's/^declare -a run_env=/RUN_ENV=/')
  RUN_DIR=${RUN_DIR:-} SUITE_SRC=$SUITE_SRC SUITE_BIN=$SUITE_BIN SUITE_LIMIT=$SUITE_LIMIT \
    SUITE_STRIP=${SUITE_STRIP:-$SUITE_SRC} SUITE_STOP=${SUITE_STOP:-} RUN_ENV_DECL=$decl \
    xargs -d '\n' -P "$n" -n 1 bash -c 'eval "declare -a $RUN_ENV_DECL"; '"$fn"' "$1" 2>/dev/null' "$fn"
}

# `--ctest-run NAME` registers NAME alone (the suite then skips reading the
# other JSON spec files, which every `-l NAME` process reads: ~0.05 s less
# per test). 1.23 and 1.30 print nothing for a pass, nor for a name they do
# not know; so once per build each name is checked to register under it.
# A name that does not (the suite registers a few only when it may fork)
# runs with `-l NAME`. (2.x refuses an unknown name: suite_one_test then
# runs it with -l by itself.)
suite_check_ctest() {  # NAME -> NAME when `--ctest-run NAME` registers it
  local out
  out=$(cd "$SUITE_SRC" && env -i "${RUN_ENV[@]}" "$SUITE_BIN" --ctest-run "$1" --list-tests 2>/dev/null) || return 0
  if grep -qxF -- "$1" <<<"$out"; then echo "$1"; fi
  return 0
}

# One test in its own process, under a time limit: writes its result line
# to RUN_DIR/res/INDEX and its output to RUN_DIR/logs/INDEX.log.
suite_one_test() {  # "INDEX<TAB>c|l<TAB>NAME" (c: --ctest-run, l: -l)
  local line=$1 idx how name log t0 t1 rc result msg active secs
  idx=${line%%$'\t'*}
  line=${line#*$'\t'}
  how=${line%%$'\t'*}
  name=${line#*$'\t'}
  log=$RUN_DIR/logs/$idx.log
  # A run told to stop (SUITE_STOP names a file that exists, and says why)
  # records the tests it has not started as failed, without running them.
  if [ -n "$SUITE_STOP" ] && [ -s "$SUITE_STOP" ]; then
    printf '%s\tfail\t0\t-\t-\tnot run: %s\n' "$name" "$(head -n 1 "$SUITE_STOP")" >"$RUN_DIR/res/$idx"
    return 0
  fi
  # (-l in the suite's own fork mode: the tests --ctest-run does not
  # register are those it registers only when it may fork.)
  local -a sel=(-l "$name")
  [ "$how" = c ] && sel=(--ctest-run "$name")
  t0=$EPOCHREALTIME
  rc=0
  (cd "$SUITE_SRC" && env -i "${RUN_ENV[@]}" timeout -k 10 "$SUITE_LIMIT" \
     "$SUITE_BIN" "${sel[@]}") >"$log" 2>&1 </dev/null || rc=$?
  if [ "$how" = c ] && [ "$rc" -ne 0 ] && grep -qF "No such test '$name'" "$log"; then
    how=l
    sel=(-l "$name")
    rc=0
    (cd "$SUITE_SRC" && env -i "${RUN_ENV[@]}" timeout -k 10 "$SUITE_LIMIT" \
       "$SUITE_BIN" "${sel[@]}") >"$log" 2>&1 </dev/null || rc=$?
  fi
  t1=$EPOCHREALTIME
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    result=timeout
  elif grep -q -e '"status": "skip"' -e '^@@ctest-skipped@@' "$log"; then
    result=skip
  elif [ "$rc" -eq 0 ] && { [ "$how" = c ] || grep -q '"status": "pass"' "$log"; }; then
    result=pass
  else
    result=fail
    if [ "$rc" -eq 0 ]; then echo "no result: the test did not run" >>"$log"; fi
  fi
  msg=""
  if [ "$result" = fail ] || [ "$result" = timeout ]; then
    # The test's own lines (not the suite's JSON): those that say what
    # failed, else the last one; without the source tree's path.
    local body
    body=$(grep -v -E '^ *("|\{|\}|\]|\[)|^opmsg-mongoc: active|^@@ctest|^ *$' "$log" || true)
    # The drop-in's first refusal, the first line that says what failed,
    # and the last line (ASSERT_WITH_MSG's detail comes last).
    msg=$(awk '/^opmsg-mongoc: (rejected|refused)/ && !r { r = $0 }
               /FAIL|[Ff]ail|[Aa]ssert|[Ee]rror|precondition|Segmentation|Abort|timed out|expected|contain/ && !/^opmsg-mongoc/ && n < 2 { f[++n] = $0 }
               { last = $0 }
               END { if (r != "") print r; for (i = 1; i <= n; i++) print f[i]
                     if (last != "" && last != f[n] && last != r) print last }' <<<"$body")
    msg=$(printf '%s' "$msg" | tr '\t\n' '  ' | sed "s|$SUITE_SRC/||g; s|$SUITE_STRIP/||g; s/  */ /g; s/^ //; s/ $//" | cut -c1-300)
    [ "$result" = timeout ] && msg="no result after ${SUITE_LIMIT} s${msg:+; $msg}"
    [ -n "$msg" ] || msg="exit status $rc"
  fi
  [ -n "$msg" ] || msg=-   # never an empty field: read(1) would merge two tabs
  active=-
  if grep -q '^opmsg-mongoc: active:' "$log"; then active=yes
  elif grep -q '^opmsg-mongoc: inactive' "$log"; then active=no
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$result" "$secs" "$rc" "$active" "$msg" >"$RUN_DIR/res/$idx"
}
export -f suite_one_test suite_check_ctest

# --- A run --------------------------------------------------------------------------------

# Runs the tests named in LIST, JOBS at a time, with the environment ENV
# (nothing else: env -i), into OUT/results.tsv (and OUT/logs/, OUT/seconds).
# HOW says how a test is selected: a file of the names `--ctest-run`
# registers (suite_check_ctest; the others run with -l), or "ctest" for
# --ctest-run everywhere (2.x, which refuses a name it does not know).
suite_run() {  # LIST OUT JOBS HOW ENV...
  local list=$1 out=$2 n=$3 how=$4 t0 i
  shift 4
  rm -rf "$out"
  mkdir -p "$out/logs" "$out/res"
  t0=$EPOCHREALTIME
  if [ "$how" = ctest ]; then
    awk '{ printf "%d\tc\t%s\n", NR, $0 }' "$list"
  else
    awk 'NR == FNR { if ($0 !~ /^#/) ok[$0] = 1; next }
         { printf "%d\t%s\t%s\n", FNR, ($0 in ok) ? "c" : "l", $0 }' "$how" "$list"
  fi | RUN_DIR=$out suite_each_line "$n" suite_one_test "$@"
  awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%d\n", b - a + 0.5}' >"$out/seconds"
  for i in $(seq 1 "$(wc -l <"$list")"); do
    if [ -f "$out/res/$i" ]; then cat "$out/res/$i"
    else printf '%s\tfail\t0\t-\t-\tno result recorded\n' "$(sed -n "${i}p" "$list")"
    fi
  done >"$out/results.tsv"
  rm -rf "$out/res"
}

suite_counts() {  # RESULTS.tsv -> "run passed failed skipped timeout"
  awk -F'\t' '{n++; c[$2]++} END {printf "%d %d %d %d %d\n", n, c["pass"], c["fail"], c["skip"], c["timeout"]}' "$1"
}

# --- Comparing two runs ------------------------------------------------------------------------

# Tests whose results differ between A and B (the same list, the same
# order) are run again, one at a time, twice per side: a test whose results
# on the two sides overlap over the three tries is flaky, not a difference.
# RUN_A and RUN_B are the caller's functions, called as RUN_X LIST OUT (a
# run of LIST into OUT, one test at a time). Writes B_DIR/confirmed.tsv.
suite_confirm() {  # A_DIR B_DIR WORK RUN_A RUN_B
  local adir=$1 bdir=$2 work=$3 run_a=$4 run_b=$5 diff k nd
  diff=$work/$(basename "$bdir").diff
  paste <(cut -f1,2,6 "$adir/results.tsv") <(cut -f2,6 "$bdir/results.tsv") |
    awk -F'\t' '$2 != $4' >"$diff"
  : >"$bdir/confirmed.tsv"
  [ -s "$diff" ] || { rm -f "$diff"; return 0; }
  nd=$(wc -l <"$diff")
  say "$nd tests differ; running each again twice per side, one at a time"
  cut -f1 "$diff" >"$diff.list"
  for k in 1 2; do
    "$run_a" "$diff.list" "$work/confirm-a-$k"
    "$run_b" "$diff.list" "$work/confirm-b-$k"
  done
  paste <(cut -f1-5 "$diff") <(cut -f2 "$work/confirm-a-1/results.tsv") \
        <(cut -f2 "$work/confirm-a-2/results.tsv") <(cut -f2 "$work/confirm-b-1/results.tsv") \
        <(cut -f2,6 "$work/confirm-b-2/results.tsv") |
    awk -F'\t' 'BEGIN {OFS = "\t"} {
      s = $2 "," $6 "," $7; d = $4 "," $8 "," $9
      split(s, a, ","); split(d, b, ","); overlap = 0
      for (i = 1; i <= 3; i++) for (j = 1; j <= 3; j++) if (a[i] == b[j]) overlap = 1
      dmsg = $5; if ((dmsg == "" || dmsg == "-") && $10 != "") dmsg = $10
      print $1, s, d, (overlap ? "flaky" : "difference"), $3, dmsg }' >"$bdir/confirmed.tsv"
  rm -rf "$work"/confirm-a-? "$work"/confirm-b-? "$diff" "$diff.list"
}

# The explanation of a difference: the reason of the first line of the
# files, "test-name<TAB>reason", whose name (a shell pattern) matches.
suite_explain() {  # NAME FILE...
  local name=$1 f pat reason
  shift
  for f in "$@"; do
    [ -f "$f" ] || continue
    while IFS=$'\t' read -r pat reason; do
      case $pat in ''|'#'*) continue ;; esac
      # shellcheck disable=SC2053
      if [[ $name == $pat ]]; then echo "${reason:-(no reason given)}"; return 0; fi
    done <"$f"
  done
}

suite_md_cell() { sed 's/|/\\|/g; s/`/'"'"'/g' <<<"$1"; }
suite_first_msg() {  # the first message that is not empty or "-"
  local m
  for m in "$@"; do
    if [ -n "$m" ] && [ "$m" != - ]; then echo "$m"; return 0; fi
  done
  echo -
}

# Reads B_DIR/confirmed.tsv and sets SUITE_NDIFF, SUITE_NEXPL, SUITE_NFLAKY
# and the Markdown rows SUITE_ROWS (| test | A | B | message | explanation |)
# and SUITE_FLAKY_ROWS (| test | A tries | B tries | message |).
suite_tally() {  # CONFIRMED LABEL_A LABEL_B EXPLANATION-FILE...
  local confirmed=$1 la=$2 lb=$3 name s d status smsg dmsg reason msg
  shift 3
  SUITE_NDIFF=0 SUITE_NEXPL=0 SUITE_NFLAKY=0 SUITE_ROWS="" SUITE_FLAKY_ROWS=""
  while IFS=$'\t' read -r name s d status smsg dmsg; do
    [ -n "$name" ] || continue
    if [ "$status" = flaky ]; then
      SUITE_NFLAKY=$((SUITE_NFLAKY + 1))
      SUITE_FLAKY_ROWS+="| \`$name\` | $s | $d | $(suite_md_cell "$(suite_first_msg "$dmsg" "$smsg")") |"$'\n'
      continue
    fi
    SUITE_NDIFF=$((SUITE_NDIFF + 1))
    reason=$(suite_explain "$name" "$@")
    [ -n "$reason" ] && SUITE_NEXPL=$((SUITE_NEXPL + 1))
    msg=$dmsg
    [ "${s%%,*}" = pass ] || msg="$la: $smsg; $lb: $dmsg"
    SUITE_ROWS+="| \`$name\` | ${s%%,*} | ${d%%,*} | $(suite_md_cell "$msg") | $(suite_md_cell "${reason:-**unexplained**}") |"$'\n'
  done <"$confirmed"
}

suite_unexplained() {  # CONFIRMED EXPLANATION-FILE... -> the names of the unexplained differences
  local confirmed=$1 name
  shift
  awk -F'\t' '$4 == "difference" {print $1}' "$confirmed" | while IFS= read -r name; do
    [ -n "$(suite_explain "$name" "$@")" ] || echo "$name"
  done
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
# listens: a run with SUITE_STOP=STOP-FILE then stops starting tests that
# would only wait for a server that is gone.
suite_watch_ferretdb() {  # PORT STOP-FILE REASON
  local port=$1 stop=$2 reason=$3
  (
    while suite_port_open "$port"; do sleep 2; done
    echo "$reason" >"$stop"
  ) &
  SUITE_WATCH_PID=$!
}

# A port nobody listens on (the kernel's choice).
suite_free_port() {
  python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
