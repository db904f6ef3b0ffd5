# Debian packages with CPack, split the way Debian would:
#   libopmsg0        the shared library (runtime)
#   libopmsg-dev     headers, static library, pkg-config and CMake files (dev)
#   opmsg            the opmsg and opmsg-bench programs (tools)
#   libopmsg-mongoc  the libmongoc 1.23 drop-in (dropin)
# `make package` builds them; dpkg-shlibdeps fills in the library dependencies.

set(OPMSG_DEB_VERSION "${PROJECT_VERSION}-1")
set(OPMSG_DEB_DIR ${PROJECT_BINARY_DIR}/debian)
set(OPMSG_DEB_PACKAGES runtime:libopmsg0 dev:libopmsg-dev tools:opmsg dropin:libopmsg-mongoc)

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

foreach(pair ${OPMSG_DEB_PACKAGES})
  string(REPLACE ":" ";" pair ${pair})
  list(GET pair 0 comp)
  list(GET pair 1 pkg)
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/copyright
                ${OPMSG_DEB_DIR}/changelog.gz ${OPMSG_DEB_DIR}/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DOCDIR}/../${pkg} COMPONENT ${comp})
  string(TOUPPER ${comp} COMP)
  set(CPACK_DEBIAN_${COMP}_PACKAGE_NAME ${pkg})
endforeach()

# The library's ldconfig trigger (dpkg runs ldconfig once after installing).
file(WRITE ${OPMSG_DEB_DIR}/triggers "activate-noawait ldconfig\n")
file(WRITE ${OPMSG_DEB_DIR}/shlibs "libopmsg 0 libopmsg0 (>= ${PROJECT_VERSION})\n")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME opmsg)
set(CPACK_PACKAGE_VENDOR "The opmsg authors")
set(CPACK_PACKAGE_CONTACT "opmsg maintainers <maintainers@opmsg.invalid>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "MongoDB OP_MSG wire protocol library")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev tools dropin)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE ${PROJECT_HOMEPAGE_URL})
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA "${OPMSG_DEB_DIR}/triggers;${OPMSG_DEB_DIR}/shlibs")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "MongoDB OP_MSG wire protocol library
 libopmsg parses and validates MongoDB wire messages (OP_MSG, OP_COMPRESSED,
 OP_QUERY, OP_REPLY) strictly and without copying, merges an OP_MSG's body
 and document sequences into one BSON document with one allocation, and
 encodes messages with batch splitting, CRC-32C checksums and compression.")

set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libopmsg0 (= ${OPMSG_DEB_VERSION}), libbson-dev (>= 1.23), libisal-dev, libsnappy-dev, zlib1g-dev, libzstd-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION "MongoDB OP_MSG wire protocol library - development files
 Headers, the static library, a pkg-config file and a CMake package
 (find_package(opmsg), target opmsg::opmsg) for libopmsg.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION database)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "MongoDB wire protocol inspector and benchmark
 opmsg merges, checks, dumps and builds MongoDB wire messages, and its tap
 command is a logging proxy that shows every command and reply, merged.
 opmsg-bench measures the merger against decode-and-re-encode.")

set(CPACK_DEBIAN_DROPIN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_DROPIN_PACKAGE_DEPENDS "libmongoc-1.0-0 (>= 1.23), libmongoc-1.0-0 (<< 1.24)")
set(CPACK_COMPONENT_DROPIN_DESCRIPTION "safe OP_MSG reply path for libmongoc 1.23 (preload)
 libopmsg-mongoc.so replaces the reply parsing of Debian's libmongoc 1.23
 when preloaded: checksums are verified, hostile replies are refused cleanly
 instead of crashing, and document sequences in replies are merged.")

include(CPack)
