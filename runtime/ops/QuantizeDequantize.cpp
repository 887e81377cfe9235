// Op family: per-tensor quantize / dequantize between float32 tensors and packed int8x4.
// Anatomy: push-constant structs (mirroring the shaders), then add_*_node: validate, pick the
// variant and the tile walk, add the node.
#include "runtime/ops/QuantizeDequantize.h"

#include "runtime/ops/OpRegistry.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_quantize.glsl.
struct QuantizePush {
  std::array<int32_t, 4> sizes;
  std::array<int32_t, 4> float_meta;
  int32_t tile_count;
  float inv_scale;
  int32_t zero_point, quant_min, quant_max;
};

// Mirrors `Params` in shaders/q8ta_dequantize.glsl.
struct DequantizePush {
  std::array<int32_t, 4> sizes;
  std::array<int32_t, 4> float_meta;
  int32_t tile_count;
  float scale;
  int32_t zero_point;
};

// Specialization constant 4 of the buffer variants: the float side's access path, fixed for
// every tile where it can be (float_tile_vector_dim), so the kernel holds that path's code only.
std::vector<uint32_t> float_path_constants(const TensorSpec& float_side) {
  if (float_side.storage != StorageType::Buffer) return {};
  return {static_cast<uint32_t>(float_tile_vector_dim(float_side))};
}

}  // namespace

void add_q8ta_quantize_node(graph::ComputeGraph& graph, graph::ValueRef input,
                            graph::ValueRef output, const QuantParams& q) {
  const std::string op = "q8ta_quantize";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_float_tensor(op, in);
  check_int8x4_tensor(op, out);
  check_same_sizes(op, in, out);
  check_quant_params(op, q);

  const Dims4 d = in.spec().dims4();
  const TileWalk walk = choose_tile_walk(d, out.spec(), in.spec());
  const QuantizePush push{nchw_sizes(d),       float_tile_meta(in.spec()),
                          int32_t(walk.items), inverse_scale(q.scale),
                          q.zero_point,        q.quant_min,
                          q.quant_max};
  add_tile_node(graph, op,
                shaders::variants::q8ta_quantize[storage_index(in.spec().storage)]
                                                [int8_layout_index(out.spec().layout)],
                {output, input}, graph::push_constant_bytes(push), walk,
                float_path_constants(in.spec()));
}

void add_q8ta_dequantize_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, const QuantParams& q) {
  const std::string op = "q8ta_dequantize";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_int8x4_tensor(op, in);
  check_float_tensor(op, out);
  check_same_sizes(op, in, out);
  check_quant_params(op, q);

  const Dims4 d = in.spec().dims4();
  const TileWalk walk = choose_tile_walk(d, out.spec(), in.spec());
  const DequantizePush push{nchw_sizes(d), float_tile_meta(out.spec()), int32_t(walk.items),
                            q.scale, q.zero_point};
  add_tile_node(graph, op,
                shaders::variants::q8ta_dequantize[storage_index(out.spec().storage)]
                                                  [int8_layout_index(in.spec().layout)],
                {output, input}, graph::push_constant_bytes(push), walk,
                float_path_constants(out.spec()));
}

// --- registry entries -------------------------------------------------------------

namespace {

// Both ops take quantized_decomposed.quantize_per_tensor's parameters, quant range included.
QuantParams quant_params(const OpCall& call) {
  QuantParams q;
  q.scale = static_cast<float>(call.float_arg("scale"));
  q.zero_point = call.int32_arg("zero_point", -128, 127);
  q.quant_min = call.int32_arg("quant_min", -128, 127);
  q.quant_max = call.int32_arg("quant_max", -128, 127);
  return q;
}

void build_quantize(const OpCall& call) {
  const QuantParams q = quant_params(call);
  call.set_zero_point("output", q.zero_point);
  add_q8ta_quantize_node(call.graph(), call.tensor("input"), call.tensor("output"), q);
}

void build_dequantize(const OpCall& call) {
  const QuantParams q = quant_params(call);
  call.set_zero_point("input", q.zero_point);
  add_q8ta_dequantize_node(call.graph(), call.tensor("input"), call.tensor("output"), q);
}

}  // namespace

void register_quantize_dequantize_ops(OpRegistry& registry) {
  registry.add("q8ta_quantize", build_quantize);
  registry.add("q8ta_dequantize", build_dequantize);
}

}  // namespace vkd::ops
