# bench/fork.cmake - included by bench/CMakeLists.txt: fork-bench, the
# runner of the fork's benchmark (bench/fork/, docs/benchmarks.md). It loads
# the two modules bench/fork/run.sh builds against mongo-c-driver master
# unpatched and patched; `make bench-fork` does all of it.
if(OPMSG_BUILD_TOOLS AND NOT OPMSG_SANITIZE AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
  add_executable(fork-bench ${CMAKE_CURRENT_LIST_DIR}/fork/fork-bench.c
    ${CMAKE_CURRENT_LIST_DIR}/bench-util.c)
  target_link_libraries(fork-bench PRIVATE opmsg_static PkgConfig::BSON ${CMAKE_DL_LIBS})
  target_include_directories(fork-bench PRIVATE ${PROJECT_SOURCE_DIR}/src)
  opmsg_warnings(fork-bench)
endif()
