// q8ta_conv_transpose2d's argument checks: every bad shape, layout, parameter or geometry is an
// InvalidArgument error whose message names the op and the problem, raised while the graph is
// built; and the nodes it adds (the phase convolution, then q8ta_phase_shuffle reading what it
// wrote). The arithmetic is checked by the custom-op ACCU cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/ConvTranspose2d.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

using vkd::ErrorCode;
using vkd::ops::Conv2dRoute;
using vkd::ops::Conv2dWeights;
using vkd::ops::ConvTranspose2dParams;

// A 3x3 transposed convolution 8 -> 4 channels, stride 2, padding 1, output padding 1 over
// [1, 8, 6, 5] (output [1, 4, 12, 10]), built with one thing changed by the test.
struct DeconvSetup {
  TensorSpec in = int8_spec({1, 8, 6, 5});
  TensorSpec out = int8_spec({1, 4, 12, 10});
  std::vector<int8_t> weight = std::vector<int8_t>(4 * 8 * 3 * 3, 1);
  std::vector<float> scales = std::vector<float>(4, 0.01f);
  Conv2dWeights w{nullptr, nullptr, nullptr, 4, 8, 3, 3};
  ConvTranspose2dParams p;

  DeconvSetup() {
    p.input = {0.05f, 0, -128, 127};
    p.output = {0.1f, 0, -128, 127};
    p.geometry.stride_h = p.geometry.stride_w = 2;
    p.geometry.pad_h = p.geometry.pad_w = 1;
    p.geometry.output_pad_h = p.geometry.output_pad_w = 1;
  }
  std::pair<int, std::string> build(vkd::vk::Context& ctx) {
    ComputeGraph g(ctx);
    return build(g);
  }
  std::pair<int, std::string> build(ComputeGraph& g) {
    w.weight = weight.empty() ? nullptr : weight.data();
    w.scales = scales.data();
    const auto x = g.add_tensor(in, "x");
    const auto y = g.add_tensor(out, "y");
    return build_result(g, [&](ComputeGraph& graph) {
      vkd::ops::add_q8ta_conv_transpose2d_node(graph, x, w, y, p);
    });
  }
};

void expect_error(DeconvSetup s, vkd::vk::Context& ctx, const std::string& says,
                  ErrorCode code = ErrorCode::InvalidArgument) {
  const std::string message = expect_op_error(s, ctx, "q8ta_conv_transpose2d", says, code);
  EXPECT_EQ(message.rfind("q8ta_conv_transpose2d", 0), 0u) << "message: " << message;
}

class ConvTranspose2dChecks : public GpuTest {};

// The direct route: one q8ta_conv2d node writing the phases ([1, 4 phases x 4 channels, 7, 6]:
// 2x2 taps padded 1 before, coarse rows up to (11 + 1) / 2 = 6 and columns up to (9 + 1) / 2 =
// 5), then the shuffle reading them.
TEST_F(ConvTranspose2dChecks, APhaseConvolutionThenTheShuffle) {
  DeconvSetup s;
  s.p.route = Conv2dRoute::Direct;
  ComputeGraph g(ctx());
  ASSERT_EQ(s.build(g).first, -1) << s.build(ctx()).second;
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].op, "q8ta_conv2d");
  EXPECT_EQ(vkd::shaders::shader_info(g.nodes()[1].kernel).name, "q8ta_phase_shuffle_4w4c");
  EXPECT_EQ(g.nodes()[0].bindings[0], g.nodes()[1].bindings[1]);
  EXPECT_EQ(g.spec(g.nodes()[0].bindings[0]).sizes, (std::vector<int64_t>{1, 16, 7, 6}));
}

TEST_F(ConvTranspose2dChecks, WrongOutputSizesAreNamed) {
  DeconvSetup s;
  s.out = int8_spec({1, 4, 11, 10});
  expect_error(s, ctx(), "output sizes [1, 4, 11, 10] must be [1, 4, 12, 10]");
}

TEST_F(ConvTranspose2dChecks, OutputPaddingMustBeBelowStrideOrDilation) {
  DeconvSetup s;
  s.p.geometry.output_pad_w = 2;
  expect_error(s, ctx(),
               "output_padding (1, 2) must be >= 0 and smaller than either stride or "
               "dilation");
  s.p.geometry.dilation_w = 3;  // now allowed: 2 < dilation 3 (output width 13)
  s.out = int8_spec({1, 4, 12, 15});
  EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
}

TEST_F(ConvTranspose2dChecks, GroupsAndWeights) {
  DeconvSetup s;
  s.p.geometry.groups = 3;
  expect_error(s, ctx(), "groups = 3 must divide C_in = 8");
  s = DeconvSetup{};
  s.w.in_per_group = 4;
  expect_error(s, ctx(), "must hold C_in / groups = 8 input channels (they hold 4)");
  s = DeconvSetup{};
  s.weight.clear();
  expect_error(s, ctx(), "weights and weight scales are required");
}

TEST_F(ConvTranspose2dChecks, BadGeometryIsNamed) {
  DeconvSetup s;
  s.p.geometry.stride_h = 0;
  expect_error(s, ctx(), "stride (0, 2) and dilation (1, 1) must be >= 1, padding (1, 1) >= 0");
  s = DeconvSetup{};
  s.in = int8_spec({1, 8, 1, 1});
  s.p.geometry.pad_h = s.p.geometry.pad_w = 3;
  s.p.geometry.output_pad_h = s.p.geometry.output_pad_w = 0;
  expect_error(s, ctx(), "padding (3, 3) leaves no output for the 1x1 input");
}

TEST_F(ConvTranspose2dChecks, LayoutsAndQuantization) {
  DeconvSetup s;
  s.out = int8_spec({1, 4, 12, 10}, MemoryLayout::PackedInt8_4H4W);
  expect_error(s, ctx(), "must be an int8x4 buffer in 4W4C or 4C1W");
  s = DeconvSetup{};
  s.p.activation_min = 50;
  s.p.activation_max = 40;
  expect_error(s, ctx(), "q8ta_conv_transpose2d");
  s = DeconvSetup{};
  s.p.input.scale = -1.0f;
  expect_error(s, ctx(), "scale must be finite and > 0");
}

}  // namespace
}  // namespace vkd_test
