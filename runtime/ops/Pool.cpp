// Op family: pooling over channels-packed int8x4 tensors (q8ta_max_pool2d, q8ta_mean and
// q8ta_mean_flat).
#include "runtime/ops/Pool.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/core/Error.h"
#include "runtime/core/PackedInt8Layout.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_max_pool2d.glsl.
struct MaxPoolPush {
  std::array<int32_t, 4> in_sizes, out_sizes;
  std::array<int32_t, 2> kernel, stride, padding, dilation;
  int32_t word_count, zero_point;
};

// Mirrors `Params` in shaders/q8ta_mean.glsl.
struct MeanPush {
  std::array<int32_t, 4> sizes;
  int32_t in_zp, out_zp;
  float mean_scale, inv_out_scale;
  int32_t out_rows;
};

// Local size of q8ta_mean (WG in the shader).
constexpr uint32_t kMeanWorkgroup = 128;

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
  VKD_CHECK(-128 <= p.zero_point && p.zero_point <= 127, ErrorCode::InvalidArgument, op,
            ": zero_point ", p.zero_point, " outside [-128, 127]");
  for (int k = 0; k < 2; ++k) {
    VKD_CHECK(p.kernel[k] > 0 && p.stride[k] > 0 && p.dilation[k] > 0,
              ErrorCode::InvalidArgument, op, ": kernel, stride and dilation must be positive (",
              p.kernel[k], ", ", p.stride[k], ", ", p.dilation[k], ")");
    VKD_CHECK(p.padding[k] >= 0 && p.padding[k] <= p.kernel[k] / 2, ErrorCode::InvalidArgument,
              op, ": padding ", p.padding[k], " must be >= 0 and at most half the kernel size ",
              p.kernel[k]);
  }
  const Dims4 d = in.spec().dims4();
  const Dims4 o = out.spec().dims4();
  const int64_t oh = max_pool_output_size(d.h, p.kernel[0], p.padding[0], p.stride[0],
                                          p.dilation[0], p.ceil_mode);
  const int64_t ow = max_pool_output_size(d.w, p.kernel[1], p.padding[1], p.stride[1],
                                          p.dilation[1], p.ceil_mode);
  VKD_CHECK(oh >= 1 && ow >= 1, ErrorCode::InvalidArgument, op, ": output size ", oh, "x", ow,
            " of input ", d.h, "x", d.w, " is too small");
  VKD_CHECK(o.n == d.n && o.c == d.c && o.h == oh && o.w == ow, ErrorCode::InvalidArgument, op,
            ": output ", out.spec().describe(), " must be [", d.n, ", ", d.c, ", ", oh, ", ", ow,
            "]");
  const int64_t words = packed_int8_word_count(out.spec().layout, o);
  const MaxPoolPush push{nchw_sizes(d),
                         nchw_sizes(o),
                         p.kernel,
                         p.stride,
                         p.padding,
                         p.dilation,
                         to_i32(op, "output words", words),
                         p.zero_point};
  to_i32(op, "input words", packed_int8_word_count(in.spec().layout, d));
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::q8ta_max_pool2d[layout];
  node.bindings = {output, input};
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(words));
  graph.add_node(std::move(node));
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
    VKD_CHECK(o == (std::vector<int64_t>{d.n, d.c}), ErrorCode::InvalidArgument, op,
              ": output ", out.spec().describe(), " must be [", d.n, ", ", d.c, "]");
    VKD_CHECK(out.spec().layout == MemoryLayout::PackedInt8_4H4W, ErrorCode::InvalidArgument,
              op, ": output ", out.spec().describe(), " of rank ", o.size(), " must be 4H4W");
    return true;
  }
  checked_pool_layout(op, in, out);
  const Dims4 od = out.spec().dims4();
  VKD_CHECK(od.n == d.n && od.c == d.c && od.h == 1 && od.w == 1, ErrorCode::InvalidArgument,
            op, ": output ", out.spec().describe(), " must be [", d.n, ", ", d.c,
            ", 1, 1] (or [", d.n, ", ", d.c, "] in 4H4W)");
  return false;
}

}  // namespace

void add_q8ta_mean_node(graph::ComputeGraph& graph, graph::ValueRef input,
                        graph::ValueRef output, const QuantParams& in_q,
                        const QuantParams& out_q) {
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
  const int64_t c4 = div_up(d.c, 4);
  // Group counts past the device's limits are reported by ComputeGraph's per-node checks.
  const MeanPush push{nchw_sizes(d), in_q.zero_point, out_q.zero_point,
                      static_cast<float>(static_cast<double>(in_q.scale) /
                                         static_cast<double>(count)),
                      inverse_scale(out_q.scale), rows ? 1 : 0};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::q8ta_mean[layout];
  node.bindings = {output, input};
  node.push_constants = graph::push_constant_bytes(push);
  node.plan.local_size = {kMeanWorkgroup, 1, 1};
  node.plan.group_count = {static_cast<uint32_t>(c4), static_cast<uint32_t>(d.n), 1};
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
  const QuantParams q = call.quant("input");
  check_quant_params("q8ta_max_pool2d", q);
  MaxPool2dParams p;
  p.kernel = pair_arg(call, "kernel_size", {0, 0});
  p.stride = pair_arg(call, "stride", p.kernel);
  p.padding = pair_arg(call, "padding", {0, 0});
  p.dilation = pair_arg(call, "dilation", {1, 1});
  p.ceil_mode = call.bool_arg("ceil_mode");
  p.zero_point = q.zero_point;
  call.set_zero_point("input", q.zero_point);
  call.set_zero_point("output", q.zero_point);
  add_q8ta_max_pool2d_node(call.graph(), call.tensor("input"), call.tensor("output"), p);
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
  registry.add("q8ta_mean", build_mean);
  registry.add("q8ta_mean_flat", build_mean);  // the same kernel, output [N, C] in 4H4W
}

}  // namespace vkd::ops
