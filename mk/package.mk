# Packaging: `make package` builds the .deb files with CPack into dist/ and
# runs lintian on them; `make dist` makes a source tarball of HEAD that
# builds offline (`make dist-check` proves it).
#
# The packages come from their own build tree, configured for /usr (the
# prefix is compiled into opmsg.pc, the CMake files and opmsg-bench) with
# Debian's hardening flags, without the test suite.

VERSION   := $(shell sed -n 's/^  VERSION \([0-9.]*\)$$/\1/p' CMakeLists.txt)
PKG_BUILD ?= build-pkg
# OPMSG_BENCH_EMBED_SOURCE_PATH=OFF: an installed opmsg-bench must not look
# for its data in the build machine's source tree (bench/ adds the option).
PKG_CMAKE_ARGS ?= -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	"-DOPMSG_PARTS=tools;bench;src/mongoc-dropin" -DOPMSG_BENCH_EMBED_SOURCE_PATH=OFF
# What dpkg-buildflags gives a Debian package (every hardening feature);
# empty where dpkg-dev is missing (`make deps` installs it).
PKG_FLAGS = DEB_BUILD_MAINT_OPTIONS=hardening=+all
PKG_CFLAGS  := $(shell $(PKG_FLAGS) dpkg-buildflags --get CFLAGS 2>/dev/null) \
	$(shell $(PKG_FLAGS) dpkg-buildflags --get CPPFLAGS 2>/dev/null)
PKG_LDFLAGS := $(shell $(PKG_FLAGS) dpkg-buildflags --get LDFLAGS 2>/dev/null)
LINTIAN_ARGS ?= --fail-on error --display-level '>=warning'

.PHONY: package package-build lintian dist dist-check

package: deps package-build
	rm -f dist/*.deb
	cd $(PKG_BUILD) && cpack -G DEB -B $(CURDIR)/dist >/dev/null
	rm -rf dist/_CPack_Packages
	@ls -1 dist/*.deb
	@$(MAKE) --no-print-directory lintian

# Configured every time, so the tree always has exactly these settings.
# Never -Werror: a package must build with whatever compiler the release
# has (CI's OPMSG_WERROR is for the tree's own builds). Every optional part
# is required: the packages ship all codecs and ISA-L's CRC-32C (libopmsg-dev
# depends on their -dev packages).
package-build:
	cmake -S . -B $(PKG_BUILD) -G Ninja $(PKG_CMAKE_ARGS) -DOPMSG_WERROR=OFF \
	  -DOPMSG_WITH_SNAPPY=ON -DOPMSG_WITH_ZLIB=ON -DOPMSG_WITH_ZSTD=ON -DOPMSG_WITH_ISAL=ON \
	  "-DCMAKE_C_FLAGS=$(strip $(PKG_CFLAGS))" \
	  "-DCMAKE_EXE_LINKER_FLAGS=$(PKG_LDFLAGS)" \
	  "-DCMAKE_SHARED_LINKER_FLAGS=$(PKG_LDFLAGS)" >/dev/null
	cmake --build $(PKG_BUILD) -j $(JOBS)

# Errors fail; the warnings we keep are overridden inside the packages
# (packaging/lintian/<package>, each with its reason).
lintian:
	@if command -v lintian >/dev/null; then \
	  lintian $(LINTIAN_ARGS) dist/*.deb && echo "lintian: no errors"; \
	else echo "lintian: not installed (make deps installs it)"; exit 1; fi

# The committed tree (HEAD), not the working copy.
dist:
	mkdir -p dist
	git archive --format=tar --prefix=opmsg-$(VERSION)/ HEAD | gzip -9n > dist/opmsg-$(VERSION).tar.gz
	@git diff --quiet HEAD -- 2>/dev/null || echo "dist: note: uncommitted changes are not in the tarball (it is HEAD)"
	@echo dist/opmsg-$(VERSION).tar.gz

# Unpacks the tarball in a temporary directory, builds it without the
# network and runs the unit tests there.
dist-check:
	.ci/steps/package.sh dist-only
