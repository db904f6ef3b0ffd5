#!/bin/sh
# bench/report.sh - runs opmsg-bench, charts it, and refreshes the results in
# docs/benchmarks.md. `make bench-report` calls it after building.
#
#   bench/report.sh [BUILD_DIR]        (default: build)
#
# Writes BUILD_DIR/bench-report/{results.jsonl,summary.txt,main.dat,extra.dat}
# then docs/bench.png (gnuplot, png terminal) and the part of
# docs/benchmarks.md between the bench-report markers.
# OPMSG_BENCH_ARGS gives opmsg-bench's options (default "--cpu-time": the
# thread's CPU time, which equals wall time on an idle machine and leaves out
# the time other jobs hold the CPU on a busy one; "--quick" for a fast run).
set -eu
: "${OPMSG_BENCH_ARGS=--cpu-time}"

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

echo "report.sh: running opmsg-bench --json ${OPMSG_BENCH_ARGS} (about a minute)" >&2
# shellcheck disable=SC2086 # OPMSG_BENCH_ARGS is a list of options
"$bench" --json ${OPMSG_BENCH_ARGS} >"$out/results.jsonl" 2>"$out/summary.txt"

# The lines are opmsg-bench's own fixed format:
# {"case": "seq", "impl": "merge_into", "ns_per_op": 123.4, "bytes_out": 11293, "allocs_per_op": 0}
# Split on the quotes: $4 is the case, $8 the impl, $11, $13 and $15 hold the
# numbers. Each case is compared with its limit: decompress for the
# compressed cases, memcpy for the others.
tsv=$out/results.tsv
awk -F'"' '
   /^\{"case"/ {
      ns = $11; gsub(/[^0-9.]/, "", ns)
      bytes = $13; gsub(/[^0-9]/, "", bytes)
      allocs = $15; gsub(/[^0-9.]/, "", allocs)
      printf "%s\t%s\t%s\t%s\t%s\n", $4, $8, ns, bytes, allocs
   }' "$out/results.jsonl" >"$tsv"

# Gnuplot data: one row per case, one column per implementation, each value
# the time relative to the case's limit ("-" where an impl does not apply).
matrix() { # $1: cases, $2: impls, $3: file
   awk -F'\t' -v cases="$1" -v impls="$2" '
      { ns[$1 "/" $2] = $3 }
      END {
         nc = split(cases, c, " "); ni = split(impls, m, " ")
         printf "case"; for (j = 1; j <= ni; j++) printf "\t%s", m[j]; printf "\n"
         for (i = 1; i <= nc; i++) {
            base = (c[i] ~ /_zstd$|_snappy$/) ? "decompress" : "memcpy"
            b = ns[c[i] "/" base]
            if (b == "") continue
            printf "%s", c[i]
            for (j = 1; j <= ni; j++) {
               v = ns[c[i] "/" m[j]]
               if (v == "") printf "\t-"; else printf "\t%.4g", v / b
            }
            printf "\n"
         }
      }' "$tsv" >"$3"
}
matrix "flat deep seq big" \
   "memcpy alloc_copy merge_into view merge_bson mongoc_append reencode_libbson" "$out/main.dat"
matrix "big_zstd big_snappy encode" \
   "memcpy decompress decompress_merge merge_compressed encode_split" "$out/extra.dat"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
cores=$(nproc 2>/dev/null || echo "?")
case " $OPMSG_BENCH_ARGS " in
*" --cpu-time "*) clock="thread CPU time" ;;
*) clock="wall time" ;;
esac
title="opmsg-bench, ${cpu:-unknown CPU}, $cores cores, $clock"
# A panel is drawn only when its file has a row besides the header.
has_main=$(($(wc -l <"$out/main.dat") > 1))
has_extra=$(($(wc -l <"$out/extra.dat") > 1))
if [ "$has_main" = 0 ] && [ "$has_extra" = 0 ]; then
   echo "report.sh: nothing to chart (no memcpy or decompress measured)" >&2
   exit 1
fi
gnuplot -e "main='$out/main.dat'; extra='$out/extra.dat'; out='$png'; subtitle='$title'; has_main=$has_main; has_extra=$has_extra" \
   "$src/bench/plot.gp"
echo "report.sh: wrote $png" >&2

# The markdown table and the summary, spliced between the markers.
table=$out/table.md
{
   echo "Measured $(date -u +%Y-%m-%d) on $cpu ($cores cores, $(uname -sr))," \
      "libbson $(pkg-config --modversion libbson-1.0 2>/dev/null || pkg-config --modversion bson2 2>/dev/null || echo '?')," \
      "with \`opmsg-bench ${OPMSG_BENCH_ARGS}\`:"
   echo
   echo "| case | impl | ns/op | x limit | bytes_out | allocs/op |"
   echo "|---|---|---:|---:|---:|---:|"
   awk -F'\t' '
      # 1234567.8 -> "1,234,567" (one decimal is kept below 1000 when dec)
      function group(v, dec,    s, ip, rest) {
         s = (dec && v < 1000) ? sprintf("%.1f", v) : sprintf("%.0f", v)
         ip = s; rest = ""
         if (index(s, ".")) { ip = substr(s, 1, index(s, ".") - 1); rest = substr(s, index(s, ".")) }
         while (length(ip) > 3) { rest = "," substr(ip, length(ip) - 2) rest; ip = substr(ip, 1, length(ip) - 3) }
         return ip rest
      }
      { row[NR] = $0; ns[$1 "/" $2] = $3 }
      END {
         for (i = 1; i <= NR; i++) {
            split(row[i], f, "\t")
            if (f[1] == "crc32c") continue # in the summary, as GB/s
            base = (f[1] ~ /_zstd$|_snappy$/) ? "decompress" : "memcpy"
            b = ns[f[1] "/" base]
            x = (b != "" && b > 0) ? sprintf("%.2f", f[3] / b) : ""
            printf "| %s | %s | %s | %s | %s | %s |\n", f[1], f[2], group(f[3], 1), x, group(f[4], 0), f[5]
         }
      }' "$tsv"
   echo
   echo '```'
   cat "$out/summary.txt"
   echo '```'
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
