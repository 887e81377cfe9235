// q8ta_upsample_nearest2d's and q8ta_upsample_bilinear2d's argument checks: other batch or
// channels, mixed layouts, ranks, dtypes, non-finite scale factors, a partial output range, an
// input scale too small for the bilinear arithmetic and bad quantization parameters are errors
// naming the op and the problem, raised while the graph is built. The arithmetic is checked by
// the custom-op ACCU cases.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Upsample.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

using vkd::ErrorCode;
using vkd::ops::UpsampleMode;
using vkd::ops::UpsampleParams;

// [1, 6, 3, 5] -> [1, 6, 6, 10], one thing changed by the test.
struct UpSetup {
  TensorSpec in = int8_spec({1, 6, 3, 5});
  TensorSpec out = int8_spec({1, 6, 6, 10});
  UpsampleParams p = [] {
    UpsampleParams q;
    q.input = {0.1f, 0, -128, 127};
    q.output = {0.1f, 0, -128, 127};
    return q;
  }();

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    ComputeGraph g(ctx);
    const auto x = g.add_tensor(in, "x");
    const auto y = g.add_tensor(out, "y");
    return build_result(
        g, [&](ComputeGraph& graph) { vkd::ops::add_q8ta_upsample_node(graph, x, y, p); });
  }
};

UpSetup bilinear() {
  UpSetup s;
  s.p.mode = UpsampleMode::Bilinear;
  return s;
}

const char* op_of(const UpSetup& s) {
  return s.p.mode == UpsampleMode::Nearest ? "q8ta_upsample_nearest2d" : "q8ta_upsample_bilinear2d";
}

// Each check raises `code` with a message that starts with the op's name.
void expect_error(const UpSetup& s, vkd::vk::Context& ctx, const std::string& says,
                  ErrorCode code = ErrorCode::InvalidArgument) {
  const std::string message = expect_op_error(s, ctx, op_of(s), says, code);
  EXPECT_EQ(message.rfind(op_of(s), 0), 0u) << "message: " << message;
}

class UpsampleChecks : public GpuTest {};

TEST_F(UpsampleChecks, TheSetupsBuildInEveryLayoutAndSize) {
  for (UpSetup s : {UpSetup{}, bilinear()}) {
    for (MemoryLayout l : {MemoryLayout::PackedInt8_4W4C, MemoryLayout::PackedInt8_4H4W,
                           MemoryLayout::PackedInt8_4C1W}) {
      s.in.layout = s.out.layout = l;
      s.out.sizes = {1, 6, 2, 11};  // down along H, up by a non-integer factor along W
      const auto [got, message] = s.build(ctx());
      EXPECT_EQ(got, -1) << message;
    }
  }
}

TEST_F(UpsampleChecks, BatchAndChannelsMustMatch) {
  for (UpSetup s : {UpSetup{}, bilinear()}) {
    s.out.sizes = {1, 5, 6, 10};
    expect_error(s, ctx(), "must have the input's rank, batch and channels");
    s.out.sizes = {2, 6, 6, 10};
    expect_error(s, ctx(), "must have the input's rank, batch and channels");
    s.out.sizes = {6, 6, 10};
    expect_error(s, ctx(), "must have the input's rank, batch and channels");
  }
}

TEST_F(UpsampleChecks, LayoutsMustMatch) {
  UpSetup s;
  s.out.layout = MemoryLayout::PackedInt8_4C1W;
  expect_error(s, ctx(), "input and output must share their layout (4W4C, 4C1W)");
}

TEST_F(UpsampleChecks, RankAndDtype) {
  UpSetup s;
  s.in.sizes = {3, 5};
  s.out.sizes = {6, 10};
  expect_error(s, ctx(), "must have rank 3 or 4");
  UpSetup f = bilinear();
  f.in = {{1, 6, 3, 5}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_op_error(f, ctx(), "q8ta_upsample_bilinear2d", "int8x4");
}

TEST_F(UpsampleChecks, ScaleFactorsMustBeFinite) {
  for (UpSetup s : {UpSetup{}, bilinear()}) {
    s.p.scale_w = std::numeric_limits<double>::infinity();
    expect_error(s, ctx(), "scale factor inf must be finite");
    s.p.scale_w = 2.0;
    s.p.scale_h = std::nan("");
    expect_error(s, ctx(), "must be finite");
  }
}

TEST_F(UpsampleChecks, QuantizationParameters) {
  UpSetup s = bilinear();
  s.p.output.quant_min = 0;
  s.p.output.zero_point = 0;
  expect_error(s, ctx(), "the output must use the full int8 range [-128, 127]");
  s = UpSetup{};
  s.p.input.scale = 0.0f;
  expect_error(s, ctx(), "q8ta_upsample_nearest2d input");
  s = bilinear();
  s.p.input.scale = 1e-37f;  // weights 0.25, 0.75: 1e-37 * 2^-4 is no normal float32
  expect_error(s, ctx(), "input scale 1e-37 is too small (scale * 2^-4 must be a normal float32)",
               ErrorCode::Unsupported);
}

}  // namespace
}  // namespace vkd_test
