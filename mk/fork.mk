# The fork: the pull requests fork/master/1-*/ to 4-*/ on mongo-c-driver
# master, checked with upstream's own build and test suite
# (scripts/fork-check.sh, docs/fork.md), and their benchmark.
#
#   make check-fork        the pristine tree (../shared/upstream/, or
#                          FORK_SOURCE); each pull request applied with git am
#                          on its base (master, or the one its file `base`
#                          names), each commit built (maintainer flags, no
#                          warning) and clang-format checked, test-libmongoc
#                          on the base against the pull request through
#                          upstream's CTest registration (ctest -j2 --timeout
#                          --repeat until-pass --output-junit; the two JUnit
#                          files compared by scripts/lib/junit-compare.py),
#                          its new tests (failing on the base, passing
#                          patched, or declared guards); one line per pull
#                          request; then the four applied together: the
#                          hostile-reply harness, the live tests against
#                          FerretDB, client-side encryption in the sid root
#                          (the "all" line), the conformance vectors
#                          (scripts/fork-conformance.sh) and the exported
#                          symbols against master's (the "fork symbols"
#                          line); builds cached under build/fork/
#   make check-fork-ci     the same in CI's shape (--ci): the whole no-server
#                          suite once, master against the four applied,
#                          instead of once per pull request
#   make bench-fork        the receive path and the command-started event,
#                          unpatched against patched (bench/fork/)
#
#   FORK_SOURCE=DIR        a mongo-c-driver checkout at master a047e0bc
#                          (scripts/fork-source.sh --source DIR); without it
#                          and without ../shared/upstream/ the check stops
#                          with the git commands that fetch the tree
#   FORK_TARGET=trixie     check the ports' pull requests fork/trixie/K-NAME/
#   FORK_TARGET=bookworm   (Debian 13's 1.30.4) or fork/bookworm/K-NAME/
#                          (Debian 12's 1.23.1) on the Debian tree with
#                          Debian's patches applied, instead of master
#   FORK_ARGS="..."        more options of scripts/fork-check.sh (--ci,
#                          --pr K, --no-live, --no-encryption, --match PREFIX,
#                          --timeout S, --repeat N, --series DIR, ...)
#   FORK_BENCH_ARGS="..."  options of the benchmark (--quick, --reps N, ...)

FORK_SOURCE     ?=
FORK_ARGS       ?=
FORK_BENCH_ARGS ?=

FORK_SOURCE_ARG = $(if $(FORK_SOURCE),--source $(abspath $(FORK_SOURCE)))
# The pull requests that change no behaviour, whose new tests may all be
# guards: PR 4 (the fuzz target) and PR 5 (payload arrays, a speed change).
FORK_SPEED_ARGS = --speed-pr 4 --speed-pr 5

.PHONY: check-fork check-fork-ci bench-fork

# (all: the conformance step compares with the opmsg command, build/tools/opmsg.)
check-fork: all
	scripts/fork-check.sh --target $(or $(FORK_TARGET),master) $(if $(filter-out master,$(or $(FORK_TARGET),master)),,$(FORK_SPEED_ARGS)) $(FORK_SOURCE_ARG) $(FORK_ARGS)

check-fork-ci: all
	scripts/fork-check.sh --target master --ci $(FORK_SPEED_ARGS) $(FORK_SOURCE_ARG) $(FORK_ARGS)

bench-fork: all
	$(if $(FORK_BENCH_UNPATCHED)$(FORK_BENCH_PATCHED),,scripts/fork-check.sh --build-only $(FORK_SOURCE_ARG) $(FORK_ARGS))
	FORK_BENCH_UNPATCHED='$(FORK_BENCH_UNPATCHED)' FORK_BENCH_PATCHED='$(FORK_BENCH_PATCHED)' \
	  bench/fork/run.sh $(FORK_BENCH_ARGS)
