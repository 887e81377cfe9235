// q8ta_layer_norm's (q8ta_layer_norm_dq's, layer_norm's, layer_norm_q's, layer_norm_dual's)
// argument checks: bad dtypes, layouts,
// sizes, storage, weight / bias lengths and values, eps and quantization are errors naming the op
// and the problem, raised while the graph is built. The arithmetic is checked by the ACCU cases
// (test/custom_ops/layer_norm_cases.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/LayerNorm.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

// A layer norm over W (10) of [2, 3, 10] in 4H4W, requantized (float32 out when p.output is
// reset, a float32 input when p.input is).
struct LayerNormSetup {
  TensorSpec in = int8_spec({2, 3, 10}, MemoryLayout::PackedInt8_4H4W);
  TensorSpec out = int8_spec({2, 3, 10}, MemoryLayout::PackedInt8_4H4W);
  vkd::ops::LayerNormParams p{{{0.05f, 3, -128, 127}},
                              std::vector<float>(10, 1.0f),
                              std::vector<float>(10, 0.0f),
                              1e-12,
                              {{0.04f, -2, -128, 127}}};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_q8ta_layer_norm_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"), p);
    });
  }
};

TensorSpec float_spec(std::vector<int64_t> sizes) {
  return {std::move(sizes), DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
}

LayerNormSetup float_output() {
  LayerNormSetup s;
  s.out = float_spec({2, 3, 10});
  s.p.output.reset();
  return s;
}

LayerNormSetup float_input() {
  LayerNormSetup s = float_output();
  s.in = float_spec({2, 3, 10});
  s.p.input.reset();
  return s;
}

// A float32 input quantized into 4W4C (layer_norm_q).
LayerNormSetup quantized_float_input() {
  LayerNormSetup s = float_input();
  s.out = int8_spec({2, 3, 10}, MemoryLayout::PackedInt8_4W4C);
  s.p.output = vkd::ops::QuantParams{0.04f, -2, -128, 127};
  return s;
}

// layer_norm_dual: a float32 input, float32 `out` and int8 `out_q` (4H4W).
struct DualSetup {
  TensorSpec in = float_spec({2, 3, 10});
  TensorSpec out = float_spec({2, 3, 10});
  TensorSpec out_q = int8_spec({2, 3, 10}, MemoryLayout::PackedInt8_4H4W);
  vkd::ops::LayerNormParams p = quantized_float_input().p;

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_layer_norm_dual_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"),
                                         g.add_tensor(out_q, "yq"), p);
    });
  }
};

class LayerNormChecks : public GpuTest {};

TEST_F(LayerNormChecks, TheSetupsBuild) {
  for (const LayerNormSetup& s :
       {LayerNormSetup{}, float_output(), float_input(), quantized_float_input()}) {
    const auto [code, message] = s.build(ctx());
    EXPECT_EQ(code, -1) << message;
  }
  const auto [code, message] = DualSetup{}.build(ctx());
  EXPECT_EQ(code, -1) << message;
}

TEST_F(LayerNormChecks, TensorsAreChecked) {
  LayerNormSetup wrong_dtype;
  wrong_dtype.in = float_spec({2, 3, 10});
  expect_op_error(wrong_dtype, ctx(), "q8ta_layer_norm", "tensor 'x'");
  LayerNormSetup sizes;
  sizes.out = int8_spec({2, 3, 9}, MemoryLayout::PackedInt8_4H4W);
  expect_op_error(sizes, ctx(), "q8ta_layer_norm", "sizes differ");
  LayerNormSetup layouts;
  layouts.out = int8_spec({2, 3, 10}, MemoryLayout::PackedInt8_4W4C);
  expect_op_error(layouts, ctx(), "q8ta_layer_norm", "share one packed layout");
  LayerNormSetup texture = float_output();
  texture.out.storage = StorageType::Texture3D;
  expect_op_error(texture, ctx(), "q8ta_layer_norm_dq", "must be a buffer");
  LayerNormSetup float_in_int8 = float_input();
  float_in_int8.in = int8_spec({2, 3, 10}, MemoryLayout::PackedInt8_4H4W);
  expect_op_error(float_in_int8, ctx(), "layer_norm", "tensor 'x'");
}

// layer_norm_q and layer_norm_dual: the int8 output in a buffer of the input's sizes, the float32
// one a float buffer; the dual form needs a float32 input and the int8 output's quantization.
TEST_F(LayerNormChecks, QuantizedFloatOutputsAreChecked) {
  LayerNormSetup float_out = quantized_float_input();
  float_out.out = float_spec({2, 3, 10});
  expect_op_error(float_out, ctx(), "layer_norm_q", "tensor 'y'");
  LayerNormSetup sizes = quantized_float_input();
  sizes.out = int8_spec({2, 3, 11}, MemoryLayout::PackedInt8_4W4C);
  expect_op_error(sizes, ctx(), "layer_norm_q", "sizes differ");
  LayerNormSetup bad_zp = quantized_float_input();
  bad_zp.p.output->zero_point = 200;
  expect_op_error(bad_zp, ctx(), "layer_norm_q", "zero_point 200 outside");
  LayerNormSetup narrow = quantized_float_input();
  narrow.p.output->quant_min = -100;
  expect_op_error(narrow, ctx(), "layer_norm_q", "range must be [-128, 127], got [-100, 127]",
                  vkd::ErrorCode::Unsupported);
  DualSetup int8_input;
  int8_input.in = int8_spec({2, 3, 10}, MemoryLayout::PackedInt8_4H4W);
  int8_input.p.input = vkd::ops::QuantParams{0.05f, 3, -128, 127};
  expect_op_error(int8_input, ctx(), "layer_norm_dual", "a float32 input and the int8 output's");
  DualSetup no_quant;
  no_quant.p.output.reset();
  expect_op_error(no_quant, ctx(), "layer_norm_dual", "a float32 input and the int8 output's");
  DualSetup swapped;
  std::swap(swapped.out, swapped.out_q);
  expect_op_error(swapped, ctx(), "layer_norm_dual", "tensor 'y'");
  DualSetup short_q;
  short_q.out_q = int8_spec({2, 3, 9}, MemoryLayout::PackedInt8_4H4W);
  expect_op_error(short_q, ctx(), "layer_norm_dual", "sizes differ");
}

TEST_F(LayerNormChecks, WeightBiasAndEpsAreChecked) {
  LayerNormSetup short_weight;
  short_weight.p.weight.pop_back();
  expect_op_error(short_weight, ctx(), "q8ta_layer_norm",
                  "weight and bias must hold one value per element of the last dim (10), got 9 "
                  "and 10");
  LayerNormSetup long_bias = float_input();
  long_bias.p.bias.push_back(0.0f);
  expect_op_error(long_bias, ctx(), "layer_norm", "got 10 and 11");
  LayerNormSetup nan_weight;
  nan_weight.p.weight[4] = NAN;
  expect_op_error(nan_weight, ctx(), "q8ta_layer_norm", "element 4: weight nan");
  LayerNormSetup negative_eps = float_output();
  negative_eps.p.eps = -1e-5;
  expect_op_error(negative_eps, ctx(), "q8ta_layer_norm_dq", "eps -1e-05 must be finite and >= 0");
  LayerNormSetup huge_eps;
  huge_eps.p.eps = 1e38;
  expect_op_error(huge_eps, ctx(), "q8ta_layer_norm", "overflows float32",
                  vkd::ErrorCode::Unsupported);
  LayerNormSetup long_row;
  long_row.in = int8_spec({1, 70000}, MemoryLayout::PackedInt8_4H4W);
  long_row.out = long_row.in;
  expect_op_error(long_row, ctx(), "q8ta_layer_norm", "the last dim 70000 is outside 1 .. 65536",
                  vkd::ErrorCode::Unsupported);
}

TEST_F(LayerNormChecks, QuantizationIsChecked) {
  LayerNormSetup zero_scale;
  zero_scale.p.input->scale = 0.0f;
  expect_op_error(zero_scale, ctx(), "q8ta_layer_norm", "scale");
  LayerNormSetup zp;
  zp.p.output = vkd::ops::QuantParams{0.04f, 100, -128, 90};
  expect_op_error(zp, ctx(), "q8ta_layer_norm", "zero_point 100 outside");
}

}  // namespace
}  // namespace vkd_test
