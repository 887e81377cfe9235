// q8ta_lut's and q8ta_softmax's (q8ta_softmax_dq's) argument checks: bad dtypes, layouts, sizes,
// storage and quantization are InvalidArgument errors naming the op and the problem, raised while
// the graph is built. The arithmetic is checked by the ACCU cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Lut.h"
#include "runtime/ops/Softmax.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

// A table lookup of [1, 5, 3, 7] in 4W4C.
struct LutSetup {
  TensorSpec in = int8_spec({1, 5, 3, 7});
  TensorSpec out = int8_spec({1, 5, 3, 7});
  vkd::ops::LutParams p{{0.1f, 3, -128, 127}, {0.05f, -2, -128, 127}, {}};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_q8ta_lut_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"), p);
    });
  }
};

// softmax over W of [2, 5, 3, 7] in 4H4W, float32 width-packed output (int8 when out_q is set).
struct SoftmaxSetup {
  TensorSpec in = int8_spec({2, 5, 3, 7}, MemoryLayout::PackedInt8_4H4W);
  TensorSpec out{{2, 5, 3, 7}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  vkd::ops::SoftmaxParams p{{0.1f, 3, -128, 127}, false, std::nullopt};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_q8ta_softmax_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"), p);
    });
  }
};

class LutSoftmaxChecks : public GpuTest {};

TEST_F(LutSoftmaxChecks, TheSetupsBuild) {
  EXPECT_EQ(LutSetup{}.build(ctx()).first, -1) << LutSetup{}.build(ctx()).second;
  EXPECT_EQ(SoftmaxSetup{}.build(ctx()).first, -1) << SoftmaxSetup{}.build(ctx()).second;
  SoftmaxSetup int8_out;
  int8_out.out = int8_spec({2, 5, 3, 7}, MemoryLayout::PackedInt8_4H4W);
  int8_out.p.output = vkd::ops::QuantParams{1.0f / 256, -128, -128, 127};
  EXPECT_EQ(int8_out.build(ctx()).first, -1) << int8_out.build(ctx()).second;
}

TEST_F(LutSoftmaxChecks, LutTensorsAreChecked) {
  LutSetup layouts;
  layouts.out = int8_spec({1, 5, 3, 7}, MemoryLayout::PackedInt8_4C1W);
  expect_op_error(layouts, ctx(), "q8ta_lut", "share one packed layout");
  LutSetup sizes;
  sizes.out = int8_spec({1, 5, 3, 6});
  expect_op_error(sizes, ctx(), "q8ta_lut", "sizes differ");
  LutSetup flt;
  flt.in = {{1, 5, 3, 7}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_op_error(flt, ctx(), "q8ta_lut", "tensor 'x'");
  LutSetup zp;
  zp.p.output = {0.05f, 100, -128, 90};
  expect_op_error(zp, ctx(), "q8ta_lut", "zero_point 100 outside");
}

TEST_F(LutSoftmaxChecks, SoftmaxTensorsAreChecked) {
  SoftmaxSetup texture;
  texture.out.storage = StorageType::Texture3D;
  expect_op_error(texture, ctx(), "q8ta_softmax_dq", "must be a buffer");
  SoftmaxSetup sizes;
  sizes.out.sizes = {2, 5, 3, 8};
  expect_op_error(sizes, ctx(), "q8ta_softmax_dq", "sizes differ");
  SoftmaxSetup int8_as_float;  // an int8 output without its quantization
  int8_as_float.out = int8_spec({2, 5, 3, 7}, MemoryLayout::PackedInt8_4H4W);
  expect_op_error(int8_as_float, ctx(), "q8ta_softmax_dq", "tensor 'y'");
  SoftmaxSetup layouts;
  layouts.out = int8_spec({2, 5, 3, 7});
  layouts.p.output = vkd::ops::QuantParams{1.0f / 256, -128, -128, 127};
  expect_op_error(layouts, ctx(), "q8ta_softmax", "share one packed layout");
  SoftmaxSetup scale;
  scale.p.input.scale = 0.0f;
  expect_op_error(scale, ctx(), "q8ta_softmax_dq", "scale must be finite and > 0");
  SoftmaxSetup flt;
  flt.in = {{2, 5, 3, 7}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_op_error(flt, ctx(), "q8ta_softmax_dq", "tensor 'x'");
}

}  // namespace
}  // namespace vkd_test
