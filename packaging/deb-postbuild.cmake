# CPack post-build script (CPACK_POST_BUILD_SCRIPTS): CPack adds a postinst
# and a postrm that call ldconfig to every package with a shared object in
# /usr/lib, and cannot be told not to. Our packages use dpkg's ldconfig
# trigger instead (lintian: maintscript-calls-ldconfig), so those two scripts
# are taken out and the package is rebuilt: it has no maintainer scripts.
find_program(OPMSG_DPKG_DEB dpkg-deb REQUIRED)

foreach(deb IN LISTS CPACK_PACKAGE_FILES)
  if(NOT deb MATCHES "\\.deb$")
    continue()
  endif()
  set(tree "${deb}.tree")
  file(REMOVE_RECURSE "${tree}")
  execute_process(COMMAND ${OPMSG_DPKG_DEB} --raw-extract "${deb}" "${tree}"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "opmsg packaging: cannot extract ${deb}")
  endif()
  set(changed FALSE)
  foreach(script postinst postrm)
    set(s "${tree}/DEBIAN/${script}")
    if(EXISTS "${s}")
      file(READ "${s}" body)
      # Only CPack's own script: a real maintainer script would be kept.
      string(REGEX REPLACE "[ \t\n]+" " " flat "${body}")
      if(flat MATCHES "^#!/bin/sh set -e (if \\[ \"\\$1\" = \"(configure|remove)\" \\]; then )?ldconfig( fi)? ?$")
        file(REMOVE "${s}")
        set(changed TRUE)
      else()
        message(WARNING "opmsg packaging: ${deb}: ${script} is not CPack's ldconfig call; kept")
      endif()
    endif()
  endforeach()
  if(changed)
    execute_process(COMMAND ${OPMSG_DPKG_DEB} --root-owner-group -Zxz --build "${tree}" "${deb}"
                    OUTPUT_QUIET RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "opmsg packaging: cannot rebuild ${deb}")
    endif()
  endif()
  file(REMOVE_RECURSE "${tree}")
endforeach()
