# bench/dropin.cmake - included by bench/CMakeLists.txt: the overhead of
# libopmsg-mongoc.so on an ordinary libmongoc program (ping/find round trips,
# median and p99, with and without LD_PRELOAD; and _mongoc_rpc_scatter per
# call). `cmake --build BUILD --target bench-dropin` runs it.
# bench/ is configured before src/mongoc-dropin, so the drop-in target is
# named through generator expressions only.
if(OPMSG_BUILD_DROPIN AND NOT OPMSG_SANITIZE AND CMAKE_SYSTEM_NAME STREQUAL "Linux"
   AND EXISTS ${PROJECT_SOURCE_DIR}/src/mongoc-dropin/CMakeLists.txt)
  pkg_check_modules(OPMSG_BENCH_MONGOC IMPORTED_TARGET ${OPMSG_MONGOC_MODULE})
  if(OPMSG_BENCH_MONGOC_FOUND)
    add_executable(dropin-overhead ${CMAKE_CURRENT_LIST_DIR}/dropin-overhead.c)
    target_link_libraries(dropin-overhead PRIVATE PkgConfig::OPMSG_BENCH_MONGOC ${CMAKE_DL_LIBS})
    opmsg_warnings(dropin-overhead)
    add_custom_target(bench-dropin
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/dropin-overhead.sh
              $<TARGET_FILE:dropin-overhead> $<TARGET_FILE:opmsg_mongoc>
      DEPENDS dropin-overhead opmsg_mongoc
      USES_TERMINAL
      COMMENT "libopmsg-mongoc.so overhead: ping/find with and without the drop-in")
  endif()
endif()
