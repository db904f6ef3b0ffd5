# The front door. `make demo` and `make check` do all the set-up on a fresh
# Debian 12 machine (they install what is missing, as root or with sudo).
# Everything else is CMake: build/ holds the build, build-asan/ the sanitised one.

BUILD      ?= build
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all deps configure check check-asan demo bench clean

all: configure
	cmake --build $(BUILD) -j $(JOBS)

deps:
	@scripts/install-deps.sh

# Ninja when it is there; otherwise (or if that fails) plain Makefiles, in a
# fresh directory so no half-written cache of the first attempt remains.
configure:
	@test -f $(BUILD)/CMakeCache.txt || \
	  { command -v ninja >/dev/null && cmake -S . -B $(BUILD) -G Ninja $(CMAKE_ARGS) >/dev/null 2>&1; } || \
	  { rm -rf $(BUILD) && cmake -S . -B $(BUILD) $(CMAKE_ARGS); }

check: deps all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The whole test suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
check-asan: deps
	cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

demo: deps all
	@scripts/demo.sh $(BUILD)

# The merger's benchmark, then (when their targets are built) the drop-in's
# overhead and the tap's added latency against a local FerretDB.
bench: all
	$(BUILD)/bench/opmsg-bench
	@for t in bench-dropin bench-tap; do \
	  if cmake --build $(BUILD) --target help | grep -q "^$$t:"; then \
	    cmake --build $(BUILD) --target $$t || exit 1; fi; done

clean:
	rm -rf $(BUILD) build-asan

# Further targets (fuzz, package, dist, bench-report, ...) live in mk/*.mk.
-include $(wildcard mk/*.mk)
