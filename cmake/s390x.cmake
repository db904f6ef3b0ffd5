# Cross-compiles to s390x (64-bit, big-endian) for `make check-portable`:
# Debian's s390x-linux-gnu-gcc; libbson, cmocka and the codecs from the
# sysroot that scripts/s390x-sysroot.sh unpacks (OPMSG_S390X_SYSROOT, by
# default sysroot/ in the build tree); ctest runs every test program under
# qemu-user with that sysroot as its root for libraries.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR s390x)
set(CMAKE_C_COMPILER s390x-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE s390x-linux-gnu)

# Read again for each try_compile, from another directory: the sysroot is
# passed on, not derived twice.
if(NOT OPMSG_S390X_SYSROOT)
  set(OPMSG_S390X_SYSROOT ${CMAKE_BINARY_DIR}/sysroot)
endif()
set(OPMSG_S390X_SYSROOT ${OPMSG_S390X_SYSROOT} CACHE PATH "The s390x libraries (scripts/s390x-sysroot.sh)")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES OPMSG_S390X_SYSROOT)
if(NOT EXISTS ${OPMSG_S390X_SYSROOT}/usr/include/libbson-1.0)
  message(FATAL_ERROR "${OPMSG_S390X_SYSROOT} has no s390x libbson: run scripts/s390x-sysroot.sh first")
endif()

# libc is the cross compiler's own; the other libraries are the sysroot's
# (and what they link, such as snappy's libstdc++, is found there too).
set(CMAKE_FIND_ROOT_PATH ${OPMSG_S390X_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR} ${OPMSG_S390X_SYSROOT}/usr/lib/s390x-linux-gnu/pkgconfig:${OPMSG_S390X_SYSROOT}/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_SYSROOT_DIR} ${OPMSG_S390X_SYSROOT})
set(ENV{PKG_CONFIG_PATH} "")
set(_opmsg_rpath_link "-Wl,-rpath-link,${OPMSG_S390X_SYSROOT}/usr/lib/s390x-linux-gnu")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_opmsg_rpath_link}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${_opmsg_rpath_link}")

find_program(OPMSG_QEMU_S390X qemu-s390x REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${OPMSG_QEMU_S390X} -L ${OPMSG_S390X_SYSROOT})
