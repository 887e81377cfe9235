// The Q, K and V projections of one attention as one GEMM: a committed q8ta_attention match
// (or _mask_affine) whose query, key and value are each written by a committed plain
// q8ta_linear match (no activation range), all three reading the same int8 input with the same
// parameters, each output [B, T, C] read only by the attention with the parameters it was
// written with
//   => q8ta_linear_qkv (weights [3C, K]: q's rows, then k's, then v's; scales and biases alike)
//   writing one [B, T, 3C] int8 value, each column block requantized with its own linear's
//   parameters, and q8ta_attention_qkv (_mask_affine_qkv) reading its column blocks 0, C, 2C.
// Both runtime ops compute the bytes of the ops they replace (runtime/ops/Linear.h,
// runtime/ops/Attention.h), so the model's output does not change; two dispatches fewer per
// attention. Run once every pattern was matched, before the matches are applied; off with
// --no-fuse-epilogue (reported either way when the three are linears).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/fusion/Patterns.h"

namespace vkd::compiler::fusion {
namespace {

constexpr const char* kQkvLinear = "q8ta_linear_qkv";

bool is_int8_attention(const Fusion& f) {
  return f.node.op == "q8ta_attention" || f.node.op == "q8ta_attention_mask_affine";
}

// True when any match's node, or any node no match took, reads `v`.
bool read_anywhere(const FuseState& state, const std::string& v) {
  for (const Fusion& f : state.fusions) {
    if (std::find(f.node.inputs.begin(), f.node.inputs.end(), v) != f.node.inputs.end()) {
      return true;
    }
  }
  for (size_t i = 0; i < state.graph.nodes.size(); ++i) {
    const Node& n = state.graph.nodes[i];
    if (!state.claimed[i] && std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end()) {
      return true;
    }
  }
  return false;
}

// "" when linears `w` (query, key, value) may become one q8ta_linear_qkv for attention `a`.
std::string check_qkv(const FuseState& state, const Fusion* const w[3], const Fusion& a,
                      const std::string& attention_target) {
  const Graph& g = state.graph;
  const char* names[] = {"query", "key", "value"};
  if (!state.options.fuse_epilogues) return "epilogue fusion is off (--no-fuse-epilogue)";
  if (w[0] == w[1] || w[0] == w[2] || w[1] == w[2]) return "one linear writes two of them";
  const int64_t c = g.value(a.node.outputs.at(0)).shape.back();
  const std::vector<int64_t>& k_shape = g.value(w[0]->node.inputs.at(1)).shape;
  for (int k = 0; k < 3; ++k) {
    const Node& n = w[k]->node;
    const std::string what = std::string("the ") + names[k] + "'s linear ";
    if (n.op != "q8ta_linear") return what + "is " + n.op + ": only a plain q8ta_linear merges";
    if (n.inputs[0] != w[0]->node.inputs[0] ||
        arg_float(n, "input_scale") != arg_float(w[0]->node, "input_scale") ||
        arg_int(n, "input_zero_point") != arg_int(w[0]->node, "input_zero_point")) {
      return what + "reads " + quoted(n.inputs[0]) + ", not the query's input " +
             quoted(w[0]->node.inputs[0]) + " with its parameters";
    }
    if (arg_int(n, "activation_min") != -128 || arg_int(n, "activation_max") != 127) {
      return what + "has an activation range [" + std::to_string(arg_int(n, "activation_min")) +
             ", " + std::to_string(arg_int(n, "activation_max")) + "]";
    }
    const Value& weight = g.value(n.inputs[1]);
    if (!weight.is_constant() || weight.shape != std::vector<int64_t>{c, k_shape.at(1)}) {
      return what + "has weights " + shape_str(weight.shape) + ", not a constant [" +
             std::to_string(c) + ", K] of the query's K";
    }
    for (int t = 2; t < 4; ++t) {
      const Value& v = g.value(n.inputs[static_cast<size_t>(t)]);
      if (!v.is_constant() || v.dtype != DType::Float32 || v.shape != std::vector<int64_t>{c}) {
        return what + "has a " + (t == 2 ? "weight scale" : "bias") + " " + quoted(v.name) +
               " that is not a float32 constant [" + std::to_string(c) + "]";
      }
    }
    const QuantInfo read_as{arg_float(a.node, std::string(names[k]) + "_scale"),
                            arg_int(a.node, std::string(names[k]) + "_zero_point")};
    const std::string why = state.read_as_written(n.outputs.at(0), read_as);
    if (!why.empty()) return what + "output " + quoted(n.outputs[0]) + ": " + why;
  }
  if (!state.may_target(kQkvLinear)) return std::string(kQkvLinear) + " has no kernel";
  if (!state.may_target(attention_target)) return attention_target + " has no kernel";
  return "";
}

// A new constant: the bytes of constants `parts` (one shape) one after another, stacked along
// their first dim.
std::string concatenated(Graph& g, const std::string& base, const std::vector<std::string>& parts) {
  const Value& first = g.value(parts[0]);
  Value v;
  v.name = g.unique_name(base);
  v.dtype = first.dtype;
  v.shape = first.shape;
  v.shape[0] *= static_cast<int64_t>(parts.size());
  v.data = std::vector<uint8_t>();
  for (const std::string& p : parts) {
    const std::vector<uint8_t>& bytes = *g.value(p).data;
    v.data->insert(v.data->end(), bytes.begin(), bytes.end());
  }
  return g.add_value(v).name;
}

// Linears `w` merge into w[0], which becomes q8ta_linear_qkv writing a new [B, T, 3C] value;
// attention `a` reads that. The values only the old linears read go.
void merge_qkv(FuseState& state, Fusion* const w[3], Fusion& a, const std::string& target) {
  Graph& g = state.graph;
  std::vector<std::string> parts[3], outputs;
  for (int k = 0; k < 3; ++k) {
    for (int t = 0; t < 3; ++t) parts[t].push_back(w[k]->node.inputs[static_cast<size_t>(t + 1)]);
    outputs.push_back(w[k]->node.outputs[0]);
  }
  Value qkv = g.value(outputs[0]);
  qkv.name = g.unique_name(outputs[0] + "_qkv");
  qkv.shape.back() *= 3;
  g.add_value(qkv);
  Node& n = w[0]->node;
  const char* prefixes[] = {"q_", "k_", "v_"};
  for (int k = 0; k < 3; ++k) {
    n.args[std::string(prefixes[k]) + "scale"] = w[k]->node.args.at("output_scale");
    n.args[std::string(prefixes[k]) + "zero_point"] = w[k]->node.args.at("output_zero_point");
  }
  for (const char* arg : {"output_scale", "output_zero_point", "activation_min", "activation_max"})
    n.args.erase(arg);
  n.inputs = {n.inputs[0], concatenated(g, qkv.name + "_weight", parts[0]),
              concatenated(g, qkv.name + "_weight_scales", parts[1]),
              concatenated(g, qkv.name + "_bias", parts[2])};
  n.outputs = {qkv.name};
  FuseState::retarget(*w[0], kQkvLinear);
  state.produced[qkv.name] = state.produced.at(outputs[0]);
  for (int k = 1; k < 3; ++k) {
    Fusion& from = *w[k];
    w[0]->nodes.insert(w[0]->nodes.end(), from.nodes.begin(), from.nodes.end());
    w[0]->dead.insert(w[0]->dead.end(), from.dead.begin(), from.dead.end());
    w[0]->folded.insert(w[0]->folded.end(), from.folded.begin(), from.folded.end());
  }
  std::sort(w[0]->nodes.begin(), w[0]->nodes.end());
  a.node.inputs = {qkv.name, a.node.inputs.at(3)};
  FuseState::retarget(a, target);
  for (const std::string& v : outputs) {
    w[0]->dead.push_back(v);
    state.produced.erase(v);
    state.consumed.erase(v);
  }
}

}  // namespace

void join_qkv_linears(FuseState& state) {
  const Graph& g = state.graph;
  std::vector<Fusion*> gone;
  for (Fusion& a : state.fusions) {
    if (!is_int8_attention(a)) continue;
    Fusion* w[3];
    bool linears = true;
    for (int k = 0; k < 3; ++k) {
      w[k] = state.fusion_writing(a.node.inputs.at(static_cast<size_t>(k)));
      linears = linears && w[k] != nullptr && w[k]->node.op.rfind("q8ta_linear", 0) == 0;
    }
    if (!linears) continue;
    const std::string target = a.node.op + "_qkv";
    const int64_t n = 3 * g.value(a.node.outputs.at(0)).shape.back();
    const std::string what =
        "3 linears (q, k, v) " + quoted(w[0]->node.outputs[0]) + " (" + node_list(w[0]->nodes) +
        "), " + quoted(w[1]->node.outputs[0]) + " (" + node_list(w[1]->nodes) + "), " +
        quoted(w[2]->node.outputs[0]) + " (" + node_list(w[2]->nodes) + ") into one " + kQkvLinear +
        " (N " + std::to_string(n) + ") feeding " + a.node.op + " " + quoted(a.node.outputs.at(0));
    const std::string why = check_qkv(state, w, a, target);
    if (!why.empty()) {
      state.note("not merged: " + what + ": " + why);
      continue;
    }
    std::vector<std::string> old_constants;
    for (int k = 0; k < 3; ++k) {
      old_constants.push_back(w[k]->node.inputs[2]);
      old_constants.push_back(w[k]->node.inputs[3]);
    }
    merge_qkv(state, w, a, target);
    gone.push_back(w[1]);
    gone.push_back(w[2]);
    // Removed from the matches below; their inputs no longer count as read.
    w[1]->node.inputs.clear();
    w[2]->node.inputs.clear();
    for (const std::string& v : old_constants) {
      if (!read_anywhere(state, v) &&
          std::find(w[0]->dead.begin(), w[0]->dead.end(), v) == w[0]->dead.end()) {
        w[0]->dead.push_back(v);
      }
    }
    state.note("merged " + what + ": " + target + " reads " + quoted(w[0]->node.outputs[0]) +
               "'s column blocks 0, " + std::to_string(n / 3) + ", " + std::to_string(2 * n / 3));
  }
  std::vector<Fusion> kept;
  for (Fusion& f : state.fusions) {
    if (std::find(gone.begin(), gone.end(), &f) == gone.end()) kept.push_back(std::move(f));
  }
  state.fusions = std::move(kept);
}

}  // namespace vkd::compiler::fusion
