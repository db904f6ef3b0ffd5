# The fork's pull requests as patch files (fork/README.md,
# scripts/fork-patches.sh): fork/master/K-NAME/, each a `git format-patch`
# series with a hand-written 0000-cover-letter.patch. Their only source is
# the committed patches; they are edited as branches.
#
#   make fork-edit            build/fork/edit/master: the pristine tree with
#                             one branch per pull request (1-no-abort, ...),
#                             made from the committed patches with git am
#   make fork-patches         fork/master/K-NAME/0001-*.patch ... written
#                             again from those branches (the cover letters
#                             and the lists kept)
#   make fork-patches-check   every pull request applies with git am on its
#                             base, and is byte for byte its own export;
#                             master's and the Debian ports' (fork/trixie/,
#                             fork/bookworm/, on their trees) (CI; no
#                             compiling)
#
#   FORK_AUTHOR="Name <mail>" the author of every exported commit (default:
#                             each keeps its own)
#   FORK_DATE=DATE            their date (default: each keeps its own)
#   FORK_SOURCE=DIR           a mongo-c-driver tree instead of
#                             ../shared/upstream/ (scripts/fork-source.sh);
#                             with fork-patches-check it needs FORK_TARGET
#   FORK_TARGET=NAME          fork-patches-check of one folder (master,
#                             trixie, bookworm)

FORK_TARGET ?=
FORK_SOURCE ?=
FORK_AUTHOR ?=
FORK_DATE   ?=
FORK_SOURCE_ARG = $(if $(FORK_SOURCE),--source $(abspath $(FORK_SOURCE)))
# One tree is one folder's base: FORK_SOURCE with fork-patches-check needs FORK_TARGET.
fork_patches_check_targets = $(or $(FORK_TARGET),$(if $(FORK_SOURCE),$(error FORK_SOURCE names one folder's tree: say which with FORK_TARGET)))

.PHONY: fork-patches fork-patches-check fork-edit

fork-patches:
	@FORK_AUTHOR='$(FORK_AUTHOR)' FORK_DATE='$(FORK_DATE)' scripts/fork-patches.sh $(FORK_SOURCE_ARG)

fork-patches-check:
	@scripts/fork-patches.sh --check $(FORK_SOURCE_ARG) $(fork_patches_check_targets)

fork-edit:
	@scripts/fork-patches.sh --edit $(FORK_SOURCE_ARG)
