// Op family: layer norm (q8ta_layer_norm: int8 in and out; q8ta_layer_norm_dq: int8 in, float32
// out; layer_norm: float32 in and out; layer_norm_q: float32 in, int8 out; layer_norm_dual:
// float32 in, float32 and int8 out).
// Anatomy: push-constant struct (mirroring the shader), the checks, the weight / bias packer,
// add_layer_norm (behind add_q8ta_layer_norm_node and add_layer_norm_dual_node), the registry
// entries.
#include "runtime/ops/LayerNorm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "core/PackedInt8Layout.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_layer_norm.glsl.
struct LayerNormPush {
  std::array<int32_t, 4> sizes;
  std::array<int32_t, 4> in_strides;
  std::array<int32_t, 4> out_strides;
  float eps;
  float inv_out_scale;
  int32_t out_zp;
};

// MAX_WG of shaders/q8ta_layer_norm.glsl: its shared arrays' length.
constexpr uint32_t kMaxWorkgroup = 256;
// The longest row: |L q - S1| <= 255 L stays below 2^24, exact in float32.
constexpr int64_t kMaxRow = 65536;

// A value the node does not write.
constexpr graph::ValueRef kNone = -1;

std::string op_name(const LayerNormParams& p, bool dual) {
  if (!p.input) return dual ? "layer_norm_dual" : (p.output ? "layer_norm_q" : "layer_norm");
  return p.output ? "q8ta_layer_norm" : "q8ta_layer_norm_dq";
}

// A float32 buffer (any float layout): its element strides.
std::array<int32_t, 4> float_buffer_strides(const std::string& op, const graph::GpuTensor& t,
                                            const char* what) {
  check_float_tensor(op, t);
  VKD_CHECK(t.spec().storage == StorageType::Buffer, ErrorCode::InvalidArgument, op, ": float ",
            what, " ", t.spec().describe(), " must be a buffer");
  return float_tile_meta(t.spec());
}

// weight and bias: one finite value per element of the row each; eps finite and >= 0, and, for
// an int8 input, eps L^2 / s_in^2 finite in float32. Returns the kernel's eps.
float checked_eps(const std::string& op, const LayerNormParams& p, int64_t row) {
  VKD_CHECK(row >= 1 && row <= kMaxRow, ErrorCode::Unsupported, op, ": the last dim ", row,
            " is outside 1 .. ", kMaxRow);
  VKD_CHECK(
      static_cast<int64_t>(p.weight.size()) == row && static_cast<int64_t>(p.bias.size()) == row,
      ErrorCode::InvalidArgument, op, ": weight and bias must hold one value per element of ",
      "the last dim (", row, "), got ", p.weight.size(), " and ", p.bias.size());
  for (size_t i = 0; i < p.weight.size(); ++i) {
    VKD_CHECK(std::isfinite(p.weight[i]) && std::isfinite(p.bias[i]), ErrorCode::InvalidArgument,
              op, ": element ", i, ": weight ", p.weight[i], " and bias ", p.bias[i],
              " must be finite");
  }
  VKD_CHECK(std::isfinite(p.eps) && p.eps >= 0, ErrorCode::InvalidArgument, op, ": eps ", p.eps,
            " must be finite and >= 0");
  if (!p.input) return static_cast<float>(p.eps);
  const double s = p.input->scale;
  const float eps_q = static_cast<float>(p.eps * static_cast<double>(row) * row / (s * s));
  VKD_CHECK(std::isfinite(eps_q), ErrorCode::Unsupported, op, ": eps ", p.eps,
            " over the input's squared scale ", s * s, " overflows float32");
  return eps_q;
}

// Per chunk of 4 along the row: the 4 weights, then the 4 biases (zeros past the row).
std::vector<uint8_t> pack_affine(const std::vector<float>& weight, const std::vector<float>& bias) {
  const size_t chunks = (weight.size() + 3) / 4;
  std::vector<float> words(8 * chunks, 0.0f);
  for (size_t i = 0; i < weight.size(); ++i) {
    words[8 * (i / 4) + i % 4] = weight[i];
    words[8 * (i / 4) + 4 + i % 4] = bias[i];
  }
  std::vector<uint8_t> bytes(words.size() * sizeof(float));
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return bytes;
}

// `output`: the float32 output (kNone: none); `output_q`: the int8 one, quantized with
// params.output (kNone: none).
void add_layer_norm(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                    graph::ValueRef output_q, const LayerNormParams& params) {
  const bool dual = output != kNone && output_q != kNone;
  const std::string op = op_name(params, dual);
  const auto& in = graph.tensor(input);
  std::array<int32_t, 4> in_strides{0, 0, 0, 0}, out_strides{0, 0, 0, 0};
  if (params.input) {
    check_int8x4_tensor(op, in);
    check_quant_params(op, *params.input);
    VKD_CHECK(packed_int8_word_count(in.spec().layout, in.spec().dims4()) < (int64_t(1) << 31),
              ErrorCode::Unsupported, op, ": the input's words exceed the 2^31 a kernel can index");
  } else {
    in_strides = float_buffer_strides(op, in, "input");
  }
  if (output != kNone) {
    const auto& out = graph.tensor(output);
    check_same_sizes(op, in, out);
    out_strides = float_buffer_strides(op, out, "output");
  }
  // The int8 tensor whose 16-byte chunks the workgroups follow (none: a float32 layer_norm).
  const graph::GpuTensor* int8 = params.input ? &in : nullptr;
  if (output_q != kNone) {
    const auto& out = graph.tensor(output_q);
    check_same_sizes(op, in, out);
    check_int8x4_tensor(op, out);
    check_quant_params(op, *params.output);
    if (params.input) {
      VKD_CHECK(in.spec().layout == out.spec().layout, ErrorCode::InvalidArgument, op,
                ": input and output must share one packed layout (", to_string(in.spec().layout),
                ", ", to_string(out.spec().layout), ")");
    } else {
      VKD_CHECK(packed_int8_word_count(out.spec().layout, out.spec().dims4()) < (int64_t(1) << 31),
                ErrorCode::Unsupported, op,
                ": the output's words exceed the 2^31 a kernel can index");
      VKD_CHECK(params.output->quant_min == -128 && params.output->quant_max == 127,
                ErrorCode::Unsupported, op, ": the int8 output's range must be [-128, 127], got [",
                params.output->quant_min, ", ", params.output->quant_max, "]");
      int8 = &out;
    }
  }
  const Dims4 d = in.spec().dims4();
  VKD_CHECK(!in.spec().sizes.empty(), ErrorCode::InvalidArgument, op,
            ": the input must have a last dim to normalize");
  const float eps = checked_eps(op, params, d.w);
  const QuantParams out_q = params.output.value_or(QuantParams{});
  const LayerNormPush push{
      nchw_sizes(d), in_strides, out_strides, eps, inverse_scale(out_q.scale), out_q.zero_point};

  const int64_t chunks = div_up(d.w, 4);
  const TensorSpec affine_spec{
      {8 * chunks}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  const std::string first_output = graph.tensor(output != kNone ? output : output_q).name();
  const auto affine = graph.add_constant(
      affine_spec, first_output + ".layer_norm_affine",
      [weight = params.weight, bias = params.bias] { return pack_affine(weight, bias); },
      static_cast<size_t>(32 * chunks));

  graph::DispatchNode node;
  node.op = op;
  // The reductions through subgroupAdd where the device has subgroup arithmetic, else a tree.
  const int reduce = graph.profile().subgroup_arithmetic ? 1 : 0;
  // A float input whose rows are along H (no int8 output, or a 4H4W one: a row's 4 widths are
  // one word) takes a workgroup per row while the rows fit the device's group count along x:
  // the same sums, a quarter of the work per invocation.
  const bool one_row = !params.input &&
                       (int8 == nullptr || int8->spec().layout == MemoryLayout::PackedInt8_4H4W) &&
                       4 * div_up(d.h, 4) <= int64_t{graph.profile().max_workgroup_count[0]};
  if (params.input) {
    node.kernel = shaders::variants::q8ta_layer_norm[params.output ? 0 : 1]
                                                    [int8_layout_index(in.spec().layout)][reduce];
  } else if (one_row) {
    const int outputs = int8 == nullptr ? 0 : dual ? 2 : 1;
    node.kernel = shaders::variants::q8ta_layer_norm_row[outputs][0][0][0][reduce];
  } else if (int8 != nullptr) {
    node.kernel =
        shaders::variants::q8ta_layer_norm_float_q[dual ? 1 : 0][0]
                                                  [int8_layout_index(int8->spec().layout)][reduce];
  } else {
    node.kernel = shaders::variants::q8ta_layer_norm_float[0][0][0][reduce];
  }
  // Binding 0 the float32 output, else the int8 one; layer_norm_dual's int8 output at 3.
  node.bindings = {output != kNone ? output : output_q, input, affine};
  if (dual) node.bindings.push_back(output_q);
  node.push_constants = graph::push_constant_bytes(push);
  // One workgroup per block of 4 rows (heights for 4H4W and without an int8 tensor, channels for
  // 4W4C and 4C1W), of the device's linear size, no more than the row has chunks (group counts
  // past the device's limits are reported by ComputeGraph's per-node checks); with subgroup
  // reductions whole subgroups (on lavapipe a workgroup ending in a partial subgroup, W = 33: 9
  // invocations in subgroups of 8, gave wrong sums). The size depends on the row alone, so every
  // form of a float layer norm sums a row in the same order.
  const bool rows_are_channels =
      int8 != nullptr && int8->spec().layout != MemoryLayout::PackedInt8_4H4W;
  const uint32_t linear = std::min(vk::default_linear_local_size(graph.profile()), kMaxWorkgroup);
  uint32_t local = std::min(linear, static_cast<uint32_t>(std::max<int64_t>(1, chunks)));
  if (reduce == 1) {
    const uint32_t sg = std::max(1u, graph.profile().subgroup_size);
    local = std::min(linear, (local + sg - 1) / sg * sg);
  }
  node.plan.local_size = {local, 1, 1};
  // The row form's x runs on over the int8 output's padding rows (their zero-point words).
  const int64_t row_groups = one_row ? (int8 == nullptr ? d.h : 4 * div_up(d.h, 4))
                                     : div_up(rows_are_channels ? d.c : d.h, 4);
  node.plan.group_count = {static_cast<uint32_t>(row_groups),
                           static_cast<uint32_t>(rows_are_channels ? d.h : d.c),
                           static_cast<uint32_t>(d.n)};
  graph.add_node(std::move(node));
}

}  // namespace

void add_q8ta_layer_norm_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, const LayerNormParams& params) {
  const bool int8_out = params.output.has_value();
  add_layer_norm(graph, input, int8_out ? kNone : output, int8_out ? output : kNone, params);
}

void add_layer_norm_dual_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, graph::ValueRef output_q,
                              const LayerNormParams& params) {
  VKD_CHECK(!params.input && params.output, ErrorCode::InvalidArgument,
            "layer_norm_dual: a float32 input and the int8 output's quantization are required");
  add_layer_norm(graph, input, output, output_q, params);
}

// --- registry entries -------------------------------------------------------------

namespace {

// weight, bias and eps; the loader checked weight and bias (float32, rank 1) against the schema,
// their lengths against the row are add_q8ta_layer_norm_node's.
LayerNormParams affine_params(const OpCall& call) {
  LayerNormParams p;
  const auto k = call.channel_floats("weight", "bias");
  p.weight = k->scales;
  p.bias = k->bias;
  p.eps = call.float_arg("eps");
  return p;
}

LayerNormParams int8_params(const OpCall& call) {
  LayerNormParams p = affine_params(call);
  p.input = call.quant("input");
  call.set_zero_point("input", p.input->zero_point);
  return p;
}

void build_layer_norm(const OpCall& call) {
  LayerNormParams p = int8_params(call);
  p.output = call.quant("output");
  call.set_zero_point("output", p.output->zero_point);
  add_q8ta_layer_norm_node(call.graph(), call.tensor("input"), call.tensor("output"), p);
}

void build_layer_norm_dq(const OpCall& call) {
  add_q8ta_layer_norm_node(call.graph(), call.tensor("input"), call.tensor("output"),
                           int8_params(call));
}

void build_layer_norm_float(const OpCall& call) {
  add_q8ta_layer_norm_node(call.graph(), call.tensor("input"), call.tensor("output"),
                           affine_params(call));
}

// The float input's int8 output: its quantization (full int8 range), its padding zero point.
LayerNormParams quantized_output_params(const OpCall& call, std::string_view output) {
  LayerNormParams p = affine_params(call);
  p.output = call.quant("output");
  call.set_zero_point(output, p.output->zero_point);
  return p;
}

void build_layer_norm_q(const OpCall& call) {
  add_q8ta_layer_norm_node(call.graph(), call.tensor("input"), call.tensor("output"),
                           quantized_output_params(call, "output"));
}

void build_layer_norm_dual(const OpCall& call) {
  add_layer_norm_dual_node(call.graph(), call.tensor("input"), call.tensor("output"),
                           call.tensor("output_q"), quantized_output_params(call, "output_q"));
}

}  // namespace

void register_layer_norm_ops(OpRegistry& registry) {
  registry.add("q8ta_layer_norm", build_layer_norm);
  registry.add("q8ta_layer_norm_dq", build_layer_norm_dq);
  registry.add("layer_norm", build_layer_norm_float);
  registry.add("layer_norm_q", build_layer_norm_q);
  registry.add("layer_norm_dual", build_layer_norm_dual);
}

}  // namespace vkd::ops
