# Configures and builds sdk/examples from scratch in BUILD_DIR against the SDK package in
# SDK_DIR (run by ctest as the fixture abi_sdk_example_build). Warnings are errors.
foreach(var SOURCE_DIR BUILD_DIR SDK_DIR CXX_COMPILER)
  if(NOT ${var})
    message(FATAL_ERROR "build_sdk_example.cmake: ${var} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE "${BUILD_DIR}")
set(configure_args
  -S "${SOURCE_DIR}" -B "${BUILD_DIR}"
  "-DLoomSDK_DIR=${SDK_DIR}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_BUILD_TYPE=Release"
  "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Wpedantic -Werror")
if(COMPILER_LAUNCHER)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${COMPILER_LAUNCHER}")
endif()
if(PREFIX_PATH)
  list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${PREFIX_PATH}")
endif()

execute_process(COMMAND "${CMAKE_COMMAND}" ${configure_args} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring sdk/examples out of tree failed (${rc})")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building sdk/examples out of tree failed (${rc})")
endif()
if(NOT EXISTS "${BUILD_DIR}/libloom-scheduler-priority.so")
  message(FATAL_ERROR "sdk/examples built, but ${BUILD_DIR}/libloom-scheduler-priority.so is missing")
endif()
