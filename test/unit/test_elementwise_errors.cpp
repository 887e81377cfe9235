// q8ta_add's and q8ta_clamp's argument checks: bad dtypes, layouts, shapes that do not
// broadcast (or differ), quantization and activation parameters are InvalidArgument errors
// naming the op and the problem, raised while the graph is built. The arithmetic is checked by
// the custom-op ACCU cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Elementwise.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

using vkd::DType;
using vkd::MemoryLayout;
using vkd::StorageType;
using vkd::TensorSpec;
using vkd::graph::ComputeGraph;

// [1, 8, 5, 3] + [1, 8, 5, 3] -> [1, 8, 5, 3], with one thing changed by the test.
struct AddSetup {
  TensorSpec a = int8_spec({1, 8, 5, 3});
  TensorSpec b = int8_spec({1, 8, 5, 3});
  TensorSpec out = int8_spec({1, 8, 5, 3});
  vkd::ops::AddParams p{{0.1f, 0, -128, 127}, {0.2f, 3, -128, 127}, {0.3f, -5, -128, 127}};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_q8ta_add_node(g, g.add_tensor(a, "a"), g.add_tensor(b, "b"),
                                  g.add_tensor(out, "out"), p);
    });
  }
};

// Every q8ta_add check raises InvalidArgument.
void expect_error(const AddSetup& s, vkd::vk::Context& ctx, const std::string& says) {
  expect_op_error(s, ctx, "q8ta_add", says);
}

class AddChecks : public GpuTest {};

TEST_F(AddChecks, TheSetupAndEveryBroadcastFormBuild) {
  AddSetup s;
  EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
  for (const std::vector<int64_t>& small : {std::vector<int64_t>{1, 8, 1, 1}, {1, 1, 1, 1}}) {
    AddSetup b;  // b broadcast
    b.b = int8_spec(small);
    EXPECT_EQ(b.build(ctx()).first, -1) << b.build(ctx()).second;
    AddSetup a;  // a broadcast
    a.a = int8_spec(small);
    EXPECT_EQ(a.build(ctx()).first, -1) << a.build(ctx()).second;
  }
}

TEST_F(AddChecks, NonInt8TensorsAreNamed) {
  AddSetup s;
  s.b = {{1, 8, 5, 3}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_error(s, ctx(), "tensor 'b'");
}

TEST_F(AddChecks, MixedLayoutsAreRejected) {
  AddSetup s;
  s.b = int8_spec({1, 8, 5, 3}, MemoryLayout::PackedInt8_4C1W);
  expect_error(s, ctx(), "share one packed layout");
}

TEST_F(AddChecks, ShapesThatDoNotBroadcastAreNamed) {
  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{1, 4, 1, 1}, {1, 8, 5, 1},
                                          {1, 1, 5, 3}, {2, 8, 5, 3}, {2, 8, 1, 1}}) {
    AddSetup s;
    s.b = int8_spec(bad);
    expect_error(s, ctx(), "cannot add");
  }
}

TEST_F(AddChecks, OutputOfNeitherShapeIsNamed) {
  AddSetup s;
  s.out = int8_spec({1, 8, 5, 4});
  expect_error(s, ctx(), "output sizes");
  AddSetup both_small;  // neither operand has the output's sizes
  both_small.a = int8_spec({1, 8, 1, 1});
  both_small.b = int8_spec({1, 1, 1, 1});
  expect_error(both_small, ctx(), "output sizes");
}

TEST_F(AddChecks, BadQuantizationAndActivationAreNamed) {
  AddSetup scale;
  scale.p.b.scale = 0.0f;
  expect_error(scale, ctx(), "scale");
  AddSetup zp;
  zp.p.a.zero_point = 200;
  expect_error(zp, ctx(), "zero");
  AddSetup act;
  act.p.activation_min = 10;
  act.p.activation_max = 5;
  expect_error(act, ctx(), "activation range");
}

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

TEST_F(AddChecks, ClampChecksAreNamed) {
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

}  // namespace
}  // namespace vkd_test
