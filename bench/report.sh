#!/bin/sh
# bench/report.sh - runs opmsg-bench, charts it, and refreshes the results in
# docs/benchmarks.md. `make bench-report` calls it after building.
#
# Usage: bench/report.sh [BUILD_DIR]   (default: build)
#
# Writes BUILD_DIR/bench-report/{results.jsonl,summary.txt,main.dat,extra.dat}
# then docs/bench.png (gnuplot, png terminal) and the part of
# docs/benchmarks.md between the bench-report markers.
# OPMSG_BENCH_ARGS gives opmsg-bench's options (default "--cpu-time": the
# thread's CPU time, which equals wall time on an idle machine and leaves out
# the time other jobs hold the CPU on a busy one; "--quick" for a fast run).
# OPMSG_BENCH_CHART_CHECK is the check level the chart shows for the
# implementations that parse with opmsg (default top-level; the table has
# every level).
set -eu
: "${OPMSG_BENCH_ARGS=--cpu-time}"
: "${OPMSG_BENCH_CHART_CHECK=top-level}"

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in
/*) ;;
*) build=$src/$build ;;
esac
bench=$build/bench/opmsg-bench
out=$build/bench-report
doc=$src/docs/benchmarks.md
png=$src/docs/bench.png

if [ ! -x "$bench" ]; then
   echo "report.sh: $bench is not built (run make first)" >&2
   exit 1
fi
command -v gnuplot >/dev/null 2>&1 || {
   echo "report.sh: gnuplot is missing (apt-get install gnuplot-nox)" >&2
   exit 1
}
mkdir -p "$out"

echo "report.sh: running opmsg-bench --json ${OPMSG_BENCH_ARGS} (a few minutes)" >&2
# shellcheck disable=SC2086 # OPMSG_BENCH_ARGS is a list of options
"$bench" --json ${OPMSG_BENCH_ARGS} >"$out/results.jsonl" 2>"$out/summary.txt"

# The result lines are opmsg-bench's own format, one object per line:
# {"case": "seq", "check": "spec", "impl": "merge_into", "ns_per_op": 123.4, "bytes_out": 11293, "allocs_per_op": 0}
# ("check" is null for an implementation that does not parse with opmsg);
# the {"target": ...} lines are the summary's, which is kept whole below.
# Fields are read by name. Each case is compared with its limit at the same
# level: decompress for the compressed cases, memcpy for the others.
tsv=$out/results.tsv
awk '
   function field(line, key,    v) {
      if (!match(line, "\"" key "\": (\"[^\"]*\"|[^,}]*)")) return ""
      v = substr(line, RSTART + length(key) + 4, RLENGTH - length(key) - 4)
      gsub(/^"|"$/, "", v)
      return v
   }
   /^\{"case"/ {
      check = field($0, "check"); if (check == "null" || check == "") check = "-"
      printf "%s\t%s\t%s\t%s\t%s\t%s\n", field($0, "case"), check, field($0, "impl"),
         field($0, "ns_per_op"), field($0, "bytes_out"), field($0, "allocs_per_op")
   }' "$out/results.jsonl" >"$tsv"

# Gnuplot data: one row per case, one column per implementation, each value
# the time relative to the case's limit ("-" where an impl does not apply),
# at the chart's check level (level-independent cells at every level).
matrix() { # $1: cases, $2: impls, $3: file
   awk -F'\t' -v cases="$1" -v impls="$2" -v level="$OPMSG_BENCH_CHART_CHECK" '
      { ns[$1 "/" $2 "/" $3] = $4 }
      function t(c, m) { return ((c "/" level "/" m) in ns) ? ns[c "/" level "/" m] : ns[c "/-/" m] }
      END {
         nc = split(cases, c, " "); ni = split(impls, m, " ")
         printf "case"; for (j = 1; j <= ni; j++) printf "\t%s", m[j]; printf "\n"
         for (i = 1; i <= nc; i++) {
            base = (c[i] ~ /_zstd$|_snappy$/) ? "decompress" : "memcpy"
            b = t(c[i], base)
            if (b == "") continue
            printf "%s", c[i]
            for (j = 1; j <= ni; j++) {
               v = t(c[i], m[j])
               if (v == "") printf "\t-"; else printf "\t%.4g", v / b
            }
            printf "\n"
         }
      }' "$tsv" >"$3"
}
main_impls="memcpy alloc_copy parse merge_into view merge_bson mongoc_append reencode_libbson libbson_validate"
extra_impls="memcpy decompress decompress_merge merge_compressed encode_split"
matrix "flat deep reply101 seq insert1k reply_plain reply_seq reply_next big" "$main_impls" "$out/main.dat"
matrix "big_zstd big_snappy encode" "$extra_impls" "$out/extra.dat"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
cores=$(nproc 2>/dev/null || echo "?")
case " $OPMSG_BENCH_ARGS " in
*" --cpu-time "*) clock="thread CPU time" ;;
*) clock="wall time" ;;
esac
title="opmsg-bench, ${cpu:-unknown CPU}, $cores cores, $clock, check level $OPMSG_BENCH_CHART_CHECK"
# A panel is drawn only when its file has a row besides the header.
has_main=$(($(wc -l <"$out/main.dat") > 1))
has_extra=$(($(wc -l <"$out/extra.dat") > 1))
if [ "$has_main" = 0 ] && [ "$has_extra" = 0 ]; then
   echo "report.sh: nothing to chart (no memcpy or decompress measured)" >&2
   exit 1
fi
main_cols=$(($(echo "$main_impls" | wc -w) + 1))
extra_cols=$(($(echo "$extra_impls" | wc -w) + 1))
gnuplot -e "main='$out/main.dat'; extra='$out/extra.dat'; out='$png'; subtitle='$title'; has_main=$has_main; has_extra=$has_extra; main_cols=$main_cols; extra_cols=$extra_cols" \
   "$src/bench/plot.gp"
echo "report.sh: wrote $png" >&2

# The markdown table and the summary, spliced between the markers.
table=$out/table.md
{
   echo "Measured $(date -u +%Y-%m-%d) on $cpu ($cores cores, $(uname -sr))," \
      "libbson $(pkg-config --modversion libbson-1.0 2>/dev/null || pkg-config --modversion bson2 2>/dev/null || echo '?')," \
      "with \`opmsg-bench ${OPMSG_BENCH_ARGS}\`:"
   echo
   echo "| case | check | impl | ns/op | x limit | bytes_out | allocs/op |"
   echo "|---|---|---|---:|---:|---:|---:|"
   awk -F'\t' '
      # 1234567.8 -> "1,234,567" (one decimal is kept below 1000 when dec)
      function group(v, dec,    s, ip, rest) {
         s = (dec && v < 1000) ? sprintf("%.1f", v) : sprintf("%.0f", v)
         ip = s; rest = ""
         if (index(s, ".")) { ip = substr(s, 1, index(s, ".") - 1); rest = substr(s, index(s, ".")) }
         while (length(ip) > 3) { rest = "," substr(ip, length(ip) - 2) rest; ip = substr(ip, 1, length(ip) - 3) }
         return ip rest
      }
      function t(c, l, m) { return ((c "/" l "/" m) in ns) ? ns[c "/" l "/" m] : ns[c "/-/" m] }
      { row[NR] = $0; ns[$1 "/" $2 "/" $3] = $4 }
      END {
         for (i = 1; i <= NR; i++) {
            split(row[i], f, "\t")
            if (f[1] == "crc32c") continue # in the summary, as GB/s
            base = (f[1] ~ /_zstd$|_snappy$/) ? "decompress" : "memcpy"
            b = t(f[1], f[2], base)
            x = (b != "" && b > 0) ? sprintf("%.2f", f[4] / b) : ""
            printf "| %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], f[3], group(f[4], 1), x, group(f[5], 0), f[6]
         }
      }' "$tsv"
   echo
   # The summary: its text as it is, its targets table (the lines that
   # start with "|") as a Markdown table after it.
   echo '```'
   grep -v '^|' "$out/summary.txt" || true
   echo '```'
   echo
   grep '^|' "$out/summary.txt" || true
} >"$table"

if [ -f "$doc" ] && grep -q '<!-- bench-report:begin -->' "$doc"; then
   awk -v table="$table" '
      /<!-- bench-report:begin -->/ {
         print; while ((getline line < table) > 0) print line; skip = 1; next
      }
      /<!-- bench-report:end -->/ { skip = 0 }
      !skip { print }' "$doc" >"$out/benchmarks.md"
   cp "$out/benchmarks.md" "$doc"
   echo "report.sh: refreshed the results in $doc" >&2
else
   echo "report.sh: no bench-report markers in $doc; the table is in $table" >&2
fi
