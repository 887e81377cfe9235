# Cross-compiles vkdelegate for aarch64 Linux with Debian's cross toolchain, from an x86-64
# Debian 12 host with arm64 added as a foreign architecture (multiarch):
#
#   cmake -S . -B build-arm64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake -DVKD_BUILD_TESTS=OFF
#
# tools/arm64/cross_build_and_smoke.sh installs what this needs and runs the result under
# qemu-aarch64. Only the C++ is cross-compiled: the shaders (glslangValidator, spirv-val), the
# FlatBuffers header (flatc) and the family lists (python3) are made by the host's programs.
#
# Where the target's files are, on such a host:
#   /usr/aarch64-linux-gnu/{include,lib}  glibc and libstdc++ of the cross toolchain
#                                         (g++-aarch64-linux-gnu)
#   /usr/lib/aarch64-linux-gnu            arm64 libraries installed as PKG:arm64, e.g. the
#                                         Vulkan loader (libvulkan-dev:arm64)
#   /usr/include, /usr/share              headers and CMake packages shared by all architectures
#                                         (Vulkan headers, FlatBuffers, nlohmann_json)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# No CMAKE_SYSROOT: Debian's cross compiler is built for multiarch and already searches both
# /usr/aarch64-linux-gnu and /usr/lib/aarch64-linux-gnu (+ /usr/include); a --sysroot of
# /usr/aarch64-linux-gnu would hide the multiarch libraries and the shared headers from it.
# CMake's own searches get the same view: the cross prefix and the host's root, in which
# find_library looks under lib/aarch64-linux-gnu first (the library architecture below) and
# never under lib/x86_64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)

# Programs (python3, glslangValidator, spirv-val, flatc) run on the host; libraries, headers
# and CMake packages are the target's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
