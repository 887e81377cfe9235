// Op family: quantized 2-D convolution (q8ta_conv2d, q8ta_conv2d_dq, q8ta_conv2d_ps,
// q8ta_conv2d_add, q8ta_conv2d_q_dq, q8ta_conv2d_fq).
// Anatomy: push-constant struct (mirroring shaders/common/conv_common.glslh), checks, weight
// prepacking per route, each route's execution of the plan plan_conv2d decides
// (runtime/ops/ConvPlan.h), add_q8ta_conv2d_node, registry entries.
#include "runtime/ops/Conv2d.h"

#include <algorithm>
#include <memory>
#include <tuple>
#include <vector>

#include "core/Error.h"
#include "runtime/ops/ConvPlan.h"
#include "runtime/ops/Linear.h"
#include "runtime/ops/OpRegistry.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/common/conv_common.glslh.
struct Conv2dPush {
  int32_t batches, c4_in, h_in, w_in;
  int32_t c_out, c4_out, h_out, w_out;
  int32_t kh, kw, stride_h, stride_w;
  int32_t pad_top, pad_left, dilation_h, dilation_w;
  int32_t cin_per_group, cout_per_group;
  int32_t n_pad;
  int32_t in_zp, out_zp;
  float inv_out_scale;
  int32_t act_min, act_max;
};
// The same with the fused residual add's member (OUTPUT 3 / 4).
struct Conv2dAddPush {
  Conv2dPush conv;
  BinaryQuantPush add;
};
// The same with the dequantizing store's scale (OUTPUT 5, q8ta_conv2d_q_dq).
struct Conv2dDqPush {
  Conv2dPush conv;
  float out_scale;
};

// The same with the quantizing load's parameters (IN_LAYOUT LAYOUT_WIDTH_PACKED,
// q8ta_conv2d_fq).
struct Conv2dFqPush {
  Conv2dPush conv;
  int32_t c_in;
  float in_inv_scale;
  int32_t in_quant_min, in_quant_max;
};

// The bound that keeps int32 accumulation exact (as for q8ta_linear): taps per output.
constexpr int64_t kMaxTaps = 65536;

}  // namespace

int64_t conv_out_size(int64_t in, int32_t pad_a, int32_t pad_b, int32_t dilation, int64_t k,
                      int32_t stride) {
  const int64_t span = in + pad_a + pad_b - int64_t(dilation) * (k - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

void check_conv(const std::string& op, const Dims4& in, const Dims4& out, const Conv2dWeights& w,
                const Conv2dGeometry& g) {
  check_conv_weights(op, in.c, w, g.groups);
  VKD_CHECK(g.stride_h >= 1 && g.stride_w >= 1 && g.dilation_h >= 1 && g.dilation_w >= 1,
            ErrorCode::InvalidArgument, op, ": stride (", g.stride_h, ", ", g.stride_w,
            ") and dilation (", g.dilation_h, ", ", g.dilation_w, ") must be >= 1");
  VKD_CHECK(g.pad_top >= 0 && g.pad_left >= 0 && g.pad_bottom >= 0 && g.pad_right >= 0,
            ErrorCode::InvalidArgument, op, ": padding (top ", g.pad_top, ", left ", g.pad_left,
            ", bottom ", g.pad_bottom, ", right ", g.pad_right, ") must be >= 0");
  VKD_CHECK(w.in_per_group * w.kh * w.kw <= kMaxTaps, ErrorCode::Unsupported, op, ": ",
            w.in_per_group * w.kh * w.kw, " products per output exceed ", kMaxTaps,
            " (int32 accumulation could overflow)");
  const int64_t h_out =
      conv_out_size(in.h, g.pad_top, g.pad_bottom, g.dilation_h, w.kh, g.stride_h);
  const int64_t w_out =
      conv_out_size(in.w, g.pad_left, g.pad_right, g.dilation_w, w.kw, g.stride_w);
  VKD_CHECK(h_out >= 1 && w_out >= 1, ErrorCode::InvalidArgument, op, ": the ", w.kh, "x", w.kw,
            " kernel (dilation ", g.dilation_h, ", ", g.dilation_w, ") does not fit the padded ",
            in.h, "x", in.w, " input");
  VKD_CHECK(out.n == in.n && out.c == w.out_channels && out.h == h_out && out.w == w_out,
            ErrorCode::InvalidArgument, op, ": output sizes [", out.n, ", ", out.c, ", ", out.h,
            ", ", out.w, "] must be [", in.n, ", ", w.out_channels, ", ", h_out, ", ", w_out, "]");
}

namespace {
// The largest upscale factor of a pixel-shuffled output (as q8ta_pixel_shuffle's).
constexpr int32_t kMaxUpscale = 1024;

// The convolution's own output sizes: the output's, or, written pixel-shuffled by r = p.upscale
// > 1 (q8ta_conv2d_ps), [N, C r^2, H / r, W / r] of the output's [N, C, H, W]. Its C r^2
// channels are computed in phase-major order (phase_major_weights), so C must be a multiple
// of 4 (a packed word then holds channels of one sub-pixel phase) and the groups 1 (the
// permutation mixes them).
Dims4 conv_output_dims(const std::string& op, const Dims4& out, const Conv2dParams& p) {
  const int32_t r = p.upscale;
  VKD_CHECK(r >= 1 && r <= kMaxUpscale, ErrorCode::InvalidArgument, op, ": upscale_factor ", r,
            " must be in [1, ", kMaxUpscale, "]");
  if (r == 1) return out;
  VKD_CHECK(p.output.has_value(), ErrorCode::InvalidArgument, op,
            ": a pixel-shuffled output must be int8");
  VKD_CHECK(p.geometry.groups == 1, ErrorCode::InvalidArgument, op,
            ": a pixel-shuffled output needs groups 1 (groups = ", p.geometry.groups,
            "): its channels are computed in phase-major order");
  VKD_CHECK(out.c % 4 == 0 && out.h % r == 0 && out.w % r == 0, ErrorCode::InvalidArgument, op,
            ": output sizes [", out.n, ", ", out.c, ", ", out.h, ", ", out.w,
            "] of a pixel shuffle by ", r, " need H and W multiples of ", r,
            " and C a multiple of 4 (a packed word holds channels of one sub-pixel phase)");
  return {out.n, out.c * r * r, out.h / r, out.w / r};
}

}  // namespace

Conv2dParams requantizing_conv_params(const QuantParams& in, const QuantParams& out,
                                      int32_t act_min, int32_t act_max) {
  Conv2dParams c;
  c.input = in;
  c.output = out;
  c.activation_min = act_min;
  c.activation_max = act_max;
  return c;
}

Conv2dWeights phase_major_weights(const Conv2dWeights& w, int32_t r) {
  struct Arrays {
    std::vector<int8_t> weight;
    std::vector<float> scales, bias;
    std::shared_ptr<const void> given;
  };
  auto a = std::make_shared<Arrays>();
  const int64_t row = w.in_per_group * w.kh * w.kw, phases = int64_t(r) * r;
  const int64_t c_out = w.out_channels / phases;
  a->weight.resize(static_cast<size_t>(w.out_channels * row));
  a->scales.resize(static_cast<size_t>(w.out_channels));
  if (w.bias) a->bias.resize(static_cast<size_t>(w.out_channels));
  for (int64_t phase = 0; phase < phases; ++phase) {
    for (int64_t c = 0; c < c_out; ++c) {
      const int64_t from = c * phases + phase, to = phase * c_out + c;
      std::copy(w.weight + from * row, w.weight + (from + 1) * row, a->weight.begin() + to * row);
      a->scales[static_cast<size_t>(to)] = w.scales[from];
      if (w.bias) a->bias[static_cast<size_t>(to)] = w.bias[from];
    }
  }
  a->given = w.owner;
  Conv2dWeights out = w;
  out.weight = a->weight.data();
  out.scales = a->scales.data();
  out.bias = w.bias ? a->bias.data() : nullptr;
  out.owner = a;
  return out;
}

// Direct route: ivec4 block ((co4 * KH + ky) * KW + kx) * C4_in + ci4 holds component j =
// output channel 4 co4 + j, byte lane i = input channel 4 ci4 + i (shaders/q8ta_conv2d.glsl);
// zero where the input channel is outside the output channel's group or past C.
std::vector<uint8_t> pack_direct_weights(const Conv2dWeights& w, int64_t c_in, int64_t groups) {
  const int64_t c4_in = div_up(c_in, 4), c4_out = div_up(w.out_channels, 4);
  const int64_t cout_g = w.out_channels / groups;
  std::vector<uint8_t> out(static_cast<size_t>(c4_out * w.kh * w.kw * c4_in * 16), 0);
  for (int64_t co = 0; co < w.out_channels; ++co) {
    const int64_t ci0 = (co / cout_g) * w.in_per_group;
    for (int64_t cg = 0; cg < w.in_per_group; ++cg) {
      const int64_t ci = ci0 + cg;
      for (int64_t ky = 0; ky < w.kh; ++ky) {
        for (int64_t kx = 0; kx < w.kw; ++kx) {
          const int64_t block = ((co / 4 * w.kh + ky) * w.kw + kx) * c4_in + ci / 4;
          out[static_cast<size_t>(block * 16 + (co % 4) * 4 + ci % 4)] =
              static_cast<uint8_t>(w.weight[((co * w.in_per_group + cg) * w.kh + ky) * w.kw + kx]);
        }
      }
    }
  }
  return out;
}

// Depthwise route: int word (c4 * KH + ky) * KW + kx, byte lane i = channel 4 c4 + i
// (shaders/q8ta_conv2d_dw.glsl); zero past C.
std::vector<uint8_t> pack_depthwise_weights(const Conv2dWeights& w) {
  const int64_t taps = w.kh * w.kw;
  std::vector<uint8_t> out(static_cast<size_t>(div_up(w.out_channels, 4) * taps * 4), 0);
  for (int64_t c = 0; c < w.out_channels; ++c) {
    for (int64_t t = 0; t < taps; ++t) {
      out[static_cast<size_t>(((c / 4) * taps + t) * 4 + c % 4)] =
          static_cast<uint8_t>(w.weight[c * taps + t]);
    }
  }
  return out;
}

// The weights as the [C_out, C_in / groups * KH * KW] matrix whose rows the channel constants
// sum (PyTorch's order keeps each output channel's weights contiguous).
LinearWeights as_matrix(const Conv2dWeights& w) {
  return {w.weight, w.scales, w.bias, w.out_channels, w.in_per_group * w.kh * w.kw, w.owner};
}

namespace {

// The linear kernels' parameters for a convolution they run (Pointwise and Im2col routes).
LinearParams linear_params(const Conv2dParams& p) {
  LinearParams lp;
  lp.input = p.input;
  lp.output = p.output;
  lp.activation_min = p.activation_min;
  lp.activation_max = p.activation_max;
  lp.route = p.gemm;
  lp.split_k_slices = p.gemm_slices;
  lp.coopmat_tile_n = p.coopmat_tile_n;
  lp.residual = p.residual;
  return lp;
}

// Mirrors `Params` in shaders/q8ta_im2col.glsl.
struct Im2colPush {
  int32_t blocks, k4;
  Im2colGeometry geometry;
  int32_t in_zp;
};

// Im2col route: the weights (groups 1: [C_out, C_in, KH, KW]) as the GEMM's [C_out, K] matrix in
// the im2col matrix's K order, k = ((ky * KW + kx) * C4_in + ci / 4) * 4 + ci % 4
// (shaders/q8ta_im2col.glsl), zero in the lanes of channels past C_in: the input words' padding
// lanes add nothing, and each row sums to the real weights' sum (the channel constants' wsum).
std::vector<int8_t> im2col_weight_matrix(const Conv2dWeights& w, int64_t c_in, int64_t k) {
  const int64_t c4_in = div_up(c_in, 4);
  std::vector<int8_t> out(static_cast<size_t>(w.out_channels * k), 0);
  for (int64_t co = 0; co < w.out_channels; ++co) {
    for (int64_t ci = 0; ci < c_in; ++ci) {
      for (int64_t ky = 0; ky < w.kh; ++ky) {
        for (int64_t kx = 0; kx < w.kw; ++kx) {
          const int64_t kk = ((ky * w.kw + kx) * c4_in + ci / 4) * 4 + ci % 4;
          out[static_cast<size_t>(co * k + kk)] =
              w.weight[((co * c_in + ci) * w.kh + ky) * w.kw + kx];
        }
      }
    }
  }
  return out;
}

// Im2col route. The im2col matrix is an int8x4 tensor [N, K, H_out, W_out] in 4W4C: its
// 16-byte blocks are (4 output pixels of one row) x (4 K values), the linear kernels' (rows x K)
// block structure with N * H_out groups of W_out rows, as the conv's 4W4C output is with
// N = C_out for K; add_q8ta_linear_rows_node multiplies it by the reordered weights straight
// into the output with the plan's kernel. Implicit and window forms: that kernel reads the
// convolution's input and gathers each block in its loads, one dispatch. Explicit form, two
// dispatches: q8ta_im2col writes the matrix into an intermediate graph tensor (the memory
// planner reuses its bytes once the GEMM has read it), which the plain kernel reads. The
// reordered weight matrix is made here, on the CPU, and held by the LinearWeights until
// prepare() has packed it into the GEMM's blocks.
void add_im2col_conv(graph::ComputeGraph& graph, const ConvProblem& c, const ConvPlan& plan,
                     const std::string& name, graph::ValueRef input, const Conv2dWeights& w,
                     graph::ValueRef output, const Conv2dParams& p) {
  const int64_t k = im2col_k(c);
  auto matrix = std::make_shared<const std::vector<int8_t>>(im2col_weight_matrix(w, c.in.c, k));
  // The packers keep both the matrix and whatever w's pointers point into.
  const auto owners =
      std::make_shared<const std::pair<std::shared_ptr<const void>, std::shared_ptr<const void>>>(
          matrix, w.owner);
  const LinearWeights lw{matrix->data(), w.scales, w.bias, w.out_channels, k, owners};
  const LinearParams lp = linear_params(p);
  const Dims4& d_out = c.out;
  const bool in_4w4c = c.in_layout == MemoryLayout::PackedInt8_4W4C;
  if (plan.im2col_form != Im2colForm::Explicit) {
    add_q8ta_linear_rows_node(
        graph, c.op, input, d_out.n * d_out.h, d_out.w, lw, output, lp, plan.gemm,
        RowsShuffle{p.upscale, d_out.h},
        Im2colInput{in_4w4c, plan.im2col_geometry, plan.im2col_form == Im2colForm::Window});
    return;
  }
  const graph::ValueRef cols = graph.add_tensor({{d_out.n, k, d_out.h, d_out.w},
                                                 DType::Int8x4,
                                                 StorageType::Buffer,
                                                 MemoryLayout::PackedInt8_4W4C},
                                                name + ".im2col");
  const int64_t blocks = d_out.n * d_out.h * div_up(d_out.w, 4) * (k / 4);
  const Im2colPush push{int32_t(blocks), int32_t(k / 4), plan.im2col_geometry, p.input.zero_point};
  graph::DispatchNode node;
  node.op = c.op;
  node.kernel = plan.im2col_kernel;
  node.bindings = {cols, input};
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = plan.im2col_dispatch;
  graph.add_node(std::move(node));
  add_q8ta_linear_rows_node(graph, c.op, cols, d_out.n * d_out.h, d_out.w, lw, output, lp,
                            plan.gemm, RowsShuffle{p.upscale, d_out.h});
}

// The direct family's one dispatch (the plan's kernel and grid): the direct kernel (any shape,
// groups and layouts; also the Pointwise route's short K), the depthwise kernel, or the direct
// kernel quantizing its float input on load.
void add_direct_conv(graph::ComputeGraph& graph, const ConvProblem& c, const ConvPlan& plan,
                     const std::string& name, graph::ValueRef input, const Conv2dWeights& w,
                     graph::ValueRef output, const Conv2dParams& p) {
  const bool depthwise = plan.route == Conv2dRoute::Depthwise;
  const Dims4 &d_in = c.in, &d_out = c.out;
  const int64_t c4_in = div_up(d_in.c, 4), c4_out = div_up(d_out.c, 4);
  const int64_t groups = p.geometry.groups;
  const TensorSpec wspec = depthwise ? TensorSpec{{c4_out * w.kh * w.kw},
                                                  DType::Int32,
                                                  StorageType::Buffer,
                                                  MemoryLayout::WidthPacked}
                                     : TensorSpec{{c4_out * w.kh * w.kw * c4_in, 4},
                                                  DType::Int32,
                                                  StorageType::Buffer,
                                                  MemoryLayout::WidthPacked};
  const auto packed = graph.add_constant(
      wspec, name + ".weight_packed",
      [w, depthwise, c_in = d_in.c, groups] {
        return depthwise ? pack_depthwise_weights(w) : pack_direct_weights(w, c_in, groups);
      },
      static_cast<uint64_t>(w.out_channels * w.in_per_group * w.kh * w.kw));
  const auto channels = add_channel_constants(graph, as_matrix(w), p.input.scale, name);

  const Conv2dGeometry& g = p.geometry;
  const QuantParams q = p.output.value_or(QuantParams{});
  const Conv2dPush push{int32_t(d_in.n),
                        int32_t(c4_in),
                        int32_t(d_in.h),
                        int32_t(d_in.w),
                        int32_t(d_out.c),
                        int32_t(c4_out),
                        int32_t(d_out.h),
                        int32_t(d_out.w),
                        int32_t(w.kh),
                        int32_t(w.kw),
                        g.stride_h,
                        g.stride_w,
                        g.pad_top,
                        g.pad_left,
                        g.dilation_h,
                        g.dilation_w,
                        int32_t(w.in_per_group),
                        int32_t(w.out_channels / groups),
                        int32_t(4 * c4_out),
                        p.input.zero_point,
                        q.zero_point,
                        inverse_scale(q.scale),
                        p.activation_min,
                        p.activation_max};
  graph::DispatchNode node;
  node.op = c.op;
  node.kernel = plan.kernel;
  node.bindings = {output, input, packed, channels};
  node.push_constants = graph::push_constant_bytes(push);
  if (p.residual) {
    const ResidualAdd& r = *p.residual;
    node.bindings.push_back(r.other);
    node.push_constants = graph::push_constant_bytes(Conv2dAddPush{
        push, binary_quant_push(q, r.other_quant, r.output, r.activation_min, r.activation_max)});
  }
  if (p.dequantize_output) {
    node.push_constants = graph::push_constant_bytes(Conv2dDqPush{push, q.scale});
  }
  if (p.quantize_input) {
    node.push_constants = graph::push_constant_bytes(Conv2dFqPush{
        push, int32_t(d_in.c), inverse_scale(p.input.scale), p.input.quant_min, p.input.quant_max});
  }
  node.spec_constants = {epilogue_acc_below_2_22(graph.profile(), w.in_per_group * w.kh * w.kw)};
  if (depthwise) {
    // The geometry is specialized so every loop unrolls, and an invocation computes ROWS output
    // rows of TW tiles (shaders/q8ta_conv2d_dw.glsl).
    node.spec_constants.insert(
        node.spec_constants.end(),
        {uint32_t(w.kh), uint32_t(w.kw), uint32_t(g.stride_h), uint32_t(g.stride_w),
         uint32_t(g.dilation_h), uint32_t(g.dilation_w), uint32_t(g.pad_left),
         uint32_t(plan.depthwise_rows), uint32_t(plan.depthwise_tiles_w),
         uint32_t(plan.depthwise_row_dots)});
  }
  if (!depthwise && p.output && !p.dequantize_output) {
    // The direct kernel's store (conv_common.glslh): upscale factor and output channels, the
    // defaults (1, 4) when not shuffled, so unshuffled nodes share one pipeline.
    const int64_t r = p.upscale;
    node.spec_constants.push_back(uint32_t(r));
    node.spec_constants.push_back(uint32_t(r > 1 ? d_out.c / (r * r) : 4));
  }
  if (p.quantize_input) {
    // The quantizing load's channel blocks and geometry (shaders/q8ta_conv2d.glsl).
    node.spec_constants.insert(
        node.spec_constants.end(),
        {uint32_t(plan.fq_channel_blocks), uint32_t(w.kh), uint32_t(w.kw),
         uint32_t(div_up(d_in.c, 4)), uint32_t(g.stride_h), uint32_t(g.stride_w),
         uint32_t(g.dilation_h), uint32_t(g.dilation_w)});
  }
  node.plan = plan.dispatch;
  graph.add_node(std::move(node));
}

}  // namespace

void check_conv_weights(const std::string& op, int64_t c_in, const Conv2dWeights& w,
                        int32_t groups) {
  VKD_CHECK(w.weight != nullptr && w.scales != nullptr, ErrorCode::InvalidArgument, op,
            ": weights and weight scales are required");
  VKD_CHECK(w.out_channels >= 1 && w.in_per_group >= 1 && w.kh >= 1 && w.kw >= 1,
            ErrorCode::InvalidArgument, op, ": weight shape [", w.out_channels, ", ",
            w.in_per_group, ", ", w.kh, ", ", w.kw, "] must be positive");
  VKD_CHECK(groups >= 1 && c_in % groups == 0 && w.out_channels % groups == 0 &&
                c_in / groups == w.in_per_group,
            ErrorCode::InvalidArgument, op, ": groups = ", groups, " must divide C_in = ", c_in,
            " and C_out = ", w.out_channels,
            ", and the weights must hold C_in / groups = ", c_in / std::max<int64_t>(groups, 1),
            " input channels (they hold ", w.in_per_group, ")");
}

std::string to_string(Im2colForm form) {
  switch (form) {
    case Im2colForm::Auto: return "auto";
    case Im2colForm::Implicit: return "implicit";
    case Im2colForm::Window: return "window";
    case Im2colForm::Explicit: return "explicit";
  }
  return "?";
}

std::string to_string(Conv2dRoute route) {
  switch (route) {
    case Conv2dRoute::Auto: return "auto";
    case Conv2dRoute::Direct: return "direct";
    case Conv2dRoute::Pointwise: return "pointwise";
    case Conv2dRoute::Depthwise: return "depthwise";
    case Conv2dRoute::Im2col: return "im2col";
  }
  return "?";
}

namespace {

// The op add_q8ta_conv2d_node builds (its name in errors): which of q8ta_conv2d's forms.
std::string conv2d_op_name(const Conv2dParams& p) {
  return p.quantize_input      ? "q8ta_conv2d_fq"
         : !p.output           ? "q8ta_conv2d_dq"
         : p.dequantize_output ? "q8ta_conv2d_q_dq"
         : p.residual          ? "q8ta_conv2d_add"
         : p.upscale != 1      ? "q8ta_conv2d_ps"
                               : "q8ta_conv2d";
}

// add_q8ta_conv2d_node's argument checks (the tensors, parameters and weights; InvalidArgument /
// Unsupported naming `op`); returns the convolution's own output sizes (the output's, unless it
// is pixel-shuffled).
Dims4 check_conv2d_args(const std::string& op, const graph::ComputeGraph& graph,
                        graph::ValueRef input, const Conv2dWeights& given, graph::ValueRef output,
                        const Conv2dParams& p) {
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  const bool rank_3_or_4 = in.spec().sizes.size() >= 3 && in.spec().sizes.size() <= 4;
  if (p.quantize_input) {
    check_float_buffer(op, in);
    VKD_CHECK(rank_3_or_4, ErrorCode::InvalidArgument, op, ": input ", in.spec().describe(),
              " must be a float32 buffer of rank 3 or 4 ([N,] C, H, W)");
    VKD_CHECK(p.output && !p.dequantize_output && !p.residual && p.upscale == 1,
              ErrorCode::InvalidArgument, op,
              ": a float input quantized on load writes a plain int8 output (not dequantized, "
              "added to or pixel-shuffled)");
  } else {
    check_int8x4_tensor(op, in);
    VKD_CHECK(is_channels_packed_int8(in.spec()) && rank_3_or_4, ErrorCode::InvalidArgument, op,
              ": input ", in.spec().describe(),
              " must be an int8x4 buffer in 4W4C or 4C1W of rank 3 or 4 ([N,] C, H, W)");
  }
  if (p.output && p.dequantize_output) {
    check_float_buffer(op, out);
    check_requantized_output(op, *p.output, p.activation_min, p.activation_max);
    VKD_CHECK(!p.residual && p.upscale == 1, ErrorCode::InvalidArgument, op,
              ": a dequantized output is neither added to nor pixel-shuffled");
  } else if (p.output) {
    check_int8x4_tensor(op, out);
    VKD_CHECK(is_channels_packed_int8(out.spec()), ErrorCode::InvalidArgument, op, ": output ",
              out.spec().describe(), " must be an int8x4 buffer in 4W4C or 4C1W");
    check_requantized_output(op, *p.output, p.activation_min, p.activation_max);
  } else {
    check_float_buffer(op, out);
    VKD_CHECK(!p.residual, ErrorCode::InvalidArgument, op, ": a residual add needs an int8 output");
  }
  VKD_CHECK(out.spec().sizes.size() == in.spec().sizes.size(), ErrorCode::InvalidArgument, op,
            ": output ", out.spec().describe(), " must have the input's rank");
  check_quant_params(op, p.input);
  VKD_CHECK(p.depthwise_rows >= 0 && p.depthwise_rows <= 4, ErrorCode::InvalidArgument, op,
            ": depthwise_rows ", p.depthwise_rows, " must be 0 (chosen by size) or 1..4");
  VKD_CHECK(p.depthwise_tiles_w >= 0 && p.depthwise_tiles_w <= 2 &&
                std::max(p.depthwise_rows, 1) * std::max(p.depthwise_tiles_w, 1) <= 4,
            ErrorCode::InvalidArgument, op, ": depthwise_tiles_w ", p.depthwise_tiles_w,
            " must be 0 (chosen by size) or 1..2, with at most 4 rows x tiles (depthwise_rows ",
            p.depthwise_rows, ")");
  const Dims4 d_out = conv_output_dims(op, out.spec().dims4(), p);
  check_conv(op, in.spec().dims4(), d_out, given, p.geometry);
  if (p.residual) check_residual_add(op, graph, output, *p.residual);
  return d_out;
}

}  // namespace

Conv2dRoute add_q8ta_conv2d_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                 const Conv2dWeights& given, graph::ValueRef output,
                                 const Conv2dParams& p) {
  const std::string op = conv2d_op_name(p);
  // d_out: the convolution's own output (the output's sizes, unless it is pixel-shuffled).
  const Dims4 d_out = check_conv2d_args(op, graph, input, given, output, p);
  if (p.residual && residual_add_separately(graph.profile())) {
    const graph::ValueRef before_add = add_before_residual_tensor(graph, op, output);
    Conv2dParams plain = p;
    plain.residual.reset();
    const Conv2dRoute route = add_q8ta_conv2d_node(graph, input, given, before_add, plain);
    add_separate_residual_add(graph, before_add, *p.output, *p.residual, output);
    return route;
  }
  const TensorSpec &in = graph.spec(input), &out = graph.spec(output);
  const Dims4 d_in = in.dims4();
  const Conv2dWeights weights = p.upscale > 1 ? phase_major_weights(given, p.upscale) : given;

  const ConvProblem problem = conv_problem(op, in, out, d_out, weights, p);
  const ConvPlan plan = plan_conv2d(problem, graph.profile());
  const std::string& out_name = graph.tensor(output).name();
  const std::string name = out_name.empty() ? op : out_name;
  if (plan.linear && plan.route == Conv2dRoute::Pointwise) {
    // 4W4C blocks are (4 pixels of one image row) x (4 channels): the linear kernels' rows x K.
    add_q8ta_linear_rows_node(graph, op, input, d_in.n * d_in.h, d_in.w, as_matrix(weights), output,
                              linear_params(p), plan.gemm, RowsShuffle{p.upscale, d_out.h});
  } else if (plan.linear) {
    add_im2col_conv(graph, problem, plan, name, input, weights, output, p);
  } else {
    add_direct_conv(graph, problem, plan, name, input, weights, output, p);
  }
  return plan.route;
}

// --- registry entries -------------------------------------------------------------

Conv2dWeights blob_conv_weights(const OpCall& call, const std::string& prefix) {
  const auto& w = call.constant(prefix + "weight");
  Conv2dWeights cw;
  cw.out_channels = w.spec.sizes[0];
  cw.in_per_group = w.spec.sizes[1];
  cw.kh = w.spec.sizes[2];
  cw.kw = w.spec.sizes[3];
  const auto channels = call.channel_floats(prefix + "weight_scales", prefix + "bias");
  cw.weight = reinterpret_cast<const int8_t*>(w.constant->data);
  cw.scales = channels->scales.data();
  cw.bias = channels->bias.data();
  cw.owner = channels;
  return cw;
}

Conv2dGeometry blob_conv_geometry(const OpCall& call) {
  Conv2dGeometry g;
  // Each value in [0, 2^20]; add_q8ta_conv2d_node's checks then say what they mean together.
  const auto stride = call.int32_list("stride", {1, 2}, 0, 1 << 20);
  const auto dilation = call.int32_list("dilation", {1, 2}, 0, 1 << 20);
  // [p], [ph, pw] or [top, left, bottom, right]
  const auto pad = call.int32_list("padding", {1, 2, 4}, 0, 1 << 20);
  std::tie(g.stride_h, g.stride_w) = std::pair{stride.front(), stride.back()};
  std::tie(g.dilation_h, g.dilation_w) = std::pair{dilation.front(), dilation.back()};
  g.pad_top = pad[0];
  g.pad_left = pad.size() == 4 ? pad[1] : pad.back();
  g.pad_bottom = pad.size() == 4 ? pad[2] : pad[0];
  g.pad_right = pad.size() == 4 ? pad[3] : pad.back();
  return g;
}

namespace {

Conv2dWeights blob_weights(const OpCall& call) { return blob_conv_weights(call, ""); }

Conv2dParams blob_params(const OpCall& call) {
  Conv2dParams p;
  p.input = call.quant("input");
  p.geometry = blob_conv_geometry(call);
  p.geometry.groups = call.int32_arg("groups", 1, 1 << 20);
  return p;
}

// q8ta_conv2d's arguments with its requantized int8 value's qparams and activation range
// (shared by q8ta_conv2d, _ps, _fq and _q_dq; each declares the zero points of its int8 ends).
Conv2dParams requantized_params(const OpCall& call) {
  Conv2dParams p = blob_params(call);
  p.output = call.quant("output");
  p.activation_min = call.int32_arg("activation_min", -128, 127);
  p.activation_max = call.int32_arg("activation_max", -128, 127);
  return p;
}

// requantized_params with the zero points of the int8 input and output declared.
Conv2dParams int8_io_params(const OpCall& call) {
  Conv2dParams p = requantized_params(call);
  call.set_zero_point("input", p.input.zero_point);
  call.set_zero_point("output", p.output->zero_point);
  return p;
}

void build_q8ta_conv2d(const OpCall& call) {
  add_q8ta_conv2d_node(call.graph(), call.tensor("input"), blob_weights(call),
                       call.tensor("output"), int8_io_params(call));
}

// The output pixel-shuffled by upscale_factor (>= 2; 1 would be q8ta_conv2d), checked against
// the output's sizes and the weights by add_q8ta_conv2d_node.
void build_q8ta_conv2d_ps(const OpCall& call) {
  Conv2dParams p = int8_io_params(call);
  p.upscale = call.int32_arg("upscale_factor", 2, kMaxUpscale);
  add_q8ta_conv2d_node(call.graph(), call.tensor("input"), blob_weights(call),
                       call.tensor("output"), p);
}

// The convolution's own int8 output ("conv_"), pixel-shuffled by upscale_factor (1: not), is
// the add's a.
void build_q8ta_conv2d_add(const OpCall& call) {
  Conv2dParams p = blob_params(call);
  p.output = call.quant("conv");
  p.activation_min = call.int32_arg("conv_activation_min", -128, 127);
  p.activation_max = call.int32_arg("conv_activation_max", -128, 127);
  p.upscale = call.int32_arg("upscale_factor", 1, kMaxUpscale);
  p.residual = residual_add(call);
  call.set_zero_point("input", p.input.zero_point);
  add_q8ta_conv2d_node(call.graph(), call.tensor("input"), blob_weights(call),
                       call.tensor("output"), p);
}

// q8ta_conv2d's arguments; its requantized int8 value is dequantized into the float output.
void build_q8ta_conv2d_q_dq(const OpCall& call) {
  Conv2dParams p = requantized_params(call);
  p.dequantize_output = true;
  call.set_zero_point("input", p.input.zero_point);
  add_q8ta_conv2d_node(call.graph(), call.tensor("input"), blob_weights(call),
                       call.tensor("output"), p);
}

// q8ta_quantize with the input's qparams and range, then q8ta_conv2d: the float input is
// quantized on load.
void build_q8ta_conv2d_fq(const OpCall& call) {
  Conv2dParams p = requantized_params(call);
  p.quantize_input = true;
  p.input.quant_min = call.int32_arg("input_quant_min", -128, 127);
  p.input.quant_max = call.int32_arg("input_quant_max", -128, 127);
  call.set_zero_point("output", p.output->zero_point);
  add_q8ta_conv2d_node(call.graph(), call.tensor("input"), blob_weights(call),
                       call.tensor("output"), p);
}

void build_q8ta_conv2d_dq(const OpCall& call) {
  Conv2dParams p = blob_params(call);
  call.set_zero_point("input", p.input.zero_point);
  add_q8ta_conv2d_node(call.graph(), call.tensor("input"), blob_weights(call),
                       call.tensor("output"), p);
}

}  // namespace

void register_conv2d_ops(OpRegistry& registry) {
  registry.add("q8ta_conv2d", build_q8ta_conv2d);
  registry.add("q8ta_conv2d_dq", build_q8ta_conv2d_dq);
  registry.add("q8ta_conv2d_ps", build_q8ta_conv2d_ps);
  registry.add("q8ta_conv2d_add", build_q8ta_conv2d_add);
  registry.add("q8ta_conv2d_q_dq", build_q8ta_conv2d_q_dq);
  registry.add("q8ta_conv2d_fq", build_q8ta_conv2d_fq);
}

}  // namespace vkd::ops
