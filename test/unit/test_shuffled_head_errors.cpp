// q8ta_conv2d_ps_pw_q_dq's argument checks: bad weights, shapes, layouts, parameters and the fused
// kernel's channel limit are InvalidArgument / Unsupported errors naming the problem, raised
// while the graph is built; a pair past that limit runs split under Auto. The arithmetic is
// checked by the custom-op ACCU cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/ShuffledHead.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

using vkd::ErrorCode;
using vkd::ops::Conv2dWeights;
using vkd::ops::ShuffledHeadForm;
using vkd::ops::ShuffledHeadParams;

TensorSpec float_spec(std::vector<int64_t> sizes) {
  return {std::move(sizes), DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
}

// A 1x1 8 -> 16 convolution over [1, 8, 3, 5] pixel-shuffled by 2 (mid [1, 4, 6, 10]), then a
// 1x1 head 4 -> 3 into float32 [1, 3, 6, 10], built with one thing changed by the test.
struct HeadSetup {
  int64_t c_in = 8, c = 4;
  TensorSpec in = int8_spec({1, 8, 3, 5});
  TensorSpec out = float_spec({1, 3, 6, 10});
  std::vector<int8_t> ps_weight = std::vector<int8_t>(16 * 8, 1);
  std::vector<int8_t> head_weight = std::vector<int8_t>(3 * 4, 1);
  std::vector<float> scales = std::vector<float>(4096, 0.01f);
  Conv2dWeights ps{nullptr, nullptr, nullptr, 16, 8, 1, 1};
  Conv2dWeights head{nullptr, nullptr, nullptr, 3, 4, 1, 1};
  ShuffledHeadParams p;

  HeadSetup() {
    p.mid = vkd::ops::QuantParams{0.05f, -3, -128, 127};
    p.output = vkd::ops::QuantParams{0.1f, 0, -128, 127};
  }
  std::pair<int, std::string> build(vkd::vk::Context& ctx, size_t* dispatches = nullptr) {
    ComputeGraph g(ctx);
    ps.weight = ps_weight.data();
    head.weight = head_weight.data();
    ps.scales = head.scales = scales.data();
    const auto x = g.add_tensor(in, "x");
    const auto y = g.add_tensor(out, "y");
    auto result = build_result(g, [&](ComputeGraph& graph) {
      vkd::ops::add_q8ta_conv2d_ps_pw_q_dq_node(graph, x, ps, head, y, p);
    });
    if (dispatches) *dispatches = g.nodes().size();
    return result;
  }
};

void expect_error(HeadSetup s, vkd::vk::Context& ctx, ErrorCode code, const std::string& says) {
  expect_op_error(s, ctx, "q8ta_conv2d_ps_pw_q_dq", says, code);
}

class ShuffledHeadChecks : public GpuTest {};

// Auto: fused, but split on CPU devices (their first dispatch compiles the fused kernel).
TEST_F(ShuffledHeadChecks, TheSetupBuildsInEachForm) {
  const bool cpu = ctx().profile().cpu_kernels;
  for (const auto form :
       {ShuffledHeadForm::Auto, ShuffledHeadForm::Fused, ShuffledHeadForm::Split}) {
    HeadSetup s;
    s.p.form = form;
    size_t dispatches = 0;
    EXPECT_EQ(s.build(ctx(), &dispatches).first, -1) << s.build(ctx()).second;
    const bool split = form == ShuffledHeadForm::Split || (form == ShuffledHeadForm::Auto && cpu);
    EXPECT_EQ(dispatches, split ? 2u : 1u);
  }
}

TEST_F(ShuffledHeadChecks, TheShuffledWeightsMustBeOneByOneWithAMultipleOfFourPerPhase) {
  HeadSetup s;
  s.ps.kh = s.ps.kw = 3;
  s.ps_weight.resize(16 * 8 * 9);
  expect_error(s, ctx(), ErrorCode::InvalidArgument,
               "must be [C * 4, 8, 1, 1] with C a multiple of 4");
  HeadSetup t;
  t.ps.out_channels = 12;  // C = 3
  t.head.in_per_group = 3;
  t.out = float_spec({1, 3, 6, 10});
  expect_error(t, ctx(), ErrorCode::InvalidArgument, "with C a multiple of 4");
}

TEST_F(ShuffledHeadChecks, TheHeadMustReadEveryMidChannel) {
  HeadSetup s;
  s.head.in_per_group = 8;
  s.head_weight.resize(3 * 8);
  expect_error(s, ctx(), ErrorCode::InvalidArgument,
               "the head's weights [3, 8, 1, 1] must be [N, 4, 1, 1]");
}

TEST_F(ShuffledHeadChecks, TheOutputIsTheShuffledSizeWithTheHeadsChannels) {
  HeadSetup s;
  s.out = float_spec({1, 3, 3, 5});
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "must be [1, 3, 6, 10]");
}

TEST_F(ShuffledHeadChecks, TheOutputIsAFloatBufferAndTheInput4W4C) {
  HeadSetup s;
  s.out = int8_spec({1, 3, 6, 10});
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "q8ta_conv2d_ps_pw_q_dq");
  HeadSetup t;
  t.in = int8_spec({1, 8, 3, 5}, MemoryLayout::PackedInt8_4C1W);
  expect_error(t, ctx(), ErrorCode::InvalidArgument, "must be an int8x4 buffer in 4W4C");
}

TEST_F(ShuffledHeadChecks, BadParametersAreNamed) {
  HeadSetup s;
  s.p.upscale = 1;
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "upscale_factor 1 must be in [2, 16]");
  HeadSetup t;
  t.p.mid_activation_min = 10;
  t.p.mid_activation_max = 5;
  expect_error(t, ctx(), ErrorCode::InvalidArgument, "q8ta_conv2d_ps_pw_q_dq mid");
}

// Past kMaxShuffledHeadChannels input channels the fused kernel does not take the pair: Auto
// runs it split, a forced Fused form is Unsupported.
TEST_F(ShuffledHeadChecks, WideInputsRunSplitOrAreUnsupportedWhenFusedIsAsked) {
  const int64_t wide = vkd::kMaxShuffledHeadChannels + 4;
  auto wide_setup = [&] {
    HeadSetup s;
    s.in = int8_spec({1, wide, 3, 5});
    s.ps.in_per_group = wide;
    s.ps_weight.resize(size_t(16 * wide));
    return s;
  };
  HeadSetup s = wide_setup();
  size_t dispatches = 0;
  EXPECT_EQ(s.build(ctx(), &dispatches).first, -1);
  EXPECT_EQ(dispatches, 2u);
  HeadSetup t = wide_setup();
  t.p.form = ShuffledHeadForm::Fused;
  expect_error(t, ctx(), ErrorCode::Unsupported, "the fused kernel keeps at most");
}

}  // namespace
}  // namespace vkd_test
