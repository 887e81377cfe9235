// Op family: the fused shuffled head (q8ta_conv2d_ps_pw_q_dq).
// Anatomy: push-constant struct (mirroring shaders/q8ta_conv2d_ps_pw.glsl), checks, the form
// choice, the two forms, add_q8ta_conv2d_ps_pw_q_dq_node, registry entry.
#include "runtime/ops/ShuffledHead.h"

#include <algorithm>
#include <string>

#include "core/Error.h"
#include "runtime/ops/ConvPlan.h"
#include "runtime/ops/Linear.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/KernelLimits.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

constexpr const char* kOp = "q8ta_conv2d_ps_pw_q_dq";

shaders::Kernel fused_kernel(const vk::DeviceProfile& profile) {
  return shaders::variants::q8ta_conv2d_ps_pw[profile.int8_dot_product ? 0 : 1];
}

// Mirrors `Params` in shaders/q8ta_conv2d_ps_pw.glsl.
struct ShuffledHeadPush {
  int32_t batches, h_in, w_in;
  int32_t c_out;
  int32_t x_zp;
  float mid_inv_scale;
  int32_t mid_act_min, mid_act_max;
  int32_t in_zp, n_pad, out_zp;
  float inv_out_scale;
  int32_t act_min, act_max;
  float out_scale;
};

// Invocations per workgroup of the fused kernel (one output pixel each).
constexpr uint32_t kFusedWorkgroup = 128;

// The checks of both convolutions and of the op's own arguments; returns mid's sizes.
Dims4 check_shuffled_head(const graph::ComputeGraph& graph, graph::ValueRef input,
                          const Conv2dWeights& shuffle, const Conv2dWeights& head,
                          graph::ValueRef output, const ShuffledHeadParams& p) {
  const std::string op = kOp;
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_int8x4_tensor(op, in);
  VKD_CHECK(in.spec().layout == MemoryLayout::PackedInt8_4W4C && in.spec().sizes.size() >= 3 &&
                in.spec().sizes.size() <= 4,
            ErrorCode::InvalidArgument, op, ": input ", in.spec().describe(),
            " must be an int8x4 buffer in 4W4C of rank 3 or 4 ([N,] C, H, W)");
  check_float_buffer(op, out);
  VKD_CHECK(out.spec().sizes.size() == in.spec().sizes.size(), ErrorCode::InvalidArgument, op,
            ": output ", out.spec().describe(), " must have the input's rank");
  VKD_CHECK(p.upscale >= 2 && p.upscale <= 16, ErrorCode::InvalidArgument, op, ": upscale_factor ",
            p.upscale, " must be in [2, 16]");
  const Dims4 d_in = in.spec().dims4(), d_out = out.spec().dims4();
  const int64_t r = p.upscale, phases = r * r;
  VKD_CHECK(shuffle.kh == 1 && shuffle.kw == 1 && shuffle.in_per_group == d_in.c &&
                shuffle.out_channels % phases == 0 && (shuffle.out_channels / phases) % 4 == 0,
            ErrorCode::InvalidArgument, op, ": the shuffled convolution's weights [",
            shuffle.out_channels, ", ", shuffle.in_per_group, ", ", shuffle.kh, ", ", shuffle.kw,
            "] must be [C * ", phases, ", ", d_in.c, ", 1, 1] with C a multiple of 4");
  const Dims4 d_mid{d_in.n, shuffle.out_channels / phases, d_in.h * r, d_in.w * r};
  VKD_CHECK(head.kh == 1 && head.kw == 1 && head.in_per_group == d_mid.c,
            ErrorCode::InvalidArgument, op, ": the head's weights [", head.out_channels, ", ",
            head.in_per_group, ", ", head.kh, ", ", head.kw, "] must be [N, ", d_mid.c, ", 1, 1]");
  VKD_CHECK(d_out.n == d_mid.n && d_out.c == head.out_channels && d_out.h == d_mid.h &&
                d_out.w == d_mid.w,
            ErrorCode::InvalidArgument, op, ": output sizes [", d_out.n, ", ", d_out.c, ", ",
            d_out.h, ", ", d_out.w, "] must be [", d_mid.n, ", ", head.out_channels, ", ", d_mid.h,
            ", ", d_mid.w, "] (the input's pixel-shuffled sizes, the head's channels)");
  check_quant_params(op, p.input);
  check_requantized_output(op + " mid", p.mid, p.mid_activation_min, p.mid_activation_max);
  check_requantized_output(op, p.output, p.activation_min, p.activation_max);
  check_conv(op, d_in, {d_in.n, shuffle.out_channels, d_in.h, d_in.w}, shuffle, Conv2dGeometry{});
  check_conv(op, d_mid, d_out, head, Conv2dGeometry{});
  return d_mid;
}

// Whether the fused kernel takes the pair: its input words and mid words stay in registers
// (kMaxShuffledHeadChannels each), and its grid of one invocation per output pixel fits int
// indices.
bool fits_fused(const Dims4& d_in, const Dims4& d_mid, const Conv2dWeights& head) {
  return d_in.c <= kMaxShuffledHeadChannels && d_mid.c <= kMaxShuffledHeadChannels &&
         d_mid.n * head.out_channels * d_mid.h * d_mid.w < (int64_t(1) << 31);
}

void add_fused(graph::ComputeGraph& graph, graph::ValueRef input, const Conv2dWeights& shuffle,
               const Conv2dWeights& head, graph::ValueRef output, const Dims4& d_in,
               const Dims4& d_mid, const ShuffledHeadParams& p) {
  const auto& out = graph.tensor(output);
  const std::string name = out.name().empty() ? kOp : out.name();
  const int64_t c4_in = div_up(d_in.c, 4), c4 = d_mid.c / 4, n4 = div_up(head.out_channels, 4);
  // Phase-major, as the shuffled store of q8ta_conv2d_ps computes them: the 4 channels of a
  // weight block (and of a constants word) are mid channels 4 m4 .. + 3 of one phase.
  const Conv2dWeights phased = phase_major_weights(shuffle, p.upscale);
  const auto ps_packed = graph.add_constant(
      {{phased.out_channels / 4 * c4_in, 4},
       DType::Int32,
       StorageType::Buffer,
       MemoryLayout::WidthPacked},
      name + ".ps_weight_packed",
      [phased, c = d_in.c] { return pack_direct_weights(phased, c, 1); },
      static_cast<uint64_t>(phased.out_channels * d_in.c));
  const auto head_packed = graph.add_constant(
      {{n4 * c4, 4}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked},
      name + ".weight_packed", [head, c = d_mid.c] { return pack_direct_weights(head, c, 1); },
      static_cast<uint64_t>(head.out_channels * d_mid.c));
  const auto ps_channels =
      add_channel_constants(graph, as_matrix(phased), p.input.scale, name + ".ps");
  const auto head_channels = add_channel_constants(graph, as_matrix(head), p.mid.scale, name);

  graph::DispatchNode node;
  node.op = kOp;
  node.kernel = fused_kernel(graph.profile());
  node.bindings = {output, input, ps_packed, head_channels, head_packed, ps_channels};
  node.push_constants = graph::push_constant_bytes(ShuffledHeadPush{
      int32_t(d_in.n), int32_t(d_in.h), int32_t(d_in.w), int32_t(head.out_channels),
      p.input.zero_point, inverse_scale(p.mid.scale), p.mid_activation_min, p.mid_activation_max,
      p.mid.zero_point, int32_t(4 * n4), p.output.zero_point, inverse_scale(p.output.scale),
      p.activation_min, p.activation_max, p.output.scale});
  // The epilogues' mantissa conversion only where every accumulator stays below 2^22.
  node.spec_constants = {epilogue_acc_below_2_22(graph.profile(), std::max(d_in.c, d_mid.c)),
                         uint32_t(p.upscale), uint32_t(c4_in), uint32_t(c4), uint32_t(n4)};
  node.plan =
      vk::plan_linear(graph.profile(), uint64_t(d_mid.n * d_mid.h * d_mid.w), kFusedWorkgroup);
  graph.add_node(std::move(node));
}

}  // namespace

ShuffledHeadForm add_q8ta_conv2d_ps_pw_q_dq_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                                 const Conv2dWeights& shuffle,
                                                 const Conv2dWeights& head, graph::ValueRef output,
                                                 const ShuffledHeadParams& p) {
  const Dims4 d_mid = check_shuffled_head(graph, input, shuffle, head, output, p);
  const Dims4 d_in = graph.tensor(input).spec().dims4();
  const bool fits = fits_fused(d_in, d_mid, head);
  VKD_CHECK(fits || p.form != ShuffledHeadForm::Fused, ErrorCode::Unsupported, kOp, ": ", d_in.c,
            " input and ", d_mid.c, " mid channels: the fused kernel keeps at most ",
            kMaxShuffledHeadChannels, " of each in registers");
  // Auto: as the device class's tuning table says (CPU devices: Split, whose first dispatch
  // would compile the fused kernel's unrolled loops; docs/BENCHMARKS.md, "Convolution plan
  // thresholds", shuffled_head_fused).
  // Its 6 storage buffers past a stage's (the Android baseline's 4): Split, whose two
  // convolutions bind 4.
  const shaders::Kernel fused = fused_kernel(graph.profile());
  const bool buffers_fit = vk::fits_storage_buffers(graph.profile(), fused);
  const bool fuse = p.form == ShuffledHeadForm::Fused ||
                    (p.form == ShuffledHeadForm::Auto &&
                     conv_tuning(graph.profile()).shuffled_head_fused && buffers_fit);
  if (p.form == ShuffledHeadForm::Auto && fits && !buffers_fit) {
    note_way_down(graph, kOp, output, "the split form: the pixel-shuffled conv, then the head",
                  vk::storage_buffers_problem(graph.profile(), fused));
  }
  if (fuse && fits) {
    add_fused(graph, input, shuffle, head, output, d_in, d_mid, p);
    return ShuffledHeadForm::Fused;
  }
  const std::string& out_name = graph.tensor(output).name();
  const graph::ValueRef mid =
      graph.add_tensor({{d_mid.n, d_mid.c, d_mid.h, d_mid.w},
                        DType::Int8x4,
                        StorageType::Buffer,
                        MemoryLayout::PackedInt8_4W4C},
                       (out_name.empty() ? std::string(kOp) : out_name) + ".mid");
  Conv2dParams ps =
      requantizing_conv_params(p.input, p.mid, p.mid_activation_min, p.mid_activation_max);
  ps.upscale = p.upscale;
  add_q8ta_conv2d_node(graph, input, shuffle, mid, ps);
  Conv2dParams dq = requantizing_conv_params(p.mid, p.output, p.activation_min, p.activation_max);
  dq.dequantize_output = true;
  add_q8ta_conv2d_node(graph, mid, head, output, dq);
  return ShuffledHeadForm::Split;
}

// --- registry entry -----------------------------------------------------------------

namespace {

void build(const OpCall& call) {
  ShuffledHeadParams p;
  p.input = call.quant("input");
  p.upscale = call.int32_arg("upscale_factor", 2, 16);
  p.mid = call.quant("mid");
  p.mid_activation_min = call.int32_arg("mid_activation_min", -128, 127);
  p.mid_activation_max = call.int32_arg("mid_activation_max", -128, 127);
  p.output = call.quant("output");
  p.activation_min = call.int32_arg("activation_min", -128, 127);
  p.activation_max = call.int32_arg("activation_max", -128, 127);
  call.set_zero_point("input", p.input.zero_point);
  add_q8ta_conv2d_ps_pw_q_dq_node(call.graph(), call.tensor("input"),
                                  blob_conv_weights(call, "ps_"), blob_conv_weights(call, ""),
                                  call.tensor("output"), p);
}

}  // namespace

void register_shuffled_head_ops(OpRegistry& registry) { registry.add(kOp, build); }

}  // namespace vkd::ops
