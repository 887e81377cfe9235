#include "compiler/fusion/FuseState.h"

#include <algorithm>
#include <cstring>

#include "compiler/fusion/EdgeOpNames.h"
#include "partitioner_schema/OpSchema.h"

namespace vkd::compiler::fusion {
namespace {

std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(float));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

}  // namespace

FuseState::FuseState(Graph& g, const FuseOptions& opts, InterpretFn interpret_fn)
    : graph(g), options(opts), interpret(interpret_fn), claimed(g.nodes.size(), false) {}

void FuseState::note(std::string line) { report.lines.push_back(std::move(line)); }

bool FuseState::may_target(const std::string& backend) const {
  return !options.runnable_only || schema::is_runnable_op(backend);
}

bool FuseState::allowed(int anchor, const std::string& backend) {
  if (may_target(backend)) return true;
  note("not fused: " + graph.nodes[anchor].op + " (" + node_list({anchor}) + ") as " + backend +
       ": it has no kernel yet (left to the host)");
  return false;
}

std::optional<DqAnchor> FuseState::match_dq_anchor(int anchor, const std::string& backend) {
  const Node& n = graph.nodes[anchor];
  if (n.inputs.empty() || n.outputs.size() != 1) return std::nullopt;
  DqAnchor m;
  m.x = n.inputs[0];
  m.dq = graph.producer(m.x);
  if (!node_is(graph, m.dq, kDq)) return std::nullopt;  // not a quantized pattern
  if (!allowed(anchor, backend)) return std::nullopt;
  m.tail = match_tail(graph, n.outputs[0]);
  m.nodes = {m.dq, anchor};
  m.nodes.insert(m.nodes.end(), m.tail.nodes.begin(), m.tail.nodes.end());
  m.chain = chain_of({m.dq}, anchor, m.tail.nodes);
  return m;
}

bool FuseState::any_claimed(const std::vector<int>& nodes) const {
  return std::any_of(nodes.begin(), nodes.end(), [&](int i) { return claimed[i]; });
}

std::string FuseState::chain_of(const std::vector<int>& head, int anchor,
                                const std::vector<int>& tail) const {
  std::string s;
  for (size_t k = 0; k < head.size(); ++k) s += (k ? ", " : "") + label(graph.nodes[head[k]]);
  s += (s.empty() ? "" : " -> ") + graph.nodes[anchor].op;
  for (int t : tail) s += " -> " + label(graph.nodes[t]);
  return s;
}

void FuseState::not_fused(const std::string& chain, const std::vector<int>& nodes,
                          const std::string& backend, const std::string& why) {
  note("not fused: " + chain + " (" + node_list(nodes) + ") as " + backend + ": " + why);
}

void FuseState::commit(Fusion f, const std::string& chain, const std::string& detail) {
  for (int i : f.nodes) claimed[i] = true;
  note("fused " + chain + " (" + node_list(f.nodes) + ") into " + f.node.op + " " +
       quoted(f.node.outputs.at(0)) + detail);
  fusions.push_back(std::move(f));
}

Fusion FuseState::dq_anchor_fusion(int anchor, const DqAnchor& m, const std::vector<int>& nodes,
                                   const std::string& backend, const QuantInfo& in_q,
                                   bool int8_out) {
  Fusion f;
  f.nodes = nodes;
  f.dead = {m.x};
  Node& out = f.node;
  const std::string x_q = graph.nodes[m.dq].inputs[0];
  out.op = backend;
  out.inputs = {x_q};
  out.args["input_scale"] = in_q.scale;
  out.args["input_zero_point"] = in_q.zero_point;
  if (int8_out) {
    take_quantized_tail(f, m.tail);
  } else {
    out.outputs = {graph.nodes[anchor].outputs[0]};
  }
  out.origin = fused_origin(anchor, backend);
  consume_quant(x_q, m.dq, in_q);
  return f;
}

void FuseState::take_quantized_tail(Fusion& f, const Tail& tail) {
  f.dead.insert(f.dead.end(), tail.values.begin(), tail.values.end());
  f.node.outputs = {graph.nodes[tail.q].outputs[0]};
  f.node.args["output_scale"] = tail.out_q.scale;
  f.node.args["output_zero_point"] = tail.out_q.zero_point;
  produced[f.node.outputs[0]] = tail.out_q;
}

Fusion* FuseState::fusion_writing(const std::string& v) {
  for (auto& f : fusions) {
    if (f.node.outputs.size() == 1 && f.node.outputs[0] == v) return &f;
  }
  return nullptr;
}

void FuseState::absorb(Fusion& f, const std::vector<int>& nodes,
                       const std::vector<std::string>& dead, const std::string& output,
                       const QuantInfo& q) {
  for (int i : nodes) claimed[i] = true;
  f.nodes.insert(f.nodes.end(), nodes.begin(), nodes.end());
  f.dead.insert(f.dead.end(), dead.begin(), dead.end());
  f.dead.push_back(f.node.outputs.at(0));
  produced.erase(f.node.outputs.at(0));
  produced[output] = q;
  f.node.outputs = {output};
}

std::string FuseState::fused_origin(int anchor, const std::string& backend) const {
  const Node& n = graph.nodes[anchor];
  const std::string base =
      n.origin.empty() ? "node " + std::to_string(anchor) + " (" + n.op + ")" : n.origin;
  return base + " fused into " + backend;
}

void FuseState::retarget(Fusion& f, const std::string& op) {
  const std::string suffix = " fused into " + f.node.op;
  std::string& origin = f.node.origin;
  if (origin.size() >= suffix.size() &&
      origin.compare(origin.size() - suffix.size(), suffix.size(), suffix) == 0) {
    origin.resize(origin.size() - f.node.op.size());
    origin += op;
  }
  f.node.op = op;
}

std::string FuseState::scales_constant(const WeightFold& w) {
  const std::string key = graph.nodes[w.dq].outputs.at(0);
  auto it = scales_for.find(key);
  if (it != scales_for.end()) return it->second;
  Value v;
  v.name = graph.unique_name(w.weight + "_scales");
  v.dtype = DType::Float32;
  v.shape = {static_cast<int64_t>(w.scales.size())};
  v.data = float_bytes(w.scales);
  graph.add_value(v);
  scales_for[key] = v.name;
  return v.name;
}

std::string FuseState::zero_bias(const std::string& output, int64_t n) {
  Value v;
  v.name = graph.unique_name(output + "_bias");
  v.dtype = DType::Float32;
  v.shape = {n};
  v.data = std::vector<uint8_t>(static_cast<size_t>(n) * sizeof(float), 0);
  graph.add_value(v);
  return v.name;
}

std::string FuseState::read_as_written(const std::string& v, const QuantInfo& read_as) const {
  const std::string use = single_use(graph, v);
  if (!use.empty()) return use;
  const QuantInfo& written = produced.at(v);
  if (!same_scale_and_zero_point(written, read_as)) {
    return "the dq (" + describe_quant(read_as) + ") reads " + quoted(v) +
           " with other parameters than it was written with (" + describe_quant(written) + ")";
  }
  return "";
}

void FuseState::consume_quant(const std::string& v, int node, const QuantInfo& q) {
  consumed[v].push_back({node, q});
}

}  // namespace vkd::compiler::fusion
