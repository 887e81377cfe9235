// Op family: quantized 2-D convolution (q8ta_conv2d, q8ta_conv2d_dq, q8ta_conv2d_ps,
// q8ta_conv2d_add, q8ta_conv2d_q_dq, q8ta_conv2d_fq).
// Anatomy: push-constant struct (mirroring shaders/common/conv_common.glslh), checks, weight
// prepacking per route, the route choice, add_q8ta_conv2d_node, registry entries.
#include "runtime/ops/Conv2d.h"

#include <algorithm>
#include <memory>
#include <tuple>
#include <vector>

#include "core/Error.h"
#include "partitioner_schema/ConvRoutes.h"
#include "runtime/ops/Linear.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/WorkgroupChooser.h"

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

// What one depthwise invocation computes: `rows` output rows of `tiles_w` tiles (4 widths x 4
// channels each) along the row (shaders/q8ta_conv2d_dw.glsl, ROWS and TW).
struct DepthwiseMapping {
  int64_t rows = 1, tiles_w = 1;
};

// The requested mapping, else for a 4W4C input the most tiles per invocation of 4 (2 rows x 2
// tiles), 2 (1 row x 2 tiles) and 1 that still leaves 2^17 invocations (an H100 keeps 132 x
// 2048 = 270k resident), 2^16 with the row dot products (`row_dots`), whose windows and
// transposes are shared by more products per invocation. More tiles per invocation load each
// input word fewer times (a row's window is shared by its tiles, an input row by the output
// rows reading it) but leave fewer invocations to hide latency. H100, µs, 3x3 4W4C, one dot
// product per tap (1 / 2 / 4 tiles): 1x64x256x256 (2^18 tiles) 12.9 / 12.4 (2 rows x 1 tile
// 12.6) / 12.7 (4 rows x 1; 2 x 2: 13.0); 1x128x128x128 8.8 / 8.8 / 10.1; 1x288x16x16 5.4 /
// 5.9 / 8.1; 1x96x1024x1024 (6.3M tiles): 4 rows x 1 tile 183.5, 2 x 2 174.0. With the row dot
// products and 16-byte stores (1 x 1 / 2 x 1 / 1 x 2 / 4 x 1 / 2 x 2): 1x64x256x256 12.38 /
// 11.07 / 11.23 / 10.43 / 10.27; 1x128x128x128 (2^17 tiles) 8.61 / 7.68 / 7.81 / 8.32 / 8.10;
// 1x288x16x16 5.15 / 5.70 / 5.70 / 7.30 / 7.14; 1x96x1024x1024 2 x 2 140.9 (one dot
// product per tap with 16-byte stores: 161.0). A 4C1W input keeps one tile (rows 4, 2, 1 down
// to 2^18 invocations): its
// neighbouring invocations take neighbouring widths, and 2 tiles each spread their loads
// (1x64x256x256: 14.6 us with 1 tile, 18.6 with 2). Beyond 4 tiles the driver stops unrolling
// the kernel: its arrays went to local memory and 8 rows ran 5x slower.
DepthwiseMapping depthwise_mapping(int64_t tiles, const Conv2dParams& p, MemoryLayout in,
                                   bool row_dots) {
  if (p.depthwise_rows > 0 || p.depthwise_tiles_w > 0) {
    return {std::max<int64_t>(p.depthwise_rows, 1), std::max<int64_t>(p.depthwise_tiles_w, 1)};
  }
  if (in == MemoryLayout::PackedInt8_4C1W) {
    int64_t rows = 4;
    while (rows > 1 && tiles / rows < (int64_t(1) << 18)) rows /= 2;
    return {rows, 1};
  }
  const int64_t min_invocations = int64_t(1) << (row_dots ? 16 : 17);
  if (tiles / 4 >= min_invocations) return {2, 2};
  if (tiles / 2 >= min_invocations) return {1, 2};
  return {1, 1};
}

// Whether the depthwise kernel takes one int8 dot product per kernel row and channel instead of
// one per tap and channel (ROW_DOTS, shaders/q8ta_conv2d_dw.glsl): as asked (InvalidArgument
// where the kernel row does not fit one word of a 4W4C input), else wherever it fits on a GPU.
// H100, 3x3 4W4C, µs, one dot product per tap / per kernel row, the same mapping: 1x64x256x256
// 2 rows x 2 tiles 11.20 / 10.27, 1 x 2 11.39 / 11.23; 1x96x1024x1024 2 x 2 161.0 / 140.9;
// the small layers at 1 x 1 within noise (mobilenet_v2's and refinenet's stride-1 ones
// 5.4-6.6 either way), their stride-2 ones 0.1-0.35 faster (1x96x32x18 5.31 / 4.96).
// A CPU device keeps one dot product per tap: lavapipe (2 loaded cores), 1x64x256x256 1 x 1
// 14.6-19.0 ms per tap, 14.5-22.6 ms per kernel row, no gain to be seen.
bool depthwise_row_dots(const std::string& op, const vk::DeviceProfile& profile,
                        const Conv2dWeights& w, const Conv2dGeometry& g, MemoryLayout in,
                        Conv2dParams::DepthwiseProducts asked) {
  using Products = Conv2dParams::DepthwiseProducts;
  const int64_t span = (w.kw - 1) * int64_t(g.dilation_w) + 1;
  const bool fits = in == MemoryLayout::PackedInt8_4W4C && span <= 4;
  switch (asked) {
    case Products::LaneMasks: return false;
    case Products::RowDots:
      VKD_CHECK(fits, ErrorCode::InvalidArgument, op,
                ": depthwise row dot products need a 4W4C input and a kernel row of at most 4 "
                "widths ((KW - 1) * dilation_w + 1 = ",
                span, ")");
      return true;
    case Products::Auto: break;
  }
  return fits && !profile.cpu_kernels;
}

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
bool fits_pointwise(const TensorSpec& in, const TensorSpec& out, const Conv2dWeights& w,
                    const Conv2dParams& p) {
  const Conv2dGeometry& g = p.geometry;
  return w.kh == 1 && w.kw == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0 && g.groups == 1 &&
         p.output.has_value() && in.layout == MemoryLayout::PackedInt8_4W4C &&
         out.layout == MemoryLayout::PackedInt8_4W4C;
}

// Whether the int8 output is written pixel-shuffled, added to a residual tensor or dequantized
// (shaders/common/conv_common.glslh, linear_common.glslh): the depthwise kernel's store does
// none of these (no variant; a depthwise q8ta_conv2d_q_dq runs the direct kernel).
bool fused_store(const Conv2dParams& p) {
  return p.upscale > 1 || p.residual.has_value() || p.dequantize_output;
}

bool fits_depthwise(const Dims4& in, const Conv2dWeights& w, const Conv2dParams& p) {
  const Conv2dGeometry& g = p.geometry;
  return g.groups == in.c && w.out_channels == in.c && !fused_store(p);
}

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

namespace {

// The im2col route's intermediate matrix holds KH * KW input words per output pixel, so it is
// about KH * KW times the input: a 7x7 layer on a large image needs gigabytes. It lives only
// between its two dispatches (the memory planner reuses its bytes afterwards), but at its peak
// it is all device memory one transient claims; past this cap the direct kernel, which needs
// none, runs instead. 256 MiB holds the matrix of every ResNet-18 / MobileNet layer at
// 224x224 many times over. The device's maxStorageBufferRange also bounds it (one binding;
// Vulkan guarantees only 128 MiB).
constexpr uint64_t kMaxIm2colBytes = uint64_t(256) << 20;

// q8ta_conv2d_fq's output channel blocks per invocation (shaders/q8ta_conv2d.glsl's CO4): on a
// GPU one, so a stem's few pixels make 6-8x the workgroups (each quantizing its input window
// again); on a CPU device 2, each quantized input word reused by 2 x 4 channels. H100,
// refinenet_lite's 1x3x256x144 -> 24 3x3 s2 stem (PERF) with the shared window: 15.4 us with 6
// blocks per invocation, 11.0 with 2, 10.0 with 1 (mobilenet_v2's 1x3x224x224 -> 32: 18.2 / 10.9
// / 10.5). lavapipe (2 cores), the same stem in the README example, blocks per invocation 1 / 2
// / 6 (all, the earlier choice): 13.9 / 8.9 / 6.1 ms per inference, but its first dispatch
// (LLVM compiling the unrolled loops, Mesa's shader cache off) 0.22 / 0.46 / 1.05-1.26 s, which
// a fresh process pays: 2 keeps most of the speed for a third of the compile.
constexpr int64_t kFqChannelBlocksGpu = 1;
constexpr int64_t kFqChannelBlocksCpu = 2;
// The taps x input channel words that q8ta_conv2d_fq's loops unroll (its KH, KW and C4_in are
// specialization constants); the compiler fuses a quantize into a convolution of fewer than 64
// products per output only, which stays below.
constexpr int64_t kFqMaxTapWords = 64;
// q8ta_conv2d_fq's workgroup: kFqTileH x kFqTileW output pixels (FQ_TH, FQ_TW).
constexpr int64_t kFqTileH = 4;
constexpr int64_t kFqTileW = 16;

// The bytes of q8ta_conv2d_fq's shared input window: the input words kFqTileH x kFqTileW output
// pixels read.
int64_t fq_window_bytes(const Conv2dWeights& w, const Conv2dGeometry& g, int64_t c_in) {
  const int64_t rows = (kFqTileH - 1) * g.stride_h + (w.kh - 1) * g.dilation_h + 1;
  const int64_t cols = (kFqTileW - 1) * g.stride_w + (w.kw - 1) * g.dilation_w + 1;
  return 4 * div_up(c_in, int64_t(4)) * rows * cols;
}

// K of the im2col matrix: every tap's C4_in whole channel words.
int64_t im2col_k(const Conv2dWeights& w, int64_t c_in) { return w.kh * w.kw * div_up(c_in, 4) * 4; }

// Bytes of the im2col matrix: N * H_out * W4_out row blocks of K / 4 16-byte blocks.
uint64_t im2col_bytes(const Dims4& in, const Dims4& out, const Conv2dWeights& w) {
  return static_cast<uint64_t>(out.n * out.h * div_up(out.w, 4)) *
         static_cast<uint64_t>(im2col_k(w, in.c) / 4) * 16;
}

// "" when the im2col route fits, else what it needs. The GEMM writes only the 4W4C block
// structure (int8), and its weights are one [C_out, K] matrix (no groups).
std::string im2col_unfit(const TensorSpec& in, const TensorSpec& out, const Dims4& conv_out,
                         const Conv2dWeights& w, const Conv2dParams& p,
                         const vk::DeviceProfile& profile) {
  if (p.geometry.groups != 1) {
    return "groups 1 (groups = " + std::to_string(p.geometry.groups) + ")";
  }
  if (!p.output.has_value() || p.dequantize_output || out.layout != MemoryLayout::PackedInt8_4W4C) {
    return std::string("an int8 4W4C output (the GEMM writes no ") +
           (p.output.has_value() && !p.dequantize_output ? "4C1W" : "float") + " output)";
  }
  const uint64_t bytes = im2col_bytes(in.dims4(), conv_out, w);
  const uint64_t cap = std::min(kMaxIm2colBytes, profile.max_storage_buffer_range_bytes);
  if (bytes > cap) {
    return "an im2col matrix of at most " + std::to_string(cap) + " bytes (the lower of its " +
           std::to_string(kMaxIm2colBytes >> 20) +
           " MiB cap and the device's maxStorageBufferRange); this convolution's takes " +
           std::to_string(bytes) + " bytes";
  }
  return "";
}

// Whether Auto runs a general convolution that the im2col route fits through it rather than
// the direct kernel: when an output sums at least kIm2colMinProducts products
// (partitioner_schema/ConvRoutes.h, with the measurements).
bool prefer_im2col(const Conv2dWeights& w) {
  return w.in_per_group * w.kh * w.kw >= kIm2colMinProducts;
}

// `conv_out`: the convolution's own output sizes (conv_output_dims).
Conv2dRoute choose_route(const std::string& op, const TensorSpec& in, const TensorSpec& out,
                         const Dims4& conv_out, const Conv2dWeights& w, const Conv2dParams& p,
                         const vk::DeviceProfile& profile) {
  if (p.quantize_input) {
    // Only the direct kernel has the quantizing load (shaders/common/conv_common.glslh).
    VKD_CHECK(p.route == Conv2dRoute::Auto || p.route == Conv2dRoute::Direct,
              ErrorCode::InvalidArgument, op, ": the ", to_string(p.route),
              " route reads an int8 input; a float input is quantized on load by the direct "
              "route only");
    const int64_t words = w.kh * w.kw * div_up(in.dims4().c, 4);
    VKD_CHECK(words <= kFqMaxTapWords, ErrorCode::InvalidArgument, op, ": a ", w.kh, "x", w.kw,
              " kernel over ", in.dims4().c, " float input channels is ", words,
              " taps x channel words; the quantizing load unrolls at most ", kFqMaxTapWords,
              " (the compiler fuses the quantize only below 64 products per output)");
    const int64_t bytes = fq_window_bytes(w, p.geometry, in.dims4().c);
    VKD_CHECK(bytes <= profile.max_shared_memory_bytes, ErrorCode::Unsupported, op,
              ": the quantized input window of a workgroup (", kFqTileH, "x", kFqTileW,
              " output pixels at stride ", p.geometry.stride_h, "x", p.geometry.stride_w,
              ", dilation ", p.geometry.dilation_h, "x", p.geometry.dilation_w, ") needs ", bytes,
              " bytes of shared memory; device '", profile.name, "' has ",
              profile.max_shared_memory_bytes);
    return Conv2dRoute::Direct;
  }
  const bool pointwise = fits_pointwise(in, out, w, p);
  const bool depthwise = fits_depthwise(in.dims4(), w, p);
  switch (p.route) {
    case Conv2dRoute::Auto:
      if (pointwise) return Conv2dRoute::Pointwise;
      if (depthwise) return Conv2dRoute::Depthwise;
      if (im2col_unfit(in, out, conv_out, w, p, profile).empty() && prefer_im2col(w)) {
        return Conv2dRoute::Im2col;
      }
      return Conv2dRoute::Direct;
    case Conv2dRoute::Im2col: {
      const std::string unfit = im2col_unfit(in, out, conv_out, w, p, profile);
      VKD_CHECK(unfit.empty(), ErrorCode::InvalidArgument, op, ": the im2col route needs ", unfit);
      break;
    }
    case Conv2dRoute::Pointwise:
      VKD_CHECK(pointwise, ErrorCode::InvalidArgument, op,
                ": the pointwise route needs a 1x1 kernel, stride 1, no padding, groups 1 and "
                "int8 4W4C input and output");
      break;
    case Conv2dRoute::Depthwise:
      VKD_CHECK(depthwise, ErrorCode::InvalidArgument, op,
                ": the depthwise route needs groups == C_in == C_out and an output that is neither "
                "pixel-shuffled nor added to, nor dequantized");
      break;
    case Conv2dRoute::Direct: break;
  }
  return p.route;
}

}  // namespace

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

// Whether the Pointwise route runs the direct kernel (one 4-width x 4-channel output tile per
// invocation) instead of a linear kernel: on a GPU, with the linear kernel not asked for, where
// K is short: C_in <= 16; C_in <= 24 with a pixel-shuffled output (the direct kernel writes a
// tile's 4 words from one invocation); N <= 24 with C_in <= 48 (few output channels: the GEMM
// tiles are mostly empty). H100 PERF, us, linear kernel (Auto) vs direct: 1x8x56x56 -> 48 6.5
// / 5.2, 1x16x112x112 -> 96 9.0 / 8.0, 1x16x56x56 -> 96 6.2 / 5.9; refinenet_lite's
// 1x24x64x36 -> 96 shuffled by 2 7.6 / 6.3, 1x24x128x72 -> 96 11.4 / 8.0 (plain 9.0 / 7.8);
// 1x48x256x256 -> 22 13.3 / 11.8; but 1x24x56x56 -> 144 6.4 / 6.5, 1x32x28x28 -> 192 6.2 /
// 6.7, 1x32x56x56 -> 96 6.2 / 7.1, 1x48x56x56 -> 96 6.5 / 7.6, 1x64x56x56 -> 96 6.2 / 8.8.
bool pointwise_runs_direct(const vk::DeviceProfile& profile, int64_t c_in, int64_t c_out,
                           const Conv2dParams& p) {
  if (profile.cpu_kernels || p.gemm != LinearRoute::Auto) return false;
  return c_in <= 16 || (p.upscale > 1 && c_in <= 24) || (c_out <= 24 && c_in <= 48);
}

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

// The gather's geometry (shaders/common/im2col_gather.glslh) of input `d_in`, output `d_out`.
Im2colGeometry im2col_geometry(const Dims4& d_in, const Dims4& d_out, const Conv2dWeights& w,
                               const Conv2dGeometry& g) {
  return {int32_t(div_up(d_in.c, 4)),
          int32_t(d_in.h),
          int32_t(d_in.w),
          int32_t(d_out.h),
          int32_t(d_out.w),
          int32_t(w.kw),
          g.stride_h,
          g.stride_w,
          g.pad_top,
          g.pad_left,
          g.dilation_h,
          g.dilation_w};
}

// Whether Auto takes the implicit im2col where the linear kernel has it: the split-K and
// dot-product GEMM kernels and the cooperative-matrix kernel's wide tile, not its narrow tile.
// H100, us explicit -> implicit (perf/ and etvk/ q8ta_conv2d im2col+explicit / +implicit):
// split-K 1x512x7x7 -> 512 21.1 -> 19.2 (resnet18's: 20.9 -> 19.1), 1x128x28x28 -> 128
// 23.6 -> 21.0, 1x256x14x14 -> 256 24.4 -> 22.5, 1x1 s2 1x1024x14x14 -> 2048 19.7 -> 17.9;
// wide cooperative-matrix tile 1x32x128x128 -> 64 17.7 -> 16.8, 1x64x128x128 -> 64 23.5 ->
// 23.7 (a tie: 24.5 -> 24.1 in another run); but the narrow tile (small grids of 128
// invocations with 4 gathered blocks each per stage: every stage's latency is exposed)
// 1x64x56x56 -> 64 14.5 -> 29.3, refinenet_lite's 1x24x16x9 -> 96 and 1x24x32x18 -> 96
// (pixel-shuffled) 11.8 -> 19.3 and 12.3 -> 21.6. The dot-product GEMM is split-K's kernel
// with one slice (not measured on its own: the H100 runs cooperative matrices).
bool prefer_implicit_im2col(const LinearChoice& gemm) {
  return !(gemm.route == LinearRoute::CoopMat && gemm.narrow_tile);
}

// Whether Auto takes the window form (q8ta_conv2d_coopmat) where it fits: where its grid has at
// least kWindowMinGroups workgroups (two 64-pixel segments of an image row x 64 channels each:
// about one per SM of a large GPU) and K at most kWindowMaxChunks chunks (kernel row x 32
// input channels x 3 taps: each chunk's loads are a step of latency the short multiply hides
// only in part). H100, us window vs the best im2col form (perf/ and etvk/ q8ta_conv2d
// +window): 1x32x128x128 -> 64 14.4 vs 16.8 implicit (128 workgroups, 3 chunks), 1x64x128x128
// -> 64 20.7 vs 23.6 (128, 6); but ResNet-18's 1x64x56x56 -> 64 19.8 vs 14.3 explicit (28
// workgroups), 1x128x28x28 -> 128 31.4 vs 20.8, 1x256x14x14 -> 256 56.3 vs 22.4, 1x512x7x7 ->
// 512 107.6 vs 19.0 (48 chunks on 32 workgroups), refinenet_lite's 1x24x16x9 / 1x24x32x18 ->
// 96 (pixel-shuffled) 12.5 / 13.2 vs 11.8 / 12.0 explicit (16 workgroups).
constexpr int64_t kWindowMinGroups = 100;
constexpr int64_t kWindowMaxChunks = 8;
bool prefer_window(const ConvWindowGrid& grid) {
  return grid.workgroups() >= kWindowMinGroups && grid.chunks <= kWindowMaxChunks;
}

// The Im2col route's form for the linear kernel `gemm` (Im2colForm's rule, never Auto);
// InvalidArgument where a form is asked for that the kernel or the convolution does not have.
// `window_faster`: prefer_window, Auto's choice of the window form where it fits.
Im2colForm im2col_form(const std::string& op, const vk::DeviceProfile& profile,
                       const LinearChoice& gemm, bool in_4w4c, const Im2colGeometry& geometry,
                       bool window_faster, Im2colForm form) {
  const LinearRoute route = gemm.route;
  const bool can = linear_gathers_im2col(profile, route);
  const std::string no_window = conv_window_unfit(profile, route, in_4w4c, geometry);
  switch (form) {
    case Im2colForm::Explicit: return form;
    case Im2colForm::Implicit:
      VKD_CHECK(can, ErrorCode::InvalidArgument, op,
                ": the implicit im2col needs the cooperative-matrix, GEMM or split-K kernel; this "
                "convolution's GEMM runs the ",
                to_string(route), " kernel", profile.cpu_kernels ? " of a CPU device" : "");
      return form;
    case Im2colForm::Window:
      VKD_CHECK(no_window.empty(), ErrorCode::InvalidArgument, op,
                ": the window form (q8ta_conv2d_coopmat) needs ", no_window,
                "; this convolution's GEMM runs the ", to_string(route), " kernel");
      return form;
    case Im2colForm::Auto: break;
  }
  if (no_window.empty() && window_faster) return Im2colForm::Window;
  return can && prefer_implicit_im2col(gemm) ? Im2colForm::Implicit : Im2colForm::Explicit;
}

// Im2col route: the weights (groups 1: [C_out, C_in, KH, KW]) as the GEMM's [C_out, K] matrix in
// the im2col matrix's K order, k = ((ky * KW + kx) * C4_in + ci / 4) * 4 + ci % 4
// (shaders/q8ta_im2col.glsl), zero in the lanes of channels past C_in: the input words' padding
// lanes add nothing, and each row sums to the real weights' sum (the channel constants' wsum).
std::vector<int8_t> im2col_weight_matrix(const Conv2dWeights& w, int64_t c_in) {
  const int64_t c4_in = div_up(c_in, 4), k = im2col_k(w, c_in);
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
// into the output (GEMV for at most 4 pixels, else the dot-product GEMM, split-K or cooperative
// matrices). Implicit form: that kernel's "_im2col" variant reads the convolution's input and
// gathers each block in its loads, one dispatch. Explicit form, two dispatches: q8ta_im2col
// writes the matrix into an intermediate graph tensor (the memory planner reuses its bytes once
// the GEMM has read it), which the plain kernel reads. The reordered weight matrix is made
// here, on the CPU, and held by the LinearWeights until prepare() has packed it into the
// GEMM's blocks.
void add_im2col_conv(graph::ComputeGraph& graph, const std::string& op, const std::string& name,
                     graph::ValueRef input, const Dims4& d_in, const Conv2dWeights& w,
                     graph::ValueRef output, const Dims4& d_out, const Conv2dParams& p) {
  const int64_t k = im2col_k(w, d_in.c);
  auto matrix = std::make_shared<const std::vector<int8_t>>(im2col_weight_matrix(w, d_in.c));
  // The packers keep both the matrix and whatever w's pointers point into.
  const auto owners =
      std::make_shared<const std::pair<std::shared_ptr<const void>, std::shared_ptr<const void>>>(
          matrix, w.owner);
  const LinearWeights lw{matrix->data(), w.scales, w.bias, w.out_channels, k, owners};
  const LinearParams lp = linear_params(p);
  const Im2colGeometry geometry = im2col_geometry(d_in, d_out, w, p.geometry);
  const bool in_4w4c = graph.spec(input).layout == MemoryLayout::PackedInt8_4W4C;
  const LinearChoice gemm =
      chosen_linear_kernel(graph.profile(), op, d_out.n * d_out.h, d_out.w, w.out_channels, k, lp);
  const Im2colForm form = im2col_form(
      op, graph.profile(), gemm, in_4w4c, geometry,
      prefer_window(conv_window_grid(geometry, d_out.n * d_out.h, w.out_channels, k / 4)),
      p.im2col_form);
  if (form != Im2colForm::Explicit) {
    add_q8ta_linear_rows_node(graph, op, input, d_out.n * d_out.h, d_out.w, lw, output, lp,
                              RowsShuffle{p.upscale, d_out.h},
                              Im2colInput{in_4w4c, geometry, form == Im2colForm::Window});
    return;
  }
  const graph::ValueRef cols = graph.add_tensor({{d_out.n, k, d_out.h, d_out.w},
                                                 DType::Int8x4,
                                                 StorageType::Buffer,
                                                 MemoryLayout::PackedInt8_4W4C},
                                                name + ".im2col");
  const int64_t blocks = d_out.n * d_out.h * div_up(d_out.w, 4) * (k / 4);
  const Im2colPush push{int32_t(blocks), int32_t(k / 4), geometry, p.input.zero_point};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::q8ta_im2col[in_4w4c ? 0 : 1];
  node.bindings = {cols, input};
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(blocks));
  graph.add_node(std::move(node));
  add_q8ta_linear_rows_node(graph, op, cols, d_out.n * d_out.h, d_out.w, lw, output, lp,
                            RowsShuffle{p.upscale, d_out.h});
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

Conv2dRoute add_q8ta_conv2d_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                 const Conv2dWeights& given, graph::ValueRef output,
                                 const Conv2dParams& p) {
  const std::string op = p.quantize_input      ? "q8ta_conv2d_fq"
                         : !p.output           ? "q8ta_conv2d_dq"
                         : p.dequantize_output ? "q8ta_conv2d_q_dq"
                         : p.residual          ? "q8ta_conv2d_add"
                         : p.upscale != 1      ? "q8ta_conv2d_ps"
                                               : "q8ta_conv2d";
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
  // d_out: the convolution's own output (the output's sizes, unless it is pixel-shuffled).
  const Dims4 d_in = in.spec().dims4(), d_out = conv_output_dims(op, out.spec().dims4(), p);
  check_conv(op, d_in, d_out, given, p.geometry);
  if (p.residual) check_residual_add(op, graph, output, *p.residual);
  const Conv2dWeights weights = p.upscale > 1 ? phase_major_weights(given, p.upscale) : given;

  const Conv2dRoute route =
      choose_route(op, in.spec(), out.spec(), d_out, weights, p, graph.profile());
  const std::string name = out.name().empty() ? op : out.name();
  if (route == Conv2dRoute::Pointwise &&
      !pointwise_runs_direct(graph.profile(), d_in.c, d_out.c, p)) {
    // 4W4C blocks are (4 pixels of one image row) x (4 channels): the linear kernels' rows x K.
    add_q8ta_linear_rows_node(graph, op, input, d_in.n * d_in.h, d_in.w, as_matrix(weights), output,
                              linear_params(p), RowsShuffle{p.upscale, d_out.h});
    return route;
  }
  if (route == Conv2dRoute::Im2col) {
    add_im2col_conv(graph, op, name, input, d_in, weights, output, d_out, p);
    return route;
  }

  const bool depthwise = route == Conv2dRoute::Depthwise;
  const int64_t c4_in = div_up(d_in.c, 4), c4_out = div_up(d_out.c, 4);
  const Conv2dWeights w = weights;
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
  const auto channels = add_channel_constants(graph, as_matrix(weights), p.input.scale, name);

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
  const int in_layout = in.spec().layout == MemoryLayout::PackedInt8_4W4C ? 0 : 1;  // int8
  // OUTPUT (conv_common.glslh): int8 4W4C / 4C1W, float, int8 4W4C / 4C1W + residual, float
  // of the requantized int8.
  const bool int8_out = p.output && !p.dequantize_output;
  const int out_form =
      !p.output ? 2
      : p.dequantize_output
          ? 5
          : (out.spec().layout == MemoryLayout::PackedInt8_4W4C ? 0 : 1) + (p.residual ? 3 : 0);
  const int dot = graph.profile().int8_dot_product ? 0 : 1;
  graph::DispatchNode node;
  node.op = op;
  node.kernel = depthwise          ? shaders::variants::q8ta_conv2d_dw[in_layout][out_form][dot]
                : p.quantize_input ? shaders::variants::q8ta_conv2d_fq[0][out_form][dot]
                                   : shaders::variants::q8ta_conv2d[in_layout][out_form][dot];
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
  // Depthwise: the geometry is specialized so every loop unrolls, and an invocation computes
  // ROWS output rows of TW tiles, each input row loaded once for all of them
  // (shaders/q8ta_conv2d_dw.glsl).
  const int64_t tiles = d_out.n * d_out.h * div_up(d_out.w, 4) * c4_out;
  const bool row_dots = depthwise && depthwise_row_dots(op, graph.profile(), w, g, in.spec().layout,
                                                        p.depthwise_products);
  const DepthwiseMapping m =
      depthwise ? depthwise_mapping(tiles, p, in.spec().layout, row_dots) : DepthwiseMapping{};
  node.spec_constants = {epilogue_acc_below_2_22(graph.profile(), w.in_per_group * w.kh * w.kw)};
  if (depthwise) {
    node.spec_constants.insert(
        node.spec_constants.end(),
        {uint32_t(w.kh), uint32_t(w.kw), uint32_t(g.stride_h), uint32_t(g.stride_w),
         uint32_t(g.dilation_h), uint32_t(g.dilation_w), uint32_t(g.pad_left), uint32_t(m.rows),
         uint32_t(m.tiles_w), uint32_t(row_dots)});
  }
  if (!depthwise && int8_out) {
    // The direct kernel's store (conv_common.glslh): upscale factor and output channels, the
    // defaults (1, 4) when not shuffled, so unshuffled nodes share one pipeline.
    const int64_t r = p.upscale;
    node.spec_constants.push_back(uint32_t(r));
    node.spec_constants.push_back(uint32_t(r > 1 ? d_out.c / (r * r) : 4));
  }
  if (p.quantize_input) {
    // A workgroup of 64 = kFqTileH x kFqTileW output pixels x CO4 channel blocks, its input
    // window quantized once into shared memory (shaders/q8ta_conv2d.glsl).
    const int64_t co4 = std::min<int64_t>(
        c4_out, graph.profile().cpu_kernels ? kFqChannelBlocksCpu : kFqChannelBlocksGpu);
    const int64_t widths =
        out.spec().layout == MemoryLayout::PackedInt8_4W4C ? 4 * div_up(d_out.w, 4) : d_out.w;
    node.spec_constants.insert(
        node.spec_constants.end(),
        {uint32_t(co4), uint32_t(w.kh), uint32_t(w.kw), uint32_t(div_up(d_in.c, 4)),
         uint32_t(g.stride_h), uint32_t(g.stride_w), uint32_t(g.dilation_h),
         uint32_t(g.dilation_w)});
    node.plan.local_size = {uint32_t(kFqTileH * kFqTileW), 1, 1};
    node.plan.group_count = {uint32_t(div_up(widths, kFqTileW) * div_up(c4_out, co4)),
                             uint32_t(div_up(d_out.h, kFqTileH) * d_out.n), 1};
    graph.add_node(std::move(node));
    return route;
  }
  node.plan = vk::plan_linear(graph.profile(),
                              static_cast<uint64_t>(d_out.n * div_up(d_out.h, m.rows) *
                                                    div_up(d_out.w, 4 * m.tiles_w) * c4_out));
  graph.add_node(std::move(node));
  return route;
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
