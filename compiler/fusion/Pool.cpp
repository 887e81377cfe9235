// dq -> aten.max_pool2d -> q => q8ta_max_pool2d: max commutes with the dequantization and the
// quantization (both non-decreasing), so the kernel takes maxima of the int8 values and, when
// the two quantizations differ, requantizes the max once (requantize_moved), which must equal
// the chain's dq -> q for all 256 int8 values (U-Net encoders: FX gives a pooled map that is
// also a cat input its own observer);
// dq -> aten.avg_pool2d -> q => q8ta_avg_pool2d (int32 sums, requantized);
// dq -> aten.mean.dim (dim = H and W) | aten.adaptive_avg_pool2d (1) -> q => q8ta_mean
// (requantized; keepdim = False: q8ta_mean_flat, whose [N, C] rows are the q8ta_linear input
// layout); adaptive_avg_pool2d to another size => q8ta_adaptive_avg_pool2d. None fuses an
// activation or has a float-output variant.
#include <optional>
#include <set>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Patterns.h"

namespace vkd::compiler::fusion {
namespace {

// "" when pool `n` (input dq node `p`) and its `tail` fit `backend`; fills the input qparams.
std::string check_pool(const Graph& g, const Node& n, int p, const Tail& tail,
                       const std::string& backend, QuantInfo& in_q) {
  const std::string why = check_quantized_anchor(g, n, p, tail, backend, in_q);
  if (!why.empty()) return why;
  const std::vector<int64_t>& shape = g.value(n.inputs[0]).shape;
  if (shape.size() != 3 && shape.size() != 4) {
    return "input " + shape_str(shape) + " is not of rank 3 or 4";
  }
  return "";
}

// A bool arg of `n`, `def` when absent; nullopt when of another kind.
std::optional<bool> bool_or(const Node& n, const char* name, bool def) {
  const auto it = n.args.find(name);
  if (it == n.args.end()) return def;
  const auto* b = std::get_if<bool>(&it->second);
  return b ? std::optional<bool>(*b) : std::nullopt;
}

// The window args of max_pool2d / avg_pool2d `n`: kernel_size, stride (an empty list meaning the
// kernel size), padding, ceil_mode.
std::string read_window_args(const Node& n, Args& args) {
  const auto kernel = opt_ints(n, "kernel_size");
  if (!kernel || kernel->empty()) return "kernel_size is missing";
  const auto stride =
      arg_present(n, "stride") ? opt_ints(n, "stride") : std::optional<std::vector<int64_t>>{};
  const auto padding = arg_present(n, "padding") ? opt_ints(n, "padding") : std::vector<int64_t>{0};
  if ((arg_present(n, "stride") && !stride) || !padding) {
    return "stride or padding is not an int list";
  }
  const std::optional<bool> ceil_mode = bool_or(n, "ceil_mode", false);
  if (!ceil_mode) return "ceil_mode is not a bool";
  args["kernel_size"] = *kernel;
  args["stride"] = stride ? *stride : std::vector<int64_t>{};
  args["padding"] = *padding;
  args["ceil_mode"] = *ceil_mode;
  return "";
}

// q8ta_max_pool2d's args from aten.max_pool2d `n`: the max as it is when the quantizations
// are the same, else requantized as dq -> q does.
std::string read_max_pool_args(const Node& n, const QuantInfo& in_q, const QuantInfo& out_q,
                               Args& args) {
  const std::string why = check_bytes_or_requantization(in_q, out_q);
  if (!why.empty()) return why;
  args["output_scale"] = out_q.scale;
  args["output_zero_point"] = out_q.zero_point;
  const auto dilation =
      arg_present(n, "dilation") ? opt_ints(n, "dilation") : std::vector<int64_t>{1};
  if (!dilation) return "dilation is not an int list";
  args["dilation"] = *dilation;
  return read_window_args(n, args);
}

// adaptive_avg_pool2d to 1x1 is the mean over H and W.
bool is_global_pool(const Node& n) {
  const auto size = opt_ints(n, "output_size");
  return size && (*size == std::vector<int64_t>{1} || *size == std::vector<int64_t>{1, 1});
}

// "" when `n` averages exactly the H and W dims of its rank-`rank` input (into 1x1, or dropped
// with keepdim = False).
std::string check_mean_over_hw(const Node& n, int64_t rank) {
  if (n.op == kMean) {
    const auto dims = opt_ints(n, "dim");
    std::set<int64_t> reduced;
    for (int64_t d : dims ? *dims : std::vector<int64_t>{}) reduced.insert(d < 0 ? d + rank : d);
    if (!dims || reduced != std::set<int64_t>{rank - 2, rank - 1} || dims->size() != 2) {
      return "mean is not over exactly H and W";
    }
    const auto keep = n.args.find("keepdim");
    if (keep != n.args.end() && !std::holds_alternative<bool>(keep->second)) {
      return "keepdim is not a bool";
    }
    if (arg_present(n, "dtype")) return "a dtype is given";
    return "";
  }
  return is_global_pool(n) ? "" : "output_size is not 1x1";
}

// The output args of the averaging kernels: they requantize into the full int8 range only.
std::string read_average_output(const QuantInfo& out_q, Args& args) {
  if (out_q.quant_min != -128 || out_q.quant_max != 127) {
    return "output range " + std::to_string(out_q.quant_min) + ".." +
           std::to_string(out_q.quant_max) + " is not the full int8 range";
  }
  args["output_scale"] = out_q.scale;
  args["output_zero_point"] = out_q.zero_point;
  return "";
}

// q8ta_mean's output args.
std::string read_mean_args(const Node& n, int64_t rank, const QuantInfo& out_q, Args& args) {
  const std::string why = check_mean_over_hw(n, rank);
  return why.empty() ? read_average_output(out_q, args) : why;
}

// q8ta_avg_pool2d's args from aten.avg_pool2d `n` (divisor_override None is 0).
std::string read_avg_pool_args(const Node& n, const QuantInfo& out_q, Args& args) {
  std::string why = read_window_args(n, args);
  if (!why.empty()) return why;
  const std::optional<bool> include_pad = bool_or(n, "count_include_pad", true);
  if (!include_pad) return "count_include_pad is not a bool";
  args["count_include_pad"] = *include_pad;
  args["divisor_override"] = opt_int(n, "divisor_override").value_or(0);
  return read_average_output(out_q, args);
}

// The backend op pool `n` becomes.
std::string pool_backend(const Graph& g, const Node& n) {
  if (n.op == kMaxPool) return "q8ta_max_pool2d";
  if (n.op == kAvgPool) return "q8ta_avg_pool2d";
  if (n.op == kAdaptiveAvgPool && !is_global_pool(n)) return "q8ta_adaptive_avg_pool2d";
  // keepdim = False leaves [N, C]: the rows variant.
  const bool flat = n.outputs.size() == 1 && g.value(n.outputs[0]).shape.size() == 2;
  return flat ? "q8ta_mean_flat" : "q8ta_mean";
}

// The report's note on a max pool that requantizes (the kernel's requantizing variant runs
// where scale or zero point differ).
std::string max_pool_detail(const std::string& backend, const QuantInfo& in_q,
                            const QuantInfo& out_q) {
  if (backend != "q8ta_max_pool2d" ||
      (in_q.scale == out_q.scale && in_q.zero_point == out_q.zero_point)) {
    return "";
  }
  return " (the max requantized: scale " + fmt(in_q.scale) + " zero_point " +
         std::to_string(in_q.zero_point) + " -> scale " + fmt(out_q.scale) + " zero_point " +
         std::to_string(out_q.zero_point) + ")";
}

// The backend args of pool `n` into `backend` (rank: of its input).
std::string read_pool_args(const Node& n, const std::string& backend, int64_t rank,
                           const QuantInfo& in_q, const QuantInfo& out_q, Args& args) {
  if (backend == "q8ta_max_pool2d") return read_max_pool_args(n, in_q, out_q, args);
  if (backend == "q8ta_avg_pool2d") return read_avg_pool_args(n, out_q, args);
  if (backend == "q8ta_adaptive_avg_pool2d") return read_average_output(out_q, args);
  return read_mean_args(n, rank, out_q, args);
}

}  // namespace

void fuse_pool(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  const std::string backend = pool_backend(g, n);
  const std::optional<DqAnchor> m = state.match_dq_anchor(i, backend);
  if (!m) return;
  const Tail& tail = m->tail;
  const int p = m->dq;
  const std::string& x = m->x;
  const std::vector<int>& all = m->nodes;
  const std::string& chain = m->chain;
  auto fail = [&](const std::string& why) { state.not_fused(chain, all, backend, why); };

  QuantInfo in_q;
  std::string why = check_pool(g, n, p, tail, backend, in_q);
  if (!why.empty()) return fail(why);
  Fusion f;
  f.nodes = all;
  Node& out = f.node;
  out.op = backend;
  out.args["input_scale"] = in_q.scale;
  out.args["input_zero_point"] = in_q.zero_point;
  const int64_t rank = static_cast<int64_t>(g.value(x).shape.size());
  why = read_pool_args(n, backend, rank, in_q, tail.out_q, out.args);
  if (!why.empty()) return fail(why);
  if (state.any_claimed(f.nodes)) return fail("overlaps another fused pattern");
  f.dead = {x};
  f.dead.insert(f.dead.end(), tail.values.begin(), tail.values.end());
  const std::string x_q = g.nodes[p].inputs[0];
  const std::string output = g.nodes[tail.q].outputs[0];
  out.inputs = {x_q};
  out.outputs = {output};
  out.origin = state.fused_origin(i, out.op);
  state.produced[output] = tail.out_q;
  state.consume_quant(x_q, p, in_q);
  state.commit(std::move(f), chain, max_pool_detail(backend, in_q, tail.out_q));
}

}  // namespace vkd::compiler::fusion
