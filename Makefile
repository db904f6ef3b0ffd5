# The front door: each target is one line calling a CMake preset
# (CMakePresets.json), CTest or one script. `make demo` and `make check` do
# all the set-up on a fresh Debian 12 machine (they install what is missing,
# as root or with sudo). CONTRIBUTING.md lists every target and what it runs.
#
# OPMSG_WERROR=ON (environment or command line; CI sets it) makes warnings
# errors in the presets' builds; the packages never use it.
# JOBS: parallel compilations and tests (default: the cores).

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
export CMAKE_BUILD_PARALLEL_LEVEL = $(JOBS)
export CTEST_PARALLEL_LEVEL = $(JOBS)
BUILD := build
DROPIN := $(BUILD)/src/mongoc-dropin/libopmsg-mongoc.so
VERSION := $(shell sed -n 's/^  VERSION \([0-9.]*\)$$/\1/p' CMakeLists.txt)

.PHONY: all deps check check-all check-asan check-no-codecs check-portable demo clean \
	bench bench-report bench-dropin bench-tap fuzz fuzz-build package dist dist-check \
	format format-check check-soak check-soak-fork check-encryption check-libmongoc-suite \
	check-sequences check-checksum distro-roots check-distros check-distros-package \
	check-fork check-fork-ci bench-fork fork-fuzz fork-edit fork-patches fork-patches-check fork-debs

# --- Builds and tests ---------------------------------------------------------
all:
	cmake --preset default >/dev/null && cmake --build --preset default
deps:
	@scripts/install-deps.sh
# Every suite of build/ but valgrind and soak (labels unit, dropin, interop, consumer, encryption).
check: deps
	cmake --workflow --preset ci
# Every suite of build/, valgrind and soak too.
check-all: deps
	cmake --workflow --preset all
check-asan: deps
	cmake --workflow --preset asan
# libopmsg without snappy, zlib, zstd or ISA-L (build-nocodecs/): what such a build does.
check-no-codecs: deps
	cmake --workflow --preset nocodecs
# Prints "portable nosimd: tests P/R" and "portable s390x: tests P/R".
check-portable: deps
	@scripts/check-portable.sh
demo: deps all
	@scripts/demo.sh $(BUILD)
clean:
	rm -rf $(BUILD) build-*

# --- Fuzzing (libFuzzer, clang; docs/fuzzing.md): FUZZ_SECONDS per target (default 30)
fuzz: deps
	cmake --workflow --preset fuzz
fuzz-build: deps
	cmake --preset fuzz >/dev/null && cmake --build --preset fuzz

# --- Benchmarks (docs/benchmarks.md): not tests, nothing fails on a figure ----
BENCH_ARGS ?= --cpu-time
bench: all
	$(BUILD)/bench/opmsg-bench --cpu-time && $(MAKE) --no-print-directory bench-dropin bench-tap
bench-report: all
	OPMSG_BENCH_ARGS="$(BENCH_ARGS)" bench/report.sh $(BUILD)
bench-dropin: all
	bench/dropin-overhead.sh $(abspath $(BUILD))/bench/dropin-overhead $(abspath $(DROPIN))
bench-tap: all
	bench/tap-latency.sh $(abspath $(BUILD))/bench/tap-latency $(abspath $(BUILD))/tools/opmsg

# --- Packages and the source tarball ------------------------------------------
package: deps
	@scripts/package.sh
dist:
	mkdir -p dist && git archive --format=tar --prefix=opmsg-$(VERSION)/ HEAD | gzip -9n >dist/opmsg-$(VERSION).tar.gz
dist-check:
	.ci/steps/package.sh dist-only

# --- Style (.clang-format, the pinned clang-format; fork/ excepted) ------------
format:
	@scripts/clang-format.sh --fix
format-check:
	@scripts/clang-format.sh --check

# --- Long checks against libmongoc ---------------------------------------------
# The soak (docs/soak.md): SOAK_SEED, SOAK_OPS, SOAK_KINDS, SOAK_RELEASES,
# SOAK_THREADS, SOAK_FORK_LIBDIR, SOAK_ARGS as tests/soak/check-soak.sh says.
check-soak: deps all
	BUILD=$(BUILD) tests/soak/check-soak.sh
# The fork kind on make fork-debs' packages, every release required clean.
check-soak-fork: deps all
	scripts/fork-debs-libdir.sh $(BUILD)/soak-fork && SOAK_KINDS=fork SOAK_FORK_LIBDIR=$(abspath $(BUILD))/soak-fork SOAK_REQUIRE_ALL=1 BUILD=$(BUILD) tests/soak/check-soak.sh
# Client-side field level encryption (docs/encryption.md); ENC_ROOTS: the Debian roots too.
ENC_ROOTS ?= $(patsubst build/roots/READY-%,%,$(wildcard build/roots/READY-*))
check-encryption: deps all
	tests/encryption/check-encryption.sh $(abspath $(BUILD))/tests/encryption/enc-client $(abspath $(DROPIN)) $(ENC_ROOTS)
# libmongoc's own suite, stock and with the drop-in (docs/libmongoc-suite.md).
LIBMONGOC_SUITE_ARGS ?=
check-libmongoc-suite: deps all
	scripts/libmongoc-suite.sh --dropin $(DROPIN) --jobs 2 $(LIBMONGOC_SUITE_ARGS)
# Document sequences in replies, live, with the fork's libmongoc (FORK_PREFIX).
check-sequences: deps all
	scripts/check-sequences.sh $(BUILD)
# OP_MSG checksums live (PR 3's opMsgChecksum against FerretDB; docs/fork.md). FORK_PREFIX as above.
check-checksum: deps all
	scripts/check-checksum.sh $(BUILD)

# --- Debian 13 and sid in debootstrap roots (docs/distros.md; root) ------------
DISTROS ?= trixie sid
distro-roots:
	for d in $(DISTROS); do scripts/debian-root.sh $$d || exit 1; done
check-distros:
	JOBS=$(JOBS) scripts/check-distros.sh $(DISTROS)
check-distros-package:
	JOBS=$(JOBS) scripts/check-distros.sh --no-tests $(DISTROS)

# --- The fork (docs/fork.md says each target and variable; fork-debs: docs/debian.md) ---
# FORK_SOURCE, FORK_TARGET, FORK_ARGS, FORK_BENCH_ARGS, FORK_BENCH_UNPATCHED,
# FORK_BENCH_PATCHED, FORK_AUTHOR, FORK_DATE, FORK_FUZZ_SECONDS, FORK_DEBS, FORK_DEBS_TRACKS.
FORK_FUZZ_SECONDS ?= 60
FORK_DEBS ?= bookworm
FORK_DEBS_TRACKS ?= fixes features
FORK_SOURCE_ARG = $(if $(FORK_SOURCE),--source $(abspath $(FORK_SOURCE)))
# PR 4 (the fuzz target) and PR 5 (payload arrays) change no behaviour: their new tests may all be guards.
FORK_SPEED_ARGS = --speed-pr 4 --speed-pr 5
# FORK_SOURCE names one folder's tree: fork-patches-check needs FORK_TARGET with it.
FORK_CHECK_TARGETS = $(or $(FORK_TARGET),$(if $(FORK_SOURCE),$(error FORK_SOURCE names one folder's tree: say which with FORK_TARGET)))

# (all: the conformance step compares with the opmsg command, build/tools/opmsg.)
check-fork: all
	scripts/fork-check.sh --target $(or $(FORK_TARGET),master) $(if $(filter-out master,$(or $(FORK_TARGET),master)),,$(FORK_SPEED_ARGS)) $(FORK_SOURCE_ARG) $(FORK_ARGS)
check-fork-ci: all
	scripts/fork-check.sh --target master --ci $(FORK_SPEED_ARGS) $(FORK_SOURCE_ARG) $(FORK_ARGS)
bench-fork: all
	FORK_BENCH_UNPATCHED='$(FORK_BENCH_UNPATCHED)' FORK_BENCH_PATCHED='$(FORK_BENCH_PATCHED)' bench/fork/run.sh --build $(FORK_SOURCE_ARG) $(FORK_ARGS) -- $(FORK_BENCH_ARGS)
fork-fuzz:
	scripts/fork-fuzz.sh --edit $(FORK_SOURCE_ARG) $(FORK_FUZZ_SECONDS) tests/data/conformance
fork-edit:
	@scripts/fork-patches.sh --edit $(FORK_SOURCE_ARG)
fork-patches:
	@FORK_AUTHOR='$(FORK_AUTHOR)' FORK_DATE='$(FORK_DATE)' scripts/fork-patches.sh $(FORK_SOURCE_ARG)
fork-patches-check:
	@scripts/fork-patches.sh --check $(FORK_SOURCE_ARG) $(FORK_CHECK_TARGETS)
# Each release of FORK_DEBS and track of FORK_DEBS_TRACKS, as root.
fork-debs: deps
	@for rel in $(FORK_DEBS); do for track in $(FORK_DEBS_TRACKS); do [ -d fork/debian/$$rel/$$track ] || { echo "fork-debs: no $$track track for $$rel"; continue; }; packaging/debian/versions-test.sh >/dev/null && scripts/fork-debs.sh $$rel $$track || exit 1; done; done
