# CPack pre-build script (CPACK_PRE_BUILD_SCRIPTS): runs on the staged
# package trees before the .deb files are made, and does what debhelper
# would: man pages compressed with gzip -9n (Debian policy 12.1), ELF files
# without the .comment and .note sections, the static library without
# debugging symbols (dh_strip's options).
find_program(OPMSG_GZIP gzip REQUIRED)
find_program(OPMSG_STRIP strip REQUIRED)

file(GLOB_RECURSE staged LIST_DIRECTORIES false "${CPACK_TEMPORARY_DIRECTORY}/*")

# libopmsgN's symbols file is made from abi/libopmsg.symbols: a package must
# not ship a library whose exports that list does not describe exactly.
if(CPACK_OPMSG_SYMBOLS_FILE)
  file(STRINGS "${CPACK_OPMSG_SYMBOLS_FILE}" listed REGEX "^[^#]")
  foreach(f IN LISTS staged)
    if(f MATCHES "/libopmsg\\.so\\.[0-9]+\\.[0-9]+\\.[0-9]+$" AND NOT IS_SYMLINK "${f}")
      execute_process(COMMAND sh "${CPACK_OPMSG_CHECK_ABI}" --generate "${f}"
                      OUTPUT_VARIABLE exported RESULT_VARIABLE rc)
      string(REGEX REPLACE "#[^\n]*\n" "" exported "${exported}")
      string(STRIP "${exported}" exported)
      string(REPLACE "\n" ";" exported "${exported}")
      if(NOT rc EQUAL 0 OR NOT exported STREQUAL listed)
        message(FATAL_ERROR "opmsg packaging: the exports of ${f} differ from "
          "${CPACK_OPMSG_SYMBOLS_FILE}; regenerate it with "
          "abi/check-abi.sh --generate <build>/src/libopmsg.so")
      endif()
    endif()
  endforeach()
endif()
foreach(f IN LISTS staged)
  if(IS_SYMLINK "${f}")
    continue()
  endif()
  if(f MATCHES "/share/man/man[1-9]/[^/]+\\.[1-9]$")
    execute_process(COMMAND ${OPMSG_GZIP} -9nf "${f}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "opmsg packaging: gzip ${f} failed")
    endif()
    continue()
  endif()
  file(READ "${f}" magic LIMIT 8 HEX)
  set(args "")
  if(magic MATCHES "^7f454c46")          # ELF: programs and shared objects
    set(args --remove-section=.comment --remove-section=.note)
    if(f MATCHES "\\.so(\\.[0-9.]+)?$")
      list(APPEND args --strip-unneeded)
    endif()
  elseif(magic STREQUAL "213c617263683e0a")  # "!<arch>\n": a static library
    set(args --strip-debug --remove-section=.comment --remove-section=.note
             --enable-deterministic-archives)
  endif()
  if(args)
    execute_process(COMMAND ${OPMSG_STRIP} ${args} "${f}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "opmsg packaging: strip ${f} failed")
    endif()
  endif()
endforeach()
