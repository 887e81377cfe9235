// Every GPU op against the CPU references (test/reference/), on awkward shapes, in every
// storage/layout combination. Expected int8x4 words come from LayoutReference.h (padding
// included, exact), expected floats from QuantReference.h (exact). Every output tensor is also
// a graph input pre-filled with a sentinel, so words the shader forgets to write show up.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/TensorSpec.h"
#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/LayoutConvert.h"
#include "runtime/ops/QuantizeDequantize.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/QuantReference.h"
#include "test/unit/GpuTest.h"

namespace vkd_test {
namespace {

using vkd::DType;
using vkd::MemoryLayout;
using vkd::StorageType;
using vkd::TensorSpec;
using vkd::graph::ComputeGraph;
using vkd::graph::ValueRef;
using vkd::testing::ref_pack;
using vkd::testing::reference_dequantize;
using vkd::testing::reference_quantize;

constexpr int32_t kIntSentinel = static_cast<int32_t>(0xA5C3E1F7u);
constexpr int32_t kFloatSentinel = 0x7FC0DEAD;  // a quiet NaN no op produces

const std::vector<std::vector<int64_t>>& shapes() {
  static const std::vector<std::vector<int64_t>> all = {
      {1, 1, 1, 1}, {1, 3, 5, 7}, {2, 17, 9, 6}, {1, 4, 1, 33},
      {7},          {5, 9},       {3, 6, 10},    {1, 8, 8, 8},
  };
  return all;
}

int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

struct QuantCase {
  const char* name;
  float scale;
  int zero_point, quant_min, quant_max;
  vkd::ops::QuantParams params() const { return {scale, zero_point, quant_min, quant_max}; }
};

// Power-of-two scales make x * inv_scale exact, so (k + 0.5) * scale is an exact tie.
const QuantCase kQuantCases[] = {
    {"zp0_pow2", 0.0625f, 0, -128, 127},     {"zp_min", 0.05f, -128, -128, 127},
    {"zp_max_pow2", 0.125f, 127, -128, 127}, {"zp_mid", 0.0371f, 13, -128, 127},
    {"narrow_pow2", 0.25f, -2, -8, 7},
};

// Random floats over about 1.3x the representable range (so some saturate), with every third
// value (element 0 included) an exact tie (k + 0.5) * scale, k on both sides of the range.
std::vector<float> quantize_inputs(size_t count, const QuantCase& q, uint32_t seed) {
  std::mt19937 rng(seed);
  const float lo = static_cast<float>(q.quant_min - q.zero_point) * q.scale;
  const float hi = static_cast<float>(q.quant_max - q.zero_point) * q.scale;
  const float margin = 0.3f * (hi - lo);
  std::uniform_real_distribution<float> value(lo - margin, hi + margin);
  std::uniform_int_distribution<int> tie_k(q.quant_min - q.zero_point - 3,
                                           q.quant_max - q.zero_point + 2);
  std::vector<float> x(count);
  for (size_t i = 0; i < count; ++i) {
    x[i] = i % 3 == 0 ? (static_cast<float>(tie_k(rng)) + 0.5f) * q.scale : value(rng);
  }
  return x;
}

TensorSpec int8_spec(const std::vector<int64_t>& sizes, MemoryLayout layout) {
  return {sizes, DType::Int8x4, StorageType::Buffer, layout};
}

TensorSpec float_spec(const std::vector<int64_t>& sizes, StorageType storage, MemoryLayout layout) {
  return {sizes, DType::Float32, storage, layout};
}

// An op output that is also a graph input, so it can be pre-filled with a sentinel.
ValueRef add_output_tensor(ComputeGraph& g, const TensorSpec& spec, const std::string& name) {
  const ValueRef ref = g.add_tensor(spec, name);
  g.add_input(ref);
  g.add_output(ref);
  return ref;
}

void fill_sentinel(ComputeGraph& g, ValueRef ref, int32_t sentinel) {
  g.write_words(ref, std::vector<int32_t>(g.tensor(ref).bytes() / 4, sentinel));
}

// ---- rounding sanity (hard-coded, independent of the reference) --------------------------------

class QuantizeRounding : public GpuTest {};

TEST_F(QuantizeRounding, TiesRoundToEvenAndSaturate) {
  const std::vector<float> x = {0.5f,   1.5f,   2.5f,   3.5f,    -0.5f,   -1.5f, -2.5f, -3.5f,
                                126.5f, 127.5f, 200.0f, -128.5f, -129.5f, -1e9f, 0.49f, -0.51f};
  const std::vector<int8_t> expected = {0,   2,   2,   4,    0,    -2,   -2, -4,
                                        126, 127, 127, -128, -128, -128, 0,  -1};
  ASSERT_EQ(reference_quantize(x, 1.0f, 0, -128, 127), expected)
      << "the CPU reference itself does not round half to even";
  const std::vector<int64_t> sizes = {1, 4, 1, 4};
  ComputeGraph g(ctx());
  const ValueRef in =
      g.add_tensor(float_spec(sizes, StorageType::Buffer, MemoryLayout::WidthPacked));
  const ValueRef out = add_output_tensor(g, int8_spec(sizes, MemoryLayout::PackedInt8_4W4C), "q");
  g.add_input(in);
  vkd::ops::add_q8ta_quantize_node(g, in, out, {1.0f, 0, -128, 127});
  g.prepare();
  g.write_float(in, x);
  fill_sentinel(g, out, kIntSentinel);
  g.execute();
  EXPECT_EQ(g.read_int8(out), expected);
  EXPECT_TRUE(words_equal(ref_pack(MemoryLayout::PackedInt8_4W4C, ref_shape(sizes), expected, 0),
                          g.read_words(out)));
}

// ---- q8ta_quantize ------------------------------------------------------------------------------

struct QuantizeParam {
  StorageType storage;
  MemoryLayout float_layout;
  MemoryLayout int8_layout;
};

void PrintTo(const QuantizeParam& p, std::ostream* os) {
  *os << short_name(p.storage) << " " << short_name(p.float_layout) << " -> "
      << short_name(p.int8_layout);
}

class Quantize : public GpuTestWithParam<QuantizeParam> {};

TEST_P(Quantize, MatchesReferenceWordForWord) {
  const QuantizeParam& p = GetParam();
  struct Item {
    std::string what;
    ValueRef in, out;
    std::vector<float> x;
    std::vector<int32_t> expected;
  };
  std::vector<Item> items;
  ComputeGraph g(ctx());
  uint32_t seed = 100;
  for (const auto& sizes : shapes()) {
    for (const QuantCase& q : kQuantCases) {
      Item it;
      it.what = shape_name(sizes) + " " + q.name;
      it.in = g.add_tensor(float_spec(sizes, p.storage, p.float_layout), "x " + it.what);
      g.add_input(it.in);
      it.out = add_output_tensor(g, int8_spec(sizes, p.int8_layout), "q " + it.what);
      vkd::ops::add_q8ta_quantize_node(g, it.in, it.out, q.params());
      it.x = quantize_inputs(static_cast<size_t>(numel(sizes)), q, seed++);
      it.expected = ref_pack(
          p.int8_layout, ref_shape(sizes),
          reference_quantize(it.x, q.scale, q.zero_point, q.quant_min, q.quant_max), q.zero_point);
      items.push_back(std::move(it));
    }
  }
  g.prepare();
  for (const Item& it : items) {
    g.write_float(it.in, it.x);
    fill_sentinel(g, it.out, kIntSentinel);
  }
  g.execute();
  for (const Item& it : items) {
    EXPECT_TRUE(words_equal(it.expected, g.read_words(it.out))) << it.what;
  }
}

std::vector<QuantizeParam> quantize_params() {
  std::vector<QuantizeParam> out;
  for (StorageType st : {StorageType::Buffer, StorageType::Texture3D})
    for (MemoryLayout fl : vkd::kAllFloatLayouts)
      for (MemoryLayout il : vkd::kAllPackedInt8Layouts) out.push_back({st, fl, il});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Ops, Quantize, ::testing::ValuesIn(quantize_params()),
                         [](const ::testing::TestParamInfo<QuantizeParam>& info) {
                           return short_name(info.param.storage) + "_" +
                                  short_name(info.param.float_layout) + "_to_" +
                                  short_name(info.param.int8_layout);
                         });

// The test data really contains exact ties for the power-of-two scales.
TEST(QuantizeInputs, ContainExactTies) {
  for (const QuantCase& q : kQuantCases) {
    if (std::string(q.name).find("pow2") == std::string::npos) continue;
    const auto x = quantize_inputs(30, q, 1);
    const float inv = vkd::testing::reference_inverse_scale(q.scale);
    int ties = 0;
    for (float v : x) {
      const float t = v * inv;
      ties += t - std::floor(t) == 0.5f;
    }
    EXPECT_GE(ties, 10) << q.name;
  }
}

// ---- q8ta_dequantize ----------------------------------------------------------------------------

struct DequantizeParam {
  MemoryLayout int8_layout;
  StorageType storage;
  MemoryLayout float_layout;
};

void PrintTo(const DequantizeParam& p, std::ostream* os) {
  *os << short_name(p.int8_layout) << " -> " << short_name(p.storage) << " "
      << short_name(p.float_layout);
}

class Dequantize : public GpuTestWithParam<DequantizeParam> {};

TEST_P(Dequantize, MatchesReferenceExactly) {
  const DequantizeParam& p = GetParam();
  struct Item {
    std::string what;
    ValueRef in, out;
    int8_t zero_point;
    std::vector<int8_t> q;
    std::vector<float> expected;
  };
  std::vector<Item> items;
  ComputeGraph g(ctx());
  uint32_t seed = 200;
  for (const auto& sizes : shapes()) {
    for (const QuantCase& qc : kQuantCases) {
      Item it;
      it.what = shape_name(sizes) + " " + qc.name;
      it.in = g.add_tensor(int8_spec(sizes, p.int8_layout), "q " + it.what);
      g.add_input(it.in);
      it.out = add_output_tensor(g, float_spec(sizes, p.storage, p.float_layout), "x " + it.what);
      vkd::ops::add_q8ta_dequantize_node(g, it.in, it.out, qc.params());
      it.zero_point = static_cast<int8_t>(qc.zero_point);
      it.q = random_int8(static_cast<size_t>(numel(sizes)), seed++);
      it.expected = reference_dequantize(it.q, qc.scale, qc.zero_point);
      items.push_back(std::move(it));
    }
  }
  g.prepare();
  for (const Item& it : items) {
    g.write_int8(it.in, it.q, it.zero_point);
    fill_sentinel(g, it.out, kFloatSentinel);
  }
  g.execute();
  for (const Item& it : items) {
    EXPECT_TRUE(floats_equal(it.expected, g.read_float(it.out))) << it.what;
    // Raw device contents: element order, and 0 in texel components past the tensor's end.
    EXPECT_TRUE(words_equal(float_bits(ref_float_device(g.spec(it.out), it.expected)),
                            g.read_words(it.out)))
        << it.what << " (raw device words)";
  }
}

std::vector<DequantizeParam> dequantize_params() {
  std::vector<DequantizeParam> out;
  for (MemoryLayout il : vkd::kAllPackedInt8Layouts)
    for (StorageType st : {StorageType::Buffer, StorageType::Texture3D})
      for (MemoryLayout fl : vkd::kAllFloatLayouts) out.push_back({il, st, fl});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Ops, Dequantize, ::testing::ValuesIn(dequantize_params()),
                         [](const ::testing::TestParamInfo<DequantizeParam>& info) {
                           return short_name(info.param.int8_layout) + "_to_" +
                                  short_name(info.param.storage) + "_" +
                                  short_name(info.param.float_layout);
                         });

// ---- q8ta_convert -------------------------------------------------------------------------------

struct ConvertParam {
  MemoryLayout in, out;
};

void PrintTo(const ConvertParam& p, std::ostream* os) {
  *os << short_name(p.in) << " -> " << short_name(p.out);
}

class Q8taConvert : public GpuTestWithParam<ConvertParam> {};

TEST_P(Q8taConvert, MatchesReferenceWordForWord) {
  const ConvertParam& p = GetParam();
  struct Item {
    std::string what;
    ValueRef in, out;
    std::vector<int32_t> in_words, expected;
  };
  std::vector<Item> items;
  ComputeGraph g(ctx());
  uint32_t seed = 300;
  for (const auto& sizes : shapes()) {
    // (zero point, padding of the input): normally the input's padding holds the zero point
    // (write_int8 with pad = zp); the last case has other bytes there, which must not leak
    // into the output's padding.
    const struct {
      int zp, in_pad;
      const char* name;
    } cases[] = {{-128, -128, "zp_min"},
                 {127, 127, "zp_max"},
                 {5, 5, "zp_5"},
                 {-3, 0x5A, "zp_-3_in_pad_0x5A"}};
    for (const auto& c : cases) {
      Item it;
      it.what = shape_name(sizes) + " " + c.name;
      it.in = g.add_tensor(int8_spec(sizes, p.in), "in " + it.what);
      g.add_input(it.in);
      it.out = add_output_tensor(g, int8_spec(sizes, p.out), "out " + it.what);
      vkd::ops::add_q8ta_convert_node(g, it.in, it.out, c.zp);
      const auto s = ref_shape(sizes);
      const auto values = random_int8(static_cast<size_t>(numel(sizes)), seed++);
      it.in_words = ref_pack(p.in, s, values, c.in_pad);
      it.expected = ref_pack(p.out, s, values, c.zp);
      items.push_back(std::move(it));
    }
  }
  g.prepare();
  for (const Item& it : items) {
    g.write_words(it.in, it.in_words);
    fill_sentinel(g, it.out, kIntSentinel);
  }
  g.execute();
  for (const Item& it : items) {
    EXPECT_TRUE(words_equal(it.expected, g.read_words(it.out))) << it.what;
  }
}

// write_int8 (the runtime's host packing) must produce the same input words as the reference.
class Int8Staging : public GpuTest {};

TEST_F(Int8Staging, WriteInt8MatchesReferencePacking) {
  ComputeGraph g(ctx());
  std::vector<std::pair<ValueRef, std::vector<int32_t>>> expected;
  std::vector<std::pair<ValueRef, std::vector<int8_t>>> inputs;
  uint32_t seed = 350;
  for (const auto& sizes : shapes()) {
    for (MemoryLayout layout : vkd::kAllPackedInt8Layouts) {
      const ValueRef t =
          g.add_tensor(int8_spec(sizes, layout), shape_name(sizes) + " " + short_name(layout));
      g.add_input(t);
      g.add_output(t);
      const auto values = random_int8(static_cast<size_t>(numel(sizes)), seed++);
      expected.push_back({t, ref_pack(layout, ref_shape(sizes), values, 77)});
      inputs.push_back({t, values});
    }
  }
  g.prepare();
  for (const auto& [t, values] : inputs) g.write_int8(t, values, 77);
  g.execute();
  for (const auto& [t, words] : expected) {
    EXPECT_TRUE(words_equal(words, g.read_words(t))) << g.tensor(t).name();
  }
}

std::vector<ConvertParam> convert_params() {
  std::vector<ConvertParam> out;
  for (MemoryLayout a : vkd::kAllPackedInt8Layouts)
    for (MemoryLayout b : vkd::kAllPackedInt8Layouts) out.push_back({a, b});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Ops, Q8taConvert, ::testing::ValuesIn(convert_params()),
                         [](const ::testing::TestParamInfo<ConvertParam>& info) {
                           return short_name(info.param.in) + "_to_" + short_name(info.param.out);
                         });

// ---- float_convert ------------------------------------------------------------------------------

struct FloatConvertParam {
  StorageType src_storage;
  MemoryLayout src_layout;
  StorageType dst_storage;
  MemoryLayout dst_layout;
};

void PrintTo(const FloatConvertParam& p, std::ostream* os) {
  *os << short_name(p.src_storage) << " " << short_name(p.src_layout) << " -> "
      << short_name(p.dst_storage) << " " << short_name(p.dst_layout);
}

class FloatConvert : public GpuTestWithParam<FloatConvertParam> {};

TEST_P(FloatConvert, CopiesExactly) {
  const FloatConvertParam& p = GetParam();
  struct Item {
    std::string what;
    ValueRef in, out;
    std::vector<float> x;
  };
  std::vector<Item> items;
  ComputeGraph g(ctx());
  uint32_t seed = 400;
  for (const auto& sizes : shapes()) {
    Item it;
    it.what = shape_name(sizes);
    it.in = g.add_tensor(float_spec(sizes, p.src_storage, p.src_layout), "in " + it.what);
    g.add_input(it.in);
    it.out = add_output_tensor(g, float_spec(sizes, p.dst_storage, p.dst_layout), "out " + it.what);
    vkd::ops::add_float_convert_node(g, it.in, it.out);
    it.x = random_floats(static_cast<size_t>(numel(sizes)), seed++);
    items.push_back(std::move(it));
  }
  g.prepare();
  for (const Item& it : items) {
    g.write_float(it.in, it.x);
    fill_sentinel(g, it.out, kFloatSentinel);
  }
  g.execute();
  for (const Item& it : items) {
    EXPECT_TRUE(floats_equal(it.x, g.read_float(it.out))) << it.what;
    EXPECT_TRUE(
        words_equal(float_bits(ref_float_device(g.spec(it.out), it.x)), g.read_words(it.out)))
        << it.what << " (raw device words)";
  }
}

std::vector<FloatConvertParam> float_convert_params() {
  // Every storage pair x a spread of layout pairs (identity, and each packed dim moving).
  const std::pair<MemoryLayout, MemoryLayout> layouts[] = {
      {MemoryLayout::WidthPacked, MemoryLayout::WidthPacked},
      {MemoryLayout::WidthPacked, MemoryLayout::ChannelsPacked},
      {MemoryLayout::HeightPacked, MemoryLayout::WidthPacked},
      {MemoryLayout::ChannelsPacked, MemoryLayout::HeightPacked},
      {MemoryLayout::ChannelsPacked, MemoryLayout::ChannelsPacked},
  };
  std::vector<FloatConvertParam> out;
  for (StorageType a : {StorageType::Buffer, StorageType::Texture3D})
    for (StorageType b : {StorageType::Buffer, StorageType::Texture3D})
      for (const auto& [la, lb] : layouts) out.push_back({a, la, b, lb});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Ops, FloatConvert, ::testing::ValuesIn(float_convert_params()),
                         [](const ::testing::TestParamInfo<FloatConvertParam>& info) {
                           const auto& p = info.param;
                           return short_name(p.src_storage) + "_" + short_name(p.src_layout) +
                                  "_to_" + short_name(p.dst_storage) + "_" +
                                  short_name(p.dst_layout);
                         });

// ---- chains, determinism, the no-int8-dot context
// ------------------------------------------------

// float (buffer, W) -> quantize 4W4C -> convert 4C1W -> convert 4H4W -> dequantize (texture, C)
// -> float_convert (buffer, H). Every intermediate is an output.
struct Chain {
  ValueRef x, q_4w4c, q_4c1w, q_4h4w, deq_tex, result;
};

Chain build_chain(ComputeGraph& g, const std::vector<int64_t>& sizes, const QuantCase& q) {
  Chain c;
  c.x = g.add_tensor(float_spec(sizes, StorageType::Buffer, MemoryLayout::WidthPacked), "x");
  g.add_input(c.x);
  c.q_4w4c = g.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4W4C), "q_4w4c");
  c.q_4c1w = g.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4C1W), "q_4c1w");
  c.q_4h4w = g.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4H4W), "q_4h4w");
  c.deq_tex = g.add_tensor(float_spec(sizes, StorageType::Texture3D, MemoryLayout::ChannelsPacked),
                           "deq_tex");
  c.result =
      g.add_tensor(float_spec(sizes, StorageType::Buffer, MemoryLayout::HeightPacked), "result");
  vkd::ops::add_q8ta_quantize_node(g, c.x, c.q_4w4c, q.params());
  vkd::ops::add_q8ta_convert_node(g, c.q_4w4c, c.q_4c1w, q.zero_point);
  vkd::ops::add_q8ta_convert_node(g, c.q_4c1w, c.q_4h4w, q.zero_point);
  vkd::ops::add_q8ta_dequantize_node(g, c.q_4h4w, c.deq_tex, q.params());
  vkd::ops::add_float_convert_node(g, c.deq_tex, c.result);
  for (ValueRef r : {c.q_4w4c, c.q_4c1w, c.q_4h4w, c.deq_tex, c.result}) g.add_output(r);
  return c;
}

void check_chain(ComputeGraph& g, const Chain& c, const std::vector<int64_t>& sizes,
                 const QuantCase& q, const std::vector<float>& x) {
  const auto s = ref_shape(sizes);
  const auto quantized = reference_quantize(x, q.scale, q.zero_point, q.quant_min, q.quant_max);
  EXPECT_TRUE(words_equal(ref_pack(MemoryLayout::PackedInt8_4W4C, s, quantized, q.zero_point),
                          g.read_words(c.q_4w4c)));
  EXPECT_TRUE(words_equal(ref_pack(MemoryLayout::PackedInt8_4C1W, s, quantized, q.zero_point),
                          g.read_words(c.q_4c1w)));
  EXPECT_TRUE(words_equal(ref_pack(MemoryLayout::PackedInt8_4H4W, s, quantized, q.zero_point),
                          g.read_words(c.q_4h4w)));
  const auto dequantized = reference_dequantize(quantized, q.scale, q.zero_point);
  EXPECT_TRUE(floats_equal(dequantized, g.read_float(c.deq_tex)));
  EXPECT_TRUE(floats_equal(dequantized, g.read_float(c.result)));
  EXPECT_TRUE(words_equal(float_bits(ref_float_device(g.spec(c.result), dequantized)),
                          g.read_words(c.result)));
}

class OpChain : public GpuTest {};

TEST_F(OpChain, RepeatedExecutionIsDeterministic) {
  const std::vector<int64_t> sizes = {2, 17, 9, 6};
  const QuantCase& q = kQuantCases[3];
  ComputeGraph g(ctx());
  const Chain c = build_chain(g, sizes, q);
  g.prepare();
  const auto x = quantize_inputs(static_cast<size_t>(numel(sizes)), q, 500);
  g.write_float(c.x, x);
  std::vector<std::vector<int32_t>> first;
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    g.execute();
    std::vector<std::vector<int32_t>> words;
    for (ValueRef r : {c.q_4w4c, c.q_4c1w, c.q_4h4w, c.deq_tex, c.result}) {
      words.push_back(g.read_words(r));
    }
    if (run == 0) {
      first = words;
      check_chain(g, c, sizes, q, x);
    } else {
      for (size_t i = 0; i < words.size(); ++i) {
        EXPECT_TRUE(words_equal(first[i], words[i])) << "output " << i << " changed between runs";
      }
    }
  }
  // New input, same prepared graph: results follow the input.
  const auto x2 = quantize_inputs(static_cast<size_t>(numel(sizes)), q, 501);
  g.write_float(c.x, x2);
  g.execute();
  check_chain(g, c, sizes, q, x2);
}

TEST_F(OpChain, SameResultsWithInt8DotSwitchedOff) {
  const std::vector<int64_t> sizes = {1, 3, 5, 7};
  const QuantCase& q = kQuantCases[4];
  ComputeGraph g(no_dot_ctx());
  const Chain c = build_chain(g, sizes, q);
  g.prepare();
  const auto x = quantize_inputs(static_cast<size_t>(numel(sizes)), q, 600);
  g.write_float(c.x, x);
  g.execute();
  check_chain(g, c, sizes, q, x);
}

}  // namespace
}  // namespace vkd_test
