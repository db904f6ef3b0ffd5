#!/bin/bash
# Usage: bench/fork/run.sh [--build [FORK-CHECK OPTIONS] --] [FORK-BENCH OPTIONS]
#
# The fork's benchmark (`make bench-fork`, docs/benchmarks.md): mongo-c-driver
# master unpatched against master with the four pull requests applied
# (fork/master/1-*/ to 4-*/). It
#   1. builds bench/fork/recv.c into one module per build (its private
#      headers, its static libmongoc and libbson), and runs fork-bench (the
#      project's build/bench/fork-bench) on both, with --cpu-time unless
#      other options are given: paired medians of the receive path and of
#      the command-started event, allocations, outputs;
#   2. counts the receive path's instructions per reply without sequences
#      (reply_small) under callgrind, each build alone (valgrind, when
#      installed);
#   3. compiles mcd-rpc.c, mongoc-rpc.c and mongoc-cluster.c of each build
#      with -fstack-usage and takes the largest frame among the functions on
#      the receive path of a reply without sequences: those callgrind saw run
#      in these files for reply_small, plus _mongoc_cluster_run_opmsg_recv
#      and mongoc_cluster_run_opmsg, which recv.c follows but does not call
#      (the same for reply_seq101 is printed too);
# and ends with the line
#   fork bench: plain +X ns (+I % instructions), stack +Y B, seq101 Z x body, started W x, allocations A
#
# A build is either what scripts/fork-check.sh --build-only leaves
# (DIR/lib/, DIR/headers/{tree,build}/, DIR/commit, with the tree it was
# built from in DIR/../tree) or a CMake build directory of mongo-c-driver
# (its CMakeCache.txt names the source tree). --build (what `make bench-fork`
# passes) makes the default ones first, scripts/fork-check.sh --build-only
# with FORK-CHECK OPTIONS, unless FORK_BENCH_UNPATCHED or FORK_BENCH_PATCHED
# is set.
#
# Environment:
#   FORK_BENCH_UNPATCHED  the unpatched build (default build/fork/master/unpatched)
#   FORK_BENCH_PATCHED    the patched build (default build/fork/master/patched)
#   FORK_BENCH_OUT        where the modules and measurements go (default build/fork/bench)
#   FORK_BENCH_NO_CALLGRIND=1  skip step 2 (and the callgrind part of step 3)
#   BUILD                 the project's build directory (default build)
#   FORK_BENCH_RUNNER     a fork-bench already built (then BUILD is not built)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
work=${FORK_WORK:-$top/build/fork/master}
unpatched=${FORK_BENCH_UNPATCHED:-$work/unpatched}
patched=${FORK_BENCH_PATCHED:-$work/patched}
build=${BUILD:-$top/build}
out=${FORK_BENCH_OUT:-$top/build/fork/bench}
runner=${FORK_BENCH_RUNNER:-$build/bench/fork-bench}

die() { echo "bench-fork: $*" >&2; exit 2; }
note() { echo "bench-fork: $*" >&2; }

if [ "${1:-}" = --build ]; then
  shift
  check_args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do check_args+=("$1"); shift; done
  [ $# -eq 0 ] || shift
  if [ -z "${FORK_BENCH_UNPATCHED:-}${FORK_BENCH_PATCHED:-}" ]; then
    "$top/scripts/fork-check.sh" --build-only "${check_args[@]}"
  fi
fi

if [ -z "${FORK_BENCH_RUNNER:-}" ]; then
  [ -f "$build/CMakeCache.txt" ] || die "no build in $build (make first)"
  cmake --build "$build" --target fork-bench >/dev/null || die "fork-bench does not build"
fi
[ -x "$runner" ] || die "no runner $runner"
mkdir -p "$out"

# --- The two builds ---------------------------------------------------------------------------

# layout SIDE DIR: sets, for one build, L_INC (its -I options), L_LIBS (its
# static libmongoc and libbson) and L_SRC (a command printing one of its
# source files, given the path in the tree).
layout() {
  local side=$1 d
  d=$(cd "$2" 2>/dev/null && pwd) || die "$side build: no directory $2"
  if [ -f "$d/CMakeCache.txt" ]; then
    local src
    src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$d/CMakeCache.txt")
    [ -d "$src/src/libmongoc" ] || die "$side build $d: no mongo-c-driver tree at '$src'"
    eval "L_INC_$side=\"-I$d/src -I$d/src/common/src -I$d/src/libbson/src -I$d/src/libmongoc/src \
-I$src/src/common/src -I$src/src/libbson/src -I$src/src/libmongoc/src -I$src/src/uthash\""
    eval "L_LIBS_$side=\"$d/src/libmongoc/libmongoc2.a $d/src/libbson/libbson2.a\""
    eval "L_SRC_$side=\"cat $src/\""
    eval "L_HDR_$side=\"$src/src/libmongoc/src/mongoc\""
  elif [ -f "$d/lib/libmongoc2.a" ] && [ -d "$d/headers/tree" ]; then
    local tree commit
    tree=$(cd "$d/.." && pwd)/tree
    commit=$(cat "$d/commit" 2>/dev/null) || die "$side build $d: no commit file"
    git -C "$tree" cat-file -e "$commit" 2>/dev/null || die "$side build $d: commit $commit not in $tree"
    eval "L_INC_$side=\"-I$d/headers/build/src -I$d/headers/build/src/common/src \
-I$d/headers/build/src/libbson/src -I$d/headers/build/src/libmongoc/src -I$d/headers/tree/src/common/src \
-I$d/headers/tree/src/libbson/src -I$d/headers/tree/src/libmongoc/src -I$d/headers/tree/src/uthash\""
    eval "L_LIBS_$side=\"$d/lib/libmongoc2.a $d/lib/libbson2.a\""
    eval "L_SRC_$side=\"git -C $tree show $commit:\""
    eval "L_HDR_$side=\"$d/headers/tree/src/libmongoc/src/mongoc\""
  else
    die "$side build $d: neither a CMake build directory nor scripts/fork-check.sh's (lib/libmongoc2.a; run scripts/fork-check.sh --build-only)"
  fi
  local libs
  libs=L_LIBS_$side
  for a in ${!libs}; do [ -f "$a" ] || die "$side build: no $a (build mongoc_static)"; done
}
layout unpatched "$unpatched"
layout patched "$patched"
get() { local v=$1_$2; echo "${!v}"; }

# The calls of the receive path the pull requests change, as a build's
# headers declare them (recv.c follows them).
series_calls() {  # SIDE -> -D options
  local h
  h=$(get L_HDR "$1")
  # (A declaration may span lines: each is read as one line.)
  decl() { grep -A2 "^$1(" "$2" | tr '\n' ' '; }
  decl mcd_rpc_message_from_data_in_place "$h/mcd-rpc.h" | grep -q 'bson_error_t' && echo -DFORK_BENCH_FROM_DATA_ERROR
  decl mcd_rpc_message_ingress "$h/mongoc-rpc-private.h" | grep -q 'request_op_code' && echo -DFORK_BENCH_INGRESS_ERROR
  decl mcd_rpc_message_decompress_if_necessary "$h/mongoc-cluster-private.h" | grep -q 'bson_error_t' &&
    echo -DFORK_BENCH_DECOMPRESS_ERROR
  if grep -q '^mcd_rpc_message_copy_reply(const mcd_rpc_message \*rpc, bson_t \*reply, bson_error_t \*error)' \
    "$h/mongoc-rpc-private.h"; then
    echo -DFORK_BENCH_COPY_REPLY
  elif grep -q '^mcd_rpc_message_get_reply(' "$h/mongoc-rpc-private.h"; then
    if grep -A3 '^mcd_rpc_message_get_reply(' "$h/mongoc-rpc-private.h" | tr '\n' ' ' | grep -q 'bson_error_t'; then
      echo -DFORK_BENCH_GET_REPLY=2
    else
      echo -DFORK_BENCH_GET_REPLY=1
    fi
  fi
  return 0
}

# One module: recv.c against a build's headers, linked with its static
# libmongoc and libbson, every symbol of theirs kept inside the module.
defines=(-DMONGOC_COMPILATION -DBSON_COMPILATION -DMONGOC_STATIC -DBSON_STATIC
  -DMCOMMON_NAME_PREFIX=_mongoc_mcommon -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE)
module() {  # SIDE
  local side=$1
  # The system libraries the static libmongoc needs: the usual set of a
  # Debian build.
  local libs="-lssl -lcrypto -lsasl2 -lsnappy -lzstd -lz -lresolv -lpthread -lm -lrt"
  # shellcheck disable=SC2046
  cc -std=c99 -O2 -g -fPIC -shared -fvisibility=hidden $(series_calls "$side") "${defines[@]}" \
    $(get L_INC "$side") "$top/bench/fork/recv.c" -o "$out/recv-$side.so" \
    -Wl,--exclude-libs,ALL -Wl,--no-undefined $(get L_LIBS "$side") $libs
}
module unpatched
module patched
note "patched module: $(series_calls patched | tr '\n' ' ')"

# --- 1. Time, allocations, outputs ----------------------------------------------------------

[ $# -gt 0 ] || set -- --cpu-time
"$runner" --unpatched "$out/recv-unpatched.so" --patched "$out/recv-patched.so" "$@" | tee "$out/fork-bench.txt"
summary=$(grep '^fork-bench summary:' "$out/fork-bench.txt" | tail -n 1)
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' <<<"$summary"; }

# --- 2. Instructions per reply (callgrind) ----------------------------------------------------

# callgrind SIDE CASE: fork-bench on SIDE's module alone, CASE only, collecting
# inside fork_bench_measured(); prints the instructions per operation and
# leaves the per-function profile in $out/callgrind-SIDE-CASE.txt.
calls=2000
callgrind() {
  local side=$1 case=$2 raw=$out/callgrind-$1-$2.out
  rm -f "$raw"
  valgrind --tool=callgrind --callgrind-out-file="$raw" --toggle-collect=fork_bench_measured \
    "$runner" --unpatched "$out/recv-$side.so" --patched "$out/recv-$side.so" --case "$case" \
    --instructions "$calls" >/dev/null 2>"$out/callgrind-$side-$case.log" ||
    die "callgrind failed on the $side build (log: $out/callgrind-$side-$case.log)"
  callgrind_annotate --inclusive=no --threshold=100 --auto=no "$raw" >"$out/callgrind-$side-$case.txt" 2>/dev/null
  awk -v n=$((2 * calls)) '/^(summary|totals):/ { printf "%.0f\n", $2 / n; exit }' "$raw"
}
plain_i="-"
ins_unpatched="-" ins_patched="-"
have_callgrind=0
if [ "${FORK_BENCH_NO_CALLGRIND:-0}" != 1 ] && command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null; then
  have_callgrind=1
  ins_unpatched=$(callgrind unpatched reply_small)
  ins_patched=$(callgrind patched reply_small)
  callgrind unpatched reply_seq101 >/dev/null
  callgrind patched reply_seq101 >/dev/null
  plain_i=$(awk -v a="$ins_unpatched" -v b="$ins_patched" 'BEGIN { printf "%+.1f", (b - a) * 100 / a }')
  echo
  echo "Instructions per reply_small receive (callgrind, fork_bench_measured() / $((2 * calls))): unpatched $ins_unpatched, patched $ins_patched, $plain_i %"
else
  note "no valgrind (apt-get install valgrind): instructions not counted, stack frames of the fixed list only"
fi

# --- 3. Stack frames on the receive path (-fstack-usage) -----------------------------------------

# path_functions SIDE CASE: the functions of the three files that callgrind saw
# run for CASE, one a line.
path_functions() {
  local side=$1 case=$2
  {
    echo _mongoc_cluster_run_opmsg_recv
    echo mongoc_cluster_run_opmsg
    if [ "$have_callgrind" = 1 ]; then
      sed -n 's/.*\/\(mcd-rpc\|mongoc-rpc\|mongoc-cluster\)\.c:\([A-Za-z0-9_]*\).*/\2/p' \
        "$out/callgrind-$side-$case.txt"
    else
      printf '%s\n' mcd_rpc_message_reset mcd_rpc_message_from_data_in_place \
        mcd_rpc_message_from_data_in_place_with_error mcd_rpc_message_ingress mcd_rpc_message_get_body \
        mcd_rpc_message_get_reply mcd_rpc_message_copy_reply mcd_rpc_message_decompress_if_necessary \
        mcd_rpc_message_decompress
    fi
  } | sort -u
}
# stack SIDE: compiles the three files with -fstack-usage; prints "BYTES FUNCTION"
# of the largest frame on the path of a reply without sequences (reply_small),
# then that of a reply with them (reply_seq101), and lists the frames in
# $out/stack-SIDE.txt and $out/stack-SIDE-seq101.txt.
stack() {
  local side=$1 d=$out/stack-$1 f src c
  rm -rf "$d"
  mkdir -p "$d"
  src=$(get L_SRC "$side")
  # mongoc-counters-private.h includes mongoc/mongoc-counters.defs, which a
  # staging of the build's headers (*.h) does not hold.
  mkdir -p "$d/mongoc"
  $src"src/libmongoc/src/mongoc/mongoc-counters.defs" >"$d/mongoc/mongoc-counters.defs" ||
    die "$side build: no mongoc-counters.defs"
  for f in mcd-rpc mongoc-rpc mongoc-cluster; do
    $src"src/libmongoc/src/mongoc/$f.c" >"$d/$f.c" || die "$side build: no $f.c"
    # shellcheck disable=SC2046
    (cd "$d" && cc -std=c99 -O2 -g -DNDEBUG -fPIC -fstack-usage "${defines[@]}" \
      -I"$(get L_HDR "$side")" $(get L_INC "$side") -I"$d" -c "$f.c" -o "$f.o") ||
      die "$side build: $f.c does not compile for -fstack-usage"
  done
  for c in reply_small reply_seq101; do
    local list=$out/stack-$side.txt
    [ "$c" = reply_small ] || list=$out/stack-$side-seq101.txt
    path_functions "$side" "$c" >"$d/path-$c.txt"
    # .su lines: FILE:LINE:COL:FUNCTION<TAB>BYTES<TAB>QUALIFIERS
    awk -F'\t' 'NR == FNR { on[$1] = 1; next }
                { n = split($1, a, ":"); fn = a[n]; if (fn in on) printf "%d %s %s\n", $2, fn, $3 }' \
      "$d/path-$c.txt" "$d"/*.su | sort -rn >"$list"
    head -n 1 "$list" | awk '{ printf "%s %s ", $1, $2 }'
  done
  echo
}
stack unpatched >"$out/stack-unpatched.max" || exit 2
stack patched >"$out/stack-patched.max" || exit 2
read -r stack_unpatched fn_unpatched seq_stack_unpatched seq_fn_unpatched <"$out/stack-unpatched.max"
read -r stack_patched fn_patched seq_stack_patched seq_fn_patched <"$out/stack-patched.max"
[ -n "${stack_unpatched:-}" ] && [ -n "${stack_patched:-}" ] || die "no stack frame of the receive path found"
stack_y=$((stack_patched - stack_unpatched))
echo "Largest stack frame on the receive path of a reply without sequences (-fstack-usage, -O2): unpatched $stack_unpatched B ($fn_unpatched), patched $stack_patched B ($fn_patched), $(printf '%+d' "$stack_y") B"
echo "  with sequences (reply_seq101): unpatched ${seq_stack_unpatched:-?} B (${seq_fn_unpatched:-?}), patched ${seq_stack_patched:-?} B (${seq_fn_patched:-?})"
echo "  (frames per function: $out/stack-{unpatched,patched}{,-seq101}.txt)"

# --- Targets and the last line -------------------------------------------------------------------

plain_x=$(field plain_ns)
seq_z=$(field seq101_x)
started_w=$(field started_x)
allocs_a=$(field allocations)
verdict() { if awk "BEGIN { exit !($1) }"; then echo PASS; else echo MISS; fi; }
echo
echo "Targets of issue 33 (patched against unpatched):"
[ "$plain_x" = - ] || echo "$(verdict "$plain_x <= 8 && $plain_x >= -8")  reply without sequences: time within 8 ns: $plain_x ns"
[ "$plain_i" = - ] || echo "$(verdict "$plain_i <= 0")  reply without sequences: no more instructions: $plain_i %"
echo "$(verdict "$stack_y <= 128")  largest stack frame on the receive path within 128 B: $(printf '%+d' "$stack_y") B"
seq_merged=0
[ "$(field seq101_output)" != merged ] || seq_merged=1
[ "$seq_z" = - ] || echo "$(verdict "$seq_z <= 6 && $seq_merged")  reply_seq101 merged in at most 6x the body's unpatched time: ${seq_z}x ($(field seq101_output))"
[ "$started_w" = - ] || echo "$(verdict "$started_w >= 3 && $allocs_a <= 2")  command-started event at least 3x faster in at most 2 allocations: ${started_w}x, $allocs_a"
echo "fork bench: plain $plain_x ns ($plain_i % instructions), stack $(printf '%+d' "$stack_y") B, seq101 $seq_z x body, started $started_w x, allocations $allocs_a"
