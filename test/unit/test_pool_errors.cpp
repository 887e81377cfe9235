// The argument checks of q8ta_max_pool2d, q8ta_avg_pool2d, q8ta_adaptive_avg_pool2d and
// q8ta_mean (q8ta_mean_flat): bad dtypes, layouts, output sizes, pooling and quantization
// parameters are InvalidArgument (limits: Unsupported) errors naming the op and the problem,
// raised while the graph is built. The arithmetic is checked by the ACCU cases.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Pool.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

using vkd::ErrorCode;

// 3x3 stride-2 padding-1 max pool over [1, 8, 7, 6] -> [1, 8, 4, 3], input and output
// quantized alike.
struct PoolSetup {
  TensorSpec in = int8_spec({1, 8, 7, 6});
  TensorSpec out = int8_spec({1, 8, 4, 3});
  vkd::ops::MaxPool2dParams p{
      {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, {0.1f, 0, -128, 127}, {0.1f, 0, -128, 127}};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_q8ta_max_pool2d_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"), p);
    });
  }
};

// Mean of [2, 8, 7, 6] -> [2, 8, 1, 1].
struct MeanSetup {
  TensorSpec in = int8_spec({2, 8, 7, 6});
  TensorSpec out = int8_spec({2, 8, 1, 1});
  vkd::ops::QuantParams in_q{0.1f, 0, -128, 127}, out_q{0.05f, 3, -128, 127};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_q8ta_mean_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"), in_q, out_q);
    });
  }
};

// 3x3 stride-2 padding-1 ceil-mode average pool over [1, 8, 7, 6] -> [1, 8, 4, 4] (or adaptive
// to the output's size), 4C1W.
struct AvgPoolSetup {
  bool adaptive = false;
  TensorSpec in = int8_spec({1, 8, 7, 6}, MemoryLayout::PackedInt8_4C1W);
  TensorSpec out = int8_spec({1, 8, 4, 4}, MemoryLayout::PackedInt8_4C1W);
  vkd::ops::AvgPool2dParams p{
      {3, 3}, {2, 2}, {1, 1}, true, false, 0, {0.1f, 0, -128, 127}, {0.05f, 3, -128, 127}};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      if (adaptive) {
        vkd::ops::add_q8ta_adaptive_avg_pool2d_node(g, g.add_tensor(in, "x"),
                                                    g.add_tensor(out, "y"), p.input, p.output);
      } else {
        vkd::ops::add_q8ta_avg_pool2d_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"), p);
      }
    });
  }
};

class PoolChecks : public GpuTest {};

TEST_F(PoolChecks, TheSetupsBuild) {
  EXPECT_EQ(PoolSetup{}.build(ctx()).first, -1) << PoolSetup{}.build(ctx()).second;
  PoolSetup requant;  // the requantizing variant
  requant.p.output = {0.05f, -7, -128, 127};
  EXPECT_EQ(requant.build(ctx()).first, -1) << requant.build(ctx()).second;
  EXPECT_EQ(MeanSetup{}.build(ctx()).first, -1) << MeanSetup{}.build(ctx()).second;
  EXPECT_EQ(AvgPoolSetup{}.build(ctx()).first, -1) << AvgPoolSetup{}.build(ctx()).second;
  AvgPoolSetup adaptive;
  adaptive.adaptive = true;
  adaptive.out = int8_spec({1, 8, 9, 2}, MemoryLayout::PackedInt8_4C1W);  // any size
  EXPECT_EQ(adaptive.build(ctx()).first, -1) << adaptive.build(ctx()).second;
}

TEST_F(PoolChecks, AvgPoolArgumentsAreChecked) {
  const std::string op = "q8ta_avg_pool2d";
  AvgPoolSetup wrong;  // floor mode gives 4x3
  wrong.p.ceil_mode = false;
  expect_op_error(wrong, ctx(), op, "must be [1, 8, 4, 3]");
  AvgPoolSetup pad;
  pad.p.padding = {2, 1};
  expect_op_error(pad, ctx(), op, "at most half the kernel size");
  AvgPoolSetup stride;
  stride.p.stride = {0, 2};
  expect_op_error(stride, ctx(), op, "must be positive");
  AvgPoolSetup mixed;
  mixed.out = int8_spec({1, 8, 4, 4});
  expect_op_error(mixed, ctx(), op, "share their layout");
  AvgPoolSetup h4w;
  h4w.in = int8_spec({1, 8, 7, 6}, MemoryLayout::PackedInt8_4H4W);
  h4w.out = int8_spec({1, 8, 4, 4}, MemoryLayout::PackedInt8_4H4W);
  expect_op_error(h4w, ctx(), op, "channels-packed");
  AvgPoolSetup flt;
  flt.in = {{1, 8, 7, 6}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_op_error(flt, ctx(), op, "tensor 'x'");
  AvgPoolSetup scale;
  scale.p.output.scale = 0.0f;
  expect_op_error(scale, ctx(), op, "scale");
  AvgPoolSetup big;  // a 129x128 window: 255 * 16512 >= 2^22
  big.p = {{129, 128}, {1, 1}, {0, 0}, false, true, 0, big.p.input, big.p.output};
  big.in = int8_spec({1, 4, 129, 128});
  big.out = int8_spec({1, 4, 1, 1});
  expect_op_error(big, ctx(), op, "a window of 129x128 positions exceeds 16448",
                  ErrorCode::Unsupported);
  AvgPoolSetup adaptive;  // channels must match
  adaptive.adaptive = true;
  adaptive.out = int8_spec({1, 4, 2, 2}, MemoryLayout::PackedInt8_4C1W);
  expect_op_error(adaptive, ctx(), "q8ta_adaptive_avg_pool2d", "must be [1, 8, 2, 2]");
}

TEST_F(PoolChecks, MaxPoolOutputSizeFollowsPyTorch) {
  // floor vs ceil, and ceil_mode dropping a window that would start in the padding.
  EXPECT_EQ(vkd::ops::max_pool_output_size(7, 2, 0, 2, 1, false), 3);
  EXPECT_EQ(vkd::ops::max_pool_output_size(7, 2, 0, 2, 1, true), 4);
  EXPECT_EQ(vkd::ops::max_pool_output_size(5, 2, 1, 2, 1, true), 3);
  EXPECT_EQ(vkd::ops::max_pool_output_size(7, 3, 0, 2, 2, false), 2);
  PoolSetup s;
  s.out = int8_spec({1, 8, 4, 4});
  expect_op_error(s, ctx(), "q8ta_max_pool2d", "must be [1, 8, 4, 3]");
  s.p.ceil_mode = true;  // now 4 x 4 is right
  EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
}

TEST_F(PoolChecks, MaxPoolBadParametersAreNamed) {
  PoolSetup pad;
  pad.p.padding = {2, 1};
  expect_op_error(pad, ctx(), "q8ta_max_pool2d", "at most half the kernel size");
  PoolSetup stride;
  stride.p.stride = {0, 2};
  expect_op_error(stride, ctx(), "q8ta_max_pool2d", "must be positive");
  PoolSetup small;  // a 9x9 window over 7x6 without padding
  small.p = {{9, 9}, {1, 1}, {0, 0}, {1, 1}, false, small.p.input, small.p.output};
  expect_op_error(small, ctx(), "q8ta_max_pool2d", "too small");
}

// Both quantizations valid; the output over the full int8 range, which the requantizing
// variant clamps to (and the byte variant's values span).
TEST_F(PoolChecks, MaxPoolQuantizationIsChecked) {
  const std::string op = "q8ta_max_pool2d";
  PoolSetup scale;
  scale.p.output.scale = 0.0f;
  expect_op_error(scale, ctx(), op, "q8ta_max_pool2d output: scale must be finite and > 0");
  PoolSetup in_scale;
  in_scale.p.input.scale = std::numeric_limits<float>::infinity();
  expect_op_error(in_scale, ctx(), op, "q8ta_max_pool2d input: scale must be finite and > 0");
  PoolSetup zp;
  zp.p.output.zero_point = 128;
  expect_op_error(zp, ctx(), op, "q8ta_max_pool2d output: zero_point 128 outside");
  PoolSetup range;  // a narrower output range, requantizing or not
  range.p.output = {0.05f, 0, -127, 127};
  expect_op_error(range, ctx(), op,
                  "the output must use the full int8 range [-128, 127], got "
                  "[-127, 127]");
  range.p.input = range.p.output;
  expect_op_error(range, ctx(), op, "the output must use the full int8 range");
}

TEST_F(PoolChecks, LayoutsAreChecked) {
  PoolSetup h4w;
  h4w.in = int8_spec({1, 8, 7, 6}, MemoryLayout::PackedInt8_4H4W);
  h4w.out = int8_spec({1, 8, 4, 3}, MemoryLayout::PackedInt8_4H4W);
  expect_op_error(h4w, ctx(), "q8ta_max_pool2d", "channels-packed");
  PoolSetup mixed;
  mixed.out = int8_spec({1, 8, 4, 3}, MemoryLayout::PackedInt8_4C1W);
  expect_op_error(mixed, ctx(), "q8ta_max_pool2d", "share their layout");
  MeanSetup mean_mixed;
  mean_mixed.out = int8_spec({2, 8, 1, 1}, MemoryLayout::PackedInt8_4C1W);
  expect_op_error(mean_mixed, ctx(), "q8ta_mean", "share their layout");
  MeanSetup flt;
  flt.in = {{2, 8, 7, 6}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_op_error(flt, ctx(), "q8ta_mean", "tensor 'x'");
}

TEST_F(PoolChecks, MeanOutputAndLimitsAreChecked) {
  MeanSetup wrong;
  wrong.out = int8_spec({2, 8, 1, 2});
  expect_op_error(wrong, ctx(), "q8ta_mean", "must be [2, 8, 1, 1]");
  MeanSetup big;  // 65793 * 255 >= 2^24: the sum would not convert to float32 exactly
  big.in = int8_spec({1, 4, 257, 257});
  big.out = int8_spec({1, 4, 1, 1});
  expect_op_error(big, ctx(), "q8ta_mean", "H*W = 66049", ErrorCode::Unsupported);
  MeanSetup scale;
  scale.out_q.scale = -1.0f;
  expect_op_error(scale, ctx(), "q8ta_mean", "scale");
}

// q8ta_mean_flat's output: [N, C] rows, and only in 4H4W (the layout q8ta_linear reads).
TEST_F(PoolChecks, MeanRowsOutputIsChecked) {
  MeanSetup rows;
  rows.out = int8_spec({2, 8}, MemoryLayout::PackedInt8_4H4W);
  EXPECT_EQ(rows.build(ctx()).first, -1) << rows.build(ctx()).second;
  MeanSetup channels_packed;
  channels_packed.out = int8_spec({2, 8});
  expect_op_error(channels_packed, ctx(), "q8ta_mean", "of rank 2 must be 4H4W");
  MeanSetup wrong;
  wrong.out = int8_spec({2, 7}, MemoryLayout::PackedInt8_4H4W);
  expect_op_error(wrong, ctx(), "q8ta_mean", "must be [2, 8]");
}

}  // namespace
}  // namespace vkd_test
