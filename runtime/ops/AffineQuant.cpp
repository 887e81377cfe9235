// Op family: torchao affine quantization (quantize_affine, dequantize_affine,
// choose_qparams_affine) with block-wise scales and zero points; definitions in AffineQuant.h.
// Anatomy: block grid, push-constant structs (mirroring the shaders), add_*_node (validate,
// pick the variant, add the nodes), registry entries.
#include "runtime/ops/AffineQuant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/ops/OpRegistry.h"

namespace vkd::ops {

AffineGrid affine_grid(const std::string& op, const std::vector<int64_t>& sizes,
                       const std::vector<int64_t>& block_size_in) {
  std::vector<int64_t> bs = block_size_in;
  // [-1] for a tensor of rank > 1: one block (the reference interpreter accepts it too).
  if (bs.size() == 1 && bs[0] == -1 && sizes.size() != 1) bs.assign(sizes.size(), -1);
  VKD_CHECK(bs.size() == sizes.size(), ErrorCode::InvalidArgument, op, ": block_size ",
            sizes_string(bs), " does not match the input's rank ", sizes.size());
  AffineGrid g;
  const size_t lead = 4 - sizes.size();  // [1]-prefix to 4-D
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t b = bs[d], n = sizes[d];
    VKD_CHECK(b == -1 || b > 0, ErrorCode::InvalidArgument, op, ": block_size ", sizes_string(bs),
              " has an invalid entry ", b, " (each must be -1 or > 0)");
    int64_t extent = n, count = 1;  // -1 or b == n: the whole dim
    if (b == 1) {
      extent = 1;
      count = n;
    } else if (b > 1 && b != n) {
      // torchao's _get_reduction_params: a partial block size must divide the dim.
      VKD_CHECK(n % b == 0, ErrorCode::InvalidArgument, op, ": input size ", n, " at dim ", d,
                " is not divisible by block size ", b);
      extent = b;
      count = n / b;
    }
    g.extent[lead + d] = static_cast<int32_t>(extent);
    g.count[lead + d] = static_cast<int32_t>(count);
    g.blocks *= count;
  }
  return g;
}

int32_t affine_pad_value(int32_t quant_min, int32_t quant_max) {
  return std::clamp<int32_t>(0, quant_min, quant_max);
}

namespace {

// Mirrors AFFINE_TILE_PARAMS in shaders/common/affine_block.glslh: the push constants of
// q8ta_dequantize_affine.glsl, and the head of q8ta_quantize_affine.glsl's.
struct AffineTilePush {
  std::array<int32_t, 4> sizes, float_meta, extent, gstride;
  int32_t tile_count;
};
// Mirrors `Params` in shaders/q8ta_quantize_affine.glsl.
struct QuantizeAffinePush {
  AffineTilePush tile;
  int32_t quant_min, quant_max, pad_value;
};
static_assert(sizeof(QuantizeAffinePush) == sizeof(AffineTilePush) + 3 * sizeof(int32_t),
              "the shader's fields follow the head with no padding");
// Mirrors `Params` in shaders/choose_qparams_affine.glsl.
struct ChooseQparamsPush {
  std::array<int32_t, 4> sizes, float_meta, extent, count;
  int32_t block_count, quant_min, quant_max, mapping;
  float eps;
  int32_t serial;
};
// Mirrors `Params` in shaders/affine_reciprocal.glsl.
struct ReciprocalPush {
  int32_t count;
};

constexpr uint32_t kChooseWorkgroup = 128;  // WG in choose_qparams_affine.glsl
// Blocks of at most this many elements take the serial mode (one invocation per block): a
// workgroup per block would leave most of its invocations idle.
constexpr int64_t kSerialBlockElements = 256;

std::array<int32_t, 4> grid_strides(const AffineGrid& g) {
  std::array<int32_t, 4> s{};
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    s[static_cast<size_t>(d)] = static_cast<int32_t>(stride);
    stride *= g.count[static_cast<size_t>(d)];
  }
  return s;
}

void check_qrange(const std::string& op, int32_t quant_min, int32_t quant_max) {
  VKD_CHECK(-128 <= quant_min && quant_min <= quant_max && quant_max <= 127,
            ErrorCode::InvalidArgument, op,
            ": need -128 <= quant_min <= quant_max <= 127 (int8 "
            "storage), got [",
            quant_min, ", ", quant_max, "]");
}

// A per-block parameter tensor: `dtype` in a width-packed buffer, one element per block.
void check_block_param(const std::string& op, const graph::GpuTensor& t, DType dtype,
                       const char* what, const AffineGrid& g) {
  const TensorSpec& s = t.spec();
  VKD_CHECK(
      s.dtype == dtype && s.storage == StorageType::Buffer && s.layout == MemoryLayout::WidthPacked,
      ErrorCode::InvalidArgument, op, ": ", what, " '", t.name(), "' ", s.describe(),
      " must be a width-packed ", to_string(dtype), " buffer");
  VKD_CHECK(s.numel() == g.blocks, ErrorCode::InvalidArgument, op, ": ", what, " '", t.name(),
            "' has ", s.numel(), " elements, block_size gives ", g.blocks, " blocks");
}

void check_indexable(const std::string& op, const graph::GpuTensor& t) {
  VKD_CHECK(t.spec().numel() < (int64_t(1) << 31), ErrorCode::Unsupported, op, ": tensor '",
            t.name(), "' has ", t.spec().numel(), " elements; the kernels index below 2^31");
}

// inv[b] = 1/scale[b], correctly rounded. A constant scale (static quantization) is inverted
// once on the CPU while the graph is prepared (host float division is IEEE, correctly
// rounded); a scale written at run time (choose_qparams_affine's) by a prepass dispatch
// (affine_reciprocal.glsl) before the quantize kernel.
graph::ValueRef reciprocal_of(graph::ComputeGraph& graph, const std::string& op,
                              graph::ValueRef scale, int64_t blocks) {
  const TensorSpec spec{{blocks}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  const std::string name = graph.tensor(scale).name() + ".reciprocal";
  if (graph.is_constant(scale)) {
    graph::ConstantPacker scales = graph.constant_packer(scale);
    return graph.add_constant(
        spec, name,
        [scales] {
          std::vector<uint8_t> bytes = scales();
          for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
            float s;
            std::memcpy(&s, bytes.data() + i, 4);
            const float inv = 1.0f / s;
            std::memcpy(bytes.data() + i, &inv, 4);
          }
          return bytes;
        },
        static_cast<uint64_t>(blocks) * 4);
  }
  const graph::ValueRef inv = graph.add_tensor(spec, name);
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::Kernel::affine_reciprocal;
  node.bindings = {inv, scale};
  node.push_constants = graph::push_constant_bytes(ReciprocalPush{static_cast<int32_t>(blocks)});
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(blocks));
  graph.add_node(std::move(node));
  return inv;
}

// The checks quantize and dequantize share once each has checked its tensors' types: same
// sizes, indexable, the quant range, block_size, and one scale / zero point per block. Returns
// the block grid.
AffineGrid check_affine_tile_args(const graph::ComputeGraph& graph, const std::string& op,
                                  const graph::GpuTensor& in, const graph::GpuTensor& out,
                                  graph::ValueRef scale, graph::ValueRef zero_point,
                                  const std::vector<int64_t>& block_size, int32_t quant_min,
                                  int32_t quant_max) {
  check_same_sizes(op, in, out);
  check_indexable(op, in);
  check_qrange(op, quant_min, quant_max);
  const AffineGrid g = affine_grid(op, in.spec().sizes, block_size);
  check_block_param(op, graph.tensor(scale), DType::Float32, "scale", g);
  check_block_param(op, graph.tensor(zero_point), DType::Int32, "zero_point", g);
  return g;
}

AffineTilePush affine_tile_push(const Dims4& d, const TensorSpec& float_side, const AffineGrid& g,
                                const TileWalk& walk) {
  return {nchw_sizes(d), float_tile_meta(float_side), g.extent, grid_strides(g),
          static_cast<int32_t>(walk.items)};
}

}  // namespace

void add_quantize_affine_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef scale, graph::ValueRef zero_point,
                              const std::vector<int64_t>& block_size, int32_t quant_min,
                              int32_t quant_max, graph::ValueRef output) {
  const std::string op = "q8ta_quantize_affine";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_float_tensor(op, in);
  check_int8x4_tensor(op, out);
  const AffineGrid g = check_affine_tile_args(graph, op, in, out, scale, zero_point, block_size,
                                              quant_min, quant_max);

  const graph::ValueRef inv = reciprocal_of(graph, op, scale, g.blocks);
  const Dims4 d = in.spec().dims4();
  const TileWalk walk = choose_tile_walk(d, out.spec(), in.spec());
  const QuantizeAffinePush push{affine_tile_push(d, in.spec(), g, walk), quant_min, quant_max,
                                affine_pad_value(quant_min, quant_max)};
  add_tile_node(graph, op,
                shaders::variants::q8ta_quantize_affine[storage_index(in.spec().storage)]
                                                       [int8_layout_index(out.spec().layout)],
                {output, input, inv, zero_point}, graph::push_constant_bytes(push), walk);
}

void add_dequantize_affine_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                graph::ValueRef scale, graph::ValueRef zero_point,
                                const std::vector<int64_t>& block_size, int32_t quant_min,
                                int32_t quant_max, graph::ValueRef output) {
  const std::string op = "q8ta_dequantize_affine";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_int8x4_tensor(op, in);
  check_float_tensor(op, out);
  // quant_min / quant_max only describe the input codes (torchao checks them, never clamps).
  const AffineGrid g = check_affine_tile_args(graph, op, in, out, scale, zero_point, block_size,
                                              quant_min, quant_max);

  const Dims4 d = in.spec().dims4();
  const TileWalk walk = choose_tile_walk(d, out.spec(), in.spec());
  const AffineTilePush push = affine_tile_push(d, out.spec(), g, walk);
  add_tile_node(graph, op,
                shaders::variants::q8ta_dequantize_affine[storage_index(out.spec().storage)]
                                                         [int8_layout_index(in.spec().layout)],
                {output, input, scale, zero_point}, graph::push_constant_bytes(push), walk);
}

void add_choose_qparams_affine_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                    AffineMapping mapping, const std::vector<int64_t>& block_size,
                                    int32_t quant_min, int32_t quant_max, float eps,
                                    graph::ValueRef scale, graph::ValueRef zero_point) {
  const std::string op = "choose_qparams_affine";
  const auto& in = graph.tensor(input);
  check_float_tensor(op, in);
  check_indexable(op, in);
  check_qrange(op, quant_min, quant_max);
  const auto m = static_cast<int32_t>(mapping);
  VKD_CHECK(m >= 0 && m <= 2, ErrorCode::InvalidArgument, op, ": mapping_type ", m,
            " (0 SYMMETRIC, 1 SYMMETRIC_NO_CLIPPING_ERR, 2 ASYMMETRIC)");
  VKD_CHECK(std::isfinite(eps) && eps > 0.0f, ErrorCode::InvalidArgument, op,
            ": eps must be finite and > 0, got ", eps);
  const AffineGrid g = affine_grid(op, in.spec().sizes, block_size);
  check_block_param(op, graph.tensor(scale), DType::Float32, "scale", g);
  check_block_param(op, graph.tensor(zero_point), DType::Int32, "zero_point", g);

  const Dims4 d = in.spec().dims4();
  const int64_t elements = int64_t(g.extent[0]) * g.extent[1] * g.extent[2] * g.extent[3];
  const bool serial = elements <= kSerialBlockElements;
  const ChooseQparamsPush push{nchw_sizes(d),
                               float_tile_meta(in.spec()),
                               g.extent,
                               g.count,
                               static_cast<int32_t>(g.blocks),
                               quant_min,
                               quant_max,
                               m,
                               eps,
                               serial ? 1 : 0};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::choose_qparams_affine[storage_index(in.spec().storage)];
  node.bindings = {scale, zero_point, input};
  node.push_constants = graph::push_constant_bytes(push);
  // One workgroup per block (or per kChooseWorkgroup blocks in the serial mode); workgroups
  // past the x limit continue along y (the shader flattens).
  const uint64_t groups = serial ? static_cast<uint64_t>(div_up(g.blocks, kChooseWorkgroup))
                                 : static_cast<uint64_t>(g.blocks);
  const uint64_t max_x = graph.profile().max_workgroup_count[0];
  const uint64_t gx = std::min<uint64_t>(groups, max_x);
  const uint64_t gy = (groups + gx - 1) / gx;
  VKD_CHECK(gy <= graph.profile().max_workgroup_count[1], ErrorCode::Unsupported, op, ": ",
            g.blocks, " blocks exceed the device's workgroup grid");
  node.plan.local_size = {kChooseWorkgroup, 1, 1};
  node.plan.group_count = {static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1};
  graph.add_node(std::move(node));
}

// --- registry entries -------------------------------------------------------------

namespace {

// torchao's quantize_affine / dequantize_affine arguments (output_dtype is int8x4 / float32).
void build_quantize_affine(const OpCall& call) {
  const int32_t qmin = call.int32_arg("quant_min", -128, 127);
  const int32_t qmax = call.int32_arg("quant_max", -128, 127);
  call.set_zero_point("output", affine_pad_value(qmin, qmax));
  add_quantize_affine_node(call.graph(), call.tensor("input"), call.tensor("scale"),
                           call.tensor("zero_point"), call.int_list("block_size"), qmin, qmax,
                           call.tensor("output"));
}

void build_dequantize_affine(const OpCall& call) {
  const int32_t qmin = call.int32_arg("quant_min", -128, 127);
  const int32_t qmax = call.int32_arg("quant_max", -128, 127);
  call.set_zero_point("input", affine_pad_value(qmin, qmax));
  add_dequantize_affine_node(call.graph(), call.tensor("input"), call.tensor("scale"),
                             call.tensor("zero_point"), call.int_list("block_size"), qmin, qmax,
                             call.tensor("output"));
}

void build_choose_qparams_affine(const OpCall& call) {
  const auto mapping = static_cast<AffineMapping>(call.int32_arg("mapping_type", 0, 2));
  add_choose_qparams_affine_node(
      call.graph(), call.tensor("input"), mapping, call.int_list("block_size"),
      call.int32_arg("quant_min", -128, 127), call.int32_arg("quant_max", -128, 127),
      static_cast<float>(call.float_arg("eps")), call.tensor("scale"), call.tensor("zero_point"));
}

}  // namespace

void register_affine_quant_ops(OpRegistry& registry) {
  registry.add("q8ta_quantize_affine", build_quantize_affine);
  registry.add("q8ta_dequantize_affine", build_dequantize_affine);
  registry.add("choose_qparams_affine", build_choose_qparams_affine);
}

}  // namespace vkd::ops
