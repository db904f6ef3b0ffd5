# Debian's mongo-c-driver packages with the fork's patches, per release and
# track (docs/debian.md). Runs as root.
#
#   make fork-debs                  scripts/fork-debs.sh for each release of
#                                   FORK_DEBS and track of FORK_DEBS_TRACKS:
#                                   Debian's newest served source, the track's
#                                   patches (fork/debian/RELEASE/TRACK/), the
#                                   stable-update debdiff, the local packages
#                                   built with sbuild, checked (lintian,
#                                   abidiff), published in the signed
#                                   repository OPMSG_APT (/srv/opmsg-apt) and
#                                   tested installed from it (autopkgtest);
#                                   one "fork-deb ..." line each
#
#   FORK_DEBS="bookworm"            the releases (bookworm only so far)
#   FORK_DEBS_TRACKS="fixes features" the tracks
#   FORK_DEBS_REVISION=1            N of the local suffix ~opmsgN
#   FORK_DEBS_UPDATE=1              rewrite the committed debdiff

FORK_DEBS ?= bookworm
FORK_DEBS_TRACKS ?= fixes features

.PHONY: fork-debs

fork-debs: deps
	@for rel in $(FORK_DEBS); do for track in $(FORK_DEBS_TRACKS); do \
	  packaging/debian/versions-test.sh >/dev/null && scripts/fork-debs.sh $$rel $$track || exit 1; \
	done; done
