// Op family: layout conversions between tensors of the same sizes and values.
// Anatomy: push-constant structs (mirroring the shaders), then add_*_node: validate, pick the
// variant and the tile walk, add the node.
#include "runtime/ops/LayoutConvert.h"

#include "core/Error.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_convert.glsl.
struct Int8ConvertPush {
  std::array<int32_t, 4> sizes;
  int32_t tile_count;
  int32_t zero_point;
};

// Mirrors `Params` in shaders/q8ta_view.glsl.
struct Int8ViewPush {
  std::array<int32_t, 4> out_sizes, in_sizes;
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
  const TileWalk walk = choose_tile_walk(d, out.spec(), in.spec());
  const Int8ConvertPush push{nchw_sizes(d), int32_t(walk.items), zero_point};
  add_tile_node(graph, op,
                shaders::variants::q8ta_convert[int8_layout_index(in.spec().layout)]
                                               [int8_layout_index(out.spec().layout)],
                {output, input}, graph::push_constant_bytes(push), walk);
}

void add_q8ta_view_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                        int32_t zero_point) {
  const std::string op = "q8ta_view";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_int8x4_tensor(op, in);
  check_int8x4_tensor(op, out);
  VKD_CHECK(in.spec().numel() == out.spec().numel(), ErrorCode::InvalidArgument, op, ": output ",
            out.spec().describe(), " does not hold the ", in.spec().numel(), " elements of input ",
            in.spec().describe());
  // The kernel indexes elements (NCHW) with int32.
  VKD_CHECK(in.spec().numel() < (int64_t(1) << 31), ErrorCode::Unsupported, op, ": ",
            in.spec().numel(), " elements exceed the 2^31 the kernel can index");
  VKD_CHECK(-128 <= zero_point && zero_point <= 127, ErrorCode::InvalidArgument, op,
            ": zero_point ", zero_point, " outside the int8 range");

  // The walk follows the output's memory order: its stores are coalesced, the reads gather.
  const Dims4 d = out.spec().dims4();
  const TileWalk walk = choose_tile_walk(d, out.spec(), out.spec());
  const Int8ViewPush push{nchw_sizes(d), nchw_sizes(in.spec().dims4()), int32_t(walk.items),
                          zero_point};
  add_tile_node(graph, op,
                shaders::variants::q8ta_view[int8_layout_index(in.spec().layout)]
                                            [int8_layout_index(out.spec().layout)],
                {output, input}, graph::push_constant_bytes(push), walk);
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
  const TileWalk walk = choose_tile_walk(d, out.spec(), in.spec());
  const FloatConvertPush push{nchw_sizes(d), float_tile_meta(out.spec()),
                              float_tile_meta(in.spec()), int32_t(walk.items)};
  add_tile_node(graph, op,
                shaders::variants::float_convert[storage_index(in.spec().storage)]
                                                [storage_index(out.spec().storage)],
                {output, input}, graph::push_constant_bytes(push), walk);
}

// --- registry entries -------------------------------------------------------------

namespace {

void build_q8ta_convert(const OpCall& call) {
  const int32_t zero_point = call.int32_arg("zero_point", -128, 127);
  call.set_zero_point("input", zero_point);
  call.set_zero_point("output", zero_point);
  add_q8ta_convert_node(call.graph(), call.tensor("input"), call.tensor("output"), zero_point);
}

void build_q8ta_view(const OpCall& call) {
  const int32_t zero_point = call.int32_arg("zero_point", -128, 127);
  call.set_zero_point("input", zero_point);
  call.set_zero_point("output", zero_point);
  add_q8ta_view_node(call.graph(), call.tensor("input"), call.tensor("output"), zero_point);
}

void build_float_convert(const OpCall& call) {
  add_float_convert_node(call.graph(), call.tensor("input"), call.tensor("output"));
}

}  // namespace

void register_layout_convert_ops(OpRegistry& registry) {
  registry.add("q8ta_convert", build_q8ta_convert);
  registry.add("q8ta_view", build_q8ta_view);
  registry.add("float_convert", build_float_convert);
}

}  // namespace vkd::ops
