// aten.convolution and aten.linear (float; the quantized patterns around them are fused).
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/ops/ShapeFormulas.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of the float32 convolution and linear ops (semantics above each function). Built
// with -ffp-contract=off (compiler/CMakeLists.txt), so each float32 product and sum is rounded
// on its own, in the order written here.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// The (input, weight, optional bias) operands of a convolution or linear, all float32.
struct WeightedOperands {
  const HostTensor& x;
  const HostTensor& w;
  const HostTensor* b;
};

WeightedOperands float_weighted_operands(const ReferenceContext& c) {
  WeightedOperands o{c.input(0, "input"), c.input(1, "weight"), c.optional_input(2, "bias")};
  c.expect_dtype(o.x, DType::Float32, "input");
  c.expect_dtype(o.w, DType::Float32, "weight");
  if (o.b) c.expect_dtype(*o.b, DType::Float32, "bias");
  return o;
}

}  // namespace

namespace {

// The input index a transposed convolution's output `o` reads through tap `k` (o = i * stride
// - pad + k * dilation), or -1 when no input pixel lands there.
int64_t transposed_source(int64_t o, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                          int64_t in) {
  const int64_t num = o + pad - k * dilation;
  if (num < 0 || num % stride != 0 || num / stride >= in) return -1;
  return num / stride;
}

// aten.convolution with transposed = true (rank-4 NCHW; weight [C_in, C_out / groups, KH, KW]):
//   out[n,co,oy,ox] = sum + bias[co], sum one float32 accumulator from +0.0f adding
//   x[n,ci,iy,ix] * w[ci,co - g*Cout_g,ky,kx] (each product rounded to float32) for ci
//   ascending over group g's input channels, then ky, then kx ascending, over the taps whose
//   input pixel exists (oy = iy * stride_h - pad_h + ky * dilation_h, ox likewise); bias last.
//   H_out = (H - 1) * stride_h - 2 * pad_h + dilation_h * (KH - 1) + output_padding_h + 1.
std::vector<HostTensor> transposed_convolution(const ReferenceContext& c, const HostTensor& x,
                                               const HostTensor& w, const HostTensor* b) {
  const auto [sh, sw] = pair_arg(c, c.ints_arg("stride"), "stride");
  const auto [ph, pw] = pair_arg(c, c.ints_arg("padding"), "padding");
  const auto [dh, dw] = pair_arg(c, c.ints_arg("dilation"), "dilation");
  const auto [oph, opw] = pair_arg(c, c.ints_arg("output_padding"), "output_padding");
  const int64_t groups = c.int_arg("groups", 1);
  c.require(sh > 0 && sw > 0 && dh > 0 && dw > 0 && groups > 0,
            "stride, dilation and groups must be positive");
  c.require(ph >= 0 && pw >= 0 && oph >= 0 && opw >= 0, "padding must be non-negative");
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t COG = w.shape[1], KH = w.shape[2], KW = w.shape[3], CO = COG * groups;
  c.require(w.shape[0] == C && C % groups == 0,
            detail::concat("transposed weight ", shape_str(w.shape), " with groups ", groups,
                           " does not match input channels ", C));
  if (b)
    c.require(b->numel() == CO,
              detail::concat("bias has ", b->numel(), " elements, ", CO, " output channels"));
  const int64_t OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + oph + 1;
  const int64_t OW = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opw + 1;
  c.require(OH > 0 && OW > 0, "the padding leaves an empty output");
  const int64_t CIG = C / groups;
  const std::vector<float> xv = x.to_floats(), wv = w.to_floats();
  const std::vector<float> bv = b ? b->to_floats() : std::vector<float>{};
  std::vector<float> ov(static_cast<size_t>(N * CO * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t co = 0; co < CO; ++co) {
      const int64_t g = co / COG;
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          float acc = 0.0f;
          for (int64_t ci = g * CIG; ci < (g + 1) * CIG; ++ci)
            for (int64_t ky = 0; ky < KH; ++ky) {
              const int64_t iy = transposed_source(oy, ky, sh, ph, dh, H);
              if (iy < 0) continue;
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t ix = transposed_source(ox, kx, sw, pw, dw, W);
                if (ix < 0) continue;
                const float prod =
                    xv[static_cast<size_t>(((n * C + ci) * H + iy) * W + ix)] *
                    wv[static_cast<size_t>(((ci * COG + co - g * COG) * KH + ky) * KW + kx)];
                acc = acc + prod;
              }
            }
          if (b) acc = acc + bv[static_cast<size_t>(co)];
          ov[static_cast<size_t>(((n * CO + co) * OH + oy) * OW + ox)] = acc;
        }
    }
  return {HostTensor::from_floats({N, CO, OH, OW}, ov)};
}

}  // namespace

// aten.convolution (rank-4 NCHW, transposed = false; stride/padding/dilation: 1 or 2 ints):
//   out[n,co,oh,ow] = sum + bias[co], where sum is one float32 accumulator starting at +0.0f
//   that adds x * w (each product rounded to float32) for ci ascending over the group's input
//   channels, then kh ascending, then kw ascending; taps in the zero padding are skipped (they
//   would add +0 or -0, which cannot change a sum that starts at +0). Bias is added last.
std::vector<HostTensor> reference_convolution(const ReferenceContext& c) {
  const auto [x, w, b] = float_weighted_operands(c);
  if (x.shape.size() != 4 || w.shape.size() != 4) {
    c.fail(ErrorCode::Unsupported,
           detail::concat("only 2-D convolution (rank-4 input and weight) "
                          "is supported, got input ",
                          shape_str(x.shape), " and weight ", shape_str(w.shape)));
  }
  if (c.bool_arg("transposed", false)) return transposed_convolution(c, x, w, b);
  const auto [sh, sw] = pair_arg(c, c.ints_arg("stride"), "stride");
  const auto [ph, pw] = pair_arg(c, c.ints_arg("padding"), "padding");
  const auto [dh, dw] = pair_arg(c, c.ints_arg("dilation"), "dilation");
  const int64_t groups = c.int_arg("groups", 1);
  c.require(sh > 0 && sw > 0, "stride must be positive");
  c.require(dh > 0 && dw > 0, "dilation must be positive");
  c.require(ph >= 0 && pw >= 0, "padding must be non-negative");
  c.require(groups > 0, "groups must be positive");
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t CO = w.shape[0], CIG = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  c.require(CIG * groups == C, detail::concat("weight ", shape_str(w.shape), " with groups ",
                                              groups, " does not match input channels ", C));
  c.require(CO % groups == 0,
            detail::concat("output channels ", CO, " are not divisible by groups ", groups));
  if (b)
    c.require(b->numel() == CO,
              detail::concat("bias has ", b->numel(), " elements, ", CO, " output channels"));
  const int64_t eff_h = H + 2 * ph - dh * (KH - 1) - 1;
  const int64_t eff_w = W + 2 * pw - dw * (KW - 1) - 1;
  c.require(eff_h >= 0 && eff_w >= 0 && KH > 0 && KW > 0,
            "kernel (dilated) is larger than the padded input");
  const int64_t OH = eff_h / sh + 1, OW = eff_w / sw + 1;
  const int64_t COG = CO / groups;

  const std::vector<float> xv = x.to_floats(), wv = w.to_floats();
  const std::vector<float> bv = b ? b->to_floats() : std::vector<float>{};
  std::vector<float> ov(static_cast<size_t>(N * CO * OH * OW));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t co = 0; co < CO; ++co) {
      const int64_t g = co / COG;
      const float* wco = wv.data() + co * CIG * KH * KW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          float acc = 0.0f;
          for (int64_t cig = 0; cig < CIG; ++cig) {
            const float* xc = xv.data() + ((n * C) + g * CIG + cig) * H * W;
            const float* wc = wco + cig * KH * KW;
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t ih = oh * sh - ph + kh * dh;
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t iw = ow * sw - pw + kw * dw;
                if (iw < 0 || iw >= W) continue;
                const float prod = xc[ih * W + iw] * wc[kh * KW + kw];
                acc = acc + prod;
              }
            }
          }
          if (b) acc = acc + bv[co];
          ov[((n * CO + co) * OH + oh) * OW + ow] = acc;
        }
      }
    }
  }
  return {HostTensor::from_floats({N, CO, OH, OW}, ov)};
}

// aten.linear: y[..., n] = (sum over k ascending of x[..., k] * w[n, k], float32) + b[n].
std::vector<HostTensor> reference_linear(const ReferenceContext& c) {
  const auto [x, w, b] = float_weighted_operands(c);
  c.require(!x.shape.empty(), "input must have rank >= 1");
  c.require(w.shape.size() == 2, detail::concat("weight must be 2-D, got ", shape_str(w.shape)));
  const int64_t K = x.shape.back(), NO = w.shape[0];
  c.require(w.shape[1] == K, detail::concat("weight ", shape_str(w.shape), " does not match input ",
                                            shape_str(x.shape)));
  if (b)
    c.require(b->numel() == NO,
              detail::concat("bias has ", b->numel(), " elements, ", NO, " outputs"));
  const int64_t rows = element_count({x.shape.begin(), x.shape.end() - 1});
  const std::vector<float> xv = x.to_floats(), wv = w.to_floats();
  const std::vector<float> bv = b ? b->to_floats() : std::vector<float>{};
  std::vector<float> ov(static_cast<size_t>(rows * NO));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < NO; ++o) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        const float prod = xv[r * K + k] * wv[o * K + k];
        acc = acc + prod;
      }
      if (b) acc = acc + bv[o];
      ov[r * NO + o] = acc;
    }
  }
  std::vector<int64_t> shape(x.shape.begin(), x.shape.end() - 1);
  shape.push_back(NO);
  return {HostTensor::from_floats(shape, ov)};
}

}  // namespace vkd::compiler

namespace vkd::compiler {
// What the torchao affine references do not implement (compiler/ops/AffineQuant.cpp).
std::optional<std::string> affine_host_refusal(const Node& node);
}  // namespace vkd::compiler

// dq -> aten.linear | aten.convolution [-> act] -> q => q8ta_linear | q8ta_conv2d, or, when
// nothing quantized follows, the float-output q8ta_linear_dq | q8ta_conv2d_dq. A transposed
// convolution becomes q8ta_conv_transpose2d (quantized output only), its weight [C_in, C_out /
// groups, KH, KW] rewritten into q8ta_conv2d's order [C_out, C_in / groups, KH, KW] and its
// scales (per tensor, or per channel along axis 1) one per output channel. The weight must be a
// symmetric dequantization of an int8 constant (its dq node is folded away later).
namespace vkd::compiler::fusion {
namespace {

// The operands of a matching linear / convolution, all read before anything is built.
struct Operands {
  QuantInfo in_q;
  WeightFold weight;  // scales: one per output channel
  std::string bias;   // "" when absent: a zeros constant is made
  Args conv_args;     // stride, padding, dilation, groups (+ output_padding when transposed)
  bool transposed = false;
};

// "" when bias `b` is absent or a float32 constant of shape [out_channels].
std::string check_bias(const Graph& g, const std::string& b, int64_t out_channels) {
  if (b.empty()) return "";
  const Value& bv = g.value(b);
  if (!bv.is_constant() || bv.dtype != DType::Float32 || element_count(bv.shape) != out_channels ||
      bv.shape.size() != 1) {
    return "bias " + quoted(b) + " is not a float32 constant of shape [" +
           std::to_string(out_channels) + "]";
  }
  return "";
}

// aten.convolution's `transposed` (absent: false; a bool or an int), or "" in `why`.
std::string read_transposed(const Node& n, bool& transposed) {
  transposed = false;
  if (!arg_present(n, "transposed")) return "";
  const ArgValue& v = n.args.at("transposed");
  const bool* t = std::get_if<bool>(&v);
  const int64_t* ti = std::get_if<int64_t>(&v);
  if (!t && !ti) return "transposed is not a bool";
  transposed = t ? *t : *ti != 0;
  return "";
}

// A 2-D convolution's stride / padding / dilation (+ output_padding when transposed; one value
// meaning both) and groups.
std::string read_conv_args(const Graph& g, const Node& n, const Value& wq, bool transposed,
                           Args& conv_args) {
  const size_t rank = g.value(n.inputs[0]).shape.size();
  if (rank != 4 || wq.shape.size() != 4) {
    return "only 2-D convolution is supported (input rank " + std::to_string(rank) +
           ", weight rank " + std::to_string(wq.shape.size()) + ")";
  }
  std::vector<const char*> lists = {"stride", "padding", "dilation"};
  if (transposed) lists.push_back("output_padding");
  for (const char* name : lists) {
    auto list = opt_ints(n, name);
    if (!list) return std::string("missing or non-integer ") + name;
    if (list->size() == 1) list->push_back(list->front());
    if (list->size() != 2) {
      return std::string(name) + " has " + std::to_string(list->size()) +
             " values, expected 1 or 2";
    }
    conv_args[name] = *list;
  }
  const auto groups = arg_present(n, "groups") ? opt_int(n, "groups") : int64_t{1};
  if (!groups || *groups < 1) return "groups is not a positive integer";
  conv_args["groups"] = *groups;
  return "";
}

// A transposed convolution's per-index scales (along axis 1: C_out / groups of them) as one
// per output channel: channel co of group g takes index co - g * C_out / groups.
void scales_per_output_channel(WeightFold& w, int64_t groups) {
  const std::vector<float> per_group = w.scales;
  w.scales.clear();
  for (int64_t g = 0; g < groups; ++g) {
    w.scales.insert(w.scales.end(), per_group.begin(), per_group.end());
  }
}

// The weight, its scales (one per output channel) and the convolution's args.
std::string read_weight_and_args(const Graph& g, const Node& n, Operands& ops) {
  if (n.inputs.size() < 2) return "no weight";
  std::string why = n.op == kConv ? read_transposed(n, ops.transposed) : "";
  if (why.empty()) why = fold_weight(g, n.inputs[1], ops.weight, ops.transposed ? 1 : 0);
  if (!why.empty()) return why;
  const Value& wq = g.value(ops.weight.weight);
  if (n.op != kConv) {
    return wq.shape.size() == 2 ? ""
                                : "linear weight " + quoted(wq.name) + " has rank " +
                                      std::to_string(wq.shape.size()) + ", expected 2";
  }
  why = read_conv_args(g, n, wq, ops.transposed, ops.conv_args);
  if (why.empty() && ops.transposed) {
    scales_per_output_channel(ops.weight, std::get<int64_t>(ops.conv_args.at("groups")));
  }
  return why;
}

// Reads the operands of anchor `n` whose input dq is node `p`; "" or why they do not fit.
std::string read_operands(const Graph& g, const Node& n, int p, Operands& ops) {
  std::string why = check_activation_dq(g, g.nodes[p], p, ops.in_q);
  if (why.empty()) why = single_use(g, n.inputs[0]);
  if (why.empty()) why = read_weight_and_args(g, n, ops);
  if (!why.empty()) return why;
  ops.bias = n.inputs.size() > 2 ? n.inputs[2] : "";
  return check_bias(g, ops.bias, static_cast<int64_t>(ops.weight.scales.size()));
}

// PyTorch's transposed weight [C_in, C_out / groups, KH, KW] as a new int8 constant in
// q8ta_conv2d's order [C_out, C_in / groups, KH, KW]: out[co][i][ky][kx] = w[g * Cin_g + i]
// [co - g * Cout_g][ky][kx], g = co / Cout_g.
std::string swapped_weight(FuseState& state, const std::string& weight, int64_t groups) {
  const Value& w = state.graph.value(weight);
  const int64_t cin = w.shape[0], cout_g = w.shape[1], taps = w.shape[2] * w.shape[3];
  const int64_t cin_g = cin / groups;
  Value v;
  v.name = state.graph.unique_name(weight + "_oihw");
  v.dtype = DType::Int8;
  v.shape = {cout_g * groups, cin_g, w.shape[2], w.shape[3]};
  v.data = std::vector<uint8_t>(w.data->size());
  for (int64_t co = 0; co < cout_g * groups; ++co) {
    const int64_t g = co / cout_g;
    for (int64_t i = 0; i < cin_g; ++i) {
      for (int64_t t = 0; t < taps; ++t) {
        (*v.data)[static_cast<size_t>((co * cin_g + i) * taps + t)] =
            (*w.data)[static_cast<size_t>(((g * cin_g + i) * cout_g + co - g * cout_g) * taps + t)];
      }
    }
  }
  state.graph.add_value(v);
  return v.name;
}

// The backend node for anchor `i` (input dq `p`): quantized when `tail` is given, else the
// _dq variant writing the anchor's own float output. Adds the scales (and zero-bias) constants.
Node build_node(FuseState& state, int p, int i, const std::string& backend, const Tail* tail,
                const Operands& ops) {
  const Graph& g = state.graph;
  Node out;
  out.op = tail ? backend : backend + "_dq";
  const std::string output = tail ? g.nodes[tail->q].outputs[0] : g.nodes[i].outputs[0];
  const std::string x_q = g.nodes[p].inputs[0];
  const int64_t out_channels = static_cast<int64_t>(ops.weight.scales.size());
  const std::string weight =
      ops.transposed
          ? swapped_weight(state, ops.weight.weight, std::get<int64_t>(ops.conv_args.at("groups")))
          : ops.weight.weight;
  out.inputs = {x_q, weight, state.scales_constant(ops.weight),
                ops.bias.empty() ? state.zero_bias(output, out_channels) : ops.bias};
  out.args["input_scale"] = ops.in_q.scale;
  out.args["input_zero_point"] = ops.in_q.zero_point;
  for (auto& kv : ops.conv_args) out.args[kv.first] = kv.second;
  if (tail) {
    out.args["output_scale"] = tail->out_q.scale;
    out.args["output_zero_point"] = tail->out_q.zero_point;
    out.args["activation_min"] = tail->activation.min;
    out.args["activation_max"] = tail->activation.max;
    state.produced[output] = tail->out_q;
  }
  out.outputs = {output};
  out.origin = state.fused_origin(i, out.op);
  state.consume_quant(x_q, p, ops.in_q);
  return out;
}

// ---- torchao's int8 linears ------------------------------------------------------------
// Int8DynamicActivationInt8WeightConfig and Int8WeightOnlyConfig as the exporter writes them
// (python/vkdelegate/export/torchao_linear.py), the weight W' = dequantize_affine of an int8
// constant [N, K], block [1, K], one float32 scale per output channel, zero point none or 0:
//   (s, zp) = choose_qparams_affine(x); q = quantize_affine(x, s, zp);
//   x' = dequantize_affine(q, s, zp); aten.linear(x', W', b)           => q8da_linear
//     (all per row: block [1, ..., 1, K]; SYMMETRIC, a range whose zero point is 0). torchao
//     computes y = float(acc) * s_x[row] * s_w[n] + b with int32 acc; so does q8da_linear.
//   aten.linear(x, W', b), x float from anywhere else                   => q8csw_linear
//     (float activations times the int8 weights, float accumulation).

struct AffineLinear {
  std::vector<int> nodes;         // matched nodes, the linear last
  std::vector<std::string> dead;  // the values between them
  std::string x;                  // the float input
  WeightFold weight;              // dq = the weight's dequantize_affine
  int64_t quant_min = -128, quant_max = 127;
  double eps = 0;
};

bool is_per_row(const std::vector<int64_t>& block, const std::vector<int64_t>& shape) {
  if (block.size() != shape.size() || block.empty() || block.back() != shape.back()) return false;
  return std::all_of(block.begin(), block.end() - 1, [](int64_t b) { return b == 1; });
}

// An int8 range argument, absent / None meaning int8's.
int64_t affine_range(const Node& n, const char* name, int64_t fallback) {
  return arg_present(n, name) ? arg_int(n, name) : fallback;
}

// "" when node `d` dequantizes an int8 constant [N, K] per output channel, symmetrically (see
// above); fills `w`.
std::string read_affine_weight(const Graph& g, const Node& d, int at, WeightFold& w) {
  if (d.inputs.size() < 2 || d.inputs[1].empty()) return "the weight has no scale";
  const Value& q = g.value(d.inputs[0]);
  if (!q.is_constant() || q.dtype != DType::Int8 || q.shape.size() != 2) {
    return "weight " + quoted(q.name) + " is not a 2-D int8 constant";
  }
  const int64_t n = q.shape[0];
  if (const auto why = affine_host_refusal(d)) return "weight dequantize: " + *why;
  const auto block = opt_ints(d, "block_size");
  if (!block || !is_per_row(*block, q.shape)) {
    return "weight block_size " + (block ? shape_str(*block) : std::string("(none)")) +
           " is not [1, K] (one scale per output channel)";
  }
  const Value& s = g.value(d.inputs[1]);
  if (!s.is_constant() || s.dtype != DType::Float32 || element_count(s.shape) != n) {
    return "weight scale " + quoted(s.name) + " is not a float32 constant of " + std::to_string(n) +
           " values";
  }
  if (d.inputs.size() > 2 && !d.inputs[2].empty()) {
    const Value& zp = g.value(d.inputs[2]);
    if (!zp.is_constant() ||
        !std::all_of(zp.data->begin(), zp.data->end(), [](uint8_t b) { return b == 0; })) {
      return "weight zero point " + quoted(zp.name) + " is not all zeros (symmetric weights only)";
    }
  }
  w.dq = at;
  w.weight = q.name;
  w.scales.resize(static_cast<size_t>(n));
  std::memcpy(w.scales.data(), s.data->data(), w.scales.size() * sizeof(float));
  return "";
}

// "" when x' (the linear's input, dequantize_affine node `d`) is the per-row dynamic chain
// (see above); fills m's nodes, values, x and range.
std::string read_dynamic_chain(const Graph& g, int d, AffineLinear& m) {
  const Node& dq = g.nodes[d];
  if (dq.inputs.size() < 2) return "the activation dequantize has no scale";
  const std::string q = dq.inputs[0], s = dq.inputs[1];
  const std::string zp = dq.inputs.size() > 2 ? dq.inputs[2] : "";
  const int qn = g.producer(q), cn = g.producer(s);
  if (!node_is(g, qn, kQuantizeAffine)) return "the activation is not quantize_affine's";
  if (!node_is(g, cn, kChooseQparamsAffine)) {
    return "the activation scale is not choose_qparams_affine's (static quantization)";
  }
  m.nodes = {cn, qn, d};  // (named in a refusal too)
  const Node &quant = g.nodes[qn], &choose = g.nodes[cn];
  m.x = quant.inputs[0];
  const std::vector<std::string> qparams = {s, zp};
  if (choose.inputs[0] != m.x || choose.outputs.size() != 2 || zp.empty() ||
      choose.outputs[1] != zp || quant.inputs.size() < 3 || quant.inputs[1] != s ||
      quant.inputs[2] != zp) {
    return "quantize_affine and dequantize_affine do not use the scale and zero point "
           "choose_qparams_affine chose for the same input";
  }
  const std::vector<int64_t>& shape = g.value(m.x).shape;
  for (const Node* n : {&choose, &quant, &dq}) {
    if (const auto why = affine_host_refusal(*n)) return n->op + ": " + *why;
    const auto block = opt_ints(*n, "block_size");
    if (!block || !is_per_row(*block, shape)) {
      return n->op + " block_size is not per row ([1, ..., 1, K] of input " + shape_str(shape) +
             ")";
    }
  }
  std::string mapping = opt_string(choose, "mapping_type").value_or("");
  if (mapping.rfind("MappingType.", 0) == 0) mapping = mapping.substr(12);
  if (mapping != "SYMMETRIC") return "mapping_type " + quoted(mapping) + " (only SYMMETRIC)";
  m.quant_min = affine_range(choose, "quant_min", -128);
  m.quant_max = affine_range(choose, "quant_max", 127);
  for (const Node* n : {&quant, &dq}) {
    if (affine_range(*n, "quant_min", -128) != m.quant_min ||
        affine_range(*n, "quant_max", 127) != m.quant_max) {
      return n->op + " quantizes to another range than choose_qparams_affine chose for";
    }
  }
  // torchao's symmetric zero point int((quant_max + quant_min + 1) / 2) must be 0.
  if (m.quant_min < -128 || m.quant_max > 127 || m.quant_min >= m.quant_max ||
      (m.quant_min + m.quant_max + 1) / 2 != 0) {
    return "range [" + std::to_string(m.quant_min) + ", " + std::to_string(m.quant_max) +
           "] is not a symmetric int8 range (zero point 0)";
  }
  m.eps = arg_present(choose, "eps") ? arg_float(choose, "eps")
                                     : double{std::numeric_limits<float>::epsilon()};
  if (!(static_cast<float>(m.eps) > 0.0f)) return "eps must be > 0";
  std::string why = single_use(g, q);
  for (const std::string& v : qparams) {
    for (int c : g.consumers(v)) {
      if (c != qn && c != d) why = quoted(v) + " is also read by node " + std::to_string(c);
    }
    if (g.is_graph_output(v)) why = quoted(v) + " is a graph output";
  }
  if (!why.empty()) return why;
  m.dead = {s, zp, q, dq.outputs[0]};
  return "";
}

// Tries the torchao patterns on linear `i`; false when its weight is not a dequantize_affine
// (then the quantized_decomposed pattern gets it).
bool fuse_torchao_linear(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return false;
  const int wd = g.producer(n.inputs[1]);
  if (!node_is(g, wd, kDequantizeAffine)) return false;
  AffineLinear m;
  const int xd = g.producer(n.inputs[0]);
  const bool dynamic = node_is(g, xd, kDequantizeAffine);
  const std::string backend = dynamic ? "q8da_linear" : "q8csw_linear";
  const std::string chain =
      dynamic ? "choose_qparams_affine -> quantize_affine -> dequantize_affine -> aten.linear"
              : "aten.linear";
  std::vector<int> nodes = {wd, i};
  std::string why = read_affine_weight(g, g.nodes[wd], wd, m.weight);
  if (why.empty()) why = single_use(g, n.inputs[1]);
  if (why.empty() && dynamic) why = read_dynamic_chain(g, xd, m);
  if (why.empty() && dynamic) why = single_use(g, n.inputs[0]);
  if (!dynamic) m.x = n.inputs[0];
  const std::string bias = n.inputs.size() > 2 ? n.inputs[2] : "";
  if (why.empty()) why = check_bias(g, bias, static_cast<int64_t>(m.weight.scales.size()));
  m.nodes.push_back(wd);
  m.nodes.push_back(i);
  std::sort(m.nodes.begin(), m.nodes.end());
  if (why.empty() && state.any_claimed(m.nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) {
    state.not_fused(chain + " (weight dequantize_affine)", m.nodes, backend, why);
    return true;
  }
  if (!state.allowed(i, backend)) return true;
  Fusion f;
  f.nodes = m.nodes;
  f.dead = m.dead;
  f.dead.push_back(n.inputs[1]);
  const std::string output = n.outputs[0];
  f.node.op = backend;
  f.node.inputs = {m.x, m.weight.weight, state.scales_constant(m.weight),
                   bias.empty() ? state.zero_bias(output, int64_t(m.weight.scales.size())) : bias};
  if (dynamic) {
    f.node.args["quant_min"] = m.quant_min;
    f.node.args["quant_max"] = m.quant_max;
    f.node.args["eps"] = m.eps;
  }
  f.node.outputs = {output};
  f.node.origin = state.fused_origin(i, backend);
  state.commit(std::move(f), chain + " (weight dequantize_affine)",
               dynamic ? " (int8 activations quantized per row at run time)" : "");
  return true;
}

// ---- epilogues of a linear with no quantize after it --------------------------------------
// Where q8ta_linear_dq would write the linear's float output y, two chains take the linear's
// store instead (one dispatch, not two; off with --no-fuse-epilogue):
//   y -> aten.gelu (approximate 'none' or 'tanh') -> q, y and the gelu's output read by nothing
//   else => q8ta_linear_gelu: gelu(y) in float32, then q's quantize (runtime/ops/Linear.h; the
//   erf is an approximation, so within 1 of the unfused int8 value, at rounding ties only).
//   y -> [clone / eval identity]* -> aten.add.Tensor (alpha 1) with a float32 tensor of y's
//   sizes, each intermediate read by nothing else => q8ta_linear_dq_add: float32(y + other),
//   float_add's arithmetic bit for bit (float addition commutes: either operand order).
struct LinearEpilogue {
  std::string backend;            // "" = no epilogue chain follows
  std::string why;                // set: the chain was found but does not fit
  std::vector<int> nodes;         // the chain's nodes after the linear
  std::vector<std::string> dead;  // y and the values between
  std::string output;             // what the fused node writes
  std::string other;              // q8ta_linear_dq_add: the added tensor
  QuantInfo out_q;                // q8ta_linear_gelu: the quantize after the gelu
  int64_t approximate = 0;        // q8ta_linear_gelu: 0 erf, 1 tanh
};

constexpr char kGelu[] = "aten.gelu";

// The only consumer of `v`, or -1 (several, none, or a graph output).
int only_consumer(const Graph& g, const std::string& v) {
  if (!single_use(g, v).empty()) return -1;
  return g.consumers(v)[0];
}

LinearEpilogue match_gelu_epilogue(const Graph& g, const std::string& y, int c) {
  LinearEpilogue e;
  e.backend = "q8ta_linear_gelu";
  e.nodes = {c};
  e.dead = {y};
  const std::string approximate = opt_string(g.nodes[c], "approximate").value_or("none");
  if (approximate != "none" && approximate != "tanh") {
    e.why = "gelu approximate " + quoted(approximate) + " (only 'none' and 'tanh')";
    return e;
  }
  e.approximate = approximate == "tanh" ? 1 : 0;
  const std::string r = g.nodes[c].outputs.at(0);
  const std::string used = single_use(g, r);
  const int q = used.empty() ? g.consumers(r)[0] : -1;
  if (q < 0 || g.nodes[q].op != kQ) {
    e.why = (used.empty() ? describe_consumers(g, r) : used) +
            " (the fused GELU writes int8 for one quantize)";
    return e;
  }
  e.nodes.push_back(q);
  e.dead.push_back(r);
  e.why = check_q(g, g.nodes[q], q, e.out_q);
  e.output = g.nodes[q].outputs.at(0);
  return e;
}

LinearEpilogue match_add_epilogue(const Graph& g, const std::string& y, int c) {
  LinearEpilogue e;
  e.backend = "q8ta_linear_dq_add";
  std::string v = y;
  while (is_clone(g.nodes[c].op)) {
    e.nodes.push_back(c);
    e.dead.push_back(v);
    v = g.nodes[c].outputs.at(0);
    c = only_consumer(g, v);
    if (c < 0) return {};  // not this chain
  }
  if (g.nodes[c].op != kAdd || g.nodes[c].inputs.size() != 2) return {};
  const Node& add = g.nodes[c];
  e.nodes.push_back(c);
  e.dead.push_back(v);
  e.output = add.outputs.at(0);
  e.other = add.inputs[0] == v ? add.inputs[1] : add.inputs[0];
  const Value& other = g.value(e.other);
  const std::optional<double> alpha = opt_float(add, "alpha");
  if (arg_present(add, "alpha") && (!alpha || *alpha != 1.0)) {
    e.why = "alpha is not 1";
  } else if (e.other == v) {
    e.why = "both operands are the linear's output";
  } else if (other.dtype != DType::Float32) {
    e.why = quoted(e.other) + " is not float32";
  } else if (other.shape != g.value(v).shape) {
    e.why = quoted(e.other) + " " + shape_str(other.shape) +
            " is broadcast; the epilogue adds a tensor of the output's sizes " +
            shape_str(g.value(v).shape);
  }
  return e;
}

// The epilogue chain after linear `n`'s float output, when its only reader starts one.
LinearEpilogue match_linear_epilogue(const Graph& g, const Node& n) {
  const std::string& y = n.outputs.at(0);
  const int c = only_consumer(g, y);
  if (c < 0) return {};
  if (g.nodes[c].op == kGelu) return match_gelu_epilogue(g, y, c);
  if (g.nodes[c].op == kAdd || is_clone(g.nodes[c].op)) return match_add_epilogue(g, y, c);
  return {};
}

// Fuses linear `i` (input dq `p`, operands read) with epilogue chain `e`; false (reported
// where it was a near miss) when the chain does not fit, so the plain float output is fused.
bool fuse_linear_epilogue(FuseState& state, int p, int i, const Operands& ops,
                          const LinearEpilogue& e) {
  const Graph& g = state.graph;
  const std::string chain = state.chain_of({p}, i, e.nodes);
  std::vector<int> nodes = {p, i};
  nodes.insert(nodes.end(), e.nodes.begin(), e.nodes.end());
  std::string why = e.why;
  if (why.empty() && !state.options.fuse_epilogues) {
    why = "epilogue fusion is off (--no-fuse-epilogue)";
  }
  if (why.empty() && !state.may_target(e.backend)) why = "it has no kernel yet";
  if (why.empty() && state.any_claimed(nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) {
    state.not_fused(chain, nodes, e.backend, why);
    return false;
  }
  Fusion f;
  f.nodes = nodes;
  f.dead = {g.nodes[i].inputs[0]};
  f.dead.insert(f.dead.end(), e.dead.begin(), e.dead.end());
  f.folded = {g.nodes[i].inputs[1]};
  if (e.backend == "q8ta_linear_gelu") {
    Tail tail;
    tail.q = e.nodes.back();
    tail.out_q = e.out_q;
    tail.activation = Activation{"gelu", e.out_q.quant_min, e.out_q.quant_max};
    f.node = build_node(state, p, i, "q8ta_linear", &tail, ops);
    f.node.op = e.backend;
    f.node.args["approximate"] = e.approximate;
    f.node.origin = state.fused_origin(i, e.backend);
  } else {
    f.node = build_node(state, p, i, "q8ta_linear", nullptr, ops);
    f.node.op = e.backend;
    f.node.inputs.push_back(e.other);
    f.node.outputs = {e.output};
    f.node.origin = state.fused_origin(i, e.backend);
  }
  state.commit(std::move(f), chain, "");
  return true;
}

}  // namespace

void fuse_linear_conv(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.op == kLinear && fuse_torchao_linear(state, i)) return;
  bool transposed = false;  // a malformed flag reads as false here and is reported below
  if (n.op == kConv) (void)read_transposed(n, transposed);
  const std::string backend = n.op != kConv ? "q8ta_linear"
                              : transposed  ? "q8ta_conv_transpose2d"
                                            : "q8ta_conv2d";
  const std::optional<DqAnchor> m = state.match_dq_anchor(i, backend);
  if (!m) return;
  const Tail& tail = m->tail;
  const int p = m->dq;
  const std::string full_backend =
      tail.kind == Tail::None && !transposed ? backend + "_dq" : backend;
  auto fail = [&](const std::string& why) {
    state.not_fused(m->chain, m->nodes, full_backend, why);
  };

  Operands ops;
  const std::string why = read_operands(g, n, p, ops);
  if (!why.empty()) return fail(why);
  if (transposed && tail.kind != Tail::Ok) {
    return fail(tail.kind == Tail::Half ? tail.why
                                        : describe_consumers(g, n.outputs[0]) +
                                              " (q8ta_conv_transpose2d has no float-output "
                                              "variant)");
  }
  if (n.op == kLinear && tail.kind == Tail::None) {
    const LinearEpilogue e = match_linear_epilogue(g, n);
    if (!e.backend.empty() && fuse_linear_epilogue(state, p, i, ops, e)) return;
  }
  // Only the quantized tail failed: say why, then fuse the float-output variant.
  const bool quantized = tail.kind == Tail::Ok;
  if (tail.kind == Tail::Half) state.not_fused(m->chain, m->nodes, backend, tail.why);
  Fusion f;
  f.nodes = {p, i};
  if (quantized) f.nodes.insert(f.nodes.end(), tail.nodes.begin(), tail.nodes.end());
  if (state.any_claimed(f.nodes)) return fail("overlaps another fused pattern");
  f.dead = {m->x};
  if (quantized) f.dead.insert(f.dead.end(), tail.values.begin(), tail.values.end());
  f.folded = {n.inputs[1]};
  f.node = build_node(state, p, i, backend, quantized ? &tail : nullptr, ops);
  const std::string chain = state.chain_of({p}, i, quantized ? tail.nodes : std::vector<int>{});
  state.commit(std::move(f), chain,
               quantized ? " (activation " + tail.activation.label + ")" : std::string());
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

// aten.convolution with transposed = true: weight [C_in, C_out / groups, KH, KW], output
// (H - 1) * stride - 2 * padding + dilation * (KH - 1) + output_padding + 1 (W likewise), each
// output_padding smaller than its stride or dilation (PyTorch's rule).
std::vector<TypedShape> transposed_convolution(const ShapeContext& c, const Value& x,
                                               const Value& w) {
  const std::vector<int64_t> stride = c.pair("stride", 1);
  const std::vector<int64_t> padding = c.pair("padding", 0);
  const std::vector<int64_t> dilation = c.pair("dilation", 1);
  const std::vector<int64_t> output_padding = c.pair("output_padding", 0);
  const int64_t groups = c.i64("groups");
  if (groups < 1) c.fail(c.arg_field("groups"), "expected a value >= 1, got ", groups);
  const int64_t ch = x.shape[1];
  if (w.shape[0] != ch || ch % groups != 0) {
    c.fail(c.input_field("weight"), "expected [C_in = ", ch,
           ", C_out / groups, KH, KW] with C_in "
           "divisible by groups ",
           groups, " (transposed), got ", shape_str(w.shape));
  }
  const int64_t oc = w.shape[1] * groups;
  if (const Value* b = c.opt_in("bias")) {
    c.dtype(*b, "bias", DType::Float32);
    c.shape(*b, "bias", {oc}, "one per output channel");
  }
  std::vector<int64_t> out = {x.shape[0], oc, 0, 0};
  for (size_t i = 0; i < 2; ++i) {
    if (output_padding[i] >= std::max(stride[i], dilation[i])) {
      c.fail(c.arg_field("output_padding"), "must be smaller than either stride ",
             shape_str(stride), " or dilation ", shape_str(dilation), ", got ",
             shape_str(output_padding));
    }
    out[2 + i] = (x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] +
                 dilation[i] * (w.shape[2 + i] - 1) + output_padding[i] + 1;
  }
  if (out[2] < 1 || out[3] < 1) {
    c.fail(c.input_field("input"), "spatial size ", x.shape[2], "x", x.shape[3], " with padding ",
           shape_str(padding), " gives an empty output ", out[2], "x", out[3]);
  }
  return {{DType::Float32, out}};
}

std::vector<TypedShape> convolution(const ShapeContext& c) {
  const Value& x = c.in("input");
  const Value& w = c.in("weight");
  c.dtype(x, "input", DType::Float32);
  c.rank(x, "input", 4);
  c.dtype(w, "weight", DType::Float32);
  c.rank(w, "weight", 4);
  if (c.flag_or("transposed", false)) return transposed_convolution(c, x, w);
  const std::vector<int64_t> stride = c.pair("stride", 1);
  const std::vector<int64_t> padding = c.pair("padding", 0);
  const std::vector<int64_t> dilation = c.pair("dilation", 1);
  if (c.node().args.count("output_padding") != 0) (void)c.ints("output_padding");
  const int64_t groups = c.i64("groups");
  if (groups < 1) c.fail(c.arg_field("groups"), "expected a value >= 1, got ", groups);

  const int64_t n = x.shape[0], ch = x.shape[1], h = x.shape[2], wd = x.shape[3];
  const int64_t oc = w.shape[0];
  if (ch % groups != 0) {
    c.fail(c.input_field("input"), "input channels ", ch, " are not divisible by groups ", groups);
  }
  if (oc % groups != 0) {
    c.fail(c.input_field("weight"), "output channels ", oc, " are not divisible by groups ",
           groups);
  }
  if (w.shape[1] != ch / groups) {
    c.fail(c.input_field("weight"), "expected ", ch / groups,
           " input channels per group (input channels ", ch, " / groups ", groups, "), got ",
           w.shape[1], " (weight shape ", shape_str(w.shape), ")");
  }
  if (const Value* b = c.opt_in("bias")) {
    c.dtype(*b, "bias", DType::Float32);
    c.shape(*b, "bias", {oc}, "one per output channel");
  }
  const int64_t oh = conv_output_size(h, w.shape[2], stride[0], padding[0], dilation[0]);
  const int64_t ow = conv_output_size(wd, w.shape[3], stride[1], padding[1], dilation[1]);
  if (oh < 1 || ow < 1) {
    c.fail(c.input_field("input"), "spatial size ", h, "x", wd, " (padding ", shape_str(padding),
           ") is too small for kernel ", w.shape[2], "x", w.shape[3], " with dilation ",
           shape_str(dilation), ": output would be ", oh, "x", ow);
  }
  return {{DType::Float32, {n, oc, oh, ow}}};
}

std::vector<TypedShape> linear(const ShapeContext& c) {
  const Value& x = c.in("input");
  const Value& w = c.in("weight");
  c.dtype(x, "input", DType::Float32);
  c.dtype(w, "weight", DType::Float32);
  if (x.shape.empty()) c.fail(c.input_field("input"), "expected rank >= 1, got a scalar");
  c.rank(w, "weight", 2);
  const int64_t k = x.shape.back();
  if (w.shape[1] != k) {
    c.fail(c.input_field("weight"), "expected [N, ", k, "] (input features ", k, "), got ",
           shape_str(w.shape));
  }
  const int64_t out_features = w.shape[0];
  if (const Value* b = c.opt_in("bias")) {
    c.dtype(*b, "bias", DType::Float32);
    c.shape(*b, "bias", {out_features}, "one per output feature");
  }
  std::vector<int64_t> out = x.shape;
  out.back() = out_features;
  return {{DType::Float32, out}};
}

}  // namespace

std::vector<EdgeOp> conv_linear_edge_ops() {
  return {
      EdgeOp{"aten.convolution",
             {"input", "weight", "bias"},
             2,
             {required_arg("stride", Lit::Ints), required_arg("padding", Lit::Ints),
              required_arg("dilation", Lit::Ints), required_arg("transposed", Lit::Bool),
              required_arg("output_padding", Lit::Ints), required_arg("groups", Lit::Int)},
             1,
             convolution}
          .computed_by(reference_convolution)
          // _dw_pw[_add]: a depthwise match and the 1x1 match reading it, joined once every
          // pattern was matched, _pw_dw_pw[_add]: then the 1x1 expansion before them
          // (fusion/DepthwisePointwise.cpp); _ps_pw_q_dq: a 1x1 q8ta_conv2d_ps match and the
          // 1x1 q8ta_conv2d_q_dq match reading it (fusion/ShuffledHead.cpp)
          .fused_by(fusion::fuse_linear_conv,
                    {"q8ta_conv2d", "q8ta_conv2d_dq", "q8ta_conv_transpose2d", "q8ta_conv2d_dw_pw",
                     "q8ta_conv2d_dw_pw_add", "q8ta_conv2d_pw_dw_pw", "q8ta_conv2d_pw_dw_pw_add",
                     "q8ta_conv2d_ps_pw_q_dq"}),
      EdgeOp{"aten.linear", {"input", "weight", "bias"}, 2, {}, 1, linear}
          .computed_by(reference_linear)
          .fused_by(fusion::fuse_linear_conv,
                    {"q8ta_linear", "q8ta_linear_dq", "q8ta_linear_dq_add", "q8ta_linear_gelu",
                     "q8da_linear", "q8csw_linear"}),
  };
}

}  // namespace vkd::compiler
