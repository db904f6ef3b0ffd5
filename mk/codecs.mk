# make check-no-codecs: libopmsg built without any optional part (every
# OPMSG_WITH_* OFF: no snappy, zlib, zstd or ISA-L) in a tree of its own,
# and the tests that say what such a build does: a message compressed with
# a codec it lacks is compressor-unavailable to every function and to the
# CLI (test_compress, cli.codecs), the other paths work with noop and the
# portable CRC-32C (test_checksum, test_legacy, test_reader, test_wire), and
# the library links none of those libraries. Only those targets are built
# (a CI step: .ci/run calls it). `make check` and the packages build
# with every codec.

NOCODECS_BUILD ?= build-nocodecs
NOCODECS_UNITS := test_compress test_checksum test_legacy test_reader test_wire
NOCODECS_GEN   := $(if $(shell command -v ninja 2>/dev/null),-G Ninja,)

.PHONY: check-no-codecs

check-no-codecs: deps
	@if test -f $(NOCODECS_BUILD)/CMakeCache.txt; then \
	  test -z "$(WERROR_ARG)" || cmake $(WERROR_ARG) $(NOCODECS_BUILD) >/dev/null; \
	else \
	  cmake -S . -B $(NOCODECS_BUILD) $(NOCODECS_GEN) $(WERROR_ARG) -DOPMSG_WITH_SNAPPY=OFF -DOPMSG_WITH_ZLIB=OFF \
	    -DOPMSG_WITH_ZSTD=OFF -DOPMSG_WITH_ISAL=OFF "-DOPMSG_PARTS=tools;tests" -DOPMSG_TEST_SUITES=cli >/dev/null; \
	fi
	cmake --build $(NOCODECS_BUILD) -j $(JOBS) --target opmsg opmsg_cli $(NOCODECS_UNITS)
	@needed=$$(LC_ALL=C readelf -d $(NOCODECS_BUILD)/src/libopmsg.so | grep -E 'lib(snappy|z|zstd|isal)\.so' || true); \
	  if [ -n "$$needed" ]; then echo "check-no-codecs: libopmsg.so still links: $$needed"; exit 1; fi
	cd $(NOCODECS_BUILD) && ctest --output-on-failure --no-tests=error -j $(JOBS) \
	  -R '^(unit\.($(subst $(eval) ,|,$(NOCODECS_UNITS)))|cli\.codecs)$$'
