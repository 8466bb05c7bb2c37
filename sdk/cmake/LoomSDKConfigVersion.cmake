# Version of the Loom SDK in this tree. While the major version is 0, a request is compatible
# when it asks for 0.y with y <= this minor (0.x releases may only add to the SDK).
set(PACKAGE_VERSION "0.1.0")

if(PACKAGE_FIND_VERSION_MAJOR STREQUAL "")
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(NOT PACKAGE_FIND_VERSION_MAJOR EQUAL 0 OR PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
