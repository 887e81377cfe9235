// Op family: element-wise int8 ops (q8ta_add, q8ta_mul, q8ta_clamp, q8ta_mul_scalar,
// q8ta_batch_norm).
#include "runtime/ops/Elementwise.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "core/PackedInt8Layout.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_binary.glsl.
struct BinaryPush {
  std::array<int32_t, 4> sizes;
  int32_t chunk_count, word_count, b_mode, b_batched;
  BinaryQuantPush quant;
};

// Mirrors `Params` in shaders/q8ta_clamp.glsl.
struct ClampPush {
  std::array<int32_t, 4> sizes;
  int32_t chunk_count, word_count, in_zp, out_zp;
  float in_scale, multiplier, inv_out_scale, act_lo, act_hi;
};

// The OP axis of the q8ta_binary variants (shaders/q8ta_binary.variants.json).
enum class BinaryOp { Add = 0, Mul = 1 };

// B_SAME / B_CHANNEL / B_SCALAR in the shader.
enum class Broadcast : int32_t { Same = 0, Channel = 1, Scalar = 2 };

// [1, C, 1, 1] or [N, C, 1, 1] against [N, C, H, W].
bool is_channel_vector(const Dims4& d, const Dims4& full) {
  return (d.n == 1 || d.n == full.n) && d.c == full.c && d.h == 1 && d.w == 1;
}
bool is_scalar(const Dims4& d) { return d.n == 1 && d.c == 1 && d.h == 1 && d.w == 1; }

// How `small` broadcasts against `full`; nullopt when it does not.
std::optional<Broadcast> broadcast_of(const Dims4& full, const Dims4& small) {
  if (full == small) return Broadcast::Same;
  if (is_channel_vector(small, full)) return Broadcast::Channel;
  if (is_scalar(small)) return Broadcast::Scalar;
  return std::nullopt;
}

// q8ta_add / q8ta_mul (`op` named `name`): checks, operand order and the node.
void add_binary_node(graph::ComputeGraph& graph, BinaryOp op, const std::string& name,
                     graph::ValueRef a, graph::ValueRef b, graph::ValueRef output,
                     const BinaryParams& params) {
  check_int8x4_tensor(name, graph.tensor(a));
  check_int8x4_tensor(name, graph.tensor(b));
  check_int8x4_tensor(name, graph.tensor(output));
  check_quant_params(name, params.a);
  check_quant_params(name, params.b);
  check_requantized_output(name, params.output, params.activation_min, params.activation_max);

  QuantParams qa = params.a, qb = params.b;
  const Dims4 d = graph.spec(output).dims4();
  // The kernel reads the full-size operand as `a`: swap when a is the broadcast one (float
  // addition and multiplication are commutative, the result is the same).
  if (!(graph.spec(a).dims4() == d) && graph.spec(b).dims4() == d) {
    std::swap(a, b);
    std::swap(qa, qb);
  }
  const TensorSpec& sa = graph.spec(a);
  const TensorSpec& sb = graph.spec(b);
  const TensorSpec& so = graph.spec(output);
  VKD_CHECK(sa.dims4() == d, ErrorCode::InvalidArgument, name, ": output sizes [",
            sizes_string(so.sizes, ", "), "] differ from both inputs' ([",
            sizes_string(sa.sizes, ", "), "], [", sizes_string(sb.sizes, ", "), "])");
  const auto mode = broadcast_of(d, sb.dims4());
  VKD_CHECK(mode.has_value(), ErrorCode::InvalidArgument, name, ": cannot combine [",
            sizes_string(so.sizes, ", "), "] with [", sizes_string(sb.sizes, ", "),
            "]: the smaller operand must have the same sizes, [N or 1, C, 1, 1] or [1, 1, 1, 1]");
  VKD_CHECK(sa.layout == so.layout && sb.layout == so.layout, ErrorCode::InvalidArgument, name,
            ": a, b and output must share one packed layout (", to_string(sa.layout), ", ",
            to_string(sb.layout), ", ", to_string(so.layout), ")");

  const int64_t words = packed_int8_word_count(so.layout, d);
  const int64_t chunks = (words + 3) / 4;
  VKD_CHECK(words < (int64_t(1) << 31), ErrorCode::Unsupported, name, ": ", words,
            " words exceed the 2^31 a kernel can index");
  const BinaryPush push{
      nchw_sizes(d),
      int32_t(chunks),
      int32_t(words),
      static_cast<int32_t>(*mode),
      *mode == Broadcast::Channel && sb.dims4().n > 1 ? 1 : 0,
      binary_quant_push(qa, qb, params.output, params.activation_min, params.activation_max)};
  graph::DispatchNode node;
  node.op = name;
  node.kernel = shaders::variants::q8ta_binary[static_cast<int>(op)][int8_layout_index(so.layout)];
  node.bindings = {output, a, b};
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(chunks));
  graph.add_node(std::move(node));
}

// scale[c], its halves with at most 12 significant bits each (hi: the low 12 bits of the
// significand cleared; lo = scale - hi, exact) and shift[c] per channel, as
// shaders/q8ta_clamp.glsl's ChannelAffine reads them, for 4 * ceil(C / 4) channels (zeros past
// C). Any such split keeps exact_fma's partial products exact; the compiler's check of the
// kernel (compiler/reference/QuantChain.cpp) splits the same way.
std::vector<uint8_t> pack_channel_affine(const std::vector<float>& scale,
                                         const std::vector<float>& shift) {
  const size_t padded = 4 * static_cast<size_t>(div_up(static_cast<int64_t>(scale.size()), 4));
  std::vector<float> words(4 * padded, 0.0f);
  for (size_t c = 0; c < scale.size(); ++c) {
    uint32_t bits;
    std::memcpy(&bits, &scale[c], 4);
    bits &= ~uint32_t{0xFFF};
    float hi;
    std::memcpy(&hi, &bits, 4);
    words[4 * c] = scale[c];
    words[4 * c + 1] = hi;
    words[4 * c + 2] = scale[c] - hi;
    words[4 * c + 3] = shift[c];
  }
  std::vector<uint8_t> bytes(words.size() * sizeof(float));
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return bytes;
}

// q8ta_clamp / q8ta_mul_scalar / q8ta_batch_norm (named `name`): the requantizing kernel over
// one tensor, the dequantized value multiplied by `multiplier` (1 for the clamp), or, with
// `channel_affine` (a constant of pack_channel_affine), mapped per channel.
void add_requantize_node(graph::ComputeGraph& graph, const std::string& name, graph::ValueRef input,
                         graph::ValueRef output, const ClampParams& params, float multiplier,
                         graph::ValueRef channel_affine = -1) {
  const int64_t words = check_elementwise_int8x4(name, graph.tensor(input), graph.tensor(output));
  check_quant_params(name, params.input);
  check_requantized_output(name, params.output, params.activation_min, params.activation_max);
  VKD_CHECK(std::isfinite(multiplier), ErrorCode::InvalidArgument, name, ": scalar ", multiplier,
            " is not finite");
  const TensorSpec& so = graph.spec(output);
  const Dims4 d = so.dims4();
  const int64_t chunks = (words + 3) / 4;
  const QuantParams& out = params.output;
  const ClampPush push{nchw_sizes(d),
                       int32_t(chunks),
                       int32_t(words),
                       params.input.zero_point,
                       out.zero_point,
                       params.input.scale,
                       multiplier,
                       inverse_scale(out.scale),
                       float(params.activation_min - out.zero_point),
                       float(params.activation_max - out.zero_point)};
  graph::DispatchNode node;
  node.op = name;
  const bool per_channel = channel_affine >= 0;
  node.kernel = shaders::variants::q8ta_clamp[per_channel ? 1 : 0][int8_layout_index(so.layout)];
  node.bindings = {output, input};
  if (per_channel) node.bindings.push_back(channel_affine);
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(chunks));
  graph.add_node(std::move(node));
}

}  // namespace

void add_q8ta_add_node(graph::ComputeGraph& graph, graph::ValueRef a, graph::ValueRef b,
                       graph::ValueRef output, const AddParams& params) {
  add_binary_node(graph, BinaryOp::Add, "q8ta_add", a, b, output, params);
}

void add_q8ta_mul_node(graph::ComputeGraph& graph, graph::ValueRef a, graph::ValueRef b,
                       graph::ValueRef output, const MulParams& params) {
  add_binary_node(graph, BinaryOp::Mul, "q8ta_mul", a, b, output, params);
}

void add_q8ta_clamp_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                         const ClampParams& params) {
  add_requantize_node(graph, "q8ta_clamp", input, output, params, 1.0f);
}

void add_q8ta_mul_scalar_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, const MulScalarParams& params) {
  add_requantize_node(graph, "q8ta_mul_scalar", input, output,
                      {params.input, params.output, params.activation_min, params.activation_max},
                      params.scalar);
}

void add_q8ta_batch_norm_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, const BatchNormParams& params) {
  const std::string op = "q8ta_batch_norm";
  const Dims4 d = graph.spec(output).dims4();
  const size_t channels = static_cast<size_t>(d.c);
  VKD_CHECK(graph.spec(input).sizes.size() == 4, ErrorCode::InvalidArgument, op,
            ": input must be 4-D [N, C, H, W], got [", sizes_string(graph.spec(input).sizes, ", "),
            "]");
  VKD_CHECK(params.scale.size() == channels && params.shift.size() == channels,
            ErrorCode::InvalidArgument, op, ": scale and shift must hold one value per channel (",
            channels, "), got ", params.scale.size(), " and ", params.shift.size());
  for (size_t c = 0; c < channels; ++c) {
    VKD_CHECK(std::isfinite(params.scale[c]) && std::isfinite(params.shift[c]),
              ErrorCode::InvalidArgument, op, ": channel ", c, ": scale ", params.scale[c],
              " and shift ", params.shift[c], " must be finite");
  }
  const size_t padded = 4 * static_cast<size_t>(div_up(static_cast<int64_t>(channels), 4));
  const TensorSpec spec{{static_cast<int64_t>(4 * padded)},
                        DType::Float32,
                        StorageType::Buffer,
                        MemoryLayout::WidthPacked};
  const auto affine = graph.add_constant(
      spec, graph.tensor(output).name() + ".channel_affine",
      [scale = params.scale, shift = params.shift] { return pack_channel_affine(scale, shift); },
      16 * padded);
  add_requantize_node(graph, op, input, output,
                      {params.input, params.output, params.activation_min, params.activation_max},
                      1.0f, affine);
}

// --- registry entries -------------------------------------------------------------

namespace {

// q8ta_add / q8ta_mul: their arguments by name, the same for both.
BinaryParams binary_params(const OpCall& call) {
  BinaryParams p;
  p.a = call.quant("a");
  p.b = call.quant("b");
  p.output = call.quant("output");
  p.activation_min = call.int32_arg("activation_min", -128, 127);
  p.activation_max = call.int32_arg("activation_max", -128, 127);
  call.set_zero_point("a", p.a.zero_point);
  call.set_zero_point("b", p.b.zero_point);
  call.set_zero_point("output", p.output.zero_point);
  return p;
}

void build_add(const OpCall& call) {
  add_q8ta_add_node(call.graph(), call.tensor("a"), call.tensor("b"), call.tensor("output"),
                    binary_params(call));
}

void build_mul(const OpCall& call) {
  add_q8ta_mul_node(call.graph(), call.tensor("a"), call.tensor("b"), call.tensor("output"),
                    binary_params(call));
}

// q8ta_clamp / q8ta_mul_scalar: the qparams and the activation range, the same for both.
ClampParams requantize_params(const OpCall& call) {
  ClampParams p;
  p.input = call.quant("input");
  p.output = call.quant("output");
  p.activation_min = call.int32_arg("activation_min", -128, 127);
  p.activation_max = call.int32_arg("activation_max", -128, 127);
  call.set_zero_point("input", p.input.zero_point);
  call.set_zero_point("output", p.output.zero_point);
  return p;
}

void build_clamp(const OpCall& call) {
  add_q8ta_clamp_node(call.graph(), call.tensor("input"), call.tensor("output"),
                      requantize_params(call));
}

void build_mul_scalar(const OpCall& call) {
  const ClampParams c = requantize_params(call);
  const MulScalarParams p{c.input, c.output, static_cast<float>(call.float_arg("scalar")),
                          c.activation_min, c.activation_max};
  add_q8ta_mul_scalar_node(call.graph(), call.tensor("input"), call.tensor("output"), p);
}

// The loader checked scale and shift (float32, rank 1) against the schema; their counts
// against the channels are add_q8ta_batch_norm_node's.
void build_batch_norm(const OpCall& call) {
  const ClampParams c = requantize_params(call);
  const auto k = call.channel_floats("scale", "shift");
  const BatchNormParams p{c.input, c.output,         k->scales,
                          k->bias, c.activation_min, c.activation_max};
  add_q8ta_batch_norm_node(call.graph(), call.tensor("input"), call.tensor("output"), p);
}

}  // namespace

void register_elementwise_ops(OpRegistry& registry) {
  registry.add("q8ta_add", build_add);
  registry.add("q8ta_mul", build_mul);
  registry.add("q8ta_clamp", build_clamp);
  registry.add("q8ta_mul_scalar", build_mul_scalar);
  registry.add("q8ta_batch_norm", build_batch_norm);
}

}  // namespace vkd::ops
