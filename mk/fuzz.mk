# Coverage-guided fuzzing (libFuzzer + ASan + UBSan, clang only).
#
#   make fuzz FUZZ_SECONDS=N   build build-fuzz/ and run every tests/fuzz/fuzz_*.c
#                              target N seconds, one after the other; prints
#                              libFuzzer's final line per target and fails
#                              (printing the reproducer) on any finding
#   FUZZ_RUNS=N                also stop each target after N executions
#   FUZZ_TARGETS="fuzz_parse"  run only these
#   FUZZ_ARGS="..."            extra libFuzzer flags
#   FUZZ_BUILD=dir FUZZ_CMAKE_ARGS="-DOPMSG_FUZZ_EXTRA_FLAGS=..."
#                              another fuzz build with other flags
#   make fuzz-build            only build the targets
#
# The committed corpus is copied to build-fuzz/fuzz-work/<target>/ first, so
# a run never writes into the source tree. See docs/fuzzing.md.

FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?=
FUZZ_BUILD   ?= build-fuzz
FUZZ_CC      ?= clang
FUZZ_TARGETS ?=
FUZZ_ARGS    ?=
FUZZ_CMAKE_ARGS ?=
FUZZ_GEN     := $(if $(shell command -v ninja 2>/dev/null),-G Ninja,)

.PHONY: fuzz fuzz-build fuzz-clean

fuzz-build: deps
	@test -f $(FUZZ_BUILD)/CMakeCache.txt || \
	  cmake -S . -B $(FUZZ_BUILD) $(FUZZ_GEN) -DCMAKE_C_COMPILER=$(FUZZ_CC) \
	    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPMSG_FUZZ=ON -DOPMSG_WERROR=OFF \
	    -DOPMSG_BUILD_TOOLS=OFF -DOPMSG_BUILD_DROPIN=OFF $(FUZZ_CMAKE_ARGS) >/dev/null
	cmake --build $(FUZZ_BUILD) --target opmsg_fuzz -j $(JOBS)

fuzz: fuzz-build
	@FUZZ_BUILD="$(FUZZ_BUILD)" FUZZ_SECONDS="$(FUZZ_SECONDS)" FUZZ_RUNS="$(FUZZ_RUNS)" \
	  FUZZ_TARGETS="$(FUZZ_TARGETS)" FUZZ_ARGS="$(FUZZ_ARGS)" tests/fuzz/run-fuzz.sh

fuzz-clean:
	rm -rf $(FUZZ_BUILD)
