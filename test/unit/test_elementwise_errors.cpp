// The argument checks of q8ta_add and q8ta_mul (each test runs for both), q8ta_clamp and
// q8ta_mul_scalar: bad dtypes, layouts, shapes that do not broadcast (or differ), quantization,
// activation parameters and a scalar that is not finite are InvalidArgument errors naming the op
// and the problem, raised while the graph is built. The arithmetic is checked by the custom-op
// ACCU cases.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Elementwise.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

// [1, 8, 5, 3] + (or *) [1, 8, 5, 3] -> [1, 8, 5, 3], with one thing changed by the test.
struct AddSetup {
  bool mul = false;  // q8ta_mul instead of q8ta_add
  TensorSpec a = int8_spec({1, 8, 5, 3});
  TensorSpec b = int8_spec({1, 8, 5, 3});
  TensorSpec out = int8_spec({1, 8, 5, 3});
  vkd::ops::AddParams p{{0.1f, 0, -128, 127}, {0.2f, 3, -128, 127}, {0.3f, -5, -128, 127}};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      const auto add_node = mul ? vkd::ops::add_q8ta_mul_node : vkd::ops::add_q8ta_add_node;
      add_node(g, g.add_tensor(a, "a"), g.add_tensor(b, "b"), g.add_tensor(out, "out"), p);
    });
  }
};

// Every q8ta_add / q8ta_mul check raises InvalidArgument.
void expect_error(const AddSetup& s, vkd::vk::Context& ctx, const std::string& says) {
  expect_op_error(s, ctx, s.mul ? "q8ta_mul" : "q8ta_add", says);
}

class AddChecks : public GpuTest, public ::testing::WithParamInterface<bool> {
 protected:
  // The setup of the op under test (GetParam(): q8ta_mul).
  AddSetup setup() const {
    AddSetup s;
    s.mul = GetParam();
    return s;
  }
};

TEST_P(AddChecks, TheSetupAndEveryBroadcastFormBuild) {
  AddSetup s = setup();
  EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
  for (const std::vector<int64_t>& small : {std::vector<int64_t>{1, 8, 1, 1}, {1, 1, 1, 1}}) {
    AddSetup b = setup();  // b broadcast
    b.b = int8_spec(small);
    EXPECT_EQ(b.build(ctx()).first, -1) << b.build(ctx()).second;
    AddSetup a = setup();  // a broadcast
    a.a = int8_spec(small);
    EXPECT_EQ(a.build(ctx()).first, -1) << a.build(ctx()).second;
  }
}

TEST_P(AddChecks, NonInt8TensorsAreNamed) {
  AddSetup s = setup();
  s.b = {{1, 8, 5, 3}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_error(s, ctx(), "tensor 'b'");
}

TEST_P(AddChecks, MixedLayoutsAreRejected) {
  AddSetup s = setup();
  s.b = int8_spec({1, 8, 5, 3}, MemoryLayout::PackedInt8_4C1W);
  expect_error(s, ctx(), "share one packed layout");
}

TEST_P(AddChecks, ShapesThatDoNotBroadcastAreNamed) {
  for (const std::vector<int64_t>& bad :
       {std::vector<int64_t>{1, 4, 1, 1}, {1, 8, 5, 1}, {1, 1, 5, 3}, {2, 8, 5, 3}, {2, 8, 1, 1}}) {
    AddSetup s = setup();
    s.b = int8_spec(bad);
    expect_error(s, ctx(), "cannot combine");
  }
}

TEST_P(AddChecks, OutputOfNeitherShapeIsNamed) {
  AddSetup s = setup();
  s.out = int8_spec({1, 8, 5, 4});
  expect_error(s, ctx(), "output sizes");
  AddSetup both_small = setup();  // neither operand has the output's sizes
  both_small.a = int8_spec({1, 8, 1, 1});
  both_small.b = int8_spec({1, 1, 1, 1});
  expect_error(both_small, ctx(), "output sizes");
}

TEST_P(AddChecks, BadQuantizationAndActivationAreNamed) {
  AddSetup scale = setup();
  scale.p.b.scale = 0.0f;
  expect_error(scale, ctx(), "scale");
  AddSetup zp = setup();
  zp.p.a.zero_point = 200;
  expect_error(zp, ctx(), "zero");
  AddSetup act = setup();
  act.p.activation_min = 10;
  act.p.activation_max = 5;
  expect_error(act, ctx(), "activation range");
}

INSTANTIATE_TEST_SUITE_P(AddAndMul, AddChecks, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "q8ta_mul" : "q8ta_add";
                         });

// q8ta_clamp of [1, 8, 5, 3] into [1, 8, 5, 3], with one thing changed by the test.
struct ClampSetup {
  TensorSpec in = int8_spec({1, 8, 5, 3});
  TensorSpec out = int8_spec({1, 8, 5, 3});
  vkd::ops::ClampParams p{{0.1f, 0, -128, 127}, {0.3f, -5, -128, 127}, -5, 100};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_q8ta_clamp_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"), p);
    });
  }
};

class RequantizeChecks : public GpuTest {};

TEST_F(RequantizeChecks, ClampChecksAreNamed) {
  EXPECT_EQ(ClampSetup{}.build(ctx()).first, -1) << ClampSetup{}.build(ctx()).second;
  ClampSetup sizes;
  sizes.out = int8_spec({1, 8, 3, 5});
  expect_op_error(sizes, ctx(), "q8ta_clamp", "sizes");
  ClampSetup layouts;
  layouts.out = int8_spec({1, 8, 5, 3}, MemoryLayout::PackedInt8_4C1W);
  expect_op_error(layouts, ctx(), "q8ta_clamp", "share one packed layout");
  ClampSetup flt;
  flt.in = {{1, 8, 5, 3}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_op_error(flt, ctx(), "q8ta_clamp", "tensor 'x'");
  ClampSetup act;
  act.p.activation_min = 10;
  act.p.activation_max = 5;
  expect_op_error(act, ctx(), "q8ta_clamp", "activation range");
}

// q8ta_mul_scalar of [1, 8, 5, 3] by -0.75 into [1, 8, 5, 3], with one thing changed by the test.
struct MulScalarSetup {
  TensorSpec in = int8_spec({1, 8, 5, 3}, MemoryLayout::PackedInt8_4H4W);
  TensorSpec out = int8_spec({1, 8, 5, 3}, MemoryLayout::PackedInt8_4H4W);
  vkd::ops::MulScalarParams p{{0.1f, 0, -128, 127}, {0.3f, -5, -128, 127}, -0.75f, -128, 127};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_q8ta_mul_scalar_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"), p);
    });
  }
};

TEST_F(RequantizeChecks, MulScalarChecksAreNamed) {
  EXPECT_EQ(MulScalarSetup{}.build(ctx()).first, -1) << MulScalarSetup{}.build(ctx()).second;
  MulScalarSetup inf;
  inf.p.scalar = std::numeric_limits<float>::infinity();
  expect_op_error(inf, ctx(), "q8ta_mul_scalar", "scalar inf is not finite");
  MulScalarSetup nan;
  nan.p.scalar = std::numeric_limits<float>::quiet_NaN();
  expect_op_error(nan, ctx(), "q8ta_mul_scalar", "is not finite");
  MulScalarSetup sizes;
  sizes.out = int8_spec({1, 8, 5, 4}, MemoryLayout::PackedInt8_4H4W);
  expect_op_error(sizes, ctx(), "q8ta_mul_scalar", "sizes");
  MulScalarSetup layouts;
  layouts.out = int8_spec({1, 8, 5, 3});
  expect_op_error(layouts, ctx(), "q8ta_mul_scalar", "share one packed layout");
  MulScalarSetup scale;
  scale.p.input.scale = -0.1f;
  expect_op_error(scale, ctx(), "q8ta_mul_scalar", "scale");
  MulScalarSetup act;
  act.p.activation_min = 3;
  act.p.activation_max = 2;
  expect_op_error(act, ctx(), "q8ta_mul_scalar", "activation range");
}

}  // namespace
}  // namespace vkd_test
