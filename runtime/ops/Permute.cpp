// Op family: data movement of int8x4 tensors (q8ta_channel_shuffle, q8ta_permute).
// Anatomy: push-constant structs (mirroring the shaders), the checks both ops share, then
// add_*_node: validate, pick the variant and the dispatch, add the node; the registry entries
// at the end.
#include "runtime/ops/Permute.h"

#include <algorithm>
#include <array>
#include <utility>

#include "core/Error.h"
#include "core/PackedInt8Layout.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_channel_shuffle.glsl (the geometry is specialization
// constants).
struct ChannelShufflePush {
  int32_t chunk_count, word_count;
  MovedRequantPush requant;
};

// Mirrors `Params` in shaders/q8ta_permute.glsl.
struct PermutePush {
  std::array<int32_t, 4> out_sizes, in_sizes;
  int32_t tile_count;
  MovedRequantPush requant;
};

// Both tensors int8x4 (of int32-indexable size), both parameter sets valid, the output over the
// full int8 range. Returns whether the element values change (requantize).
bool check_tensors_and_quant(const std::string& op, const graph::GpuTensor& in,
                             const QuantParams& in_q, const graph::GpuTensor& out,
                             const QuantParams& out_q) {
  check_int8x4_tensor(op, in);
  check_int8x4_tensor(op, out);
  VKD_CHECK(in.spec().numel() < (int64_t(1) << 31), ErrorCode::Unsupported, op, ": ",
            in.spec().numel(), " elements exceed the 2^31 the kernel can index");
  return check_moved_quant(op, in_q, out_q);
}

std::string dims_string(const std::vector<int64_t>& dims) { return sizes_string(dims, ", "); }

// `dims` is a permutation of 0..3.
void check_permutation(const std::string& op, const std::vector<int64_t>& dims) {
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  VKD_CHECK(sorted == std::vector<int64_t>({0, 1, 2, 3}), ErrorCode::InvalidArgument, op, ": dims ",
            dims_string(dims), " must be a permutation of [0, 1, 2, 3]");
}

// The tile walk of a permute: the output's memory order, unless the input's fastest dim becomes
// the output's channels or widths while the output's own fastest dim is the other one; then the
// patch order, which makes runs along both (a permute seen as a layout conversion).
TileWalk permute_walk(const Dims4& o, const TensorSpec& out, const TensorSpec& in,
                      const std::vector<int64_t>& dims) {
  const int64_t fastest_in = fastest_dim(in);
  const int64_t becomes = std::find(dims.begin(), dims.end(), fastest_in) - dims.begin();
  TensorSpec read_as = out;  // a layout whose fastest dim is the one the input reads fastest
  if (becomes == 1) read_as.layout = MemoryLayout::PackedInt8_4W4C;
  if (becomes == 3) read_as.layout = MemoryLayout::PackedInt8_4H4W;
  return choose_tile_walk(o, out, read_as);
}

}  // namespace

void add_q8ta_channel_shuffle_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                   const QuantParams& in_q, int64_t groups, graph::ValueRef output,
                                   const QuantParams& out_q) {
  const std::string op = "q8ta_channel_shuffle";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  const bool requant = check_tensors_and_quant(op, in, in_q, out, out_q);
  check_same_sizes(op, in, out);
  const TensorSpec& so = out.spec();
  VKD_CHECK(in.spec().layout == so.layout, ErrorCode::InvalidArgument, op,
            ": input and output must share one packed layout (", to_string(in.spec().layout), ", ",
            to_string(so.layout), ")");
  const Dims4 d = so.dims4();
  VKD_CHECK(groups >= 1 && groups <= d.c && d.c % groups == 0, ErrorCode::InvalidArgument, op,
            ": groups ", groups, " must divide the ", d.c, " channels of input '", in.name(), "' ",
            in.spec().describe());

  const int64_t words = packed_int8_word_count(so.layout, d);
  const int64_t chunks = (words + 3) / 4;
  VKD_CHECK(words < (int64_t(1) << 31), ErrorCode::Unsupported, op, ": ", words,
            " words exceed the 2^31 the kernel can index");
  const ChannelShufflePush push{int32_t(chunks), int32_t(words), moved_requant_push(in_q, out_q)};
  graph::DispatchNode node;
  node.op = op;
  node.kernel =
      shaders::variants::q8ta_channel_shuffle[int8_layout_index(so.layout)][requant ? 1 : 0];
  node.bindings = {output, input};
  node.push_constants = graph::push_constant_bytes(push);
  // Every division in the kernel is by a constant.
  node.spec_constants = {uint32_t(d.c), uint32_t(d.h), uint32_t(d.w), uint32_t(groups)};
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(chunks));
  graph.add_node(std::move(node));
}

void add_q8ta_permute_node(graph::ComputeGraph& graph, graph::ValueRef input,
                           const QuantParams& in_q, const std::vector<int64_t>& dims,
                           graph::ValueRef output, const QuantParams& out_q) {
  const std::string op = "q8ta_permute";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  const bool requant = check_tensors_and_quant(op, in, in_q, out, out_q);
  check_permutation(op, dims);
  const Dims4 i = in.spec().dims4(), o = out.spec().dims4();
  const std::array<int64_t, 4> is{i.n, i.c, i.h, i.w};
  const std::vector<int64_t> want{is[size_t(dims[0])], is[size_t(dims[1])], is[size_t(dims[2])],
                                  is[size_t(dims[3])]};
  VKD_CHECK(std::vector<int64_t>({o.n, o.c, o.h, o.w}) == want, ErrorCode::InvalidArgument, op,
            ": output '", out.name(), "' ", out.spec().describe(), " must have sizes ",
            dims_string(want), ": input '", in.name(), "' ", in.spec().describe(),
            " permuted by dims ", dims_string(dims));

  const TileWalk walk = permute_walk(o, out.spec(), in.spec(), dims);
  const PermutePush push{nchw_sizes(o), nchw_sizes(i), int32_t(walk.items),
                         moved_requant_push(in_q, out_q)};
  add_tile_node(graph, op,
                shaders::variants::q8ta_permute[int8_layout_index(
                    in.spec().layout)][int8_layout_index(out.spec().layout)][requant ? 1 : 0],
                {output, input}, graph::push_constant_bytes(push), walk,
                {uint32_t(dims[0]), uint32_t(dims[1]), uint32_t(dims[2]), uint32_t(dims[3])});
}

// --- registry entries -------------------------------------------------------------

namespace {

// The input's and the output's quantization, recorded as their tensors' zero points.
std::pair<QuantParams, QuantParams> moved_quant(const OpCall& call) {
  const QuantParams in_q = call.quant("input"), out_q = call.quant("output");
  call.set_zero_point("input", in_q.zero_point);
  call.set_zero_point("output", out_q.zero_point);
  return {in_q, out_q};
}

void build_channel_shuffle(const OpCall& call) {
  const auto [in_q, out_q] = moved_quant(call);
  add_q8ta_channel_shuffle_node(call.graph(), call.tensor("input"), in_q, call.int_arg("groups"),
                                call.tensor("output"), out_q);
}

void build_permute(const OpCall& call) {
  const auto [in_q, out_q] = moved_quant(call);
  add_q8ta_permute_node(call.graph(), call.tensor("input"), in_q, call.int_list("dims"),
                        call.tensor("output"), out_q);
}

}  // namespace

void register_permute_ops(OpRegistry& registry) {
  registry.add("q8ta_channel_shuffle", build_channel_shuffle);
  registry.add("q8ta_permute", build_permute);
}

}  // namespace vkd::ops
