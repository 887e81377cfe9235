// The torchao affine ops' argument checks (q8ta_quantize_affine, q8ta_dequantize_affine,
// choose_qparams_affine): block_size of the wrong rank, with a 0 / < -1 entry or a partial size
// that does not divide the dim (torchao rejects those too), quant ranges outside int8 or empty,
// wrong dtypes / storage of the tensors and per-block parameters, a parameter count that does
// not match the block grid, a bad eps or mapping: InvalidArgument errors naming the op and the
// problem, raised while the graph is built. The arithmetic is checked by the custom-op ACCU
// cases (test/custom_ops/affine_quant_cases.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/AffineQuant.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

enum class Op { Quantize, Dequantize, Choose };

// A [2, 6, 64] float tensor, per group of 32 along the last dim (24 blocks), int8 4H4W, one
// thing changed by the test.
struct AffineSetup {
  Op op = Op::Quantize;
  TensorSpec fp{{2, 6, 64}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  TensorSpec q{{2, 6, 64}, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4H4W};
  TensorSpec scale{{24}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  TensorSpec zp{{2, 6, 2}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked};
  std::vector<int64_t> block_size{1, 1, 32};
  int32_t qmin = -8, qmax = 7;
  float eps = 1.1920929e-07f;
  vkd::ops::AffineMapping mapping = vkd::ops::AffineMapping::Asymmetric;

  std::string op_name() const {
    return op == Op::Quantize     ? "q8ta_quantize_affine"
           : op == Op::Dequantize ? "q8ta_dequantize_affine"
                                  : "choose_qparams_affine";
  }
  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      const auto s = g.add_tensor(scale, "s");
      const auto z = g.add_tensor(zp, "z");
      if (op == Op::Quantize) {
        vkd::ops::add_quantize_affine_node(g, g.add_tensor(fp, "x"), s, z, block_size, qmin, qmax,
                                           g.add_tensor(q, "xq"));
      } else if (op == Op::Dequantize) {
        vkd::ops::add_dequantize_affine_node(g, g.add_tensor(q, "xq"), s, z, block_size, qmin, qmax,
                                             g.add_tensor(fp, "x"));
      } else {
        vkd::ops::add_choose_qparams_affine_node(g, g.add_tensor(fp, "x"), mapping, block_size,
                                                 qmin, qmax, eps, s, z);
      }
    });
  }
};

std::vector<AffineSetup> all_ops() {
  std::vector<AffineSetup> v(3);
  v[1].op = Op::Dequantize;
  v[2].op = Op::Choose;
  return v;
}

// Every check raises InvalidArgument, with a message that names the op as "<op>:".
void expect_error(const AffineSetup& s, vkd::vk::Context& ctx, const std::string& says) {
  expect_op_error(s, ctx, s.op_name() + ":", says);
}

class AffineQuantChecks : public GpuTest {};

TEST_F(AffineQuantChecks, TheSetupsBuild) {
  for (AffineSetup s : all_ops()) {
    EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
    s.fp.storage = StorageType::Texture3D;  // texture float side, other int8 layouts
    s.q.layout = MemoryLayout::PackedInt8_4W4C;
    EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
    s.block_size = {-1};  // per tensor, short form
    s.scale.sizes = {1};
    s.zp.sizes = {1, 1, 1};
    EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
  }
}

TEST_F(AffineQuantChecks, BadBlockSize) {
  for (AffineSetup s : all_ops()) {
    s.block_size = {1, 32};
    expect_error(s, ctx(), "block_size [1,32] does not match the input's rank 3");
    s.block_size = {1, 0, 32};
    expect_error(s, ctx(), "has an invalid entry 0");
    s.block_size = {1, -2, 32};
    expect_error(s, ctx(), "has an invalid entry -2");
    // torchao asserts that a partial block size divides the dim: 64 % 48 != 0.
    s.block_size = {1, 1, 48};
    expect_error(s, ctx(), "input size 64 at dim 2 is not divisible by block size 48");
    s.block_size = {1, 4, 32};
    expect_error(s, ctx(), "input size 6 at dim 1 is not divisible by block size 4");
    s.block_size = {1, 1, 128};  // larger than the dim
    expect_error(s, ctx(), "input size 64 at dim 2 is not divisible by block size 128");
  }
}

TEST_F(AffineQuantChecks, BadQuantRange) {
  for (AffineSetup s : all_ops()) {
    s.qmin = 0;
    s.qmax = 255;  // uint8 does not fit int8 storage
    expect_error(s, ctx(),
                 "need -128 <= quant_min <= quant_max <= 127 (int8 storage), got [0, 255]");
    s.qmin = 3;
    s.qmax = 2;
    expect_error(s, ctx(), "got [3, 2]");
    s.qmin = -129;
    s.qmax = 0;
    expect_error(s, ctx(), "got [-129, 0]");
  }
}

TEST_F(AffineQuantChecks, WrongParameterCountOrForm) {
  for (AffineSetup s : all_ops()) {
    AffineSetup t = s;
    t.scale.sizes = {12};
    expect_error(t, ctx(), "scale 's' has 12 elements, block_size gives 24 blocks");
    t = s;
    t.zp.sizes = {25};
    expect_error(t, ctx(), "zero_point 'z' has 25 elements, block_size gives 24 blocks");
    t = s;
    t.scale.dtype = DType::Int32;
    expect_error(t, ctx(), "must be a width-packed float32 buffer");
    t = s;
    t.zp.dtype = DType::Float32;  // torchao's FLOAT zero-point domain is not supported
    expect_error(t, ctx(), "must be a width-packed int32 buffer");
    t = s;
    t.scale.storage = StorageType::Texture3D;
    expect_error(t, ctx(), "must be a width-packed float32 buffer");
    t = s;
    t.zp.layout = MemoryLayout::ChannelsPacked;
    expect_error(t, ctx(), "must be a width-packed int32 buffer");
  }
}

TEST_F(AffineQuantChecks, WrongTensorDtypes) {
  AffineSetup s;  // quantize: float in, int8x4 out
  s.fp.dtype = DType::Int32;
  expect_error(s, ctx(), "must be float32");
  s = AffineSetup{};
  s.q = s.fp;
  expect_error(s, ctx(), "must be int8x4 in a packed int8 layout");
  s = AffineSetup{};
  s.q.sizes = {2, 6, 32};
  expect_error(s, ctx(), "q8ta_quantize_affine");
  s = AffineSetup{};
  s.op = Op::Dequantize;
  s.q = s.fp;
  expect_error(s, ctx(), "must be int8x4 in a packed int8 layout");
  s = AffineSetup{};
  s.op = Op::Choose;
  s.fp.dtype = DType::Int32;
  expect_error(s, ctx(), "must be float32");
}

TEST_F(AffineQuantChecks, BadEpsOrMapping) {
  AffineSetup s;
  s.op = Op::Choose;
  for (float eps : {0.0f, -1.0f, INFINITY, NAN}) {
    s.eps = eps;
    expect_error(s, ctx(), "eps must be finite and > 0");
  }
  s = AffineSetup{};
  s.op = Op::Choose;
  s.mapping = static_cast<vkd::ops::AffineMapping>(3);
  expect_error(s, ctx(), "mapping_type 3");
}

}  // namespace
}  // namespace vkd_test
