#include "test/fuzz/SeedBlobs.h"

#include <cstring>

#include "serialization/Serializer.h"

namespace vkd::fuzz {
namespace {

using serialization::GraphBuilder;
using serialization::ValueId;
using Sizes = std::vector<int64_t>;
using L = MemoryLayout;
using S = StorageType;

constexpr float kInScale = 0.05f;
constexpr int kInZp = 3;

// GraphBuilder with the argument lists of partitioner_schema/ops/ spelled once.
struct Seed {
  GraphBuilder b;

  ValueId tensor(Sizes sizes, DType dtype, L layout, S storage = S::Buffer, std::string name = {}) {
    return b.add_tensor(TensorSpec{std::move(sizes), dtype, storage, layout}, std::move(name));
  }
  ValueId f32(Sizes sizes, std::string name = {}, S storage = S::Buffer,
              L layout = L::WidthPacked) {
    return tensor(std::move(sizes), DType::Float32, layout, storage, std::move(name));
  }
  ValueId q8(Sizes sizes, L layout = L::PackedInt8_4W4C) {
    return tensor(std::move(sizes), DType::Int8x4, layout);
  }
  // Constants: int8 weights in -7..7, positive float scales, small float biases, int32 values.
  ValueId weight(Sizes sizes) {
    const TensorSpec spec{std::move(sizes), DType::Int8, S::Buffer, L::WidthPacked};
    std::vector<uint8_t> bytes(static_cast<size_t>(spec.numel()));
    for (size_t i = 0; i < bytes.size(); ++i) {
      bytes[i] = static_cast<uint8_t>(static_cast<int8_t>((i * 7 + 3) % 15) - 7);
    }
    return b.add_tensor(spec, "weight", std::move(bytes));
  }
  ValueId floats(Sizes sizes, float base, float step, std::string name) {
    const TensorSpec spec{std::move(sizes), DType::Float32, S::Buffer, L::WidthPacked};
    std::vector<uint8_t> bytes(static_cast<size_t>(spec.numel()) * 4);
    for (size_t i = 0; i < bytes.size() / 4; ++i) {
      const float v = base + step * static_cast<float>(i % 5);
      std::memcpy(&bytes[i * 4], &v, 4);
    }
    return b.add_tensor(spec, std::move(name), std::move(bytes));
  }
  ValueId ints(Sizes sizes, int32_t base, std::string name) {
    const TensorSpec spec{std::move(sizes), DType::Int32, S::Buffer, L::WidthPacked};
    std::vector<uint8_t> bytes(static_cast<size_t>(spec.numel()) * 4);
    for (size_t i = 0; i < bytes.size() / 4; ++i) {
      const int32_t v = base + static_cast<int32_t>(i % 3) - 1;
      std::memcpy(&bytes[i * 4], &v, 4);
    }
    return b.add_tensor(spec, std::move(name), std::move(bytes));
  }
  std::vector<ValueId> qparams(float scale, int zp) { return {b.add_float(scale), b.add_int(zp)}; }
  ValueId ints_list(std::vector<int64_t> v) { return b.add_int_list(std::move(v)); }

  void op(const std::string& name, std::vector<std::vector<ValueId>> parts) {
    std::vector<ValueId> args;
    for (auto& p : parts) args.insert(args.end(), p.begin(), p.end());
    b.add_op(name, std::move(args));
  }
  void quantize(ValueId in, ValueId out, float scale = kInScale, int zp = kInZp) {
    op("q8ta_quantize", {{in}, qparams(scale, zp), {b.add_int(-128), b.add_int(127), out}});
  }
  void dequantize(ValueId in, ValueId out, float scale, int zp) {
    op("q8ta_dequantize", {{in}, qparams(scale, zp), {b.add_int(-128), b.add_int(127), out}});
  }
  // x (float32 graph input) quantized into a new int8x4 tensor of `layout`.
  ValueId quantized_input(const Sizes& sizes, L layout, ValueId* x_out = nullptr) {
    const ValueId x = f32(sizes, "x");
    const ValueId q = q8(sizes, layout);
    quantize(x, q);
    if (x_out) *x_out = x;
    return q;
  }
  // Dequantizes `q` into the float32 graph output y; sets inputs {x} and outputs {y}.
  std::vector<uint8_t> finish(ValueId x, ValueId q, const Sizes& sizes, float scale, int zp) {
    const ValueId y = f32(sizes, "y");
    dequantize(q, y, scale, zp);
    b.set_inputs({x}, {"x"});
    b.set_outputs({y}, {"y"});
    return b.finish();
  }
};

// The weights triple of linear and conv: int8 weight, float32 scales [n], float32 bias [n].
std::vector<ValueId> weights(Seed& s, Sizes weight_sizes) {
  const int64_t n = weight_sizes[0];
  return {s.weight(std::move(weight_sizes)), s.floats({n}, 0.01f, 0.005f, "weight_scales"),
          s.floats({n}, -0.5f, 0.25f, "bias")};
}

std::vector<uint8_t> qdq_chain() {
  Seed s;
  const Sizes sz = {1, 5, 7, 9};
  ValueId x;
  const ValueId a = s.quantized_input(sz, L::PackedInt8_4W4C, &x);
  const ValueId c = s.q8(sz, L::PackedInt8_4C1W);
  s.op("q8ta_convert", {{a, s.b.add_int(kInZp), c}});
  const ValueId h = s.q8(sz, L::PackedInt8_4H4W);
  s.op("q8ta_convert", {{c, s.b.add_int(kInZp), h}});
  return s.finish(x, h, sz, kInScale, kInZp);
}

// Float input on a texture, quantized, dequantized onto a texture, converted back to a buffer.
std::vector<uint8_t> texture_float_convert() {
  Seed s;
  const Sizes sz = {1, 6, 5, 3};
  const ValueId x = s.f32(sz, "x", S::Texture3D, L::ChannelsPacked);
  const ValueId q = s.q8(sz, L::PackedInt8_4C1W);
  s.quantize(x, q);
  const ValueId t = s.f32(sz, "t", S::Texture3D, L::WidthPacked);
  s.dequantize(q, t, kInScale, kInZp);
  const ValueId hb = s.f32(sz, "h", S::Buffer, L::HeightPacked);
  s.op("float_convert", {{t, hb}});
  const ValueId y = s.f32(sz, "y");
  s.op("float_convert", {{hb, y}});
  s.b.set_inputs({x}, {"x"});
  s.b.set_outputs({y, q}, {"y", "q"});
  return s.b.finish();
}

// q8ta_linear over a [batches, M, K] input: M * batches <= 4 takes GEMV, more takes GEMM.
std::vector<uint8_t> linear(const Sizes& in, int64_t n, bool float_out) {
  Seed s;
  ValueId x;
  const ValueId q = s.quantized_input(in, L::PackedInt8_4H4W, &x);
  Sizes out = in;
  out.back() = n;
  const auto w = weights(s, {n, in.back()});
  if (float_out) {
    const ValueId y = s.f32(out, "y");
    s.op("q8ta_linear_dq", {{q}, s.qparams(kInScale, kInZp), w, {y}});
    s.b.set_inputs({x}, {"x"});
    s.b.set_outputs({y}, {"y"});
    return s.b.finish();
  }
  const ValueId o = s.q8(out, L::PackedInt8_4H4W);
  s.op("q8ta_linear", {{q},
                       s.qparams(kInScale, kInZp),
                       w,
                       s.qparams(0.1f, -2),
                       {s.b.add_int(-128), s.b.add_int(127), o}});
  return s.finish(x, o, out, 0.1f, -2);
}

struct ConvShape {
  Sizes in;  // [N, C_in, H, W]
  int64_t c_out, kh, kw;
  int64_t stride, pad, dilation, groups;
  L in_layout = L::PackedInt8_4W4C, out_layout = L::PackedInt8_4W4C;
  bool float_out = false;
  int act_min = -128, act_max = 127;
};

std::vector<uint8_t> conv(const ConvShape& c) {
  Seed s;
  ValueId x;
  const ValueId q = s.quantized_input(c.in, c.in_layout, &x);
  const auto out_dim = [&](int64_t n, int64_t k) {
    return (n + 2 * c.pad - c.dilation * (k - 1) - 1) / c.stride + 1;
  };
  const Sizes out = {c.in[0], c.c_out, out_dim(c.in[2], c.kh), out_dim(c.in[3], c.kw)};
  const auto w = weights(s, {c.c_out, c.in[1] / c.groups, c.kh, c.kw});
  const std::vector<ValueId> geometry = {
      s.ints_list({c.stride, c.stride}), s.ints_list({c.pad, c.pad}),
      s.ints_list({c.dilation, c.dilation}), s.b.add_int(c.groups)};
  if (c.float_out) {
    const ValueId y = s.f32(out, "y");
    s.op("q8ta_conv2d_dq", {{q}, s.qparams(kInScale, kInZp), w, geometry, {y}});
    s.b.set_inputs({x}, {"x"});
    s.b.set_outputs({y}, {"y"});
    return s.b.finish();
  }
  const ValueId o = s.q8(out, c.out_layout);
  s.op("q8ta_conv2d", {{q},
                       s.qparams(kInScale, kInZp),
                       w,
                       geometry,
                       s.qparams(0.2f, 1),
                       {s.b.add_int(c.act_min), s.b.add_int(c.act_max), o}});
  return s.finish(x, o, out, 0.2f, 1);
}

// a + b, b the same shape or broadcast per channel.
std::vector<uint8_t> add(const Sizes& a_sizes, const Sizes& b_sizes, L layout) {
  Seed s;
  const ValueId x = s.f32(a_sizes, "x");
  const ValueId z = s.f32(b_sizes, "z");
  const ValueId a = s.q8(a_sizes, layout);
  const ValueId b = s.q8(b_sizes, layout);
  s.quantize(x, a);
  s.quantize(z, b, 0.03f, -5);
  const ValueId o = s.q8(a_sizes, layout);
  s.op("q8ta_add", {{a},
                    s.qparams(kInScale, kInZp),
                    {b},
                    s.qparams(0.03f, -5),
                    s.qparams(0.07f, 2),
                    {s.b.add_int(0), s.b.add_int(127), o}});
  const ValueId y = s.f32(a_sizes, "y");
  s.dequantize(o, y, 0.07f, 2);
  s.b.set_inputs({x, z}, {"x", "z"});
  s.b.set_outputs({y}, {"y"});
  return s.b.finish();
}

std::vector<uint8_t> max_pool(L layout, bool ceil_mode) {
  Seed s;
  const Sizes in = {1, 8, 7, 6};
  ValueId x;
  const ValueId q = s.quantized_input(in, layout, &x);
  const auto out_dim = [&](int64_t n) {
    const int64_t span = n + 2 * 1 - 1 * (3 - 1) - 1;
    return (ceil_mode ? (span + 1) / 2 : span / 2) + 1;
  };
  const Sizes out = {1, 8, out_dim(7), out_dim(6)};
  const ValueId o = s.q8(out, layout);
  s.op("q8ta_max_pool2d", {{q},
                           s.qparams(kInScale, kInZp),
                           {s.ints_list({3, 3}), s.ints_list({2}), s.ints_list({1, 1}),
                            s.ints_list({}), s.b.add_bool(ceil_mode)},
                           s.qparams(0.04f, -3),
                           {o}});  // requantized
  return s.finish(x, o, out, 0.04f, -3);
}

std::vector<uint8_t> mean(L layout) {
  Seed s;
  const Sizes in = {2, 6, 5, 5};
  ValueId x;
  const ValueId q = s.quantized_input(in, layout, &x);
  const Sizes out = {2, 6, 1, 1};
  const ValueId o = s.q8(out, layout);
  s.op("q8ta_mean", {{q}, s.qparams(kInScale, kInZp), s.qparams(0.02f, -1), {o}});
  return s.finish(x, o, out, 0.02f, -1);
}

// requantize: output qparams differ from the input's (else a byte shuffle).
std::vector<uint8_t> q8_pixel_shuffle(int64_t r, L layout, bool requantize) {
  Seed s;
  const Sizes in = {1, 2 * r * r, 3, 2};
  ValueId x;
  const ValueId q = s.quantized_input(in, layout, &x);
  const Sizes out = {1, 2, 3 * r, 2 * r};
  const float out_scale = requantize ? 0.08f : kInScale;
  const int out_zp = requantize ? -4 : kInZp;
  const ValueId o = s.q8(out, layout);
  s.op("q8ta_pixel_shuffle",
       {{q}, s.qparams(kInScale, kInZp), {s.b.add_int(r)}, s.qparams(out_scale, out_zp), {o}});
  return s.finish(x, o, out, out_scale, out_zp);
}

std::vector<uint8_t> float_pixel_shuffle(DType dtype, S storage, L layout) {
  Seed s;
  const Sizes in = {1, 8, 2, 3}, out = {1, 2, 4, 6};
  const ValueId x = s.tensor(in, dtype, layout, storage, "x");
  const ValueId y = s.tensor(out, dtype, layout, storage, "y");
  s.op("pixel_shuffle", {{x, s.b.add_int(2), y}});
  s.b.set_inputs({x}, {"x"});
  s.b.set_outputs({y}, {"y"});
  return s.b.finish();
}

// quantize_affine / dequantize_affine with constant per-group parameters (block [1, 1, 4]).
std::vector<uint8_t> affine_constant() {
  Seed s;
  const Sizes sz = {2, 4, 8}, blocks = {2, 4, 2};
  const ValueId x = s.f32(sz, "x");
  const ValueId scale = s.floats(blocks, 0.02f, 0.01f, "scale");
  const ValueId zp = s.ints(blocks, 2, "zero_point");
  const ValueId q = s.q8(sz, L::PackedInt8_4H4W);
  const std::vector<ValueId> params = {scale, zp, s.ints_list({1, 1, 4}), s.b.add_int(-128),
                                       s.b.add_int(127)};
  s.op("q8ta_quantize_affine", {{x}, params, {q}});
  const ValueId y = s.f32(sz, "y");
  s.op("q8ta_dequantize_affine", {{q}, params, {y}});
  s.b.set_inputs({x}, {"x"});
  s.b.set_outputs({y}, {"y"});
  return s.b.finish();
}

// choose_qparams_affine (per row, asymmetric) feeding quantize / dequantize_affine.
std::vector<uint8_t> affine_dynamic(int mapping) {
  Seed s;
  const Sizes sz = {2, 3, 8}, blocks = {2, 3, 1};
  const ValueId x = s.f32(sz, "x");
  const ValueId scale = s.f32(blocks, "scale");
  const ValueId zp = s.tensor(blocks, DType::Int32, L::WidthPacked, S::Buffer, "zero_point");
  s.op("choose_qparams_affine",
       {{x, s.b.add_int(mapping), s.ints_list({1, 1, 8}), s.b.add_int(-128), s.b.add_int(127),
         s.b.add_float(1.1920928955078125e-07), scale, zp}});
  const ValueId q = s.q8(sz, L::PackedInt8_4H4W);
  const std::vector<ValueId> params = {scale, zp, s.ints_list({1, 1, 8}), s.b.add_int(-128),
                                       s.b.add_int(127)};
  s.op("q8ta_quantize_affine", {{x}, params, {q}});
  const ValueId y = s.f32(sz, "y");
  s.op("q8ta_dequantize_affine", {{q}, params, {y}});
  s.b.set_inputs({x}, {"x"});
  s.b.set_outputs({y, scale}, {"y", "scale"});
  return s.b.finish();
}

// A small network: conv (im2col) -> add (residual, the quantized input) -> max pool -> mean.
std::vector<uint8_t> residual_block() {
  Seed s;
  const Sizes sz = {1, 8, 6, 6};
  ValueId x;
  const ValueId q = s.quantized_input(sz, L::PackedInt8_4W4C, &x);
  const auto w = weights(s, {8, 8, 3, 3});
  const ValueId c = s.q8(sz);
  s.op("q8ta_conv2d", {{q},
                       s.qparams(kInScale, kInZp),
                       w,
                       {s.ints_list({1}), s.ints_list({1}), s.ints_list({1}), s.b.add_int(1)},
                       s.qparams(0.1f, 0),
                       {s.b.add_int(0), s.b.add_int(127), c}});
  const ValueId sum = s.q8(sz);
  s.op("q8ta_add", {{c},
                    s.qparams(0.1f, 0),
                    {q},
                    s.qparams(kInScale, kInZp),
                    s.qparams(0.1f, 0),
                    {s.b.add_int(-128), s.b.add_int(127), sum}});
  const Sizes pooled_sz = {1, 8, 3, 3};
  const ValueId pooled = s.q8(pooled_sz);
  s.op("q8ta_max_pool2d", {{sum},
                           s.qparams(0.1f, 0),
                           {s.ints_list({2, 2}), s.ints_list({}), s.ints_list({}), s.ints_list({1}),
                            s.b.add_bool(false)},
                           s.qparams(0.1f, 0),
                           {pooled}});
  const Sizes mean_sz = {1, 8, 1, 1};
  const ValueId m = s.q8(mean_sz);
  s.op("q8ta_mean", {{pooled}, s.qparams(0.1f, 0), s.qparams(0.05f, 0), {m}});
  return s.finish(x, m, mean_sz, 0.05f, 0);
}

}  // namespace

std::vector<std::pair<std::string, std::vector<uint8_t>>> op_seed_blobs() {
  const L w4c = L::PackedInt8_4W4C, c1w = L::PackedInt8_4C1W;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  out.emplace_back("qdq_chain", qdq_chain());
  out.emplace_back("texture_float_convert", texture_float_convert());
  out.emplace_back("linear_gemv", linear({1, 2, 8}, 5, false));
  out.emplace_back("linear_gemm", linear({2, 3, 12}, 6, false));
  out.emplace_back("linear_dq", linear({3, 8}, 4, true));
  out.emplace_back("conv_pointwise", conv({{1, 8, 5, 5}, 4, 1, 1, 1, 0, 1, 1}));
  out.emplace_back("conv_depthwise", conv({{1, 4, 6, 6}, 4, 3, 3, 1, 1, 1, 4}));
  out.emplace_back("conv_depthwise_s2", conv({{1, 6, 7, 7}, 6, 3, 3, 2, 1, 1, 6, c1w, c1w}));
  out.emplace_back("conv_im2col", conv({{1, 8, 6, 6}, 4, 3, 3, 1, 1, 1, 1}));
  out.emplace_back("conv_direct",
                   conv({{1, 3, 6, 6}, 4, 3, 3, 2, 1, 1, 1, w4c, c1w, false, 0, 100}));
  out.emplace_back("conv_grouped", conv({{1, 8, 5, 5}, 8, 3, 3, 1, 1, 1, 2}));
  out.emplace_back("conv_dilated_dq", conv({{1, 4, 7, 7}, 5, 3, 3, 1, 2, 2, 1, c1w, w4c, true}));
  out.emplace_back("add", add({1, 8, 4, 4}, {1, 8, 4, 4}, w4c));
  out.emplace_back("add_broadcast", add({2, 5, 3, 3}, {1, 5, 1, 1}, c1w));
  out.emplace_back("add_4h4w", add({1, 3, 5, 6}, {1, 3, 5, 6}, L::PackedInt8_4H4W));
  out.emplace_back("max_pool", max_pool(w4c, false));
  out.emplace_back("max_pool_ceil", max_pool(c1w, true));
  out.emplace_back("mean", mean(w4c));
  out.emplace_back("mean_4c1w", mean(c1w));
  out.emplace_back("pixel_shuffle_r2", q8_pixel_shuffle(2, w4c, false));
  out.emplace_back("pixel_shuffle_r2_requant", q8_pixel_shuffle(2, c1w, true));
  out.emplace_back("pixel_shuffle_r3", q8_pixel_shuffle(3, w4c, true));
  out.emplace_back("pixel_shuffle_f32",
                   float_pixel_shuffle(DType::Float32, S::Buffer, L::WidthPacked));
  out.emplace_back("pixel_shuffle_f16",
                   float_pixel_shuffle(DType::Float16, S::Texture3D, L::ChannelsPacked));
  out.emplace_back("affine_constant", affine_constant());
  out.emplace_back("affine_dynamic_asym", affine_dynamic(2));
  out.emplace_back("affine_dynamic_sym", affine_dynamic(0));
  out.emplace_back("residual_block", residual_block());
  return out;
}

}  // namespace vkd::fuzz
