// q8ta_cat's and q8ta_slice's argument checks: bad dtypes, layouts, ranks, sizes that do not
// line up along the dim, out-of-range dims, slices reaching past the input and bad quantization
// are InvalidArgument errors naming the op and the problem, raised while the graph is built; a
// cat of more inputs than one dispatch binds becomes several dispatches. The data movement is
// checked by the ACCU cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Concat.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

using vkd::DType;
using vkd::MemoryLayout;
using vkd::StorageType;
using vkd::TensorSpec;
using vkd::graph::ComputeGraph;

// [1, 3, 5, 6] and [1, 6, 5, 6] joined along channels into [1, 9, 5, 6].
struct CatSetup {
  std::vector<TensorSpec> in = {int8_spec({1, 3, 5, 6}), int8_spec({1, 6, 5, 6})};
  TensorSpec out = int8_spec({1, 9, 5, 6});
  vkd::ops::CatParams p{1, {{0.1f, 0}, {0.2f, 3}}, {0.1f, 0}};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      std::vector<vkd::graph::ValueRef> refs;
      for (size_t i = 0; i < in.size(); ++i) {
        refs.push_back(g.add_tensor(in[i], "x" + std::to_string(i)));
      }
      vkd::ops::add_q8ta_cat_node(g, refs, g.add_tensor(out, "y"), p);
    });
  }
};

// Channels 3 .. 8 of [2, 11, 4, 5], every other one: [2, 3, 4, 5].
struct SliceSetup {
  TensorSpec in = int8_spec({2, 11, 4, 5});
  TensorSpec out = int8_spec({2, 3, 4, 5});
  vkd::ops::SliceParams p{1, 3, 2, {0.1f, 0}, {0.3f, -5}};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_q8ta_slice_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"), p);
    });
  }
};

class ConcatChecks : public GpuTest {};

TEST_F(ConcatChecks, TheSetupsBuild) {
  EXPECT_EQ(CatSetup{}.build(ctx()).first, -1) << CatSetup{}.build(ctx()).second;
  EXPECT_EQ(SliceSetup{}.build(ctx()).first, -1) << SliceSetup{}.build(ctx()).second;
}

TEST_F(ConcatChecks, CatSizesLayoutsAndDimsAreNamed) {
  CatSetup sum;
  sum.out = int8_spec({1, 10, 5, 6});
  expect_op_error(sum, ctx(), "q8ta_cat", "add up to 9");
  CatSetup other;
  other.in[1] = int8_spec({1, 6, 4, 6});
  expect_op_error(other, ctx(), "q8ta_cat", "in a size other than dim 1");
  CatSetup layout;
  layout.in[0] = int8_spec({1, 3, 5, 6}, MemoryLayout::PackedInt8_4C1W);
  expect_op_error(layout, ctx(), "q8ta_cat", "must share the output's layout and rank");
  CatSetup rank;
  rank.in[0] = int8_spec({3, 5, 6});
  expect_op_error(rank, ctx(), "q8ta_cat", "must share the output's layout and rank");
  CatSetup dim;
  dim.p.dim = 4;
  expect_op_error(dim, ctx(), "q8ta_cat", "dim 4 is outside [0, 4)");
  CatSetup flt;
  flt.in[1] = {{1, 6, 5, 6}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_op_error(flt, ctx(), "q8ta_cat", "tensor 'x1'");
  CatSetup none;
  none.in.clear();
  none.p.inputs.clear();
  expect_op_error(none, ctx(), "q8ta_cat", "needs at least one input");
}

TEST_F(ConcatChecks, CatQuantizationIsChecked) {
  CatSetup count;
  count.p.inputs.pop_back();
  expect_op_error(count, ctx(), "q8ta_cat", "1 input quantizations for 2 inputs");
  CatSetup scale;
  scale.p.inputs[1].scale = 0.0f;
  expect_op_error(scale, ctx(), "q8ta_cat", "scale must be finite and > 0");
  CatSetup range;
  range.p.output.quant_min = 10;
  expect_op_error(range, ctx(), "q8ta_cat", "zero_point 0 outside [quant_min, quant_max]");
}

// Nine 1-channel inputs: windows of at most 4 inputs, each owning the tiles its inputs fill
// (channels 0..3, 4..7, 8): three dispatches, all with the cat kernel.
TEST_F(ConcatChecks, ManyInputsBecomeSeveralDispatches) {
  CatSetup many;
  many.in.assign(9, int8_spec({1, 1, 5, 6}));
  many.out = int8_spec({1, 9, 5, 6});
  many.p.inputs.assign(9, {0.1f, 0});
  ComputeGraph g(ctx());
  std::vector<vkd::graph::ValueRef> refs;
  for (size_t i = 0; i < many.in.size(); ++i) refs.push_back(g.add_tensor(many.in[i]));
  vkd::ops::add_q8ta_cat_node(g, refs, g.add_tensor(many.out), many.p);
  ASSERT_EQ(g.nodes().size(), 3u);
  for (const auto& n : g.nodes()) EXPECT_EQ(n.op, "q8ta_cat");
}

TEST_F(ConcatChecks, SliceRangesAreNamed) {
  SliceSetup past;
  past.p.start = 6;  // 6, 8, 10, then 12 is past the 11 channels
  past.out = int8_spec({2, 4, 4, 5});
  expect_op_error(past, ctx(), "q8ta_slice", "start 6 and step 2 take 4 elements along dim 1");
  SliceSetup step;
  step.p.step = 0;
  expect_op_error(step, ctx(), "q8ta_slice", "need start >= 0, step >= 1");
  SliceSetup negative;
  negative.p.start = -1;
  expect_op_error(negative, ctx(), "q8ta_slice", "need start >= 0");
  SliceSetup other;
  other.out = int8_spec({2, 3, 4, 4});
  expect_op_error(other, ctx(), "q8ta_slice", "in a size other than dim 1");
  SliceSetup layout;
  layout.out = int8_spec({2, 3, 4, 5}, MemoryLayout::PackedInt8_4H4W);
  expect_op_error(layout, ctx(), "q8ta_slice", "must share the output's layout and rank");
  SliceSetup zp;
  zp.p.input.zero_point = 200;
  expect_op_error(zp, ctx(), "q8ta_slice", "zero_point 200 outside");
}

}  // namespace
}  // namespace vkd_test
