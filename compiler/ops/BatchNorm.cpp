// The inference batch norm: aten.batch_norm (what FX's BatchNorm2d and F.batch_norm become) and
// aten._native_batch_norm_legit_no_training (the edge dialect's). A standalone one between int8
// tensors (after a concatenation, at the start of a pre-activation block: one FX did not fold
// into a convolution), dq -> batch norm [-> relu | hardtanh | clamp] -> q, becomes
// q8ta_batch_norm; a float one stays on the host. Training mode is refused when the graph is
// read: it normalizes with the batch's statistics.
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/BatchNormFold.h"
#include "compiler/reference/QuantChain.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of the inference batch norm: aten.batch_norm (training false) and
// aten._native_batch_norm_legit_no_training (semantics in compiler/reference/BatchNormFold.h and
// above each function).
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// A [C] float32 input's values, or none when the input is absent.
std::vector<float> channel_values(const ReferenceContext& c, size_t i, const char* what,
                                  int64_t channels) {
  const HostTensor* t = c.optional_input(i, what);
  if (t == nullptr) return {};
  c.expect_dtype(*t, DType::Float32, what);
  c.require(
      t->shape == std::vector<int64_t>{channels},
      detail::concat(what, " has shape ", shape_str(t->shape), ", expected [", channels, "]"));
  return t->to_floats();
}

// The normalized input (inputs: input, weight, bias, running_mean, running_var).
HostTensor normalize(const ReferenceContext& c, double eps) {
  const HostTensor& x = c.input(0, "input");
  c.expect_dtype(x, DType::Float32, "input");
  c.require(x.shape.size() >= 2, "input must have a channel dim (rank >= 2)");
  const int64_t channels = x.shape[1];
  c.require(c.has_input(3) && c.has_input(4),
            "running_mean and running_var are required outside training");
  const BatchNormAffine a = fold_batch_norm(
      channel_values(c, 1, "weight", channels), channel_values(c, 2, "bias", channels),
      channel_values(c, 3, "running_mean", channels), channel_values(c, 4, "running_var", channels),
      eps, static_cast<size_t>(channels));
  HostTensor out = make_tensor(DType::Float32, x.shape);
  int64_t plane = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) plane *= x.shape[d];
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t ch = static_cast<size_t>((i / plane) % channels);
    set_f32(out, i, batch_norm_one(get_f32(x, i), a.scale[ch], a.shift[ch]));
  }
  return out;
}

}  // namespace

// aten.batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps,
//   cudnn_enabled), training false (the shape rule refuses training): the normalization above,
//   per element of channel dim 1. momentum and cudnn_enabled change nothing outside training.
std::vector<HostTensor> reference_batch_norm(const ReferenceContext& c) {
  c.require(!c.bool_arg("training", false), "training mode is not supported");
  return {normalize(c, c.float_arg("eps"))};
}

// aten._native_batch_norm_legit_no_training(input, weight?, bias?, running_mean, running_var,
//   momentum, eps) -> (output, save_mean, save_invstd): the same normalization; ATen returns
//   the two statistics empty ([0]) outside training.
std::vector<HostTensor> reference_batch_norm_no_training(const ReferenceContext& c) {
  return {normalize(c, c.float_arg("eps")), make_tensor(DType::Float32, {0}),
          make_tensor(DType::Float32, {0})};
}

}  // namespace vkd::compiler

// A standalone inference batch norm between int8 tensors (after a concatenation, as DenseNet
// has it; at the start of a pre-activation block; FX folds only the ones right after a conv):
//   dq -> aten.batch_norm | aten._native_batch_norm_legit_no_training [-> relu | hardtanh |
//   clamp] -> q => q8ta_batch_norm
// The batch norm's weight, bias and running statistics (float32 constants) are folded here into
// one scale and shift per channel as ATen computes them (compiler/reference/BatchNormFold.h), two
// new float32 constants of the blob. As for q8ta_clamp, the match does not rest on an argument
// about rounding: the chain is computed as the reference interpreter computes it for every int8
// value of every channel, and the backend arithmetic (QuantChain.h's requantize_batch_norm: the
// fused multiply-add from plain float32 operations, then the requantizing clamp, whose range is
// read off those values) must give the same, so the fused graph equals the interpreter bit for bit.
// A batch norm of 4-D [N, C, H, W] data only (the channel is the kernel's dim 1), with x * scale
// and shift within 2^-64 .. 2^64 in magnitude where not 0 (the kernel's exact multiply-add needs
// no subnormal intermediate, which a GPU may flush). Anything else is reported and left: with
// --partition, to the host.
namespace vkd::compiler::fusion {
namespace {

constexpr char kBackend[] = "q8ta_batch_norm";

// Input `i` of `n` as the values of a float32 constant, or none when absent; `why` is set when
// it is given but no constant.
std::vector<float> constant_floats(const Graph& g, const Node& n, size_t i, const char* what,
                                   std::string& why) {
  if (i >= n.inputs.size() || n.inputs[i].empty() || !why.empty()) return {};
  const Value& v = g.value(n.inputs[i]);
  if (!v.is_constant() || v.dtype != DType::Float32) {
    why = std::string(what) + " " + quoted(v.name) +
          " is not a float32 constant (the batch norm's parameters are folded at compile time)";
    return {};
  }
  std::vector<float> out(static_cast<size_t>(element_count(v.shape)));
  if (!out.empty()) std::memcpy(out.data(), v.data->data(), out.size() * sizeof(float));
  return out;
}

// "" when every product of an input value (|x| between s_in and 255 s_in where not 0) with
// scale, and every shift, is 0 or within 2^-64 .. 2^64: the kernel's exact multiply-add then
// meets no subnormal intermediate and no overflow.
std::string check_magnitudes(const BatchNormAffine& a, const QuantInfo& in) {
  const double lo = std::ldexp(1.0, -64), hi = std::ldexp(1.0, 64);
  const double s_in = static_cast<float>(in.scale);
  for (size_t c = 0; c < a.scale.size(); ++c) {
    const double m = std::fabs(static_cast<double>(a.scale[c])), b = std::fabs(a.shift[c]);
    const bool scale_ok = m == 0 || (m * s_in >= lo && m * 255 * s_in <= hi);
    if (!scale_ok || !(b == 0 || (b >= lo && b <= hi))) {
      return "channel " + std::to_string(c) + ": scale " + fmt(a.scale[c]) + " and shift " +
             fmt(a.shift[c]) + " leave 2^-64 .. 2^64, where q8ta_batch_norm is exact";
    }
  }
  return "";
}

// The activation range for which q8ta_batch_norm computes the chain (`clamps` after the batch
// norm `a`, quantized with `out`) for every int8 value of every channel; "" or the first value
// where no range does.
std::string kernel_range(const BatchNormAffine& a, const QuantInfo& in,
                         const std::vector<FloatClamp>& clamps, const QuantInfo& out,
                         Activation& range) {
  std::vector<int64_t> want(a.scale.size() * 256);
  range.min = 127;
  range.max = -128;
  for (size_t c = 0; c < a.scale.size(); ++c) {
    for (int64_t v = -128; v <= 127; ++v) {
      const int64_t w = reference_dq_batch_norm_q(v, in, a.scale[c], a.shift[c], clamps, out);
      want[c * 256 + static_cast<size_t>(v + 128)] = w;
      range.min = std::min(range.min, w);
      range.max = std::max(range.max, w);
    }
  }
  for (size_t c = 0; c < a.scale.size(); ++c) {
    for (int64_t v = -128; v <= 127; ++v) {
      const int64_t got =
          requantize_batch_norm(v, in, out, a.scale[c], a.shift[c], range.min, range.max);
      const int64_t w = want[c * 256 + static_cast<size_t>(v + 128)];
      if (got != w) {
        return "channel " + std::to_string(c) + ": int8 value " + std::to_string(v) + " gives " +
               std::to_string(got) + ", the chain gives " + std::to_string(w);
      }
    }
  }
  return "";
}

// A float32 constant [C] of `values`, named after `base`.
std::string add_channel_constant(Graph& g, const std::string& base,
                                 const std::vector<float>& values) {
  Value v;
  v.name = g.unique_name(base);
  v.dtype = DType::Float32;
  v.shape = {static_cast<int64_t>(values.size())};
  v.data = std::vector<uint8_t>(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(v.data->data(), values.data(), v.data->size());
  return g.add_value(v).name;
}

// "" when the batch norm's extra outputs (save_mean, save_invstd) are read by nothing.
std::string check_extra_outputs(const Graph& g, const Node& n) {
  for (size_t k = 1; k < n.outputs.size(); ++k) {
    const std::string& v = n.outputs[k];
    if (g.is_graph_output(v) || !g.consumers(v).empty()) {
      return quoted(v) + " (output " + std::to_string(k) + ") is read";
    }
  }
  return "";
}

}  // namespace

void fuse_batch_norm(FuseState& state, int i) {
  Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.empty()) return;
  const int p = g.producer(n.inputs[0]);
  if (!node_is(g, p, kDq)) return;  // not a quantized pattern
  const Tail tail = match_tail(g, n.outputs[0]);
  // No quantize after it: a float batch norm, left to the host.
  if (tail.kind == Tail::None || tail.q < 0) return;
  if (!state.allowed(i, kBackend)) return;
  std::vector<int> nodes = {p, i};
  nodes.insert(nodes.end(), tail.nodes.begin(), tail.nodes.end());
  const std::string chain = state.chain_of({p}, i, tail.nodes);
  auto fail = [&](const std::string& why) { state.not_fused(chain, nodes, kBackend, why); };

  QuantInfo in_q;
  std::string why = check_activation_dq(g, g.nodes[p], p, in_q);
  if (why.empty()) why = single_use(g, n.inputs[0]);
  if (why.empty() && tail.kind == Tail::Half) why = tail.why;
  if (why.empty()) why = check_extra_outputs(g, n);
  const std::vector<int64_t>& shape = g.value(n.inputs[0]).shape;
  if (why.empty() && shape.size() != 4) {
    why = "input shape " + shape_str(shape) + ": q8ta_batch_norm takes 4-D [N, C, H, W] data";
  }
  const std::vector<float> weight = constant_floats(g, n, 1, "weight", why);
  const std::vector<float> bias = constant_floats(g, n, 2, "bias", why);
  const std::vector<float> mean = constant_floats(g, n, 3, "running_mean", why);
  const std::vector<float> var = constant_floats(g, n, 4, "running_var", why);
  if (!why.empty()) return fail(why);
  const BatchNormAffine a =
      fold_batch_norm(weight, bias, mean, var, arg_float(n, "eps"), static_cast<size_t>(shape[1]));
  why = check_magnitudes(a, in_q);
  std::vector<FloatClamp> clamps;
  if (why.empty() && tail.act >= 0) why = activation_clamps(g, {tail.act}, clamps);
  Activation range;
  if (why.empty()) why = kernel_range(a, in_q, clamps, tail.out_q, range);
  if (why.empty() && state.any_claimed(nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) return fail(why);

  const std::string x_q = g.nodes[p].inputs[0];
  const std::string output = g.nodes[tail.q].outputs[0];
  Fusion f;
  f.nodes = nodes;
  f.dead = {n.inputs[0]};
  f.dead.insert(f.dead.end(), n.outputs.begin() + 1, n.outputs.end());
  f.dead.insert(f.dead.end(), tail.values.begin(), tail.values.end());
  for (size_t k = 1; k < n.inputs.size(); ++k) {  // parameters only this node reads
    const std::string& v = n.inputs[k];
    if (!v.empty() && g.consumers(v) == std::vector<int>{i} && !g.is_graph_output(v)) {
      f.dead.push_back(v);
    }
  }
  Node& b = f.node;
  b.op = kBackend;
  b.inputs = {x_q, add_channel_constant(g, output + "_scale", a.scale),
              add_channel_constant(g, output + "_shift", a.shift)};
  b.outputs = {output};
  b.args = {{"input_scale", in_q.scale},        {"input_zero_point", in_q.zero_point},
            {"output_scale", tail.out_q.scale}, {"output_zero_point", tail.out_q.zero_point},
            {"activation_min", range.min},      {"activation_max", range.max}};
  b.origin = state.fused_origin(i, kBackend);
  state.produced[output] = tail.out_q;
  state.consume_quant(x_q, p, in_q);
  state.commit(std::move(f), chain,
               " (" + std::to_string(shape[1]) + " channels, activation range " +
                   std::to_string(range.min) + ".." + std::to_string(range.max) + ")");
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

// input float32 of rank >= 2; each per-channel tensor given float32 [C]; the running
// statistics given; eps a finite non-negative number. The normalized output has the input's
// shape.
TypedShape check_batch_norm(const ShapeContext& c) {
  const Value& x = c.in("input");
  c.dtype(x, "input", DType::Float32);
  if (x.shape.size() < 2) {
    c.fail(c.input_field("input"), "expected a channel dim (rank >= 2), got shape ",
           shape_str(x.shape));
  }
  for (const char* name : {"weight", "bias", "running_mean", "running_var"}) {
    const Value* v = c.opt_in(name);
    if (v == nullptr) {
      if (name[0] == 'r') {
        c.fail(c.input_field(name),
               "required outside training (the statistics to normalize "
               "with)");
      }
      continue;
    }
    c.dtype(*v, name, DType::Float32);
    c.shape(*v, name, {x.shape[1]}, "one value per channel of the input");
  }
  const double eps = c.f64("eps");
  if (!(eps >= 0.0 && std::isfinite(eps))) {
    c.fail(ShapeContext::arg_field("eps"), "expected a finite value >= 0, got ", eps);
  }
  (void)c.f64("momentum");
  return {DType::Float32, x.shape};
}

std::vector<TypedShape> batch_norm(const ShapeContext& c) {
  if (c.flag_or("training", true)) {
    c.fail(ShapeContext::arg_field("training"),
           "true: in training mode it normalizes with the batch's own statistics; export the "
           "model in eval mode (model.eval())");
  }
  (void)c.flag_or("cudnn_enabled", true);
  return {check_batch_norm(c)};
}

std::vector<TypedShape> batch_norm_no_training(const ShapeContext& c) {
  // save_mean and save_invstd: empty outside training.
  return {check_batch_norm(c), {DType::Float32, {0}}, {DType::Float32, {0}}};
}

const std::vector<const char*> kInputs = {"input", "weight", "bias", "running_mean", "running_var"};

}  // namespace

std::vector<EdgeOp> batch_norm_edge_ops() {
  return {
      EdgeOp{"aten.batch_norm",
             kInputs,
             1,
             {required_arg("training", Lit::Bool), required_arg("momentum", Lit::Number),
              required_arg("eps", Lit::Number), required_arg("cudnn_enabled", Lit::Bool)},
             1,
             batch_norm}
          .computed_by(reference_batch_norm)
          .fused_by(fusion::fuse_batch_norm, {"q8ta_batch_norm"}),
      EdgeOp{"aten._native_batch_norm_legit_no_training",
             kInputs,
             1,
             {required_arg("momentum", Lit::Number), required_arg("eps", Lit::Number)},
             3,
             batch_norm_no_training}
          .computed_by(reference_batch_norm_no_training)
          .fused_by(fusion::fuse_batch_norm, {"q8ta_batch_norm"}),
  };
}

}  // namespace vkd::compiler
