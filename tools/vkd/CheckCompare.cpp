#include "tools/vkd/CheckCompare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/HostPacking.h"
#include "core/TensorSpec.h"

namespace vkd::cli {
namespace {

using compiler::HostTensor;

// Element `i` of a float32, int8 or int32 tensor.
double element(const HostTensor& t, size_t i) {
  switch (t.dtype) {
    case DType::Int8: return static_cast<int8_t>(t.bytes[i]);
    case DType::Int32: {
      int32_t v;
      std::memcpy(&v, t.bytes.data() + 4 * i, 4);
      return v;
    }
    default: {
      float v;
      std::memcpy(&v, t.bytes.data() + 4 * i, 4);
      return v;
    }
  }
}

// A float16 reference tensor as float32 (exact): the delegate hands float16 tensors out as
// float32, so that is what the device side of a comparison holds.
HostTensor widened(const HostTensor& t) {
  if (t.dtype != DType::Float16) return t;
  std::vector<float> values(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, t.bytes.data() + 2 * i, 2);
    values[i] = from_float16(h);
  }
  return HostTensor::from_floats(t.shape, values);
}

// Why two tensors cannot be compared element by element ("" when they can).
std::string incomparable(const HostTensor& device, const HostTensor& ref) {
  if (device.dtype != ref.dtype) {
    return "dtype differs: device " + std::string(to_string(device.dtype)) + ", reference " +
           std::string(to_string(ref.dtype));
  }
  if (device.shape != ref.shape) {
    return "shape differs: device " + sizes_string(device.shape) + ", reference " +
           sizes_string(ref.shape);
  }
  // (what every element read below relies on)
  for (const HostTensor* t : {&device, &ref}) {
    const size_t element_bytes = t->dtype == DType::Int8 ? 1 : t->dtype == DType::Float16 ? 2 : 4;
    const size_t need = static_cast<size_t>(t->numel()) * element_bytes;
    if (t->bytes.size() != need) {
      return std::string(t == &device ? "device" : "reference") + " tensor holds " +
             std::to_string(t->bytes.size()) + " bytes, its shape " + sizes_string(t->shape) +
             " needs " + std::to_string(need);
    }
  }
  return "";
}

bool same_value(double g, double r, bool is_float) {
  if (g == r) return true;  // (first: equal infinities have a NaN difference)
  if (!is_float) return false;
  return (std::isnan(g) && std::isnan(r)) || std::fabs(g - r) <= kAbsTol + kRelTol * std::fabs(r);
}

// Whether device value `g` of element `i` (reference `r`) is what one of `alternatives` gives,
// or, for integers, lies between `r` and an alternative that differs from it (several ties
// reaching one element may each have gone either way).
bool follows_a_tie(double g, double r, size_t i, const std::vector<HostTensor>& alternatives,
                   bool is_float) {
  for (const HostTensor& alt : alternatives) {
    const double a = element(alt, i);
    if (same_value(g, a, is_float)) return true;
    if (!is_float && a != r && g >= std::min(a, r) && g <= std::max(a, r)) return true;
  }
  return false;
}

}  // namespace

bool is_rounding_tie(double v) {
  return std::isfinite(v) && std::fabs(v - std::floor(v) - 0.5) <= kTieTolerance;
}

Comparison compare_tensors(const HostTensor& device, const HostTensor& ref_in,
                           const std::vector<double>& pre_rounding,
                           const std::vector<HostTensor>& alternatives_in) {
  const HostTensor ref = widened(ref_in);
  Comparison c;
  c.problem = incomparable(device, ref);
  if (!c.problem.empty()) {
    c.comparable = false;
    return c;
  }
  std::vector<HostTensor> alternatives;
  for (const HostTensor& a : alternatives_in) {
    if (incomparable(widened(a), ref).empty()) alternatives.push_back(widened(a));
  }
  c.total = static_cast<size_t>(ref.numel());
  const bool is_float = ref.dtype == DType::Float32;
  const bool ties_known = ref.dtype == DType::Int8 && pre_rounding.size() == c.total;
  for (size_t i = 0; i < c.total; ++i) {
    const double g = element(device, i), r = element(ref, i);
    const double d = std::fabs(g - r);
    if (!std::isnan(d)) c.max_abs = std::max(c.max_abs, d);
    if (same_value(g, r, is_float)) continue;
    if (ties_known && d == 1 && is_rounding_tie(pre_rounding[i])) {
      ++c.ties;
    } else if (follows_a_tie(g, r, i, alternatives, is_float)) {
      ++c.fused_ties;
    } else if (c.mismatches++ == 0) {
      c.first_index = i;
      c.first_device = g;
      c.first_ref = r;
    }
  }
  return c;
}

std::vector<double> pre_rounding_values(const compiler::Node& node,
                                        const std::map<std::string, HostTensor>& values) {
  if (node.op != "quantized_decomposed.quantize_per_tensor" || node.inputs.empty()) return {};
  const auto it = values.find(node.inputs[0]);
  if (it == values.end() || it->second.dtype != DType::Float32) return {};
  // As compiler/ops/QuantizeDequantize.cpp: inv = float(1.0 / double(float(scale))), x * inv in
  // float32.
  const float scale = static_cast<float>(compiler::arg_float(node, "scale"));
  const float inv = static_cast<float>(1.0 / static_cast<double>(scale));
  const std::vector<float> x = it->second.to_floats();
  std::vector<double> pre(x.size());
  for (size_t i = 0; i < x.size(); ++i) pre[i] = static_cast<double>(x[i] * inv);
  return pre;
}

namespace {

bool is_view_op(const std::string& op) {
  return op == "aten.view_copy" || op == "aten.clone" || op == "aten.alias_copy" ||
         op == "aten._clone_dim_order";
}

bool same_qparams(const compiler::Node& a, const compiler::Node& b) {
  return compiler::arg_float(a, "scale") == compiler::arg_float(b, "scale") &&
         compiler::arg_int(a, "zero_point") == compiler::arg_int(b, "zero_point");
}

// The quantize whose int8 output reaches quantize `q` unchanged (q's input is dequantize with
// q's parameters, through views), or -1.
int requantized_source(const compiler::Graph& g, const compiler::Node& q) {
  if (q.op != "quantized_decomposed.quantize_per_tensor") return -1;
  int p = q.inputs.empty() ? -1 : g.producer(q.inputs[0]);
  while (p >= 0 && is_view_op(g.nodes[p].op)) p = g.producer(g.nodes[p].inputs[0]);
  if (p < 0 || g.nodes[p].op != "quantized_decomposed.dequantize_per_tensor" ||
      !same_qparams(g.nodes[p], q)) {
    return -1;
  }
  int source = g.producer(g.nodes[p].inputs[0]);
  while (source >= 0 && is_view_op(g.nodes[source].op)) {
    source = g.producer(g.nodes[source].inputs[0]);
  }
  if (source < 0 || g.nodes[source].op != "quantized_decomposed.quantize_per_tensor" ||
      !same_qparams(g.nodes[source], q)) {
    return -1;
  }
  return source;
}

}  // namespace

std::vector<double> rounding_of(const compiler::Graph& g, const std::string& name,
                                const std::map<std::string, HostTensor>& values) {
  int node = g.producer(name);
  for (int source; node >= 0 && (source = requantized_source(g, g.nodes[node])) >= 0;) {
    node = source;
  }
  return node < 0 ? std::vector<double>{} : pre_rounding_values(g.nodes[node], values);
}

Region region_of(const compiler::Graph& g, const std::string& target,
                 const std::set<std::string>& sources) {
  Region r;
  std::set<int> nodes;
  std::set<std::string> inputs;
  std::vector<int> pending{g.producer(target)};
  while (!pending.empty()) {
    const int n = pending.back();
    pending.pop_back();
    if (n < 0 || !nodes.insert(n).second) continue;
    for (const std::string& in : g.nodes[n].inputs) {
      if (in.empty() || g.value(in).is_constant()) continue;
      const int producer = g.producer(in);
      if (sources.count(in) || g.is_graph_input(in) || producer < 0) {
        inputs.insert(in);
      } else {
        pending.push_back(producer);
      }
    }
  }
  r.nodes.assign(nodes.begin(), nodes.end());
  for (const std::string& name : g.value_names()) {
    if (inputs.count(name)) r.inputs.push_back(name);
  }
  return r;
}

compiler::Graph region_graph(const compiler::Graph& g, const Region& region,
                             const std::string& target) {
  compiler::Graph sub;
  const auto declare = [&](const std::string& name) {
    if (!name.empty() && !sub.has_value(name)) sub.add_value(g.value(name));
  };
  for (const std::string& name : region.inputs) declare(name);
  sub.inputs = region.inputs;
  for (const int n : region.nodes) {
    for (const std::string& name : g.nodes[n].inputs) declare(name);  // constants
    for (const std::string& name : g.nodes[n].outputs) declare(name);
    sub.nodes.push_back(g.nodes[n]);
  }
  sub.outputs = {target};
  return sub;
}

std::optional<HostTensor> rounded_the_other_way(const compiler::Node& node,
                                                const std::map<std::string, HostTensor>& values,
                                                size_t group, size_t groups) {
  const std::vector<double> pre = pre_rounding_values(node, values);
  const auto out = values.find(node.outputs.at(0));
  if (pre.empty() || out == values.end() || out->second.dtype != DType::Int8) return std::nullopt;
  const int64_t zp = compiler::arg_int(node, "zero_point");
  const int64_t qmin = compiler::arg_int(node, "quant_min");
  const int64_t qmax = compiler::arg_int(node, "quant_max");
  const auto clamped = [&](double v) {
    return static_cast<int8_t>(std::clamp(static_cast<int64_t>(v) + zp, qmin, qmax));
  };
  std::vector<int8_t> q = out->second.to_int8();
  bool changed = false;
  size_t tie = 0;  // the ties seen so far
  for (size_t i = 0; i < q.size() && i < pre.size(); ++i) {
    if (!is_rounding_tie(pre[i])) continue;
    if (tie++ % groups != group) continue;
    // The two neighbours of the halfway point; the reference took one of them.
    const int8_t below = clamped(std::floor(pre[i])), above = clamped(std::floor(pre[i]) + 1);
    const int8_t other = q[i] == below ? above : below;
    changed |= other != q[i];
    q[i] = other;
  }
  if (!changed) return std::nullopt;
  return HostTensor::from_int8(out->second.shape, q);
}

size_t rounding_ties(const compiler::Node& node, const std::map<std::string, HostTensor>& values) {
  const std::vector<double> pre = pre_rounding_values(node, values);
  return static_cast<size_t>(std::count_if(pre.begin(), pre.end(), is_rounding_tie));
}

std::vector<HostTensor> tie_alternatives(const compiler::Graph& sub, const std::string& target,
                                         const std::map<std::string, HostTensor>& values,
                                         size_t max_groups, int depth) {
  std::vector<HostTensor> out;
  for (const compiler::Node& n : sub.nodes) {
    if (n.outputs.size() != 1 || n.outputs[0] == target) continue;
    const size_t ties = rounding_ties(n, values);
    if (ties == 0) continue;
    const Region rest = region_of(sub, target, {n.outputs[0]});
    const compiler::Graph rest_graph = region_graph(sub, rest, target);
    // Every tie flipped (groups 1), then the ties in max_groups interleaved groups (each alone
    // where there are at most that many).
    const size_t split = std::min(ties, std::max<size_t>(max_groups, 1));
    for (const size_t groups : {size_t(1), split}) {
      for (size_t group = 0; group < groups; ++group) {
        const std::optional<HostTensor> other = rounded_the_other_way(n, values, group, groups);
        if (!other) continue;
        // The rest of the region, fed that value.
        std::map<std::string, HostTensor> inputs;
        for (const std::string& in : rest.inputs) {
          inputs[in] = in == n.outputs[0] ? *other : values.at(in);
        }
        const std::map<std::string, HostTensor> rest_values =
            compiler::interpret(rest_graph, inputs);
        out.push_back(rest_values.at(target));
        // A later hidden value may have a tie only where this one was rounded the other way.
        if (depth > 1) {
          for (HostTensor& t :
               tie_alternatives(rest_graph, target, rest_values, max_groups, depth - 1)) {
            out.push_back(std::move(t));
          }
        }
      }
      if (split == 1) break;  // one tie: the group is the whole flip
    }
  }
  return out;
}

}  // namespace vkd::cli
