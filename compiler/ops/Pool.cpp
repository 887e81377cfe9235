// aten.max_pool2d, aten.avg_pool2d, aten.mean.dim and aten.adaptive_avg_pool2d.
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/ops/ShapeFormulas.h"
#include "compiler/reference/Reduction.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of the pooling and reduction ops: max_pool2d, avg_pool2d, mean.dim,
// adaptive_avg_pool2d (semantics above each function). Built with -ffp-contract=off
// (compiler/CMakeLists.txt), so each float32 sum is rounded on its own, in the order written here.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// Mean over `dims` (normalized, distinct): one float32 accumulator per output element, adding
// the input elements in row-major input order, then divided by the count.
HostTensor mean_over(const ReferenceContext& c, const HostTensor& x, std::vector<int64_t> dims,
                     bool keepdim) {
  c.expect_dtype(x, DType::Float32, "self");
  const size_t rank = x.shape.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t d : dims) {
    const int64_t nd = norm_dim(c, d, rank);
    if (rank == 0) continue;
    c.require(!reduced[static_cast<size_t>(nd)], detail::concat("dim ", d, " appears twice"));
    reduced[static_cast<size_t>(nd)] = true;
  }
  if (dims.empty()) std::fill(reduced.begin(), reduced.end(), true);
  const ReductionShape r = reduction_shape(x.shape, reduced, keepdim);
  std::vector<float> acc(static_cast<size_t>(element_count(r.kept)), 0.0f);
  strided_loop(x.shape, {r.strides}, [&](int64_t i, const std::vector<int64_t>& off) {
    acc[static_cast<size_t>(off[0])] = acc[static_cast<size_t>(off[0])] + get_f32(x, i);
  });
  const float n = static_cast<float>(r.count);
  for (float& v : acc) v = v / n;  // count 0 gives NaN, as in PyTorch
  return HostTensor::from_floats(r.out, acc);
}

// The window arguments of max_pool2d / avg_pool2d, (h, w) each: an absent or empty stride is
// the kernel size, absent padding 0, absent dilation 1.
struct PoolArgs {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode;
};

PoolArgs read_pool_args(const ReferenceContext& c) {
  PoolArgs a{};
  std::tie(a.kh, a.kw) = pair_arg(c, c.ints_arg("kernel_size"), "kernel_size");
  const std::vector<int64_t> stride_v =
      c.present("stride") ? c.ints_arg("stride") : std::vector<int64_t>{};
  std::tie(a.sh, a.sw) =
      stride_v.empty() ? std::make_pair(a.kh, a.kw) : pair_arg(c, stride_v, "stride");
  std::tie(a.ph, a.pw) = c.present("padding") ? pair_arg(c, c.ints_arg("padding"), "padding")
                                              : std::make_pair<int64_t, int64_t>(0, 0);
  std::tie(a.dh, a.dw) = c.present("dilation") ? pair_arg(c, c.ints_arg("dilation"), "dilation")
                                               : std::make_pair<int64_t, int64_t>(1, 1);
  a.ceil_mode = c.bool_arg("ceil_mode", false);
  c.require(a.kh > 0 && a.kw > 0, "kernel_size must be positive");
  c.require(a.sh > 0 && a.sw > 0, "stride must be positive");
  c.require(a.dh > 0 && a.dw > 0, "dilation must be positive");
  c.require(a.ph >= 0 && a.pw >= 0 && a.ph <= a.kh / 2 && a.pw <= a.kw / 2,
            "padding must be non-negative and at most half of the kernel size");
  return a;
}

// The output of a 2-d window op on `x` (rank 3 or 4) with output size OH x OW: the leading
// dims kept.
HostTensor pool_output(const ReferenceContext& c, const HostTensor& x, int64_t OH, int64_t OW) {
  c.require(OH >= 1 && OW >= 1, detail::concat("output size ", OH, "x", OW, " is too small"));
  std::vector<int64_t> shape(x.shape.begin(), x.shape.end() - 2);
  shape.insert(shape.end(), {OH, OW});
  return make_tensor(x.dtype, shape);
}

// The float32 sum of plane `p` of `x` (H x W planes) over rows [h0, h1) and columns [w0, w1),
// added in row-major order as PyTorch's CPU pooling kernels add them.
float window_sum(const HostTensor& x, int64_t p, int64_t H, int64_t W, int64_t h0, int64_t h1,
                 int64_t w0, int64_t w1) {
  float sum = 0.0f;
  for (int64_t ih = h0; ih < h1; ++ih) {
    for (int64_t iw = w0; iw < w1; ++iw) sum += get_f32(x, (p * H + ih) * W + iw);
  }
  return sum;
}

}  // namespace

// aten.max_pool2d: PyTorch's output size (pooling_output_shape: with ceil_mode the last window
//   is dropped when it would start in the right padding), padding acts as -inf, taps are at
//   start + k * dilation, NaN wins; padding must be <= kernel / 2 as PyTorch requires.
std::vector<HostTensor> reference_max_pool2d(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  if (x.dtype != DType::Float32 && x.dtype != DType::Int8) {
    c.fail(ErrorCode::Unsupported, detail::concat("max_pool2d of ", to_string(x.dtype)));
  }
  c.require(x.shape.size() == 3 || x.shape.size() == 4, "input must have rank 3 or 4");
  const auto [kh, kw, sh, sw, ph, pw, dh, dw, ceil_mode] = read_pool_args(c);
  const size_t rank = x.shape.size();
  const int64_t H = x.shape[rank - 2], W = x.shape[rank - 1];
  const int64_t planes = element_count({x.shape.begin(), x.shape.end() - 2});
  const int64_t OH = pool_output_size(H, kh, sh, ph, dh, ceil_mode);
  const int64_t OW = pool_output_size(W, kw, sw, pw, dw, ceil_mode);
  HostTensor out = pool_output(c, x, OH, OW);
  const bool is_float = x.dtype == DType::Float32;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        float fmax = -std::numeric_limits<float>::infinity();
        int64_t imax = -128;
        for (int64_t i = 0; i < kh; ++i) {
          const int64_t ih = oh * sh - ph + i * dh;
          if (ih < 0 || ih >= H) continue;
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t iw = ow * sw - pw + j * dw;
            if (iw < 0 || iw >= W) continue;
            const int64_t src = (p * H + ih) * W + iw;
            if (is_float) {
              const float v = get_f32(x, src);
              if (v > fmax || std::isnan(v)) fmax = v;  // NaN wins, as in PyTorch
            } else {
              imax = std::max<int64_t>(imax, get_i8(x, src));
            }
          }
        }
        const int64_t dst = (p * OH + oh) * OW + ow;
        if (is_float) {
          set_f32(out, dst, fmax);
        } else {
          set_i8(out, dst, static_cast<int8_t>(imax));
        }
      }
    }
  }
  return {out};
}

// aten.avg_pool2d: PyTorch's output size (as max_pool2d's, dilation 1) and CPU kernel: along
//   each dim a window starts at o * stride - padding and ends at min(start + kernel, size +
//   padding); pool_size = the product of the two (end - start); both then clipped to the input.
//   The float32 sum of the window's input elements (row-major order) is divided by
//   float32(divisor): divisor_override if given, else pool_size (count_include_pad) or the
//   number of input elements in the window. Padding must be <= kernel / 2, divisor_override != 0.
std::vector<HostTensor> reference_avg_pool2d(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  c.expect_dtype(x, DType::Float32, "self");
  c.require(x.shape.size() == 3 || x.shape.size() == 4, "input must have rank 3 or 4");
  const PoolArgs a = read_pool_args(c);
  const bool include_pad = c.bool_arg("count_include_pad", true);
  const int64_t divisor_override =
      c.present("divisor_override") ? c.int_arg("divisor_override") : 0;
  c.require(!c.present("divisor_override") || divisor_override != 0,
            "divisor_override must not be 0");
  const size_t rank = x.shape.size();
  const int64_t H = x.shape[rank - 2], W = x.shape[rank - 1];
  const int64_t planes = element_count({x.shape.begin(), x.shape.end() - 2});
  const int64_t OH = pool_output_size(H, a.kh, a.sh, a.ph, 1, a.ceil_mode);
  const int64_t OW = pool_output_size(W, a.kw, a.sw, a.pw, 1, a.ceil_mode);
  HostTensor out = pool_output(c, x, OH, OW);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t h0 = oh * a.sh - a.ph, h1 = std::min(h0 + a.kh, H + a.ph);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t w0 = ow * a.sw - a.pw, w1 = std::min(w0 + a.kw, W + a.pw);
        const int64_t pool_size = (h1 - h0) * (w1 - w0);
        const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h1, H);
        const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w1, W);
        const int64_t divisor = divisor_override != 0 ? divisor_override
                                : include_pad         ? pool_size
                                                      : (he - hs) * (we - ws);
        const float sum = window_sum(x, p, H, W, hs, he, ws, we);
        set_f32(out, (p * OH + oh) * OW + ow, sum / static_cast<float>(divisor));
      }
    }
  }
  return {out};
}

// aten.mean.dim (any dims; empty list = all dims) and aten.adaptive_avg_pool2d to 1x1 (PyTorch
//   itself computes that as a mean over (-1, -2)): for each output element one float32
//   accumulator sums the reduced elements in row-major order of the input, then divides by the
//   element count (as a float32). PyTorch sums in a different (vectorized, cascaded) order, so
//   means agree with it to rounding, not bit for bit.
// aten.adaptive_avg_pool2d to another size: PyTorch's CPU kernel: output o of a dim averages
//   input [floor(o * in / out), ceil((o + 1) * in / out)); the float32 sum (row-major order) is
//   divided by float32(kh), then by float32(kw) (kh, kw the window's sizes), as PyTorch does.
std::vector<HostTensor> reference_mean_dim(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  if (c.present("dtype")) {
    c.require(c.dtype_arg("dtype") == DType::Float32, "dtype must be float32");
  }
  const std::vector<int64_t> dims = c.present("dim") ? c.ints_arg("dim") : std::vector<int64_t>{};
  return {mean_over(c, x, dims, c.bool_arg("keepdim", false))};
}

std::vector<HostTensor> reference_adaptive_avg_pool2d(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  const auto [OH, OW] = pair_arg(c, c.ints_arg("output_size"), "output_size");
  c.require(x.shape.size() == 3 || x.shape.size() == 4, "input must have rank 3 or 4");
  if (OH == 1 && OW == 1) return {mean_over(c, x, {-2, -1}, true)};
  c.expect_dtype(x, DType::Float32, "self");
  const size_t rank = x.shape.size();
  const int64_t H = x.shape[rank - 2], W = x.shape[rank - 1];
  const int64_t planes = element_count({x.shape.begin(), x.shape.end() - 2});
  HostTensor out = pool_output(c, x, OH, OW);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
        const float sum = window_sum(x, p, H, W, h0, h1, w0, w1);
        const float by_rows = sum / static_cast<float>(h1 - h0);
        set_f32(out, (p * OH + oh) * OW + ow, by_rows / static_cast<float>(w1 - w0));
      }
    }
  }
  return {out};
}

}  // namespace vkd::compiler

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

namespace vkd::compiler {

namespace {

// The input of a 2-d pool: float32 of rank 3 or 4.
const Value& pool_input(const ShapeContext& c) {
  const Value& x = c.in("self");
  c.dtype(x, "self", DType::Float32);
  const size_t rank = x.shape.size();
  if (rank != 3 && rank != 4) {
    c.fail(c.input_field("self"), "expected rank 3 or 4, got shape ", shape_str(x.shape));
  }
  return x;
}

// The output shape of max_pool2d / avg_pool2d (`dilation` 1 for avg_pool2d): kernel_size,
// stride (absent or empty: the kernel size), padding (at most half the kernel), ceil_mode.
std::vector<TypedShape> pool_window_shape(const ShapeContext& c, const Value& x,
                                          const std::vector<int64_t>& dilation) {
  const size_t rank = x.shape.size();
  const std::vector<int64_t> kernel = c.pair("kernel_size", 1);
  std::vector<int64_t> stride = kernel;
  if (arg_present(c.node(), "stride")) {
    std::vector<int64_t> s = c.ints("stride");
    if (!s.empty()) stride = c.checked_pair("stride", s, 1);
  }
  const std::vector<int64_t> padding =
      arg_present(c.node(), "padding") ? c.pair("padding", 0) : std::vector<int64_t>{0, 0};
  const bool ceil_mode = c.flag_or("ceil_mode", false);
  for (size_t i = 0; i < 2; ++i) {
    if (padding[i] > kernel[i] / 2) {
      c.fail(c.arg_field("padding"), "must be at most half of kernel_size ", shape_str(kernel),
             ", got ", shape_str(padding));
    }
  }
  std::vector<int64_t> out = x.shape;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t in = x.shape[rank - 2 + i];
    const int64_t o =
        pool_output_size(in, kernel[i], stride[i], padding[i], dilation[i], ceil_mode);
    if (o < 1) {
      c.fail(c.input_field("self"), "spatial size ", x.shape[rank - 2], "x", x.shape[rank - 1],
             " is too small for kernel_size ", shape_str(kernel), " with padding ",
             shape_str(padding), " and dilation ", shape_str(dilation));
    }
    out[rank - 2 + i] = o;
  }
  return {{DType::Float32, out}};
}

std::vector<TypedShape> max_pool2d(const ShapeContext& c) {
  const Value& x = pool_input(c);
  const std::vector<int64_t> dilation =
      arg_present(c.node(), "dilation") ? c.pair("dilation", 1) : std::vector<int64_t>{1, 1};
  return pool_window_shape(c, x, dilation);
}

std::vector<TypedShape> avg_pool2d(const ShapeContext& c) {
  const Value& x = pool_input(c);
  (void)c.flag_or("count_include_pad", true);
  if (arg_present(c.node(), "divisor_override") && c.i64("divisor_override") == 0) {
    c.fail(c.arg_field("divisor_override"), "must not be 0 (None for no override)");
  }
  return pool_window_shape(c, x, {1, 1});
}

std::vector<TypedShape> mean_dim(const ShapeContext& c) {
  const Value& x = c.in("self");
  c.dtype(x, "self", DType::Float32);
  c.rank(x, "self", 4);
  const std::vector<int64_t> dims = c.ints("dim");
  std::set<int64_t> norm;
  for (int64_t d : dims) norm.insert(d < 0 ? d + 4 : d);
  if (dims.size() != 2 || norm != std::set<int64_t>{2, 3}) {
    c.fail(c.arg_field("dim"), "only the spatial dims [-1, -2] / [2, 3] are supported, got ",
           shape_str(dims));
  }
  const bool keepdim = c.flag_or("keepdim", false);
  std::vector<int64_t> out = {x.shape[0], x.shape[1]};
  if (keepdim) {
    out.push_back(1);
    out.push_back(1);
  }
  return {{DType::Float32, out}};
}

std::vector<TypedShape> adaptive_avg_pool2d(const ShapeContext& c) {
  const Value& x = pool_input(c);
  const size_t rank = x.shape.size();
  const std::vector<int64_t> size = c.pair("output_size", 1);
  std::vector<int64_t> out = x.shape;
  out[rank - 2] = size[0];
  out[rank - 1] = size[1];
  return {{DType::Float32, out}};
}

// PyTorch's max_pool2d and avg_pool2d: an absent stride means the kernel size.
void default_stride_to_kernel_size(Args& args) {
  if (!args.count("stride")) args["stride"] = args.at("kernel_size");
}

}  // namespace

std::vector<EdgeOp> pool_edge_ops() {
  using V = std::vector<int64_t>;
  EdgeOp max_pool = {"aten.max_pool2d",
                     {"self"},
                     1,
                     {required_arg("kernel_size", Lit::Ints),
                      optional_arg("stride", Lit::Ints, std::nullopt, false),
                      optional_arg("padding", Lit::Ints, ArgValue(V{0, 0}), false),
                      optional_arg("dilation", Lit::Ints, ArgValue(V{1, 1}), false),
                      optional_arg("ceil_mode", Lit::Bool, ArgValue(false), false)},
                     1,
                     max_pool2d};
  max_pool.computed_by(reference_max_pool2d).fused_by(fusion::fuse_pool, {"q8ta_max_pool2d"});
  max_pool.complete_args = default_stride_to_kernel_size;
  EdgeOp avg_pool = {"aten.avg_pool2d",
                     {"self"},
                     1,
                     {required_arg("kernel_size", Lit::Ints),
                      optional_arg("stride", Lit::Ints, std::nullopt, false),
                      optional_arg("padding", Lit::Ints, ArgValue(V{0, 0}), false),
                      optional_arg("ceil_mode", Lit::Bool, ArgValue(false), false),
                      optional_arg("count_include_pad", Lit::Bool, ArgValue(true), false),
                      optional_arg("divisor_override", Lit::Int)},
                     1,
                     avg_pool2d};
  avg_pool.computed_by(reference_avg_pool2d).fused_by(fusion::fuse_pool, {"q8ta_avg_pool2d"});
  avg_pool.complete_args = default_stride_to_kernel_size;
  return {
      max_pool,
      avg_pool,
      EdgeOp{"aten.mean.dim",
             {"self"},
             1,
             {required_arg("dim", Lit::Ints),
              optional_arg("keepdim", Lit::Bool, ArgValue(false), false)},
             1,
             mean_dim}
          .computed_by(reference_mean_dim)
          .fused_by(fusion::fuse_pool, {"q8ta_mean", "q8ta_mean_flat"}),
      EdgeOp{"aten.adaptive_avg_pool2d",
             {"self"},
             1,
             {required_arg("output_size", Lit::Ints)},
             1,
             adaptive_avg_pool2d}
          .computed_by(reference_adaptive_avg_pool2d)
          .fused_by(fusion::fuse_pool, {"q8ta_mean", "q8ta_adaptive_avg_pool2d"}),
  };
}

}  // namespace vkd::compiler
