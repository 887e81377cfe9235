// The convolution plan without a GPU (runtime/ops/ConvPlan.h): for representative problems on
// each device class, the route, kernel variant, linear tile and grid plan_conv2d decides. Each
// expectation is worked out by hand from the rules and tuning tables (the comments show the
// arithmetic), so a changed threshold or rule fails here before it changes a model's kernels.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "core/Error.h"
#include "runtime/ops/ConvPlan.h"

namespace vkd_test {
namespace {

using vkd::Dims4;
using vkd::ErrorCode;
using vkd::MemoryLayout;
using vkd::ops::Conv2dRoute;
using vkd::ops::ConvPlan;
using vkd::ops::ConvProblem;
using vkd::ops::Im2colForm;
using vkd::ops::LinearRoute;
using vkd::ops::LinearTile;
using vkd::ops::plan_conv2d;
namespace variants = vkd::shaders::variants;
using Grid = std::array<uint32_t, 3>;

// A desktop GPU like the H100 the thresholds were measured on: int8 dot product, int8 16x16x32
// NV cooperative matrices, 32-wide subgroups, device-scope atomics.
vkd::vk::DeviceProfile desktop_gpu() {
  vkd::vk::DeviceProfile p;
  p.name = "desktop";
  p.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  p.int8_dot_product = p.int8_arithmetic = true;
  p.vulkan_memory_model = p.memory_model_device_scope = true;
  p.cooperative_matrix_nv = true;
  p.int8_cooperative_matrix_shapes = {{16, 16, 32, false}};
  p.subgroup_size = 32;
  p.subgroup_arithmetic = p.subgroup_shuffle = p.subgroup_ballot = true;
  p.max_workgroup_size = {1024, 1024, 64};
  p.max_workgroup_invocations = 1024;
  p.max_workgroup_count = {2147483647u, 65535, 65535};
  p.max_shared_memory_bytes = 49152;
  p.max_storage_buffer_range_bytes = uint64_t(4) << 30;
  return p;
}

// The same GPU without cooperative matrices: the dot-product GEMM.
vkd::vk::DeviceProfile dot_gpu() {
  vkd::vk::DeviceProfile p = desktop_gpu();
  p.cooperative_matrix_nv = false;
  return p;
}

// lavapipe: a CPU device running the CPU kernels, compact kernels, 8-wide subgroups, 128 MiB
// bindings.
vkd::vk::DeviceProfile cpu_device() {
  vkd::vk::DeviceProfile p = dot_gpu();
  p.name = "llvmpipe";
  p.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  p.cpu_kernels = p.compact_kernels = true;
  p.subgroup_size = 8;
  p.max_shared_memory_bytes = 32768;
  p.max_storage_buffer_range_bytes = uint64_t(128) << 20;
  return p;
}

// A batch-1 convolution c_in -> c_out over h x w, k x k, stride, symmetric padding, groups;
// int8 4W4C input and output.
ConvProblem conv(int64_t c_in, int64_t c_out, int64_t h, int64_t w, int64_t k, int32_t stride,
                 int32_t pad, int32_t groups = 1) {
  ConvProblem c;
  c.op = "q8ta_conv2d";
  c.out_channels = c_out;
  c.in_per_group = c_in / groups;
  c.kh = c.kw = k;
  c.geometry.stride_h = c.geometry.stride_w = stride;
  c.geometry.pad_top = c.geometry.pad_left = c.geometry.pad_bottom = c.geometry.pad_right = pad;
  c.geometry.groups = groups;
  c.in = Dims4{1, c_in, h, w};
  c.out = Dims4{1, c_out, vkd::ops::conv_out_size(h, pad, pad, 1, k, stride),
                vkd::ops::conv_out_size(w, pad, pad, 1, k, stride)};
  return c;
}

Grid groups_of(const vkd::vk::DispatchPlan& plan) { return plan.group_count; }
Grid local_of(const vkd::vk::DispatchPlan& plan) { return plan.local_size; }

// --- pointwise ------------------------------------------------------------------------------

TEST(ConvPlan, PointwiseShortKRunsTheDirectKernelOnAGpu) {
  // C_in 16 <= pointwise_direct_max_c_in: one output tile per invocation.
  const ConvPlan plan = plan_conv2d(conv(16, 96, 56, 56, 1, 1, 0), desktop_gpu());
  EXPECT_EQ(plan.route, Conv2dRoute::Pointwise);
  EXPECT_FALSE(plan.linear);
  EXPECT_EQ(plan.kernel, variants::q8ta_conv2d[0][0][0]);
  // 56 rows x 14 width tiles x 24 channel blocks = 18816 tiles, 128 per workgroup.
  EXPECT_EQ(groups_of(plan.dispatch), (Grid{147, 1, 1}));
}

TEST(ConvPlan, PointwiseFewOutputChannelsAtTheBoundary) {
  // C_out 22 <= 24 with C_in 48 <= 48: direct; C_in 52: the linear kernels.
  EXPECT_FALSE(plan_conv2d(conv(48, 22, 64, 64, 1, 1, 0), desktop_gpu()).linear);
  EXPECT_TRUE(plan_conv2d(conv(52, 22, 64, 64, 1, 1, 0), desktop_gpu()).linear);
  // A pixel-shuffled output keeps the direct kernel up to C_in 24.
  ConvProblem shuffled = conv(24, 96, 64, 36, 1, 1, 0);
  shuffled.upscale = 2;
  EXPECT_FALSE(plan_conv2d(shuffled, desktop_gpu()).linear);
  EXPECT_TRUE(plan_conv2d(conv(24, 96, 64, 36, 1, 1, 0), desktop_gpu()).linear);
}

TEST(ConvPlan, PointwiseOnCooperativeMatricesTakesTheNarrowTileForAShortK) {
  // Rows: 56 image rows of 56 pixels = 784 row blocks, 25 row tiles of 128; N4 24 (one wide
  // tile); K 64 <= 1024 with 25 < 64 wide tiles: the narrow 128 x 32 tile.
  const ConvPlan plan = plan_conv2d(conv(64, 96, 56, 56, 1, 1, 0), desktop_gpu());
  EXPECT_EQ(plan.route, Conv2dRoute::Pointwise);
  ASSERT_TRUE(plan.linear);
  EXPECT_EQ(plan.gemm.route, LinearRoute::CoopMat);
  EXPECT_EQ(plan.gemm.tile, LinearTile::Narrow);
  EXPECT_EQ(plan.gemm.kernel, variants::q8ta_linear_coopmat[0][1]);
  EXPECT_EQ(local_of(plan.gemm.plan), (Grid{128, 1, 1}));
  EXPECT_EQ(groups_of(plan.gemm.plan), (Grid{3, 25, 1}));
}

TEST(ConvPlan, PointwiseWithoutCooperativeMatricesRunsTheDotProductGemm) {
  const ConvPlan plan = plan_conv2d(conv(64, 96, 56, 56, 1, 1, 0), dot_gpu());
  ASSERT_TRUE(plan.linear);
  EXPECT_EQ(plan.gemm.route, LinearRoute::Gemm);
  EXPECT_EQ(plan.gemm.kernel, variants::q8ta_linear_gemm[0][0][0]);
  EXPECT_TRUE(plan.gemm.compact_constant);
  EXPECT_EQ(local_of(plan.gemm.plan), (Grid{16, 16, 1}));
  EXPECT_EQ(groups_of(plan.gemm.plan), (Grid{1, 25, 1}));
}

TEST(ConvPlan, PointwiseOnACpuDeviceRunsTheCpuGemm) {
  // Never the direct kernel there, even for a short K; 8 row blocks x 32 channels a workgroup.
  const ConvPlan plan = plan_conv2d(conv(16, 96, 56, 56, 1, 1, 0), cpu_device());
  EXPECT_EQ(plan.route, Conv2dRoute::Pointwise);
  ASSERT_TRUE(plan.linear);
  EXPECT_EQ(plan.gemm.route, LinearRoute::Gemm);
  EXPECT_EQ(plan.gemm.kernel, variants::q8ta_linear_cpu[0][1][1]);
  EXPECT_EQ(local_of(plan.gemm.plan), (Grid{8, 1, 1}));
  EXPECT_EQ(groups_of(plan.gemm.plan), (Grid{98, 3, 1}));
}

// --- depthwise ------------------------------------------------------------------------------

TEST(ConvPlan, DepthwiseMappingFollowsTheInvocationFloors) {
  // 1x64x256x256 3x3: 256 x 64 x 16 = 2^18 tiles. GPU: row dot products, floor 2^16: 2 rows x
  // 2 tiles (2^16 invocations).
  const ConvPlan gpu = plan_conv2d(conv(64, 64, 256, 256, 3, 1, 1, 64), desktop_gpu());
  EXPECT_EQ(gpu.route, Conv2dRoute::Depthwise);
  EXPECT_EQ(gpu.kernel, variants::q8ta_conv2d_dw[0][0][0]);
  EXPECT_TRUE(gpu.depthwise_row_dots);
  EXPECT_EQ(gpu.depthwise_rows, 2);
  EXPECT_EQ(gpu.depthwise_tiles_w, 2);
  EXPECT_EQ(groups_of(gpu.dispatch), (Grid{512, 1, 1}));  // 2^16 / 128
  // CPU device: one dot product per tap, floor 2^17: 1 row x 2 tiles.
  const ConvPlan cpu = plan_conv2d(conv(64, 64, 256, 256, 3, 1, 1, 64), cpu_device());
  EXPECT_FALSE(cpu.depthwise_row_dots);
  EXPECT_EQ(cpu.depthwise_rows, 1);
  EXPECT_EQ(cpu.depthwise_tiles_w, 2);
  // A small layer keeps one tile per invocation.
  const ConvPlan small = plan_conv2d(conv(96, 96, 56, 56, 3, 1, 1, 96), desktop_gpu());
  EXPECT_EQ(small.depthwise_rows, 1);
  EXPECT_EQ(small.depthwise_tiles_w, 1);
}

TEST(ConvPlan, Depthwise4C1WKeepsOneTileAndLaneMasks) {
  // 2^18 tiles: 4 rows leave 2^16 < 2^18 invocations, 2 rows 2^17: 1 row.
  ConvProblem c = conv(64, 64, 256, 256, 3, 1, 1, 64);
  c.in_layout = c.out_layout = MemoryLayout::PackedInt8_4C1W;
  const ConvPlan plan = plan_conv2d(c, desktop_gpu());
  EXPECT_EQ(plan.kernel, variants::q8ta_conv2d_dw[1][1][0]);
  EXPECT_FALSE(plan.depthwise_row_dots);
  EXPECT_EQ(plan.depthwise_rows, 1);
  EXPECT_EQ(plan.depthwise_tiles_w, 1);
}

TEST(ConvPlan, DepthwiseWithAFusedStoreRunsTheDirectKernel) {
  ConvProblem c = conv(32, 32, 28, 28, 3, 1, 1, 32);
  c.dequantize_output = true;
  const ConvPlan plan = plan_conv2d(c, desktop_gpu());
  EXPECT_EQ(plan.route, Conv2dRoute::Direct);
  EXPECT_EQ(plan.kernel, variants::q8ta_conv2d[0][5][0]);
}

// --- im2col vs direct -----------------------------------------------------------------------

TEST(ConvPlan, Im2colFromSixtyFourProductsPerOutput) {
  // A 1x1 stride-2 convolution (not pointwise): 63 products direct, 64 im2col.
  EXPECT_EQ(plan_conv2d(conv(63, 128, 28, 28, 1, 2, 0), desktop_gpu()).route, Conv2dRoute::Direct);
  const ConvPlan plan = plan_conv2d(conv(64, 128, 28, 28, 1, 2, 0), desktop_gpu());
  EXPECT_EQ(plan.route, Conv2dRoute::Im2col);
  // 14 x 14 outputs: 2 row tiles; K 64: the narrow cooperative-matrix tile, whose implicit
  // gather measured slower; the window's grid (14 workgroups) is under 100: explicit.
  EXPECT_EQ(plan.gemm.route, LinearRoute::CoopMat);
  EXPECT_EQ(plan.gemm.tile, LinearTile::Narrow);
  EXPECT_EQ(plan.im2col_form, Im2colForm::Explicit);
  EXPECT_EQ(plan.im2col_kernel, variants::q8ta_im2col[0]);
  EXPECT_EQ(plan.gemm.kernel, variants::q8ta_linear_coopmat[0][1]);
  // The same at 3x3 over 7 channels (63 products) and 8 (72).
  EXPECT_EQ(plan_conv2d(conv(7, 16, 32, 32, 3, 1, 1), desktop_gpu()).route, Conv2dRoute::Direct);
  EXPECT_EQ(plan_conv2d(conv(8, 16, 32, 32, 3, 1, 1), desktop_gpu()).route, Conv2dRoute::Im2col);
}

TEST(ConvPlan, Im2colSplitKGathersImplicitly) {
  // ResNet-18's 3x3 256 -> 256 at 14x14: K 2304, 4 tiles: split-K over 72 stages in 24 slices
  // (128 / 4 = 32 wanted, 3 stages each), its "_im2col" variant.
  const ConvPlan plan = plan_conv2d(conv(256, 256, 14, 14, 3, 1, 1), desktop_gpu());
  EXPECT_EQ(plan.route, Conv2dRoute::Im2col);
  EXPECT_EQ(plan.gemm.route, LinearRoute::SplitK);
  EXPECT_EQ(plan.im2col_form, Im2colForm::Implicit);
  EXPECT_EQ(plan.gemm.kernel, variants::q8ta_linear_gemm_im2col[0][0][0][1]);
  EXPECT_EQ(groups_of(plan.gemm.plan), (Grid{2, 2, 24}));
}

TEST(ConvPlan, Im2colWindowFormWhereItsGridIsLarge) {
  // 1x32x128x128 -> 64 3x3: 128 workgroups, 3 chunks; 128 wide tiles: the wide tile.
  const ConvPlan plan = plan_conv2d(conv(32, 64, 128, 128, 3, 1, 1), desktop_gpu());
  EXPECT_EQ(plan.route, Conv2dRoute::Im2col);
  EXPECT_EQ(plan.gemm.route, LinearRoute::CoopMat);
  EXPECT_EQ(plan.im2col_form, Im2colForm::Window);
  EXPECT_EQ(plan.gemm.kernel, variants::q8ta_conv2d_coopmat[0][0]);
  EXPECT_EQ(groups_of(plan.gemm.plan), (Grid{1, 128, 1}));
}

TEST(ConvPlan, Im2colOnACpuDeviceWritesTheMatrixFirst) {
  // The CPU GEMM reads whole matrix blocks: no implicit form.
  const ConvPlan plan = plan_conv2d(conv(256, 256, 14, 14, 3, 1, 1), cpu_device());
  EXPECT_EQ(plan.route, Conv2dRoute::Im2col);
  EXPECT_EQ(plan.gemm.route, LinearRoute::Gemm);
  EXPECT_EQ(plan.im2col_form, Im2colForm::Explicit);
  EXPECT_EQ(plan.gemm.kernel, variants::q8ta_linear_cpu[0][1][1]);
}

TEST(ConvPlan, Im2colOverTheDevicesBindingRunsDirect) {
  // 7x7 over 64 channels at 512x512: 512 x 128 x 784 x 16 bytes = 784 MiB > 256 MiB.
  EXPECT_EQ(plan_conv2d(conv(64, 64, 512, 512, 7, 1, 3), desktop_gpu()).route, Conv2dRoute::Direct);
}

// --- the quantizing load, asked routes --------------------------------------------------------

TEST(ConvPlan, QuantizingStemChannelBlocksPerDeviceClass) {
  ConvProblem c = conv(3, 32, 224, 224, 3, 2, 1);
  c.quantize_input = true;
  c.in_layout = MemoryLayout::WidthPacked;
  // 112 x 112 outputs: 7 tiles of 16 widths x 8 channel blocks (GPU: 1 per invocation, CPU: 2)
  // by 28 tiles of 4 rows.
  const ConvPlan gpu = plan_conv2d(c, desktop_gpu());
  EXPECT_EQ(gpu.route, Conv2dRoute::Direct);
  EXPECT_EQ(gpu.kernel, variants::q8ta_conv2d_fq[0][0][0]);
  EXPECT_EQ(gpu.fq_channel_blocks, 1);
  EXPECT_EQ(local_of(gpu.dispatch), (Grid{64, 1, 1}));
  EXPECT_EQ(groups_of(gpu.dispatch), (Grid{56, 28, 1}));
  const ConvPlan cpu = plan_conv2d(c, cpu_device());
  EXPECT_EQ(cpu.fq_channel_blocks, 2);
  EXPECT_EQ(groups_of(cpu.dispatch), (Grid{28, 28, 1}));
}

TEST(ConvPlan, AskedRoutesThatDoNotFitAreRefused) {
  ConvProblem c = conv(8, 16, 32, 32, 3, 1, 1);
  c.route = Conv2dRoute::Pointwise;
  try {
    plan_conv2d(c, desktop_gpu());
    FAIL() << "a 3x3 pointwise route was planned";
  } catch (const vkd::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("pointwise route needs a 1x1 kernel"), std::string::npos);
  }
  c.route = Conv2dRoute::Im2col;
  c.im2col_form = Im2colForm::Implicit;
  EXPECT_THROW(plan_conv2d(c, cpu_device()), vkd::Error);  // no implicit form on the CPU GEMM
}

// --- the linear kernels ----------------------------------------------------------------------

// A q8ta_linear of `rows` rows, K -> N (int8 output), the route and tiles asked for.
vkd::ops::LinearProblem linear(int64_t rows, int64_t k, int64_t n,
                               LinearRoute route = LinearRoute::Auto) {
  vkd::ops::LinearProblem lp;
  lp.rows = rows;
  lp.k4 = (k + 3) / 4;
  lp.n4 = (n + 3) / 4;
  lp.route = route;
  return lp;
}

TEST(LinearPlan, FewRowsTakeTheShortCooperativeMatrixTileOverSplitK) {
  // MiniLM's FFN output at 128 tokens, 128 x 1536 -> 384: one row tile, 12 narrow tiles (< 64);
  // split-K's bounds hold too (3 wide tiles, K >= 1024), but the short tile goes first.
  const auto k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(128, 1536, 384), desktop_gpu());
  EXPECT_EQ(k.route, LinearRoute::CoopMat);
  EXPECT_TRUE(k.short_tile());
  EXPECT_EQ(groups_of(k.plan), (Grid{12, 8, 1}));  // 32 channels x 16 rows each
  // 512 x 384 -> 1536: 4 row tiles x 48 narrow tiles = 192: the narrow tile (K <= 1024).
  const auto wide =
      vkd::ops::plan_linear_kernel("q8ta_linear", linear(512, 384, 1536), desktop_gpu());
  EXPECT_EQ(wide.route, LinearRoute::CoopMat);
  EXPECT_EQ(wide.tile, LinearTile::Narrow);
  // Without cooperative matrices the same shape keeps split-K.
  EXPECT_EQ(vkd::ops::plan_linear_kernel("q8ta_linear", linear(128, 1536, 384), dot_gpu()).route,
            LinearRoute::SplitK);
}

TEST(LinearPlan, TheShortTileSplitsKOverEightSubgroupsOnSmallGrids) {
  // 128 x 1536 -> 384: 12 x 4 = 48 tiles of 32 x 32 (< 64): K over 8 subgroups, 16-row tiles
  // (TILE 5).
  auto k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(128, 1536, 384), desktop_gpu());
  EXPECT_EQ(k.tile, LinearTile::Short16Split8);
  EXPECT_TRUE(k.split8());
  EXPECT_EQ(k.kernel, variants::q8ta_linear_coopmat[0][5]);
  EXPECT_EQ(local_of(k.plan), (Grid{256, 1, 1}));
  // 128 x 384 -> 1152: 36 x 4 = 144 tiles: over 4 (TILE 4).
  k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(128, 384, 1152), desktop_gpu());
  EXPECT_EQ(k.tile, LinearTile::Short16);
  EXPECT_EQ(k.kernel, variants::q8ta_linear_coopmat[0][4]);
  EXPECT_EQ(local_of(k.plan), (Grid{128, 1, 1}));
  // More than 256 rows: 32-row tiles (512 x 384 -> 384: 192 tiles, over 4: TILE 2).
  k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(512, 384, 384), desktop_gpu());
  EXPECT_EQ(k.tile, LinearTile::Short);
  EXPECT_EQ(groups_of(k.plan), (Grid{12, 16, 1}));
  k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(256, 384, 384), desktop_gpu());
  EXPECT_EQ(k.tile, LinearTile::Short16);
  // The 32-row tiles when asked for: TILE 3 and TILE 2.
  vkd::ops::LinearProblem lp = linear(128, 1536, 384, LinearRoute::CoopMat);
  lp.coopmat_tile_m = 32;
  k = vkd::ops::plan_linear_kernel("q8ta_linear", lp, desktop_gpu());
  EXPECT_EQ(k.tile, LinearTile::ShortSplit8);
  EXPECT_EQ(k.kernel, variants::q8ta_linear_coopmat[0][3]);
  EXPECT_EQ(groups_of(k.plan), (Grid{12, 4, 1}));
  lp = linear(128, 384, 1152, LinearRoute::CoopMat);
  lp.coopmat_tile_m = 32;
  k = vkd::ops::plan_linear_kernel("q8ta_linear", lp, desktop_gpu());
  EXPECT_EQ(k.tile, LinearTile::Short);
  EXPECT_EQ(k.kernel, variants::q8ta_linear_coopmat[0][2]);
  // 63 tiles split over 8, 64 over 4: 9 x 7 (ViT-Ti's 197 rows, N 288) and 8 x 8 (256 x 256).
  EXPECT_TRUE(
      vkd::ops::plan_linear_kernel("q8ta_linear", linear(197, 768, 288), desktop_gpu()).tile ==
      LinearTile::Short16Split8);
  k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(256, 768, 256), desktop_gpu());
  EXPECT_EQ(k.tile, LinearTile::Short16);
  // Without the 30 KiB of shared memory (16 rows: 8 x (16 + 32) x 80 bytes): over 4.
  vkd::vk::DeviceProfile small = desktop_gpu();
  small.max_shared_memory_bytes = 30719;
  k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(128, 1536, 384), small);
  EXPECT_EQ(k.tile, LinearTile::Short16);
  small.max_shared_memory_bytes = 30720;
  k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(128, 1536, 384), small);
  EXPECT_EQ(k.tile, LinearTile::Short16Split8);
}

TEST(LinearPlan, TheGemvGivesEachSubgroupItsChannelsUpToK4096) {
  // One row, K = 4096 (1024 words) over 11008 channels: 2752 groups, 344 workgroups of 4
  // subgroups x 2 groups: the per-subgroup form (SG_REDUCE 2).
  auto k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(1, 4096, 11008), desktop_gpu());
  EXPECT_EQ(k.route, LinearRoute::Gemv);
  EXPECT_EQ(k.kernel, variants::q8ta_linear_gemv[0][0][2]);
  EXPECT_EQ(groups_of(k.plan), (Grid{344, 1, 1}));
  // K = 4100: past the bound, the workgroup's reduction (SG_REDUCE 1), 2 groups a workgroup.
  k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(1, 4100, 11008), desktop_gpu());
  EXPECT_EQ(k.kernel, variants::q8ta_linear_gemv[0][0][1]);
  EXPECT_EQ(groups_of(k.plan), (Grid{1376, 1, 1}));
  // A narrow N keeps the workgroup form on a GPU: 512 channels make 16 workgroups (< 128).
  k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(1, 4096, 512), desktop_gpu());
  EXPECT_EQ(k.kernel, variants::q8ta_linear_gemv[0][0][1]);
  // Without subgroup shuffles, no per-subgroup form.
  vkd::vk::DeviceProfile no_shuffle = desktop_gpu();
  no_shuffle.subgroup_shuffle = false;
  k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(1, 512, 9059), no_shuffle);
  EXPECT_EQ(k.kernel, variants::q8ta_linear_gemv[0][0][1]);
  k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(1, 512, 9059), desktop_gpu());
  EXPECT_EQ(k.kernel, variants::q8ta_linear_gemv[0][0][2]);
}

TEST(LinearPlan, TilesAskedForWinOverTheShortTile) {
  vkd::ops::LinearProblem lp = linear(128, 384, 384, LinearRoute::CoopMat);
  lp.coopmat_tile_n = 32;
  auto k = vkd::ops::plan_linear_kernel("q8ta_linear", lp, desktop_gpu());
  EXPECT_EQ(k.tile, LinearTile::Narrow);
  lp.coopmat_tile_n = 0;
  lp.coopmat_tile_m = 128;
  k = vkd::ops::plan_linear_kernel("q8ta_linear", lp, desktop_gpu());
  EXPECT_FALSE(k.short_tile());
  // The short tile asked for over many tiles: 4096 rows, 128 row tiles of 32 (256 of 16).
  lp = linear(4096, 64, 64, LinearRoute::CoopMat);
  lp.coopmat_tile_m = 32;
  k = vkd::ops::plan_linear_kernel("q8ta_linear", lp, desktop_gpu());
  EXPECT_TRUE(k.short_tile());
  EXPECT_EQ(groups_of(k.plan), (Grid{2, 128, 1}));
  lp.coopmat_tile_m = 16;
  k = vkd::ops::plan_linear_kernel("q8ta_linear", lp, desktop_gpu());
  EXPECT_EQ(k.tile, LinearTile::Short16);
  EXPECT_EQ(groups_of(k.plan), (Grid{2, 256, 1}));
}

TEST(LinearPlan, ShortTileRequestsThatCannotRunAreRefused) {
  vkd::ops::LinearProblem lp = linear(128, 384, 384, LinearRoute::CoopMat);
  for (const auto& [m, n] : {std::pair{32, 128}, std::pair{64, 0}}) {
    lp.coopmat_tile_m = m;
    lp.coopmat_tile_n = n;
    try {
      vkd::ops::plan_linear_kernel("q8ta_linear", lp, desktop_gpu());
      FAIL() << "tile " << m << " x " << n << " was planned";
    } catch (const vkd::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("tile height " + std::to_string(m)), std::string::npos)
          << e.what();
    }
  }
}

TEST(LinearPlan, MaliRunsTheRegisterTiledGemm) {
  // A GPU whose shared memory does not pay (register_tiled_gemm: Mali, the mali-g7x class) at
  // 128 invocations: the GEMM route takes the register-tiled kernel in its loads form (no
  // subgroup operation, no shared memory), 64 row blocks a workgroup, 32 channels per
  // invocation (16 for N <= 16); not the 256-invocation shared-memory GEMM, not GEMV.
  vkd::vk::DeviceProfile mali = dot_gpu();
  mali.name = "mali";
  mali.cooperative_matrix_nv = false;
  mali.int8_cooperative_matrix_shapes.clear();
  mali.max_workgroup_invocations = 128;
  mali.max_workgroup_size = {128, 128, 64};
  mali.register_tiled_gemm = true;
  // 512 x 384 -> 1536: 128 row blocks of 4 rows, 384 channel groups of 4.
  auto k = vkd::ops::plan_linear_kernel("q8ta_linear", linear(512, 384, 1536), mali);
  EXPECT_EQ(k.route, LinearRoute::Gemm);
  EXPECT_EQ(k.kernel, variants::q8ta_linear_cpu[0][1][0]);
  EXPECT_EQ(k.plan.local_size, (Grid{64, 1, 1}));
  EXPECT_EQ(groups_of(k.plan), (Grid{2, 48, 1}));  // 128 / 64 row blocks x 384 / 8 groups
  // N = 16: the 16-channel tile; float output: its variant.
  auto lp = linear(512, 384, 16);
  lp.out_form = 1;
  k = vkd::ops::plan_linear_kernel("q8ta_linear", lp, mali);
  EXPECT_EQ(k.kernel, variants::q8ta_linear_cpu[1][0][0]);
  // Without the flag the same device takes GEMV (no 256-invocation workgroup).
  mali.register_tiled_gemm = false;
  EXPECT_EQ(vkd::ops::plan_linear_kernel("q8ta_linear", linear(512, 384, 1536), mali).route,
            LinearRoute::Gemv);
}

}  // namespace
}  // namespace vkd_test
