// Op family: float reductions over one dim (float_sum, float_vector_norm), one shader
// (float_reduce.glsl) with the norm as its variant.
// Anatomy: push-constant struct (mirroring the shader), the output's strides, the node
// function, the registry entries.
#include "runtime/ops/Reduce.h"

#include <array>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/float_reduce.glsl.
struct FloatReducePush {
  std::array<int32_t, 4> sizes, in_strides, out_strides;
  int32_t dim, outputs;
};

void check_operand(const std::string& op, const graph::GpuTensor& t, const char* what) {
  check_float_tensor(op, t);
  VKD_CHECK(t.spec().storage == StorageType::Buffer, ErrorCode::InvalidArgument, op, ": ", what,
            " ", t.spec().describe(), " must be a float32 buffer");
  VKD_CHECK(t.spec().numel() <= std::numeric_limits<int32_t>::max(), ErrorCode::Unsupported, op,
            ": ", what, " ", t.spec().describe(), " has more than 2^31 - 1 elements");
}

// The output's element strides at the input's [N, C, H, W] positions, 0 at the reduced one:
// the output is the input's sizes with dim `dim` (of rank `rank`) 1 or dropped.
std::array<int32_t, 4> kept_strides(const std::string& op, const TensorSpec& in,
                                    const TensorSpec& out, size_t dim) {
  const size_t rank = in.sizes.size();
  std::vector<int64_t> kept = in.sizes, dropped = in.sizes;
  kept[dim] = 1;
  dropped.erase(dropped.begin() + static_cast<std::ptrdiff_t>(dim));
  VKD_CHECK(out.sizes == kept || out.sizes == dropped, ErrorCode::InvalidArgument, op, ": output ",
            out.describe(), " must be the input's sizes ", in.describe(), " with dim ", dim,
            " 1 or dropped");
  const std::array<int32_t, 4> meta = float_tile_meta(out);
  const size_t out_rank = out.sizes.size();
  std::array<int32_t, 4> strides{0, 0, 0, 0};
  for (size_t d = 0; d < rank; ++d) {
    if (d == dim) continue;
    const size_t j = out_rank == rank || d < dim ? d : d - 1;  // the output's dim of input dim d
    strides[4 - rank + d] = meta[4 - out_rank + j];
  }
  return strides;
}

}  // namespace

void add_float_reduce_node(graph::ComputeGraph& graph, graph::ValueRef input,
                           graph::ValueRef output, int64_t dim, bool norm) {
  const std::string op = norm ? "float_vector_norm" : "float_sum";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_operand(op, in, "input");
  check_float_tensor(op, out);
  VKD_CHECK(out.spec().storage == StorageType::Buffer, ErrorCode::InvalidArgument, op, ": output ",
            out.spec().describe(), " must be a float32 buffer");
  const auto rank = static_cast<int64_t>(in.spec().sizes.size());
  VKD_CHECK(dim >= 0 && dim < rank, ErrorCode::InvalidArgument, op, ": dim ", dim,
            " is outside 0 .. ", rank - 1, " of the input ", in.spec().describe());
  FloatReducePush push{};
  push.sizes = nchw_sizes(in.spec().dims4());
  push.in_strides = float_tile_meta(in.spec());
  push.out_strides = kept_strides(op, in.spec(), out.spec(), static_cast<size_t>(dim));
  push.dim = static_cast<int32_t>(4 - rank + dim);
  push.outputs = static_cast<int32_t>(out.spec().numel());
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::float_reduce[norm ? 1 : 0];
  node.bindings = {output, input};
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(push.outputs));
  graph.add_node(std::move(node));
}

// --- registry entries -------------------------------------------------------------

namespace {

template <bool Norm>
void build_reduce(const OpCall& call) {
  add_float_reduce_node(call.graph(), call.tensor("input"), call.tensor("output"),
                        call.int_arg("dim"), Norm);
}

}  // namespace

void register_reduce_ops(OpRegistry& registry) {
  registry.add("float_sum", build_reduce<false>);
  registry.add("float_vector_norm", build_reduce<true>);
}

}  // namespace vkd::ops
