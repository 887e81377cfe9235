#!/usr/bin/env bash
# Cross-builds the library and the vkd CLI for aarch64 Linux and smoke-tests them under
# qemu-aarch64 on an arm64 lavapipe (issue 36), on an x86-64 Debian 12 host:
#
#   tools/arm64/cross_build_and_smoke.sh [HOST_VKD]
#
# HOST_VKD is a native x86-64 vkd (default: build/vkd, the README's first command builds it);
# it compiles the smoke models on the host and runs them for comparison.
#
# 1. deps       installs what is missing (only that; with everything present, no apt-get at
#               all): arm64 as a dpkg foreign architecture, the cross compiler, the arm64
#               Vulkan loader and lavapipe, qemu-user, and the host tools the build runs
# 2. configure  build-arm64, Release, cmake/toolchains/aarch64-linux-gnu.cmake, no tests
# 3. build      the targets vkdelegate, vkdmodel and vkd only (VKD_ARM64_JOBS jobs, default 1,
#               at nice 15: this is a shared 2-core machine; CI may raise it)
# 4. devices    `vkd devices` under qemu: the arm64 lavapipe must be listed
# 5. compile    the models, compiled by HOST_VKD: test/cli/graphs/{conv,linear}.json with
#               their weights and inputs (tools/arm64/make_smoke_inputs.py), and, where VKD_PYTHON
#               (default .venv/bin/python) has torch, examples/refinenet_lite generated
# 6. run-x86    every blob run by HOST_VKD on the x86-64 lavapipe
# 7. run-arm64  every blob run by the arm64 vkd under qemu on the arm64 lavapipe, with --check
#               (every tensor against the arm64 build's CPU reference interpreter)
# 8. compare    every output .npy of step 7 equals step 6's byte for byte (the int8 kernels are
#               exact and these models' float outputs are too, so any difference is a bug)
#
# Each step prints its wall time; any failure exits non-zero. Nothing is written outside
# build-arm64 and a temporary directory (removed at exit; VKD_ARM64_KEEP=1 keeps it): the
# pipeline caches of vkd and Mesa go there through XDG_CACHE_HOME.
set -Eeuo pipefail  # -E: the ERR trap below also fires inside functions

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build-arm64"
host_vkd="${1:-$root/build/vkd}"
jobs="${VKD_ARM64_JOBS:-1}"
python="${VKD_PYTHON:-$root/.venv/bin/python}"

# The arm64 lavapipe's manifest, and the x86-64 one for the native run: each vkd sees only
# lavapipe of its own architecture (the loader would try, and fail, to load the other's).
arm64_icd=/usr/share/vulkan/icd.d/lvp_icd.aarch64.json
x86_icd=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json

# Package and what it gives this script (host packages are the build's tools).
PACKAGES=(
  g++-aarch64-linux-gnu               # the cross compiler, glibc and libstdc++ for aarch64
  libvulkan-dev:arm64                 # the arm64 Vulkan loader to link (+ the shared headers)
  mesa-vulkan-drivers:arm64           # the arm64 lavapipe (pulls libc6:arm64: the run's ld.so)
  qemu-user                           # qemu-aarch64
  cmake ninja-build python3           # configure, build, the shader generator
  glslang-tools spirv-tools           # host tools: GLSL -> SPIR-V, spirv-val
  flatbuffers-compiler libflatbuffers-dev  # host flatc; its header-only library
  nlohmann-json3-dev                  # header-only JSON
)

step_name=""
step_start=0
step() {
  step_name="$1"
  step_start=$(date +%s%N)
  echo "== $step_name"
}
step_done() {
  local ms=$(( ($(date +%s%N) - step_start) / 1000000 ))
  printf '== %s: %d.%03d s\n' "$step_name" $((ms / 1000)) $((ms % 1000))
}
fail() {
  echo "cross_build_and_smoke: $*" >&2
  exit 1
}

install_missing() {
  local sudo="" missing=() pkg
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || fail "need root or sudo to install packages"
    sudo="sudo"
  fi
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "adding arm64 as a foreign architecture (dpkg --add-architecture arm64)"
    $sudo dpkg --add-architecture arm64
  fi
  for pkg in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "all ${#PACKAGES[@]} packages present"
    return
  fi
  echo "installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
}

# A command failing under set -e names the step it failed in.
trap 'echo "cross_build_and_smoke: step ${step_name:-?} failed" >&2' ERR

total_start=$(date +%s%N)

step deps
install_missing
[ -x "$host_vkd" ] \
  || fail "$host_vkd is not a native vkd (build one: cmake --build build --target vkd)"
[ -f "$arm64_icd" ] || fail "$arm64_icd missing (mesa-vulkan-drivers:arm64)"
[ -f "$x86_icd" ] || fail "$x86_icd missing (mesa-vulkan-drivers)"
step_done

step configure
nice -n 15 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" -DVKD_BUILD_TESTS=OFF
step_done

step build
nice -n 15 cmake --build "$build" -j "$jobs" --target vkdelegate vkdmodel vkd
# The binary must be aarch64, or the qemu runs below would prove nothing.
aarch64-linux-gnu-readelf -h "$build/vkd" | grep -q "Machine: *AArch64" \
  || fail "$build/vkd is not an AArch64 executable"
step_done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/vkd-arm64-smoke.XXXXXX")"
if [ "${VKD_ARM64_KEEP:-0}" = 1 ]; then
  echo "keeping $tmp"
else
  trap 'rm -rf "$tmp"' EXIT
fi
export XDG_CACHE_HOME="$tmp/cache"
mkdir -p "$tmp/x86" "$tmp/arm64"  # vkd creates an output directory, not its parents

# The arm64 vkd under qemu. Its interpreter, /lib/ld-linux-aarch64.so.1, is libc6:arm64's
# (multiarch, pulled in by mesa-vulkan-drivers:arm64), which finds every arm64 library in
# /lib/aarch64-linux-gnu and /usr/lib/aarch64-linux-gnu as on an arm64 Debian, so no -L prefix.
# (With -L /usr/aarch64-linux-gnu, the cross toolchain's glibc, `vkd --version` runs but
# `vkd devices` spins at 100% CPU in lavapipe's startup here; cause not pursued.)
# VK_DRIVER_FILES is the newer loaders' name (bookworm's 1.3.239 reads both),
# VK_ICD_FILENAMES the older one.
arm64_vkd() {
  VK_DRIVER_FILES="$arm64_icd" VK_ICD_FILENAMES="$arm64_icd" qemu-aarch64 "$build/vkd" "$@"
}
x86_vkd() {
  VK_DRIVER_FILES="$x86_icd" VK_ICD_FILENAMES="$x86_icd" "$host_vkd" "$@"
}

step devices
arm64_vkd devices | tee "$tmp/devices.txt"
grep -q "llvmpipe" "$tmp/devices.txt" || fail "the arm64 lavapipe (llvmpipe) is not listed"
step_done

# The models: name|graph IR|weights|input, all in $tmp.
MODELS=()
add_model() { MODELS+=("$1|$tmp/$2|$tmp/$3|$tmp/$4"); }

step compile
python3 "$root/tools/arm64/make_smoke_inputs.py" "$tmp"
cp "$root/test/cli/graphs/conv.json" "$root/test/cli/graphs/linear.json" "$tmp/"
add_model conv conv.json conv.safetensors conv_x.npy
add_model linear linear.json linear.safetensors lin_x.npy
# The README's first example, where the project's Python environment (torch) is there to
# generate it: a 28-op network, the kernels of a real model.
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
if "$python" -c "import torch" 2>/dev/null; then
  "$python" "$root/examples/refinenet_lite/make_model.py" "$tmp/refinenet_lite"
  add_model refinenet_lite refinenet_lite/refinenet_lite.json \
    refinenet_lite/refinenet_lite.safetensors refinenet_lite/image.npy
else
  echo "refinenet_lite skipped: $python cannot import torch" \
       "(VKD_PYTHON; third-party/install_deps.sh makes .venv)"
fi
for m in "${MODELS[@]}"; do
  IFS='|' read -r name graph weights _ <<<"$m"
  "$host_vkd" compile "$graph" --weights "$weights" -o "$tmp/$name.vkd"
done
step_done

step run-x86
for m in "${MODELS[@]}"; do
  IFS='|' read -r name _ _ input <<<"$m"
  x86_vkd run "$tmp/$name.vkd" --input "x=$input" --output-dir "$tmp/x86/$name"
done
step_done

step run-arm64
for m in "${MODELS[@]}"; do
  IFS='|' read -r name graph weights input <<<"$m"
  arm64_vkd run "$tmp/$name.vkd" --input "x=$input" --output-dir "$tmp/arm64/$name" \
    --check "$graph" --weights "$weights"
done
step_done

step compare
compared=0
for m in "${MODELS[@]}"; do
  IFS='|' read -r name _ <<<"$m"
  for x86_out in "$tmp/x86/$name"/*.npy; do
    arm64_out="$tmp/arm64/$name/$(basename "$x86_out")"
    [ -f "$arm64_out" ] || fail "$arm64_out missing"
    cmp "$x86_out" "$arm64_out" \
      || fail "$name: $(basename "$x86_out") differs between x86-64 and arm64"
    echo "$name/$(basename "$x86_out"): equal"
    compared=$((compared + 1))
  done
done
[ "$compared" -gt 0 ] || fail "no outputs to compare"
step_done

ms=$(( ($(date +%s%N) - total_start) / 1000000 ))
printf 'cross_build_and_smoke: passed (%d outputs equal) in %d.%03d s\n' "$compared" \
  $((ms / 1000)) $((ms % 1000))
