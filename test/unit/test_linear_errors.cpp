// q8da_linear's and q8csw_linear's argument checks (float activations with int8 per-channel
// weights): wrong dtypes, layouts and sizes, q8da_linear's activation range and eps; and
// q8ta_linear_qkv's column blocks — one error naming the op and the problem, raised while the
// graph is built.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Linear.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

// x [1, 7, 8] float32 -> y [1, 7, 5] through int8 weights [5, 8]; `dynamic`: q8da_linear.
struct FloatLinearSetup {
  bool dynamic = true;
  std::vector<int8_t> weight = std::vector<int8_t>(40, 3);
  std::vector<float> scales = std::vector<float>(5, 0.1f);
  TensorSpec in{{1, 7, 8}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  TensorSpec out{{1, 7, 5}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  int64_t n = 5, k = 8;
  int32_t quant_min = -128, quant_max = 127;
  float eps = 1.1920928955078125e-07f;

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      const vkd::ops::LinearWeights w{weight.data(), scales.data(), nullptr, n, k};
      const auto x = g.add_tensor(in, "x"), y = g.add_tensor(out, "y");
      if (dynamic) {
        vkd::ops::add_q8da_linear_node(g, x, w, y, quant_min, quant_max, eps);
      } else {
        vkd::ops::add_q8csw_linear_node(g, x, w, y);
      }
    });
  }
};

class FloatLinearChecks : public GpuTest {};

TEST_F(FloatLinearChecks, TheSetupsBuild) {
  for (const bool dynamic : {true, false}) {
    FloatLinearSetup s;
    s.dynamic = dynamic;
    EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
  }
}

TEST_F(FloatLinearChecks, TensorsAreChecked) {
  for (const bool dynamic : {true, false}) {
    const std::string op = dynamic ? "q8da_linear" : "q8csw_linear";
    FloatLinearSetup int8_in;
    int8_in.dynamic = dynamic;
    int8_in.in = int8_spec({1, 7, 8}, MemoryLayout::PackedInt8_4H4W);
    expect_op_error(int8_in, ctx(), op, "float32");
    FloatLinearSetup texture;
    texture.dynamic = dynamic;
    texture.out.storage = StorageType::Texture3D;
    expect_op_error(texture, ctx(), op, "buffer");
    FloatLinearSetup k;
    k.dynamic = dynamic;
    k.in.sizes = {1, 7, 9};
    expect_op_error(k, ctx(), op, "has K = 9, the weights [5, 8] K = 8");
    FloatLinearSetup n;
    n.dynamic = dynamic;
    n.out.sizes = {1, 7, 6};
    expect_op_error(n, ctx(), op, "the last dim = N = 5");
  }
}

// torchao's symmetric zero point int((quant_max + quant_min + 1) / 2) must be 0: the epilogue has
// no per-row zero point; eps must be a positive float (the scale floor).
TEST_F(FloatLinearChecks, ActivationRangeAndEpsAreChecked) {
  FloatLinearSetup unsigned_range;
  unsigned_range.quant_min = 0;
  unsigned_range.quant_max = 255;
  expect_op_error(unsigned_range, ctx(), "q8da_linear",
                  "activation range [0, 255] must be a symmetric int8 range");
  FloatLinearSetup shifted;
  shifted.quant_min = -100;
  shifted.quant_max = 127;
  expect_op_error(shifted, ctx(), "q8da_linear", "must be a symmetric int8 range (zero point 0)");
  FloatLinearSetup narrow;  // [-127, 127]: zero point int(1 / 2) = 0, accepted
  narrow.quant_min = -127;
  EXPECT_EQ(narrow.build(ctx()).first, -1) << narrow.build(ctx()).second;
  FloatLinearSetup eps;
  eps.eps = 0.0f;
  expect_op_error(eps, ctx(), "q8da_linear", "eps must be finite and > 0");
}

// x [1, 7, 8] int8 -> y [1, 7, 12] in column blocks (q8ta_linear_qkv): three of 4 channels.
struct ColumnBlocksSetup {
  std::vector<int8_t> weight = std::vector<int8_t>(96, 3);
  std::vector<float> scales = std::vector<float>(12, 0.1f);
  int64_t n = 12;
  vkd::ops::LinearParams p;
  ColumnBlocksSetup() {
    p.input = {0.5f, 1, -128, 127};
    p.output = vkd::ops::QuantParams{0.25f, -3, -128, 127};
    p.output_blocks = {{0.25f, -3, -128, 127}, {0.5f, 7, -128, 127}, {0.125f, 0, -128, 127}};
  }

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      const vkd::ops::LinearWeights w{weight.data(), scales.data(), nullptr, n, 8};
      const auto x = g.add_tensor(int8_spec({1, 7, 8}, MemoryLayout::PackedInt8_4H4W), "x");
      const auto y = g.add_tensor(int8_spec({1, 7, n}, MemoryLayout::PackedInt8_4H4W), "y");
      vkd::ops::add_q8ta_linear_node(g, x, w, y, p);
    });
  }
};

// The blocks split N into equal words (an output word is one block's), take no activation
// range (padding lanes are y = 0 rounded with their block's parameters) and no other epilogue.
class ColumnBlockLinearChecks : public GpuTest {};

TEST_F(ColumnBlockLinearChecks, BlocksAreChecked) {
  const ColumnBlocksSetup ok;
  EXPECT_EQ(ok.build(ctx()).first, -1) << ok.build(ctx()).second;
  ColumnBlocksSetup uneven;  // 12 channels into 2 blocks of 6
  uneven.p.output_blocks.pop_back();
  expect_op_error(uneven, ctx(), "q8ta_linear_qkv",
                  "N = 12 does not split into 2 column blocks of a multiple of 4 channels");
  ColumnBlocksSetup relu;
  relu.p.activation_min = -3;
  expect_op_error(relu, ctx(), "q8ta_linear_qkv", "column blocks take no activation range");
  ColumnBlocksSetup gelu;
  gelu.p.gelu = vkd::ops::LinearGelu::Erf;
  expect_op_error(gelu, ctx(), "q8ta_linear_gelu", "column blocks need a plain int8 output");
  ColumnBlocksSetup bad_scale;
  bad_scale.p.output_blocks[2].scale = 0.0f;
  expect_op_error(bad_scale, ctx(), "q8ta_linear_qkv", "scale");
}

}  // namespace
}  // namespace vkd_test
