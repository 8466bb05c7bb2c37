# `loom-plugin new KIND NAME DIR` with the installed loom-plugin, then the skeleton built against
# the installed prefix only, its own two tests run (its test program, and `loom-plugin inspect`
# through LoomSDK_PLUGIN_TOOL), and `loom-plugin inspect` on the result showing KIND and NAME.
foreach(var PREFIX KIND NAME WORK_DIR CXX_COMPILER)
  if(NOT ${var})
    message(FATAL_ERROR "new_plugin_skeleton.cmake: ${var} is not set")
  endif()
endforeach()
set(tool "${PREFIX}/bin/loom-plugin")
set(src "${WORK_DIR}/${KIND}-${NAME}")
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND "${tool}" new ${KIND} ${NAME} "${src}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "loom-plugin new ${KIND} ${NAME} failed (${rc})")
endif()
# Never overwrites: a second run must refuse and leave the files alone.
execute_process(COMMAND "${tool}" new ${KIND} ${NAME} "${src}" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "already exists")
  message(FATAL_ERROR "a second loom-plugin new into ${src} did not refuse (${rc}): ${err}")
endif()

set(file "libloom-${KIND}-${NAME}.so")
execute_process(COMMAND "${CMAKE_COMMAND}" -DSOURCE_DIR=${src} -DBUILD_DIR=${src}/build -DPREFIX=${PREFIX}
                        -DCXX_COMPILER=${CXX_COMPILER} -DCOMPILER_LAUNCHER=${COMPILER_LAUNCHER}
                        -DEXPECT_FILE=${file} -DRUN_CTEST=ON -DRUN_CTEST_COUNT=2
                        -P "${CMAKE_CURRENT_LIST_DIR}/../abi/build_out_of_tree.cmake"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the ${KIND} skeleton did not build and pass its tests against ${PREFIX}")
endif()

execute_process(COMMAND "${tool}" inspect "${src}/build/${file}" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "loom-plugin inspect refused the ${KIND} skeleton (${rc})")
endif()
foreach(line "kind: ${KIND}\n" "name: ${NAME}\n" "version: 0.1.0\n" "accepted by this host: yes\n")
  string(FIND "${out}" "${line}" at)
  if(at LESS 0)
    message(FATAL_ERROR "loom-plugin inspect output lacks '${line}'")
  endif()
endforeach()
