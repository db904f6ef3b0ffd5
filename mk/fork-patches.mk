# The fork's patch series (fork/README.md): generated files from src/, the
# hand-written hunks from the patches themselves.
#
#   make fork-patches         rebuild fork/TARGET/*.patch for every series
#                             (from the branch `make fork-edit` made, when
#                             it exists)
#   make fork-patches-check   fail when a committed series differs from a
#                             regeneration (a CI step; no compiling)
#   make fork-edit            the series as a git branch to edit, in
#                             build/fork/edit/TARGET
#
# A series is a folder fork/TARGET/ with a manifest, generate.json: master
# (the upstream pull request), trixie (Debian 13's 1.30.4), ... FORK_TARGET
# picks one (fork-edit: master unless given); FORK_SOURCE=DIR a
# mongo-c-driver tree for that one series instead of ../shared/upstream/
# (scripts/fork-source.sh).

FORK_TARGETS = $(patsubst fork/%/generate.json,%,$(wildcard fork/*/generate.json))
FORK_TARGET ?=
FORK_SOURCE ?=
FORK_SOURCE_ARG = $(if $(FORK_SOURCE),--source $(FORK_SOURCE))
# One tree is one series' base: FORK_SOURCE needs FORK_TARGET.
fork_patches_targets = $(or $(FORK_TARGET),$(if $(FORK_SOURCE),$(error FORK_SOURCE names one series' tree: say which with FORK_TARGET),$(FORK_TARGETS)))

.PHONY: fork-patches fork-patches-check fork-edit

fork-patches:
	@set -e; for t in $(fork_patches_targets); do scripts/fork-patches.sh $$t $(FORK_SOURCE_ARG); done

fork-patches-check:
	@set -e; for t in $(fork_patches_targets); do scripts/fork-patches.sh $$t --check $(FORK_SOURCE_ARG); done

fork-edit:
	@scripts/fork-patches.sh $(or $(FORK_TARGET),master) --edit $(FORK_SOURCE_ARG)
