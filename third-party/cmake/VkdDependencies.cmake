# System dependencies of vkdelegate. Everything comes from Debian packages;
# nothing is downloaded or vendored.
#
#   Vulkan headers + loader   libvulkan-dev      -> Vulkan::Vulkan
#   Python 3 (shader codegen) python3            -> Python3_EXECUTABLE
#   glslangValidator          glslang-tools      -> VKD_GLSLANG_VALIDATOR
#   spirv-val                 spirv-tools        -> VKD_SPIRV_VAL
#   GoogleTest (tests only)   libgtest-dev       -> GTest::gtest, GTest::gtest_main
include_guard(GLOBAL)

# Only the headers and the loader library are taken from FindVulkan. It always looks for the
# SDK's glslc and glslangValidator too and would print "missing components: glslc" (a tool this
# project never uses), so it runs quietly and the result is reported here; glslangValidator is
# found below with find_program.
find_package(Vulkan QUIET)
if(NOT Vulkan_FOUND)
  message(FATAL_ERROR
    "Vulkan headers or loader not found. Install the Debian package 'libvulkan-dev' "
    "(apt-get install libvulkan-dev), or point CMAKE_PREFIX_PATH at a Vulkan SDK.")
endif()
message(STATUS "Found Vulkan: ${Vulkan_LIBRARY} (headers ${Vulkan_VERSION})")
find_package(Python3 REQUIRED COMPONENTS Interpreter)

# The project's Python environment (torch, torchvision, torchao, executorch, numpy, pinned in
# python/requirements.lock; third-party/install_deps.sh creates it): the exporter, the Python
# runtime and every test that needs torch run with it. The build itself needs only python3.
set(VKD_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
    "Python of the project's environment (python/requirements.lock), for the torch tests")
if(VKD_BUILD_TESTS AND NOT EXISTS "${VKD_PYTHON}")
  message(WARNING "VKD_PYTHON ${VKD_PYTHON} does not exist: the exporter, model and oracle "
                  "tests will fail. Run third-party/install_deps.sh (it creates .venv from "
                  "python/requirements.lock), or set -DVKD_PYTHON=/path/to/python.")
endif()

find_program(VKD_GLSLANG_VALIDATOR NAMES glslangValidator
  DOC "glslangValidator: compiles the GLSL compute shaders to SPIR-V")
if(NOT VKD_GLSLANG_VALIDATOR)
  message(FATAL_ERROR
    "glslangValidator not found. Install the Debian package 'glslang-tools' "
    "(apt-get install glslang-tools), or set -DVKD_GLSLANG_VALIDATOR=/path/to/glslangValidator.")
endif()

find_program(VKD_SPIRV_VAL NAMES spirv-val
  DOC "spirv-val: validates every compiled shader variant")
if(NOT VKD_SPIRV_VAL)
  message(FATAL_ERROR
    "spirv-val not found. Install the Debian package 'spirv-tools' "
    "(apt-get install spirv-tools), or set -DVKD_SPIRV_VAL=/path/to/spirv-val.")
endif()

if(VKD_BUILD_TESTS)
  find_package(GTest)
  if(NOT GTest_FOUND)
    message(WARNING
      "GoogleTest not found; install the Debian package 'libgtest-dev' to build the tests.")
  endif()
endif()
