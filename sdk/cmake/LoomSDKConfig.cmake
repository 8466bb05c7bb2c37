# LoomSDK: what an out-of-tree plugin needs to build against Loom.
#
#   find_package(LoomSDK 0.1 REQUIRED)          # -DLoomSDK_DIR=<loom>/sdk/cmake
#   loom_add_plugin(scheduler my_sched my_sched.cpp)   # -> libloom-scheduler-my_sched.so
#
# Provides the header-only target Loom::sdk (C ABI headers + sdk.hpp, C++20, Boost headers),
# the function loom_add_plugin(<kind> <name> <sources>...) and LoomSDK_ABI_VERSION.
include(CMakeFindDependencyMacro)
find_dependency(Boost 1.74)

get_filename_component(_loom_sdk_include "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)
if(NOT EXISTS "${_loom_sdk_include}/loom/plugin.h")
  set(LoomSDK_FOUND FALSE)
  set(LoomSDK_NOT_FOUND_MESSAGE "loom/plugin.h not found under ${_loom_sdk_include}")
  return()
endif()

# The ABI version the headers define; the host requires plugins built with exactly its own.
file(STRINGS "${_loom_sdk_include}/loom/plugin.h" _loom_abi_line
     REGEX "^#define LOOM_ABI_VERSION [0-9]+")
string(REGEX REPLACE "^#define LOOM_ABI_VERSION ([0-9]+).*" "\\1" LoomSDK_ABI_VERSION
       "${_loom_abi_line}")
set(LoomSDK_INCLUDE_DIRS "${_loom_sdk_include}")

# Inside the Loom build the target already exists (sdk/CMakeLists.txt); do not redefine it.
if(NOT TARGET Loom::sdk)
  add_library(Loom::sdk INTERFACE IMPORTED)
  set_target_properties(Loom::sdk PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_loom_sdk_include}"
    INTERFACE_LINK_LIBRARIES Boost::headers
    INTERFACE_COMPILE_FEATURES cxx_std_20)
endif()

set(LOOM_SDK_PLUGIN_KINDS attention quantization scheduler cache cache_offload semantic_cache)

# loom_add_plugin(<kind> <name> <sources>...): one MODULE library libloom-<kind>-<name>.so, with
# hidden visibility (only the entry alias is exported) and no undefined symbols left for load time.
if(NOT COMMAND loom_add_plugin)
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
    add_library(loom-${kind}-${name} MODULE ${ARGN})
    set_target_properties(loom-${kind}-${name} PROPERTIES
      PREFIX "lib"
      OUTPUT_NAME "loom-${kind}-${name}"
      CXX_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON
      POSITION_INDEPENDENT_CODE ON)
    target_compile_features(loom-${kind}-${name} PRIVATE cxx_std_20)
    target_link_libraries(loom-${kind}-${name} PRIVATE Loom::sdk)
    if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
      target_link_options(loom-${kind}-${name} PRIVATE -Wl,--no-undefined)
    endif()
  endfunction()
endif()

set(LoomSDK_FOUND TRUE)
