// Op family: float reductions over one dim (float_sum, float_vector_norm), one shader
// (float_reduce.glsl) with the norm as its variant; the masked mean over tokens, optionally
// L2-normalised (float_masked_mean.glsl), its input float32 or int8 as variants.
// Anatomy: push-constant struct (mirroring the shader), the output's strides, the node
// function, the registry entries.
#include "runtime/ops/Reduce.h"

#include <algorithm>
#include <array>
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

// Mirrors `Params` in shaders/float_masked_mean.glsl.
struct MaskedMeanPush {
  std::array<int32_t, 4> sizes, in_strides, strides;
  float mask_min, eps, scale;
  int32_t zero_point, block, channel_chains;
};

constexpr int64_t kMaxPooledChannels = 4096;  // MAX_CHANNELS of the shader
// GPUs (STAGED): a chunk of tokens is up to LOADS (24) loads per invocation and STAGE_FLOATS
// floats of shared memory (its spec constant: what the device has less the kernel's two
// scalars, at most LOADS x the workgroup), so the workgroup's size and the shared memory are
// what hide the memory latency (a float or 4C1W / 4W4C input; a 4H4W one sums each channel in
// an invocation of its own where the mask fits after the means).
constexpr uint32_t kStagedWorkgroup = 512;
constexpr uint32_t kStagedLoads = 24;
constexpr uint32_t kSharedScalars = 2;  // shared_count and shared_norm of the shader
// Plain means: channels per workgroup, so that more workgroups share the loads (32 tokens a
// chunk).
constexpr uint32_t kStagedMeanBlock = 128;

}  // namespace

void add_masked_mean_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef mask,
                          graph::ValueRef output, const MaskedMeanParams& params) {
  const bool int8 = params.input.has_value();
  const std::string op =
      std::string(int8 ? "q8ta" : "float") + "_masked_mean" + (params.eps ? "_normalize" : "");
  const auto& in = graph.tensor(input);
  const auto& m = graph.tensor(mask);
  const auto& out = graph.tensor(output);
  if (int8) {
    check_int8x4_tensor(op, in);
    check_quant_params(op, *params.input);
  } else {
    check_float_operand(op, in, "input");
  }
  check_float_operand(op, m, "mask");
  check_float_operand(op, out, "output");
  const std::vector<int64_t>& x = in.spec().sizes;
  VKD_CHECK(x.size() == 3, ErrorCode::InvalidArgument, op, ": input ", in.spec().describe(),
            " must be [B, T, C]");
  const int64_t B = x[0], T = x[1], C = x[2];
  VKD_CHECK(C >= 1 && C <= kMaxPooledChannels, ErrorCode::Unsupported, op, ": input ",
            in.spec().describe(), " has ", C, " channels (1 .. ", kMaxPooledChannels, " pooled)");
  const std::vector<int64_t>& ms = m.spec().sizes;
  const bool column = ms.size() == 3;  // [B, T, 1]: b and t are its dims 1 and 2 of NCHW
  const std::vector<int64_t> rows = {B, T}, column_rows = {B, T, 1};
  VKD_CHECK(ms == rows || ms == column_rows, ErrorCode::InvalidArgument, op, ": mask ",
            m.spec().describe(), " must be [", B, ", ", T, "] or [", B, ", ", T,
            ", 1] for the input ", in.spec().describe());
  VKD_CHECK(out.spec().sizes == (std::vector<int64_t>{B, C}), ErrorCode::InvalidArgument, op,
            ": output ", out.spec().describe(), " must be [", B, ", ", C, "]");
  MaskedMeanPush push{};
  push.sizes = {1, static_cast<int32_t>(B), static_cast<int32_t>(T), static_cast<int32_t>(C)};
  if (!int8) push.in_strides = float_tile_meta(in.spec());
  const std::array<int32_t, 4> mask_meta = float_tile_meta(m.spec());
  const std::array<int32_t, 4> out_meta = float_tile_meta(out.spec());
  push.strides = {mask_meta[column ? 1 : 2], mask_meta[column ? 2 : 3], out_meta[2], out_meta[3]};
  push.mask_min = params.mask_min;
  push.eps = params.eps.value_or(0.0f);
  push.scale = int8 ? params.input->scale : 1.0f;
  push.zero_point = int8 ? params.input->zero_point : 0;
  // CPU devices walk (STAGED 0): an invocation per channel up to the linear size, a
  // workgroup per batch row. GPUs stage: a workgroup per batch row (normalize) or per batch row
  // and block of `block` channels, the block at most the workgroup.
  const vk::DeviceProfile& profile = graph.profile();
  const bool staged = !profile.cpu_kernels;
  const uint32_t channels = static_cast<uint32_t>(C);
  uint32_t local = std::min(vk::default_linear_local_size(profile), channels);
  uint32_t block = channels, blocks = 1;
  if (staged) {
    local = std::min(
        {kStagedWorkgroup, profile.max_workgroup_size[0], profile.max_workgroup_invocations});
    block = std::min({channels, local, params.eps ? local : kStagedMeanBlock});
    blocks = params.eps ? 1 : (channels + block - 1) / block;
  }
  push.block = static_cast<int32_t>(block);
  // The staging area: what LOADS per invocation fill, within the shared memory less the
  // kernel's two scalars (the token count, the norm); the means of a normalized row (and the
  // mask after them) all live in it, so it grows to hold them where the device has the memory
  // (a small workgroup: phones' 128 invocations fill 3072 floats).
  const uint64_t wanted = std::max<uint64_t>(kStagedLoads * local, params.eps ? C + T : 0);
  const uint32_t stage_floats =
      staged ? static_cast<uint32_t>(
                   std::min<uint64_t>(profile.max_shared_memory_bytes / 4 - kSharedScalars, wanted))
             : uint32_t(kMaxPooledChannels);
  // The way down of a normalized row whose means do not fit the staging area (a phone's 16 KiB
  // at 4096 channels): the plain means into a tensor of their own, then their normalization
  // alone (float_masked_mean_rows: the same norm and quotients, the same bits).
  if (params.eps && channels > stage_floats) {
    note_way_down(graph, op, output, "the plain means, then their normalization on its own",
                  std::to_string(C) + " channels to normalize need " +
                      std::to_string(4 * (C + kSharedScalars)) +
                      " bytes of shared memory, the device " +
                      std::to_string(profile.max_shared_memory_bytes));
    const graph::ValueRef means =
        graph.add_tensor({{B, C}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked},
                         own_tensor_name(graph, output, op, ".means"));
    MaskedMeanParams plain = params;
    plain.eps.reset();
    add_masked_mean_node(graph, input, mask, means, plain);
    const std::array<int32_t, 4> means_meta = float_tile_meta(graph.spec(means));
    MaskedMeanPush rows{};
    rows.sizes = {1, static_cast<int32_t>(B), 1, static_cast<int32_t>(C)};
    rows.in_strides = {0, means_meta[2], 0, means_meta[3]};
    rows.strides = {0, 0, out_meta[2], out_meta[3]};
    rows.eps = *params.eps;
    graph::DispatchNode node;
    node.op = op;
    node.kernel = shaders::variants::float_masked_mean_rows[0][0][0];
    node.bindings = {output, means, means};  // its mask binding unread
    node.push_constants = graph::push_constant_bytes(rows);
    node.spec_constants = {1};  // no staging area
    node.plan.local_size = {std::min(vk::default_linear_local_size(profile), channels), 1, 1};
    node.plan.group_count = {static_cast<uint32_t>(B), 1, 1};
    graph.add_node(std::move(node));
    return;
  }
  // A staged 4H4W input: each channel summed by an invocation of its own from its 16-byte
  // token blocks, where the mask fits the staging area after the C means.
  if (staged && int8 && in.spec().layout == MemoryLayout::PackedInt8_4H4W) {
    push.channel_chains = channels + static_cast<uint64_t>(T) <= stage_floats ? 1 : 0;
  }
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::float_masked_mean[int8 ? 1 + int8_layout_index(in.spec().layout)
                                                          : 0][params.eps ? 1 : 0][staged ? 1 : 0];
  node.bindings = {output, input, mask};
  node.push_constants = graph::push_constant_bytes(push);
  node.spec_constants = {stage_floats};
  node.plan.local_size = {local, 1, 1};
  node.plan.group_count = {static_cast<uint32_t>(B), blocks, 1};
  graph.add_node(std::move(node));
}

void add_float_reduce_node(graph::ComputeGraph& graph, graph::ValueRef input,
                           graph::ValueRef output, int64_t dim, bool norm) {
  const std::string op = norm ? "float_vector_norm" : "float_sum";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_float_operand(op, in, "input");
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

template <bool Int8, bool Normalize>
void build_masked_mean(const OpCall& call) {
  MaskedMeanParams p;
  p.mask_min = static_cast<float>(call.float_arg("mask_min"));
  if (Normalize) p.eps = static_cast<float>(call.float_arg("eps"));
  if (Int8) {
    p.input = call.quant("input");
    call.set_zero_point("input", p.input->zero_point);
  }
  add_masked_mean_node(call.graph(), call.tensor("input"), call.tensor("mask"),
                       call.tensor("output"), p);
}

}  // namespace

void register_reduce_ops(OpRegistry& registry) {
  registry.add("float_sum", build_reduce<false>);
  registry.add("float_vector_norm", build_reduce<true>);
  registry.add("float_masked_mean", build_masked_mean<false, false>);
  registry.add("float_masked_mean_normalize", build_masked_mean<false, true>);
  registry.add("q8ta_masked_mean", build_masked_mean<true, false>);
  registry.add("q8ta_masked_mean_normalize", build_masked_mean<true, true>);
}

}  // namespace vkd::ops
