// Writes the delegate blob, input and expected output used by the install test
// (test/install/run_install_test.sh):
//
//   x float32 [1,5,7,9] buffer width_packed
//     -> q8ta_quantize   -> int8x4 PackedInt8_4W4C
//     -> q8ta_convert    -> int8x4 PackedInt8_4C1W
//     -> q8ta_dequantize -> y float32 [1,5,7,9] buffer width_packed
//
// The expected output comes from a CPU reference written here (it shares no code with the
// runtime): inv_scale = float32(1/scale), q = clamp(roundEven(x * inv_scale) + zp, qmin, qmax),
// y = float(q - zp) * scale. Files are raw little-endian float32, NCHW.
//
// usage: vkd_make_app_blob OUT_DIR
//   writes OUT_DIR/model.vkd, input.bin, expected.bin and expected_bad.bin (expected with one
//   element changed: the app must reject it, which shows the comparison can fail).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "serialization/Serializer.h"

namespace {

using vkd::DType;
using vkd::MemoryLayout;
using vkd::StorageType;
using vkd::TensorSpec;

const std::vector<int64_t> kSizes = {1, 5, 7, 9};
const float kScale = 0.037f;
const int32_t kZeroPoint = -3;
const int32_t kQuantMin = -128;
const int32_t kQuantMax = 127;

TensorSpec spec(DType dtype, MemoryLayout layout) {
  TensorSpec s;
  s.sizes = kSizes;
  s.dtype = dtype;
  s.storage = StorageType::Buffer;
  s.layout = layout;
  return s;
}

// Round half to even, written out (no dependence on the FPU rounding mode).
float round_half_even(float v) {
  const float lo = std::floor(v);
  const float diff = v - lo;
  if (diff < 0.5f) return lo;
  if (diff > 0.5f) return lo + 1.0f;
  return std::fmod(lo, 2.0f) == 0.0f ? lo : lo + 1.0f;
}

// A float x with float32(x * inv_scale) == target exactly (a tie for roundEven), searched a few
// ulps around target / inv_scale; falls back to the nearest candidate.
float exact_tie(float target, float inv_scale) {
  float x = target / inv_scale;
  for (int step = 0; step < 64 && x * inv_scale != target; ++step) {
    x = std::nextafter(x, x * inv_scale < target ? INFINITY : -INFINITY);
  }
  return x;
}

// Deterministic input: a ramp over about [-6, 6] (beyond the representable range
// [(qmin-zp)*scale, (qmax-zp)*scale] = [-4.625, 4.81], so both clamps are hit), plus
// half-way points (x * inv_scale == k + 0.5 exactly) every 11th element.
std::vector<float> make_input(size_t n) {
  std::vector<float> x(n);
  const float inv_scale = static_cast<float>(1.0f / kScale);
  for (size_t i = 0; i < n; ++i) {
    if (i % 11 == 0) {
      const float k = static_cast<float>(static_cast<int>(i % 40) - 20) + 0.5f;
      x[i] = exact_tie(k, inv_scale);
    } else {
      x[i] = -6.0f + 12.0f * static_cast<float>((i * 37) % n) / static_cast<float>(n);
    }
  }
  return x;
}

std::vector<float> reference(const std::vector<float>& x) {
  const float inv_scale = static_cast<float>(1.0f / kScale);
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float scaled = x[i] * inv_scale;  // one float32 multiplication
    int64_t q = static_cast<int64_t>(round_half_even(scaled)) + kZeroPoint;
    if (q < kQuantMin) q = kQuantMin;
    if (q > kQuantMax) q = kQuantMax;
    y[i] = static_cast<float>(q - kZeroPoint) * kScale;
  }
  return y;
}

void write_floats(const std::string& path, const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<uint8_t>(bits >> (8 * b));
  }
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  try {
    const std::string dir = argv[1];
    vkd::serialization::GraphBuilder b;
    const auto x = b.add_tensor(spec(DType::Float32, MemoryLayout::WidthPacked), "x");
    const auto q4w4c = b.add_tensor(spec(DType::Int8x4, MemoryLayout::PackedInt8_4W4C), "q_4w4c");
    const auto q4c1w = b.add_tensor(spec(DType::Int8x4, MemoryLayout::PackedInt8_4C1W), "q_4c1w");
    const auto y = b.add_tensor(spec(DType::Float32, MemoryLayout::WidthPacked), "y");
    const auto scale = b.add_float(static_cast<double>(kScale));
    const auto zp = b.add_int(kZeroPoint);
    const auto qmin = b.add_int(kQuantMin);
    const auto qmax = b.add_int(kQuantMax);
    b.add_op("q8ta_quantize", {x, scale, zp, qmin, qmax, q4w4c});
    b.add_op("q8ta_convert", {q4w4c, zp, q4c1w});
    b.add_op("q8ta_dequantize", {q4c1w, scale, zp, qmin, qmax, y});
    b.set_inputs({x}, {"x"});
    b.set_outputs({y}, {"y"});

    size_t n = 1;
    for (int64_t s : kSizes) n *= static_cast<size_t>(s);
    const std::vector<float> input = make_input(n);
    const std::vector<float> expected = reference(input);
    std::vector<float> bad = expected;
    bad[n / 2] += 1.0f;

    write_bytes(dir + "/model.vkd", b.finish());
    write_floats(dir + "/input.bin", input);
    write_floats(dir + "/expected.bin", expected);
    write_floats(dir + "/expected_bad.bin", bad);
    std::printf("wrote %s/{model.vkd,input.bin,expected.bin,expected_bad.bin}: %zu elements\n",
                dir.c_str(), n);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkd_make_app_blob: %s\n", e.what());
    return 1;
  }
}
