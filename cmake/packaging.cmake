# Debian packages with CPack, split the way Debian would:
#   libopmsg2        the shared library (component runtime; the number is
#                    OPMSG_SOVERSION, the SONAME's)
#   libopmsg-dev     headers, static library, pkg-config and CMake files,
#                    the library documentation and examples (dev)
#   opmsg            the opmsg and opmsg-bench programs, their man pages (tools)
#   libopmsg-mongoc  the libmongoc drop-in and its man page (dropin)
# `make package` builds them in a tree configured for /usr (scripts/package.sh, preset pkg);
# dpkg-shlibdeps fills in the library dependencies. packaging/ holds the
# CPack scripts that finish the staged trees and the lintian overrides.
# The packages are for the Debian release they are built on: the names of
# libbson's and libmongoc's packages, and the libmongoc series the drop-in
# depends on, come from that release (see below and docs/distros.md).

set(OPMSG_DEB_VERSION "${PROJECT_VERSION}-1")
set(OPMSG_DEB_DIR ${PROJECT_BINARY_DIR}/debian)
set(OPMSG_DEB_PACKAGES runtime:libopmsg${OPMSG_SOVERSION} dev:libopmsg-dev tools:opmsg dropin:libopmsg-mongoc)
set(OPMSG_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)

# The prefix is compiled into opmsg.pc, the CMake package files and
# opmsg-bench (its data directory), so a package is only right when the
# tree was configured for the prefix the package installs to.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
if(NOT CMAKE_INSTALL_PREFIX STREQUAL CPACK_PACKAGING_INSTALL_PREFIX)
  message(STATUS "opmsg: CMAKE_INSTALL_PREFIX is ${CMAKE_INSTALL_PREFIX}, not /usr: "
                 "use `make package` (a /usr build tree) to build the .deb files")
endif()

# Every package carries the copyright file and the changelogs, made from NEWS.
find_program(GZIP_EXECUTABLE gzip REQUIRED)
add_custom_command(
  OUTPUT ${OPMSG_DEB_DIR}/changelog.gz ${OPMSG_DEB_DIR}/changelog.Debian.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${OPMSG_DEB_DIR}
  COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/news-to-changelog.sh
          ${PROJECT_SOURCE_DIR}/NEWS ${OPMSG_DEB_VERSION} ${OPMSG_DEB_DIR}
  DEPENDS ${PROJECT_SOURCE_DIR}/NEWS ${PROJECT_SOURCE_DIR}/cmake/news-to-changelog.sh
  VERBATIM)
add_custom_target(opmsg_changelogs ALL
  DEPENDS ${OPMSG_DEB_DIR}/changelog.gz ${OPMSG_DEB_DIR}/changelog.Debian.gz)

# /usr/share/doc/<package>, whatever the project's own DOCDIR is.
foreach(pair ${OPMSG_DEB_PACKAGES})
  string(REPLACE ":" ";" pair ${pair})
  list(GET pair 0 comp)
  list(GET pair 1 pkg)
  set(OPMSG_DOCDIR_${comp} ${CMAKE_INSTALL_DATAROOTDIR}/doc/${pkg})
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/copyright
                ${OPMSG_DEB_DIR}/changelog.gz ${OPMSG_DEB_DIR}/changelog.Debian.gz
          DESTINATION ${OPMSG_DOCDIR_${comp}} COMPONENT ${comp})
  # Overrides for the lintian warnings we keep, each with its reason (only
  # in the packages' /usr tree: elsewhere lintian never looks).
  if(EXISTS ${OPMSG_PACKAGING_DIR}/lintian/${pkg} AND CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    install(FILES ${OPMSG_PACKAGING_DIR}/lintian/${pkg}
            DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides COMPONENT ${comp})
  endif()
  string(TOUPPER ${comp} COMP)
  set(CPACK_DEBIAN_${COMP}_PACKAGE_NAME ${pkg})
endforeach()

# opmsg-bench's man page (tools/ and the drop-in install their own).
if(OPMSG_BUILD_TOOLS)
  install(FILES ${PROJECT_SOURCE_DIR}/docs/opmsg-bench.1
          DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)
endif()

# The documentation goes with the package of the people who read it: the
# command-line and benchmark docs with opmsg, the drop-in's with
# libopmsg-mongoc, the README, API, guides and examples with libopmsg-dev.
file(GLOB OPMSG_DOC_FILES CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/docs/*.md ${PROJECT_SOURCE_DIR}/docs/*.png)
set(OPMSG_DOCS_tools cli.md benchmarks.md bench.png guide-tap.md tap.md)
set(OPMSG_DOCS_dropin dropin.md guide-dropin.md guide-libmongoc.md)
foreach(doc ${OPMSG_DOC_FILES})
  get_filename_component(name ${doc} NAME)
  set(comp dev)
  if(name IN_LIST OPMSG_DOCS_tools)
    set(comp tools)
  elseif(name IN_LIST OPMSG_DOCS_dropin)
    set(comp dropin)
  endif()
  install(FILES ${doc} DESTINATION ${OPMSG_DOCDIR_${comp}} COMPONENT ${comp})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${OPMSG_DOCDIR_dev} COMPONENT dev)
file(GLOB OPMSG_EXAMPLES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/examples/*.c)
if(OPMSG_EXAMPLES)
  install(FILES ${OPMSG_EXAMPLES} DESTINATION ${OPMSG_DOCDIR_dev}/examples COMPONENT dev)
endif()

# Control files. Both shared-object packages activate the ldconfig trigger
# (dpkg runs ldconfig once, after all packages of a run are unpacked): the
# drop-in too, so that LD_PRELOAD=libopmsg-mongoc.so finds it by name.
file(WRITE ${OPMSG_DEB_DIR}/triggers "activate-noawait ldconfig\n")
file(WRITE ${OPMSG_DEB_DIR}/shlibs
  "libopmsg ${OPMSG_SOVERSION} libopmsg${OPMSG_SOVERSION} (>= ${PROJECT_VERSION})\n")
# The symbols file: every symbol of abi/libopmsg.symbols (the ABI check
# keeps it equal to the library's exports), with the first version that
# had it under this SONAME: OPMSG_SOVERSION_SINCE for those of the nodes
# before it (the OPMSG_0.x nodes up to 0.4 are older, but libopmsg.so.2 began
# with 0.5.0); a later node's symbols get its release (OPMSG_0.6: 0.6.0).
set(OPMSG_SYMBOLS_SOURCE ${PROJECT_SOURCE_DIR}/abi/libopmsg.symbols)
set(OPMSG_DEB_CONTROL_RUNTIME ${OPMSG_DEB_DIR}/triggers ${OPMSG_DEB_DIR}/shlibs)
if(NOT EXISTS ${OPMSG_SYMBOLS_SOURCE})
  message(FATAL_ERROR "no ${OPMSG_SYMBOLS_SOURCE}: the symbols file is made from it")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${OPMSG_SYMBOLS_SOURCE})
file(STRINGS ${OPMSG_SYMBOLS_SOURCE} syms REGEX "^[A-Za-z_][A-Za-z0-9_]*@@")
set(text "libopmsg.so.${OPMSG_SOVERSION} libopmsg${OPMSG_SOVERSION} #MINVER#\n")
string(APPEND text "* Build-Depends-Package: libopmsg-dev\n")
set(nodes "")
foreach(sym ${syms})
  string(REGEX REPLACE "^(.*)@@(.*)$" "\\1;\\2" parts ${sym})
  list(GET parts 0 name)
  list(GET parts 1 node)
  set(since ${OPMSG_SOVERSION_SINCE})
  string(REGEX REPLACE "^OPMSG_" "" node_release ${node})
  if("${node_release}.0" VERSION_GREATER since)
    set(since "${node_release}.0")
  endif()
  if(NOT node IN_LIST nodes)
    list(APPEND nodes ${node})
    string(APPEND text " ${node}@${node} ${since}\n")
  endif()
  string(APPEND text " ${name}@${node} ${since}\n")
endforeach()
file(WRITE ${OPMSG_DEB_DIR}/symbols "${text}")
list(APPEND OPMSG_DEB_CONTROL_RUNTIME ${OPMSG_DEB_DIR}/symbols)
# The pre-build script refuses a library whose exports differ from it.
set(CPACK_OPMSG_SYMBOLS_FILE ${OPMSG_SYMBOLS_SOURCE})
set(CPACK_OPMSG_CHECK_ABI ${PROJECT_SOURCE_DIR}/abi/check-abi.sh)

# --- This release's libbson and libmongoc packages --------------------------
# Debian 12: libbson-dev, libbson-1.0-0, libmongoc-1.0-0 (1.23); Debian 13:
# libbson-dev, libbson-1.0-0t64, libmongoc-1.0-0t64 (1.30); sid: libbson-dev,
# libbson2-2, libmongoc2-2 (2.x). Rather than a table, ask dpkg which package
# owns the library the build links: the development symlink (libbson.so)
# belongs to the -dev package, the file it points to to the runtime one.
# Off Debian (no dpkg-query), or to build for another set, give the names:
#   -DOPMSG_DEB_BSON_DEV=... -DOPMSG_DEB_MONGOC_PACKAGE=...
find_program(OPMSG_DPKG_QUERY dpkg-query)
function(opmsg_deb_owner out file)
  set(pkg "")
  if(OPMSG_DPKG_QUERY AND EXISTS "${file}")
    execute_process(COMMAND ${OPMSG_DPKG_QUERY} -S "${file}"
                    OUTPUT_VARIABLE owner RESULT_VARIABLE rc ERROR_QUIET)
    # "libbson-dev:amd64: /usr/lib/..." (a path may have several owners).
    if(rc EQUAL 0 AND owner MATCHES "^([^:, ]+)")
      set(pkg ${CMAKE_MATCH_1})
    endif()
  endif()
  set(${out} "${pkg}" PARENT_SCOPE)
endfunction()
# The first library of a pkg-config module's link line whose name has word.
function(opmsg_pc_library out libs word)
  set(found "")
  foreach(lib IN LISTS libs)
    get_filename_component(name "${lib}" NAME)
    if(name MATCHES "${word}")
      set(found "${lib}")
      break()
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# libbson: the -dev package for libopmsg-dev (the runtime one comes from
# dpkg-shlibdeps), at least the series opmsg.pc asks for, and of the same
# major version (libbson 2's headers are another package's on 1.x systems).
string(REGEX MATCH "^[0-9]+" OPMSG_BSON_MAJOR "${BSON_VERSION}")
opmsg_pc_library(bson_lib "${BSON_LINK_LIBRARIES}" "bson")
opmsg_deb_owner(bson_dev "${bson_lib}")
if(NOT bson_dev)
  set(bson_dev libbson-dev)
endif()
set(OPMSG_DEB_BSON_DEV "${bson_dev}" CACHE STRING "Debian package of libbson's headers")
if(OPMSG_BSON_MODULE STREQUAL "bson2")
  set(OPMSG_DEB_BSON_DEV_RANGE "(>= 2.0)")
else()
  set(OPMSG_DEB_BSON_DEV_RANGE "(>= 1.23)")
endif()
math(EXPR next_major "${OPMSG_BSON_MAJOR} + 1")
set(OPMSG_DEB_BSON_DEV_DEPENDS
    "${OPMSG_DEB_BSON_DEV} ${OPMSG_DEB_BSON_DEV_RANGE}, ${OPMSG_DEB_BSON_DEV} (<< ${next_major})")

# libmongoc: the drop-in's package depends on the runtime package of the
# libmongoc this release has, limited to its series (major.minor): the
# drop-in replaces private functions whose layout changes between series,
# and its gate forwards to libmongoc's own code on any other. The series the
# drop-in knows are listed here; keep the list equal to the gate's
# (src/mongoc-dropin/). A release with another series still gets a package,
# with a warning: its drop-in stays inactive there.
set(OPMSG_DROPIN_SERIES "1.23;1.30;2.5" CACHE STRING
    "libmongoc series (major.minor) the drop-in supports")
pkg_check_modules(OPMSG_DEB_MONGOC QUIET ${OPMSG_MONGOC_MODULE})
set(mongoc_pkg "")
set(OPMSG_DROPIN_MONGOC_SERIES "")
if(OPMSG_DEB_MONGOC_FOUND)
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" OPMSG_DROPIN_MONGOC_SERIES "${OPMSG_DEB_MONGOC_VERSION}")
  opmsg_pc_library(mongoc_lib "${OPMSG_DEB_MONGOC_LINK_LIBRARIES}" "mongoc")
  if(mongoc_lib)
    get_filename_component(mongoc_real "${mongoc_lib}" REALPATH)
    opmsg_deb_owner(mongoc_pkg "${mongoc_real}")
  endif()
endif()
if(NOT OPMSG_DROPIN_MONGOC_SERIES)
  # No libmongoc development files here: the series of the first list entry
  # of this libbson generation, under Debian 12's and sid's names.
  if(OPMSG_BSON_MODULE STREQUAL "bson2")
    set(OPMSG_DROPIN_MONGOC_SERIES 2.5)
  else()
    set(OPMSG_DROPIN_MONGOC_SERIES 1.23)
  endif()
endif()
if(NOT mongoc_pkg)
  if(OPMSG_BSON_MODULE STREQUAL "bson2")
    set(mongoc_pkg libmongoc2-2)
  else()
    set(mongoc_pkg libmongoc-1.0-0)
  endif()
endif()
set(OPMSG_DEB_MONGOC_PACKAGE "${mongoc_pkg}" CACHE STRING "Debian package of the libmongoc shared library")
if(NOT OPMSG_DROPIN_MONGOC_SERIES IN_LIST OPMSG_DROPIN_SERIES)
  message(WARNING "opmsg packaging: libmongoc ${OPMSG_DROPIN_MONGOC_SERIES} is not a series "
    "the drop-in supports (${OPMSG_DROPIN_SERIES}): libopmsg-mongoc is built, "
    "but on this release it only forwards to libmongoc's own code")
endif()
string(REPLACE "." ";" series_parts "${OPMSG_DROPIN_MONGOC_SERIES}")
list(GET series_parts 0 series_major)
list(GET series_parts 1 series_minor)
math(EXPR series_next "${series_minor} + 1")
set(OPMSG_DEB_DROPIN_DEPENDS
    "${OPMSG_DEB_MONGOC_PACKAGE} (>= ${OPMSG_DROPIN_MONGOC_SERIES}), ${OPMSG_DEB_MONGOC_PACKAGE} (<< ${series_major}.${series_next})")
message(STATUS "opmsg packaging: libopmsg-dev needs ${OPMSG_DEB_BSON_DEV_DEPENDS}; "
               "libopmsg-mongoc needs ${OPMSG_DEB_DROPIN_DEPENDS}")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME opmsg)
set(CPACK_PACKAGE_VENDOR "The opmsg authors")
set(CPACK_PACKAGE_CONTACT "opmsg maintainers <maintainers@opmsg.invalid>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev tools dropin)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SOURCE opmsg)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE ${PROJECT_HOMEPAGE_URL})
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# After staging: compress man pages, strip what dh_strip strips. After
# building: drop the ldconfig postinst/postrm CPack adds (the trigger does it).
set(CPACK_PRE_BUILD_SCRIPTS ${OPMSG_PACKAGING_DIR}/deb-prebuild.cmake)
set(CPACK_POST_BUILD_SCRIPTS ${OPMSG_PACKAGING_DIR}/deb-postbuild.cmake)

# Descriptions: the first line is the synopsis, the rest the long text.
# CPackDeb puts any summary but CPack's default in front of every
# component's description (lintian: description-synopsis-is-duplicated), and
# the default would otherwise be the project's DESCRIPTION: so the default.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA "${OPMSG_DEB_CONTROL_RUNTIME}")
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "MongoDB OP_MSG wire protocol library
libopmsg parses and validates MongoDB wire messages (OP_MSG, OP_COMPRESSED,
OP_QUERY, OP_REPLY) strictly and without copying, merges an OP_MSG's body
and document sequences into one BSON document with one allocation, and
encodes messages with batch splitting, CRC-32C checksums and compression.

This package contains the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libopmsg${OPMSG_SOVERSION} (= ${OPMSG_DEB_VERSION}), ${OPMSG_DEB_BSON_DEV_DEPENDS}, libisal-dev, libsnappy-dev, zlib1g-dev, libzstd-dev")
set(CPACK_DEBIAN_DEV_DESCRIPTION "MongoDB OP_MSG wire protocol library - development files
libopmsg parses, validates, merges and encodes MongoDB wire messages.

This package contains the headers, the static library, a pkg-config file
and a CMake package (find_package(opmsg), target opmsg::opmsg), with the
API documentation and example programs.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION database)
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "MongoDB wire protocol inspector and benchmark
opmsg merges, checks, dumps and builds MongoDB wire messages, and its tap
command is a logging proxy that shows every command and reply, merged.
opmsg-bench measures the merger against decode-and-re-encode.")

set(CPACK_DEBIAN_DROPIN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_DROPIN_PACKAGE_DEPENDS "${OPMSG_DEB_DROPIN_DEPENDS}")
set(CPACK_DEBIAN_DROPIN_PACKAGE_ENHANCES "${OPMSG_DEB_MONGOC_PACKAGE}")
set(CPACK_DEBIAN_DROPIN_PACKAGE_CONTROL_EXTRA "${OPMSG_DEB_DIR}/triggers")
set(CPACK_DEBIAN_DROPIN_DESCRIPTION "safe OP_MSG reply path for libmongoc ${OPMSG_DROPIN_MONGOC_SERIES} (preload)
libopmsg-mongoc.so replaces the reply parsing of Debian's libmongoc ${OPMSG_DROPIN_MONGOC_SERIES}
when preloaded: checksums are verified, hostile replies are refused cleanly
instead of crashing, and document sequences in replies are merged.")

include(CPack)
