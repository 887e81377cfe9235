// aten.scaled_dot_product_attention (F.scaled_dot_product_attention; what HF's BERT with
// attn_implementation="sdpa" exports). Its CPU reference runs it on the host; on int8 Q, K and V
// made by linears, with the head split and merge moves around it, it becomes one q8ta_attention.
#include "compiler/ops/EdgeOp.h"

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "compiler/ops/ShapeContext.h"
#include "compiler/ops/ShapeFormulas.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of aten.scaled_dot_product_attention(query [..., L, E], key [..., S, E], value
// [..., S, Ev], attn_mask, dropout_p, is_causal, scale, enable_gqa), PyTorch's math definition
// (the batch dims "..." of query, key, value and the mask broadcast like torch.matmul's):
//   s[l, j] = f32(f32(scale * (Q[l] . K[j])) + mask[l, j])        scale default 1 / sqrt(E)
//     mask: attn_mask broadcast to [..., L, S] (float32, additive); is_causal: -inf where j > l
//   P[l, j] = softmax over j of s[l, .] (max-subtracted); a row whose every s is -inf is all 0
//     (PyTorch's safe softmax, as its math and CPU flash kernels give)
//   out[l] = sum_j P[l, j] V[j]
// In double from the float32 inputs, each output rounded once to float32, except the score s,
// rounded to float32 (f32) as PyTorch's float32 score is: an additive mask of -10000 leaves it
// only float32's steps of ~1e-3 there, which a fully masked row's softmax sees (PyTorch computes
// the rest in float32 too: the torch oracle checks 1e-5). dropout_p must be 0 (the reference is
// inference) and enable_gqa false; is_causal with a mask is refused, as PyTorch refuses it. The
// graph IR has no bool dtype, so a bool mask reaches the compiler only as the float additive mask
// it stands for.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// Element offset of batch index `idx` (of the broadcast batch shape `batch`) in a tensor whose
// leading dims are `dims` (right-aligned against `batch`; a dim of 1 repeats), given the number
// of elements `inner` of one matrix of that tensor.
int64_t batch_offset(const std::vector<int64_t>& idx, const std::vector<int64_t>& batch,
                     const std::vector<int64_t>& dims, int64_t inner) {
  int64_t offset = 0, stride = inner;
  for (size_t k = 0; k < dims.size(); ++k) {
    const size_t d = dims.size() - 1 - k, b = batch.size() - 1 - k;
    if (dims[d] != 1) offset += idx[b] * stride;
    stride *= dims[d];
  }
  return offset;
}

std::vector<int64_t> leading(const std::vector<int64_t>& shape, size_t keep_last) {
  return std::vector<int64_t>(shape.begin(), shape.end() - static_cast<std::ptrdiff_t>(keep_last));
}

}  // namespace

std::vector<HostTensor> reference_scaled_dot_product_attention(const ReferenceContext& c) {
  const HostTensor& q = c.input(0, "query");
  const HostTensor& k = c.input(1, "key");
  const HostTensor& v = c.input(2, "value");
  const HostTensor* mask = c.optional_input(3, "attn_mask");
  for (const HostTensor* t : {&q, &k, &v}) c.expect_dtype(*t, DType::Float32, "query/key/value");
  if (mask != nullptr) c.expect_dtype(*mask, DType::Float32, "attn_mask");
  c.require(!c.present("dropout_p") || c.float_arg("dropout_p") == 0.0,
            "dropout_p must be 0 (inference: no dropout)");
  c.require(!c.bool_arg("enable_gqa", false), "enable_gqa is not supported");
  const bool causal = c.bool_arg("is_causal", false);
  c.require(!(causal && mask != nullptr), "is_causal and attn_mask cannot both be given");
  c.require(q.shape.size() >= 2 && k.shape.size() >= 2 && v.shape.size() >= 2,
            "query, key and value must have rank >= 2");
  const int64_t L = q.shape.end()[-2], E = q.shape.back();
  const int64_t S = k.shape.end()[-2], Ev = v.shape.back();
  c.require(k.shape.back() == E && v.shape.end()[-2] == S,
            "key must be [..., S, E] and value [..., S, Ev] for a query [..., L, E]");
  std::vector<int64_t> batch;
  const bool fits = broadcast_shapes(leading(q.shape, 2), leading(k.shape, 2), &batch) &&
                    broadcast_shapes(batch, leading(v.shape, 2), &batch);
  c.require(fits, "the batch dims of query, key and value do not broadcast");
  std::vector<int64_t> mask_batch;
  if (mask != nullptr) {
    std::vector<int64_t> scores = batch, joined;
    scores.push_back(L);
    scores.push_back(S);
    c.require(broadcast_shapes(scores, mask->shape, &joined) && joined == scores,
              "attn_mask does not broadcast to the scores [..., L, S]");
    std::vector<int64_t> m = mask->shape;
    while (m.size() < 2) m.insert(m.begin(), 1);
    mask_batch = leading(m, 2);
  }
  const double scale =
      c.present("scale") ? c.float_arg("scale") : 1.0 / std::sqrt(static_cast<double>(E));
  std::vector<int64_t> out_shape = batch;
  out_shape.push_back(L);
  out_shape.push_back(Ev);
  HostTensor out = make_tensor(DType::Float32, out_shape);
  const int64_t batches = element_count(batch);
  // Where a mask row's element j lies: [L or 1, S or 1] after its batch dims.
  const int64_t mask_l = mask == nullptr || mask->shape.size() < 2 ? 1 : mask->shape.end()[-2];
  const int64_t mask_s = mask == nullptr ? 1 : mask->shape.back();
  std::vector<int64_t> idx(batch.size());
  std::vector<double> s(static_cast<size_t>(S));
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t r = b, d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      idx[static_cast<size_t>(d)] = r % batch[static_cast<size_t>(d)];
      r /= batch[static_cast<size_t>(d)];
    }
    const int64_t q0 = batch_offset(idx, batch, leading(q.shape, 2), L * E);
    const int64_t k0 = batch_offset(idx, batch, leading(k.shape, 2), S * E);
    const int64_t v0 = batch_offset(idx, batch, leading(v.shape, 2), S * Ev);
    const int64_t m0 = mask == nullptr ? 0 : batch_offset(idx, batch, mask_batch, mask_l * mask_s);
    for (int64_t l = 0; l < L; ++l) {
      double m = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0.0;
        for (int64_t e = 0; e < E; ++e) {
          dot += static_cast<double>(get_f32(q, q0 + l * E + e)) * get_f32(k, k0 + j * E + e);
        }
        // The score is a float32 in PyTorch; a -10000 mask keeps only its ~1e-3 steps.
        double x = static_cast<float>(dot * scale);
        if (mask != nullptr) {
          const int64_t at = m0 + (mask_l == 1 ? 0 : l) * mask_s + (mask_s == 1 ? 0 : j);
          x = static_cast<float>(x + get_f32(*mask, at));
        }
        if (causal && j > l) x = -INFINITY;
        s[static_cast<size_t>(j)] = x;
        if (x > m || std::isnan(x)) m = x;
      }
      double sum = 0.0;
      if (m != -INFINITY) {
        for (double& x : s) sum += x = std::exp(x - m);
      }
      for (int64_t e = 0; e < Ev; ++e) {
        double acc = 0.0;
        if (m != -INFINITY) {
          for (int64_t j = 0; j < S; ++j)
            acc += s[static_cast<size_t>(j)] * get_f32(v, v0 + j * Ev + e);
          acc /= sum;
        }
        set_f32(out, (b * L + l) * Ev + e, static_cast<float>(acc));
      }
    }
  }
  return {out};
}

}  // namespace vkd::compiler

namespace vkd::compiler {

namespace {

// float32 query [..., L, E], key [..., S, E], value [..., S, Ev] (rank >= 2, batch dims
// broadcasting), an optional float32 attn_mask broadcasting to [..., L, S]; float32 [..., L, Ev].
// dropout_p 0, enable_gqa false, not is_causal together with a mask.
std::vector<TypedShape> scaled_dot_product_attention(const ShapeContext& c) {
  const Value& q = c.in("query");
  const Value& k = c.in("key");
  const Value& v = c.in("value");
  const struct {
    const Value& value;
    const char* name;
  } qkv[] = {{q, "query"}, {k, "key"}, {v, "value"}};
  for (const auto& t : qkv) {
    c.dtype(t.value, t.name, DType::Float32);
    if (t.value.shape.size() < 2) {
      c.fail(c.input_field(t.name), "rank ", t.value.shape.size(), " (expected rank >= 2)");
    }
  }
  const int64_t L = q.shape.end()[-2], E = q.shape.back(), S = k.shape.end()[-2];
  if (k.shape.back() != E || v.shape.end()[-2] != S) {
    c.fail(c.input_field("key"), "key ", shape_str(k.shape), " and value ", shape_str(v.shape),
           " must be [..., S, ", E, "] and [..., S, Ev] for the query ", shape_str(q.shape));
  }
  std::vector<int64_t> batch;
  const bool fits = broadcast_shapes(leading(q.shape, 2), leading(k.shape, 2), &batch) &&
                    broadcast_shapes(batch, leading(v.shape, 2), &batch);
  if (!fits) {
    c.fail(c.input_field("value"), "the batch dims of query ", shape_str(q.shape), ", key ",
           shape_str(k.shape), " and value ", shape_str(v.shape), " do not broadcast");
  }
  std::vector<int64_t> scores = batch;
  scores.push_back(L);
  scores.push_back(S);
  if (const Value* mask = c.opt_in("attn_mask")) {
    c.dtype(*mask, "attn_mask", DType::Float32);
    std::vector<int64_t> joined;
    if (!broadcast_shapes(scores, mask->shape, &joined) || joined != scores) {
      c.fail(c.input_field("attn_mask"), "shape ", shape_str(mask->shape),
             " does not broadcast to the scores ", shape_str(scores));
    }
    if (c.flag_or("is_causal", false)) {
      c.fail(ShapeContext::arg_field("is_causal"), "true together with an attn_mask");
    }
  }
  const std::optional<double> dropout = c.opt_f64("dropout_p");
  if (dropout && *dropout != 0.0) {
    c.fail(ShapeContext::arg_field("dropout_p"), *dropout, " must be 0 (inference: no dropout)");
  }
  if (c.flag_or("enable_gqa", false)) {
    c.fail(ShapeContext::arg_field("enable_gqa"), "true is not supported");
  }
  (void)c.opt_f64("scale");  // a number or None (the parser checks the literal kind)
  std::vector<int64_t> out = batch;
  out.push_back(L);
  out.push_back(v.shape.back());
  return {{DType::Float32, out}};
}

}  // namespace

std::vector<EdgeOp> attention_edge_ops() {
  return {
      EdgeOp{"aten.scaled_dot_product_attention",
             {"query", "key", "value", "attn_mask"},
             3,
             {optional_arg("dropout_p", Lit::Number, ArgValue(0.0), false),
              optional_arg("is_causal", Lit::Bool, ArgValue(false), false),
              optional_arg("scale", Lit::Number),
              optional_arg("enable_gqa", Lit::Bool, ArgValue(false), false)},
             1,
             scaled_dot_product_attention}
          .computed_by(reference_scaled_dot_product_attention),
  };
}

}  // namespace vkd::compiler
