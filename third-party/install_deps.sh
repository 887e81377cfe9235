#!/usr/bin/env bash
# Installs what vkdelegate builds and tests with, on Debian 12 / Ubuntu 22.04+:
# 1. the system packages (apt), only those missing (with all present, not even apt-get update);
# 2. the pinned Python environment (python/requirements.lock: torch, torchvision, torchao,
#    executorch, numpy) as a venv in the repository's .venv (VKD_VENV=DIR puts it elsewhere),
#    created or brought up to date only when the lock file changed since the last install.
# Packages come from Debian's archive and from PyPI (pip's configured indexes); nothing else.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build python3   # toolchain; python3 runs the shader generator
  python3-venv                                 # creates the project's Python environment
  python3-dev                                  # Python headers: the runtime's extension module
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
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} system packages present"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install_deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    SUDO="sudo"
  fi
  echo "install_deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

"$(dirname "$0")/python_env.sh"
