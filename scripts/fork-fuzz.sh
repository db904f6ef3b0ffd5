#!/bin/bash
# Builds the libFuzzer target of the reply path (src/libmongoc/fuzz/, added
# by the fork's PR 2) from a patched mongo-c-driver tree with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer (upstream's MONGO_FUZZ=ON),
# runs it for SECONDS on a copy of a seed corpus, and prints one line:
#
#   fork fuzz: target T, seconds S, runs R, crashes C
#
#   scripts/fork-fuzz.sh TREE SECONDS SEED_DIR [NAME]
#
# TREE      a mongo-c-driver tree carrying PR 2 (e.g. build/fork/wt-pr2)
# SECONDS   how long libFuzzer runs (-max_total_time)
# SEED_DIR  a folder of seed inputs; every *.bin file under it is a seed
# NAME      build and work folder name under build/fork/ (default fuzz-pr2):
#           build/fork/NAME-build (the build), build/fork/NAME-run (the
#           corpus it grows, its log, and any crash-* file)
#
# Exit status: 0 when the run found nothing, 1 when it found a crash, 2 on a
# usage or build error. Environment: TARGET (default fuzz-rpc-reply), JOBS
# (ninja -j, default 2).
set -euo pipefail

usage() { sed -n '2,21p' "$0" >&2; exit 2; }
[ $# -ge 3 ] || usage
tree=$(cd "$1" && pwd) || usage
seconds=$2
seeds=$(cd "$3" && pwd) || usage
name=${4:-fuzz-pr2}
target=${TARGET:-fuzz-rpc-reply}
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build/fork/$name-build
run=$top/build/fork/$name-run

case $seconds in ''|*[!0-9]*) echo "fork-fuzz.sh: SECONDS must be a number" >&2; exit 2 ;; esac
[ -f "$tree/src/libmongoc/fuzz/CMakeLists.txt" ] || {
  echo "fork-fuzz.sh: $tree has no src/libmongoc/fuzz/ (is PR 2 applied?)" >&2; exit 2; }
command -v clang >/dev/null && command -v clang++ >/dev/null || {
  echo "fork-fuzz.sh: clang and clang++ are needed (apt-get install clang)" >&2; exit 2; }

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$tree" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DMONGO_FUZZ=ON \
    -DENABLE_STATIC=ON -DENABLE_SHARED=OFF -DENABLE_TESTS=OFF -DENABLE_EXAMPLES=OFF \
    -DENABLE_MAN_PAGES=OFF -DENABLE_HTML_DOCS=OFF -DENABLE_SSL=OFF -DENABLE_SASL=OFF \
    -DENABLE_SRV=OFF -DENABLE_ZLIB=SYSTEM -DENABLE_SNAPPY=ON -DENABLE_ZSTD=ON \
    -DENABLE_CLIENT_SIDE_ENCRYPTION=OFF >"$build.cmake.log" 2>&1 || {
    tail -20 "$build.cmake.log" >&2; exit 2; }
fi
nice -n 10 ninja -C "$build" -j"${JOBS:-2}" "$target" >"$build.ninja.log" 2>&1 || {
  tail -30 "$build.ninja.log" >&2; exit 2; }
bin=$(find "$build" -type f -name "$target" -perm -u+x | head -1)
[ -n "$bin" ] || { echo "fork-fuzz.sh: $target was not built" >&2; exit 2; }

rm -rf "$run"
mkdir -p "$run/corpus" "$run/seeds" "$run/artifacts"
find -L "$seeds" -type f -name '*.bin' -print0 |
  while IFS= read -r -d '' f; do
    cp "$f" "$run/seeds/$(echo "${f#"$seeds"/}" | tr '/' '_')"
  done

rc=0
"$bin" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$run/artifacts/" \
  -timeout=10 -rss_limit_mb=2048 "$run/corpus" "$run/seeds" >"$run/fuzz.log" 2>&1 || rc=$?

runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$run/fuzz.log" | tail -1)
secs=$(sed -n 's/^stat::number_of_executed_units.*//; s/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$run/fuzz.log" | tail -1)
crashes=$(find "$run/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
  crashes=1 # libFuzzer stopped on an error without writing an input
fi
echo "fork fuzz: target $target, seconds ${secs:-$seconds}, runs ${runs:-0}, crashes $crashes"
[ "$crashes" -eq 0 ]
