# The fork's patch series (fork/README.md): generated files from src/, the
# hand-written hunks from the patches themselves.
#
#   make fork-patches         rebuild fork/master/*.patch (from the branch
#                             `make fork-edit` made, when it exists)
#   make fork-patches-check   fail when the committed series differs from a
#                             regeneration (a CI step; no compiling)
#   make fork-edit            the series as a git branch to edit, in
#                             build/fork/edit/master
#
# FORK_TARGET picks the series (master); FORK_SOURCE=DIR a mongo-c-driver
# tree to use instead of ../shared/upstream/ (scripts/fork-source.sh).

FORK_TARGET ?= master
FORK_SOURCE ?=
FORK_SOURCE_ARG = $(if $(FORK_SOURCE),--source $(FORK_SOURCE))

.PHONY: fork-patches fork-patches-check fork-edit

fork-patches:
	@scripts/fork-patches.sh $(FORK_TARGET) $(FORK_SOURCE_ARG)

fork-patches-check:
	@scripts/fork-patches.sh $(FORK_TARGET) --check $(FORK_SOURCE_ARG)

fork-edit:
	@scripts/fork-patches.sh $(FORK_TARGET) --edit $(FORK_SOURCE_ARG)
