# Debian's mongo-c-driver packages with the fork's patches
# (fork/README.md, docs/fork.md). Runs as root.
#
#   make fork-debian-patches        fork/debian/{bookworm,trixie,unstable}/:
#                                   quilt patches with DEP-3 headers, series
#                                   lines, changelog entry
#                                   (scripts/fork-debian-patches.sh); sid's
#                                   from the four pull requests
#                                   fork/master/1-*/ to 4-*/ in order (cover
#                                   letters left out), bookworm's and trixie's
#                                   from their frozen series fork/bookworm/
#                                   and fork/trixie/
#   make fork-debian-patches-check  fails when fork/debian/ differs from
#                                   what the series give (a CI step)
#   make fork-debs                  builds the packages of FORK_DEBS, stock
#                                   and patched, and checks them: lintian,
#                                   symbols, installed over stock (the
#                                   hostile-reply harness, a program built on
#                                   stock, FerretDB, client-side encryption),
#                                   back to stock (scripts/fork-debs.sh)
#   make check-fork-debs            fork-debs for all three releases
#
#   FORK_DEBS="bookworm"            which releases fork-debs builds: bookworm
#                                   on this Debian 12 machine, trixie and
#                                   unstable (sid) in the roots of
#                                   make check-distros (OPMSG_ROOTS)
#   FORK_DEBS_ARGS="--source trixie=DIR"
#                                   more arguments (a packaging tree of one's
#                                   own for a release)

FORK_DEBS ?= bookworm
FORK_DEBS_ARGS ?=

.PHONY: fork-debian-patches fork-debian-patches-check fork-debs check-fork-debs

fork-debian-patches:
	@scripts/fork-debian-patches.sh $(FORK_DEBS_ARGS)

fork-debian-patches-check:
	@scripts/fork-debian-patches.sh --check $(FORK_DEBS_ARGS)

fork-debs: deps
	@scripts/fork-debs.sh $(FORK_DEBS_ARGS) $(FORK_DEBS)

check-fork-debs: deps
	@scripts/fork-debs.sh $(FORK_DEBS_ARGS) bookworm trixie unstable
