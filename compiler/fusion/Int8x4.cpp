// After fusion and lowering, the int8 activations backend ops touch become DType::Int8x4 and
// carry their per-tensor quantization (Value::quant); constant int8 weights stay DType::Int8.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "compiler/fusion/PassSteps.h"
#include "partitioner_schema/OpSchema.h"

namespace vkd::compiler::fusion {
namespace {

using Uses = std::vector<std::pair<int, QuantInfo>>;

bool by_node(const std::pair<int, QuantInfo>& x, const std::pair<int, QuantInfo>& y) {
  return x.first < y.first;
}

// Non-constant int8 / int8x4 values some backend node reads or writes.
std::set<std::string> int8_activations(const Graph& g) {
  std::set<std::string> activations;
  for (const auto& n : g.nodes) {
    if (schema::find_op_schema(n.op) == nullptr) continue;
    for (const auto* list : {&n.inputs, &n.outputs}) {
      for (const auto& v : *list) {
        if (v.empty()) continue;
        const Value& val = g.value(v);
        if (!val.is_constant() && (val.dtype == DType::Int8 || val.dtype == DType::Int8x4)) {
          activations.insert(v);
        }
      }
    }
  }
  return activations;
}

// Reports the consumers of `name` that dequantize it with other parameters than `q`.
void note_mismatches(FuseState& state, const std::string& name, const QuantInfo& q, Uses uses) {
  std::sort(uses.begin(), uses.end(), by_node);
  for (const auto& u : uses) {
    if (!same_quant(u.second, q)) {
      state.note("quantization mismatch on " + quoted(name) + ": it is " + describe_quant(q) +
                 " but node " + std::to_string(u.first) + " dequantizes it with " +
                 describe_quant(u.second) + " (that node keeps its own parameters)");
    }
  }
}

// The quantization of activation `name`: its producer's (q), else its first consumer's (dq)
// in node order; disagreeing consumers are reported.
std::optional<QuantInfo> quant_of(FuseState& state, const std::string& name) {
  auto p = state.produced.find(name);
  auto c = state.consumed.find(name);
  std::optional<QuantInfo> q;
  if (p != state.produced.end()) {
    q = p->second;
  } else if (c != state.consumed.end()) {
    q = std::min_element(c->second.begin(), c->second.end(), by_node)->second;
  }
  if (c != state.consumed.end() && q) note_mismatches(state, name, *q, c->second);
  return q;
}

// A data-movement op fused or lowered on int8 data (no dequantize / quantize around it to
// read parameters from): it moves values without requantizing, its args are filled in below.
bool is_int8_data_movement(const Node& n) {
  return (n.op == "q8ta_channel_shuffle" || n.op == "q8ta_permute") &&
         n.args.count("input_scale") == 0;
}

bool is_view(const Node& n) {
  return n.op == "identity" || n.op == "q8ta_view" || is_int8_data_movement(n);
}

// Views (identity, q8ta_view, int8 data movement) carry their input's quantization, both ways.
void propagate_through_views(const Graph& g, const std::set<std::string>& activations,
                             std::map<std::string, QuantInfo>& quant) {
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& n : g.nodes) {
      if (!is_view(n) || !activations.count(n.inputs[0])) continue;
      const std::string &a = n.inputs[0], &b = n.outputs[0];
      if (quant.count(a) && !quant.count(b)) {
        quant[b] = quant[a];
        changed = true;
      } else if (quant.count(b) && !quant.count(a)) {
        quant[a] = quant[b];
        changed = true;
      }
    }
  }
}

// A lowered q8ta_view pads its output with the zero point of the value it views, and int8 data
// movement takes the parameters of the values it moves (the same on both sides): known only now.
void set_view_zero_points(Graph& g, const std::map<std::string, QuantInfo>& quant) {
  for (auto& n : g.nodes) {
    const bool view = n.op == "q8ta_view" && !n.args.count("zero_point");
    if (!view && !is_int8_data_movement(n)) continue;
    auto it = quant.find(n.inputs[0]);
    const QuantInfo q = it == quant.end() ? QuantInfo{} : it->second;
    if (view) {
      n.args["zero_point"] = q.zero_point;
      continue;
    }
    for (const char* side : {"input_", "output_"}) {
      n.args[std::string(side) + "scale"] = q.scale;
      n.args[std::string(side) + "zero_point"] = q.zero_point;
    }
  }
}

}  // namespace

void assign_int8x4(FuseState& state) {
  Graph& g = state.graph;
  const std::set<std::string> activations = int8_activations(g);
  std::map<std::string, QuantInfo> quant;
  for (const auto& name : g.value_names()) {
    if (!activations.count(name)) continue;
    if (const auto q = quant_of(state, name)) quant[name] = *q;
  }
  propagate_through_views(g, activations, quant);
  set_view_zero_points(g, quant);
  std::string unquantized;
  for (const auto& name : g.value_names()) {
    if (!activations.count(name)) continue;
    Value& v = g.value(name);
    v.dtype = DType::Int8x4;
    auto it = quant.find(name);
    if (it != quant.end()) {
      v.quant = it->second;
    } else if (!state.affine_int8.count(name)) {
      unquantized += (unquantized.empty() ? "" : ", ") + quoted(name);
    }
  }
  if (!unquantized.empty()) {
    state.note("int8 activation(s) with no quantization parameters: " + unquantized);
  }
}

}  // namespace vkd::compiler::fusion
