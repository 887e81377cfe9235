// q8ta_conv2d_dw_pw's argument checks: bad weights, shapes, layouts, parameters and the fused
// kernel's channel limit are InvalidArgument / Unsupported errors naming the problem, raised
// while the graph is built. The arithmetic is checked by the custom-op ACCU cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/DepthwisePointwise.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

using vkd::ErrorCode;
using vkd::ops::Conv2dWeights;
using vkd::ops::DepthwisePointwiseForm;
using vkd::ops::DepthwisePointwiseParams;

// A 3x3 depthwise convolution over [1, 8, 6, 5] with padding 1, then 1x1 8 -> 4 (output
// [1, 4, 6, 5]), built with one thing changed by the test.
struct DwPwSetup {
  TensorSpec in = int8_spec({1, 8, 6, 5});
  TensorSpec out = int8_spec({1, 4, 6, 5});
  std::vector<int8_t> dw_weight = std::vector<int8_t>(8 * 3 * 3, 1);
  std::vector<int8_t> pw_weight = std::vector<int8_t>(4 * 8, 1);
  std::vector<float> scales = std::vector<float>(1024, 0.01f);
  Conv2dWeights dw{nullptr, nullptr, nullptr, 8, 1, 3, 3};
  Conv2dWeights pw{nullptr, nullptr, nullptr, 4, 8, 1, 1};
  DepthwisePointwiseParams p;

  DwPwSetup() {
    p.mid = vkd::ops::QuantParams{0.05f, -3, -128, 127};
    p.output = vkd::ops::QuantParams{0.1f, 0, -128, 127};
    p.geometry.pad_top = p.geometry.pad_left = p.geometry.pad_bottom = p.geometry.pad_right = 1;
  }
  std::pair<int, std::string> build(vkd::vk::Context& ctx) {
    ComputeGraph g(ctx);
    dw.weight = dw_weight.data();
    pw.weight = pw_weight.data();
    dw.scales = pw.scales = scales.data();
    const auto x = g.add_tensor(in, "x");
    const auto y = g.add_tensor(out, "y");
    return build_result(g, [&](ComputeGraph& graph) {
      vkd::ops::add_q8ta_conv2d_dw_pw_node(graph, x, dw, pw, y, p);
    });
  }
};

void expect_error(DwPwSetup s, vkd::vk::Context& ctx, ErrorCode code, const std::string& says) {
  expect_op_error(s, ctx, "q8ta_conv2d_dw_pw", says, code);
}

class DwPwChecks : public GpuTest {};

TEST_F(DwPwChecks, TheSetupItselfBuildsInBothForms) {
  for (const auto form : {DepthwisePointwiseForm::Fused, DepthwisePointwiseForm::Split}) {
    DwPwSetup s;
    s.p.form = form;
    EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
  }
}

TEST_F(DwPwChecks, TheDepthwiseWeightsMustBeOnePerChannel) {
  DwPwSetup s;
  s.dw.in_per_group = 2;
  s.dw_weight.resize(8 * 2 * 9);
  expect_error(s, ctx(), ErrorCode::InvalidArgument,
               "must be [C, 1, KH, KW] with C = the input's 8");
}

TEST_F(DwPwChecks, ThePointwiseWeightsMustBeOneByOneOverTheChannels) {
  DwPwSetup s;
  s.pw.kh = s.pw.kw = 3;
  s.pw_weight.resize(4 * 8 * 9);
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "must be [N, 8, 1, 1]");
}

TEST_F(DwPwChecks, WrongOutputSizesAreNamed) {
  DwPwSetup s;
  s.out = int8_spec({1, 4, 5, 5});
  expect_error(s, ctx(), ErrorCode::InvalidArgument,
               "output sizes [1, 4, 5, 5] must be [1, 4, 6, 5]");
}

TEST_F(DwPwChecks, OnlyFourWFourCIsAccepted) {
  DwPwSetup s;
  s.out = int8_spec({1, 4, 6, 5}, MemoryLayout::PackedInt8_4C1W);
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "must be an int8x4 buffer in 4W4C");
}

TEST_F(DwPwChecks, AnEmptyMidActivationRangeIsRefused) {
  DwPwSetup s;
  s.p.mid_activation_min = 10;
  s.p.mid_activation_max = 5;
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "mid: activation range [10, 5]");
}

TEST_F(DwPwChecks, TilesPerWorkgroupOutOfRangeAreRefused) {
  DwPwSetup s;
  s.p.tiles_per_workgroup = 65;
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "tiles_per_workgroup 65");
  s.p.tiles_per_workgroup = 0;
  s.p.rows_per_workgroup = 5;
  expect_error(s, ctx(), ErrorCode::InvalidArgument,
               "rows_per_workgroup 5 must be 0 (chosen) or 1..4");
  s.p.rows_per_workgroup = -1;
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "rows_per_workgroup -1");
}

// The setup over `channels` depthwise channels (the 1x1 still 4 outputs).
DwPwSetup wide_setup(int64_t channels) {
  DwPwSetup s;
  s.in = int8_spec({1, channels, 6, 5});
  s.dw = Conv2dWeights{nullptr, nullptr, nullptr, channels, 1, 3, 3};
  s.pw = Conv2dWeights{nullptr, nullptr, nullptr, 4, channels, 1, 1};
  s.dw_weight.resize(static_cast<size_t>(channels * 9));
  s.pw_weight.resize(static_cast<size_t>(4 * channels));
  s.scales.resize(static_cast<size_t>(std::max<int64_t>(channels, 1024)), 0.01f);
  return s;
}

TEST_F(DwPwChecks, TilesBeyondTheSharedMemoryAreUnsupported) {
  DwPwSetup s = wide_setup(1024);
  s.p.form = DepthwisePointwiseForm::Fused;
  s.p.tiles_per_workgroup = 64;  // 64 x 256 words of 16 bytes: 256 KiB
  expect_error(s, ctx(), ErrorCode::Unsupported, "64 tiles per workgroup of 1024 channels need");
}

TEST_F(DwPwChecks, TooManyChannelsForTheFusedKernelAreUnsupported) {
  DwPwSetup s = wide_setup(1028);
  expect_error(s, ctx(), ErrorCode::Unsupported, "1028 depthwise channels exceed");
}

// q8ta_conv2d_pw_dw_pw: a 1x1 expansion 3 -> 8 before the same depthwise and 1x1.
DwPwSetup expanded_setup(std::vector<int8_t>& expand_weight) {
  DwPwSetup s;
  s.in = int8_spec({1, 3, 6, 5});
  expand_weight.assign(8 * 3, 1);
  s.p.expansion = vkd::ops::DepthwiseExpansion{
      Conv2dWeights{expand_weight.data(), s.scales.data(), nullptr, 8, 3, 1, 1},
      vkd::ops::QuantParams{0.02f, 4, -128, 127}, -128, 127};
  return s;
}

TEST_F(DwPwChecks, AnExpansionBuildsInBothForms) {
  std::vector<int8_t> ew;
  for (const auto form : {DepthwisePointwiseForm::Fused, DepthwisePointwiseForm::Split}) {
    DwPwSetup s = expanded_setup(ew);
    s.p.form = form;
    EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
  }
}

TEST_F(DwPwChecks, TheExpansionWeightsMustBeOneByOneOverTheInput) {
  std::vector<int8_t> ew;
  DwPwSetup s = expanded_setup(ew);
  s.p.expansion->weights.in_per_group = 4;
  ew.resize(8 * 4);
  s.p.expansion->weights.weight = ew.data();
  expect_op_error(s, ctx(), "q8ta_conv2d_pw_dw_pw", "must be [C, 3, 1, 1]",
                  ErrorCode::InvalidArgument);
}

TEST_F(DwPwChecks, AnEmptyExpansionActivationRangeIsRefused) {
  std::vector<int8_t> ew;
  DwPwSetup s = expanded_setup(ew);
  s.p.expansion->activation_min = 3;
  s.p.expansion->activation_max = 2;
  expect_op_error(s, ctx(), "q8ta_conv2d_pw_dw_pw", "expansion: activation range [3, 2]",
                  ErrorCode::InvalidArgument);
}

}  // namespace
}  // namespace vkd_test
