// Op family: pooling over channels-packed int8x4 tensors (q8ta_max_pool2d, q8ta_avg_pool2d,
// q8ta_adaptive_avg_pool2d, q8ta_mean and q8ta_mean_flat).
#include "runtime/ops/Pool.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/Error.h"
#include "core/PackedInt8Layout.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_max_pool2d.glsl.
struct MaxPoolPush {
  std::array<int32_t, 4> in_sizes, out_sizes;
  std::array<int32_t, 2> kernel, stride, padding, dilation;
  int32_t word_count;
  MovedRequantPush requant;  // requant.out_zp pads in both variants
};

// Mirrors `Params` in shaders/q8ta_avg_pool2d.glsl.
struct AvgPoolPush {
  std::array<int32_t, 4> in_sizes, out_sizes;
  std::array<int32_t, 2> kernel, stride, padding;
  int32_t invocations, in_word_count, adaptive, count_include_pad, table_w, in_zp, out_zp;
  float inv_out_scale;
  float full_m;
};

// Mirrors `Params` in shaders/q8ta_mean.glsl.
struct MeanPush {
  std::array<int32_t, 4> sizes;
  int32_t in_zp, out_zp;
  float mean_scale, inv_out_scale;
  int32_t out_rows, slices, slice_len;
};

// Local size of q8ta_mean (WG in the shader).
constexpr uint32_t kMeanWorkgroup = 128;
// A plane whose (n, c4) blocks alone give fewer workgroups than kMeanGroups is split into
// ranges of at least kMeanMinRange positions (STAGE_SLICES in the shader: still one dispatch).
// Measured on the H100 at 1x64x256x256 (16 blocks): 256 groups of 4096 positions 8.2 / 7.7 us
// (4W4C / 4C1W) with 8 loads per loop step; 1024 groups 9.5 / 8.5; 2048 groups of 512
// positions (4 loads) 11.7 / 10.6: more workgroups cost more than they hide.
constexpr int64_t kMeanGroups = 256;
constexpr int64_t kMeanMinRange = 1024;
// The shader's UNROLL: loads in flight per invocation and loop step. A small plane (7x7: one
// position per invocation) keeps 4; 16 there cost 0.1-0.35 us on the H100.
constexpr uint32_t kMeanUnrollWhole = 4;
constexpr uint32_t kMeanUnrollSlices = 8;

// The q8ta_mean variants' STAGE axis (shaders/q8ta_mean.variants.json).
enum class MeanStage { Whole = 0, Slices = 1 };

// STAGE_SLICES' accumulator: per (n, c4) block 4 channel sums and an arrival count (8 int32
// words), zero when the graph is loaded; each execution's last range of a block sets them back
// to zero.
std::vector<uint8_t> zero_bytes(size_t bytes) { return std::vector<uint8_t>(bytes, 0); }

// Index of a channels-packed layout in the pool families' variant tables (4W4C, 4C1W).
int chw_layout_index(const std::string& op, const graph::GpuTensor& t) {
  VKD_CHECK(is_channels_packed_int8(t.spec()), ErrorCode::InvalidArgument, op, ": tensor '",
            t.name(), "' ", t.spec().describe(), " must be channels-packed (4W4C or 4C1W)");
  return t.spec().layout == MemoryLayout::PackedInt8_4W4C ? 0 : 1;
}

void check_rank(const std::string& op, const graph::GpuTensor& t) {
  const size_t rank = t.spec().sizes.size();
  VKD_CHECK(rank == 3 || rank == 4, ErrorCode::InvalidArgument, op, ": tensor '", t.name(),
            "' must have rank 3 or 4, has ", rank);
}

// Checks a pool node's input/output pair (int8x4, rank 3 or 4, one shared channels-packed
// layout) and returns that layout's index in the variant table.
int checked_pool_layout(const std::string& op, const graph::GpuTensor& in,
                        const graph::GpuTensor& out) {
  check_int8x4_tensor(op, in);
  check_int8x4_tensor(op, out);
  check_rank(op, in);
  check_rank(op, out);
  const int layout = chw_layout_index(op, in);
  VKD_CHECK(in.spec().layout == out.spec().layout, ErrorCode::InvalidArgument, op,
            ": input and output must share their layout (", to_string(in.spec().layout), ", ",
            to_string(out.spec().layout), ")");
  return layout;
}

// Kernel, stride and dilation positive, 0 <= padding <= kernel / 2 (as PyTorch requires), and
// output `out` of the sizes the window geometry gives input `in` (rank 3 or 4 alike).
void check_pool_geometry(const std::string& op, std::array<int32_t, 2> kernel,
                         std::array<int32_t, 2> stride, std::array<int32_t, 2> padding,
                         std::array<int32_t, 2> dilation, bool ceil_mode,
                         const graph::GpuTensor& in, const graph::GpuTensor& out);

// Output [N, C, oh, ow] of input `d` (rank 3 or 4 alike).
void check_pool_output(const std::string& op, const graph::GpuTensor& out, const Dims4& d,
                       int64_t oh, int64_t ow) {
  const Dims4 o = out.spec().dims4();
  VKD_CHECK(o.n == d.n && o.c == d.c && o.h == oh && o.w == ow, ErrorCode::InvalidArgument, op,
            ": output ", out.spec().describe(), " must be [", d.n, ", ", d.c, ", ", oh, ", ", ow,
            "]");
}

void check_pool_geometry(const std::string& op, std::array<int32_t, 2> kernel,
                         std::array<int32_t, 2> stride, std::array<int32_t, 2> padding,
                         std::array<int32_t, 2> dilation, bool ceil_mode,
                         const graph::GpuTensor& in, const graph::GpuTensor& out) {
  for (int k = 0; k < 2; ++k) {
    VKD_CHECK(kernel[k] > 0 && stride[k] > 0 && dilation[k] > 0, ErrorCode::InvalidArgument, op,
              ": kernel, stride and dilation must be positive (", kernel[k], ", ", stride[k], ", ",
              dilation[k], ")");
    VKD_CHECK(padding[k] >= 0 && padding[k] <= kernel[k] / 2, ErrorCode::InvalidArgument, op,
              ": padding ", padding[k], " must be >= 0 and at most half the kernel size ",
              kernel[k]);
  }
  const Dims4 d = in.spec().dims4();
  const int64_t oh =
      max_pool_output_size(d.h, kernel[0], padding[0], stride[0], dilation[0], ceil_mode);
  const int64_t ow =
      max_pool_output_size(d.w, kernel[1], padding[1], stride[1], dilation[1], ceil_mode);
  VKD_CHECK(oh >= 1 && ow >= 1, ErrorCode::InvalidArgument, op, ": output size ", oh, "x", ow,
            " of input ", d.h, "x", d.w, " is too small");
  check_pool_output(op, out, d, oh, ow);
}

int32_t to_i32(const std::string& op, const char* what, int64_t v) {
  VKD_CHECK(v < (int64_t(1) << 31), ErrorCode::Unsupported, op, ": ", what, " ", v,
            " exceeds the 2^31 a kernel can index");
  return static_cast<int32_t>(v);
}

}  // namespace

int64_t max_pool_output_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride,
                             int64_t dilation, bool ceil_mode) {
  const int64_t num = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // Floor division (num may be negative when the window is larger than the padded input).
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

void add_q8ta_max_pool2d_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, const MaxPool2dParams& p) {
  const std::string op = "q8ta_max_pool2d";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  const int layout = checked_pool_layout(op, in, out);
  const bool requant = check_moved_quant(op, p.input, p.output);
  check_pool_geometry(op, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode, in, out);
  const Dims4 d = in.spec().dims4();
  const Dims4 o = out.spec().dims4();
  const int64_t words = packed_int8_word_count(out.spec().layout, o);
  const MaxPoolPush push{nchw_sizes(d),
                         nchw_sizes(o),
                         p.kernel,
                         p.stride,
                         p.padding,
                         p.dilation,
                         to_i32(op, "output words", words),
                         moved_requant_push(p.input, p.output)};
  to_i32(op, "input words", packed_int8_word_count(in.spec().layout, d));
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::q8ta_max_pool2d[layout][requant ? 1 : 0];
  node.bindings = {output, input};
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(words));
  graph.add_node(std::move(node));
}

namespace {

// How q8ta_avg_pool2d's windows are placed: pooling (kernel, stride, padding) or adaptive.
struct AvgWindows {
  bool adaptive = false;
  std::array<int32_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0};
  bool ceil_mode = false;
  bool count_include_pad = false;
  int32_t divisor_override = 0;
};

// The window of output position o along one dim (d: 0 = h, 1 = w) of input size `in` and output
// size `out`, as the shader's pool_window computes it: clipped [start, end) and the extent.
struct Window {
  int64_t start, end, extent;
};
Window pool_window(const AvgWindows& w, int d, int64_t o, int64_t in, int64_t out) {
  if (w.adaptive) {
    const int64_t start = o * in / out, end = ((o + 1) * in + out - 1) / out;
    return {start, end, end - start};
  }
  const int64_t start = o * w.stride[d] - w.padding[d];
  const int64_t end = std::min<int64_t>(start + w.kernel[d], in + w.padding[d]);
  return {std::max<int64_t>(start, 0), std::min(end, in), end - start};
}

// The longest window along dim d (extent, or clipped length when no padding counts): the
// multiplier table's size along it.
int64_t longest_window(const AvgWindows& w, int d, int64_t in, int64_t out) {
  if (!w.adaptive) return w.kernel[d];
  int64_t longest = 0;
  for (int64_t o = 0; o < out; ++o)
    longest = std::max(longest, pool_window(w, d, o, in, out).extent);
  return longest;
}

// Largest window q8ta_avg_pool2d sums: 255 * 16448 < 2^22, the range the kernel converts to
// float32 exactly (small_int_to_float).
constexpr int64_t kMaxAvgWindow = 16448;

// Windows the shader's WINDOWS_FIXED variant takes: at most 257 positions (its 16-bit column
// sums of q + 128 cannot carry) and 3 * stride_w + kernel_w input widths per invocation (its
// MAX_SPAN).
constexpr int64_t kMaxFixedWindow = 257;
constexpr int64_t kMaxFixedSpan = 16;

bool fits_fixed_windows(const AvgWindows& w) {
  return !w.adaptive && int64_t(w.kernel[0]) * w.kernel[1] <= kMaxFixedWindow &&
         3 * int64_t(w.stride[1]) + w.kernel[1] <= kMaxFixedSpan;
}

// m(a, b) = float32(s_in / divisor), divisor = divisor_override or a * b.
float avg_multiplier(int64_t a, int64_t b, float in_scale, int32_t divisor_override) {
  const double divisor = divisor_override != 0 ? divisor_override : static_cast<double>(a * b);
  return static_cast<float>(static_cast<double>(in_scale) / divisor);
}

// m(a, b) for every window of a x b positions (row-major, b fastest): the kernel's table.
std::vector<uint8_t> avg_multipliers(int64_t rows, int64_t cols, float in_scale,
                                     int32_t divisor_override) {
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * cols) * 4);
  for (int64_t a = 1; a <= rows; ++a) {
    for (int64_t b = 1; b <= cols; ++b) {
      const float m = avg_multiplier(a, b, in_scale, divisor_override);
      std::memcpy(bytes.data() + 4 * ((a - 1) * cols + (b - 1)), &m, 4);
    }
  }
  return bytes;
}

// q8ta_avg_pool2d / q8ta_adaptive_avg_pool2d (named `op`) with windows `w`.
void add_avg_pool_node(graph::ComputeGraph& graph, const std::string& op, graph::ValueRef input,
                       graph::ValueRef output, const AvgWindows& w, const QuantParams& in_q,
                       const QuantParams& out_q) {
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  const int layout = checked_pool_layout(op, in, out);
  check_quant_params(op, in_q);
  check_quant_params(op, out_q);
  const Dims4 d = in.spec().dims4();
  const Dims4 o = out.spec().dims4();
  if (w.adaptive) {
    check_pool_output(op, out, d, o.h, o.w);  // any output size: the same N and C
  } else {
    check_pool_geometry(op, w.kernel, w.stride, w.padding, {1, 1}, w.ceil_mode, in, out);
  }
  const int64_t rows = longest_window(w, 0, d.h, o.h), cols = longest_window(w, 1, d.w, o.w);
  VKD_CHECK(rows * cols <= kMaxAvgWindow, ErrorCode::Unsupported, op, ": a window of ", rows, "x",
            cols, " positions exceeds ", kMaxAvgWindow,
            ", beyond which the int32 sum does not convert to float32 exactly in the kernel");
  const int64_t in_words = packed_int8_word_count(in.spec().layout, d);
  const bool fixed = fits_fixed_windows(w);
  // The fixed variant's output rows per invocation (OUT_ROWS): 2 where windows share at least
  // half their rows (each input row is then loaded once for both).
  const int64_t out_rows = fixed && 2 * w.stride[0] <= w.kernel[0] ? 2 : 1;
  const int64_t invocations = d.n * div_up(o.h, out_rows) * div_up(d.c, 4) * div_up(o.w, 4);
  const AvgPoolPush push{nchw_sizes(d),
                         nchw_sizes(o),
                         w.kernel,
                         w.stride,
                         w.padding,
                         to_i32(op, "invocations", invocations),
                         to_i32(op, "input words", in_words),
                         w.adaptive ? 1 : 0,
                         w.count_include_pad ? 1 : 0,
                         static_cast<int32_t>(cols),
                         in_q.zero_point,
                         out_q.zero_point,
                         inverse_scale(out_q.scale),
                         avg_multiplier(w.kernel[0], w.kernel[1], in_q.scale, w.divisor_override)};
  to_i32(op, "output words", packed_int8_word_count(out.spec().layout, o));
  const TensorSpec table{
      {rows * cols}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  const float in_scale = in_q.scale;
  const int32_t divisor = w.divisor_override;
  const graph::ValueRef multipliers = graph.add_constant(
      table, out.name() + ".multipliers",
      [rows, cols, in_scale, divisor] { return avg_multipliers(rows, cols, in_scale, divisor); },
      static_cast<uint64_t>(rows * cols * 4));
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::q8ta_avg_pool2d[fixed ? 1 : 0][layout];
  if (fixed) {
    node.spec_constants = {uint32_t(w.kernel[0]), uint32_t(w.kernel[1]),  uint32_t(w.stride[0]),
                           uint32_t(w.stride[1]), uint32_t(w.padding[0]), uint32_t(w.padding[1]),
                           uint32_t(out_rows)};
  }
  node.bindings = {output, input, multipliers};
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(invocations));
  graph.add_node(std::move(node));
}

}  // namespace

void add_q8ta_avg_pool2d_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, const AvgPool2dParams& p) {
  AvgWindows w;
  w.kernel = p.kernel;
  w.stride = p.stride;
  w.padding = p.padding;
  w.ceil_mode = p.ceil_mode;
  w.count_include_pad = p.count_include_pad;
  w.divisor_override = p.divisor_override;
  add_avg_pool_node(graph, "q8ta_avg_pool2d", input, output, w, p.input, p.output);
}

void add_q8ta_adaptive_avg_pool2d_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                       graph::ValueRef output, const QuantParams& in_q,
                                       const QuantParams& out_q) {
  AvgWindows w;
  w.adaptive = true;
  add_avg_pool_node(graph, "q8ta_adaptive_avg_pool2d", input, output, w, in_q, out_q);
}

namespace {

// The mean's output is either [N, C, 1, 1] in the input's layout (keepdim) or [N, C] in 4H4W
// (rows: the flattened features a linear reads); checks it against input `in` and says which.
bool checked_mean_output(const std::string& op, const graph::GpuTensor& in,
                         const graph::GpuTensor& out) {
  const Dims4 d = in.spec().dims4();
  const std::vector<int64_t>& o = out.spec().sizes;
  if (o.size() <= 2) {
    check_int8x4_tensor(op, in);
    check_int8x4_tensor(op, out);
    check_rank(op, in);
    chw_layout_index(op, in);
    VKD_CHECK(o == (std::vector<int64_t>{d.n, d.c}), ErrorCode::InvalidArgument, op, ": output ",
              out.spec().describe(), " must be [", d.n, ", ", d.c, "]");
    VKD_CHECK(out.spec().layout == MemoryLayout::PackedInt8_4H4W, ErrorCode::InvalidArgument, op,
              ": output ", out.spec().describe(), " of rank ", o.size(), " must be 4H4W");
    return true;
  }
  checked_pool_layout(op, in, out);
  const Dims4 od = out.spec().dims4();
  VKD_CHECK(od.n == d.n && od.c == d.c && od.h == 1 && od.w == 1, ErrorCode::InvalidArgument, op,
            ": output ", out.spec().describe(), " must be [", d.n, ", ", d.c, ", 1, 1] (or [", d.n,
            ", ", d.c, "] in 4H4W)");
  return false;
}

}  // namespace

void add_q8ta_mean_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                        const QuantParams& in_q, const QuantParams& out_q) {
  const std::string op = "q8ta_mean";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  const bool rows = checked_mean_output(op, in, out);
  const int layout = chw_layout_index(op, in);
  check_quant_params(op, in_q);
  check_quant_params(op, out_q);
  const Dims4 d = in.spec().dims4();
  const int64_t count = d.h * d.w;
  VKD_CHECK(count >= 1, ErrorCode::InvalidArgument, op, ": input plane is empty");
  // |sum(q) - count * zp| <= 255 * count must convert to float32 exactly.
  VKD_CHECK(count * 255 < (int64_t(1) << 24), ErrorCode::Unsupported, op, ": H*W = ", count,
            " exceeds 65793, beyond which the int32 sum does not convert to float32 exactly");
  to_i32(op, "input words", packed_int8_word_count(in.spec().layout, d));
  const int64_t c4 = div_up(d.c, 4), blocks = d.n * c4;
  // STAGE_SLICES' atomics use Device scope, which an enabled memory model allows only with
  // its device-scope feature: without it, one workgroup per block.
  const vk::DeviceProfile& profile = graph.profile();
  const bool atomics_ok = profile.device_scope_atomics();
  const int64_t wanted =
      atomics_ok ? std::min(div_up(kMeanGroups, blocks), div_up(count, kMeanMinRange)) : 1;
  const int64_t slice_len = div_up(count, std::max<int64_t>(wanted, 1));
  const int64_t slices = div_up(count, slice_len);
  // Group counts past the device's limits are reported by ComputeGraph's per-node checks.
  const MeanPush push{
      nchw_sizes(d),
      in_q.zero_point,
      out_q.zero_point,
      static_cast<float>(static_cast<double>(in_q.scale) / static_cast<double>(count)),
      inverse_scale(out_q.scale),
      rows ? 1 : 0,
      static_cast<int32_t>(slices),
      static_cast<int32_t>(slice_len)};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::q8ta_mean[static_cast<int>(
      slices == 1 ? MeanStage::Whole : MeanStage::Slices)][layout];
  node.bindings = {output, input};
  if (slices > 1) {
    const TensorSpec accum{
        {blocks, 8}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked};
    const auto bytes = static_cast<size_t>(blocks * 8 * 4);
    node.bindings.push_back(graph.add_constant(
        accum, out.name() + ".accumulator", [bytes] { return zero_bytes(bytes); }, bytes));
  }
  node.push_constants = graph::push_constant_bytes(push);
  node.spec_constants = {slices == 1 ? kMeanUnrollWhole : kMeanUnrollSlices};
  node.plan.local_size = {kMeanWorkgroup, 1, 1};
  node.plan.group_count = {static_cast<uint32_t>(c4), static_cast<uint32_t>(d.n),
                           static_cast<uint32_t>(slices)};
  graph.add_node(std::move(node));
}

// --- registry entries -------------------------------------------------------------

namespace {

// One or two ints (h, w) from a list argument; `fallback` when the list is empty.
std::array<int32_t, 2> pair_arg(const OpCall& call, std::string_view arg,
                                std::array<int32_t, 2> fallback) {
  const std::vector<int32_t> v = call.int32_list(arg, {0, 1, 2}, 0, (1 << 20) - 1);
  if (v.empty()) return fallback;
  return {v.front(), v.back()};
}

// Input and output share the input's qparams; an empty stride is the kernel size.
void build_max_pool2d(const OpCall& call) {
  MaxPool2dParams p;
  p.input = call.quant("input");
  p.output = call.quant("output");
  p.kernel = pair_arg(call, "kernel_size", {0, 0});
  p.stride = pair_arg(call, "stride", p.kernel);
  p.padding = pair_arg(call, "padding", {0, 0});
  p.dilation = pair_arg(call, "dilation", {1, 1});
  p.ceil_mode = call.bool_arg("ceil_mode");
  call.set_zero_point("input", p.input.zero_point);
  call.set_zero_point("output", p.output.zero_point);
  add_q8ta_max_pool2d_node(call.graph(), call.tensor("input"), call.tensor("output"), p);
}

void build_avg_pool2d(const OpCall& call) {
  AvgPool2dParams p;
  p.input = call.quant("input");
  p.output = call.quant("output");
  p.kernel = pair_arg(call, "kernel_size", {0, 0});
  p.stride = pair_arg(call, "stride", p.kernel);
  p.padding = pair_arg(call, "padding", {0, 0});
  p.ceil_mode = call.bool_arg("ceil_mode");
  p.count_include_pad = call.bool_arg("count_include_pad");
  p.divisor_override = call.int32_arg("divisor_override", -(1 << 20), 1 << 20);
  call.set_zero_point("input", p.input.zero_point);
  call.set_zero_point("output", p.output.zero_point);
  add_q8ta_avg_pool2d_node(call.graph(), call.tensor("input"), call.tensor("output"), p);
}

void build_adaptive_avg_pool2d(const OpCall& call) {
  const QuantParams in_q = call.quant("input");
  const QuantParams out_q = call.quant("output");
  call.set_zero_point("input", in_q.zero_point);
  call.set_zero_point("output", out_q.zero_point);
  add_q8ta_adaptive_avg_pool2d_node(call.graph(), call.tensor("input"), call.tensor("output"), in_q,
                                    out_q);
}

void build_mean(const OpCall& call) {
  const QuantParams in_q = call.quant("input");
  const QuantParams out_q = call.quant("output");
  call.set_zero_point("input", in_q.zero_point);
  call.set_zero_point("output", out_q.zero_point);
  add_q8ta_mean_node(call.graph(), call.tensor("input"), call.tensor("output"), in_q, out_q);
}

}  // namespace

void register_pool_ops(OpRegistry& registry) {
  registry.add("q8ta_max_pool2d", build_max_pool2d);
  registry.add("q8ta_avg_pool2d", build_avg_pool2d);
  registry.add("q8ta_adaptive_avg_pool2d", build_adaptive_avg_pool2d);
  registry.add("q8ta_mean", build_mean);
  registry.add("q8ta_mean_flat", build_mean);  // the same kernel, output [N, C] in 4H4W
}

}  // namespace vkd::ops
