// The convolution plan: one pure function (plan_conv2d) decides, once, how a q8ta_conv2d runs —
// its route, the kernel and variant, the linear kernel's tile, the depthwise mapping and the
// dispatch grid — from a plain description of the problem and the device profile; the builders
// (add_q8ta_conv2d_node, add_q8ta_linear_rows_node) only execute the plan. plan_linear_kernel is
// the same for the linear kernels (q8ta_linear's, and the convolution's GEMMs). The thresholds
// both decide with are one tuning table per device class (ConvTuning), their measurements in
// docs/BENCHMARKS.md, "Convolution plan thresholds". No GPU needed: test/unit/test_conv_plan.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/ops/Conv2d.h"
#include "runtime/ops/Linear.h"
#include "runtime/vk/DeviceProfile.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {

// The devices with a tuning table of their own (not core/DeviceClass.h's classes of limits).
// CpuKernels: a device running the kernels shaped for a CPU (DeviceProfile::cpu_kernels, Mesa
// lavapipe); Gpu: everything else.
enum class TuningClass { Gpu, CpuKernels };
TuningClass tuning_class(const vk::DeviceProfile& profile);

// The thresholds of the convolution and linear kernel choices. Each member's measurements:
// docs/BENCHMARKS.md, "Convolution plan thresholds", under the member's name.
struct ConvTuning {
  // Route. Auto takes im2col + GEMM for a groups-1 convolution summing at least this many
  // products per output (partitioner_schema/ConvRoutes.h's kIm2colMinProducts, which the
  // compiler's fusions share), while its matrix stays under im2col_max_bytes.
  int64_t im2col_min_products = 0;
  uint64_t im2col_max_bytes = 0;
  // Pointwise route on the direct kernel where K is short: C_in <= pointwise_direct_max_c_in;
  // C_in <= pointwise_direct_shuffled_max_c_in with a pixel-shuffled output; C_out <=
  // pointwise_direct_few_out_max_c_out with C_in <= pointwise_direct_few_out_max_c_in.
  bool pointwise_direct = false;
  int64_t pointwise_direct_max_c_in = 0;
  int64_t pointwise_direct_shuffled_max_c_in = 0;
  int64_t pointwise_direct_few_out_max_c_out = 0;
  int64_t pointwise_direct_few_out_max_c_in = 0;
  // Im2col forms: the implicit gather also on the cooperative-matrix kernel's narrow tile; the
  // window form where its grid has at least window_min_groups workgroups and K at most
  // window_max_chunks chunks.
  bool implicit_im2col_narrow_coopmat = false;
  int64_t window_min_groups = 0;
  int64_t window_max_chunks = 0;
  // Depthwise: one dot product per kernel row (Auto); the mapping's invocation floors
  // (log2): a 4W4C input per tap, with row dot products, and a 4C1W input.
  bool depthwise_row_dots = false;
  int depthwise_min_invocations_log2 = 0;
  int depthwise_row_dots_min_invocations_log2 = 0;
  int depthwise_4c1w_min_invocations_log2 = 0;
  // q8ta_conv2d_fq: output channel blocks per invocation.
  int64_t fq_channel_blocks = 0;
  // Linear kernels. Split-K (Auto) where the GEMM has fewer than split_k_max_tiles 128 x 128
  // tiles and K >= split_k_min_k, aiming at split_k_groups workgroups of at least
  // split_k_min_stages stages; the cooperative-matrix narrow tile where N4 <= narrow_max_n4,
  // or K <= narrow_max_k with fewer than narrow_max_wide_tiles wide tiles; the short tile
  // (32 x 32, K split over its 4 subgroups) where the narrow tiles are fewer than
  // short_max_narrow_tiles (0: never), over 8 subgroups where its own tiles are fewer than
  // short_split8_max_tiles (and the device has its 30 or 40 KiB of shared memory), its tiles 16
  // rows high (not 32) where the rows are at most short16_max_rows.
  bool split_k = false;
  int64_t split_k_max_tiles = 0;
  int64_t split_k_min_k = 0;
  int64_t split_k_groups = 0;
  int64_t split_k_min_stages = 0;
  int64_t narrow_max_n4 = 0;
  int64_t narrow_max_k = 0;
  int64_t narrow_max_wide_tiles = 0;
  int64_t short_max_narrow_tiles = 0;
  int64_t short_split8_max_tiles = 0;
  int64_t short16_max_rows = 0;
  // The fused convolution ops' Auto forms. q8ta_conv2d_dw_pw: fused up to dw_pw_max_fused_out
  // output channels and, with an expansion, C_x x C up to dw_pw_max_expansion_products;
  // q8ta_conv2d_ps_pw_q_dq fused where it fits.
  bool dw_pw_fused = false;
  int64_t dw_pw_max_fused_out = 0;
  int64_t dw_pw_max_expansion_products = 0;
  bool shuffled_head_fused = false;
};
const ConvTuning& conv_tuning(TuningClass device);
inline const ConvTuning& conv_tuning(const vk::DeviceProfile& profile) {
  return conv_tuning(tuning_class(profile));
}

// --- the linear kernels ------------------------------------------------------------

// What a linear kernel multiplies: `groups` groups of `rows` real rows (each padded to a
// multiple of 4) by N4 x K4 words of weights, into OUT_DTYPE `out_form` (linear_common.glslh:
// 0 int8, 1 float, 2 int8 + residual add); the route, split-K slices and cooperative-matrix
// tile asked for (Auto / 0 = chosen); `im2col`: the input is a convolution's, gathered.
struct LinearProblem {
  int64_t groups = 1, rows = 1, n4 = 1, k4 = 1;
  int out_form = 0;
  LinearRoute route = LinearRoute::Auto;
  int32_t split_k_slices = 0;
  int32_t coopmat_tile_n = 0;
  int32_t coopmat_tile_m = 0;
  std::optional<Im2colInput> im2col;
};

// The cooperative-matrix kernel's tiles, numbered as q8ta_linear_coopmat.glsl's TILE: 128 x
// 128 (Wide), 128 x 32 (Narrow), 32 x 32 with K over 4 subgroups (Short) or over 8
// (ShortSplit8), and those two with 16 x 32 tiles (Short16, Short16Split8: the planner's short
// tiles; the 32-row ones only when asked for).
enum class LinearTile {
  Wide = 0,
  Narrow = 1,
  Short = 2,
  ShortSplit8 = 3,
  Short16 = 4,
  Short16Split8 = 5
};

// The kernel, variant, tile and grid of a linear problem.
struct LinearKernel {
  LinearRoute route = LinearRoute::Auto;
  shaders::Kernel kernel{};
  vk::DispatchPlan plan;
  bool compact_constant = false;  // the kernel has COMPACT (q8ta_linear_gemm.glsl's constant 7)
  LinearTile tile = LinearTile::Wide;  // CoopMat: its tile
  bool short_tile() const { return tile >= LinearTile::Short; }
  bool split8() const {
    return tile == LinearTile::ShortSplit8 || tile == LinearTile::Short16Split8;
  }
};

// The one place the linear tiles and workgroups are chosen; the errors of a route asked for
// that the device cannot run (Unsupported / InvalidArgument naming `op`).
LinearKernel plan_linear_kernel(const std::string& op, const LinearProblem& problem,
                                const vk::DeviceProfile& profile);

// --- the convolution ---------------------------------------------------------------

// A q8ta_conv2d as plain data: what the plan reads.
struct ConvProblem {
  std::string op;  // the op's name, for errors
  Dims4 in;        // the input's sizes
  Dims4 out;       // the convolution's own output (before a pixel shuffle by `upscale`)
  MemoryLayout in_layout = MemoryLayout::PackedInt8_4W4C;
  MemoryLayout out_layout = MemoryLayout::PackedInt8_4W4C;
  int64_t out_channels = 0, in_per_group = 0, kh = 0, kw = 0;  // the weights' shape
  Conv2dGeometry geometry;
  bool quantize_input = false;     // q8ta_conv2d_fq: a float input quantized on load
  bool int8_output = true;         // else a float32 output (q8ta_conv2d_dq)
  bool dequantize_output = false;  // q8ta_conv2d_q_dq
  bool residual = false;           // q8ta_conv2d_add
  int32_t upscale = 1;             // q8ta_conv2d_ps
  // Asked for (tests and tuning; Conv2dParams has each one's meaning): Auto / 0 = chosen.
  Conv2dRoute route = Conv2dRoute::Auto;
  LinearRoute gemm = LinearRoute::Auto;
  int32_t gemm_slices = 0;
  int32_t coopmat_tile_n = 0;
  Im2colForm im2col_form = Im2colForm::Auto;
  int32_t depthwise_rows = 0, depthwise_tiles_w = 0;
  Conv2dParams::DepthwiseProducts depthwise_products = Conv2dParams::DepthwiseProducts::Auto;
};

// The problem of add_q8ta_conv2d_node's arguments: `in` / `out` the tensors' specs, `conv_out`
// the convolution's own output sizes.
ConvProblem conv_problem(const std::string& op, const TensorSpec& in, const TensorSpec& out,
                         const Dims4& conv_out, const Conv2dWeights& w, const Conv2dParams& p);

// How a convolution runs. `linear`: the linear kernels run it (`gemm`: the Pointwise route off
// the direct kernel, and the Im2col route: over the input's windows in `im2col_form`, gathered
// with `im2col_geometry`; Explicit: q8ta_im2col `im2col_kernel` over `im2col_dispatch` first).
// Else one kernel of the direct family, `kernel` over `dispatch`: the direct kernel (also the
// Pointwise route's short K), the depthwise kernel with its mapping and products, or the
// quantizing-load direct kernel with `fq_channel_blocks`.
struct ConvPlan {
  Conv2dRoute route = Conv2dRoute::Direct;  // never Auto
  bool linear = false;
  LinearKernel gemm;
  Im2colForm im2col_form = Im2colForm::Auto;  // the Im2col route's form, never Auto
  Im2colGeometry im2col_geometry{};
  shaders::Kernel im2col_kernel{};
  vk::DispatchPlan im2col_dispatch;
  shaders::Kernel kernel{};
  vk::DispatchPlan dispatch;
  int64_t depthwise_rows = 1, depthwise_tiles_w = 1;
  bool depthwise_row_dots = false;
  int64_t fq_channel_blocks = 0;
};

// Decides the plan; a route, form, kernel or product asked for that does not fit is an
// InvalidArgument (the device lacking it: Unsupported) error naming problem.op and why.
ConvPlan plan_conv2d(const ConvProblem& problem, const vk::DeviceProfile& profile);

// The convolution's geometry as the im2col gather reads it (shaders/common/im2col_gather.glslh).
Im2colGeometry im2col_geometry(const ConvProblem& problem);
// K of the im2col matrix: every tap's C4_in whole channel words.
int64_t im2col_k(const ConvProblem& problem);

// q8ta_conv2d_fq's workgroup tile: kFqTileH x kFqTileW output pixels (FQ_TH, FQ_TW).
constexpr int64_t kFqTileH = 4;
constexpr int64_t kFqTileW = 16;

}  // namespace vkd::ops
