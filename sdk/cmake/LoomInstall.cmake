# `cmake --install build --prefix P` lays out a self-contained Loom:
#   P/bin/                    loom-server and the tools (loom-plugin, loom-convert, ...)
#   P/lib/loom/plugins/       the in-tree plugins (the server searches <bin>/../lib/loom/plugins)
#   P/include/loom/           the SDK headers
#   P/lib/cmake/LoomSDK/      LoomSDKConfig.cmake (relocatable), its version file, LoomPlugin.cmake
#   P/share/loom/configs/     default.toml (loom-server looks for <bin>/../share/loom/configs/)
# Included last from the top-level CMakeLists.txt, so every target of the subdirectories exists.
set(LOOM_INSTALL_PLUGIN_DIR lib/loom/plugins)

set(_loom_programs loom-server loom-plugin loom-convert loom-bench loom-tokenize loom-bench-attention)
foreach(_program ${_loom_programs})
  if(TARGET ${_program})
    install(TARGETS ${_program} RUNTIME DESTINATION bin COMPONENT runtime)
  endif()
endforeach()

get_property(_loom_plugin_targets GLOBAL PROPERTY LOOM_PLUGIN_TARGETS)
install(TARGETS ${_loom_plugin_targets} LIBRARY DESTINATION ${LOOM_INSTALL_PLUGIN_DIR} COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/configs/default.toml DESTINATION share/loom/configs COMPONENT runtime)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/sdk/include/loom DESTINATION include COMPONENT sdk
        FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
install(FILES ${PROJECT_SOURCE_DIR}/sdk/cmake/LoomSDKConfig.cmake
              ${PROJECT_SOURCE_DIR}/sdk/cmake/LoomSDKConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/sdk/cmake/LoomPlugin.cmake
        DESTINATION lib/cmake/LoomSDK COMPONENT sdk)
