# vkd_api_shared_library(NAME OBJECTS <object library> INCLUDE_DIR <dir> MAP <version script>)
#
# A shared library for apps (libvkdelegate.so, libvkdmodel.so) made of an object library's
# objects: the static archives it links stay inside (--exclude-libs), so apps see only what the
# version script MAP exports (which also hides the weak std:: template instances the API's code
# pulls in); every symbol is resolved at link time (--no-undefined); versioned with the project.
# INCLUDE_DIR holds its public headers (installed under include/).
include_guard(GLOBAL)

function(vkd_api_shared_library name)
  cmake_parse_arguments(ARG "" "OBJECTS;INCLUDE_DIR;MAP" "" ${ARGN})
  add_library(${name} SHARED $<TARGET_OBJECTS:${ARG_OBJECTS}>)
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${ARG_INCLUDE_DIR}>
    $<INSTALL_INTERFACE:include>)
  target_link_options(${name} PRIVATE -Wl,--exclude-libs,ALL -Wl,--no-undefined
    -Wl,--version-script=${ARG_MAP})
  set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS ${ARG_MAP})
  set_target_properties(${name} PROPERTIES
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endfunction()
