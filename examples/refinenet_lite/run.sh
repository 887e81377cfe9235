#!/usr/bin/env bash
# Generates the refinenet_lite model, compiles it and runs it on the default Vulkan device.
#
#   examples/refinenet_lite/run.sh [BUILD_DIR]     (default: build)
#
# BUILD_DIR holds the built `vkd`; the model, the blob and the output go to
# BUILD_DIR/examples/refinenet_lite (replaced on every run; a directory of that name that this
# script did not create is left alone: exit 2).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:-build}"
vkd="$build/vkd"
out="$build/examples/refinenet_lite"
marker="$out/.written-by-run.sh"
python="${VKD_PYTHON:-$here/../../.venv/bin/python}"

[ -x "$vkd" ] || { echo "run.sh: $vkd not found (build it first: cmake --build $build --target vkd)" >&2; exit 2; }
if [ -e "$out" ] && [ ! -e "$marker" ]; then
  echo "run.sh: $out exists and was not written by run.sh; move it away first" >&2
  exit 2
fi
mkdir -p "$out/output"
touch "$marker"

echo "== generate (make_model.py)"
"$python" "$here/make_model.py" "$out" --force

echo "== compile"
start_ns=$(date +%s%N)
"$vkd" compile "$out/refinenet_lite.json" --weights "$out/refinenet_lite.safetensors" \
  -o "$out/refinenet_lite.vkd" --report --force
ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
printf 'compile time: %d.%03d s\n' $((ms / 1000)) $((ms % 1000))

echo "== run"
"$vkd" run "$out/refinenet_lite.vkd" --input "x=$out/image.npy" --output-dir "$out/output" \
  --bench 20 --profile --force
