# loom_add_plugin(<kind> <name> <sources>...): one MODULE library libloom-<kind>-<name>.so built
# exactly as the host expects a plugin to be built. The in-tree plugins (plugins/CMakeLists.txt)
# and out-of-tree ones (find_package(LoomSDK)) both use this one definition.
#
#   - C++20 and position-independent code: the .so is loaded into a C++20 host.
#   - hidden visibility: only the entry alias (loom_plugin_entry_v1) is exported, so two plugins
#     never resolve each other's inline functions.
#   - -fno-gnu-unique (GCC): otherwise libstdc++'s inline statics become STB_GNU_UNIQUE symbols and
#     glibc never unloads the .so; with it the library goes away once its last instance does.
#   - -Wl,--no-undefined: a missing symbol fails the link, not the server's start-up.
# Every target made here is appended to the global property LOOM_PLUGIN_TARGETS.
set(LOOM_SDK_PLUGIN_KINDS attention quantization scheduler cache cache_offload semantic_cache speculator)

function(loom_add_plugin kind name)
  if(NOT kind IN_LIST LOOM_SDK_PLUGIN_KINDS)
    message(FATAL_ERROR "loom_add_plugin: unknown kind '${kind}' (valid: ${LOOM_SDK_PLUGIN_KINDS})")
  endif()
  if(NOT name MATCHES "^[A-Za-z0-9_-]+$")
    message(FATAL_ERROR "loom_add_plugin: name '${name}' must use letters, digits, '_' or '-'")
  endif()
  if(NOT ARGN)
    message(FATAL_ERROR "loom_add_plugin(${kind} ${name}): no sources given")
  endif()
  set(target loom-${kind}-${name})
  add_library(${target} MODULE ${ARGN})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "loom-${kind}-${name}"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  target_compile_features(${target} PRIVATE cxx_std_20)
  target_link_libraries(${target} PRIVATE Loom::sdk)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -fno-gnu-unique)
  endif()
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  set_property(GLOBAL APPEND PROPERTY LOOM_PLUGIN_TARGETS ${target})
endfunction()
