# LoomSDK: what an out-of-tree plugin needs to build against Loom.
#
#   find_package(LoomSDK 0.1 REQUIRED)   # -DCMAKE_PREFIX_PATH=<install prefix>
#                                        # (or -DLoomSDK_DIR=<loom checkout>/sdk/cmake)
#   loom_add_plugin(scheduler my_sched my_sched.cpp)   # -> libloom-scheduler-my_sched.so
#
# Provides the header-only target Loom::sdk (C ABI headers + sdk.hpp, C++20, Boost headers),
# the function loom_add_plugin(<kind> <name> <sources>...) (LoomPlugin.cmake, the same one the
# in-tree plugins use), LoomSDK_ABI_VERSION, LoomSDK_INCLUDE_DIRS and, for an installed SDK,
# LoomSDK_PLUGIN_TOOL (the loom-plugin program of the same install, when present).
#
# Relocatable: every path is found from this file's own directory, so the install prefix can be
# moved or copied. Installed: <prefix>/lib/cmake/LoomSDK/ -> <prefix>/include; in the source
# tree: sdk/cmake/ -> sdk/include.
include(CMakeFindDependencyMacro)
find_dependency(Boost 1.74)

set(_loom_sdk_include "")
foreach(_loom_candidate "${CMAKE_CURRENT_LIST_DIR}/../include" "${CMAKE_CURRENT_LIST_DIR}/../../../include")
  get_filename_component(_loom_candidate "${_loom_candidate}" ABSOLUTE)
  if(EXISTS "${_loom_candidate}/loom/plugin.h")
    set(_loom_sdk_include "${_loom_candidate}")
    break()
  endif()
endforeach()
if(NOT _loom_sdk_include)
  set(LoomSDK_FOUND FALSE)
  set(LoomSDK_NOT_FOUND_MESSAGE
      "loom/plugin.h not found under ${CMAKE_CURRENT_LIST_DIR}/../include or ${CMAKE_CURRENT_LIST_DIR}/../../../include")
  return()
endif()

# The ABI version the headers define; the host requires plugins built with exactly its own.
file(STRINGS "${_loom_sdk_include}/loom/plugin.h" _loom_abi_line
     REGEX "^#define LOOM_ABI_VERSION [0-9]+")
string(REGEX REPLACE "^#define LOOM_ABI_VERSION ([0-9]+).*" "\\1" LoomSDK_ABI_VERSION
       "${_loom_abi_line}")
set(LoomSDK_INCLUDE_DIRS "${_loom_sdk_include}")

# loom-plugin of an installed SDK: <prefix>/bin next to <prefix>/include.
get_filename_component(_loom_bin "${_loom_sdk_include}/../bin" ABSOLUTE)
if(EXISTS "${_loom_bin}/loom-plugin")
  set(LoomSDK_PLUGIN_TOOL "${_loom_bin}/loom-plugin")
endif()

# Inside the Loom build the target already exists (sdk/CMakeLists.txt); do not redefine it.
if(NOT TARGET Loom::sdk)
  add_library(Loom::sdk INTERFACE IMPORTED)
  set_target_properties(Loom::sdk PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_loom_sdk_include}"
    INTERFACE_LINK_LIBRARIES Boost::headers
    INTERFACE_COMPILE_FEATURES cxx_std_20)
endif()

if(NOT COMMAND loom_add_plugin)
  include("${CMAKE_CURRENT_LIST_DIR}/LoomPlugin.cmake")
endif()

set(LoomSDK_FOUND TRUE)
