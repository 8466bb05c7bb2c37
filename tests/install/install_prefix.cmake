# ctest fixture: `cmake --install BUILD_DIR --prefix PREFIX` into an emptied PREFIX, then checks
# the layout the SDK and the installed server rely on.
foreach(var BUILD_DIR PREFIX SOURCE_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "install_prefix.cmake: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" RESULT_VARIABLE rc
                OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed (${rc})")
endif()
foreach(f bin/loom-server bin/loom-plugin include/loom/plugin.h include/loom/sdk.hpp
          lib/cmake/LoomSDK/LoomSDKConfig.cmake lib/cmake/LoomSDK/LoomSDKConfigVersion.cmake
          lib/cmake/LoomSDK/LoomPlugin.cmake lib/loom/plugins/libloom-scheduler-fcfs.so
          lib/loom/plugins/libloom-cache-paged.so share/loom/configs/default.toml)
  if(NOT EXISTS "${PREFIX}/${f}")
    message(FATAL_ERROR "installed tree lacks ${PREFIX}/${f}")
  endif()
endforeach()
# Relocatable: no installed CMake file records where the build, the sources or the prefix were.
file(GLOB cmake_files "${PREFIX}/lib/cmake/LoomSDK/*.cmake")
foreach(f ${cmake_files})
  file(READ "${f}" text)
  foreach(path "${BUILD_DIR}" "${SOURCE_DIR}" "${PREFIX}")
    string(FIND "${text}" "${path}" at)
    if(at GREATER -1)
      message(FATAL_ERROR "${f} names ${path}: the installed SDK is not relocatable")
    endif()
  endforeach()
endforeach()
message(STATUS "installed into ${PREFIX}")
