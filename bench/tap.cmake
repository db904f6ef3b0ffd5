# bench/tap.cmake - included by bench/CMakeLists.txt: the latency `opmsg tap`
# adds to a round trip (ping loop, median and p99, direct vs through the tap;
# bench/tap-latency.sh). `cmake --build BUILD --target bench-tap` runs it.
# tools/ is configured before bench/, so opmsg_cli is known here when the
# tap is built.
if(TARGET opmsg_cli AND NOT OPMSG_SANITIZE AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
  add_executable(tap-latency ${CMAKE_CURRENT_LIST_DIR}/tap-latency.c)
  target_link_libraries(tap-latency PRIVATE opmsg_static)
  target_compile_definitions(tap-latency PRIVATE _POSIX_C_SOURCE=200809L)
  opmsg_warnings(tap-latency)
  add_custom_target(bench-tap
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/tap-latency.sh
            $<TARGET_FILE:tap-latency> $<TARGET_FILE:opmsg_cli>
    DEPENDS tap-latency opmsg_cli
    USES_TERMINAL
    COMMENT "opmsg tap: round-trip latency added (ping loop, direct vs tap)")
endif()
