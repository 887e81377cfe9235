#include "compiler/Fuse.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "compiler/LowerAffine.h"
#include "partitioner_schema/OpSchema.h"
#include "runtime/core/Error.h"

namespace vkd::compiler {
namespace {

const char* const kQ = "quantized_decomposed.quantize_per_tensor";
const char* const kDq = "quantized_decomposed.dequantize_per_tensor";
const char* const kDqChannel = "quantized_decomposed.dequantize_per_channel";
const char* const kLinear = "aten.linear";
const char* const kConv = "aten.convolution";
const char* const kAdd = "aten.add.Tensor";
const char* const kRelu = "aten.relu";
const char* const kHardtanh = "aten.hardtanh";
const char* const kClamp = "aten.clamp";
const char* const kPixelShuffle = "aten.pixel_shuffle";
const char* const kMaxPool = "aten.max_pool2d";
const char* const kMean = "aten.mean.dim";
const char* const kAdaptiveAvgPool = "aten.adaptive_avg_pool2d";
const char* const kViewCopy = "aten.view_copy";

bool is_clone(const std::string& op) {
  return op == "aten.clone" || op == "aten._clone_dim_order" || op == "aten.alias_copy";
}
bool is_activation(const std::string& op) {
  return op == kRelu || op == kHardtanh || op == kClamp;
}

// ---- formatting -----------------------------------------------------------------------------

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string quoted(const std::string& name) { return "'" + name + "'"; }

// "node 3", "node 3..6", "nodes 1, 3..5".
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

// ---- argument readers that do not throw ----------------------------------------------------

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

// A string arg, or nullopt when absent or None.
std::optional<std::string> opt_string(const Node& n, const std::string& name) {
  auto it = n.args.find(name);
  if (it == n.args.end()) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  return std::nullopt;
}

bool same_quant(const QuantInfo& a, const QuantInfo& b) {
  return a.scale == b.scale && a.zero_point == b.zero_point && a.quant_min == b.quant_min &&
         a.quant_max == b.quant_max;
}

std::string describe_quant(const QuantInfo& q) {
  return "scale " + fmt(q.scale) + " zero_point " + std::to_string(q.zero_point) + " range " +
         std::to_string(q.quant_min) + ".." + std::to_string(q.quant_max);
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// ---- q / dq checks --------------------------------------------------------------------------

// "" when `n` carries per-tensor int8 qparams (fills `q`); else why not.
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

// "" when node `i` (a dequantize_per_tensor) turns an int8 activation into float32.
std::string check_activation_dq(const Graph& g, int i, QuantInfo& q) {
  const Node& n = g.nodes[i];
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return "malformed dq";
  const Value& in = g.value(n.inputs[0]);
  if (in.is_constant()) return "dq input " + quoted(in.name) + " is a constant, not an activation";
  if (in.dtype != DType::Int8 && in.dtype != DType::Int8x4) {
    return "dq input " + quoted(in.name) + " is " + std::string(to_string(in.dtype)) +
           ", not int8";
  }
  const auto out_dtype = opt_string(n, "out_dtype");
  if (out_dtype && *out_dtype != "float32") return "dq out_dtype is " + *out_dtype;
  if (g.value(n.outputs[0]).dtype != DType::Float32) return "dq output is not float32";
  const std::string why = read_qparams(n, q);
  return why.empty() ? "" : "dq (node " + std::to_string(i) + "): " + why;
}

// "" when node `i` (a quantize_per_tensor) turns float32 into int8.
std::string check_q(const Graph& g, int i, QuantInfo& q) {
  const Node& n = g.nodes[i];
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return "malformed q";
  if (g.value(n.inputs[0]).dtype != DType::Float32) return "q input is not float32";
  if (g.value(n.outputs[0]).dtype != DType::Int8) return "q output is not int8";
  const std::string why = read_qparams(n, q);
  return why.empty() ? "" : "q (node " + std::to_string(i) + "): " + why;
}

// "" when `v` has exactly one consumer and is not a graph output.
std::string single_use(const Graph& g, const std::string& v) {
  if (g.is_graph_output(v)) return quoted(v) + " is a graph output";
  const auto c = g.consumers(v);
  if (c.size() != 1) {
    return quoted(v) + " has " + std::to_string(c.size()) + " consumers (" + node_list(c) + ")";
  }
  return "";
}

// ---- activations ----------------------------------------------------------------------------

// The int8 code float `v` quantizes to, as q8ta_quantize computes it: float32 math,
// inv_scale = 1/scale rounded to float32, round half to even, clamped to the range.
int64_t quantize_bound(double v, const QuantInfo& q) {
  if (std::isinf(v)) return v < 0 ? q.quant_min : q.quant_max;
  const float inv = 1.0f / static_cast<float>(q.scale);
  double t = static_cast<double>(std::nearbyint(static_cast<float>(v) * inv)) +
             static_cast<double>(q.zero_point);
  t = std::min(std::max(t, static_cast<double>(q.quant_min)), static_cast<double>(q.quant_max));
  return static_cast<int64_t>(t);
}

struct Activation {
  std::string label = "none";  // "relu", "hardtanh(0, 6)", "clamp(0, none)"
  int64_t min = -128, max = 127;
};

// Float bounds of hardtanh / clamp (±inf when absent); "" or why they cannot be read.
std::string activation_bounds(const Node& n, double& lo, double& hi) {
  lo = -std::numeric_limits<double>::infinity();
  hi = std::numeric_limits<double>::infinity();
  const bool hardtanh = n.op == kHardtanh;
  const std::string lo_name = hardtanh ? "min_val" : "min";
  const std::string hi_name = hardtanh ? "max_val" : "max";
  if (hardtanh) {
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

std::string bound_label(double v) { return std::isinf(v) ? "none" : fmt(v); }

// The int8 clamp range of `act` (or none) followed by quantization with `out`.
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

// ---- the quantized tail: [act] -> q ---------------------------------------------------------

struct Tail {
  enum Kind { None, Half, Ok } kind = None;
  std::string why;                    // Half: why the tail was not taken
  std::vector<int> nodes;             // act and q, as far as they matched
  std::vector<std::string> values;    // intermediates: the anchor output, the act output
  int act = -1, q = -1;
  QuantInfo out_q;
  Activation activation;
};

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

// Follows the anchor's float output `y` into an optional activation and a quantize_per_tensor.
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
    for (int i : g.consumers(r)) {
      if (g.nodes[i].op == kQ) {
        t.q = i;
        break;
      }
    }
    if (t.q < 0) {
      t.why = describe_consumers(g, r);
      return t;
    }
    t.nodes.push_back(t.q);
  } else {
    t.q = c;
  }
  for (const auto& v : t.values) {
    t.why = single_use(g, v);
    if (!t.why.empty()) return t;
  }
  t.why = check_q(g, t.q, t.out_q);
  if (!t.why.empty()) return t;
  t.why = activation_range(g, t.act, t.out_q, t.activation);
  if (!t.why.empty()) return t;
  t.kind = Tail::Ok;
  return t;
}

// ---- weights --------------------------------------------------------------------------------

struct WeightFold {
  int dq = -1;             // the weight's dequantize node
  std::string weight;      // the int8 constant
  std::vector<float> scales;
};

int64_t read_signed(const std::vector<uint8_t>& data, size_t index, size_t width) {
  uint64_t u = 0;
  for (size_t b = 0; b < width; ++b) u |= static_cast<uint64_t>(data[index * width + b]) << (8 * b);
  if (width < 8 && (u >> (8 * width - 1)) & 1) u |= ~uint64_t{0} << (8 * width);
  return static_cast<int64_t>(u);
}

// "" when float weight `w` is a symmetric dequantization of an int8 constant.
std::string fold_weight(const Graph& g, const std::string& w, WeightFold& out) {
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
  const auto dtype = opt_string(d, "dtype");
  if (dtype && *dtype != "int8") return "weight dequantize dtype is " + *dtype;
  const int64_t n = wq.shape[0];
  const std::string asym = "weight " + quoted(wq.name) + " has nonzero zero points";
  const std::string unsupported = " (asymmetric weights are not supported)";
  out.dq = p;
  out.weight = wq.name;
  out.scales.clear();
  if (d.op == kDq) {
    QuantInfo q;
    const std::string why = read_qparams(d, q);
    if (!why.empty()) return "weight dequantize (node " + std::to_string(p) + "): " + why;
    if (q.zero_point != 0) {
      return "weight " + quoted(wq.name) + " has zero point " + std::to_string(q.zero_point) +
             unsupported;
    }
    out.scales.assign(static_cast<size_t>(n), static_cast<float>(q.scale));
    return "";
  }
  const auto axis = opt_int(d, "axis");
  if (!axis) return "weight dequantize_per_channel has no integer axis";
  const int64_t a = *axis < 0 ? *axis + static_cast<int64_t>(wq.shape.size()) : *axis;
  if (a != 0) {
    return "weight " + quoted(wq.name) + " is quantized along axis " + std::to_string(a) +
           ", not 0 (output channels)";
  }
  if (d.inputs.size() < 2 || d.inputs[1].empty()) return "weight dequantize has no scales";
  const Value& s = g.value(d.inputs[1]);
  if (!s.is_constant() || s.dtype != DType::Float32 || numel(s.shape) != n ||
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
  if (d.inputs.size() >= 3 && !d.inputs[2].empty()) {
    const Value& zp = g.value(d.inputs[2]);
    const size_t bytes = zp.is_constant() ? zp.data->size() : 0;
    const size_t width = n > 0 ? bytes / static_cast<size_t>(n) : 0;
    if (!zp.is_constant() || numel(zp.shape) != n ||
        !(width == 1 || width == 2 || width == 4 || width == 8) ||
        width * static_cast<size_t>(n) != bytes) {
      return "weight zero points " + quoted(zp.name) + " are not an integer constant of " +
             std::to_string(n) + " elements";
    }
    for (size_t c = 0; c < static_cast<size_t>(n); ++c) {
      const int64_t z = read_signed(*zp.data, c, width);
      if (z != 0) {
        return asym + " (channel " + std::to_string(c) + ": " + std::to_string(z) + ")" +
               unsupported;
      }
    }
  }
  return "";
}

std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(float));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// ---- the pass -------------------------------------------------------------------------------

struct Fusion {
  std::vector<int> nodes;           // matched nodes (removed); the backend node replaces them
  std::vector<std::string> dead;    // intermediate values (removed)
  std::vector<std::string> folded;  // weight dq outputs the node no longer reads
  Node node;
};

// Whether fusing or lowering into `backend` is allowed under `options`.
bool may_target(const std::string& backend, const FuseOptions& options) {
  return !options.runnable_only || schema::is_runnable_op(backend);
}

struct Pass {
  Pass(Graph& graph, const FuseOptions& opts)
      : g(graph), options(opts), claimed(graph.nodes.size(), false) {}

  Graph& g;
  FuseOptions options;
  PassReport report{"fuse_and_lower", {}};
  std::vector<bool> claimed;
  std::vector<Fusion> fusions;
  std::map<std::string, std::string> scales_for;  // weight dq output -> weight_scales constant
  // Quantization of int8 activations: defined by their producer (q), else by the first
  // consumer (dq) in node order.
  std::map<std::string, QuantInfo> produced;
  std::map<std::string, std::vector<std::pair<int, QuantInfo>>> consumed;
  // int8 activations written or read by the torchao affine ops: their qparams are per-block
  // tensors, so they have no per-tensor QuantInfo (and none is expected of them).
  std::set<std::string> affine_int8;

  void note(std::string line) { report.lines.push_back(std::move(line)); }

  static std::string chain_of(const Graph& g, const std::vector<int>& head, int anchor,
                              const std::vector<int>& tail) {
    std::string s;
    for (size_t k = 0; k < head.size(); ++k) s += (k ? ", " : "") + label(g.nodes[head[k]]);
    s += (s.empty() ? "" : " -> ") + g.nodes[anchor].op;
    for (int t : tail) s += " -> " + label(g.nodes[t]);
    return s;
  }

  void not_fused(const std::string& chain, const std::vector<int>& nodes,
                 const std::string& backend, const std::string& why) {
    note("not fused: " + chain + " (" + node_list(nodes) + ") as " + backend + ": " + why);
  }

  bool any_claimed(const std::vector<int>& nodes) const {
    return std::any_of(nodes.begin(), nodes.end(), [&](int i) { return claimed[i]; });
  }

  std::string fused_origin(int anchor, const std::string& backend) const {
    const Node& n = g.nodes[anchor];
    const std::string base =
        n.origin.empty() ? "node " + std::to_string(anchor) + " (" + n.op + ")" : n.origin;
    return base + " fused into " + backend;
  }

  void commit(Fusion f, const std::string& chain, const std::string& detail) {
    for (int i : f.nodes) claimed[i] = true;
    note("fused " + chain + " (" + node_list(f.nodes) + ") into " + f.node.op + " " +
         quoted(f.node.outputs.at(0)) + detail);
    fusions.push_back(std::move(f));
  }

  std::string scales_constant(const WeightFold& w) {
    const std::string key = g.nodes[w.dq].outputs.at(0);
    auto it = scales_for.find(key);
    if (it != scales_for.end()) return it->second;
    Value v;
    v.name = g.unique_name(w.weight + "_scales");
    v.dtype = DType::Float32;
    v.shape = {static_cast<int64_t>(w.scales.size())};
    v.data = float_bytes(w.scales);
    g.add_value(v);
    scales_for[key] = v.name;
    return v.name;
  }

  std::string zero_bias(const std::string& output, int64_t n) {
    Value v;
    v.name = g.unique_name(output + "_bias");
    v.dtype = DType::Float32;
    v.shape = {n};
    v.data = std::vector<uint8_t>(static_cast<size_t>(n) * sizeof(float), 0);
    g.add_value(v);
    return v.name;
  }

  // False (and reported) when options forbid fusing node `anchor` into `backend`; checked
  // before a pattern is matched, as matching adds constants to the graph.
  bool allowed(int anchor, const std::string& backend) {
    if (may_target(backend, options)) return true;
    note("not fused: " + g.nodes[anchor].op + " (" + node_list({anchor}) + ") as " + backend +
         ": it has no kernel yet (left to the host)");
    return false;
  }

  void consume_quant(const std::string& v, int node, const QuantInfo& q) {
    consumed[v].push_back({node, q});
  }

  // dq -> aten.linear | aten.convolution [-> act] -> q, or the float-output variant.
  void try_linear_conv(int i) {
    const Node& n = g.nodes[i];
    const bool conv = n.op == kConv;
    const std::string backend = conv ? "q8ta_conv2d" : "q8ta_linear";
    if (n.inputs.empty() || n.outputs.size() != 1) return;
    const std::string x = n.inputs[0];
    const int p = g.producer(x);
    if (p < 0 || g.nodes[p].op != kDq) return;  // not a quantized pattern
    if (!allowed(i, backend)) return;
    const std::string y = n.outputs[0];
    const Tail tail = match_tail(g, y);
    const std::vector<int> head = {p};
    std::vector<int> all = {p, i};
    all.insert(all.end(), tail.nodes.begin(), tail.nodes.end());
    const std::string full_chain = chain_of(g, head, i, tail.nodes);
    const std::string full_backend = tail.kind == Tail::None ? backend + "_dq" : backend;
    auto fail = [&](const std::string& why) { not_fused(full_chain, all, full_backend, why); };

    QuantInfo in_q;
    std::string why = check_activation_dq(g, p, in_q);
    if (why.empty()) why = single_use(g, x);
    if (!why.empty()) return fail(why);
    if (n.inputs.size() < 2) return fail("no weight");
    WeightFold w;
    why = fold_weight(g, n.inputs[1], w);
    if (!why.empty()) return fail(why);
    const int64_t out_channels = static_cast<int64_t>(w.scales.size());
    const std::string b = n.inputs.size() > 2 ? n.inputs[2] : "";
    if (!b.empty()) {
      const Value& bv = g.value(b);
      if (!bv.is_constant() || bv.dtype != DType::Float32 || numel(bv.shape) != out_channels ||
          bv.shape.size() != 1) {
        return fail("bias " + quoted(b) + " is not a float32 constant of shape [" +
                    std::to_string(out_channels) + "]");
      }
    }
    const Value& wq = g.value(w.weight);
    Args conv_args;
    if (conv) {
      if (arg_present(n, "transposed")) {
        auto it = n.args.find("transposed");
        const bool* t = std::get_if<bool>(&it->second);
        const int64_t* ti = std::get_if<int64_t>(&it->second);
        if ((t && *t) || (ti && *ti) || (!t && !ti)) return fail("transposed convolution");
      }
      const size_t rank = g.value(x).shape.size();
      if (rank != 4 || wq.shape.size() != 4) {
        return fail("only 2-D convolution is supported (input rank " + std::to_string(rank) +
                    ", weight rank " + std::to_string(wq.shape.size()) + ")");
      }
      for (const char* name : {"stride", "padding", "dilation"}) {
        auto list = opt_ints(n, name);
        if (!list) return fail(std::string("missing or non-integer ") + name);
        if (list->size() == 1) list->push_back(list->front());
        if (list->size() != 2) {
          return fail(std::string(name) + " has " + std::to_string(list->size()) +
                      " values, expected 1 or 2");
        }
        conv_args[name] = *list;
      }
      const auto groups = arg_present(n, "groups") ? opt_int(n, "groups") : int64_t{1};
      if (!groups || *groups < 1) return fail("groups is not a positive integer");
      conv_args["groups"] = *groups;
    } else if (wq.shape.size() != 2) {
      return fail("linear weight " + quoted(wq.name) + " has rank " +
                  std::to_string(wq.shape.size()) + ", expected 2");
    }

    const bool quantized = tail.kind == Tail::Ok;
    if (tail.kind == Tail::Half) not_fused(full_chain, all, backend, tail.why);
    Fusion f;
    f.nodes = {p, i};
    if (quantized) f.nodes.insert(f.nodes.end(), tail.nodes.begin(), tail.nodes.end());
    if (any_claimed(f.nodes)) return fail("overlaps another fused pattern");
    f.dead = {x};
    if (quantized) f.dead.insert(f.dead.end(), tail.values.begin(), tail.values.end());
    f.folded = {n.inputs[1]};

    Node& out = f.node;
    out.op = quantized ? backend : backend + "_dq";
    const std::string output = quantized ? g.nodes[tail.q].outputs[0] : y;
    const std::string x_q = g.nodes[p].inputs[0];
    out.inputs = {x_q, w.weight, scales_constant(w), b.empty() ? zero_bias(output, out_channels) : b};
    out.args["input_scale"] = in_q.scale;
    out.args["input_zero_point"] = in_q.zero_point;
    for (auto& kv : conv_args) out.args[kv.first] = kv.second;
    if (quantized) {
      out.args["output_scale"] = tail.out_q.scale;
      out.args["output_zero_point"] = tail.out_q.zero_point;
      out.args["activation_min"] = tail.activation.min;
      out.args["activation_max"] = tail.activation.max;
      produced[output] = tail.out_q;
    }
    out.outputs = {output};
    out.origin = fused_origin(i, out.op);
    consume_quant(x_q, p, in_q);
    const std::vector<int> used_tail = quantized ? tail.nodes : std::vector<int>{};
    const std::string chain = chain_of(g, head, i, used_tail);
    commit(std::move(f), chain,
           quantized ? " (activation " + tail.activation.label + ")" : std::string());
  }

  // Operand shapes q8ta_add takes (runtime/ops/Elementwise.h): equal, or one of them 4-D
  // [N or 1, C, 1, 1] (N, C of the other, itself 4-D) or [1, 1, 1, 1].
  static bool add_broadcast_supported(const std::vector<int64_t>& a,
                                      const std::vector<int64_t>& b) {
    if (a == b) return true;
    auto small_of = [](const std::vector<int64_t>& full, const std::vector<int64_t>& s) {
      if (full.size() != 4 || s.size() != 4 || s[2] != 1 || s[3] != 1) return false;
      return (s[0] == 1 && s[1] == 1) || ((s[0] == 1 || s[0] == full[0]) && s[1] == full[1]);
    };
    return small_of(a, b) || small_of(b, a);
  }

  // dq(a), dq(b) -> aten.add.Tensor [-> act] -> q.
  void try_add(int i) {
    const Node& n = g.nodes[i];
    if (n.inputs.size() < 2 || n.outputs.size() != 1) return;
    const std::string a = n.inputs[0], b = n.inputs[1];
    const int pa = g.producer(a), pb = g.producer(b);
    const bool da = pa >= 0 && g.nodes[pa].op == kDq;
    const bool db = pb >= 0 && g.nodes[pb].op == kDq;
    if (!da && !db) return;  // not a quantized pattern
    if (!allowed(i, "q8ta_add")) return;
    std::vector<int> head;
    if (da) head.push_back(pa);
    if (db && pb != pa) head.push_back(pb);
    const Tail tail = match_tail(g, n.outputs[0]);
    std::vector<int> all = head;
    all.push_back(i);
    all.insert(all.end(), tail.nodes.begin(), tail.nodes.end());
    const std::string chain = chain_of(g, head, i, tail.nodes);
    auto fail = [&](const std::string& why) { not_fused(chain, all, "q8ta_add", why); };

    if (!da || !db) {
      const std::string& other = da ? b : a;
      const int po = da ? pb : pa;
      const Value& ov = g.value(other);
      const std::string from = po >= 0                    ? "produced by " + g.nodes[po].op
                               : ov.is_constant()         ? "a constant"
                                                          : "a graph input";
      return fail(quoted(other) + " is not dequantized (" + from + ")");
    }
    QuantInfo qa, qb;
    std::string why = check_activation_dq(g, pa, qa);
    if (why.empty()) why = check_activation_dq(g, pb, qb);
    if (why.empty()) why = single_use(g, a);
    if (why.empty() && b != a) why = single_use(g, b);
    if (!why.empty()) return fail(why);
    if (arg_present(n, "alpha")) {
      const auto alpha = opt_float(n, "alpha");
      if (!alpha || *alpha != 1.0) return fail("alpha is not 1");
    }
    if (!add_broadcast_supported(g.value(a).shape, g.value(b).shape)) {
      return fail("broadcasting add (" + shape_str(g.value(a).shape) + " + " +
                  shape_str(g.value(b).shape) +
                  "; q8ta_add broadcasts only a 4-D [N or 1, C, 1, 1] or [1, 1, 1, 1] operand)");
    }
    if (tail.kind == Tail::None) {
      return fail(describe_consumers(g, n.outputs[0]) + " (q8ta_add has no float-output variant)");
    }
    if (tail.kind == Tail::Half) return fail(tail.why);

    Fusion f;
    f.nodes = all;
    if (any_claimed(f.nodes)) return fail("overlaps another fused pattern");
    f.dead = {a};
    if (b != a) f.dead.push_back(b);
    f.dead.insert(f.dead.end(), tail.values.begin(), tail.values.end());
    Node& out = f.node;
    out.op = "q8ta_add";
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
    out.origin = fused_origin(i, out.op);
    produced[output] = tail.out_q;
    consume_quant(a_q, pa, qa);
    consume_quant(b_q, pb, qb);
    commit(std::move(f), chain, " (activation " + tail.activation.label + ")");
  }

  // dq -> aten.max_pool2d -> q with the same qparams on both sides (max commutes with the
  // monotonic dequantization, so the kernel only takes maxima of int8 values), and
  // dq -> aten.mean.dim(dim = H and W, keepdim) / aten.adaptive_avg_pool2d(1) -> q (requantized).
  void try_pool(int i) {
    const Node& n = g.nodes[i];
    if (n.inputs.empty() || n.outputs.size() != 1) return;
    const bool max_pool = n.op == kMaxPool;
    const std::string backend = max_pool ? "q8ta_max_pool2d" : "q8ta_mean";
    const std::string x = n.inputs[0];
    const int p = g.producer(x);
    if (p < 0 || g.nodes[p].op != kDq) return;  // not a quantized pattern
    if (!allowed(i, backend)) return;
    const Tail tail = match_tail(g, n.outputs[0]);
    std::vector<int> all = {p, i};
    all.insert(all.end(), tail.nodes.begin(), tail.nodes.end());
    const std::string chain = chain_of(g, {p}, i, tail.nodes);
    auto fail = [&](const std::string& why) { not_fused(chain, all, backend, why); };

    QuantInfo in_q;
    std::string why = check_activation_dq(g, p, in_q);
    if (why.empty()) why = single_use(g, x);
    if (!why.empty()) return fail(why);
    if (tail.kind == Tail::None) {
      return fail(describe_consumers(g, n.outputs[0]) + " (" + backend +
                  " has no float-output variant)");
    }
    if (tail.kind == Tail::Half) return fail(tail.why);
    if (tail.act >= 0) return fail("an activation follows (" + backend + " fuses none)");
    const std::vector<int64_t>& shape = g.value(x).shape;
    if (shape.size() != 3 && shape.size() != 4) {
      return fail("input " + shape_str(shape) + " is not of rank 3 or 4");
    }

    Fusion f;
    f.nodes = all;
    Node& out = f.node;
    out.op = backend;
    out.args["input_scale"] = in_q.scale;
    out.args["input_zero_point"] = in_q.zero_point;
    if (max_pool) {
      if (!same_quant(in_q, tail.out_q)) {
        return fail("input (" + describe_quant(in_q) + ") and output (" +
                    describe_quant(tail.out_q) + ") quantization differ");
      }
      const auto kernel = opt_ints(n, "kernel_size");
      if (!kernel || kernel->empty()) return fail("kernel_size is missing");
      const auto stride = arg_present(n, "stride") ? opt_ints(n, "stride")
                                                   : std::optional<std::vector<int64_t>>{};
      const auto padding = arg_present(n, "padding") ? opt_ints(n, "padding")
                                                     : std::vector<int64_t>{0};
      const auto dilation = arg_present(n, "dilation") ? opt_ints(n, "dilation")
                                                       : std::vector<int64_t>{1};
      if ((arg_present(n, "stride") && !stride) || !padding || !dilation) {
        return fail("stride, padding or dilation is not an int list");
      }
      bool ceil_mode = false;
      if (arg_present(n, "ceil_mode")) {
        const auto* b = std::get_if<bool>(&n.args.at("ceil_mode"));
        if (!b) return fail("ceil_mode is not a bool");
        ceil_mode = *b;
      }
      out.args["kernel_size"] = *kernel;
      out.args["stride"] = stride ? *stride : std::vector<int64_t>{};  // empty: the kernel size
      out.args["padding"] = *padding;
      out.args["dilation"] = *dilation;
      out.args["ceil_mode"] = ceil_mode;
    } else {
      const int64_t rank = static_cast<int64_t>(shape.size());
      if (n.op == kMean) {
        const auto dims = opt_ints(n, "dim");
        std::set<int64_t> reduced;
        for (int64_t d : dims ? *dims : std::vector<int64_t>{}) reduced.insert(d < 0 ? d + rank : d);
        if (!dims || reduced != std::set<int64_t>{rank - 2, rank - 1} ||
            dims->size() != 2) {
          return fail("mean is not over exactly H and W");
        }
        const auto keep = n.args.find("keepdim");
        const bool* keepdim = keep == n.args.end() ? nullptr : std::get_if<bool>(&keep->second);
        if (!keepdim || !*keepdim) return fail("keepdim is not true");
        if (arg_present(n, "dtype")) return fail("a dtype is given");
      } else {
        const auto size = opt_ints(n, "output_size");
        if (!size || (*size != std::vector<int64_t>{1} && *size != std::vector<int64_t>{1, 1})) {
          return fail("output_size is not 1x1");
        }
      }
      if (tail.out_q.quant_min != -128 || tail.out_q.quant_max != 127) {
        return fail("output range " + std::to_string(tail.out_q.quant_min) + ".." +
                    std::to_string(tail.out_q.quant_max) + " is not the full int8 range");
      }
      out.args["output_scale"] = tail.out_q.scale;
      out.args["output_zero_point"] = tail.out_q.zero_point;
    }
    if (any_claimed(f.nodes)) return fail("overlaps another fused pattern");
    f.dead = {x};
    f.dead.insert(f.dead.end(), tail.values.begin(), tail.values.end());
    const std::string x_q = g.nodes[p].inputs[0];
    const std::string output = g.nodes[tail.q].outputs[0];
    out.inputs = {x_q};
    out.outputs = {output};
    out.origin = fused_origin(i, out.op);
    produced[output] = tail.out_q;
    consume_quant(x_q, p, in_q);
    commit(std::move(f), chain, "");
  }

  // dq -> [clone]* -> aten.pixel_shuffle -> [clone]* -> q.
  void try_pixel_shuffle(int i) {
    const Node& n = g.nodes[i];
    if (n.inputs.empty() || n.outputs.size() != 1) return;
    std::vector<std::string> values;  // intermediates
    std::vector<int> before;          // clones before the shuffle, nearest first
    std::string v = n.inputs[0];
    int p = g.producer(v);
    while (p >= 0 && is_clone(g.nodes[p].op) && !g.nodes[p].inputs.empty()) {
      before.push_back(p);
      values.push_back(v);
      v = g.nodes[p].inputs[0];
      p = g.producer(v);
    }
    if (p < 0 || g.nodes[p].op != kDq) return;  // not a quantized pattern
    if (!allowed(i, "q8ta_pixel_shuffle")) return;
    values.push_back(v);
    std::vector<int> chain_nodes = {p};
    chain_nodes.insert(chain_nodes.end(), before.rbegin(), before.rend());
    chain_nodes.push_back(i);
    std::string cur = n.outputs[0];
    int q = -1;
    std::string why;
    for (;;) {
      int next = -1;
      for (int c : g.consumers(cur)) {
        if (g.nodes[c].op == kQ || is_clone(g.nodes[c].op)) {
          next = c;
          break;
        }
      }
      if (next < 0) {
        why = describe_consumers(g, cur);
        break;
      }
      values.push_back(cur);
      chain_nodes.push_back(next);
      if (g.nodes[next].op == kQ) {
        q = next;
        break;
      }
      cur = g.nodes[next].outputs.at(0);
    }
    std::string chain;
    for (size_t k = 0; k < chain_nodes.size(); ++k) {
      chain += (k ? " -> " : "") + label(g.nodes[chain_nodes[k]]);
    }
    auto fail = [&](const std::string& reason) {
      not_fused(chain, chain_nodes, "q8ta_pixel_shuffle", reason);
    };
    QuantInfo in_q, out_q;
    const std::string dq_why = check_activation_dq(g, p, in_q);
    if (!dq_why.empty()) return fail(dq_why);
    for (const auto& value : values) {
      const std::string use = single_use(g, value);
      if (!use.empty()) return fail(use);
    }
    if (q < 0) return fail(why);
    why = check_q(g, q, out_q);
    if (!why.empty()) return fail(why);
    const auto factor = opt_int(n, "upscale_factor");
    if (!factor || *factor < 1) return fail("upscale_factor is not a positive integer");

    Fusion f;
    f.nodes = chain_nodes;
    if (any_claimed(f.nodes)) return fail("overlaps another fused pattern");
    f.dead = values;
    Node& out = f.node;
    out.op = "q8ta_pixel_shuffle";
    const std::string x_q = g.nodes[p].inputs[0];
    const std::string output = g.nodes[q].outputs[0];
    out.inputs = {x_q};
    out.args["input_scale"] = in_q.scale;
    out.args["input_zero_point"] = in_q.zero_point;
    out.args["upscale_factor"] = *factor;
    out.args["output_scale"] = out_q.scale;
    out.args["output_zero_point"] = out_q.zero_point;
    out.outputs = {output};
    out.origin = fused_origin(i, out.op);
    produced[output] = out_q;
    consume_quant(x_q, p, in_q);
    commit(std::move(f), chain, "");
  }

  // Replaces matched nodes (each match at the position of its last node: its inputs are
  // defined before its first node, its output is read after its last) and drops
  // intermediates. Returns the original index of every remaining node.
  std::vector<int> apply_fusions() {
    std::map<int, size_t> emit_at;
    for (size_t k = 0; k < fusions.size(); ++k) {
      emit_at[*std::max_element(fusions[k].nodes.begin(), fusions[k].nodes.end())] = k;
    }
    std::vector<Node> nodes;
    std::vector<int> origin;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      auto it = emit_at.find(static_cast<int>(i));
      if (it != emit_at.end()) {
        nodes.push_back(fusions[it->second].node);
        origin.push_back(static_cast<int>(i));
      } else if (!claimed[i]) {
        nodes.push_back(std::move(g.nodes[i]));
        origin.push_back(static_cast<int>(i));
      }
    }
    g.nodes = std::move(nodes);
    for (const auto& f : fusions) {
      for (const auto& v : f.dead) {
        if (g.has_value(v)) g.remove_value(v);
      }
    }
    return origin;
  }

  bool unused(const std::string& v) const {
    return g.consumers(v).empty() && !g.is_graph_output(v) &&
           !g.is_graph_input(v);
  }

  // Removes weight dequantize nodes whose outputs only fed fused ops, and the scale / zero-
  // point constants left unread.
  void fold_weight_dqs(std::vector<int>& origin) {
    std::set<std::string> folded;
    for (const auto& f : fusions) folded.insert(f.folded.begin(), f.folded.end());
    std::vector<Node> nodes;
    std::vector<int> kept_origin, removed, kept;
    std::vector<std::string> removed_inputs, removed_outputs;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node& n = g.nodes[i];
      const bool weight_dq = (n.op == kDq || n.op == kDqChannel) && !n.inputs.empty() &&
                             !n.inputs[0].empty() && g.value(n.inputs[0]).is_constant() &&
                             n.outputs.size() == 1 && folded.count(n.outputs[0]);
      if (weight_dq && unused(n.outputs[0])) {
        removed.push_back(origin[i]);
        removed_outputs.push_back(n.outputs[0]);
        for (const auto& in : n.inputs) {
          if (!in.empty()) removed_inputs.push_back(in);
        }
        continue;
      }
      if (weight_dq) kept.push_back(origin[i]);
      nodes.push_back(std::move(n));
      kept_origin.push_back(origin[i]);
    }
    g.nodes = std::move(nodes);
    origin = std::move(kept_origin);
    for (const auto& v : removed_outputs) g.remove_value(v);
    for (const auto& v : removed_inputs) {
      if (g.has_value(v) && g.value(v).is_constant() && unused(v)) g.remove_value(v);
    }
    if (!removed.empty()) {
      note("folded " + std::to_string(removed.size()) + " weight dequantize node(s) (" +
           node_list(removed) + ")");
    }
    if (!kept.empty()) {
      note("kept weight dequantize " + node_list(kept) +
           ": its output is also read by unfused nodes or is a graph output");
    }
  }

  // Lowers the remaining edge ops that have a direct backend op.
  void lower(const std::vector<int>& origin) {
    std::map<std::string, int> counts;
    std::vector<std::string> left;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node& n = g.nodes[i];
      if (schema::find_op_schema(n.op) != nullptr) continue;  // fused above
      const int where = origin[i];
      if (!affine_backend_op(n.op).empty()) {
        lower_affine(n, where, counts, left);
        continue;
      }
      std::string backend;
      Args args;
      QuantInfo q;
      const bool unary = n.inputs.size() >= 1 && !n.inputs[0].empty() && n.outputs.size() == 1;
      const Value* in = unary ? &g.value(n.inputs[0]) : nullptr;
      const bool float_in = in && in->dtype == DType::Float32;
      const bool half_in = in && in->dtype == DType::Float16;  // only data movement takes it
      if (!unary) {
        // not a shape any lowering handles
      } else if (n.op == kQ) {
        if (check_q(g, static_cast<int>(i), q).empty()) {
          backend = "q8ta_quantize";
          args = {{"scale", q.scale}, {"zero_point", q.zero_point},
                  {"quant_min", q.quant_min}, {"quant_max", q.quant_max}};
          produced[n.outputs[0]] = q;
        }
      } else if (n.op == kDq) {
        if (check_activation_dq(g, static_cast<int>(i), q).empty()) {
          backend = "q8ta_dequantize";
          args = {{"scale", q.scale}, {"zero_point", q.zero_point},
                  {"quant_min", q.quant_min}, {"quant_max", q.quant_max}};
          consume_quant(n.inputs[0], where, q);
        }
      } else if (is_clone(n.op) || n.op == kViewCopy) {
        const Value& out = g.value(n.outputs[0]);
        const bool dtype_ok = !in->is_constant() && in->dtype == out.dtype &&
                              (in->dtype == DType::Float32 || in->dtype == DType::Float16 ||
                               in->dtype == DType::Int8 || in->dtype == DType::Int8x4);
        if (dtype_ok && (n.op != kViewCopy || same_packed_shape(in->shape, out.shape))) {
          backend = "identity";
        }
      } else if (n.op == kRelu && float_in) {
        backend = "relu";
      } else if ((n.op == kHardtanh || n.op == kClamp) && float_in) {
        double lo = 0, hi = 0;
        if (activation_bounds(n, lo, hi).empty()) {
          backend = "clamp";
          args = {{"min", lo}, {"max", hi}};
        }
      } else if (n.op == kPixelShuffle && (float_in || half_in)) {
        const auto factor = opt_int(n, "upscale_factor");
        if (factor && *factor >= 1) {
          backend = "pixel_shuffle";
          args = {{"upscale_factor", *factor}};
        }
      }
      if (!backend.empty() && !may_target(backend, options)) backend.clear();
      if (backend.empty()) {
        left.push_back(n.op + " (node " + std::to_string(where) + ")");
        continue;
      }
      if (n.origin.empty()) n.origin = "node " + std::to_string(where) + " (" + n.op + ")";
      n.op = backend;
      n.inputs.resize(1);
      n.args = std::move(args);
      ++counts[backend];
    }
    if (!counts.empty()) {
      int total = 0;
      std::string parts;
      for (const auto& kv : counts) {
        total += kv.second;
        parts += (parts.empty() ? "" : ", ") + std::to_string(kv.second) + " " + kv.first;
      }
      note("lowered " + std::to_string(total) + " node(s): " + parts);
    }
    if (!left.empty()) {
      std::string parts;
      for (const auto& s : left) parts += (parts.empty() ? "" : ", ") + s;
      note("left " + std::to_string(left.size()) + " node(s) as edge ops: " + parts);
    }
  }

  // torchao quantize / dequantize / choose_qparams_affine (3 inputs, 2 outputs for choose):
  // LowerAffine.h. What the backend ops cannot express is an error naming the node, except
  // under runnable_only, where the node stays an edge op for the host.
  void lower_affine(Node& n, int where, std::map<std::string, int>& counts,
                    std::vector<std::string>& left) {
    const std::string at = "node " + std::to_string(where) + " (" + n.op + ")";
    const std::string backend = affine_backend_op(n.op);
    const std::string why = may_target(backend, options) ? lower_affine_node(g, n)
                                                         : "it has no kernel yet";
    if (!why.empty()) {
      VKD_CHECK(options.runnable_only, ErrorCode::Unsupported, at, ": cannot lower to ", backend,
                ": ", why);
      note("not lowered: " + at + " as " + backend + ": " + why);
      left.push_back(n.op + " (node " + std::to_string(where) + ")");
      return;
    }
    if (n.origin.empty()) n.origin = at;
    for (const auto* list : {&n.inputs, &n.outputs}) {
      for (const auto& v : *list) {
        if (g.value(v).dtype == DType::Int8) affine_int8.insert(v);
      }
    }
    ++counts[backend];
  }

  // Equal after dropping leading 1s: the last three (W, H, C) dims agree, so a view is free.
  static bool same_packed_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    auto strip = [](const std::vector<int64_t>& s) {
      size_t k = 0;
      while (k < s.size() && s[k] == 1) ++k;
      return std::vector<int64_t>(s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
    };
    return strip(a) == strip(b);
  }

  // int8 activations read or written by backend ops become Int8x4 with their quantization.
  void assign_int8x4() {
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
    std::map<std::string, QuantInfo> quant;
    for (const auto& name : g.value_names()) {
      if (!activations.count(name)) continue;
      auto p = produced.find(name);
      auto c = consumed.find(name);
      std::optional<QuantInfo> q;
      if (p != produced.end()) {
        q = p->second;
      } else if (c != consumed.end()) {
        auto first = std::min_element(c->second.begin(), c->second.end(),
                                      [](const auto& x, const auto& y) { return x.first < y.first; });
        q = first->second;
      }
      if (c != consumed.end() && q) {
        std::vector<std::pair<int, QuantInfo>> uses = c->second;
        std::sort(uses.begin(), uses.end(),
                  [](const auto& x, const auto& y) { return x.first < y.first; });
        for (const auto& u : uses) {
          if (!same_quant(u.second, *q)) {
            note("quantization mismatch on " + quoted(name) + ": it is " + describe_quant(*q) +
                 " but node " + std::to_string(u.first) + " dequantizes it with " +
                 describe_quant(u.second) + " (that node keeps its own parameters)");
          }
        }
      }
      if (q) quant[name] = *q;
    }
    // Views (identity) carry their input's quantization, both ways.
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& n : g.nodes) {
        if (n.op != "identity" || !activations.count(n.inputs[0])) continue;
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
    std::vector<std::string> unquantized;
    for (const auto& name : g.value_names()) {
      if (!activations.count(name)) continue;
      Value& v = g.value(name);
      v.dtype = DType::Int8x4;
      auto it = quant.find(name);
      if (it != quant.end()) {
        v.quant = it->second;
      } else if (!affine_int8.count(name)) {
        unquantized.push_back(quoted(name));
      }
    }
    if (!unquantized.empty()) {
      std::string parts;
      for (const auto& s : unquantized) parts += (parts.empty() ? "" : ", ") + s;
      note("int8 activation(s) with no quantization parameters: " + parts);
    }
  }
};

bool arg_has_kind(const ArgValue& v, schema::ArgKind kind) {
  switch (kind) {
    case schema::ArgKind::Int: return std::holds_alternative<int64_t>(v);
    case schema::ArgKind::Float: return std::holds_alternative<double>(v);
    case schema::ArgKind::Bool: return std::holds_alternative<bool>(v);
    case schema::ArgKind::IntList: return std::holds_alternative<std::vector<int64_t>>(v);
    case schema::ArgKind::FloatList: return std::holds_alternative<std::vector<double>>(v);
    case schema::ArgKind::Tensor: return false;
  }
  return false;
}

// Every backend node this pass leaves must match its OpSchema entry exactly.
void check_against_schema(const Graph& g, const Node& n) {
  const schema::OpSchema* s = schema::find_op_schema(n.op);
  if (s == nullptr) return;
  size_t in = 0, out = 0, scalars = 0;
  for (const auto& a : s->args) {
    if (a.kind != schema::ArgKind::Tensor) {
      ++scalars;
      auto it = n.args.find(a.name);
      VKD_CHECK(it != n.args.end() && arg_has_kind(it->second, a.kind), ErrorCode::Internal,
                "fuse_and_lower: ", n.origin, ": ", n.op, " argument '", a.name,
                "' is missing or of the wrong kind");
      continue;
    }
    const std::vector<std::string>& list = a.output ? n.outputs : n.inputs;
    const size_t k = a.output ? out++ : in++;
    VKD_CHECK(k < list.size() && !list[k].empty(), ErrorCode::Internal, "fuse_and_lower: ",
              n.origin, ": ", n.op, " has no tensor for '", a.name, "'");
    const Value& v = g.value(list[k]);
    VKD_CHECK(std::find(a.dtypes.begin(), a.dtypes.end(), v.dtype) != a.dtypes.end(),
              ErrorCode::Internal, "fuse_and_lower: ", n.origin, ": ", n.op, " '", a.name,
              "' is ", to_string(v.dtype));
    VKD_CHECK(!a.constant || v.is_constant(), ErrorCode::Internal, "fuse_and_lower: ", n.origin,
              ": ", n.op, " '", a.name, "' must be a constant");
  }
  VKD_CHECK(n.inputs.size() == in && n.outputs.size() == out && n.args.size() == scalars,
            ErrorCode::Internal, "fuse_and_lower: ", n.origin, ": ", n.op, " has ",
            n.inputs.size(), " inputs, ", n.outputs.size(), " outputs and ", n.args.size(),
            " args; its schema has ", in, ", ", out, " and ", scalars);
}

}  // namespace

PassReport fuse_and_lower(Graph& g, const FuseOptions& options) {
  Pass pass(g, options);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (pass.claimed[i]) continue;
    const std::string& op = g.nodes[i].op;
    if (op == kLinear || op == kConv) {
      pass.try_linear_conv(static_cast<int>(i));
    } else if (op == kAdd) {
      pass.try_add(static_cast<int>(i));
    } else if (op == kPixelShuffle) {
      pass.try_pixel_shuffle(static_cast<int>(i));
    } else if (op == kMaxPool || op == kMean || op == kAdaptiveAvgPool) {
      pass.try_pool(static_cast<int>(i));
    }
  }
  std::vector<int> origin = pass.apply_fusions();
  pass.fold_weight_dqs(origin);
  pass.lower(origin);
  pass.assign_int8x4();
  for (const auto& n : g.nodes) check_against_schema(g, n);
  return std::move(pass.report);
}

}  // namespace vkd::compiler
