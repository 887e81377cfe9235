// q8ta_channel_shuffle's and q8ta_permute's argument checks: groups that do not divide the
// channels, sizes that do not match, dims that are no permutation, wrong dtypes and layouts, bad
// quantization parameters are InvalidArgument errors naming the op and the problem, raised
// while the graph is built. The data movement itself is checked by the custom-op ACCU cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Permute.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

using vkd::ops::QuantParams;

// A channel shuffle [1, 6, 3, 5] with groups 2, or (permute) [1, 6, 3, 5] -> [1, 3, 5, 6] with
// dims [0, 2, 3, 1]; one thing changed by the test.
struct MoveSetup {
  bool permute = false;
  TensorSpec in = int8_spec({1, 6, 3, 5});
  TensorSpec out = int8_spec({1, 6, 3, 5});
  int64_t groups = 2;
  std::vector<int64_t> dims{0, 2, 3, 1};
  QuantParams in_q{0.1f, 0, -128, 127}, out_q{0.1f, 0, -128, 127};

  const char* op() const { return permute ? "q8ta_permute" : "q8ta_channel_shuffle"; }
  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    ComputeGraph g(ctx);
    const auto x = g.add_tensor(in, "x");
    const auto y = g.add_tensor(out, "y");
    return build_result(g, [&](ComputeGraph& graph) {
      if (permute) {
        vkd::ops::add_q8ta_permute_node(graph, x, in_q, dims, y, out_q);
      } else {
        vkd::ops::add_q8ta_channel_shuffle_node(graph, x, in_q, groups, y, out_q);
      }
    });
  }
};

MoveSetup permute_setup() {
  MoveSetup s;
  s.permute = true;
  s.out = int8_spec({1, 3, 5, 6}, MemoryLayout::PackedInt8_4H4W);
  return s;
}

// Every check raises InvalidArgument, with a message that starts with the op's name.
void expect_error(const MoveSetup& s, vkd::vk::Context& ctx, const std::string& says) {
  const std::string message = expect_op_error(s, ctx, s.op(), says);
  EXPECT_EQ(message.rfind(s.op(), 0), 0u) << "message: " << message;
}

class PermuteChecks : public GpuTest {};

TEST_F(PermuteChecks, TheSetupsBuild) {
  for (const MoveSetup& s : {MoveSetup{}, permute_setup()}) {
    const auto [got, message] = s.build(ctx());
    EXPECT_EQ(got, -1) << message;
  }
  MoveSetup requant = permute_setup();  // other output parameters: the requantizing variant
  requant.out_q = {0.05f, -3, -128, 127};
  EXPECT_EQ(requant.build(ctx()).first, -1) << requant.build(ctx()).second;
}

TEST_F(PermuteChecks, GroupsMustDivideTheChannels) {
  MoveSetup s;
  s.groups = 4;
  expect_error(s, ctx(), "groups 4 must divide the 6 channels of input 'x'");
  s.groups = 0;
  expect_error(s, ctx(), "groups 0 must divide");
  s.groups = 12;
  expect_error(s, ctx(), "groups 12 must divide");
}

TEST_F(PermuteChecks, ShuffleSizesAndLayoutsMatch) {
  MoveSetup s;
  s.out = int8_spec({1, 6, 3, 4});
  expect_error(s, ctx(), "sizes differ between 'x'");
  s = MoveSetup{};
  s.out = int8_spec({1, 6, 3, 5}, MemoryLayout::PackedInt8_4C1W);
  expect_error(s, ctx(), "input and output must share one packed layout (4W4C, 4C1W)");
}

TEST_F(PermuteChecks, DimsMustBeAPermutation) {
  MoveSetup s = permute_setup();
  s.dims = {0, 2, 3};
  expect_error(s, ctx(), "dims [0, 2, 3] must be a permutation of [0, 1, 2, 3]");
  s.dims = {0, 2, 2, 1};
  expect_error(s, ctx(), "dims [0, 2, 2, 1] must be a permutation");
  s.dims = {0, 2, 4, 1};
  expect_error(s, ctx(), "dims [0, 2, 4, 1] must be a permutation");
}

TEST_F(PermuteChecks, OutputSizesMustBeThePermutedInput) {
  MoveSetup s = permute_setup();
  s.out = int8_spec({1, 5, 3, 6});
  expect_error(s, ctx(), "must have sizes [1, 3, 5, 6]: input 'x' ");
  s.out = int8_spec({3, 5, 6});  // rank 3 is [1, 3, 5, 6] padded: accepted
  EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
}

TEST_F(PermuteChecks, WrongDtype) {
  for (MoveSetup s : {MoveSetup{}, permute_setup()}) {
    s.in = {{1, 6, 3, 5}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
    expect_error(s, ctx(), "must be int8x4 in a packed int8 layout");
  }
}

TEST_F(PermuteChecks, BadQuantParams) {
  for (MoveSetup s : {MoveSetup{}, permute_setup()}) {
    const std::string op = s.op();
    s.in_q.scale = 0.0f;
    expect_error(s, ctx(), op + " input: scale must be finite and > 0");
    s.in_q.scale = 0.1f;
    s.out_q.zero_point = 200;
    expect_error(s, ctx(), op + " output: zero_point 200 outside");
    s.out_q = {0.1f, 0, -100, 127};
    expect_error(s, ctx(), "full int8 range");
  }
}

}  // namespace
}  // namespace vkd_test
