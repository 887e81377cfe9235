// q8ta_attention's (and the float attention's) argument checks: layouts, sizes, heads, mask shapes
// and quantization are InvalidArgument errors naming the op and the problem, raised while the graph
// is built. The arithmetic is checked by the ACCU cases (test/custom_ops/attention_cases.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Attention.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

constexpr MemoryLayout k4H4W = MemoryLayout::PackedInt8_4H4W;

// Q [2, 7, 64], K and V [2, 9, 64]: 2 heads of 32, a [2, 1, 1, 9] mask.
struct AttentionSetup {
  TensorSpec q = int8_spec({2, 7, 64}, k4H4W);
  TensorSpec k = int8_spec({2, 9, 64}, k4H4W);
  TensorSpec v = int8_spec({2, 9, 64}, k4H4W);
  TensorSpec mask{{2, 1, 1, 9}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  TensorSpec out = int8_spec({2, 7, 64}, k4H4W);
  vkd::ops::AttentionParams p{{0.1f, -4, -128, 127},
                              {0.07f, 3, -128, 127},
                              {0.02f, 33, -128, 127},
                              {0.017f, 51, -128, 127},
                              2,
                              0.17f};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_q8ta_attention_node(g, g.add_tensor(q, "q"), g.add_tensor(k, "k"),
                                        g.add_tensor(v, "v"), g.add_tensor(mask, "m"),
                                        g.add_tensor(out, "y"), p);
    });
  }
};

class AttentionChecks : public GpuTest {};

TEST_F(AttentionChecks, TheSetupBuilds) {
  EXPECT_EQ(AttentionSetup{}.build(ctx()).first, -1) << AttentionSetup{}.build(ctx()).second;
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{9}, {1, 1, 7, 9}, {2, 1, 7, 9}}) {
    AttentionSetup other_mask;
    other_mask.mask.sizes = sizes;
    EXPECT_EQ(other_mask.build(ctx()).first, -1) << other_mask.build(ctx()).second;
  }
}

TEST_F(AttentionChecks, TensorsAreChecked) {
  AttentionSetup layout;
  layout.k = int8_spec({2, 9, 64});  // 4W4C
  expect_op_error(layout, ctx(), "q8ta_attention", "key");
  AttentionSetup out_sizes;
  out_sizes.out = int8_spec({2, 8, 64}, k4H4W);
  expect_op_error(out_sizes, ctx(), "q8ta_attention", "sizes differ");
  AttentionSetup kv;
  kv.v = int8_spec({2, 8, 64}, k4H4W);
  expect_op_error(kv, ctx(), "q8ta_attention", "sizes differ");
  AttentionSetup batch;
  batch.k = batch.v = int8_spec({1, 9, 64}, k4H4W);
  expect_op_error(batch, ctx(), "q8ta_attention", "must be [B, Tk, H*D]");
  AttentionSetup float_mask;
  float_mask.mask.layout = MemoryLayout::HeightPacked;
  expect_op_error(float_mask, ctx(), "q8ta_attention", "width-packed float32 buffer");
}

TEST_F(AttentionChecks, HeadsAndMaskShapesAreChecked) {
  AttentionSetup heads;
  heads.p.num_heads = 3;
  expect_op_error(heads, ctx(), "q8ta_attention", "num_heads 3 must split the 64 columns");
  AttentionSetup narrow;
  narrow.p.num_heads = 32;  // heads of 2 columns
  expect_op_error(narrow, ctx(), "q8ta_attention", "D a multiple of 4");
  AttentionSetup wide;
  wide.q = wide.out = int8_spec({2, 7, 256}, k4H4W);
  wide.k = wide.v = int8_spec({2, 9, 256}, k4H4W);
  wide.p.num_heads = 1;  // one head of 256 columns
  expect_op_error(wide, ctx(), "q8ta_attention", "at most 128");
  for (std::vector<int64_t> sizes :
       {std::vector<int64_t>{2, 1, 1, 8}, {2, 1, 3, 9}, {3, 1, 1, 9}, {2, 2, 1, 9}}) {
    AttentionSetup mask;
    mask.mask.sizes = sizes;
    expect_op_error(mask, ctx(), "q8ta_attention", "must be [1 or B, 1, 1 or Tq, Tk]");
  }
  AttentionSetup scale;
  scale.p.scale = INFINITY;
  expect_op_error(scale, ctx(), "q8ta_attention", "must be finite");
  AttentionSetup zp;
  zp.p.value.zero_point = 200;
  expect_op_error(zp, ctx(), "q8ta_attention", "zero_point 200");
}

// Q, K, V as column ranges of wider tensors: ranges inside the rows and word-aligned, the rows'
// batch and length those of the output (query) and of each other (key, value).
TEST_F(AttentionChecks, ColumnRangesAreChecked) {
  AttentionSetup packed;  // one [2, 7, 192] tensor's shape for Q, another for K and V
  packed.q = int8_spec({2, 7, 192}, k4H4W);
  packed.k = packed.v = int8_spec({2, 9, 192}, k4H4W);
  packed.p.columns = vkd::ops::AttentionColumns{0, 64, 128};
  EXPECT_EQ(packed.build(ctx()).first, -1) << packed.build(ctx()).second;
  AttentionSetup past = packed;
  past.p.columns->value = 132;  // columns 132 .. 195 of 192
  expect_op_error(past, ctx(), "q8ta_attention",
                  "the value's columns 132 .. 195 must lie in its rows of 192 columns");
  AttentionSetup unaligned = packed;
  unaligned.p.columns->key = 62;
  expect_op_error(unaligned, ctx(), "q8ta_attention", "start at a multiple of 4");
  AttentionSetup rows = packed;
  rows.q = int8_spec({2, 8, 192}, k4H4W);
  expect_op_error(rows, ctx(), "q8ta_attention", "must be [B, Tq, .], [B, Tk, .] and [B, Tq, H*D]");
  AttentionSetup without = packed;  // the same tensors without the ranges: sizes differ
  without.p.columns.reset();
  expect_op_error(without, ctx(), "q8ta_attention", "sizes differ");
}

// The float op attention: float32 width-packed Q, K, V [2, 7 or 9, 64] and output.
struct FloatAttentionSetup {
  TensorSpec q = float_spec({2, 7, 64}), k = float_spec({2, 9, 64}), v = float_spec({2, 9, 64});
  TensorSpec mask = float_spec({2, 1, 1, 9});
  TensorSpec out = float_spec({2, 7, 64});
  int heads = 2;

  static TensorSpec float_spec(std::vector<int64_t> sizes) {
    return {std::move(sizes), DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  }
  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_attention_node(g, g.add_tensor(q, "q"), g.add_tensor(k, "k"),
                                   g.add_tensor(v, "v"), g.add_tensor(mask, "m"),
                                   g.add_tensor(out, "y"), heads, 0.17f);
    });
  }
};

TEST_F(AttentionChecks, FloatOpChecksItsTensorsAndHeads) {
  EXPECT_EQ(FloatAttentionSetup{}.build(ctx()).first, -1)
      << FloatAttentionSetup{}.build(ctx()).second;
  FloatAttentionSetup int8_q;
  int8_q.q = int8_spec({2, 7, 64}, k4H4W);
  expect_op_error(int8_q, ctx(), "attention", "query");
  FloatAttentionSetup wide;
  wide.heads = 1;  // one head of 64 columns is the float op's largest; 128 is not
  EXPECT_EQ(wide.build(ctx()).first, -1) << wide.build(ctx()).second;
  wide.q = wide.out = FloatAttentionSetup::float_spec({2, 7, 128});
  wide.k = wide.v = FloatAttentionSetup::float_spec({2, 9, 128});
  expect_op_error(wide, ctx(), "attention", "at most 64");
}

// The int8 kernel's form, a pure function of the shapes (no device).
TEST(AttentionPlan, HeadSizeAndGridChooseTheForm) {
  using vkd::ops::plan_int8_attention;
  // MiniLM at 128 tokens: 12 heads of 32, 16 blocks of 8 rows x 12 = 192 workgroups (<= 256).
  auto f = plan_int8_attention(32, 128, 12, 1, 1024);
  EXPECT_EQ(f.small_head, 1);
  EXPECT_EQ(f.rows_per_workgroup, 4);
  EXPECT_EQ(f.workgroup, 256u);  // 4 rows of a small head: 256 invocations
  // At 512 tokens: 64 x 12 = 768 workgroups of 8 rows.
  f = plan_int8_attention(32, 512, 12, 1, 1024);
  EXPECT_EQ(f.small_head, 1);
  EXPECT_EQ(f.rows_per_workgroup, 8);
  EXPECT_EQ(f.workgroup, 128u);
  // ViT-Ti: 3 heads of 64 over 197 tokens (25 x 3 = 75 workgroups).
  f = plan_int8_attention(64, 197, 3, 1, 1024);
  EXPECT_EQ(f.small_head, 2);
  EXPECT_EQ(f.rows_per_workgroup, 4);
  EXPECT_EQ(f.workgroup, 256u);
  // Heads of 68 and 128 columns: the general form; the boundary of 256 workgroups, batches
  // counted.
  EXPECT_EQ(plan_int8_attention(68, 8, 1, 1, 1024).small_head, 0);
  EXPECT_EQ(plan_int8_attention(36, 8, 1, 1, 1024).small_head, 2);
  EXPECT_EQ(plan_int8_attention(128, 8, 1, 1, 1024).small_head, 0);
  EXPECT_EQ(plan_int8_attention(128, 8, 1, 1, 1024).workgroup, 128u);  // 4 rows, tiles of 32 keys
  EXPECT_EQ(plan_int8_attention(32, 8 * 64, 4, 1, 1024).rows_per_workgroup, 4);
  EXPECT_EQ(plan_int8_attention(32, 8 * 64, 4, 2, 1024).rows_per_workgroup, 8);
  EXPECT_EQ(plan_int8_attention(32, 8 * 64 + 1, 4, 1, 1024).rows_per_workgroup, 8);
  // A device of at most 128 invocations (Mali, the Android baseline): MiniLM's heads take 8
  // rows of 128 invocations; the general form keeps its 4 rows of 128.
  f = plan_int8_attention(32, 128, 12, 1, 128);
  EXPECT_EQ(f.rows_per_workgroup, 8);
  EXPECT_EQ(f.workgroup, 128u);
  EXPECT_EQ(plan_int8_attention(128, 8, 1, 1, 128).rows_per_workgroup, 4);
}

}  // namespace
}  // namespace vkd_test
