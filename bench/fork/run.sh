#!/bin/bash
# bench/fork/run.sh [FORK-BENCH OPTIONS]
#
# The fork's benchmark (`make bench-fork`, docs/benchmarks.md): builds
# bench/fork/recv.c into one module per build of mongo-c-driver master that
# scripts/fork-check.sh left in build/fork/master/ (unpatched/ and
# patched/: their private headers and static libraries), then runs
# fork-bench (the project's build, build/bench/fork-bench) on both, with
# --cpu-time unless other options are given.
#
# Environment: FORK_WORK (default build/fork/master), BUILD (the project's
# build directory, default build).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
work=${FORK_WORK:-$top/build/fork/master}
build=${BUILD:-$top/build}
out=$top/build/fork/bench
runner=$build/bench/fork-bench

[ -f "$build/CMakeCache.txt" ] || { echo "bench-fork: no build in $build (make first)" >&2; exit 2; }
cmake --build "$build" --target fork-bench >/dev/null ||
  { echo "bench-fork: fork-bench does not build" >&2; exit 2; }
mkdir -p "$out"

# One module: recv.c against a build's headers, linked with its static
# libmongoc and libbson, every symbol of theirs kept inside the module.
module() {  # SIDE [DEFINE...]
  local side=$1 a=$work/$1 libs
  shift
  [ -f "$a/lib/libmongoc2.a" ] || { echo "bench-fork: no $a/lib/libmongoc2.a (scripts/fork-check.sh --build-only)" >&2; exit 2; }
  # The system libraries the static libmongoc needs, from its pkg-config
  # file when there is one, else the usual set of a Debian build.
  libs="-lssl -lcrypto -lsasl2 -lsnappy -lzstd -lz -lresolv -lpthread -lm -lrt"
  cc -std=c99 -O2 -g -fPIC -shared -fvisibility=hidden "$@" \
    -DMONGOC_COMPILATION -DBSON_COMPILATION -DMONGOC_STATIC -DBSON_STATIC \
    -DMCOMMON_NAME_PREFIX=_mongoc_mcommon -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE \
    -I"$a/headers/build/src" -I"$a/headers/build/src/common/src" \
    -I"$a/headers/build/src/libbson/src" -I"$a/headers/build/src/libmongoc/src" \
    -I"$a/headers/tree/src/common/src" -I"$a/headers/tree/src/libbson/src" \
    -I"$a/headers/tree/src/libmongoc/src" \
    "$top/bench/fork/recv.c" -o "$out/recv-$side.so" \
    -Wl,--exclude-libs,ALL -Wl,--no-undefined "$a/lib/libmongoc2.a" "$a/lib/libbson2.a" $libs
}
# The calls of the receive path the series changes, as its headers
# declare them (recv.c follows them).
series_calls() {  # SIDE -> -D options
  local h=$work/$1/headers/tree/src/libmongoc/src/mongoc/mongoc-rpc-private.h
  grep -q 'mcd_rpc_message_ingress(const mcd_rpc_message \*rpc, bson_error_t \*error)' "$h" &&
    echo -DFORK_BENCH_INGRESS_ERROR
  grep -q '^mcd_rpc_message_copy_reply(' "$h" && echo -DFORK_BENCH_COPY_REPLY
  return 0
}
# shellcheck disable=SC2046
module unpatched $(series_calls unpatched)
# shellcheck disable=SC2046
module patched $(series_calls patched)
echo "bench-fork: patched module: $(series_calls patched | tr '\n' ' ')" >&2
[ $# -gt 0 ] || set -- --cpu-time
exec "$runner" --unpatched "$out/recv-unpatched.so" --patched "$out/recv-patched.so" "$@"
