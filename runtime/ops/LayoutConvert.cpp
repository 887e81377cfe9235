// Op family: layout conversions between tensors of the same sizes and values.
// Anatomy: push-constant structs (mirroring the shaders), add_*_node.
#include "runtime/ops/LayoutConvert.h"

#include "runtime/common/Error.h"
#include "runtime/ops/OpUtils.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_convert.glsl.
struct Int8ConvertPush {
  std::array<int32_t, 4> sizes;
  int32_t tile_count;
  int32_t zero_point;
};

// Mirrors `Params` in shaders/float_convert.glsl.
struct FloatConvertPush {
  std::array<int32_t, 4> sizes;
  std::array<int32_t, 4> dst_meta;
  std::array<int32_t, 4> src_meta;
  int32_t tile_count;
};

}  // namespace

void add_q8ta_convert_node(graph::ComputeGraph& graph, graph::ValueRef input,
                           graph::ValueRef output, int32_t zero_point) {
  const std::string op = "q8ta_convert";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_int8x4_tensor(op, in);
  check_int8x4_tensor(op, out);
  check_same_sizes(op, in, out);
  VKD_CHECK(-128 <= zero_point && zero_point <= 127, ErrorCode::InvalidArgument, op,
            ": zero_point ", zero_point, " outside the int8 range");

  const Dims4 d = in.spec().dims4();
  Int8ConvertPush push{nchw_sizes(d), int32_t(tile_count(d)), zero_point};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::q8ta_convert[int8_layout_index(in.spec().layout)]
                                               [int8_layout_index(out.spec().layout)];
  node.bindings = {output, input};
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), tile_count(d));
  graph.add_node(std::move(node));
}

void add_float_convert_node(graph::ComputeGraph& graph, graph::ValueRef input,
                            graph::ValueRef output) {
  const std::string op = "float_convert";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_float_tensor(op, in);
  check_float_tensor(op, out);
  check_same_sizes(op, in, out);

  const Dims4 d = in.spec().dims4();
  FloatConvertPush push{nchw_sizes(d), float_tile_meta(out.spec()), float_tile_meta(in.spec()),
                        int32_t(tile_count(d))};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::float_convert[storage_index(in.spec().storage)]
                                                [storage_index(out.spec().storage)];
  node.bindings = {output, input};
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), tile_count(d));
  graph.add_node(std::move(node));
}

}  // namespace vkd::ops
