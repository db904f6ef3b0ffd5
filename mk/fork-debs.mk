# Debian's mongo-c-driver packages with the fork's patches
# (fork/README.md, docs/fork.md "Debian packages"). Runs as root.
#
#   make fork-debs                  builds the packages of FORK_DEBS
#                                   (scripts/fork-debs.sh): the source of the
#                                   revision the system runs (apt-get source;
#                                   where the archive does not serve it,
#                                   Debian's packaging tree: a test build),
#                                   the fork's quilt patches, series lines and
#                                   changelog entry made at build time from
#                                   fork/master/, fork/trixie/, fork/bookworm/
#                                   (scripts/fork-debian-patches.sh; only the
#                                   entry's text is committed, in
#                                   fork/debian/RELEASE/changelog), built stock
#                                   and patched, checked (lintian, symbols),
#                                   published in the apt repository
#                                   build/fork-debs/apt/, installed from it
#                                   over stock (the hostile-reply harness, a
#                                   program built on stock, FerretDB,
#                                   client-side encryption), back to stock
#   make check-fork-debs            fork-debs for bookworm, trixie and sid
#
#   FORK_DEBS="bookworm"            which releases fork-debs builds: bookworm
#                                   on this Debian 12 machine, trixie and
#                                   unstable (sid) in the roots of
#                                   make check-distros (OPMSG_ROOTS)
#   FORK_DEBS_ARGS="--source trixie=DIR"
#                                   more arguments (a packaging tree of one's
#                                   own for a release)
#   FORK_DEBS_REVISION=1            N of the versions' +opmsgN suffix

FORK_DEBS ?= bookworm
FORK_DEBS_ARGS ?=

.PHONY: fork-debs check-fork-debs

fork-debs: deps
	@scripts/fork-debs.sh $(FORK_DEBS_ARGS) $(FORK_DEBS)

check-fork-debs: deps
	@scripts/fork-debs.sh $(FORK_DEBS_ARGS) bookworm trixie unstable
