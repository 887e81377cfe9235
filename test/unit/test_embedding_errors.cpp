// q8ta_embedding's, embedding's and embedding_add's argument checks (wrong dtypes, layouts, sizes,
// quantization: InvalidArgument errors naming the op, raised while the graph is built), and the ids
// the graph refuses once an op declared the table's rows (ComputeGraph::limit_ids): an id outside
// [0, V) is an error naming the input, the element and the value, before the GPU reads it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Embedding.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

// int8 rows of a [6, 10] table gathered by ids [2, 7] into [2, 7, 10] 4H4W.
struct EmbeddingSetup {
  std::vector<int8_t> table = std::vector<int8_t>(60, 1);
  TensorSpec ids{{2, 7}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked};
  TensorSpec out = int8_spec({2, 7, 10}, MemoryLayout::PackedInt8_4H4W);
  vkd::ops::EmbeddingParams p{6, 10, nullptr, vkd::ops::QuantParams{0.1f, 3, -128, 127}};
  std::vector<TensorSpec> addends;  // embedding_add's

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::EmbeddingParams q = p;
      if (q.rows * q.cols == static_cast<int64_t>(table.size())) q.table = table.data();
      for (const TensorSpec& a : addends) q.addends.push_back(g.add_tensor(a, "a"));
      vkd::ops::add_embedding_node(g, g.add_tensor(ids, "ids"), g.add_tensor(out, "y"), q);
    });
  }
};

class EmbeddingChecks : public GpuTest {};

TEST_F(EmbeddingChecks, TheSetupBuilds) {
  EXPECT_EQ(EmbeddingSetup{}.build(ctx()).first, -1) << EmbeddingSetup{}.build(ctx()).second;
}

TEST_F(EmbeddingChecks, TensorsAreChecked) {
  EmbeddingSetup float_ids;
  float_ids.ids.dtype = DType::Float32;
  expect_op_error(float_ids, ctx(), "q8ta_embedding", "must be a width-packed int32 buffer");
  EmbeddingSetup layout;
  layout.out = int8_spec({2, 7, 10}, MemoryLayout::PackedInt8_4W4C);
  expect_op_error(layout, ctx(), "q8ta_embedding", "must be an int8x4 4H4W buffer");
  EmbeddingSetup sizes;
  sizes.out = int8_spec({2, 7, 9}, MemoryLayout::PackedInt8_4H4W);
  expect_op_error(sizes, ctx(), "q8ta_embedding", "must be the ids' sizes + [10]");
  EmbeddingSetup zp;
  zp.p.output->zero_point = 200;
  expect_op_error(zp, ctx(), "q8ta_embedding", "zero_point 200 outside");
  EmbeddingSetup no_table;
  no_table.p.rows = 0;
  expect_op_error(no_table, ctx(), "q8ta_embedding", "must have rows and columns");
  EmbeddingSetup float_rows;  // float32 rows need a float32 output
  float_rows.p.output.reset();
  expect_op_error(float_rows, ctx(), "embedding", "must be a width-packed float32 buffer");
}

// embedding_add: float rows only, at most two addends, each a float32 buffer of the output's
// trailing dims ([7, 10] and [1, 1, 10] of [2, 7, 10] build; [2, 10] does not).
TEST_F(EmbeddingChecks, AddendsAreChecked) {
  const TensorSpec rows{{1, 7, 10}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  EmbeddingSetup fits;
  fits.p.output.reset();
  fits.out = TensorSpec{{2, 7, 10}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  fits.addends = {
      TensorSpec{{7, 10}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked},
      TensorSpec{{1, 1, 10}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}};
  EXPECT_EQ(fits.build(ctx()).first, -1) << fits.build(ctx()).second;
  EmbeddingSetup int8_rows;
  int8_rows.addends = {rows};
  expect_op_error(int8_rows, ctx(), "q8ta_embedding", "the int8 rows take no addends");
  EmbeddingSetup three = fits;
  three.addends.push_back(rows);
  expect_op_error(three, ctx(), "embedding_add", "3 addends, the kernel adds at most 2");
  EmbeddingSetup inner = fits;
  inner.addends[1].sizes = {2, 10};
  expect_op_error(inner, ctx(), "embedding_add",
                  "must be a width-packed float32 buffer of the output's trailing dims");
  EmbeddingSetup int_addend = fits;
  int_addend.addends[0].dtype = DType::Int32;
  expect_op_error(int_addend, ctx(), "embedding_add",
                  "must be a width-packed float32 buffer of the output's trailing dims");
}

// The ids written to a graph whose op declared the table's 6 rows: in range they run; -1 and 6
// are refused with the element and value named, and a good write after them runs again.
TEST_F(EmbeddingChecks, IdsOutsideTheTableAreRefusedOnTheHost) {
  const EmbeddingSetup s;
  ComputeGraph g(ctx());
  const auto ids = g.add_tensor(s.ids, "ids");
  const auto out = g.add_tensor(s.out, "y");
  vkd::ops::EmbeddingParams p = s.p;
  p.table = s.table.data();
  vkd::ops::add_embedding_node(g, ids, out, p);
  g.limit_ids(ids, 6);
  g.add_input(ids);
  g.add_output(out);
  g.prepare();
  std::vector<int32_t> good(14, 5);
  good[0] = 0;
  g.write_int32(ids, good);
  g.execute();
  for (int32_t bad : {-1, 6}) {
    std::vector<int32_t> x = good;
    x[9] = bad;
    const auto [code, message] =
        build_result(g, [&](ComputeGraph& graph) { graph.write_int32(ids, x); });
    EXPECT_EQ(code, static_cast<int>(vkd::ErrorCode::InvalidArgument)) << message;
    EXPECT_NE(message.find("input 'ids': element 9 is " + std::to_string(bad) +
                           ", not a row of the embedding table [0, 6)"),
              std::string::npos)
        << message;
  }
  g.write_int32(ids, good);
  g.execute();
  EXPECT_EQ(g.read_int8(out), std::vector<int8_t>(140, 1));
}

}  // namespace
}  // namespace vkd_test
