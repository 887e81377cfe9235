// The argument checks of float_add / float_mul / float_div / float_affine_scalar / float_clamp /
// float_gelu and float_sum / float_vector_norm (wrong dtypes, storage, ranks, shapes that do not
// broadcast, a bad reduced dim or output: errors naming the op, raised while the graph is built),
// and the masked mean's (input rank and width, the mask's and the output's shapes).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/FloatElementwise.h"
#include "runtime/ops/Reduce.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

using vkd::DType;
using vkd::ErrorCode;
using vkd::MemoryLayout;
using vkd::StorageType;
using vkd::TensorSpec;
using vkd::graph::ComputeGraph;

TensorSpec float_spec(std::vector<int64_t> sizes) {
  return {std::move(sizes), DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
}

// float_mul of [1, 7, 10] by [1, 7, 1] into [1, 7, 10].
struct BinarySetup {
  TensorSpec a = float_spec({1, 7, 10}), b = float_spec({1, 7, 1}), out = float_spec({1, 7, 10});

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_float_binary_node(g, vkd::ops::FloatBinaryOp::Mul, g.add_tensor(a, "a"),
                                      g.add_tensor(b, "b"), g.add_tensor(out, "y"));
    });
  }
};

// float_clamp of [1, 1] broadcast into [1, 10].
struct UnarySetup {
  TensorSpec in = float_spec({1, 1}), out = float_spec({1, 10});

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_float_clamp_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"), 0.0f, 1.0f);
    });
  }
};

// float_gelu (tanh form) of [1, 7, 10].
struct GeluSetup {
  TensorSpec in = float_spec({1, 7, 10}), out = float_spec({1, 7, 10});

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_float_gelu_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"),
                                    vkd::ops::GeluApproximate::Tanh);
    });
  }
};

// float_sum of [2, 7, 10] over dim 1 into [2, 10].
struct ReduceSetup {
  TensorSpec in = float_spec({2, 7, 10}), out = float_spec({2, 10});
  int64_t dim = 1;

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_float_reduce_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"), dim, false);
    });
  }
};

// q8ta_masked_mean_normalize of int8 [2, 7, 10] with a [2, 7] mask into [2, 10].
struct MaskedMeanSetup {
  TensorSpec in = int8_spec({2, 7, 10}), mask = float_spec({2, 7}), out = float_spec({2, 10});

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::MaskedMeanParams p;
      p.mask_min = 1e-9f;
      p.eps = 1e-12f;
      p.input = vkd::ops::QuantParams{0.5f, 3};
      vkd::ops::add_masked_mean_node(g, g.add_tensor(in, "x"), g.add_tensor(mask, "m"),
                                     g.add_tensor(out, "y"), p);
    });
  }
};

class FloatElementwiseChecks : public GpuTest {};

TEST_F(FloatElementwiseChecks, TheSetupsBuild) {
  EXPECT_EQ(BinarySetup{}.build(ctx()).first, -1) << BinarySetup{}.build(ctx()).second;
  EXPECT_EQ(UnarySetup{}.build(ctx()).first, -1) << UnarySetup{}.build(ctx()).second;
  EXPECT_EQ(ReduceSetup{}.build(ctx()).first, -1) << ReduceSetup{}.build(ctx()).second;
  EXPECT_EQ(MaskedMeanSetup{}.build(ctx()).first, -1) << MaskedMeanSetup{}.build(ctx()).second;
}

TEST_F(FloatElementwiseChecks, BinaryOperandsAreChecked) {
  BinarySetup int8;
  int8.b = int8_spec({1, 7, 1});
  expect_op_error(int8, ctx(), "float_mul", "must be float32");
  BinarySetup texture;
  texture.a.storage = StorageType::Texture3D;
  expect_op_error(texture, ctx(), "float_mul", "must be a float32 buffer");
  BinarySetup mismatch;
  mismatch.b = float_spec({1, 6, 1});
  expect_op_error(mismatch, ctx(), "float_mul", "does not broadcast to the output");
  BinarySetup wider;
  wider.b = float_spec({2, 1, 7, 1});
  expect_op_error(wider, ctx(), "float_mul", "has more dims than the output");
}

TEST_F(FloatElementwiseChecks, UnaryInputMustBroadcast) {
  UnarySetup shrink;
  shrink.in = float_spec({1, 10});
  shrink.out = float_spec({1, 1});
  expect_op_error(shrink, ctx(), "float_clamp", "does not broadcast to the output");
}

TEST_F(FloatElementwiseChecks, GeluTensorsAreChecked) {
  GeluSetup plain;
  EXPECT_EQ(plain.build(ctx()).first, -1) << plain.build(ctx()).second;
  GeluSetup int8;
  int8.in = int8_spec({1, 7, 10});
  expect_op_error(int8, ctx(), "float_gelu", "must be float32");
  GeluSetup texture;
  texture.out.storage = StorageType::Texture3D;
  expect_op_error(texture, ctx(), "float_gelu", "must be a float32 buffer");
  GeluSetup shrink;
  shrink.out = float_spec({1, 7, 9});
  expect_op_error(shrink, ctx(), "float_gelu", "does not broadcast to the output");
}

TEST_F(FloatElementwiseChecks, ReductionDimAndOutputAreChecked) {
  ReduceSetup dim;
  dim.dim = 3;
  expect_op_error(dim, ctx(), "float_sum", "dim 3 is outside 0 .. 2");
  ReduceSetup out;
  out.out = float_spec({2, 7});
  expect_op_error(out, ctx(), "float_sum", "with dim 1 1 or dropped");
  ReduceSetup int8;
  int8.in = int8_spec({2, 7, 10});
  expect_op_error(int8, ctx(), "float_sum", "must be float32");
}

TEST_F(FloatElementwiseChecks, MaskedMeanShapesAreChecked) {
  const std::string op = "q8ta_masked_mean_normalize";
  MaskedMeanSetup rank;
  rank.in = int8_spec({2, 7, 10, 1});
  expect_op_error(rank, ctx(), op, "must be [B, T, C]");
  MaskedMeanSetup wide;
  wide.in = int8_spec({1, 2, 4097});
  wide.mask = float_spec({1, 2});
  wide.out = float_spec({1, 4097});
  expect_op_error(wide, ctx(), op, "has 4097 channels (1 .. 4096 pooled)", ErrorCode::Unsupported);
  MaskedMeanSetup mask;
  mask.mask = float_spec({2, 10});
  expect_op_error(mask, ctx(), op, "must be [2, 7] or [2, 7, 1]");
  MaskedMeanSetup out;
  out.out = float_spec({2, 1, 10});
  expect_op_error(out, ctx(), op, "must be [2, 10]");
  MaskedMeanSetup float_in;
  float_in.in = float_spec({2, 7, 10});  // int8 parameters given: the input must be int8
  expect_op_error(float_in, ctx(), op, "int8");
}

// The GPU kernel normalizes a row in shared memory: on a device with 16 KiB of it (the GPU
// kernels forced on lavapipe, its limit lowered) 4096 channels do not fit beside the kernel's
// two scalars, 4094 do.
// A normalized row whose means do not fit the shared memory takes the way down: the plain
// means, then their normalization on its own (two dispatches, the way down recorded); a row
// that fits stays one dispatch.
TEST_F(FloatElementwiseChecks, MaskedMeanNormalizeTooWideForSharedMemoryGoesDown) {
  auto options = test_context_options();
  options.overrides.disable_cpu_kernels = true;
  options.overrides.limits.max_shared_memory_bytes = 16384;
  vkd::vk::Context small(options);
  for (const int64_t channels : {4096, 4094}) {
    ComputeGraph g(small);
    vkd::ops::MaskedMeanParams p;
    p.eps = 1e-12f;
    p.input = vkd::ops::QuantParams{0.5f, 3};
    vkd::ops::add_masked_mean_node(g, g.add_tensor(int8_spec({1, 2, channels}), "x"),
                                   g.add_tensor(float_spec({1, 2}), "m"),
                                   g.add_tensor(float_spec({1, channels}), "y"), p);
    if (channels == 4096) {
      ASSERT_EQ(g.nodes().size(), 2u);
      ASSERT_EQ(g.ways_down().size(), 1u);
      EXPECT_EQ(g.ways_down()[0],
                "q8ta_masked_mean_normalize 'y': the plain means, then their normalization on "
                "its own (4096 channels to normalize need 16392 bytes of shared memory, the "
                "device 16384)");
    } else {
      EXPECT_EQ(g.nodes().size(), 1u);
      EXPECT_TRUE(g.ways_down().empty());
    }
  }
}

}  // namespace
}  // namespace vkd_test
