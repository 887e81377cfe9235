// Quantized linear: q8ta_linear (int8x4 activations x int8 per-channel weights, int32
// accumulation with the packed int8 dot product) and q8csw_linear (float activations, int8
// weights dequantized in the shader, float accumulation).
//
// Arithmetic of q8ta_linear, defined so that a CPU reference reproduces it bit for bit:
//   acc[m][n]  = sum_k qx[m][k] * qw[n][k] - zp_x * sum_k qw[n][k]            (int32, exact)
//   scale[n]   = float32(s_x * s_w[n])                                        (one float32 mul)
//   y[m][n]    = float32(float32(acc) * scale[n]) + bias[n]                   (two roundings, no
//   FMA) float output: y.   int8 output: q[m][n]    = clamp(roundEven(float32(y * inv_y)) + zp_y,
//   act_min, act_max), inv_y = float32(1/s_y) (the output quantize is q8ta_quantize's rounding;
//   act_min/act_max encode relu/clamp and lie within [-128, 127]).
// q8ta_linear_add: that int8 value q is then q8ta_add's operand a (runtime/ops/Elementwise.h),
// with b an int8 tensor of the output's sizes read from memory: the sum requantized with the
// add's output parameters and clamped to its activation range, in the same kernel.
// q8ta_linear_dq_add: the float output y plus r, a float32 tensor of the output's sizes:
//   out[m][n] = float32(y[m][n] + r[m][n])                                   (one more rounding)
// which is float_add's a + 1 * b on q8ta_linear_dq's output, bit for bit (either operand order).
// q8ta_linear_gelu: the int8 output of gelu(y) instead of y: g = gelu(y) in float32 (the erf or
// the tanh form; shaders/common/gelu.glslh, an approximation of erf within 4.5e-7), then the
// output quantize as above: within 1 of q8ta_linear_dq -> gelu -> q8ta_quantize, and equal
// except where g * inv_y lies within ~1e-5 of a rounding tie.
// q8csw_linear: y[m][n] = float32(sum_k x[m][k] * float(qw[n][k])) * s_w[n] + bias[n], float
// accumulation in k order per invocation (not bit-exact against a CPU sum in another order).
// q8da_linear (torchao's Int8DynamicActivationInt8WeightConfig): float32 input rows quantized at
// run time, one symmetric scale per row (choose_qparams_affine SYMMETRIC, block [1, K], then
// quantize_affine, runtime/ops/AffineQuant.h's arithmetic, in one dispatch:
// shaders/q8da_quantize_rows.glsl), zero point 0:
//   acc[m][n]  = sum_k qx[m][k] * qw[n][k]                                    (int32, exact)
//   y[m][n]    = float32(float32(float32(acc) * s_x[m]) * s_w[n]) + bias[n]   (three roundings)
// which is torchao's int_scaled_matmul then `* w_scales` then `+ bias`, so the output equals
// torchao's CPU result bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

class OpCall;

// Host weights of a linear layer: int8 [N, K] row-major, per-output-channel symmetric scales
// [N], optional bias [N] (nullptr = zeros). The pointers must stay valid until the graph's
// prepare() returns (the weights are packed on the CPU then), unless `owner` holds them.
struct LinearWeights {
  const int8_t* weight = nullptr;
  const float* scales = nullptr;
  const float* bias = nullptr;
  int64_t n = 0, k = 0;
  // Set when the caller built `weight` itself (q8ta_conv2d's im2col route reorders the conv
  // weights into this [N, K] matrix): the constants' packers keep a copy of the struct, so
  // the matrix lives until prepare() has packed them and is freed then.
  std::shared_ptr<const void> owner;
};

// Which kernel runs a q8ta_linear. Auto picks GEMV for M <= 4 rows; then, on a GPU (not a
// device with CPU kernels), SplitK where the GEMM's 128 x 128 tiles are few and K long
// (ConvPlan.cpp: use_split_k); otherwise the cooperative-matrix kernel where the device has int8
// 16x16x32 NV cooperative matrices and 32-wide subgroups, else the tiled dot-product GEMM. On
// a device without the int8 dot product GEMM, SplitK and GEMV use the emulated dot product.
// SplitK: the dot-product GEMM with K split into slices (a grid dimension) whose int32 partial
// sums meet in a zero-initialised scratch buffer through atomics; the last slice of a tile to
// arrive runs the epilogue (bit-identical to Gemm) and zeroes the scratch for the next execution
// (shaders/q8ta_linear_gemm.glsl). Asking for CoopMat on a device without it, or SplitK on a
// device without 256-invocation workgroups or Device-scope atomics, is an Unsupported error;
// SplitK with a slice count above K's 32-value stages is an InvalidArgument error.
enum class LinearRoute { Auto, Gemm, Gemv, CoopMat, SplitK };
std::string to_string(LinearRoute route);

// "" when the device can run the cooperative-matrix kernel (int8 16x16x32 NV cooperative
// matrices, 8 subgroups of 32 in a 256-invocation workgroup), else what it lacks.
std::string linear_coopmat_unavailable(const vk::DeviceProfile& profile);

// The residual add of q8ta_linear_add / q8ta_conv2d_add, computed in the op's epilogue: the
// op's requantized int8 output (its `output` parameters and activation range) is q8ta_add's a,
// `other` its b (an int8x4 tensor of the output's sizes and layout), and the kernel writes
// clamp(roundEven((float(a - zp_a) * s_a + float(b - zp_b) * s_b) * inv_s) + zp, min, max),
// q8ta_add's arithmetic (shaders/common/requant.glslh, binary_word).
struct ResidualAdd {
  graph::ValueRef other = -1;
  QuantParams other_quant;
  QuantParams output;             // the sum's quantization (the output tensor's)
  int32_t activation_min = -128;  // the sum's relu / clamp
  int32_t activation_max = 127;
};

// The GELU of q8ta_linear_gelu's epilogue: PyTorch's approximate 'none' (erf) or 'tanh'.
enum class LinearGelu { None, Erf, Tanh };

struct LinearParams {
  QuantParams input;                  // scale and zero point of the int8 input
  std::optional<QuantParams> output;  // requantized int8 output; nullopt = float32 output
  int32_t activation_min = -128;      // int8 output only: fused relu / clamp
  int32_t activation_max = 127;
  LinearRoute route = LinearRoute::Auto;
  // SplitK: the K slices (0 = chosen by the op); for tests and tuning. Ignored by other routes.
  int32_t split_k_slices = 0;
  // CoopMat: the output channels per workgroup, 32 or 128, and its rows, 16 or 32 (the short
  // tiles, then 32 channels) or 128 (0 = chosen by the shape); for tests and tuning. Ignored by
  // other routes.
  int32_t coopmat_tile_n = 0;
  int32_t coopmat_tile_m = 0;
  std::optional<ResidualAdd> residual;  // int8 output only: q8ta_linear_add
  // Float output only: one float32 activation scale per row (a buffer of M), applied before
  // s_w[n] (q8da_linear's epilogue, OUT_DTYPE 3); `input` must then be scale 1, zero point 0.
  graph::ValueRef row_scales = -1;
  // With row_scales: they and `input` are views of one tensor, the scales after the rows at a
  // multiple of 16 bytes; the kernel reads both through binding 1 (OUT_DTYPE 8: a device of 4
  // storage buffers a stage).
  bool row_scales_after_rows = false;
  // Float output only: a float32 buffer of the output's sizes added to y (q8ta_linear_dq_add,
  // OUT_DTYPE 4).
  graph::ValueRef float_residual = -1;
  // Int8 output only, without `residual`: GELU of y before the quantize (q8ta_linear_gelu,
  // OUT_DTYPE 5 / 6); activation_min / max then only clamp the quantized GELU.
  LinearGelu gelu = LinearGelu::None;
  // Int8 output only, without residual, GELU or activation range (q8ta_linear_qkv, OUT_DTYPE
  // 7): the N channels are output_blocks.size() equal column blocks (each a multiple of 4), block
  // b written with output_blocks[b] (Q, K and V as one GEMM, the bytes of one q8ta_linear per
  // block); `output` must be set and is then unused.
  std::vector<QuantParams> output_blocks;
};

// `input`: int8x4 buffer PackedInt8_4H4W, sizes [..., M, K] (leading dims are flattened into
// rows; rank 1 is one row). `output`: sizes [..., M, N]; int8x4 buffer PackedInt8_4H4W when
// p.output is set (padding lanes hold its zero point), else float32 buffer width-packed.
// p.residual (q8ta_linear_add): its `other` an int8x4 4H4W buffer of the output's sizes.
void add_q8ta_linear_node(graph::ComputeGraph& graph, graph::ValueRef input,
                          const LinearWeights& weights, graph::ValueRef output,
                          const LinearParams& p);

// The per-channel epilogue constant of the int8 GEMM-like ops (shaders/common/
// quant_epilogue.glslh): [wsum | float32(s_x * s_w[n]) | bias] over 4 * ceil(N / 4) channels,
// wsum[n] the sum of row n of the [N, K] weights; packed during prepare(). With `output_blocks`
// (LinearParams'), two more rows: float32(1 / s_y) and zp_y of the block holding channel n.
graph::ValueRef add_channel_constants(graph::ComputeGraph& graph, const LinearWeights& w,
                                      float input_scale, const std::string& name,
                                      const std::vector<QuantParams>& output_blocks = {});

// Specialization constant 3 of the kernels that include quant_epilogue.glslh: 1 when at most
// 128 products make an output (|acc - zp_x * wsum| <= 128 * 128 * 255 < 2^22), which lets the
// epilogue convert the accumulator through the float mantissa instead of a conversion
// instruction; else 0. Always 0 where the profile wants compact kernels (CPU devices: one
// pipeline per kernel instead of two, the same results).
uint32_t epilogue_acc_below_2_22(const vk::DeviceProfile& profile, int64_t products_per_output);

// A convolution's int8 output written pixel-shuffled by add_q8ta_linear_rows_node (q8ta_conv2d_ps
// through the pointwise and im2col routes): its rows are the 4W4C pixels of `image_rows` image
// rows per image, its N = C r^2 channels in phase-major order (channel (i r + j) C + c is the
// convolution's channel c r^2 + i r + j; the caller permutes the weights so), C a multiple of
// 4; the output is the [N_img, C, H r, W r] 4W4C tensor (shaders/common/linear_common.glslh).
// upscale 1: the rows' own block structure.
struct RowsShuffle {
  int32_t upscale = 1;
  int64_t image_rows = 1;
};

// The convolution geometry of an implicit im2col input (q8ta_conv2d's Im2col route, implicit
// form): mirrors Im2colGeometry in shaders/common/im2col_gather.glslh, which gathers the im2col
// matrix's blocks from the convolution's input (q8ta_im2col.glsl's push constants hold it too).
struct Im2colGeometry {
  int32_t c4_in, h_in, w_in;
  int32_t h_out, w_out;
  int32_t kw;
  int32_t stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
};

// add_q8ta_linear_rows_node's input as a convolution's int8x4 input (4W4C, else 4C1W) whose
// im2col matrix the kernel gathers inside its loads instead of reading a matrix from memory:
// the rows are then the convolution's output pixels (groups = N * H_out, rows = W_out) and K
// the matrix's (im2col_gather.glslh). Only the cooperative-matrix, dot-product GEMM and
// split-K kernels have this form (linear_gathers_im2col).
// `window`: instead of the linear kernel, q8ta_conv2d_coopmat.glsl (a 4W4C input, the
// cooperative-matrix route), which stages each kernel row's input pixels in shared memory once
// and reads every tap's fragments from there (conv_window_unfit says where it fits).
struct Im2colInput {
  bool in_4w4c = true;
  Im2colGeometry geometry{};
  bool window = false;
};

// "" when q8ta_conv2d_coopmat.glsl (Im2colInput::window) can run convolution `g` (KW taps) on
// `profile` through GEMM route `route`, else what it needs: a 4W4C input, the cooperative-matrix
// route, stride and dilation along the width at most 2, and its shared memory.
std::string conv_window_unfit(const vk::DeviceProfile& profile, LinearRoute route, bool in_4w4c,
                              const Im2colGeometry& g);

// q8ta_conv2d_coopmat.glsl's grid for convolution `g` over `image_rows` image rows (N * H_out)
// into `n` output channels with `k4` K words (every tap's C4_in): workgroups along x (channel
// blocks) and y (pairs of row segments), and the K chunks each walks in turn.
struct ConvWindowGrid {
  int64_t groups_x = 0, groups_y = 0, chunks = 0;
  int64_t workgroups() const { return groups_x * groups_y; }
};
ConvWindowGrid conv_window_grid(const Im2colGeometry& g, int64_t image_rows, int64_t n, int64_t k4);

// The kernels of add_q8ta_linear_node over int8x4 buffers whose 16-byte block (row block rb,
// k4) at rb * K4 + k4 holds 4 rows x 4 K values (component = row, byte lane = K): 4H4W, and
// also 4W4C, whose rows are pixels (4 widths of one image row) and K its channels, so a 1x1
// convolution is this GEMM. `groups` groups of `rows` real rows, each padded to a multiple of
// 4; the output has the same block structure with N for K (int8; or is pixel-shuffled, see
// RowsShuffle) or is float32 [groups * rows, N]. No tensor checks: the caller's. Returns the
// route taken.
// With `im2col`, `input` is that convolution input (see Im2colInput); the chosen kernel must
// have the form (linear_gathers_im2col), else an Internal error.
LinearRoute add_q8ta_linear_rows_node(graph::ComputeGraph& graph, const std::string& op,
                                      graph::ValueRef input, int64_t groups, int64_t rows,
                                      const LinearWeights& weights, graph::ValueRef output,
                                      const LinearParams& p, const RowsShuffle& shuffle = {},
                                      const std::optional<Im2colInput>& im2col = std::nullopt);
// The same running `kernel`, a plan_linear_kernel of these rows, N, K and parameters
// (runtime/ops/ConvPlan.h; the convolution's plan decides it once).
struct LinearKernel;
LinearRoute add_q8ta_linear_rows_node(graph::ComputeGraph& graph, const std::string& op,
                                      graph::ValueRef input, int64_t groups, int64_t rows,
                                      const LinearWeights& weights, graph::ValueRef output,
                                      const LinearParams& p, const LinearKernel& kernel,
                                      const RowsShuffle& shuffle = {},
                                      const std::optional<Im2colInput>& im2col = std::nullopt);

// Whether `route`, on `profile`, has a kernel that gathers an implicit im2col input: the
// cooperative-matrix and split-K kernels, and the dot-product GEMM where it is not the CPU
// GEMM (q8ta_linear_cpu.glsl reads whole matrix blocks) nor GEMV.
bool linear_gathers_im2col(const vk::DeviceProfile& profile, LinearRoute route);

// Checks a fused residual add's operand and quantization against `output` (op `op`):
// `other` an int8x4 tensor of the output's sizes and layout; InvalidArgument otherwise.
void check_residual_add(const std::string& op, const graph::ComputeGraph& graph,
                        graph::ValueRef output, const ResidualAdd& r);

// The way down of a fused residual add (q8ta_linear_add, q8ta_conv2d_add, the 1x1 of
// q8ta_conv2d_dw_pw_add's split form; q8ta_linear_dq_add's float residual): its kernels bind
// the op's kResidualKernelBuffers storage buffers (output, input, weights, channel constants
// and the added tensor), one more than a device at the Android baseline's 4 a stage allows.
// There the op writes its int8 output (`quant`, its activation range applied) into a tensor of
// its own and q8ta_add adds `other`: the epilogue's arithmetic (ResidualAdd), the same bits,
// one dispatch more (a float output: float_add).
inline constexpr uint32_t kResidualKernelBuffers = 5;
bool residual_add_separately(const vk::DeviceProfile& profile);
// The op's output before the add (the output's spec; the way down recorded under `op`) and,
// after the op's own nodes, q8ta_add of it and r.other into `output`.
graph::ValueRef add_before_residual_tensor(graph::ComputeGraph& graph, const std::string& op,
                                           graph::ValueRef output);
void add_separate_residual_add(graph::ComputeGraph& graph, graph::ValueRef before_add,
                               const QuantParams& quant, const ResidualAdd& r,
                               graph::ValueRef output);

// The residual add of a q8ta_conv2d_add / q8ta_linear_add blob op: `other`, its quantization,
// the sum's (`output`) and its activation range; records the zero points of `other` and
// `output`.
ResidualAdd residual_add(const OpCall& call);

// q8da_linear. `input`, `output`: float32 buffers width-packed, sizes [..., K] and [..., N].
// quant_min / quant_max: the activation's int8 range (symmetric: quant_min + quant_max + 1 in
// {-1, 0, 1}, so the zero point is 0), eps: choose_qparams_affine's scale floor (finite, > 0).
// Adds q8da_quantize_rows (the rows' scales and int8x4 4H4W rows) and the linear kernel with the
// per-row epilogue; `route` as LinearParams' (Auto for the blob op).
void add_q8da_linear_node(graph::ComputeGraph& graph, graph::ValueRef input,
                          const LinearWeights& weights, graph::ValueRef output, int32_t quant_min,
                          int32_t quant_max, float eps, LinearRoute route = LinearRoute::Auto);

// `input`, `output`: float32 buffer width-packed, sizes [..., K] and [..., N].
void add_q8csw_linear_node(graph::ComputeGraph& graph, graph::ValueRef input,
                           const LinearWeights& weights, graph::ValueRef output);

}  // namespace vkd::ops
