#!/bin/bash
# Builds the libFuzzer target of the reply path (src/libmongoc/fuzz/, added
# by the fork's PR 4, 4-fuzz) from a patched mongo-c-driver tree with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer (upstream's MONGO_FUZZ=ON),
# seeded by the *.bin messages under SEED_DIR (given to the build as the
# cache variable FUZZ_RPC_REPLY_CORPUS), and runs it the two ways:
#  1. `ctest -L fuzz`: the CTest test PR 4 registers (mongoc/fuzz/rpc-reply,
#     label fuzz: 200,000 inputs, seed 1), what an upstream CI task calls;
#  2. libFuzzer for SECONDS more on the corpus the first run grew (0: not).
# Each input goes parse -> mcd_rpc_message_to_iovecs() (the bytes written
# back must be the input's) -> ingress -> decompress -> body. Prints one line:
#
#   fork fuzz: target T, seeds K, ctest -L fuzz runs R1 (passed|failed), libFuzzer seconds S runs R2, crashes C
#
# Usage: scripts/fork-fuzz.sh TREE SECONDS SEED_DIR [NAME]
#        scripts/fork-fuzz.sh --edit [--source DIR] SECONDS SEED_DIR [NAME]
#
# TREE      a mongo-c-driver tree carrying PR 4
# --edit    (make fork-fuzz) TREE is made first: build/fork/fuzz-src, a fresh
#           scripts/fork-patches.sh --edit clone (--source: of DIR's tree) at
#           its branch 4-fuzz
# SECONDS   how long the second run lasts (-max_total_time); 0 for none
# SEED_DIR  a folder of seed inputs; every *.bin file under it is a seed
#           (tests/data/conformance: the conformance vectors)
# NAME      build and work folder name under build/fork/ (default fuzz-pr4):
#           build/fork/NAME-build (the build), build/fork/NAME-run (the
#           seeds, the logs, and any crash-* file)
#
# Exit status: 0 when both runs found nothing, 1 when one found a crash (or
# the CTest test failed), 2 on a usage or build error. Environment: TARGET
# (default fuzz-rpc-reply), JOBS (ninja -j, default 2).
set -euo pipefail

usage() { sed -n '2,31p' "$0" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --edit ]; then
  shift
  edit_args=()
  if [ "${1:-}" = --source ]; then edit_args=(--source "${2:?--source needs a folder}"); shift 2; fi
  [ $# -ge 2 ] || usage
  rm -rf "$top/build/fork/fuzz-src"
  "$top/scripts/fork-patches.sh" --edit --edit-dir "$top/build/fork/fuzz-src" "${edit_args[@]}"
  git -C "$top/build/fork/fuzz-src" checkout -q 4-fuzz
  set -- "$top/build/fork/fuzz-src" "$@"
fi
[ $# -ge 3 ] || usage
tree=$(cd "$1" && pwd) || usage
seconds=$2
seeds=$(cd "$3" && pwd) || usage
name=${4:-fuzz-pr4}
target=${TARGET:-fuzz-rpc-reply}
build=$top/build/fork/$name-build
run=$top/build/fork/$name-run

case $seconds in ''|*[!0-9]*) echo "fork-fuzz.sh: SECONDS must be a number" >&2; exit 2 ;; esac
[ -f "$tree/src/libmongoc/fuzz/CMakeLists.txt" ] || {
  echo "fork-fuzz.sh: $tree has no src/libmongoc/fuzz/ (is PR 4 applied?)" >&2; exit 2; }
command -v clang >/dev/null && command -v clang++ >/dev/null || {
  echo "fork-fuzz.sh: clang and clang++ are needed (apt-get install clang)" >&2; exit 2; }

# The seeds: every *.bin message under SEED_DIR, one folder.
rm -rf "$run"
mkdir -p "$run/seeds" "$run/artifacts"
find -L "$seeds" -type f -name '*.bin' -print0 |
  while IFS= read -r -d '' f; do
    cp "$f" "$run/seeds/$(echo "${f#"$seeds"/}" | tr '/' '_')"
  done
nseeds=$(find "$run/seeds" -type f | wc -l)
[ "$nseeds" -gt 0 ] || { echo "fork-fuzz.sh: no *.bin seeds under $seeds" >&2; exit 2; }

# (Configured every time: FUZZ_RPC_REPLY_CORPUS is copied into the build
# tree's corpus at configure time.)
rm -rf "$build/src/libmongoc/fuzz/rpc-reply-corpus"
ccache=$(command -v ccache || true)
cmake -S "$tree" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DMONGO_FUZZ=ON \
  -DENABLE_STATIC=ON -DENABLE_SHARED=OFF -DENABLE_TESTS=OFF -DENABLE_EXAMPLES=OFF \
  -DENABLE_MAN_PAGES=OFF -DENABLE_HTML_DOCS=OFF -DENABLE_SSL=OFF -DENABLE_SASL=OFF \
  -DENABLE_SRV=OFF -DENABLE_ZLIB=SYSTEM -DENABLE_SNAPPY=ON -DENABLE_ZSTD=ON \
  -DENABLE_CLIENT_SIDE_ENCRYPTION=OFF -DFUZZ_RPC_REPLY_CORPUS="$run/seeds" \
  ${ccache:+-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache} \
  >"$build.cmake.log" 2>&1 || { tail -20 "$build.cmake.log" >&2; exit 2; }
nice -n 10 ninja -C "$build" -j"${JOBS:-2}" "$target" >"$build.ninja.log" 2>&1 || {
  tail -30 "$build.ninja.log" >&2; exit 2; }
bin=$(find "$build" -type f -name "$target" -perm -u+x | head -1)
[ -n "$bin" ] || { echo "fork-fuzz.sh: $target was not built" >&2; exit 2; }

# 1. The CTest test, as CI upstream would call it.
ctest_rc=0
(cd "$build" && ctest -L fuzz -V --timeout 1800 --no-tests=error) >"$run/ctest.log" 2>&1 || ctest_rc=$?
ctest_runs=$(sed -n 's/.*Done \([0-9]*\) runs in .*/\1/p' "$run/ctest.log" | tail -1)
ctest_word=passed
[ "$ctest_rc" -eq 0 ] || ctest_word=failed
crashes=$(grep -c "ERROR: libFuzzer\|ERROR: AddressSanitizer\|runtime error:\|Assert\|deadly signal" "$run/ctest.log" || true)

# 2. libFuzzer for SECONDS more, on the corpus the CTest run grew.
rc=0 runs=0 secs=0
if [ "$seconds" -gt 0 ]; then
  mkdir -p "$run/corpus"
  "$bin" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$run/artifacts/" \
    -timeout=10 -rss_limit_mb=2048 "$run/corpus" "$build/src/libmongoc/fuzz/rpc-reply-corpus" \
    >"$run/fuzz.log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$run/fuzz.log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$run/fuzz.log" | tail -1)
fi
found=$(find "$run/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
crashes=$((crashes + found))
if [ "$rc" -ne 0 ] && [ "$found" -eq 0 ]; then
  crashes=$((crashes + 1)) # libFuzzer stopped on an error without writing an input
fi
echo "fork fuzz: target $target, seeds $nseeds, ctest -L fuzz runs ${ctest_runs:-0} ($ctest_word)," \
  "libFuzzer seconds ${secs:-$seconds} runs ${runs:-0}, crashes $crashes"
[ "$crashes" -eq 0 ] && [ "$ctest_rc" -eq 0 ]
