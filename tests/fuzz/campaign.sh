#!/bin/bash
# The long campaign: each target, one at a time, until it has run
# CAMPAIGN_RUNS executions (default 10 million) or CAMPAIGN_SECONDS seconds
# (default 3600: the project's policy is 10 million or an hour), whichever
# comes first. Unlike `make fuzz`, a finding does not end the target's run:
# the reproducer is kept and libFuzzer is started again on the grown corpus
# with what is left of the budget, so one shallow bug cannot hide the
# others. A work directory (CAMPAIGN_WORK) that already holds a corpus is
# continued. Prints one summary line per target (executions, seconds, final
# cov/ft, findings) for docs/fuzzing.md.
#
# Usage: tests/fuzz/campaign.sh [TARGET...]   (after `make fuzz-build`)
set -eu
cd "$(dirname "$0")/../.."

build=${FUZZ_BUILD:-build-fuzz}
runs_budget=${CAMPAIGN_RUNS:-10000000}
time_budget=${CAMPAIGN_SECONDS:-3600}
work=${CAMPAIGN_WORK:-$build/campaign}
targets=$*
if [ -z "$targets" ]; then
  for src in tests/fuzz/fuzz_*.c; do targets="$targets $(basename "$src" .c)"; done
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

for t in $targets; do
  bin=$build/tests/fuzz/$t
  w=$work/$t
  mkdir -p "$w/corpus" "$w/artifacts"
  for f in tests/fuzz/corpus/"$t"/* tests/fuzz/regressions/"$t"/*; do
    case $(basename "$f") in README*) continue ;; esac
    [ -f "$f" ] && cp "$f" "$w/corpus/"
  done
  dict=tests/fuzz/$t.dict
  [ -f "$dict" ] || dict=tests/fuzz/opmsg.dict
  execs=0 start=$(date +%s) segment=0 last=""
  while :; do
    elapsed=$(($(date +%s) - start))
    left_time=$((time_budget - elapsed))
    left_runs=$((runs_budget - execs))
    [ "$left_time" -le 0 ] || [ "$left_runs" -le 0 ] && break
    segment=$((segment + 1))
    log=$w/log.$segment
    rc=0
    "$bin" -max_total_time="$left_time" -runs="$left_runs" -timeout=30 \
      -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 \
      -artifact_prefix="$w/artifacts/" -dict="$dict" "$w/corpus" >"$log" 2>&1 || rc=$?
    n=$(grep -Eo 'stat::number_of_executed_units: [0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -n 1)
    execs=$((execs + ${n:-0}))
    cov=$(grep -E '^#[0-9]+.*cov:' "$log" | tail -n 1)
    [ -n "$cov" ] && last=$cov
    if [ "$rc" -ne 0 ]; then
      echo "$t: segment $segment ended with a finding (exit $rc):"
      grep -E 'property failure|SUMMARY|ERROR: libFuzzer: (out-of-memory|timeout)' "$log" | head -n 3
    fi
    [ "$rc" -eq 0 ] && break
  done
  elapsed=$(($(date +%s) - start))
  findings=$(find "$w/artifacts" -type f | wc -l)
  covft=$(echo "$last" | grep -Eo 'cov: [0-9]+ ft: [0-9]+' || true)
  echo "CAMPAIGN $t: $execs executions in $elapsed s, ${covft:-no coverage line}, $findings finding(s) in $w/artifacts"
done
