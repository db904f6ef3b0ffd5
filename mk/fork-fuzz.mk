# make fork-fuzz: the fork's fuzz target of the reply path (PR 4,
# fork/master/4-fuzz/) run where upstream runs things, its CTest test
# (label "fuzz"), seeded by the conformance vectors
# (tests/data/conformance/*.bin), then libFuzzer for FORK_FUZZ_SECONDS more
# (scripts/fork-fuzz.sh; clang, ASan, UBSan). The tree is PR 4's branch of
# a fresh edit clone (scripts/fork-patches.sh --edit) in build/fork/fuzz-src.
# One line:
#   fork fuzz: target fuzz-rpc-reply, seeds K, ctest -L fuzz runs R1 (passed), libFuzzer seconds S runs R2, crashes 0
#
#   FORK_FUZZ_SECONDS=N   the libFuzzer run after the CTest test (default 60;
#                         0 for the CTest test alone)
#   FORK_SOURCE=DIR       a mongo-c-driver tree instead of ../shared/upstream/
FORK_FUZZ_SECONDS ?= 60

.PHONY: fork-fuzz

fork-fuzz:
	rm -rf build/fork/fuzz-src
	scripts/fork-patches.sh --edit --edit-dir build/fork/fuzz-src $(if $(FORK_SOURCE),--source $(abspath $(FORK_SOURCE)))
	git -C build/fork/fuzz-src checkout -q 4-fuzz
	scripts/fork-fuzz.sh build/fork/fuzz-src $(FORK_FUZZ_SECONDS) tests/data/conformance
