// q8ta_conv2d's argument checks: every bad shape, layout, parameter or forced route is an
// InvalidArgument / Unsupported error whose message names the problem, raised while the graph
// is built (no dispatch is recorded). The arithmetic is checked by the custom-op ACCU cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Conv2d.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

using vkd::ErrorCode;
using vkd::ops::Conv2dParams;
using vkd::ops::Conv2dRoute;
using vkd::ops::Conv2dWeights;

// A 3x3 convolution 8 -> 4 channels over [1, 8, 6, 5] with padding 1 (output [1, 4, 6, 5]),
// built with one thing changed by the test.
struct ConvSetup {
  TensorSpec in = int8_spec({1, 8, 6, 5});
  TensorSpec out = int8_spec({1, 4, 6, 5});
  std::vector<int8_t> weight = std::vector<int8_t>(4 * 8 * 3 * 3, 1);
  std::vector<float> scales = std::vector<float>(4, 0.01f);
  Conv2dWeights w{nullptr, nullptr, nullptr, 4, 8, 3, 3};
  Conv2dParams p;

  ConvSetup() {
    p.output = vkd::ops::QuantParams{0.1f, 0, -128, 127};
    p.geometry.pad_top = p.geometry.pad_left = p.geometry.pad_bottom = p.geometry.pad_right = 1;
  }
  // Builds the node (no weights when `weight` is empty); returns the error's code and message
  // (-1 when none).
  std::pair<int, std::string> build(vkd::vk::Context& ctx) {
    ComputeGraph g(ctx);
    return build(g);
  }
  // The same into `g` (which keeps the nodes for the test to look at).
  std::pair<int, std::string> build(ComputeGraph& g) {
    w.weight = weight.empty() ? nullptr : weight.data();
    w.scales = scales.data();
    const auto x = g.add_tensor(in, "x");
    const auto y = g.add_tensor(out, "y");
    return build_result(
        g, [&](ComputeGraph& graph) { vkd::ops::add_q8ta_conv2d_node(graph, x, w, y, p); });
  }
};

// Limits are Unsupported, bad arguments InvalidArgument: each test names the code.
void expect_error(ConvSetup s, vkd::vk::Context& ctx, ErrorCode code, const std::string& says) {
  expect_op_error(s, ctx, "q8ta_conv2d", says, code);
}

class Conv2dChecks : public GpuTest {};

TEST_F(Conv2dChecks, TheSetupItselfBuilds) {
  ConvSetup s;
  EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
}

TEST_F(Conv2dChecks, WrongOutputSizesAreNamed) {
  ConvSetup s;
  s.out = int8_spec({1, 4, 5, 5});
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "must be [1, 4, 6, 5]");
}

TEST_F(Conv2dChecks, GroupsMustDivideTheChannels) {
  ConvSetup s;
  s.p.geometry.groups = 3;
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "groups = 3 must divide C_in = 8");
}

TEST_F(Conv2dChecks, WeightsMustHoldTheGroupsInputChannels) {
  ConvSetup s;
  s.p.geometry.groups = 2;  // C_in / groups = 4, the weights hold 8
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "(they hold 8)");
}

TEST_F(Conv2dChecks, BadGeometryIsNamed) {
  ConvSetup s;
  s.p.geometry.stride_w = 0;
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "stride (1, 0)");
  ConvSetup t;
  t.p.geometry.pad_left = -1;
  expect_error(t, ctx(), ErrorCode::InvalidArgument, "must be >= 0");
  ConvSetup u;
  u.in = int8_spec({1, 8, 1, 1});
  u.out = int8_spec({1, 4, 1, 1});
  u.p.geometry = {};
  u.p.geometry.dilation_h = 2;
  expect_error(u, ctx(), ErrorCode::InvalidArgument, "does not fit the padded 1x1 input");
}

TEST_F(Conv2dChecks, LayoutsOutsideTheChannelsPackedOnesAreRefused) {
  ConvSetup s;
  s.in = int8_spec({1, 8, 6, 5}, MemoryLayout::PackedInt8_4H4W);
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "must be an int8x4 buffer in 4W4C or 4C1W");
  ConvSetup f;
  f.p.output.reset();  // float output, but the output is an int8x4 tensor
  expect_error(f, ctx(), ErrorCode::InvalidArgument, "q8ta_conv2d_dq");
}

TEST_F(Conv2dChecks, ForcedRoutesThatDoNotFitAreRefused) {
  ConvSetup s;
  s.p.route = Conv2dRoute::Pointwise;
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "pointwise route needs a 1x1 kernel");
  ConvSetup d;
  d.p.route = Conv2dRoute::Depthwise;
  expect_error(d, ctx(), ErrorCode::InvalidArgument, "depthwise route needs groups == C_in");
}

TEST_F(Conv2dChecks, ForcedIm2colThatDoesNotFitSaysWhy) {
  ConvSetup g;
  g.p.route = Conv2dRoute::Im2col;
  g.p.geometry.groups = 2;
  g.w.in_per_group = 4;
  expect_error(g, ctx(), ErrorCode::InvalidArgument, "im2col route needs groups 1 (groups = 2)");
  ConvSetup o;
  o.p.route = Conv2dRoute::Im2col;
  o.out = int8_spec({1, 4, 6, 5}, MemoryLayout::PackedInt8_4C1W);
  expect_error(o, ctx(), ErrorCode::InvalidArgument,
               "im2col route needs an int8 4W4C output (the GEMM writes no 4C1W output)");
  ConvSetup f;
  f.p.route = Conv2dRoute::Im2col;
  f.p.output.reset();
  f.out = {{1, 4, 6, 5}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_error(f, ctx(), ErrorCode::InvalidArgument, "the GEMM writes no float output");
}

TEST_F(Conv2dChecks, ForcedIm2colOverItsSizeCapIsRefused) {
  // 512 x 512 output pixels x K = 9 * 128 bytes = 288 MiB of im2col matrix, over the 256 MiB
  // cap (and over lavapipe's 128 MiB maxStorageBufferRange): refused while building, before
  // any memory is allocated. The direct kernel takes the same shape.
  ConvSetup s;
  s.in = int8_spec({1, 128, 512, 512});
  s.out = int8_spec({1, 4, 512, 512});
  s.weight.assign(4 * 128 * 3 * 3, 1);
  s.w.in_per_group = 128;
  s.p.route = Conv2dRoute::Im2col;
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "this convolution's takes 301989888 bytes");
  s.p.route = Conv2dRoute::Auto;
  EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
}

TEST_F(Conv2dChecks, Im2colIsAGatherThenTheLinearKernels) {
  // The explicit form (the implicit one below).
  ConvSetup s;
  s.p.route = Conv2dRoute::Im2col;
  s.p.im2col_form = vkd::ops::Im2colForm::Explicit;
  ComputeGraph g(ctx());
  ASSERT_EQ(s.build(g).first, -1) << s.build(ctx()).second;
  ASSERT_EQ(g.nodes().size(), 2u);
  const std::string gather = vkd::shaders::shader_info(g.nodes()[0].kernel).name;
  const std::string gemm = vkd::shaders::shader_info(g.nodes()[1].kernel).name;
  EXPECT_EQ(gather, "q8ta_im2col_4w4c");
  EXPECT_EQ(gemm.rfind("q8ta_linear_", 0), 0u) << gemm;
  // The GEMM reads what the gather wrote: a [N, KH * KW * C4_in * 4, H_out, W_out] 4W4C tensor.
  EXPECT_EQ(g.nodes()[0].bindings[0], g.nodes()[1].bindings[1]);
  EXPECT_EQ(g.spec(g.nodes()[0].bindings[0]).sizes, (std::vector<int64_t>{1, 72, 6, 5}));
  // Auto takes it too (8 channels x 9 taps = 72 >= 64 products per output) ...
  ConvSetup a;
  a.p.im2col_form = vkd::ops::Im2colForm::Explicit;
  ComputeGraph h(ctx());
  ASSERT_EQ(a.build(h).first, -1);
  ASSERT_EQ(h.nodes().size(), 2u);
  EXPECT_EQ(vkd::shaders::shader_info(h.nodes()[0].kernel).name, gather);
  // ... but keeps the direct kernel for a 3-channel input (27 products).
  ConvSetup stem;
  stem.in = int8_spec({1, 3, 6, 5});
  stem.weight.assign(4 * 3 * 3 * 3, 1);
  stem.w.in_per_group = 3;
  ComputeGraph d(ctx());
  ASSERT_EQ(stem.build(d).first, -1) << stem.build(ctx()).second;
  ASSERT_EQ(d.nodes().size(), 1u);
  const std::string direct = vkd::shaders::shader_info(d.nodes()[0].kernel).name;
  EXPECT_EQ(direct.rfind("q8ta_conv2d_", 0), 0u) << direct;
}

TEST_F(Conv2dChecks, ShortKPointwiseRunsTheDirectKernelOnGpus) {
  // A 1x1 over 8 input channels: the Pointwise route, through the direct kernel on a GPU
  // (Conv2d.cpp: pointwise_runs_direct), through a linear kernel on a CPU device or when one is
  // asked for.
  ConvSetup s;
  s.weight.assign(4 * 8, 1);
  s.w.kh = s.w.kw = 1;
  s.p.geometry.pad_top = s.p.geometry.pad_left = s.p.geometry.pad_bottom = s.p.geometry.pad_right =
      0;
  for (const bool ask_linear : {false, true}) {
    s.p.gemm = ask_linear ? vkd::ops::LinearRoute::Gemv : vkd::ops::LinearRoute::Auto;
    ComputeGraph g(ctx());
    ASSERT_EQ(s.build(g).first, -1) << s.build(ctx()).second;
    ASSERT_EQ(g.nodes().size(), 1u);
    const std::string kernel = vkd::shaders::shader_info(g.nodes()[0].kernel).name;
    const bool direct = !ctx().profile().cpu_kernels && !ask_linear;
    EXPECT_EQ(kernel.rfind(direct ? "q8ta_conv2d_4w4c_int8_4w4c_" : "q8ta_linear_", 0), 0u)
        << kernel;
  }
}

TEST_F(Conv2dChecks, ImplicitIm2colIsOneGatheringLinearKernel) {
  // Through the split-K kernel (a GPU kernel on every device that has it): one dispatch whose
  // binding 1 is the convolution's input, its "_im2col_" variant for the 4C1W input.
  ConvSetup s;
  s.in = int8_spec({1, 8, 6, 5}, MemoryLayout::PackedInt8_4C1W);
  s.p.route = Conv2dRoute::Im2col;
  s.p.gemm = vkd::ops::LinearRoute::SplitK;
  s.p.im2col_form = vkd::ops::Im2colForm::Implicit;
  ComputeGraph g(ctx());
  ASSERT_EQ(s.build(g).first, -1) << s.build(ctx()).second;
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(std::string(vkd::shaders::shader_info(g.nodes()[0].kernel).name),
            "q8ta_linear_gemm_im2col_4c1w_int8_" +
                std::string(ctx().profile().int8_dot_product ? "sdot" : "fallback") + "_split");
  const TensorSpec& read = g.spec(g.nodes()[0].bindings[1]);  // x itself
  EXPECT_EQ(read.layout, MemoryLayout::PackedInt8_4C1W);
  EXPECT_EQ(read.sizes, (std::vector<int64_t>{1, 8, 6, 5}));
}

TEST_F(Conv2dChecks, ForcedImplicitIm2colWithoutAGatheringKernelSaysWhy) {
  // 4 output pixels: the GEMV kernel (every device), which reads whole matrix blocks.
  ConvSetup s;
  s.in = int8_spec({1, 8, 2, 2});
  s.out = int8_spec({1, 4, 2, 2});
  s.p.route = Conv2dRoute::Im2col;
  s.p.im2col_form = vkd::ops::Im2colForm::Implicit;
  expect_error(s, ctx(), ErrorCode::Unsupported,
               "implicit im2col needs the cooperative-matrix, GEMM or split-K kernel; this "
               "convolution's GEMM runs the gemv kernel");
  s.p.im2col_form = vkd::ops::Im2colForm::Explicit;
  EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
}

TEST_F(Conv2dChecks, ForcedWindowFormSaysWhatItNeeds) {
  // The window form (q8ta_conv2d_coopmat) needs the cooperative-matrix route, then a 4W4C
  // input; where both hold it is one dispatch reading the convolution's input.
  ConvSetup s;
  s.in = int8_spec({1, 8, 6, 5}, MemoryLayout::PackedInt8_4C1W);
  s.p.route = Conv2dRoute::Im2col;
  s.p.im2col_form = vkd::ops::Im2colForm::Window;
  if (!vkd::ops::linear_coopmat_unavailable(ctx().profile()).empty()) {
    expect_error(s, ctx(), ErrorCode::InvalidArgument,
                 "the window form (q8ta_conv2d_coopmat) needs the cooperative-matrix route");
    s.in = int8_spec({1, 8, 6, 5});
    expect_error(s, ctx(), ErrorCode::InvalidArgument, "needs the cooperative-matrix route");
    return;
  }
  expect_error(s, ctx(), ErrorCode::InvalidArgument,
               "the window form (q8ta_conv2d_coopmat) needs a 4W4C input");
  s.in = int8_spec({1, 8, 6, 5});
  ComputeGraph g(ctx());
  ASSERT_EQ(s.build(g).first, -1) << s.build(ctx()).second;
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(std::string(vkd::shaders::shader_info(g.nodes()[0].kernel).name),
            "q8ta_conv2d_coopmat_4w4c_int8");
  EXPECT_EQ(g.spec(g.nodes()[0].bindings[1]).sizes, (std::vector<int64_t>{1, 8, 6, 5}));
}

TEST_F(Conv2dChecks, DepthwiseRowsAndTilesOutOfRangeAreRefused) {
  ConvSetup s;
  s.in = int8_spec({1, 4, 6, 5});
  s.weight.assign(4 * 1 * 3 * 3, 1);
  s.w.in_per_group = 1;
  s.p.geometry.groups = 4;
  s.p.depthwise_rows = 5;
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "depthwise_rows 5 must be 0");
  s.p.depthwise_rows = 4;
  EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
  // Tiles along the row: 1 or 2, at most 4 rows x tiles.
  s.p.depthwise_tiles_w = 3;
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "depthwise_tiles_w 3 must be 0");
  s.p.depthwise_tiles_w = 2;
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "at most 4 rows x tiles (depthwise_rows 4)");
  s.p.depthwise_rows = 2;
  EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
}

// The depthwise kernel's last specialization constant, ROW_DOTS (shaders/q8ta_conv2d_dw.glsl):
// one dot product per kernel row only where the row fits one word of a 4W4C input; Auto falls
// back to one per tap elsewhere, RowDots asked for there is refused.
TEST_F(Conv2dChecks, DepthwiseRowDotsOnlyWhereTheRowFitsAWord) {
  using Products = Conv2dParams::DepthwiseProducts;
  ConvSetup s;
  s.in = int8_spec({1, 4, 6, 7});
  s.out = int8_spec({1, 4, 4, 5});  // padding 1 left and right
  s.weight.assign(4 * 1 * 3 * 3, 1);
  s.w.in_per_group = 1;
  s.p.geometry.groups = 4;
  s.p.geometry.pad_top = s.p.geometry.pad_bottom = 0;
  s.p.geometry.dilation_w = 2;  // 3 taps over 5 widths
  auto row_dots = [&](Products asked) {
    s.p.depthwise_products = asked;
    ComputeGraph g(ctx());
    EXPECT_EQ(s.build(g).first, -1) << s.build(ctx()).second;
    return g.nodes().size() == 1 ? int64_t(g.nodes()[0].spec_constants.back()) : int64_t(-1);
  };
  EXPECT_EQ(row_dots(Products::Auto), 0);
  EXPECT_EQ(row_dots(Products::LaneMasks), 0);
  s.p.depthwise_products = Products::RowDots;
  expect_error(s, ctx(), ErrorCode::InvalidArgument,
               "row dot products need a 4W4C input and a kernel row of at most 4 widths "
               "((KW - 1) * dilation_w + 1 = 5)");
  // 4C1W input: refused too, whatever the kernel.
  s.p.geometry.dilation_w = 1;
  s.out = int8_spec({1, 4, 4, 7});
  s.in = int8_spec({1, 4, 6, 7}, vkd::MemoryLayout::PackedInt8_4C1W);
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "(KW - 1) * dilation_w + 1 = 3)");
  // 4W4C, 3 widths: as asked.
  s.in = int8_spec({1, 4, 6, 7});
  EXPECT_EQ(row_dots(Products::RowDots), 1);
  EXPECT_EQ(row_dots(Products::LaneMasks), 0);
}

TEST_F(Conv2dChecks, TooManyProductsPerOutputIsUnsupported) {
  ConvSetup s;
  s.in = int8_spec({1, 8192, 3, 3});
  s.out = int8_spec({1, 4, 3, 3});
  s.weight.assign(4 * 8192 * 3 * 3, 1);
  s.w.in_per_group = 8192;  // 8192 * 9 taps > 65536
  expect_error(s, ctx(), ErrorCode::Unsupported, "int32 accumulation could overflow");
}

TEST_F(Conv2dChecks, MissingWeightsAreNamed) {
  ConvSetup s;
  s.weight.clear();
  expect_error(s, ctx(), ErrorCode::InvalidArgument, "weights and weight scales are required");
}

// q8ta_conv2d_ps: the setup's convolution with 16 output channels, written pixel-shuffled by 2
// into [1, 4, 12, 10].
ConvSetup shuffled() {
  ConvSetup s;
  s.weight.assign(16 * 8 * 3 * 3, 1);
  s.scales.assign(16, 0.01f);
  s.w.out_channels = 16;
  s.out = int8_spec({1, 4, 12, 10});
  s.p.upscale = 2;
  return s;
}

TEST_F(Conv2dChecks, PixelShuffledOutputBuildsAndNeedsItsConditions) {
  EXPECT_EQ(shuffled().build(ctx()).first, -1) << shuffled().build(ctx()).second;
  const std::string op = "q8ta_conv2d_ps";
  ConvSetup s = shuffled();
  s.p.upscale = 0;
  expect_op_error(s, ctx(), op, "upscale_factor 0 must be in [1, 1024]");
  s = shuffled();
  s.out = int8_spec({1, 4, 12, 11});
  expect_op_error(s, ctx(), op, "need H and W multiples of 2 and C a multiple of 4");
  s = shuffled();  // 8 channels: 2 after the shuffle
  s.weight.resize(8 * 8 * 3 * 3);
  s.w.out_channels = 8;
  s.out = int8_spec({1, 2, 12, 10});
  expect_op_error(s, ctx(), op, "C a multiple of 4 (a packed word holds channels of one sub-pixel");
  s = shuffled();
  s.p.geometry.groups = 2;
  s.weight.resize(16 * 4 * 3 * 3);
  s.w.in_per_group = 4;
  expect_op_error(s, ctx(), op, "needs groups 1 (groups = 2)");
  s = shuffled();
  s.out = int8_spec({1, 8, 12, 10});
  expect_op_error(s, ctx(), op, "output sizes [1, 32, 6, 5] must be [1, 16, 6, 5]");
  s = shuffled();
  s.p.output.reset();
  s.out = {{1, 4, 12, 10}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_op_error(s, ctx(), "q8ta_conv2d_dq", "a pixel-shuffled output must be int8");
  s = shuffled();
  s.p.route = Conv2dRoute::Depthwise;
  expect_op_error(s, ctx(), op, "an output that is neither pixel-shuffled nor added to");
}

// q8ta_conv2d_fq: the setup's convolution reading a float32 NCHW input [1, 8, 6, 5] that it
// quantizes on load.
ConvSetup float_input() {
  ConvSetup s;
  s.in = {{1, 8, 6, 5}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  s.p.quantize_input = true;
  return s;
}

TEST_F(Conv2dChecks, FloatInputQuantizedOnLoadBuildsAndNeedsItsConditions) {
  // One dispatch of the direct kernel's float-input variant, for Auto and Direct.
  for (const Conv2dRoute route : {Conv2dRoute::Auto, Conv2dRoute::Direct}) {
    ConvSetup s = float_input();
    s.p.route = route;
    ComputeGraph g(ctx());
    ASSERT_EQ(s.build(g).first, -1) << s.build(ctx()).second;
    ASSERT_EQ(g.nodes().size(), 1u);
    const std::string kernel = vkd::shaders::shader_info(g.nodes()[0].kernel).name;
    EXPECT_EQ(kernel.rfind("q8ta_conv2d_fq_float_int8_4w4c_", 0), 0u) << kernel;
  }
  const std::string op = "q8ta_conv2d_fq";
  ConvSetup s = float_input();
  s.in = int8_spec({1, 8, 6, 5});  // an int8 input: the wrong dtype
  expect_op_error(s, ctx(), op, "must be float32");
  s = float_input();
  s.in.layout = MemoryLayout::ChannelsPacked;  // NHWC
  expect_op_error(s, ctx(), op, "must be a width-packed float32 buffer");
  s = float_input();
  s.in = {{8, 30}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_op_error(s, ctx(), op, "must be a float32 buffer of rank 3 or 4");
  for (const Conv2dRoute route :
       {Conv2dRoute::Pointwise, Conv2dRoute::Im2col, Conv2dRoute::Depthwise}) {
    s = float_input();
    s.p.route = route;
    expect_op_error(s, ctx(), op,
                    "the " + vkd::ops::to_string(route) +
                        " route reads an int8 input; a float "
                        "input is quantized on load by the direct route only");
  }
  s = float_input();
  s.p.output.reset();
  s.out = {{1, 4, 6, 5}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_op_error(s, ctx(), op, "writes a plain int8 output");
  s = float_input();
  s.p.input.quant_min = 1;  // above the zero point 0
  expect_op_error(s, ctx(), op, "zero_point 0 outside [quant_min, quant_max] = [1, 127]");
  // The kernel unrolls its taps x channel words: 5x5 over 8 channels (50) builds, 7x7 (98)
  // is refused.
  s = float_input();
  s.weight.assign(4 * 8 * 5 * 5, 1);
  s.w.kh = s.w.kw = 5;
  s.p.geometry.pad_top = s.p.geometry.pad_left = s.p.geometry.pad_bottom = s.p.geometry.pad_right =
      2;
  EXPECT_EQ(s.build(ctx()).first, -1) << s.build(ctx()).second;
  s.weight.assign(4 * 8 * 7 * 7, 1);
  s.w.kh = s.w.kw = 7;
  s.p.geometry.pad_top = s.p.geometry.pad_left = s.p.geometry.pad_bottom = s.p.geometry.pad_right =
      3;
  expect_op_error(s, ctx(), op,
                  "a 7x7 kernel over 8 float input channels is 98 taps x channel words; the "
                  "quantizing load unrolls at most 64");
}

}  // namespace
}  // namespace vkd_test
