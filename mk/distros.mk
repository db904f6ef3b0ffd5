# opmsg on the other Debian releases the drop-in serves, each in a test
# system of its own (a debootstrap root under build/roots/; docs/distros.md).
# Runs as root. Linux namespaces keep the roots' mounts private.
#
#   make distro-roots          make (or reuse) the roots only
#                              (scripts/debian-root.sh; about 2 minutes each
#                              the first time, seconds afterwards)
#   make check-distros         per release: copy the working tree into the
#                              root, build it there with plain `make`, run
#                              the whole CTest suite there (FerretDB copied
#                              in), ask the drop-in whether it is active, then
#                              `make package` there (lintian), install the
#                              .deb files, run a libmongoc program with the
#                              installed drop-in, remove them; one summary
#                              line per release (scripts/check-distros.sh)
#   make check-distros-package the same without the test suite
#
#   DISTROS="trixie sid"       which releases (Debian 13, sid)
#   DISTRO_CTEST_ARGS="..."    extra ctest arguments, e.g. -L dropin
#   OPMSG_ROOTS=dir            where the roots live (default build/roots)
#
# The roots' Debian mirror is the one this machine's apt uses
# (OPMSG_DEBIAN_MIRROR overrides it). Logs: build/roots/logs/<release>-*.log.

DISTROS ?= trixie sid
DISTRO_CTEST_ARGS ?=

.PHONY: distro-roots check-distros check-distros-package

distro-roots:
	@for d in $(DISTROS); do scripts/debian-root.sh $$d || exit 1; done

check-distros:
	@JOBS=$(JOBS) DISTRO_CTEST_ARGS="$(DISTRO_CTEST_ARGS)" scripts/check-distros.sh $(DISTROS)

check-distros-package:
	@JOBS=$(JOBS) scripts/check-distros.sh --no-tests $(DISTROS)
