# CMAKE_PROJECT_libmongoc_INCLUDE of scripts/libmongoc-suite.sh (docs/libmongoc-suite.md): at the
# end of src/libmongoc it swaps the static libmongoc/libbson of test-libmongoc (and of
# 1.30's test-libmongoc-lib) for the system's shared ones, keeping their include
# directories, definitions and other dependencies. The source is not changed.
if (CMAKE_VERSION VERSION_LESS 3.19)
   message (FATAL_ERROR "libmongoc-suite needs CMake 3.19 or later")
endif ()

function (_opmsg_suite_swap out)
   set (result)
   foreach (item IN LISTS ARGN)
      # (also inside generator expressions: $<$<NOT:...>:mongoc_static>)
      string (REGEX REPLACE "mongo::(mongoc|bson)_static|(mongoc|bson)::static"
              "opmsg_suite_system" item "${item}")
      string (REGEX REPLACE "(^|[^A-Za-z0-9_])(mongoc|bson)_static([^A-Za-z0-9_]|$)"
              "\\1opmsg_suite_system\\3" item "${item}")
      list (APPEND result "${item}")
   endforeach ()
   set (${out} "${result}" PARENT_SCOPE)
endfunction ()

function (_opmsg_suite_relink)
   if (NOT TARGET test-libmongoc)
      message (FATAL_ERROR "libmongoc-suite: no target test-libmongoc (ENABLE_TESTS off?)")
   endif ()
   add_library (opmsg_suite_system INTERFACE)
   set (deps)
   foreach (t mongoc_static bson_static)
      if (TARGET ${t})
         target_include_directories (opmsg_suite_system INTERFACE
            $<TARGET_PROPERTY:${t},INTERFACE_INCLUDE_DIRECTORIES>)
         target_compile_definitions (opmsg_suite_system INTERFACE
            $<TARGET_PROPERTY:${t},INTERFACE_COMPILE_DEFINITIONS>)
         get_target_property (l ${t} INTERFACE_LINK_LIBRARIES)
         if (l)
            list (APPEND deps ${l})
         endif ()
      endif ()
   endforeach ()
   set (kept)
   foreach (d IN LISTS deps)
      if (NOT d MATCHES "(mongoc|bson)(_static|::static)")
         list (APPEND kept "${d}")
      endif ()
   endforeach ()
   target_link_libraries (opmsg_suite_system INTERFACE ${OPMSG_SUITE_SYSTEM_LIBS} ${kept})
   foreach (t test-libmongoc test-libmongoc-lib)
      if (TARGET ${t})
         foreach (p LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
            get_target_property (v ${t} ${p})
            if (v)
               _opmsg_suite_swap (v ${v})
               if (v MATCHES "(mongoc|bson)(_static|::static)")
                  message (FATAL_ERROR "libmongoc-suite: ${t} still links a static library: ${v}")
               endif ()
               set_property (TARGET ${t} PROPERTY ${p} "${v}")
            endif ()
         endforeach ()
      endif ()
   endforeach ()
   # Private functions the shared libraries do not export (1.30's libbson
   # is built with hidden visibility) but the tests call: their source files
   # from the tree, compiled like the static library's and hidden, so that
   # only the test's own calls reach them.
   set (n 0)
   foreach (f IN LISTS OPMSG_SUITE_PRIVATE_SOURCES)
      if (f MATCHES "/libbson/")
         set (like bson_static)
      else ()
         set (like mongoc_static)
      endif ()
      math (EXPR n "${n} + 1")
      add_library (opmsg_suite_private_${n} OBJECT EXCLUDE_FROM_ALL "${f}")
      set_target_properties (opmsg_suite_private_${n} PROPERTIES
         C_VISIBILITY_PRESET hidden
         INCLUDE_DIRECTORIES "$<TARGET_PROPERTY:${like},INCLUDE_DIRECTORIES>"
         COMPILE_DEFINITIONS "$<TARGET_PROPERTY:${like},COMPILE_DEFINITIONS>")
      target_sources (test-libmongoc PRIVATE $<TARGET_OBJECTS:opmsg_suite_private_${n}>)
   endforeach ()
   message (STATUS "libmongoc-suite: test-libmongoc linked with ${OPMSG_SUITE_SYSTEM_LIBS}")
endfunction ()

cmake_language (DEFER CALL _opmsg_suite_relink)
