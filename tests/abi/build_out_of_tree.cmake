# Configures and builds a plugin project (sdk/examples, a `loom-plugin new` skeleton) from scratch
# in BUILD_DIR, out of tree, the way a third party does. Warnings are errors. Against either
#   SDK_DIR  a LoomSDK package directory (the source tree's sdk/cmake), or
#   PREFIX   an installed Loom: -DCMAKE_PREFIX_PATH=PREFIX only, no LoomSDK_DIR, no path into the
#            source tree; find_package(LoomSDK) must resolve inside PREFIX.
# Checks that EXPECT_FILE was built; with RUN_CTEST, runs the project's own tests too (all must
# pass, RUN_CTEST_COUNT of them when given). Run by ctest (tests/abi, tests/install).
foreach(var SOURCE_DIR BUILD_DIR CXX_COMPILER EXPECT_FILE)
  if(NOT ${var})
    message(FATAL_ERROR "build_out_of_tree.cmake: ${var} is not set")
  endif()
endforeach()
if(NOT SDK_DIR AND NOT PREFIX)
  message(FATAL_ERROR "build_out_of_tree.cmake: set SDK_DIR or PREFIX")
endif()

file(REMOVE_RECURSE "${BUILD_DIR}")
set(configure_args
  -S "${SOURCE_DIR}" -B "${BUILD_DIR}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_BUILD_TYPE=Release"
  "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Wpedantic -Werror")
if(COMPILER_LAUNCHER)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${COMPILER_LAUNCHER}")
endif()
if(PREFIX)
  list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${PREFIX}")
else()
  list(APPEND configure_args "-DLoomSDK_DIR=${SDK_DIR}")
  if(PREFIX_PATH)  # where the host build found its own dependencies
    list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${PREFIX_PATH}")
  endif()
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" ${configure_args} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring ${SOURCE_DIR} out of tree failed (${rc})")
endif()

# find_package must have used the package asked for: the installed one, or SDK_DIR.
if(PREFIX)
  set(want_dir "${PREFIX}/lib/cmake/LoomSDK")
else()
  set(want_dir "${SDK_DIR}")
endif()
file(STRINGS "${BUILD_DIR}/CMakeCache.txt" sdk_dir_line REGEX "^LoomSDK_DIR:")
string(REGEX REPLACE "^LoomSDK_DIR:[A-Z]*=" "" sdk_dir "${sdk_dir_line}")
get_filename_component(sdk_dir "${sdk_dir}" REALPATH)
get_filename_component(want_dir "${want_dir}" REALPATH)
if(NOT sdk_dir STREQUAL want_dir)
  message(FATAL_ERROR "find_package(LoomSDK) resolved to '${sdk_dir}', not '${want_dir}'")
endif()

execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building ${SOURCE_DIR} out of tree failed (${rc})")
endif()
if(NOT EXISTS "${BUILD_DIR}/${EXPECT_FILE}")
  message(FATAL_ERROR "${SOURCE_DIR} built, but ${BUILD_DIR}/${EXPECT_FILE} is missing")
endif()
if(RUN_CTEST)
  get_filename_component(cmake_bin "${CMAKE_COMMAND}" DIRECTORY)  # -P scripts have no CMAKE_CTEST_COMMAND
  execute_process(COMMAND "${cmake_bin}/ctest" --test-dir "${BUILD_DIR}" --output-on-failure
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message(STATUS "${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the tests of ${SOURCE_DIR} failed (${rc})")
  endif()
  if(RUN_CTEST_COUNT AND NOT out MATCHES "100% tests passed, 0 tests failed out of ${RUN_CTEST_COUNT}")
    message(FATAL_ERROR "expected ${RUN_CTEST_COUNT} passing tests in ${SOURCE_DIR}")
  endif()
endif()
