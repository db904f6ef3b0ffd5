# bench/plot.gp - the chart of docs/bench.png, drawn by bench/report.sh:
#   gnuplot -e "main='main.dat'; extra='extra.dat'; out='bench.png'; subtitle='...';
#               main_cols=N; extra_cols=M" plot.gp
# (main_cols, extra_cols: the last column of each file, the first being the case)
# Each data file has one row per case and one column per implementation,
# holding the time relative to the case's limit (memcpy, or decompress for
# the compressed cases); "-" where an implementation does not apply.

if (!exists("main")) main = 'main.dat'
if (!exists("extra")) extra = 'extra.dat'
if (!exists("out")) out = 'bench.png'
if (!exists("subtitle")) subtitle = 'opmsg-bench'
if (!exists("has_main")) has_main = 1
if (!exists("has_extra")) has_extra = 1
if (!exists("main_cols")) main_cols = 8
if (!exists("extra_cols")) extra_cols = 6
panels = has_main + has_extra

set terminal png size 1300,(panels > 1 ? 900 : 500) font ",11" noenhanced
set output out
set datafile separator "\t"
set datafile missing "-"
# gnuplot cycles 8 colours: the ninth column gets one of its own.
set linetype 9 lc rgb "#a0522d"

set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key outside right top vertical Left reverse noenhanced
set grid ytics mytics
set logscale y 10
set format y "%gx"
set xtics nomirror
set ytics nomirror

set multiplot layout panels,1 title "Turning an OP_MSG into one document: time per operation relative to the limit\n".subtitle

if (has_main) {
   set title "Parse + merge (limit: memcpy of the merged document; log scale, lower is better)"
   set ylabel "time / memcpy"
   set yrange [0.5:*]
   plot for [i=2:main_cols] main using i:xtic(1) title columnheader(i)
}

if (has_extra) {
   set title "OP_COMPRESSED (limit: decompress) and encoding with batch splitting (limit: memcpy of the documents)"
   set ylabel "time / limit"
   set yrange [0.01:*]
   plot for [i=2:extra_cols] extra using i:xtic(1) title columnheader(i)
}

unset multiplot
