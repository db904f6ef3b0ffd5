# The fork: the patch series fork/master/ on mongo-c-driver master, checked
# with upstream's own build and test suite (scripts/fork-check.sh,
# docs/fork.md), and its benchmark.
#
#   make check-fork        the pristine tree (../shared/upstream/, or
#                          FORK_SOURCE), the series applied with git am,
#                          each commit built and tested alone, test-libmongoc
#                          unpatched vs patched test by test, the new tests,
#                          the live tests against FerretDB, the hostile-reply
#                          harness, client-side encryption in the sid root;
#                          builds cached under build/fork/
#   make bench-fork        the receive path and the command-started event,
#                          unpatched against patched (bench/fork/)
#
#   FORK_SOURCE=DIR        a mongo-c-driver checkout at master a047e0bc
#                          (scripts/fork-source.sh --source DIR); without it
#                          and without ../shared/upstream/ the check stops
#                          with the git commands that fetch the tree
#   FORK_TARGET=trixie     check the port to Debian 13's 1.30.4 (fork/trixie/)
#                          instead of master; outside CI, which checks master
#   FORK_ARGS="..."        more options of scripts/fork-check.sh (--no-live,
#                          --no-encryption, --match PREFIX, --series DIR, ...)
#   FORK_BENCH_ARGS="..."  options of the benchmark (--quick, --reps N, ...)

FORK_SOURCE     ?=
FORK_ARGS       ?=
FORK_BENCH_ARGS ?=

FORK_SOURCE_ARG = $(if $(FORK_SOURCE),--source $(abspath $(FORK_SOURCE)))

.PHONY: check-fork bench-fork

check-fork:
	scripts/fork-check.sh --target $(or $(FORK_TARGET),master) $(FORK_SOURCE_ARG) $(FORK_ARGS)

bench-fork: all
	scripts/fork-check.sh --build-only $(FORK_SOURCE_ARG) $(FORK_ARGS)
	bench/fork/run.sh $(FORK_BENCH_ARGS)
