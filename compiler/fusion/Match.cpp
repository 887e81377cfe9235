#include "compiler/fusion/Match.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/reference/QuantChain.h"

namespace vkd::compiler::fusion {

// ---- formatting -----------------------------------------------------------------------------

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string quoted(const std::string& name) { return "'" + name + "'"; }

std::string node_list(std::vector<int> idx) {
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  if (idx.empty()) return "no node";
  std::vector<std::string> ranges;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && idx[j + 1] == idx[j] + 1) ++j;
    ranges.push_back(i == j ? std::to_string(idx[i])
                            : std::to_string(idx[i]) + ".." + std::to_string(idx[j]));
    i = j + 1;
  }
  std::string out = ranges.size() == 1 ? "node " : "nodes ";
  for (size_t i = 0; i < ranges.size(); ++i) out += (i ? ", " : "") + ranges[i];
  return out;
}

std::string label(const Node& n) {
  if (n.op == kQ) return "q";
  if (n.op == kDq) return "dq";
  return n.op;
}

std::string describe_quant(const QuantInfo& q) {
  return "scale " + fmt(q.scale) + " zero_point " + std::to_string(q.zero_point) + " range " +
         std::to_string(q.quant_min) + ".." + std::to_string(q.quant_max);
}

bool same_quant(const QuantInfo& a, const QuantInfo& b) {
  return a.scale == b.scale && a.zero_point == b.zero_point && a.quant_min == b.quant_min &&
         a.quant_max == b.quant_max;
}

bool same_scale_and_zero_point(const QuantInfo& a, const QuantInfo& b) {
  return a.scale == b.scale && a.zero_point == b.zero_point;
}

bool node_is(const Graph& g, int node, const char* op) {
  return node >= 0 && g.nodes[node].op == op;
}

bool same_packed_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  auto strip = [](const std::vector<int64_t>& s) {
    size_t k = 0;
    while (k < s.size() && s[k] == 1) ++k;
    return std::vector<int64_t>(s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
  };
  return strip(a) == strip(b);
}

// ---- argument readers -----------------------------------------------------------------------

std::optional<double> opt_float(const Node& n, const std::string& name) {
  auto it = n.args.find(name);
  if (it == n.args.end()) return std::nullopt;
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<int64_t> opt_int(const Node& n, const std::string& name) {
  auto it = n.args.find(name);
  if (it == n.args.end()) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return *i;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> opt_ints(const Node& n, const std::string& name) {
  auto it = n.args.find(name);
  if (it == n.args.end()) return std::nullopt;
  if (const auto* l = std::get_if<std::vector<int64_t>>(&it->second)) return *l;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return std::vector<int64_t>{*i};
  return std::nullopt;
}

std::optional<std::string> opt_string(const Node& n, const std::string& name) {
  auto it = n.args.find(name);
  if (it == n.args.end()) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  return std::nullopt;
}

// ---- q / dq checks --------------------------------------------------------------------------

std::string read_qparams(const Node& n, QuantInfo& q) {
  const auto scale = opt_float(n, "scale");
  const auto zp = opt_int(n, "zero_point");
  const auto lo = opt_int(n, "quant_min");
  const auto hi = opt_int(n, "quant_max");
  if (!scale || !zp || !lo || !hi) {
    return "missing or non-numeric scale/zero_point/quant_min/quant_max";
  }
  const auto dtype = opt_string(n, "dtype");
  if (dtype && *dtype != "int8") return "dtype is " + *dtype + ", not int8";
  if (!std::isfinite(*scale) || *scale <= 0) return "scale " + fmt(*scale) + " is not positive";
  if (*lo < -128 || *hi > 127 || *lo > *hi) {
    return "quant range " + std::to_string(*lo) + ".." + std::to_string(*hi) +
           " is not an int8 range";
  }
  if (*zp < *lo || *zp > *hi) {
    return "zero point " + std::to_string(*zp) + " is outside " + std::to_string(*lo) + ".." +
           std::to_string(*hi);
  }
  q = QuantInfo{*scale, *zp, *lo, *hi};
  return "";
}

std::string constant_operand(const Graph& g, int p) {
  const Node& dq = g.nodes[p];
  if (dq.inputs.empty() || dq.inputs[0].empty()) return "";
  const Value& c = g.value(dq.inputs[0]);
  QuantInfo q;
  const bool int8 = c.is_constant() && c.dtype == DType::Int8 && read_qparams(dq, q).empty();
  return int8 ? c.name : "";
}

std::string check_operand_dq(const Graph& g, int p, bool constant, QuantInfo& q) {
  if (!constant) return check_activation_dq(g, g.nodes[p], p, q);
  const std::string why = read_qparams(g.nodes[p], q);
  return why.empty() ? "" : "dq (node " + std::to_string(p) + "): " + why;
}

std::string check_activation_dq(const Graph& g, const Node& n, int at, QuantInfo& q) {
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return "malformed dq";
  const Value& in = g.value(n.inputs[0]);
  if (in.is_constant()) return "dq input " + quoted(in.name) + " is a constant, not an activation";
  if (in.dtype != DType::Int8 && in.dtype != DType::Int8x4) {
    return "dq input " + quoted(in.name) + " is " + std::string(to_string(in.dtype)) + ", not int8";
  }
  const auto out_dtype = opt_string(n, "out_dtype");
  if (out_dtype && *out_dtype != "float32") return "dq out_dtype is " + *out_dtype;
  if (g.value(n.outputs[0]).dtype != DType::Float32) return "dq output is not float32";
  const std::string why = read_qparams(n, q);
  return why.empty() ? "" : "dq (node " + std::to_string(at) + "): " + why;
}

std::string check_q(const Graph& g, const Node& n, int at, QuantInfo& q) {
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return "malformed q";
  if (g.value(n.inputs[0]).dtype != DType::Float32) return "q input is not float32";
  if (g.value(n.outputs[0]).dtype != DType::Int8) return "q output is not int8";
  const std::string why = read_qparams(n, q);
  return why.empty() ? "" : "q (node " + std::to_string(at) + "): " + why;
}

std::string check_round_trip(const QuantInfo& in, const QuantInfo& out) {
  if (in.scale != out.scale || in.zero_point != out.zero_point) {
    return "input (" + describe_quant(in) + ") and output (" + describe_quant(out) +
           ") quantization differ";
  }
  for (int64_t v = -128; v <= 127; ++v) {
    if (reference_dq_clamp_q(v, in, {}, out) != v) {
      return "quantizing with range " + std::to_string(out.quant_min) + ".." +
             std::to_string(out.quant_max) + " does not give back int8 value " + std::to_string(v);
    }
  }
  return "";
}

std::string check_moved_requantization(const QuantInfo& in, const QuantInfo& out) {
  if (out.quant_min != -128 || out.quant_max != 127) {
    return "the quantize's range " + std::to_string(out.quant_min) + ".." +
           std::to_string(out.quant_max) + " is not the full int8 range a requantizing kernel " +
           "writes";
  }
  for (int64_t v = -128; v <= 127; ++v) {
    const int64_t want = reference_dq_clamp_q(v, in, {}, out);
    const int64_t got = requantize_clamp(v, in, out, -128, 127);
    if (got != want) {
      return "requantizing int8 value " + std::to_string(v) + " gives " + std::to_string(got) +
             ", dq -> q gives " + std::to_string(want);
    }
  }
  return "";
}

std::string check_clamp_requantization(const QuantInfo& in, const QuantInfo& out) {
  for (int64_t v = -128; v <= 127; ++v) {
    const int64_t want = reference_dq_clamp_q(v, in, {}, out);
    const int64_t got = requantize_clamp(v, in, out, out.quant_min, out.quant_max);
    if (got != want) {
      return "requantizing int8 value " + std::to_string(v) + " gives " + std::to_string(got) +
             ", dq -> q gives " + std::to_string(want);
    }
  }
  return "";
}

std::string check_bytes_or_requantization(const QuantInfo& in, const QuantInfo& out) {
  if (check_round_trip(in, out).empty()) return "";
  const std::string why = check_moved_requantization(in, out);
  if (why.empty()) return "";
  return "input (" + describe_quant(in) + ") and output (" + describe_quant(out) +
         ") quantization differ and " + why;
}

std::string single_use(const Graph& g, const std::string& v) {
  if (g.is_graph_output(v)) return quoted(v) + " is a graph output";
  const auto c = g.consumers(v);
  if (c.size() != 1) {
    return quoted(v) + " has " + std::to_string(c.size()) + " consumers (" + node_list(c) + ")";
  }
  return "";
}

std::string describe_consumers(const Graph& g, const std::string& v) {
  const auto c = g.consumers(v);
  if (c.empty()) {
    return g.is_graph_output(v) ? quoted(v) + " is a graph output, not quantized"
                                : quoted(v) + " has no consumers";
  }
  std::string ops;
  for (size_t k = 0; k < c.size(); ++k) {
    ops += (k ? ", " : "") + g.nodes[c[k]].op + " (node " + std::to_string(c[k]) + ")";
  }
  return quoted(v) + " feeds " + ops + ", not quantize_per_tensor";
}

// ---- activations ----------------------------------------------------------------------------

int64_t quantize_bound(double v, const QuantInfo& q) {
  if (std::isinf(v)) return v < 0 ? q.quant_min : q.quant_max;
  const float inv = 1.0f / static_cast<float>(q.scale);
  double t = static_cast<double>(std::nearbyint(static_cast<float>(v) * inv)) +
             static_cast<double>(q.zero_point);
  t = std::min(std::max(t, static_cast<double>(q.quant_min)), static_cast<double>(q.quant_max));
  return static_cast<int64_t>(t);
}

std::string activation_bounds(const Node& n, double& lo, double& hi) {
  lo = -std::numeric_limits<double>::infinity();
  hi = std::numeric_limits<double>::infinity();
  const bool hardtanh = n.op == kHardtanh;
  const std::string lo_name = hardtanh ? "min_val" : "min";
  const std::string hi_name = hardtanh ? "max_val" : "max";
  if (hardtanh) {  // aten.hardtanh's defaults; clamp has none
    lo = -1.0;
    hi = 1.0;
  }
  if (arg_present(n, lo_name)) {
    const auto v = opt_float(n, lo_name);
    if (!v) return n.op + " " + lo_name + " is not a number";
    lo = *v;
  }
  if (arg_present(n, hi_name)) {
    const auto v = opt_float(n, hi_name);
    if (!v) return n.op + " " + hi_name + " is not a number";
    hi = *v;
  }
  if (std::isnan(lo) || std::isnan(hi)) return n.op + " bound is NaN";
  return "";
}

namespace {

std::string bound_label(double v) { return std::isinf(v) ? "none" : fmt(v); }

}  // namespace

std::string activation_clamps(const Graph& g, const std::vector<int>& acts,
                              std::vector<FloatClamp>& out) {
  for (int a : acts) {
    const Node& n = g.nodes[a];
    if (n.op == kRelu) {
      out.push_back({0.0f, std::nullopt});
      continue;
    }
    double lo = 0, hi = 0;
    const std::string why = activation_bounds(n, lo, hi);
    if (!why.empty()) return why;
    FloatClamp c;
    if (!std::isinf(lo)) c.lo = static_cast<float>(lo);
    if (!std::isinf(hi)) c.hi = static_cast<float>(hi);
    out.push_back(c);
  }
  return "";
}

std::string activation_range(const Graph& g, int act, const QuantInfo& out, Activation& a) {
  a.min = out.quant_min;
  a.max = out.quant_max;
  a.label = "none";
  if (act < 0) return "";
  const Node& n = g.nodes[act];
  if (n.op == kRelu) {
    a.min = std::max(out.zero_point, out.quant_min);
    a.label = "relu";
    return "";
  }
  double lo = 0, hi = 0;
  const std::string why = activation_bounds(n, lo, hi);
  if (!why.empty()) return why;
  a.min = quantize_bound(lo, out);
  a.max = quantize_bound(hi, out);
  a.label = std::string(n.op == kHardtanh ? "hardtanh" : "clamp") + "(" + bound_label(lo) + ", " +
            bound_label(hi) + ")";
  return "";
}

// ---- the quantized tail ---------------------------------------------------------------------

namespace {

// The first consumer of `v` that is `op`, or -1.
int first_consumer_of(const Graph& g, const std::string& v, const char* op) {
  for (int i : g.consumers(v)) {
    if (g.nodes[i].op == op) return i;
  }
  return -1;
}

// Checks a tail whose nodes were found: single use of the intermediates, then the q, then the
// activation's bounds in the q's int8 range.
void check_tail(const Graph& g, Tail& t) {
  for (const auto& v : t.values) {
    t.why = single_use(g, v);
    if (!t.why.empty()) return;
  }
  t.why = check_q(g, g.nodes[t.q], t.q, t.out_q);
  if (!t.why.empty()) return;
  t.why = activation_range(g, t.act, t.out_q, t.activation);
  if (t.why.empty()) t.kind = Tail::Ok;
}

}  // namespace

Tail match_tail(const Graph& g, const std::string& y) {
  Tail t;
  int c = -1;
  for (int i : g.consumers(y)) {
    if (g.nodes[i].op == kQ || is_activation(g.nodes[i].op)) {
      c = i;
      break;
    }
  }
  if (c < 0) return t;  // nothing quantized follows: not this pattern
  t.kind = Tail::Half;
  t.values.push_back(y);
  t.nodes.push_back(c);
  if (is_activation(g.nodes[c].op)) {
    t.act = c;
    const std::string r = g.nodes[c].outputs.at(0);
    t.values.push_back(r);
    t.q = first_consumer_of(g, r, kQ);
    if (t.q < 0) {
      t.why = describe_consumers(g, r);
      return t;
    }
    t.nodes.push_back(t.q);
  } else {
    t.q = c;
  }
  check_tail(g, t);
  return t;
}

std::string check_quantized_anchor(const Graph& g, const Node& n, int p, const Tail& tail,
                                   const std::string& backend, QuantInfo& in_q) {
  std::string why = check_activation_dq(g, g.nodes[p], p, in_q);
  if (why.empty()) why = single_use(g, n.inputs[0]);
  if (!why.empty()) return why;
  if (tail.kind == Tail::None) {
    return describe_consumers(g, n.outputs[0]) + " (" + backend + " has no float-output variant)";
  }
  if (tail.kind == Tail::Half) return tail.why;
  if (tail.act >= 0) return "an activation follows (" + backend + " fuses none)";
  return "";
}

// ---- weights --------------------------------------------------------------------------------

namespace {

const char* const kAsymmetricUnsupported = " (asymmetric weights are not supported)";

int64_t read_signed(const std::vector<uint8_t>& data, size_t index, size_t width) {
  uint64_t u = 0;
  for (size_t b = 0; b < width; ++b) u |= static_cast<uint64_t>(data[index * width + b]) << (8 * b);
  if (width < 8 && (u >> (8 * width - 1)) & 1) u |= ~uint64_t{0} << (8 * width);
  return static_cast<int64_t>(u);
}

// dequantize_per_tensor of weight `wq` (node `p`): one scale for all `n` output channels.
std::string fold_per_tensor(const Node& d, int p, const Value& wq, int64_t n, WeightFold& out) {
  QuantInfo q;
  const std::string why = read_qparams(d, q);
  if (!why.empty()) return "weight dequantize (node " + std::to_string(p) + "): " + why;
  if (q.zero_point != 0) {
    return "weight " + quoted(wq.name) + " has zero point " + std::to_string(q.zero_point) +
           kAsymmetricUnsupported;
  }
  out.scales.assign(static_cast<size_t>(n), static_cast<float>(q.scale));
  return "";
}

// The per-channel scales of dequantize_per_channel `d`: a float32 constant of `n` positives.
std::string read_channel_scales(const Graph& g, const Node& d, int64_t n, WeightFold& out) {
  if (d.inputs.size() < 2 || d.inputs[1].empty()) return "weight dequantize has no scales";
  const Value& s = g.value(d.inputs[1]);
  if (!s.is_constant() || s.dtype != DType::Float32 || element_count(s.shape) != n ||
      s.data->size() != static_cast<size_t>(n) * 4) {
    return "weight scales " + quoted(s.name) + " are not a float32 constant of " +
           std::to_string(n) + " elements";
  }
  out.scales.resize(static_cast<size_t>(n));
  std::memcpy(out.scales.data(), s.data->data(), s.data->size());
  for (float v : out.scales) {
    if (!std::isfinite(v) || v <= 0) {
      return "weight scales " + quoted(s.name) + " hold a non-positive value " + fmt(v);
    }
  }
  return "";
}

// "" when dequantize_per_channel `d` has no zero points or `n` integer zeros (any width).
std::string check_channel_zero_points(const Graph& g, const Node& d, const Value& wq, int64_t n) {
  if (d.inputs.size() < 3 || d.inputs[2].empty()) return "";
  const Value& zp = g.value(d.inputs[2]);
  const size_t bytes = zp.is_constant() ? zp.data->size() : 0;
  const size_t width = n > 0 ? bytes / static_cast<size_t>(n) : 0;
  if (!zp.is_constant() || element_count(zp.shape) != n ||
      !(width == 1 || width == 2 || width == 4 || width == 8) ||
      width * static_cast<size_t>(n) != bytes) {
    return "weight zero points " + quoted(zp.name) + " are not an integer constant of " +
           std::to_string(n) + " elements";
  }
  for (size_t c = 0; c < static_cast<size_t>(n); ++c) {
    const int64_t z = read_signed(*zp.data, c, width);
    if (z != 0) {
      return "weight " + quoted(wq.name) + " has nonzero zero points (channel " +
             std::to_string(c) + ": " + std::to_string(z) + ")" + kAsymmetricUnsupported;
    }
  }
  return "";
}

// dequantize_per_channel of weight `wq` along `channel_axis` (its `n` output channels).
std::string fold_per_channel(const Graph& g, const Node& d, const Value& wq, int64_t n,
                             int64_t channel_axis, WeightFold& out) {
  const auto axis = opt_int(d, "axis");
  if (!axis) return "weight dequantize_per_channel has no integer axis";
  const int64_t a = *axis < 0 ? *axis + static_cast<int64_t>(wq.shape.size()) : *axis;
  if (a != channel_axis) {
    return "weight " + quoted(wq.name) + " is quantized along axis " + std::to_string(a) +
           ", not " + std::to_string(channel_axis) + " (output channels)";
  }
  const std::string why = read_channel_scales(g, d, n, out);
  if (!why.empty()) return why;
  return check_channel_zero_points(g, d, wq, n);
}

}  // namespace

std::string fold_weight(const Graph& g, const std::string& w, WeightFold& out,
                        int64_t channel_axis) {
  const std::string not_dq = "weight " + quoted(w) + " is not a dequantized int8 constant";
  if (w.empty()) return "no weight";
  const int p = g.producer(w);
  if (p < 0) return not_dq;
  const Node& d = g.nodes[p];
  if (d.op != kDq && d.op != kDqChannel) return not_dq + " (produced by " + d.op + ")";
  if (d.inputs.empty() || d.inputs[0].empty()) return not_dq;
  const Value& wq = g.value(d.inputs[0]);
  if (!wq.is_constant() || wq.dtype != DType::Int8) {
    return not_dq + " (" + quoted(wq.name) + " is not an int8 constant)";
  }
  if (wq.shape.empty()) return "weight " + quoted(wq.name) + " is a scalar";
  if (static_cast<int64_t>(wq.shape.size()) <= channel_axis) {
    return "weight " + quoted(wq.name) + " has no axis " + std::to_string(channel_axis);
  }
  const auto dtype = opt_string(d, "dtype");
  if (dtype && *dtype != "int8") return "weight dequantize dtype is " + *dtype;
  const int64_t n = wq.shape[static_cast<size_t>(channel_axis)];
  out.dq = p;
  out.weight = wq.name;
  out.scales.clear();
  return d.op == kDq ? fold_per_tensor(d, p, wq, n, out)
                     : fold_per_channel(g, d, wq, n, channel_axis, out);
}

}  // namespace vkd::compiler::fusion
