// Op family: fused depthwise -> 1x1 convolution (q8ta_conv2d_dw_pw, q8ta_conv2d_dw_pw_add) and
// with the 1x1 expansion before it (q8ta_conv2d_pw_dw_pw, q8ta_conv2d_pw_dw_pw_add).
// Anatomy: push-constant struct (mirroring shaders/q8ta_conv2d_dw_pw.glsl), checks, the form
// choice, the two forms, add_q8ta_conv2d_dw_pw_node, registry entries.
#include "runtime/ops/DepthwisePointwise.h"

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

// Mirrors `Params` in shaders/q8ta_conv2d_dw_pw.glsl.
struct DwPwPush {
  int32_t batches, h_in, w_in;
  int32_t h_out, w_out;
  int32_t c_out, c4_out;
  int32_t pad_top;
  int32_t x_zp;
  float mid_inv_scale;
  int32_t mid_act_min, mid_act_max;
  int32_t in_zp, n_pad, out_zp;
  float inv_out_scale;
  int32_t act_min, act_max;
};
// EXPAND's members (q8ta_conv2d_pw_dw_pw).
struct ExpandPush {
  int32_t c4_x, x_in_zp;
  float e_inv_scale;
  int32_t e_act_min, e_act_max;
};

// Invocations per workgroup of the fused kernel: four subgroups of 32 (or sixteen of 8); each
// phase's items are then spread over more invocations, as the few-workgroup grids of these
// layers are latency-bound (measured: docs/BENCHMARKS.md, "Convolution plan thresholds",
// dw_pw workgroup).
constexpr uint32_t kFusedWorkgroup = 128;
// The invocations the tile rule below counts on (it was measured with 64-invocation
// workgroups, and the larger workgroups above kept its choices).
constexpr int64_t kTileRuleInvocations = 64;

std::string op_name(const DepthwisePointwiseParams& p) {
  return std::string(p.expansion ? "q8ta_conv2d_pw_dw_pw" : "q8ta_conv2d_dw_pw") +
         (p.residual ? "_add" : "");
}

// What the depthwise reads: the input, or the expansion's output.
QuantParams depthwise_input_quant(const DepthwisePointwiseParams& p) {
  return p.expansion ? p.expansion->output : p.input;
}

Conv2dParams depthwise_params(const DepthwisePointwiseParams& p, int64_t channels) {
  Conv2dParams dw = requantizing_conv_params(depthwise_input_quant(p), p.mid, p.mid_activation_min,
                                             p.mid_activation_max);
  dw.geometry = p.geometry;
  dw.geometry.groups = static_cast<int32_t>(channels);
  return dw;
}
Conv2dParams pointwise_params(const DepthwisePointwiseParams& p) {
  Conv2dParams pw = requantizing_conv_params(p.mid, p.output, p.activation_min, p.activation_max);
  pw.residual = p.residual;
  return pw;
}

// The checks of both convolutions and of the fused op's own limits; returns mid's sizes.
Dims4 check_dw_pw(const std::string& op, const graph::ComputeGraph& graph, graph::ValueRef input,
                  const Conv2dWeights& dw, const Conv2dWeights& pw, graph::ValueRef output,
                  const DepthwisePointwiseParams& p) {
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  for (const auto* t : {&in, &out}) {
    check_int8x4_tensor(op, *t);
    VKD_CHECK(t->spec().layout == MemoryLayout::PackedInt8_4W4C && t->spec().sizes.size() >= 3 &&
                  t->spec().sizes.size() <= 4,
              ErrorCode::InvalidArgument, op, ": ", t == &in ? "input " : "output ",
              t->spec().describe(),
              " must be an int8x4 buffer in 4W4C of rank 3 or 4 ([N,] C, H, W)");
  }
  VKD_CHECK(out.spec().sizes.size() == in.spec().sizes.size(), ErrorCode::InvalidArgument, op,
            ": output ", out.spec().describe(), " must have the input's rank");
  const Dims4 d_x = in.spec().dims4(), d_out = out.spec().dims4();
  // d_in: what the depthwise reads (the expansion's output sizes with one).
  Dims4 d_in = d_x;
  if (p.expansion) {
    const Conv2dWeights& e = p.expansion->weights;
    VKD_CHECK(e.kh == 1 && e.kw == 1 && e.in_per_group == d_x.c, ErrorCode::InvalidArgument, op,
              ": the expansion weights [", e.out_channels, ", ", e.in_per_group, ", ", e.kh, ", ",
              e.kw, "] must be [C, ", d_x.c, ", 1, 1]");
    d_in.c = e.out_channels;
    check_conv(op, d_x, d_in, e, Conv2dGeometry{});
    check_requantized_output(op + " expansion", p.expansion->output, p.expansion->activation_min,
                             p.expansion->activation_max);
  }
  VKD_CHECK(dw.in_per_group == 1 && dw.out_channels == d_in.c, ErrorCode::InvalidArgument, op,
            ": the depthwise weights [", dw.out_channels, ", ", dw.in_per_group, ", ", dw.kh, ", ",
            dw.kw, "] must be [C, 1, KH, KW] with C = the input's ", d_in.c, " channels");
  VKD_CHECK(pw.kh == 1 && pw.kw == 1 && pw.in_per_group == d_in.c, ErrorCode::InvalidArgument, op,
            ": the 1x1 weights [", pw.out_channels, ", ", pw.in_per_group, ", ", pw.kh, ", ", pw.kw,
            "] must be [N, ", d_in.c, ", 1, 1]");
  VKD_CHECK(d_in.c <= kMaxDepthwisePointwiseChannels, ErrorCode::Unsupported, op, ": ", d_in.c,
            " depthwise channels exceed the fused kernel's ", kMaxDepthwisePointwiseChannels);
  check_quant_params(op, p.input);
  check_requantized_output(op + " mid", p.mid, p.mid_activation_min, p.mid_activation_max);
  check_requantized_output(op, p.output, p.activation_min, p.activation_max);
  VKD_CHECK(p.tiles_per_workgroup >= 0 && p.tiles_per_workgroup <= 64, ErrorCode::InvalidArgument,
            op, ": tiles_per_workgroup ", p.tiles_per_workgroup, " must be 0 (chosen) or 1..64");
  VKD_CHECK(p.rows_per_workgroup >= 0 && p.rows_per_workgroup <= 4, ErrorCode::InvalidArgument, op,
            ": rows_per_workgroup ", p.rows_per_workgroup, " must be 0 (chosen) or 1..4");
  VKD_CHECK(p.workgroup_size == 0 || p.workgroup_size == 64 || p.workgroup_size == 128 ||
                p.workgroup_size == 256,
            ErrorCode::InvalidArgument, op, ": workgroup_size ", p.workgroup_size,
            " must be 0 (chosen), 64, 128 or 256");
  Conv2dGeometry g = p.geometry;
  g.groups = static_cast<int32_t>(d_in.c);
  const int64_t h_out =
      conv_out_size(d_in.h, g.pad_top, g.pad_bottom, g.dilation_h, dw.kh, g.stride_h);
  const int64_t w_out =
      conv_out_size(d_in.w, g.pad_left, g.pad_right, g.dilation_w, dw.kw, g.stride_w);
  VKD_CHECK(d_out.n == d_in.n && d_out.c == pw.out_channels && d_out.h == h_out && d_out.w == w_out,
            ErrorCode::InvalidArgument, op, ": output sizes [", d_out.n, ", ", d_out.c, ", ",
            d_out.h, ", ", d_out.w, "] must be [", d_in.n, ", ", pw.out_channels, ", ", h_out, ", ",
            w_out, "] (the depthwise's output sizes, the 1x1's channels)");
  const Dims4 d_mid{d_in.n, d_in.c, d_out.h, d_out.w};
  check_conv(op, d_in, d_mid, dw, g);
  check_conv(op, d_mid, d_out, pw, Conv2dGeometry{});
  if (p.residual) check_residual_add(op, graph, output, *p.residual);
  return d_mid;
}

// The fused form's output tiles per workgroup: as asked, else enough that phase 1's TP * C4
// depthwise tiles keep the workgroup's invocations busy about twice, but at least 2 and no more
// than leave 256 workgroups, within 16 KiB of shared memory (measured: docs/BENCHMARKS.md,
// "Convolution plan thresholds", dw_pw tiles per workgroup).
int64_t tiles_per_workgroup(const DepthwisePointwiseParams& p, int64_t c4, int64_t tiles) {
  if (p.tiles_per_workgroup > 0) return p.tiles_per_workgroup;
  const int64_t fit = std::max<int64_t>(1, (16 << 10) / (16 * c4));
  const int64_t busy = std::min<int64_t>(2 * kTileRuleInvocations / c4, tiles / 256);
  return std::min<int64_t>(std::clamp<int64_t>(busy, 2, 16), fit);
}

// The fused form's kernel: with or without the expansion and the residual add.
shaders::Kernel fused_kernel(const vk::DeviceProfile& profile, const DepthwisePointwiseParams& p) {
  return shaders::variants::q8ta_conv2d_dw_pw[p.expansion ? 1 : 0][p.residual ? 1 : 0]
                                             [profile.int8_dot_product ? 0 : 1];
}

// What of the fused kernel exceeds the device; empty when it fits.
std::string fused_kernel_problem(const vk::DeviceProfile& profile,
                                 const DepthwisePointwiseParams& p) {
  const shaders::Kernel kernel = fused_kernel(profile, p);
  if (!vk::fits_storage_buffers(profile, kernel))
    return vk::storage_buffers_problem(profile, kernel);
  const uint32_t workgroup = p.workgroup_size > 0 ? uint32_t(p.workgroup_size) : kFusedWorkgroup;
  if (workgroup > profile.max_workgroup_invocations || workgroup > profile.max_workgroup_size[0]) {
    return "the fused kernel's workgroup of " + std::to_string(workgroup) +
           " invocations exceeds the device's " + std::to_string(profile.max_workgroup_invocations);
  }
  return "";
}

// Auto's form: Split where the device class's tuning table does not fuse (CPU devices), where
// the 1x1 has more than dw_pw_max_fused_out output channels: the fused kernel's few
// workgroups (one per TP tiles) each sum all C mid channels for every output channel in turn
// (ConvTuning; measured: docs/BENCHMARKS.md, "Convolution plan thresholds"), and where the
// fused kernel does not fit the device: its 6 to 9 storage buffers (the Android baseline
// allows 4 a stage) or its workgroup (`fused_fits` false: fused_kernel_problem named one).
DepthwisePointwiseForm chosen_form(const vk::DeviceProfile& profile, int64_t n_out,
                                   const DepthwisePointwiseParams& p, bool fused_fits) {
  if (p.form != DepthwisePointwiseForm::Auto) return p.form;
  const ConvTuning& t = conv_tuning(profile);
  return !fused_fits || !t.dw_pw_fused || n_out > t.dw_pw_max_fused_out
             ? DepthwisePointwiseForm::Split
             : DepthwisePointwiseForm::Fused;
}

// Output rows per workgroup with an expansion (shaders/q8ta_conv2d_dw_pw.glsl's ROWS): as
// asked, else 2 at stride 1 (two rows share the window rows their 3x3 taps read: 4 expanded
// rows for 2 output rows instead of 6), else 1: at stride 2 (fewer window rows shared) every
// shape measured was slower with 2 rows (docs/BENCHMARKS.md, "Convolution plan thresholds",
// dw_pw expanded rows).
int64_t expanded_rows_per_workgroup(const DepthwisePointwiseParams& p) {
  if (p.rows_per_workgroup > 0) return p.rows_per_workgroup;
  return p.geometry.stride_h == 1 ? 2 : 1;
}

// Shared memory of the fused kernel with an expansion: the window's rows x widths x C4 words,
// and mid (16 bytes per tile and channel block).
int64_t expanded_shared_bytes(const Conv2dWeights& dw, const Conv2dGeometry& g, int64_t c4,
                              int64_t tp, int64_t rows) {
  const int64_t win_w = (4 * tp - 1) * g.stride_w + (dw.kw - 1) * g.dilation_w + 1;
  const int64_t win_rows = (rows - 1) * g.stride_h + (dw.kh - 1) * g.dilation_h + 1;
  return 4 * win_rows * win_w * c4 + 16 * rows * tp * c4;
}

// With an expansion, a workgroup's TP tiles lie in one output row (of each of its rows): as
// asked, else 1, or 2 where the output has more than 1024 tiles (more tiles per workgroup share
// more of the window, less halo recomputed, but leave fewer workgroups); fewer while the window
// and mid do not fit `shared_bytes` (0 when even one tile does not); measured:
// docs/BENCHMARKS.md, "Convolution plan thresholds", dw_pw expanded tiles.
int64_t expanded_tiles_per_workgroup(const DepthwisePointwiseParams& p, const Conv2dWeights& dw,
                                     int64_t c4, int64_t tiles, uint32_t shared_bytes) {
  const int64_t rows = expanded_rows_per_workgroup(p);
  int64_t tp = p.tiles_per_workgroup > 0 ? p.tiles_per_workgroup : tiles > 1024 ? 2 : 1;
  while (tp > 0 && expanded_shared_bytes(dw, p.geometry, c4, tp, rows) > int64_t(shared_bytes)) {
    --tp;
  }
  return tp;
}

// Whether Auto runs an expansion inside the fused kernel: its window recomputes the expansion
// (C_x x C products per window pixel) for every output row's KH input rows and each workgroup's
// halo, which pays for the dispatch and the expanded tensor's round trip it saves only while
// that product is small: up to the tuning table's dw_pw_max_expansion_products (measured:
// docs/BENCHMARKS.md, "Convolution plan thresholds").
bool prefer_fused_expansion(const vk::DeviceProfile& profile, const DepthwiseExpansion& e) {
  return e.weights.in_per_group * e.weights.out_channels <=
         conv_tuning(profile).dw_pw_max_expansion_products;
}

// Appends push-constant member `value` (the kernel's Params members follow one another).
template <typename T>
void append_push(std::vector<uint8_t>& bytes, const T& value) {
  const std::vector<uint8_t> more = graph::push_constant_bytes(value);
  bytes.insert(bytes.end(), more.begin(), more.end());
}

// The fused kernel for `d_in` (what the depthwise reads), `tp` tiles per workgroup (with an
// expansion: expanded_tiles_per_workgroup's).
void add_fused(graph::ComputeGraph& graph, const std::string& op, graph::ValueRef input,
               const Conv2dWeights& dw, const Conv2dWeights& pw, graph::ValueRef output,
               const Dims4& d_in, const Dims4& d_mid, int64_t tp,
               const DepthwisePointwiseParams& p) {
  const auto& out = graph.tensor(output);
  const Dims4 d_out = out.spec().dims4();
  const std::string name = out.name().empty() ? op : out.name();
  const int64_t c4 = div_up(d_in.c, 4), n4 = div_up(d_out.c, 4);
  const QuantParams dw_in = depthwise_input_quant(p);
  const auto dw_packed = graph.add_constant(
      {{c4 * dw.kh * dw.kw}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked},
      name + ".dw_weight_packed", [dw] { return pack_depthwise_weights(dw); },
      static_cast<uint64_t>(dw.out_channels * dw.kh * dw.kw));
  const auto pw_packed = graph.add_constant(
      {{n4 * c4, 4}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked},
      name + ".weight_packed", [pw, c = d_in.c] { return pack_direct_weights(pw, c, 1); },
      static_cast<uint64_t>(pw.out_channels * pw.in_per_group));
  const auto dw_channels = add_channel_constants(graph, as_matrix(dw), dw_in.scale, name + ".dw");
  const auto pw_channels = add_channel_constants(graph, as_matrix(pw), p.mid.scale, name);

  graph::DispatchNode node;
  node.op = op;
  node.kernel = fused_kernel(graph.profile(), p);
  node.bindings = {output, input, dw_packed, pw_channels, pw_packed, dw_channels};
  node.push_constants = graph::push_constant_bytes(
      DwPwPush{int32_t(d_in.n), int32_t(d_in.h), int32_t(d_in.w), int32_t(d_out.h),
               int32_t(d_out.w), int32_t(d_out.c), int32_t(n4), p.geometry.pad_top,
               dw_in.zero_point, inverse_scale(p.mid.scale), p.mid_activation_min,
               p.mid_activation_max, p.mid.zero_point, int32_t(4 * n4), p.output.zero_point,
               inverse_scale(p.output.scale), p.activation_min, p.activation_max});
  int64_t products = std::max<int64_t>(dw.kh * dw.kw, d_in.c);
  if (p.expansion) {
    const DepthwiseExpansion& e = *p.expansion;
    const int64_t c_x = e.weights.in_per_group, c4_x = div_up(c_x, 4);
    node.bindings.push_back(graph.add_constant(
        {{c4 * c4_x, 4}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked},
        name + ".expand_weight_packed",
        [w = e.weights, c_x] { return pack_direct_weights(w, c_x, 1); },
        static_cast<uint64_t>(e.weights.out_channels * c_x)));
    node.bindings.push_back(
        add_channel_constants(graph, as_matrix(e.weights), p.input.scale, name + ".expand"));
    append_push(node.push_constants,
                ExpandPush{int32_t(c4_x), p.input.zero_point, inverse_scale(e.output.scale),
                           e.activation_min, e.activation_max});
    products = std::max(products, c_x);
  }
  if (p.residual) {
    const ResidualAdd& r = *p.residual;
    node.bindings.push_back(r.other);
    append_push(node.push_constants, binary_quant_push(p.output, r.other_quant, r.output,
                                                       r.activation_min, r.activation_max));
  }
  const Conv2dGeometry& g = p.geometry;
  const int64_t rows = p.expansion ? expanded_rows_per_workgroup(p) : 1;
  // The epilogues' mantissa conversion only where every accumulator stays below 2^22.
  node.spec_constants = {epilogue_acc_below_2_22(graph.profile(), products),
                         uint32_t(dw.kh),
                         uint32_t(dw.kw),
                         uint32_t(g.stride_h),
                         uint32_t(g.stride_w),
                         uint32_t(g.dilation_h),
                         uint32_t(g.dilation_w),
                         uint32_t(g.pad_left),
                         uint32_t(c4),
                         uint32_t(tp),
                         uint32_t(rows)};
  node.plan.local_size = {p.workgroup_size > 0 ? uint32_t(p.workgroup_size) : kFusedWorkgroup, 1,
                          1};
  const vk::DeviceProfile& profile = graph.profile();
  if (p.expansion) {
    // x: the tile blocks of an output row, y: image and row group (tile_position, EXPAND).
    const int64_t groups = d_mid.n * div_up(d_mid.h, rows);
    VKD_CHECK(groups <= profile.max_workgroup_count[1], ErrorCode::Unsupported, op, ": ", groups,
              " output row groups exceed the device's grid");
    node.plan.group_count = {static_cast<uint32_t>(div_up(div_up(d_mid.w, 4), tp)),
                             static_cast<uint32_t>(groups), 1};
  } else {
    const uint64_t groups =
        static_cast<uint64_t>(div_up(d_mid.n * d_mid.h * div_up(d_mid.w, 4), tp));
    const uint64_t max_x = profile.max_workgroup_count[0];
    const uint64_t gy = (groups + max_x - 1) / max_x;
    VKD_CHECK(gy <= profile.max_workgroup_count[1], ErrorCode::Unsupported, op, ": ", groups,
              " workgroups exceed the device's grid");
    node.plan.group_count = {static_cast<uint32_t>(gy > 1 ? max_x : groups),
                             static_cast<uint32_t>(gy), 1};
  }
  graph.add_node(std::move(node));
}

}  // namespace

DepthwisePointwiseForm add_q8ta_conv2d_dw_pw_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                                  const Conv2dWeights& depthwise,
                                                  const Conv2dWeights& pointwise,
                                                  graph::ValueRef output,
                                                  const DepthwisePointwiseParams& p) {
  const std::string op = op_name(p);
  const Dims4 d_mid = check_dw_pw(op, graph, input, depthwise, pointwise, output, p);
  const Dims4 d_in{d_mid.n, d_mid.c, graph.tensor(input).spec().dims4().h,
                   graph.tensor(input).spec().dims4().w};
  const std::string unfit =
      p.form == DepthwisePointwiseForm::Auto ? fused_kernel_problem(graph.profile(), p) : "";
  const DepthwisePointwiseForm form =
      chosen_form(graph.profile(), pointwise.out_channels, p, unfit.empty());
  if (!unfit.empty()) {
    note_way_down(graph, op, output,
                  p.expansion ? "the expanding 1x1 on its own, then depthwise -> 1x1"
                              : "the split form: depthwise, then the 1x1",
                  unfit);
  }
  const std::string& out_name = graph.tensor(output).name();
  const std::string name = out_name.empty() ? op : out_name;
  const auto int8_4w4c = [](const Dims4& d) {
    return TensorSpec{
        {d.n, d.c, d.h, d.w}, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C};
  };
  const int64_t c4 = div_up(d_mid.c, 4);
  if (p.expansion) {
    const bool fuse = p.form == DepthwisePointwiseForm::Fused ||
                      (form == DepthwisePointwiseForm::Fused &&
                       prefer_fused_expansion(graph.profile(), *p.expansion));
    const int64_t tp = fuse ? expanded_tiles_per_workgroup(p, depthwise, c4,
                                                           d_mid.n * d_mid.h * div_up(d_mid.w, 4),
                                                           graph.profile().max_shared_memory_bytes)
                            : 0;
    VKD_CHECK(tp > 0 || p.form != DepthwisePointwiseForm::Fused, ErrorCode::Unsupported, op,
              ": the fused kernel's window of ", d_mid.c, " channels does not fit the device's ",
              graph.profile().max_shared_memory_bytes, " bytes of shared memory");
    if (tp > 0) {
      add_fused(graph, op, input, depthwise, pointwise, output, d_in, d_mid, tp, p);
      return DepthwisePointwiseForm::Fused;
    }
    // The expansion into its own tensor, then the depthwise -> 1x1 op by its own rule.
    const graph::ValueRef expanded = graph.add_tensor(int8_4w4c(d_in), name + ".expanded");
    const DepthwiseExpansion& e = *p.expansion;
    add_q8ta_conv2d_node(
        graph, input, e.weights, expanded,
        requantizing_conv_params(p.input, e.output, e.activation_min, e.activation_max));
    DepthwisePointwiseParams rest = p;
    rest.input = p.expansion->output;
    rest.expansion.reset();
    add_q8ta_conv2d_dw_pw_node(graph, expanded, depthwise, pointwise, output, rest);
    return DepthwisePointwiseForm::Split;
  }
  if (form == DepthwisePointwiseForm::Fused) {
    const int64_t tp = tiles_per_workgroup(p, c4, d_mid.n * d_mid.h * div_up(d_mid.w, 4));
    const uint32_t shared = graph.profile().max_shared_memory_bytes;
    VKD_CHECK(16 * tp * c4 <= int64_t(shared), ErrorCode::Unsupported, op, ": ", tp,
              " tiles per workgroup of ", d_mid.c, " channels need ", 16 * tp * c4,
              " bytes of shared memory; the device has ", shared);
    add_fused(graph, op, input, depthwise, pointwise, output, d_in, d_mid, tp, p);
    return form;
  }
  const graph::ValueRef mid = graph.add_tensor(int8_4w4c(d_mid), name + ".mid");
  add_q8ta_conv2d_node(graph, input, depthwise, mid, depthwise_params(p, d_mid.c));
  add_q8ta_conv2d_node(graph, mid, pointwise, output, pointwise_params(p));
  return form;
}

// --- registry entries -------------------------------------------------------------

namespace {

// The arguments every op of the family shares: the input, the depthwise and mid; the input's zero
// point recorded.
DepthwisePointwiseParams blob_params(const OpCall& call) {
  DepthwisePointwiseParams p;
  p.input = call.quant("input");
  p.geometry = blob_conv_geometry(call);
  p.mid = call.quant("mid");
  p.mid_activation_min = call.int32_arg("mid_activation_min", -128, 127);
  p.mid_activation_max = call.int32_arg("mid_activation_max", -128, 127);
  call.set_zero_point("input", p.input.zero_point);
  return p;
}

// Either op's own 1x1 output: plain ("output_"), or with `add` the 1x1's int8 value ("conv_")
// as the add's a; with `expand` the 1x1 expansion ("expand_") first.
void build(const OpCall& call, bool add, bool expand) {
  DepthwisePointwiseParams p = blob_params(call);
  const std::string own = add ? "conv" : "output";
  p.output = call.quant(own);
  p.activation_min = call.int32_arg(add ? "conv_activation_min" : "activation_min", -128, 127);
  p.activation_max = call.int32_arg(add ? "conv_activation_max" : "activation_max", -128, 127);
  if (add) {
    p.residual = residual_add(call);
  } else {
    call.set_zero_point("output", p.output.zero_point);
  }
  if (expand) {
    DepthwiseExpansion e;
    e.weights = blob_conv_weights(call, "expand_");
    e.output = call.quant("expand");
    e.activation_min = call.int32_arg("expand_activation_min", -128, 127);
    e.activation_max = call.int32_arg("expand_activation_max", -128, 127);
    p.expansion = e;
  }
  add_q8ta_conv2d_dw_pw_node(call.graph(), call.tensor("input"), blob_conv_weights(call, "dw_"),
                             blob_conv_weights(call, ""), call.tensor("output"), p);
}

}  // namespace

void register_depthwise_pointwise_ops(OpRegistry& registry) {
  registry.add("q8ta_conv2d_dw_pw", [](const OpCall& c) { build(c, false, false); });
  registry.add("q8ta_conv2d_dw_pw_add", [](const OpCall& c) { build(c, true, false); });
  registry.add("q8ta_conv2d_pw_dw_pw", [](const OpCall& c) { build(c, false, true); });
  registry.add("q8ta_conv2d_pw_dw_pw_add", [](const OpCall& c) { build(c, true, true); });
}

}  // namespace vkd::ops
