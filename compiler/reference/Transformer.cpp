// CPU reference of the transformer block's float ops: aten.layer_norm and
// aten._native_multi_head_attention (semantics above each function). Both compute in double
// from the float32 inputs and round each output once to float32; PyTorch computes in float32
// (its GEMMs, moments and softmax), so the two agree to a few float32 ulps of the values summed
// (the torch oracle checks 1e-5), not bit for bit.
#include "compiler/reference/Reference.h"

#include <cmath>
#include <string>
#include <vector>

#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

// aten.layer_norm(input, normalized_shape, weight, bias, eps): each row of the last
// prod(normalized_shape) elements is normalized by its own mean and biased variance:
//   y = (x - mean) / sqrt(var + eps) * weight + bias     (weight 1, bias 0 when absent)
// mean and var = mean((x - mean)^2) in double (two passes), as nn.LayerNorm defines them.
std::vector<HostTensor> reference_layer_norm(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "input");
  c.expect_dtype(x, DType::Float32, "input");
  const HostTensor* weight = c.optional_input(1, "weight");
  const HostTensor* bias = c.optional_input(2, "bias");
  const int64_t row = element_count(c.ints_arg("normalized_shape"));
  c.require(row > 0 && x.numel() % row == 0,
            "normalized_shape does not divide the input into rows");
  for (const HostTensor* t : {weight, bias}) {
    if (t != nullptr) {
      c.expect_dtype(*t, DType::Float32, "weight / bias");
      c.require(t->numel() == row, "weight / bias must have normalized_shape's elements");
    }
  }
  const double eps = c.float_arg("eps");
  HostTensor y = make_tensor(DType::Float32, x.shape);
  for (int64_t first = 0; first < x.numel(); first += row) {
    double mean = 0.0;
    for (int64_t i = 0; i < row; ++i) mean += get_f32(x, first + i);
    mean /= static_cast<double>(row);
    double var = 0.0;
    for (int64_t i = 0; i < row; ++i) {
      const double d = get_f32(x, first + i) - mean;
      var += d * d;
    }
    var /= static_cast<double>(row);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < row; ++i) {
      double v = (get_f32(x, first + i) - mean) * rstd;
      if (weight != nullptr) v *= get_f32(*weight, i);
      if (bias != nullptr) v += get_f32(*bias, i);
      set_f32(y, first + i, static_cast<float>(v));
    }
  }
  return {y};
}

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
