// Writes OUTDIR/weights.safetensors (OUTDIR created if missing), the weights of the `vkd compile`
// cases (test/cli/graphs/add_constant.json):
//   add.other  F32 [1,1,4,1,1]  {0.5, -0.25, 1, 2}  (a rank-5 add: a host step)
// and OUTDIR/linear.safetensors + OUTDIR/lin_x.npy for test/cli/graphs/linear.json, and
// OUTDIR/conv.safetensors + OUTDIR/conv_x.npy for test/cli/graphs/conv.json (head.safetensors +
// head_x.npy for classifier_head.json, standalone_act.json and channel_shuffle.json): int8
// weights, power-of-two scales and inputs that are multiples of 0.5, so every product and sum
// the reference interpreter forms in float32 is exact and its answer equals the int8 kernels'
// bit for bit (the arithmetic itself is checked by the custom-op ACCU cases).
// The partitioned-model cases get their inputs and the reference interpreter's outputs of the
// graphs under SOURCE_DIR (write_partition_fixture).
// A C++ helper because a safetensors file starts with a little-endian 64-bit length, whose zero
// bytes a CMake script cannot write. The float bytes are spelled out, so the file is the same
// on every host.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/Interpreter.h"
#include "compiler/Parse.h"
#include "compiler/Safetensors.h"
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
       SafetensorsTensor{
           "lin1.scale", "F32", {5}, f32_bytes({0.25f, 0.125f, 0.5f, 0.25f, 0.0625f})},
       SafetensorsTensor{"lin1.bias", "F32", {5}, f32_bytes({0.5f, -1.0f, 0.0f, 2.25f, -0.75f})},
       SafetensorsTensor{"lin2.weight", "I8", {3, 8}, weight_bytes(3, 8, 4)},
       SafetensorsTensor{"lin2.scale", "F32", {3}, f32_bytes({0.5f, 0.25f, 0.125f})}});
  vkd::cli::NpyArray x;
  x.dtype = vkd::cli::NpyDType::Float32;
  x.shape = {2, 3, 8};
  std::vector<float> v(48);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = 0.5f * static_cast<float>((static_cast<int>(i) * 11) % 41 - 20);
  x.data = f32_bytes(v);
  vkd::cli::write_npy(dir + "/lin_x.npy", x);
}

// Three convolutions (3x3 + relu, depthwise 3x3 stride 2, pointwise 1x1) over a [2, 5, 7, 6]
// input of multiples of 0.5, and the convolutions of epilogue.json over the same input.
void write_conv_fixture(const std::string& dir) {
  using vkd::compiler::SafetensorsTensor;
  vkd::compiler::write_safetensors(
      dir + "/conv.safetensors",
      {SafetensorsTensor{"conv1.weight", "I8", {6, 5, 3, 3}, weight_bytes(6, 45, 2)},
       SafetensorsTensor{
           "conv1.scale", "F32", {6}, f32_bytes({0.25f, 0.125f, 0.5f, 0.25f, 0.0625f, 0.125f})},
       SafetensorsTensor{
           "conv1.bias", "F32", {6}, f32_bytes({0.5f, -1.0f, 0.0f, 2.25f, -0.75f, 1.5f})},
       SafetensorsTensor{"dw.weight", "I8", {5, 1, 3, 3}, weight_bytes(5, 9, 5)},
       SafetensorsTensor{"dw.scale", "F32", {5}, f32_bytes({0.5f, 0.25f, 0.125f, 0.25f, 1.0f})},
       SafetensorsTensor{"pw.weight", "I8", {4, 5, 1, 1}, weight_bytes(4, 5, 3)},
       SafetensorsTensor{"pw.scale", "F32", {4}, f32_bytes({0.125f, 0.25f, 0.0625f, 0.5f})},
       // test/cli/graphs/epilogue.json: a pointwise and a 3x3 convolution 5 -> 16 channels
       // whose outputs are pixel-shuffled.
       SafetensorsTensor{"epi_pw.weight", "I8", {16, 5, 1, 1}, weight_bytes(16, 5, 8)},
       SafetensorsTensor{"epi_pw.scale", "F32", {16}, f32_bytes(std::vector<float>(16, 0.125f))},
       SafetensorsTensor{"epi_c3.weight", "I8", {16, 5, 3, 3}, weight_bytes(16, 45, 10)},
       SafetensorsTensor{"epi_c3.scale", "F32", {16}, f32_bytes(std::vector<float>(16, 0.0625f))},
       SafetensorsTensor{"epi_c3.bias", "F32", {16}, f32_bytes(std::vector<float>(16, 0.5f))},
       // test/cli/graphs/residual_conv.json: a pointwise 5 -> 5 whose output x is added to.
       SafetensorsTensor{"res_pw.weight", "I8", {5, 5, 1, 1}, weight_bytes(5, 5, 12)},
       SafetensorsTensor{"res_pw.scale", "F32", {5}, f32_bytes(std::vector<float>(5, 0.125f))}});
  vkd::cli::NpyArray x;
  x.dtype = vkd::cli::NpyDType::Float32;
  x.shape = {2, 5, 7, 6};
  std::vector<float> v(2 * 5 * 7 * 6);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = 0.5f * static_cast<float>((static_cast<int>(i) * 13) % 37 - 18);
  x.data = f32_bytes(v);
  vkd::cli::write_npy(dir + "/conv_x.npy", x);
}

// A classifier head, a standalone relu6 and a channel shuffle (test/cli/graphs/
// classifier_head.json, standalone_act.json, channel_shuffle.json): a 3x3 convolution 5 -> 8
// channels and a linear 8 -> 3, with bias, over a [2, 5, 6, 6] input of multiples of 0.5.
void write_head_fixture(const std::string& dir) {
  using vkd::compiler::SafetensorsTensor;
  vkd::compiler::write_safetensors(
      dir + "/head.safetensors",
      {SafetensorsTensor{"conv.weight", "I8", {8, 5, 3, 3}, weight_bytes(8, 45, 6)},
       SafetensorsTensor{"conv.scale",
                         "F32",
                         {8},
                         f32_bytes({0.25f, 0.125f, 0.5f, 0.25f, 0.0625f, 0.125f, 0.25f, 0.5f})},
       SafetensorsTensor{"conv.bias",
                         "F32",
                         {8},
                         f32_bytes({0.5f, -1.0f, 0.0f, 2.25f, -0.75f, 1.5f, -2.0f, 0.25f})},
       SafetensorsTensor{"fc.weight", "I8", {3, 8}, weight_bytes(3, 8, 9)},
       SafetensorsTensor{"fc.scale", "F32", {3}, f32_bytes({0.5f, 0.25f, 0.125f})},
       SafetensorsTensor{"fc.bias", "F32", {3}, f32_bytes({1.0f, -0.5f, 0.25f})}});
  vkd::cli::NpyArray x;
  x.dtype = vkd::cli::NpyDType::Float32;
  x.shape = {2, 5, 6, 6};
  std::vector<float> v(2 * 5 * 6 * 6);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = 0.5f * static_cast<float>((static_cast<int>(i) * 11) % 41 - 20);
  }
  x.data = f32_bytes(v);
  vkd::cli::write_npy(dir + "/head_x.npy", x);
}

// torchao affine quantization (test/cli/graphs/affine_constant.json, affine_dynamic.json): an
// input x [2, 8, 16] of uneven floats (the affine ops are bit-exact, no need for exact values)
// and, in affine.safetensors, per-group (block [1, 1, 4]) scales [2, 8, 4] with int64 zero points
// (narrowed to int32 by the graph IR), and per-channel scales [8] (block [2, 1, 16], no zero
// point).
void write_affine_fixture(const std::string& dir) {
  using vkd::compiler::SafetensorsTensor;
  std::vector<float> group_scale(64), channel_scale(8);
  std::vector<int64_t> group_zp(64);
  for (size_t i = 0; i < group_scale.size(); ++i) {
    group_scale[i] =
        0.0125f * static_cast<float>(1 + (i * 5) % 7) + 0.0007f * static_cast<float>(i);
    group_zp[i] = static_cast<int64_t>((i * 11) % 21) - 10;
  }
  for (size_t i = 0; i < channel_scale.size(); ++i)
    channel_scale[i] = 0.03f + 0.011f * static_cast<float>(i);
  std::vector<uint8_t> zp_bytes(group_zp.size() * 8);
  std::memcpy(zp_bytes.data(), group_zp.data(), zp_bytes.size());
  vkd::compiler::write_safetensors(
      dir + "/affine.safetensors",
      {SafetensorsTensor{"group.scale", "F32", {2, 8, 4}, f32_bytes(group_scale)},
       SafetensorsTensor{"group.zero_point", "I64", {2, 8, 4}, zp_bytes},
       SafetensorsTensor{"channel.scale", "F32", {8}, f32_bytes(channel_scale)}});
  vkd::cli::NpyArray x;
  x.dtype = vkd::cli::NpyDType::Float32;
  x.shape = {2, 8, 16};
  std::vector<float> v(2 * 8 * 16);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = 0.0173f * static_cast<float>(static_cast<int>((i * 37) % 101) - 50) *
           static_cast<float>(1 + i % 7);
  }
  // One constant row (a zero-range block: choose_qparams gives scale eps there).
  for (size_t i = 16; i < 32; ++i) v[i] = 0.75f;
  x.data = f32_bytes(v);
  vkd::cli::write_npy(dir + "/affine_x.npy", x);
}

// float16 pixel shuffle (test/cli/graphs/pixel_shuffle_f16.json): an input x [2, 16, 3, 5] of
// float16 bit patterns spread over every exponent (signed zeros, subnormals, infinities; no
// NaN, whose payload the float32 exchange with the delegate does not keep) and the expected
// outputs y (upscale factor 2) and z (4), permuted here bit for bit (a pixel shuffle moves
// values and computes nothing).
void write_half_shuffle_fixture(const std::string& dir) {
  const int64_t n = 2, c = 16, h = 3, w = 5;
  std::vector<uint16_t> x(static_cast<size_t>(n * c * h * w));
  for (size_t i = 0; i < x.size(); ++i) {
    uint16_t bits = static_cast<uint16_t>((i * 40503u + 7u) & 0xffffu);
    if ((bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0) bits &= 0xfc00u;  // NaN -> inf
    x[i] = bits;
  }
  x[0] = 0x8000u;  // -0
  x[1] = 0x0001u;  // the smallest subnormal
  auto npy = [](std::vector<int64_t> shape, const std::vector<uint16_t>& v) {
    vkd::cli::NpyArray a;
    a.dtype = vkd::cli::NpyDType::Float16;
    a.shape = std::move(shape);
    for (uint16_t bits : v) {  // little-endian on every host
      a.data.push_back(static_cast<uint8_t>(bits & 0xffu));
      a.data.push_back(static_cast<uint8_t>(bits >> 8));
    }
    return a;
  };
  vkd::cli::write_npy(dir + "/ps16_x.npy", npy({n, c, h, w}, x));
  for (int64_t r : {2, 4}) {
    const int64_t oc = c / (r * r), oh = h * r, ow = w * r;
    std::vector<uint16_t> out(x.size());
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t k = 0; k < oc; ++k) {
        for (int64_t y = 0; y < oh; ++y) {
          for (int64_t xo = 0; xo < ow; ++xo) {
            const int64_t ic = k * r * r + (y % r) * r + xo % r;
            out[static_cast<size_t>(((b * oc + k) * oh + y) * ow + xo)] =
                x[static_cast<size_t>(((b * c + ic) * h + y / r) * w + xo / r)];
          }
        }
      }
    }
    vkd::cli::write_npy(dir + (r == 2 ? "/ps16_y.npy" : "/ps16_z.npy"), npy({n, oc, oh, ow}, out));
  }
}

vkd::cli::NpyArray f32_npy(std::vector<int64_t> shape, const std::vector<uint8_t>& bytes) {
  vkd::cli::NpyArray a;
  a.dtype = vkd::cli::NpyDType::Float32;
  a.shape = std::move(shape);
  a.data = bytes;
  return a;
}

// `graph` (with `weights`, "" for none) run by the reference interpreter on `x`: its output y.
std::vector<uint8_t> interpreted_y(const std::string& graph, const std::string& weights,
                                   const vkd::cli::NpyArray& x) {
  const vkd::compiler::Graph g = vkd::compiler::parse_graph_file(graph, weights);
  const auto values = vkd::compiler::interpret(
      g, {{"x", vkd::compiler::HostTensor{vkd::DType::Float32, x.shape, x.data}}});
  return values.at("y").bytes;
}

// The partitioned models (`vkd run MODEL.partition.json`): an input of multiples of 1/16 for
// test/compiler/graphs/qdq_maxpool.json (part_pool_x.npy) and for test/cli/graphs/
// add_constant.json (part_add_x.npy), each graph's output as the reference interpreter computes
// it (part_*_expected.npy), and host.safetensors: the add's constant under its value name
// ("other"), where a partition plan without "data" looks for it.
void write_partition_fixture(const std::string& dir, const std::string& source_dir,
                             const std::vector<uint8_t>& other) {
  vkd::compiler::write_safetensors(dir + "/host.safetensors",
                                   {{"other", "F32", {1, 1, 4, 1, 1}, other}});
  const auto sixteenths = [](std::vector<int64_t> shape, size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
      v[i] = 0.0625f * static_cast<float>(static_cast<int>((i * 7) % 61) - 30);
    }
    return f32_npy(std::move(shape), f32_bytes(v));
  };
  const vkd::cli::NpyArray pool_x = sixteenths({1, 4, 6, 10}, 240);
  const std::string pool_graph = source_dir + "/test/compiler/graphs/qdq_maxpool.json";
  vkd::cli::write_npy(dir + "/part_pool_x.npy", pool_x);
  vkd::cli::write_npy(dir + "/part_pool_expected.npy",
                      f32_npy({1, 4, 3, 5}, interpreted_y(pool_graph, "", pool_x)));
  const vkd::cli::NpyArray add_x = sixteenths({1, 4, 4, 4}, 64);
  const std::string add_graph = source_dir + "/test/cli/graphs/add_constant.json";
  vkd::cli::write_npy(dir + "/part_add_x.npy", add_x);
  vkd::cli::write_npy(
      dir + "/part_add_expected.npy",
      f32_npy({1, 1, 4, 4, 4}, interpreted_y(add_graph, dir + "/weights.safetensors", add_x)));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_compile_weights OUTDIR SOURCE_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  try {
    std::filesystem::create_directories(dir);
    // Little-endian IEEE 754 binary32 of 0.5, -0.25, 1.0, 2.0.
    const std::vector<uint8_t> other = {0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x80, 0xbe,
                                        0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40};
    vkd::compiler::write_safetensors(dir + "/weights.safetensors",
                                     {{"add.other", "F32", {1, 1, 4, 1, 1}, other}});
    write_linear_fixture(dir);
    write_conv_fixture(dir);
    write_affine_fixture(dir);
    write_head_fixture(dir);
    write_half_shuffle_fixture(dir);
    write_partition_fixture(dir, argv[2], other);
    std::printf(
        "make_compile_weights: wrote %s/weights.safetensors, linear.safetensors, lin_x.npy, "
        "conv.safetensors, conv_x.npy, affine.safetensors, affine_x.npy, head.safetensors, "
        "head_x.npy, ps16_*.npy, "
        "host.safetensors, part_*.npy\n",
        dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_compile_weights: %s\n", e.what());
    return 1;
  }
}
