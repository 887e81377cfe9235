// The attention of a transformer block as PyTorch's module computes it:
// aten._native_multi_head_attention (nn.MultiheadAttention, the op its eval-mode fast path
// calls). No backend op yet: `vkd compile --partition` leaves it to the host, which runs its CPU
// reference (below). (aten.layer_norm, nn.LayerNorm's op, is compiler/ops/LayerNorm.cpp's.)
#include "compiler/ops/EdgeOp.h"

#include <cmath>
#include <string>
#include <vector>

#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of aten._native_multi_head_attention (semantics above the function). It computes
// in double from the float32 inputs and rounds each output once to float32; PyTorch computes in
// float32 (its GEMMs and softmax), so the two agree to a few float32 ulps of the values summed
// (the torch oracle checks 1e-5), not bit for bit.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// out[r, j] = sum_e in[r, e] * w[row0 + j, e] + b[row0 + j] for j < n: rows of a linear layer
// (PyTorch's weight layout [out, in]) over `in` [rows, e_in], in double.
std::vector<double> project(const std::vector<double>& in, int64_t rows, int64_t e_in,
                            const HostTensor& w, const HostTensor& b, int64_t row0, int64_t n) {
  std::vector<double> out(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = get_f32(b, row0 + j);
      for (int64_t e = 0; e < e_in; ++e) {
        acc += in[static_cast<size_t>(r * e_in + e)] * get_f32(w, (row0 + j) * e_in + e);
      }
      out[static_cast<size_t>(r * n + j)] = acc;
    }
  }
  return out;
}

std::vector<double> as_doubles(const HostTensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = get_f32(t, static_cast<int64_t>(i));
  return v;
}

}  // namespace

// aten._native_multi_head_attention(query [B, L, E], key [B, S, E], value [B, S, E], embed_dim
// E, num_head H, qkv_weight [3E, E], qkv_bias [3E], proj_weight [E, E], proj_bias [E],
// need_weights, average_attn_weights), what nn.MultiheadAttention computes in eval mode
// (dropout off), with D = E / H per head:
//   Q = query W_q^T + b_q, K = key W_k^T + b_k, V = value W_v^T + b_v  (W_q, W_k, W_v: the
//     rows 0..E-1, E..2E-1, 2E..3E-1 of qkv_weight; b likewise of qkv_bias)
//   P[b, h, l, s] = softmax over s of (Q[b, l, hD..hD+D-1] . K[b, s, hD..hD+D-1]) / sqrt(D)
//   ctx[b, l, hD + d] = sum_s P[b, h, l, s] V[b, s, hD + d]
//   out = ctx proj_weight^T + proj_bias
// and with need_weights the second output P, averaged over the heads (sum_h P / H, [B, L, S])
// when average_attn_weights, else [B, H, L, S]. All in double, each output rounded once.
std::vector<HostTensor> reference_multi_head_attention(const ReferenceContext& c) {
  const char* names[] = {"query",    "key",         "value",    "qkv_weight",
                         "qkv_bias", "proj_weight", "proj_bias"};
  std::vector<const HostTensor*> in;
  for (size_t i = 0; i < 7; ++i) {
    in.push_back(&c.input(i, names[i]));
    c.expect_dtype(*in.back(), DType::Float32, names[i]);
  }
  c.require(!c.has_input(7), "attention masks are not supported yet");
  const HostTensor &query = *in[0], &key = *in[1], &value = *in[2];
  c.require(query.shape.size() == 3 && key.shape.size() == 3 && value.shape == key.shape,
            "query must be [B, L, E], key and value [B, S, E]");
  const int64_t B = query.shape[0], L = query.shape[1], E = query.shape[2], S = key.shape[1];
  const int64_t H = c.int_arg("num_head");
  c.require(key.shape[0] == B && key.shape[2] == E && c.int_arg("embed_dim") == E && H >= 1 &&
                E % H == 0 && in[3]->numel() == 3 * E * E && in[4]->numel() == 3 * E &&
                in[5]->numel() == E * E && in[6]->numel() == E,
            "the shapes do not fit embed_dim and num_head");
  const int64_t D = E / H;
  const bool need_weights = c.bool_arg("need_weights", true);
  const bool average = c.bool_arg("average_attn_weights", true);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));

  HostTensor out = make_tensor(DType::Float32, {B, L, E});
  HostTensor weights = make_tensor(
      DType::Float32, average ? std::vector<int64_t>{B, L, S} : std::vector<int64_t>{B, H, L, S});
  const std::vector<double> xq = as_doubles(query), xk = as_doubles(key), xv = as_doubles(value);
  for (int64_t b = 0; b < B; ++b) {
    const auto rows = [&](const std::vector<double>& x, int64_t n) {
      return std::vector<double>(x.begin() + b * n * E, x.begin() + (b + 1) * n * E);
    };
    const std::vector<double> Q = project(rows(xq, L), L, E, *in[3], *in[4], 0, E);
    const std::vector<double> K = project(rows(xk, S), S, E, *in[3], *in[4], E, E);
    const std::vector<double> V = project(rows(xv, S), S, E, *in[3], *in[4], 2 * E, E);
    std::vector<double> ctx(static_cast<size_t>(L * E), 0.0);
    std::vector<double> avg(static_cast<size_t>(L * S), 0.0);
    std::vector<double> p(static_cast<size_t>(S));
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t l = 0; l < L; ++l) {
        double m = -INFINITY;
        for (int64_t s = 0; s < S; ++s) {
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) {
            dot += Q[static_cast<size_t>(l * E + h * D + d)] *
                   K[static_cast<size_t>(s * E + h * D + d)];
          }
          p[static_cast<size_t>(s)] = dot * scale;
          m = std::fmax(m, p[static_cast<size_t>(s)]);
        }
        double sum = 0.0;
        for (double& v : p) sum += v = std::exp(v - m);
        for (int64_t s = 0; s < S; ++s) {
          const double w = p[static_cast<size_t>(s)] / sum;
          const size_t at = static_cast<size_t>(h * D);
          for (size_t d = 0; d < static_cast<size_t>(D); ++d) {
            ctx[static_cast<size_t>(l * E) + at + d] += w * V[static_cast<size_t>(s * E) + at + d];
          }
          if (average) {
            avg[static_cast<size_t>(l * S + s)] += w;
          } else {
            set_f32(weights, ((b * H + h) * L + l) * S + s, static_cast<float>(w));
          }
        }
      }
    }
    const std::vector<double> y = project(ctx, L, E, *in[5], *in[6], 0, E);
    for (int64_t i = 0; i < L * E; ++i) {
      set_f32(out, b * L * E + i, static_cast<float>(y[static_cast<size_t>(i)]));
    }
    if (average) {
      for (int64_t i = 0; i < L * S; ++i) {
        set_f32(weights, b * L * S + i,
                static_cast<float>(avg[static_cast<size_t>(i)] / static_cast<double>(H)));
      }
    }
  }
  if (!need_weights) return {out};
  return {out, weights};
}

}  // namespace vkd::compiler

namespace vkd::compiler {

namespace {

// Batch-first float32 query [B, L, E], key and value [B, S, E]; qkv_weight [3E, E], qkv_bias
// [3E], proj_weight [E, E], proj_bias [E]; embed_dim E, a multiple of num_head. Outputs: the
// attention [B, L, E] and, with need_weights, the softmax weights: [B, L, S] averaged over the
// heads (average_attn_weights), else [B, num_head, L, S]. ATen's second output, an empty tensor
// without need_weights, is left out then. A mask is not supported yet.
std::vector<TypedShape> multi_head_attention(const ShapeContext& c) {
  const Value& q = c.in("query");
  c.dtype(q, "query", DType::Float32);
  c.rank(q, "query", 3);
  const int64_t B = q.shape[0], L = q.shape[1], E = q.shape[2];
  if (c.i64("embed_dim") != E) {
    c.fail(ShapeContext::arg_field("embed_dim"), c.i64("embed_dim"), " is not the query's ",
           shape_str(q.shape), " last dim");
  }
  const int64_t heads = c.i64("num_head");
  if (heads < 1 || E % heads != 0) {
    c.fail(ShapeContext::arg_field("num_head"), heads, " does not divide embed_dim ", E);
  }
  const Value& k = c.in("key");
  c.dtype(k, "key", DType::Float32);
  c.rank(k, "key", 3);
  if (k.shape[0] != B || k.shape[2] != E) {
    c.fail(c.input_field("key"), "shape ", shape_str(k.shape), " is not [", B, ", S, ", E,
           "] (the query's batch and embed_dim)");
  }
  const Value& v = c.in("value");
  c.dtype(v, "value", DType::Float32);
  c.shape(v, "value", k.shape, "(the key's shape)");
  const struct {
    const char* name;
    std::vector<int64_t> shape;
  } params[] = {{"qkv_weight", {3 * E, E}},
                {"qkv_bias", {3 * E}},
                {"proj_weight", {E, E}},
                {"proj_bias", {E}}};
  for (const auto& p : params) {
    const Value& t = c.in(p.name);
    c.dtype(t, p.name, DType::Float32);
    c.shape(t, p.name, p.shape, "(from embed_dim)");
  }
  if (c.opt_in("mask") != nullptr) {
    c.fail(c.input_field("mask"), "attention masks are not supported yet");
  }
  std::vector<TypedShape> out = {{DType::Float32, {B, L, E}}};
  if (c.flag_or("need_weights", true)) {
    const int64_t S = k.shape[1];
    out.push_back({DType::Float32, c.flag_or("average_attn_weights", true)
                                       ? std::vector<int64_t>{B, L, S}
                                       : std::vector<int64_t>{B, heads, L, S}});
  }
  return out;
}

}  // namespace

std::vector<EdgeOp> transformer_edge_ops() {
  return {
      EdgeOp{
          "aten._native_multi_head_attention",
          {"query", "key", "value", "qkv_weight", "qkv_bias", "proj_weight", "proj_bias", "mask"},
          7,
          {required_arg("embed_dim", Lit::Int), required_arg("num_head", Lit::Int),
           optional_arg("need_weights", Lit::Bool, ArgValue(true), false),
           optional_arg("average_attn_weights", Lit::Bool, ArgValue(true), false),
           optional_arg("mask_type", Lit::Int)},
          0,
          multi_head_attention}
          .computed_by(reference_multi_head_attention),
  };
}

}  // namespace vkd::compiler
