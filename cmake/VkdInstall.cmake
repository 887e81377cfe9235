# Install rules: `cmake --install build --prefix P` gives
#
#   P/lib/libvkdelegate.so{,.0,.0.1.0}            the shared library (C and C++ API)
#   P/lib/libvkdmodel.so{,.0,.0.1.0}              whole models (vkd::Model, vkd_model_*; the
#                                                 compiler's interpreter inside), over libvkdelegate
#                                                 (found next to it: RUNPATH $ORIGIN)
#   P/include/vkdelegate/{vkd_delegate.h,Delegate.hpp,vkd_model.h,Model.hpp}
#   P/lib/cmake/vkdelegate/vkdelegateConfig.cmake, vkdelegateConfigVersion.cmake,
#                          vkdelegateTargets{,-<config>}.cmake   find_package(vkdelegate)
#   P/lib/pkgconfig/{vkdelegate,vkdmodel}.pc       pkg-config --cflags --libs vkdelegate (vkdmodel)
#   P/bin/vkd                                      the CLI (links the delegate statically)
#
# Only `vkdelegate` and `vkdmodel` are exported: the internal static libraries (vkd_runtime,
# vkd_core, vkd_shaders, vkd_serialization, vkd_compiler) are linked into the .so files with
# --exclude-libs and are neither installed nor exported. Consumers link vkdelegate::vkdelegate,
# and vkdelegate::vkdmodel for whole models.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VKD_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/vkdelegate" CACHE STRING
    "Where vkdelegateConfig.cmake is installed (relative to the prefix)")
mark_as_advanced(VKD_INSTALL_CMAKEDIR)

# The target's INSTALL_INTERFACE include dir is "include" (top-level CMakeLists.txt); add the
# GNU include dir when it was changed, so the exported target points at the installed headers.
set(_vkd_install_includes)
if(NOT CMAKE_INSTALL_INCLUDEDIR STREQUAL "include")
  set(_vkd_install_includes INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()

# libvkdmodel.so finds libvkdelegate.so, installed next to it, through RUNPATH $ORIGIN wherever
# the prefix is. An app's own RUNPATH does not help: the loader searches it only for the app's
# NEEDED entries, and an app that calls only vkd_model_* has none on libvkdelegate.so (an unused
# -lvkdelegate is dropped under --as-needed, Debian's and Ubuntu's default). Packagers installing
# into the system library directory may configure with -DCMAKE_SKIP_INSTALL_RPATH=ON.
set_target_properties(vkdmodel PROPERTIES INSTALL_RPATH "$ORIGIN")

install(TARGETS vkdelegate vkdmodel
  EXPORT vkdelegateTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT vkdelegate_runtime
          NAMELINK_COMPONENT vkdelegate_development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT vkdelegate_development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT vkdelegate_runtime
  ${_vkd_install_includes})

install(FILES
  ${PROJECT_SOURCE_DIR}/runtime/delegate/include/vkdelegate/vkd_delegate.h
  ${PROJECT_SOURCE_DIR}/runtime/delegate/include/vkdelegate/Delegate.hpp
  ${PROJECT_SOURCE_DIR}/model/include/vkdelegate/vkd_model.h
  ${PROJECT_SOURCE_DIR}/model/include/vkdelegate/Model.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/vkdelegate
  COMPONENT vkdelegate_development)

install(TARGETS vkd
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT vkdelegate_tools)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/vkdelegate DESTINATION lib/python3/dist-packages
  COMPONENT vkdelegate_tools PATTERN __pycache__ EXCLUDE)

# The ExecuTorch backend, where it was built (executorch_backend/): PREFIX/lib/libvkd_executorch.so
# (an ExecuTorch app links it; `import vkdelegate.executorch` loads it from vkdelegate's library
# folder) and PREFIX/bin/vkd_et_runner. Their RUNPATH finds libvkdelegate.so.0 in PREFIX/lib and
# ExecuTorch's libraries in the executorch package they were built against (VKD_ET_LIBRARY_DIR).
if(TARGET vkd_executorch)
  set_target_properties(vkd_executorch PROPERTIES
    INSTALL_RPATH "$ORIGIN;${VKD_ET_LIBRARY_DIR}")
  set_target_properties(vkd_et_runner PROPERTIES
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${VKD_ET_LIBRARY_DIR}")
  install(TARGETS vkd_executorch
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT vkdelegate_runtime)
  install(TARGETS vkd_et_runner
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT vkdelegate_tools)
endif()

# The license travels with the library (share/doc/vkdelegate/LICENSE).
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/CHANGELOG.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT vkdelegate_runtime)

# --- CMake package -------------------------------------------------------------
install(EXPORT vkdelegateTargets
  NAMESPACE vkdelegate::
  FILE vkdelegateTargets.cmake
  DESTINATION ${VKD_INSTALL_CMAKEDIR}
  COMPONENT vkdelegate_development)

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/vkdelegateConfig.cmake.in
  ${PROJECT_BINARY_DIR}/vkdelegateConfig.cmake
  INSTALL_DESTINATION ${VKD_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# 0.x: a minor version may break the API; SameMajorVersion once 1.0 is out.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/vkdelegateConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/vkdelegateConfig.cmake
  ${PROJECT_BINARY_DIR}/vkdelegateConfigVersion.cmake
  DESTINATION ${VKD_INSTALL_CMAKEDIR}
  COMPONENT vkdelegate_development)

# --- pkg-config ------------------------------------------------------------------
# The prefix is only known at install time (`cmake --install build --prefix P`), so the .pc is
# configured then, into the build tree, and installed from there by the next rule (which
# honours DESTDIR). Relative GNU dirs become ${prefix}/..., absolute ones stay as given.
foreach(_vkd_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_vkd_dir}}")
    set(VKD_PC_${_vkd_dir} "${CMAKE_INSTALL_${_vkd_dir}}")
  else()
    set(VKD_PC_${_vkd_dir} "\${prefix}/${CMAKE_INSTALL_${_vkd_dir}}")
  endif()
endforeach()
foreach(_vkd_pc vkdelegate vkdmodel)
  set(_vkd_pc_template "${CMAKE_CURRENT_LIST_DIR}/${_vkd_pc}.pc.in")
  set(_vkd_pc_file "${PROJECT_BINARY_DIR}/pkgconfig/${_vkd_pc}.pc")
  install(CODE "
    set(VKD_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    set(VKD_PC_LIBDIR [==[${VKD_PC_LIBDIR}]==])
    set(VKD_PC_INCLUDEDIR [==[${VKD_PC_INCLUDEDIR}]==])
    set(VKD_PC_VERSION [==[${PROJECT_VERSION}]==])
    configure_file([==[${_vkd_pc_template}]==] [==[${_vkd_pc_file}]==] @ONLY)
    " COMPONENT vkdelegate_development)
  install(FILES ${_vkd_pc_file}
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
    COMPONENT vkdelegate_development)
endforeach()

# --- the Python package: component vkdelegate_python (pyproject.toml, scikit-build-core) ---------
# `pip install .` and `pip wheel .` build the libraries and vkd, then install only this component
# into the wheel's root:
#
#   vkdelegate/...                         python/vkdelegate: exporter, runtime, per-layer tools
#   vkdelegate/_native/libvkdelegate.so.0  one file per library, under its SONAME
#   vkdelegate/_native/libvkdmodel.so.0    RUNPATH $ORIGIN: finds libvkdelegate.so.0 beside it
#   vkdelegate/_native/vkd                 the CLI (the `vkd` console script execs it)
#   vkdelegate/_native/vkd_execute.abi3.so the runtime's extension module, where it is built
#                                          (python/CMakeLists.txt; else the runtime uses ctypes)
#   vkdelegate/_native/libvkd_executorch.so  the ExecuTorch backend and its runner, where they
#   vkdelegate/_native/vkd_et_runner         are built (executorch_backend/); RUNPATH $ORIGIN and
#                                            $ORIGIN/../../executorch/lib, the executorch wheel's
#                                            libraries when both packages are in site-packages
#
# EXCLUDE_FROM_ALL: a plain `cmake --install build` installs none of this (it is a Python
# package's layout, not a prefix's). `cmake --install build --component vkdelegate_python
# --prefix P` gives the wheel's layout under P (test/install/check_python_package.py).
set(_vkd_native_dir vkdelegate/_native)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/vkdelegate DESTINATION .
  COMPONENT vkdelegate_python EXCLUDE_FROM_ALL PATTERN __pycache__ EXCLUDE)
install(TARGETS vkdelegate vkdmodel vkd
  LIBRARY DESTINATION ${_vkd_native_dir} COMPONENT vkdelegate_python NAMELINK_SKIP EXCLUDE_FROM_ALL
  RUNTIME DESTINATION ${_vkd_native_dir} COMPONENT vkdelegate_python EXCLUDE_FROM_ALL)
if(TARGET vkd_python_execute)
  install(TARGETS vkd_python_execute LIBRARY DESTINATION ${_vkd_native_dir}
    COMPONENT vkdelegate_python EXCLUDE_FROM_ALL)
endif()
# A wheel is a zip archive: it holds no symbolic links, and pip would unpack libX.so.0 ->
# libX.so.0.1.0 as two full copies. So the versioned file is renamed onto its SONAME link: one
# file per library, under the name the loader looks for (libvkdmodel.so.0 NEEDs
# libvkdelegate.so.0). The install rule above has already stripped it and set its RUNPATH.
foreach(_vkd_lib vkdelegate vkdmodel)
  install(CODE "
    set(_vkd_dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${_vkd_native_dir}\")
    file(RENAME \"\${_vkd_dir}/$<TARGET_FILE_NAME:${_vkd_lib}>\"
                \"\${_vkd_dir}/$<TARGET_SONAME_FILE_NAME:${_vkd_lib}>\")
    " COMPONENT vkdelegate_python EXCLUDE_FROM_ALL)
endforeach()
# The ExecuTorch backend: the same files, their RUNPATH rewritten for site-packages (the install
# rule above set the prefix's, with the build machine's executorch folder; a shorter RUNPATH
# fits in its place).
if(TARGET vkd_executorch)
  install(TARGETS vkd_executorch vkd_et_runner
    LIBRARY DESTINATION ${_vkd_native_dir} COMPONENT vkdelegate_python EXCLUDE_FROM_ALL
    RUNTIME DESTINATION ${_vkd_native_dir} COMPONENT vkdelegate_python EXCLUDE_FROM_ALL)
  foreach(_vkd_et_file $<TARGET_FILE_NAME:vkd_executorch> $<TARGET_FILE_NAME:vkd_et_runner>)
    install(CODE "
      file(RPATH_SET FILE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${_vkd_native_dir}/${_vkd_et_file}\"
                     NEW_RPATH [==[$ORIGIN:$ORIGIN/../../executorch/lib]==])
      " COMPONENT vkdelegate_python EXCLUDE_FROM_ALL)
  endforeach()
endif()
