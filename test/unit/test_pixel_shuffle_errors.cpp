// q8ta_pixel_shuffle's and pixel_shuffle's argument checks: channels not divisible by r^2, wrong
// output sizes, r < 1, wrong dtypes and layouts, bad quantization parameters are
// InvalidArgument errors naming the op and the problem, raised while the graph is built. The
// arithmetic is checked by the custom-op ACCU cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/PixelShuffle.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

using vkd::ops::QuantParams;

// [1, 8, 3, 5] -> [1, 2, 6, 10] with r = 2, one thing changed by the test.
struct ShuffleSetup {
  TensorSpec in = int8_spec({1, 8, 3, 5});
  TensorSpec out = int8_spec({1, 2, 6, 10});
  int64_t r = 2;
  QuantParams in_q{0.1f, 0, -128, 127}, out_q{0.1f, 0, -128, 127};
  bool float_op = false;

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    ComputeGraph g(ctx);
    const auto x = g.add_tensor(in, "x");
    const auto y = g.add_tensor(out, "y");
    return build_result(g, [&](ComputeGraph& graph) {
      if (float_op) {
        vkd::ops::add_pixel_shuffle_node(graph, x, r, y);
      } else {
        vkd::ops::add_q8ta_pixel_shuffle_node(graph, x, in_q, r, y, out_q);
      }
    });
  }
};

ShuffleSetup float_setup(StorageType storage = StorageType::Buffer) {
  ShuffleSetup s;
  s.float_op = true;
  s.in = {{1, 8, 3, 5}, DType::Float32, storage, MemoryLayout::WidthPacked};
  s.out = {{1, 2, 6, 10}, DType::Float32, storage, MemoryLayout::WidthPacked};
  return s;
}

// Every check raises InvalidArgument, with a message that starts with the op's name.
void expect_error(const ShuffleSetup& s, vkd::vk::Context& ctx, const std::string& says) {
  const std::string op = s.float_op ? "pixel_shuffle" : "q8ta_pixel_shuffle";
  const std::string message = expect_op_error(s, ctx, op, says);
  EXPECT_EQ(message.rfind(op, 0), 0u) << "message: " << message;
}

class PixelShuffleChecks : public GpuTest {};

TEST_F(PixelShuffleChecks, TheSetupsBuild) {
  for (const ShuffleSetup& s :
       {ShuffleSetup{}, float_setup(), float_setup(StorageType::Texture3D)}) {
    const auto [got, message] = s.build(ctx());
    EXPECT_EQ(got, -1) << message;
  }
  ShuffleSetup mixed;  // the int8 layouts may differ
  mixed.out = int8_spec({1, 2, 6, 10}, MemoryLayout::PackedInt8_4C1W);
  EXPECT_EQ(mixed.build(ctx()).first, -1) << mixed.build(ctx()).second;
}

TEST_F(PixelShuffleChecks, ChannelsNotDivisibleByRSquared) {
  for (ShuffleSetup s : {ShuffleSetup{}, float_setup()}) {
    s.in.sizes = {1, 6, 3, 5};
    expect_error(s, ctx(), "6 channels, not divisible by upscale_factor^2 = 4");
  }
}

TEST_F(PixelShuffleChecks, WrongOutputSizes) {
  for (ShuffleSetup s : {ShuffleSetup{}, float_setup()}) {
    s.out.sizes = {1, 2, 6, 9};
    expect_error(s, ctx(), "must have sizes [1,2,6,10]");
    s.out.sizes = {1, 8, 3, 5};
    expect_error(s, ctx(), "must have sizes [1,2,6,10]");
    s.out.sizes = {2, 6, 10};
    expect_error(s, ctx(), "must both have rank 3 or 4");
  }
}

TEST_F(PixelShuffleChecks, UpscaleFactorBelowOne) {
  for (ShuffleSetup s : {ShuffleSetup{}, float_setup()}) {
    s.r = 0;
    expect_error(s, ctx(), "upscale_factor must be >= 1, got 0");
    s.r = -2;
    expect_error(s, ctx(), "upscale_factor must be >= 1, got -2");
  }
}

TEST_F(PixelShuffleChecks, WrongDtypeOrLayout) {
  ShuffleSetup s;
  s.in = {{1, 8, 3, 5}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_error(s, ctx(), "must be int8x4 in a packed int8 layout");
  s = ShuffleSetup{};
  s.out = int8_spec({1, 2, 6, 10}, MemoryLayout::PackedInt8_4H4W);
  expect_error(s, ctx(), "must be in a channels-packed int8 layout (4W4C or 4C1W)");
  s = ShuffleSetup{};
  s.in = int8_spec({1, 8, 3, 5}, MemoryLayout::PackedInt8_4H4W);
  expect_error(s, ctx(), "must be in a channels-packed int8 layout (4W4C or 4C1W)");

  ShuffleSetup f = float_setup();
  f.in = int8_spec({1, 8, 3, 5});
  expect_error(f, ctx(), "must be float32 or float16 in a float layout");
  f = float_setup();
  f.out.dtype = DType::Float16;
  expect_error(f, ctx(), "input and output dtypes differ");
}

TEST_F(PixelShuffleChecks, BadQuantParams) {
  ShuffleSetup s;
  s.in_q.scale = 0.0f;
  expect_error(s, ctx(), "q8ta_pixel_shuffle input: scale must be finite and > 0");
  s = ShuffleSetup{};
  s.out_q.zero_point = 200;
  expect_error(s, ctx(), "q8ta_pixel_shuffle output: zero_point 200 outside");
  s = ShuffleSetup{};
  s.out_q.quant_min = -100;
  s.out_q.zero_point = 0;
  expect_error(s, ctx(), "full int8 range");
}

}  // namespace
}  // namespace vkd_test
