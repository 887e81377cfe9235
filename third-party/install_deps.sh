#!/usr/bin/env bash
# Installs the system packages vkdelegate builds and tests with, on Debian 12 / Ubuntu 22.04+.
# Idempotent: installs only what is missing, and does nothing (not even apt-get update) when
# everything is present. No code is downloaded from anywhere else.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build python3   # toolchain; python3 runs the shader generator
  pkg-config                                   # the install test builds an app with pkg-config
  libvulkan-dev                                # Vulkan headers + loader
  glslang-tools spirv-tools                    # GLSL -> SPIR-V, spirv-val
  flatbuffers-compiler libflatbuffers-dev      # delegate blob schema
  nlohmann-json3-dev                           # JSON (header-only): the compiler's graph IR and
                                               # safetensors headers
  googletest libgtest-dev libbenchmark-dev     # tests and benchmarks
  clang libclang-rt-dev                        # sanitizer + libFuzzer build (test/fuzz/); compiler-rt
                                               # is only a Recommends of clang, so named here
  vulkan-validationlayers                      # Khronos validation layer (tests run under it)
  mesa-vulkan-drivers                          # lavapipe: the CPU Vulkan device, the fallback
  python3-numpy python3-torch                  # oracle tests (torch computes the expected values)
  python3-torchvision                          # the exporter's model tests and examples
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "install_deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
