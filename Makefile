# The front door. `make demo` and `make check` do all the set-up on a fresh
# Debian 12 machine (they install what is missing, as root or with sudo).
# Everything else is CMake: build/ holds the build, build-asan/ the sanitised one.

BUILD      ?= build
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
# OPMSG_WERROR=ON (from the environment or the command line) makes warnings
# errors in build/ and build-asan/: CI sets it (.ci/run). Unset, the trees
# keep what they were configured with (a new tree: off). The packages never
# use it (mk/package.mk).
OPMSG_WERROR ?=
WERROR_ARG = $(if $(OPMSG_WERROR),-DOPMSG_WERROR=$(OPMSG_WERROR))
# The trees `make` and `make check-asan` configure have every OP_COMPRESSED
# codec, or fail to configure (CMake's default, AUTO, would leave a missing
# one out); `make check-no-codecs` (mk/codecs.mk) checks a build without.
CODEC_ARGS = -DOPMSG_WITH_SNAPPY=ON -DOPMSG_WITH_ZLIB=ON -DOPMSG_WITH_ZSTD=ON

.PHONY: all deps configure check check-asan demo clean

all: configure
	cmake --build $(BUILD) -j $(JOBS)

deps:
	@scripts/install-deps.sh

# Ninja when it is there; otherwise (or if that fails) plain Makefiles, in a
# fresh directory so no half-written cache of the first attempt remains.
configure:
	@if test -f $(BUILD)/CMakeCache.txt; then \
	  test -z "$(WERROR_ARG)" || cmake $(WERROR_ARG) $(BUILD) >/dev/null; \
	else \
	  { command -v ninja >/dev/null && \
	    cmake -S . -B $(BUILD) -G Ninja $(CODEC_ARGS) $(WERROR_ARG) $(CMAKE_ARGS) >/dev/null 2>&1; } || \
	  { rm -rf $(BUILD) && cmake -S . -B $(BUILD) $(CODEC_ARGS) $(WERROR_ARG) $(CMAKE_ARGS); }; \
	fi

check: deps all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The whole test suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
check-asan: deps
	cmake --preset asan $(CODEC_ARGS) $(WERROR_ARG) >/dev/null
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

demo: deps all
	@scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-asan

# Further targets (bench, fuzz, package, dist, ...) live in mk/*.mk;
# CONTRIBUTING.md lists every one, what it runs and which CI step calls it.
-include $(wildcard mk/*.mk)
