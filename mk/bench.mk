# The benchmarks (docs/benchmarks.md): not tests, nothing here fails on a
# figure. One row per target: what it runs, on which programs of $(BUILD)
# (bench/CMakeLists.txt says when each is built).
#
#   make bench         opmsg-bench --cpu-time (3-4 minutes), then each of
#                      BENCH_RUNS whose programs this build has
#   make bench-report  bench/report.sh: opmsg-bench --json $(BENCH_ARGS),
#                      charted into docs/bench.png and docs/benchmarks.md
#   make bench-dropin  bench/dropin-overhead.sh on bench/dropin-overhead and
#                      libopmsg-mongoc.so: ping/find with and without it
#   make bench-tap     bench/tap-latency.sh on bench/tap-latency and opmsg:
#                      the round-trip latency `opmsg tap` adds
#   make bench-fork    bench/fork/run.sh (mk/fork.mk)
#
# BENCH_ARGS are opmsg-bench's options for bench-report (default
# --cpu-time; add --quick for a fast, noisier run).
BENCH_ARGS ?= --cpu-time
BENCH_RUNS := bench-dropin bench-tap
# The script of each run, then the programs (in $(BUILD)) it is given.
bench-dropin_RUN := bench/dropin-overhead.sh bench/dropin-overhead src/mongoc-dropin/libopmsg-mongoc.so
bench-tap_RUN    := bench/tap-latency.sh bench/tap-latency tools/opmsg

.PHONY: bench bench-report $(BENCH_RUNS)

# On the thread's CPU clock: the machine is shared.
bench: all
	$(BUILD)/bench/opmsg-bench --cpu-time
	@$(foreach t,$(BENCH_RUNS),$(call bench_run,$(t),skip) || exit 1;)

bench-report: all
	OPMSG_BENCH_ARGS="$(BENCH_ARGS)" bench/report.sh $(BUILD)

$(BENCH_RUNS): all
	@$(call bench_run,$@,fail)

# $(call bench_run,TARGET,skip|fail): TARGET's script on its programs; when
# this build lacks one (no libmongoc, a sanitised build), says so and
# skips (make bench) or fails (the target asked for by name).
bench_run = missing=""; \
	for p in $(wordlist 2,99,$($(1)_RUN)); do test -e $(BUILD)/$$p || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then \
	  $(firstword $($(1)_RUN)) $(addprefix $(abspath $(BUILD))/,$(wordlist 2,99,$($(1)_RUN))); \
	elif [ $(2) = skip ]; then echo "$(1): skipped, this build has no$$missing"; \
	else echo "$(1): this build has no$$missing" >&2; false; fi
