# make bench-report: run opmsg-bench, chart it into docs/bench.png and refresh
# the results in docs/benchmarks.md (bench/report.sh). Takes a few minutes.
# BENCH_ARGS are opmsg-bench's options (default --cpu-time; add --quick for
# a fast, noisier run).
BENCH_ARGS ?= --cpu-time
.PHONY: bench-report

bench-report: all
	OPMSG_BENCH_ARGS="$(BENCH_ARGS)" bench/report.sh $(BUILD)
