# libmongoc's own test suite, stock and with the drop-in
# (scripts/libmongoc-suite.sh, docs/libmongoc-suite.md):
#
#   make check-libmongoc-suite     builds the suite's test-libmongoc for the
#                                  installed libmongoc (cached in
#                                  build/libmongoc-suite/VERSION/), runs every
#                                  test that needs no live server stock and
#                                  with $(BUILD)'s drop-in through upstream's
#                                  CTest registration (ctest -j, --timeout,
#                                  --repeat until-pass, --output-junit),
#                                  compares the JUnit files, and fails on a
#                                  difference not in scripts/libmongoc-suite.explained
#   LIBMONGOC_SUITE_ARGS="--subset scripts/libmongoc-suite.ci"
#                                  CI's fixed subset
#   LIBMONGOC_SUITE_ARGS="--live"  also the live tests against FerretDB (reported)
#   LIBMONGOC_SUITE_DROPIN=PATH    another drop-in
#   LIBMONGOC_SUITE_JOBS=N         tests at a time (ctest -j, default 2)

LIBMONGOC_SUITE_DROPIN ?= $(BUILD)/src/mongoc-dropin/libopmsg-mongoc.so
LIBMONGOC_SUITE_JOBS   ?= 2
LIBMONGOC_SUITE_ARGS   ?=

.PHONY: check-libmongoc-suite

check-libmongoc-suite: deps configure
	cmake --build $(BUILD) --target opmsg_mongoc -j $(JOBS)
	scripts/libmongoc-suite.sh --dropin $(LIBMONGOC_SUITE_DROPIN) \
	  --jobs $(LIBMONGOC_SUITE_JOBS) $(LIBMONGOC_SUITE_ARGS)
