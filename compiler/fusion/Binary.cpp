// The binary element-wise patterns (neither has a float-output variant):
//   dq(a), dq(b) -> aten.add.Tensor [-> act] -> q => q8ta_add, or the epilogue of the conv /
//   linear writing a or b (Epilogue.cpp: q8ta_conv2d_add, q8ta_linear_add)
//   dq(a), dq(b) -> aten.mul.Tensor [-> act] -> q => q8ta_mul
// and aten.mul.Tensor with one operand a one-element constant (float32, or an int8 constant
// behind a dequantize) => q8ta_mul_scalar (Activation.cpp's requantizing chain).
#include <optional>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler::fusion {
namespace {

// The backend op of a binary pattern and how the reports write its edge op.
struct BinaryKind {
  const char* backend;  // "q8ta_add"
  const char* name;     // "add"
  const char* symbol;   // "+"
};
constexpr BinaryKind kAddKind{"q8ta_add", "add", "+"};
constexpr BinaryKind kMulKind{"q8ta_mul", "mul", "*"};

// Operand shapes q8ta_add / q8ta_mul take (runtime/ops/Elementwise.h): equal, or one of them 4-D
// [N or 1, C, 1, 1] (N, C of the other, itself 4-D) or [1, 1, 1, 1].
bool binary_broadcast_supported(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a == b) return true;
  auto small_of = [](const std::vector<int64_t>& full, const std::vector<int64_t>& s) {
    if (full.size() != 4 || s.size() != 4 || s[2] != 1 || s[3] != 1) return false;
    return (s[0] == 1 && s[1] == 1) || ((s[0] == 1 || s[0] == full[0]) && s[1] == full[1]);
  };
  return small_of(a, b) || small_of(b, a);
}

// Why operand `other` (produced by node `producer`, or -1) keeps the add from matching.
std::string not_dequantized(const Graph& g, const std::string& other, int producer) {
  const Value& ov = g.value(other);
  const std::string from = producer >= 0      ? "produced by " + g.nodes[producer].op
                           : ov.is_constant() ? "a constant"
                                              : "a graph input";
  return quoted(other) + " is not dequantized (" + from + ")";
}

// "" when add / mul `n` (operands dequantized by nodes `pa`, `pb`) and its `tail` fit the
// backend op, filling the operands' qparams; checked in the order the reasons are reported.
std::string check_binary(const Graph& g, const Node& n, const BinaryKind& kind, int pa, int pb,
                         const Tail& tail, QuantInfo& qa, QuantInfo& qb) {
  const std::string &a = n.inputs[0], &b = n.inputs[1];
  if (!node_is(g, pa, kDq)) return not_dequantized(g, a, pa);
  if (!node_is(g, pb, kDq)) return not_dequantized(g, b, pb);
  std::string why = check_activation_dq(g, g.nodes[pa], pa, qa);
  if (why.empty()) why = check_activation_dq(g, g.nodes[pb], pb, qb);
  if (why.empty()) why = single_use(g, a);
  if (why.empty() && b != a) why = single_use(g, b);
  if (!why.empty()) return why;
  if (arg_present(n, "alpha")) {
    const auto alpha = opt_float(n, "alpha");
    if (!alpha || *alpha != 1.0) return "alpha is not 1";
  }
  const std::string backend = kind.backend;
  if (!binary_broadcast_supported(g.value(a).shape, g.value(b).shape)) {
    return std::string("broadcasting ") + kind.name + " (" + shape_str(g.value(a).shape) + " " +
           kind.symbol + " " + shape_str(g.value(b).shape) + "; " + backend +
           " broadcasts only a 4-D [N or 1, C, 1, 1] or [1, 1, 1, 1] operand)";
  }
  if (tail.kind == Tail::None) {
    return describe_consumers(g, n.outputs[0]) + " (" + backend + " has no float-output variant)";
  }
  return tail.kind == Tail::Half ? tail.why : "";
}

Node build_binary(FuseState& state, const std::string& backend, int i, int pa, int pb,
                  const Tail& tail, const QuantInfo& qa, const QuantInfo& qb) {
  const Graph& g = state.graph;
  Node out;
  out.op = backend;
  const std::string a_q = g.nodes[pa].inputs[0], b_q = g.nodes[pb].inputs[0];
  out.inputs = {a_q, b_q};
  out.args["a_scale"] = qa.scale;
  out.args["a_zero_point"] = qa.zero_point;
  out.args["b_scale"] = qb.scale;
  out.args["b_zero_point"] = qb.zero_point;
  out.args["output_scale"] = tail.out_q.scale;
  out.args["output_zero_point"] = tail.out_q.zero_point;
  out.args["activation_min"] = tail.activation.min;
  out.args["activation_max"] = tail.activation.max;
  const std::string output = g.nodes[tail.q].outputs[0];
  out.outputs = {output};
  out.origin = state.fused_origin(i, out.op);
  state.produced[output] = tail.out_q;
  state.consume_quant(a_q, pa, qa);
  state.consume_quant(b_q, pb, qb);
  return out;
}

// dq(a), dq(b) -> `kind` [-> act] -> q anchored at node `i`.
void fuse_binary(FuseState& state, int i, const BinaryKind& kind) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return;
  const std::string a = n.inputs[0], b = n.inputs[1];
  const int pa = g.producer(a), pb = g.producer(b);
  const bool da = node_is(g, pa, kDq), db = node_is(g, pb, kDq);
  if (!da && !db) return;  // not a quantized pattern
  if (!state.allowed(i, kind.backend)) return;
  std::vector<int> head;
  if (da) head.push_back(pa);
  if (db && pb != pa) head.push_back(pb);
  const Tail tail = match_tail(g, n.outputs[0]);
  std::vector<int> all = head;
  all.push_back(i);
  all.insert(all.end(), tail.nodes.begin(), tail.nodes.end());
  const std::string chain = state.chain_of(head, i, tail.nodes);
  auto fail = [&](const std::string& why) { state.not_fused(chain, all, kind.backend, why); };

  QuantInfo qa, qb;
  const std::string why = check_binary(g, n, kind, pa, pb, tail, qa, qb);
  if (!why.empty()) return fail(why);
  if (state.any_claimed(all)) return fail("overlaps another fused pattern");
  std::vector<std::string> dead = {a};
  if (b != a) dead.push_back(b);
  dead.insert(dead.end(), tail.values.begin(), tail.values.end());
  if (std::string(kind.backend) == kAddKind.backend) {
    const AddCandidate epilogue{{g.nodes[pa].inputs[0], g.nodes[pb].inputs[0]},
                                {pa, pb},
                                {qa, qb},
                                all,
                                dead,
                                g.nodes[tail.q].outputs[0],
                                tail.out_q,
                                tail.activation,
                                chain};
    if (join_add_epilogue(state, epilogue)) return;
  }
  Fusion f;
  f.nodes = all;
  f.dead = dead;
  f.node = build_binary(state, kind.backend, i, pa, pb, tail, qa, qb);
  state.commit(std::move(f), chain, " (activation " + tail.activation.label + ")");
}

// A one-element operand of a mul and where it comes from.
struct ScalarOperand {
  float value = 0.0f;
  std::string dq;  // the weight dequantize it comes through, "" for a float32 constant
};

// `v` as a scalar operand: a float32 constant of one element, or the dequantize (per tensor) of
// an int8 constant of one element, valued as the reference's dequantize computes it:
// float32(q - zero_point) * float32(scale). nullopt for anything else.
std::optional<ScalarOperand> scalar_operand(const Graph& g, const std::string& v) {
  const Value& val = g.value(v);
  if (element_count(val.shape) != 1) return std::nullopt;
  if (val.is_constant()) {
    if (val.dtype != DType::Float32) return std::nullopt;
    return ScalarOperand{reference::bits_to_float(reference::load_u32(val.data->data())), ""};
  }
  const int p = g.producer(v);
  if (!node_is(g, p, kDq)) return std::nullopt;
  const Node& dq = g.nodes[p];
  const Value& q = g.value(dq.inputs[0]);
  QuantInfo info;
  if (!q.is_constant() || q.dtype != DType::Int8 || !read_qparams(dq, info).empty()) {
    return std::nullopt;
  }
  const auto code = static_cast<int8_t>((*q.data)[0]);
  return ScalarOperand{static_cast<float>(code - info.zero_point) * static_cast<float>(info.scale),
                       v};
}

}  // namespace

void fuse_add(FuseState& state, int i) { fuse_binary(state, i, kAddKind); }

void fuse_mul(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return;
  for (int x = 0; x < 2; ++x) {  // one operand dequantized, the other a scalar
    const std::optional<ScalarOperand> s = scalar_operand(g, n.inputs[static_cast<size_t>(1 - x)]);
    if (s && node_is(g, g.producer(n.inputs[static_cast<size_t>(x)]), kDq)) {
      return fuse_scaled_chain(state, i, x, s->value, s->dq);
    }
  }
  fuse_binary(state, i, kMulKind);
}

}  // namespace vkd::compiler::fusion
