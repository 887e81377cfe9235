// Writes the end-to-end fixture of the CLI tests into OUTDIR (created if missing):
//   model.vkd       x (float32 [1,5,7,9] buffer width_packed)
//                     -> q8ta_quantize -> int8x4 PackedInt8_4W4C
//                     -> q8ta_convert  -> int8x4 PackedInt8_4C1W
//                     -> q8ta_dequantize -> y (float32 [1,5,7,9] buffer width_packed)
//   x.npy           deterministic input: exact rounding ties of both signs, values clamped at
//                   both ends, signed zeros, then pseudo-random values
//   expected.npy    y computed by the CPU reference below (written here, shares no code with
//                   the runtime or test/reference)
//   model_multi.vkd unnamed inputs (the CLI accepts input0, input1), outputs "q" and "y":
//                     input0 float32 -> q8ta_quantize -> 4W4C -> q8ta_convert -> q (int8x4 4C1W)
//                     input1 (int8x4 4C1W) -> q8ta_dequantize -> y (float32)
//   expected_q.npy  int8 [1,5,7,9]: the quantized x (q for input0 = x; as input1 it
//                   dequantizes to expected.npy)
//   x_shape.npy     float32 [1,5,7,8]   (wrong shape)
//   x_int32.npy     int32 [1,5,7,9]     (wrong dtype)
//   x_truncated.npy x.npy without its last 3 bytes
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "serialization/Serializer.h"
#include "tools/vkd/Npy.h"

namespace {

using vkd::cli::NpyArray;
using vkd::cli::NpyDType;

constexpr float kScale = 0.0375f;
constexpr int kZeroPoint = 3;
constexpr int kQuantMin = -128;
constexpr int kQuantMax = 127;
const std::vector<int64_t> kSizes = {1, 5, 7, 9};

// Round half to even, written out rather than taken from the runtime or <cfenv>.
float round_half_even(float v) {
  const float lo = std::floor(v);
  const float frac = v - lo;  // exact: v and floor(v) are within 1 of each other
  if (frac > 0.5f) return lo + 1.0f;
  if (frac < 0.5f) return lo;
  return std::fmod(lo, 2.0f) == 0.0f ? lo : lo + 1.0f;
}

int quantize(float x, float inv_scale) {
  const float product = x * inv_scale;  // one float32 rounding
  double q = static_cast<double>(round_half_even(product)) + kZeroPoint;
  if (q < kQuantMin) q = kQuantMin;
  if (q > kQuantMax) q = kQuantMax;
  return static_cast<int>(q);
}

float dequantize(int q) { return static_cast<float>(q - kZeroPoint) * kScale; }

std::vector<float> make_input(float inv_scale, size_t n) {
  std::vector<float> x;
  // Exact ties: float values whose float32 product with inv_scale is k + 0.5.
  for (int k = -12; k <= 12 && x.size() < n / 4; ++k) {
    const float target = static_cast<float>(k) + 0.5f;
    float c = target / inv_scale;
    for (int step = 0; step < 8; ++step) {
      if (c * inv_scale == target) {
        x.push_back(c);
        break;
      }
      c = std::nextafter(c, c * inv_scale < target ? INFINITY : -INFINITY);
    }
  }
  for (float v : {0.0f, -0.0f, 4.6f, 4.65f, 4.7f, -4.9f, -4.9125f, -5.0f, 100.0f, -100.0f, 1e6f,
                  -1e6f, 1e-30f, -1e-30f}) {
    x.push_back(v);
  }
  uint32_t state = 12345u;
  while (x.size() < n) {
    state = state * 1664525u + 1013904223u;  // LCG, deterministic on every platform
    const float u = static_cast<float>(state >> 8) / 16777216.0f;  // [0, 1)
    x.push_back(-6.0f + 12.0f * u);
  }
  return x;
}

template <typename T>
NpyArray make_array(NpyDType dtype, std::vector<int64_t> shape, const std::vector<T>& v) {
  NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.data.resize(v.size() * sizeof(T));
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

vkd::TensorSpec spec(vkd::DType dtype, vkd::MemoryLayout layout) {
  vkd::TensorSpec s;
  s.sizes = kSizes;
  s.dtype = dtype;
  s.storage = vkd::StorageType::Buffer;
  s.layout = layout;
  return s;
}

std::vector<uint8_t> build_model() {
  using namespace vkd;
  using serialization::ValueId;
  serialization::GraphBuilder b;
  const ValueId x = b.add_tensor(spec(DType::Float32, MemoryLayout::WidthPacked), "x");
  const ValueId q4w4c = b.add_tensor(spec(DType::Int8x4, MemoryLayout::PackedInt8_4W4C), "q_4w4c");
  const ValueId q4c1w = b.add_tensor(spec(DType::Int8x4, MemoryLayout::PackedInt8_4C1W), "q_4c1w");
  const ValueId y = b.add_tensor(spec(DType::Float32, MemoryLayout::WidthPacked), "y");
  b.add_op("q8ta_quantize", {x, b.add_float(kScale), b.add_int(kZeroPoint), b.add_int(kQuantMin),
                             b.add_int(kQuantMax), q4w4c});
  b.add_op("q8ta_convert", {q4w4c, b.add_int(kZeroPoint), q4c1w});
  b.add_op("q8ta_dequantize", {q4c1w, b.add_float(kScale), b.add_int(kZeroPoint),
                               b.add_int(kQuantMin), b.add_int(kQuantMax), y});
  b.set_inputs({x}, {"x"});
  b.set_outputs({y}, {"y"});
  return b.finish();
}

std::vector<uint8_t> build_multi_model() {
  using namespace vkd;
  using serialization::ValueId;
  serialization::GraphBuilder b;
  const ValueId x = b.add_tensor(spec(DType::Float32, MemoryLayout::WidthPacked));
  const ValueId qin = b.add_tensor(spec(DType::Int8x4, MemoryLayout::PackedInt8_4C1W));
  const ValueId q4w4c = b.add_tensor(spec(DType::Int8x4, MemoryLayout::PackedInt8_4W4C));
  const ValueId q4c1w = b.add_tensor(spec(DType::Int8x4, MemoryLayout::PackedInt8_4C1W));
  const ValueId y = b.add_tensor(spec(DType::Float32, MemoryLayout::WidthPacked));
  b.add_op("q8ta_quantize", {x, b.add_float(kScale), b.add_int(kZeroPoint), b.add_int(kQuantMin),
                             b.add_int(kQuantMax), q4w4c});
  b.add_op("q8ta_convert", {q4w4c, b.add_int(kZeroPoint), q4c1w});
  b.add_op("q8ta_dequantize", {qin, b.add_float(kScale), b.add_int(kZeroPoint),
                               b.add_int(kQuantMin), b.add_int(kQuantMax), y});
  b.set_inputs({x, qin});  // unnamed: the CLI accepts input0, input1
  b.set_outputs({q4c1w, y}, {"q", "y"});
  return b.finish();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_qcd_blob OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  try {
    std::filesystem::create_directories(dir);
    const float inv_scale = 1.0f / kScale;  // float32 division
    // The runtime computes float32(1.0 / double(scale)); for this scale both are the same float,
    // so the expected bytes do not depend on which of the two a device uses.
    if (inv_scale != static_cast<float>(1.0 / static_cast<double>(kScale))) {
      std::fprintf(stderr, "make_qcd_blob: 1/scale differs between float and double division\n");
      return 1;
    }
    size_t numel = 1;
    for (int64_t s : kSizes) numel *= static_cast<size_t>(s);
    const std::vector<float> x = make_input(inv_scale, numel);
    std::vector<int8_t> expected_q(numel);
    std::vector<float> expected(numel);
    for (size_t i = 0; i < numel; ++i) {
      const int q = quantize(x[i], inv_scale);
      expected_q[i] = static_cast<int8_t>(q);
      expected[i] = dequantize(q);
    }

    write_bytes(dir + "/model.vkd", build_model());
    const std::vector<uint8_t> x_npy = encode_npy(make_array(NpyDType::Float32, kSizes, x));
    write_bytes(dir + "/x.npy", x_npy);
    write_bytes(dir + "/expected.npy", encode_npy(make_array(NpyDType::Float32, kSizes, expected)));
    write_bytes(dir + "/model_multi.vkd", build_multi_model());
    write_bytes(dir + "/expected_q.npy",
                encode_npy(make_array(NpyDType::Int8, kSizes, expected_q)));
    write_bytes(dir + "/x_shape.npy",
                encode_npy(make_array(NpyDType::Float32, {1, 5, 7, 8},
                                      std::vector<float>(x.begin(), x.begin() + 280))));
    write_bytes(dir + "/x_int32.npy",
                encode_npy(make_array(NpyDType::Int32, kSizes, std::vector<int32_t>(numel, 1))));
    write_bytes(dir + "/x_truncated.npy", std::vector<uint8_t>(x_npy.begin(), x_npy.end() - 3));
    std::printf("make_qcd_blob: wrote model.vkd, x.npy, expected.npy and bad inputs to %s\n",
                dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_qcd_blob: %s\n", e.what());
    return 1;
  }
}
