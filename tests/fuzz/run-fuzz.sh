#!/bin/bash
# Runs each built libFuzzer target for FUZZ_SECONDS (and at most FUZZ_RUNS
# executions when set), one after the other, on a copy of its committed
# corpus and regressions. Prints libFuzzer's final "Done N runs in S
# second(s)" line and the last coverage line per target. Exits 1 when a
# target crashed, leaked, timed out or broke a property, printing where the
# reproducer is. CTest runs it per target (fuzz.smoke.*, preset fuzz: `make fuzz`); see docs/fuzzing.md.
# Usage: tests/fuzz/run-fuzz.sh   (FUZZ_BUILD, FUZZ_SECONDS, FUZZ_RUNS, FUZZ_TARGETS, FUZZ_WORK, FUZZ_ARGS)
set -eu
cd "$(dirname "$0")/../.."

build=${FUZZ_BUILD:-build-fuzz}
seconds=${FUZZ_SECONDS:-30}
runs=${FUZZ_RUNS:-}
targets=${FUZZ_TARGETS:-}
work=${FUZZ_WORK:-$build/fuzz-work}
if [ -z "$targets" ]; then
  for src in tests/fuzz/fuzz_*.c; do
    [ -f "$src" ] && targets="$targets $(basename "$src" .c)"
  done
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
for t in $targets; do
  bin=$build/tests/fuzz/$t
  if [ ! -x "$bin" ]; then
    echo "fuzz: $t: $bin is not built"
    status=1
    continue
  fi
  w=$work/$t
  rm -rf "$w"
  mkdir -p "$w/corpus" "$w/artifacts"
  for f in tests/fuzz/corpus/"$t"/* tests/fuzz/regressions/"$t"/*; do
    case $(basename "$f") in README*) continue ;; esac
    [ -f "$f" ] && cp "$f" "$w/corpus/"
  done
  dict=tests/fuzz/$t.dict
  [ -f "$dict" ] || dict=tests/fuzz/opmsg.dict
  args=(-max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -malloc_limit_mb=512
        -print_final_stats=1 -artifact_prefix="$w/artifacts/" -dict="$dict")
  [ -n "$runs" ] && args+=(-runs="$runs")
  # shellcheck disable=SC2086
  rc=0
  "$bin" "${args[@]}" ${FUZZ_ARGS:-} "$w/corpus" >"$w/log" 2>&1 || rc=$?
  final=$(grep -E '^Done [0-9]+ runs' "$w/log" | tail -n 1)
  last=$(grep -E '^#[0-9]+.*cov:' "$w/log" | tail -n 1)
  echo "$t: ${final:-(no final line: libFuzzer stopped early)}"
  echo "$t: ${last:-(no coverage line)}"
  repro=$(find "$w/artifacts" -type f | sort)
  if [ "$rc" -ne 0 ] || [ -n "$repro" ]; then
    status=1
    echo "FINDING in $t (exit $rc); log: $w/log"
    grep -E 'ERROR|SUMMARY|property failure|==[0-9]+==' "$w/log" | head -n 20
    for r in $repro; do
      echo "reproducer: $(realpath "$r")"
      echo "  replay:   $bin $(realpath "$r")"
      echo "  keep it:  cp $(realpath "$r") tests/fuzz/regressions/$t/"
    done
  fi
done
exit $status
