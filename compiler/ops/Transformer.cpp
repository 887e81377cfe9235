// The float ops of a transformer block as PyTorch's modules compute them: aten.layer_norm
// (nn.LayerNorm) and aten._native_multi_head_attention (nn.MultiheadAttention, the op its
// eval-mode fast path calls). No backend op yet: `vkd compile --partition` leaves them to the
// host, which runs their CPU references (compiler/reference/Transformer.cpp).
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <cstddef>

#include "compiler/ops/ShapeContext.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/Transformer.cpp.
std::vector<HostTensor> reference_layer_norm(const ReferenceContext& c);
std::vector<HostTensor> reference_multi_head_attention(const ReferenceContext& c);

namespace {

// float32 'input' whose last dims are normalized_shape (non-empty, each >= 1); 'weight' and
// 'bias', when given, float32 of normalized_shape. float32 of the input's shape.
std::vector<TypedShape> layer_norm(const ShapeContext& c) {
  const Value& x = c.in("input");
  c.dtype(x, "input", DType::Float32);
  const std::vector<int64_t> normalized = c.ints("normalized_shape");
  const bool fits = !normalized.empty() && normalized.size() <= x.shape.size() &&
                    std::equal(normalized.begin(), normalized.end(),
                               x.shape.end() - static_cast<std::ptrdiff_t>(normalized.size()));
  if (!fits) {
    c.fail(ShapeContext::arg_field("normalized_shape"), shape_str(normalized),
           " must be the last dims of the input ", shape_str(x.shape));
  }
  for (const char* name : {"weight", "bias"}) {
    if (const Value* v = c.opt_in(name)) {
      c.dtype(*v, name, DType::Float32);
      c.shape(*v, name, normalized, "(normalized_shape)");
    }
  }
  (void)c.opt_f64("eps");  // a number (the parser checks the literal kind)
  return {{DType::Float32, x.shape}};
}

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
      EdgeOp{"aten.layer_norm",
             {"input", "weight", "bias"},
             1,
             {required_arg("normalized_shape", Lit::Ints),
              optional_arg("eps", Lit::Number, ArgValue(1e-5), false),
              optional_arg("cudnn_enable", Lit::Bool, ArgValue(true), false)},
             1,
             layer_norm}
          .computed_by(reference_layer_norm),
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
