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
	check-sequences check-checksum distro-roots check-distros check-distros-package

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

# The fork's targets (check-fork, bench-fork, fork-debs, fork-patches, ...).
-include $(wildcard mk/fork*.mk)
