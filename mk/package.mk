# Packaging: `make package` builds the .deb files with CPack into dist/ and
# runs lintian on them; `make dist` makes a source tarball that builds offline.

VERSION := $(shell sed -n 's/^  VERSION \([0-9.]*\)$$/\1/p' CMakeLists.txt)

.PHONY: package dist lintian

package: deps all
	cmake --build $(BUILD) --target opmsg_changelogs
	cd $(BUILD) && cpack -G DEB -B $(CURDIR)/dist >/dev/null
	@ls -1 dist/*.deb
	@$(MAKE) --no-print-directory lintian

lintian:
	@if command -v lintian >/dev/null; then \
	  lintian --fail-on error --suppress-tags-from-file packaging/lintian-overrides.txt dist/*.deb \
	    && echo "lintian: no errors"; \
	else echo "lintian: not installed"; fi

dist:
	mkdir -p dist
	git archive --format=tar --prefix=opmsg-$(VERSION)/ HEAD | gzip -9n > dist/opmsg-$(VERSION).tar.gz
	@echo dist/opmsg-$(VERSION).tar.gz
