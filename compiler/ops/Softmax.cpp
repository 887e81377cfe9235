// aten._softmax / aten._log_softmax (core ATen, what the exporter writes) and aten.softmax.int /
// aten.log_softmax.int (torch.export before decomposition). On a dequantized int8 tensor, over
// its last dim, they become q8ta_softmax (followed by a quantize: int8 output) or
// q8ta_softmax_dq (float32 output).
#include "compiler/ops/EdgeOp.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of softmax and log_softmax (aten._softmax, aten._log_softmax, aten.softmax.int,
// aten.log_softmax.int), over any dim of a float32 tensor. Per row along `dim`, in double from
// the float32 inputs, each result rounded once to float32 (PyTorch computes in float32: x - max,
// exp, a float32 sum; the torch oracle checks the two within 1e-5):
//   m = max x (NaN if any x is NaN);  sum = sum over the row of exp(x - m)
//   softmax:     y = exp(x - m) / sum
//   log_softmax: y = (x - m) - log(sum)
// The max makes it numerically stable: exp never overflows and sum >= 1.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// The row of `size` elements `stride` apart starting at element `first` (C order): softmax or
// log_softmax.
void softmax_row(const HostTensor& x, HostTensor& y, int64_t first, int64_t size, int64_t stride,
                 bool log) {
  double m = -INFINITY;
  for (int64_t k = 0; k < size; ++k) {
    const double v = get_f32(x, first + k * stride);
    if (std::isnan(v)) {
      m = v;
      break;
    }
    if (v > m) m = v;
  }
  double sum = 0.0;
  for (int64_t k = 0; k < size; ++k) sum += std::exp(get_f32(x, first + k * stride) - m);
  for (int64_t k = 0; k < size; ++k) {
    const double d = get_f32(x, first + k * stride) - m;
    set_f32(y, first + k * stride, static_cast<float>(log ? d - std::log(sum) : std::exp(d) / sum));
  }
}

}  // namespace

std::vector<HostTensor> reference_softmax(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  c.expect_dtype(x, DType::Float32, "self");
  const int64_t dim = norm_dim(c, c.int_arg("dim"), x.shape.size());
  const bool log = c.node().op.find("log_softmax") != std::string::npos;
  int64_t inner = 1, outer = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (static_cast<int64_t>(d) < dim) outer *= x.shape[d];
    if (static_cast<int64_t>(d) > dim) inner *= x.shape[d];
  }
  const int64_t size = x.shape[static_cast<size_t>(dim)];
  HostTensor y = make_tensor(DType::Float32, x.shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) softmax_row(x, y, o * size * inner + i, size, inner, log);
  }
  return {y};
}

}  // namespace vkd::compiler

// dq -> softmax | log_softmax (below) over the last dim [-> q] =>
// q8ta_softmax (the quantize folded in: int8 output in the input's layout) or, when no quantize
// alone follows, q8ta_softmax_dq (the float32 output the op wrote; whatever reads it is lowered
// on its own). The kernel computes in float32 with the device's exp and log: it agrees with the
// reference within float32 rounding, not bit for bit (runtime/ops/Softmax.h).
namespace vkd::compiler::fusion {
namespace {

// "" when softmax `n` reads its rank-`rank` input along the last dim.
std::string check_last_dim(const Node& n, int64_t rank) {
  const std::optional<int64_t> dim = opt_int(n, "dim");
  if (!dim) return "dim is not an integer";
  if (*dim != rank - 1 && *dim != -1) {
    return "dim " + std::to_string(*dim) + " is not the last dim of a rank-" +
           std::to_string(rank) + " input (only the last dim is supported)";
  }
  return "";
}

// Whether the int8 variant takes `tail`: a quantize alone, into the full int8 range.
bool quantized_tail(const Tail& tail) {
  return tail.kind == Tail::Ok && tail.act < 0 && tail.out_q.quant_min == -128 &&
         tail.out_q.quant_max == 127;
}

}  // namespace

void fuse_softmax(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.outputs.size() != 1) return;
  const bool int8_out = quantized_tail(match_tail(g, n.outputs[0]));
  const std::string backend = int8_out ? "q8ta_softmax" : "q8ta_softmax_dq";
  const std::optional<DqAnchor> m = state.match_dq_anchor(i, backend);
  if (!m) return;
  // The float variant ends at the softmax: the tail's nodes stay for lowering on their own.
  const std::vector<int> nodes = int8_out ? m->nodes : std::vector<int>{m->dq, i};
  const std::string chain = int8_out ? m->chain : state.chain_of({m->dq}, i, {});
  QuantInfo in_q;
  std::string why = check_activation_dq(g, g.nodes[m->dq], m->dq, in_q);
  if (why.empty()) why = single_use(g, m->x);
  if (why.empty()) why = check_last_dim(n, static_cast<int64_t>(g.value(m->x).shape.size()));
  if (why.empty() && state.any_claimed(nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) return state.not_fused(chain, nodes, backend, why);

  Fusion f = state.dq_anchor_fusion(i, *m, nodes, backend, in_q, int8_out);
  f.node.args["log"] = n.op.find("log_softmax") != std::string::npos;
  state.commit(std::move(f), chain, "");
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

// float32 'self' of rank >= 1, `dim` inside it; float32 of its shape. The core ATen form's
// half_to_float must be false and the .int form's dtype None (no conversion either way).
std::vector<TypedShape> softmax(const ShapeContext& c) {
  std::vector<TypedShape> out = unary_float_shape(c);
  const int64_t rank = static_cast<int64_t>(out[0].shape.size());
  const int64_t dim = c.i64("dim");
  if (rank == 0 || dim < -rank || dim >= rank) {
    c.fail(ShapeContext::arg_field("dim"), "expected a dim in [", -rank, ", ", rank, "), got ",
           dim);
  }
  if (c.flag_or("half_to_float", false)) {
    c.fail(ShapeContext::arg_field("half_to_float"), "must be false (the input is float32)");
  }
  if (c.opt_str("dtype")) c.fail(ShapeContext::arg_field("dtype"), "must be None");
  return out;
}

EdgeOp softmax_op(const char* name, EdgeArg conversion) {
  return EdgeOp{name, {"self"}, 1, {required_arg("dim", Lit::Int), conversion}, 1, softmax}
      .computed_by(reference_softmax)
      .fused_by(fusion::fuse_softmax, {"q8ta_softmax", "q8ta_softmax_dq"});
}

}  // namespace

std::vector<EdgeOp> softmax_edge_ops() {
  const EdgeArg half_to_float = optional_arg("half_to_float", Lit::Bool, ArgValue(false), false);
  const EdgeArg dtype = optional_arg("dtype", Lit::String);
  return {softmax_op("aten._softmax", half_to_float),
          softmax_op("aten._log_softmax", half_to_float), softmax_op("aten.softmax.int", dtype),
          softmax_op("aten.log_softmax.int", dtype)};
}

}  // namespace vkd::compiler
