// Writes OUTDIR/weights.safetensors (OUTDIR created if missing), the weights of the `vkd compile`
// cases (test/cli/graphs/add_constant.json):
//   add.other  F32 [1,4,1,1]  {0.5, -0.25, 1, 2}
// and OUTDIR/linear.safetensors + OUTDIR/lin_x.npy for test/cli/graphs/linear.json, and
// OUTDIR/conv.safetensors + OUTDIR/conv_x.npy for test/cli/graphs/conv.json: int8
// weights, power-of-two scales and inputs that are multiples of 0.5, so every product and sum
// the reference interpreter forms in float32 is exact and its answer equals the int8 kernels'
// bit for bit (the arithmetic itself is checked by the custom-op ACCU cases).
// A C++ helper because a safetensors file starts with a little-endian 64-bit length, whose zero
// bytes a CMake script cannot write. The float bytes are spelled out, so the file is the same
// on every host.
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "partitioner_schema/Safetensors.h"
#include "tools/vkd/Npy.h"

namespace {

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Int8 weights -7 .. 7 in a fixed pattern.
std::vector<uint8_t> weight_bytes(int n, int k, int seed) {
  std::vector<uint8_t> b(static_cast<size_t>(n * k));
  for (size_t i = 0; i < b.size(); ++i) {
    b[i] = static_cast<uint8_t>(static_cast<int8_t>((static_cast<int>(i) * 7 + seed) % 15 - 7));
  }
  return b;
}

void write_linear_fixture(const std::string& dir) {
  using vkd::compiler::SafetensorsTensor;
  vkd::compiler::write_safetensors(
      dir + "/linear.safetensors",
      {SafetensorsTensor{"lin1.weight", "I8", {5, 8}, weight_bytes(5, 8, 1)},
       SafetensorsTensor{"lin1.scale", "F32", {5}, f32_bytes({0.25f, 0.125f, 0.5f, 0.25f, 0.0625f})},
       SafetensorsTensor{"lin1.bias", "F32", {5}, f32_bytes({0.5f, -1.0f, 0.0f, 2.25f, -0.75f})},
       SafetensorsTensor{"lin2.weight", "I8", {3, 8}, weight_bytes(3, 8, 4)},
       SafetensorsTensor{"lin2.scale", "F32", {3}, f32_bytes({0.5f, 0.25f, 0.125f})}});
  vkd::cli::NpyArray x;
  x.dtype = vkd::cli::NpyDType::Float32;
  x.shape = {2, 3, 8};
  std::vector<float> v(48);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>((static_cast<int>(i) * 11) % 41 - 20);
  x.data = f32_bytes(v);
  vkd::cli::write_npy(dir + "/lin_x.npy", x);
}

// Three convolutions (3x3 + relu, depthwise 3x3 stride 2, pointwise 1x1) over a [2, 5, 7, 6]
// input of multiples of 0.5.
void write_conv_fixture(const std::string& dir) {
  using vkd::compiler::SafetensorsTensor;
  vkd::compiler::write_safetensors(
      dir + "/conv.safetensors",
      {SafetensorsTensor{"conv1.weight", "I8", {6, 5, 3, 3}, weight_bytes(6, 45, 2)},
       SafetensorsTensor{"conv1.scale", "F32", {6},
                         f32_bytes({0.25f, 0.125f, 0.5f, 0.25f, 0.0625f, 0.125f})},
       SafetensorsTensor{"conv1.bias", "F32", {6}, f32_bytes({0.5f, -1.0f, 0.0f, 2.25f, -0.75f, 1.5f})},
       SafetensorsTensor{"dw.weight", "I8", {5, 1, 3, 3}, weight_bytes(5, 9, 5)},
       SafetensorsTensor{"dw.scale", "F32", {5}, f32_bytes({0.5f, 0.25f, 0.125f, 0.25f, 1.0f})},
       SafetensorsTensor{"pw.weight", "I8", {4, 5, 1, 1}, weight_bytes(4, 5, 3)},
       SafetensorsTensor{"pw.scale", "F32", {4}, f32_bytes({0.125f, 0.25f, 0.0625f, 0.5f})}});
  vkd::cli::NpyArray x;
  x.dtype = vkd::cli::NpyDType::Float32;
  x.shape = {2, 5, 7, 6};
  std::vector<float> v(2 * 5 * 7 * 6);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>((static_cast<int>(i) * 13) % 37 - 18);
  x.data = f32_bytes(v);
  vkd::cli::write_npy(dir + "/conv_x.npy", x);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_compile_weights OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  try {
    std::filesystem::create_directories(dir);
    // Little-endian IEEE 754 binary32 of 0.5, -0.25, 1.0, 2.0.
    const std::vector<uint8_t> other = {0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x80, 0xbe,
                                        0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40};
    vkd::compiler::write_safetensors(dir + "/weights.safetensors",
                                     {{"add.other", "F32", {1, 4, 1, 1}, other}});
    write_linear_fixture(dir);
    write_conv_fixture(dir);
    std::printf("make_compile_weights: wrote %s/weights.safetensors, linear.safetensors, lin_x.npy, "
                "conv.safetensors, conv_x.npy\n",
                dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_compile_weights: %s\n", e.what());
    return 1;
  }
}
