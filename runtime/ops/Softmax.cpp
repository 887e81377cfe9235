// Op family: softmax (q8ta_softmax: int8 output; q8ta_softmax_dq: float32 output).
// Anatomy: push-constant struct (mirroring the shader), add_q8ta_softmax_node, the registry
// entries.
#include "runtime/ops/Softmax.h"

#include <string>
#include <utility>

#include "core/PackedInt8Layout.h"
#include "runtime/ops/OpRegistry.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_softmax.glsl.
struct SoftmaxPush {
  std::array<int32_t, 4> sizes;
  std::array<int32_t, 4> out_strides;
  float in_scale;
  int32_t log_softmax;
  float inv_out_scale;
  int32_t out_zp;
};

// The workgroup size of shaders/q8ta_softmax.glsl (WG).
constexpr uint32_t kSoftmaxWorkgroup = 64;

// The output's checks; its element strides (float) or zeros (int8).
std::array<int32_t, 4> checked_output(const std::string& op, const graph::GpuTensor& in,
                                      const graph::GpuTensor& out, const SoftmaxParams& params) {
  check_same_sizes(op, in, out);
  if (!params.output) {
    check_float_tensor(op, out);
    VKD_CHECK(out.spec().storage == StorageType::Buffer, ErrorCode::InvalidArgument, op,
              ": float output ", out.spec().describe(), " must be a buffer");
    return float_tile_meta(out.spec());
  }
  check_int8x4_tensor(op, out);
  check_quant_params(op, *params.output);
  VKD_CHECK(in.spec().layout == out.spec().layout, ErrorCode::InvalidArgument, op,
            ": input and output must share one packed layout (", to_string(in.spec().layout), ", ",
            to_string(out.spec().layout), ")");
  return {0, 0, 0, 0};
}

}  // namespace

void add_q8ta_softmax_node(graph::ComputeGraph& graph, graph::ValueRef input,
                           graph::ValueRef output, const SoftmaxParams& params) {
  const std::string op = params.output ? "q8ta_softmax" : "q8ta_softmax_dq";
  const auto& in = graph.tensor(input);
  check_int8x4_tensor(op, in);
  check_quant_params(op, params.input);
  const std::array<int32_t, 4> strides = checked_output(op, in, graph.tensor(output), params);
  const Dims4 d = in.spec().dims4();
  VKD_CHECK(packed_int8_word_count(in.spec().layout, d) < (int64_t(1) << 31),
            ErrorCode::Unsupported, op, ": the input's words exceed the 2^31 a kernel can index");
  const bool rows_are_heights = in.spec().layout == MemoryLayout::PackedInt8_4H4W;
  const QuantParams out_q = params.output.value_or(QuantParams{});
  const SoftmaxPush push{
      nchw_sizes(d),   strides, params.input.scale, params.log ? 1 : 0, inverse_scale(out_q.scale),
      out_q.zero_point};
  graph::DispatchNode node;
  node.op = op;
  node.kernel =
      shaders::variants::q8ta_softmax[params.output ? 0 : 1][int8_layout_index(in.spec().layout)];
  node.bindings = {output, input};
  node.push_constants = graph::push_constant_bytes(push);
  // One workgroup per block of 4 rows (group counts past the device's limits are reported by
  // ComputeGraph's per-node checks).
  node.plan.local_size = {kSoftmaxWorkgroup, 1, 1};
  node.plan.group_count = {static_cast<uint32_t>(div_up(rows_are_heights ? d.h : d.c, 4)),
                           static_cast<uint32_t>(rows_are_heights ? d.c : d.h),
                           static_cast<uint32_t>(d.n)};
  graph.add_node(std::move(node));
}

// --- registry entries -------------------------------------------------------------

namespace {

SoftmaxParams blob_params(const OpCall& call) {
  SoftmaxParams p;
  p.input = call.quant("input");
  p.log = call.bool_arg("log");
  call.set_zero_point("input", p.input.zero_point);
  return p;
}

void build_softmax(const OpCall& call) {
  SoftmaxParams p = blob_params(call);
  p.output = call.quant("output");
  call.set_zero_point("output", p.output->zero_point);
  add_q8ta_softmax_node(call.graph(), call.tensor("input"), call.tensor("output"), p);
}

void build_softmax_dq(const OpCall& call) {
  add_q8ta_softmax_node(call.graph(), call.tensor("input"), call.tensor("output"),
                        blob_params(call));
}

}  // namespace

void register_softmax_ops(OpRegistry& registry) {
  registry.add("q8ta_softmax", build_softmax);
  registry.add("q8ta_softmax_dq", build_softmax_dq);
}

}  // namespace vkd::ops
