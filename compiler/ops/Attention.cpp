// aten.scaled_dot_product_attention (F.scaled_dot_product_attention; what HF's BERT with
// attn_implementation="sdpa" exports). Its CPU reference runs it on the host; on int8 Q, K and V
// made by linears, with the head split and merge moves around it, it becomes one q8ta_attention
// (on float32 ones the float attention).
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/FuseState.h"
#include "compiler/fusion/Match.h"
#include "compiler/fusion/MoveChain.h"
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

// The head split, attention and head merge of HF's BERT (attn_implementation="sdpa") and of
// F.scaled_dot_product_attention blocks, on PT2E's reference-quantized graph:
//   per Q, K, V: int8 [B, T, H*D] (a linear's output) -> dq -> view_copy [B, T, H, D] -> q/dq
//     -> transpose_copy(1, 2) -> q -> dq  (moves with q/dq pairs between them: MoveChain)
//   aten.scaled_dot_product_attention(q, k, v, mask) -> q
//   -> dq -> [view_copy [B, H, T, D]] -> transpose_copy(1, 2) -> q/dq -> view_copy [B, T, H*D] -> q
// => one q8ta_attention reading the three int8 [B, T, H*D] values (head h = columns h*D ..
// h*D+D-1: the moves become which words the kernel reads) and writing the merged int8 output.
// Each side's moves must only move bytes (one quantization along each chain, its dq's too),
// and must move them exactly as the head split / merge does (checked element by element); the
// mask must be float32 broadcasting as [1 or B, 1, 1 or Tq, Tk] (no mask: a zeros constant);
// is_causal the kernel's own flag; no dropout. A mask made by one or two float steps
// aten.rsub.Scalar / aten.mul.Scalar (BERT's (1 - mask) * -10000), then views, from a float32
// value holding the same elements as the mask in the same order, is made in the kernel instead
// (q8ta_attention_mask_affine reads that value: the same float32 steps, bit for bit); the last
// attention reading the chain takes its nodes when every other reader took the made form. The
// kernel computes what the reference computes on the dequantized values within float32 rounding
// (runtime/ops/Attention.h): not bit for bit, within one step of the int8 output where it lies next
// to a rounding boundary. On float32 data (Q, K, V each the end of moves alone, from a float32 [B,
// T, H*D] value; the output's moves alone into [B, Tq, H*D]; heads up to 64 columns) the same chain
// becomes the float op `attention`, within float32 rounding of the reference.
namespace vkd::compiler::fusion {
namespace {

constexpr const char* kAttention = "q8ta_attention";
constexpr const char* kMaskAffine = "q8ta_attention_mask_affine";
constexpr const char* kRsubScalar = "aten.rsub.Scalar";
constexpr const char* kMulScalar = "aten.mul.Scalar";
constexpr const char* kFloatAttention = "attention";

// The flat (C-order) index of the element of a tensor of `from` shape that `moves` (data
// order; views keep flat indices, permutes reorder them) put at every flat index of their
// output.
std::vector<int64_t> moved_sources(const Graph& g, const std::vector<int>& moves, int64_t numel) {
  std::vector<int64_t> src(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) src[static_cast<size_t>(i)] = i;
  for (int k : moves) {
    const Node& n = g.nodes[k];
    if (!is_permute(n.op)) continue;  // a view or a clone: the flat order stays
    const std::vector<int64_t>& in = g.value(n.inputs[0]).shape;
    const std::vector<int64_t> dims = permutation_of(g, n);
    std::vector<int64_t> out_shape(in.size()), in_strides(in.size(), 1), next(src.size());
    for (size_t d = in.size(); d-- > 1;) in_strides[d - 1] = in_strides[d] * in[d];
    for (size_t d = 0; d < in.size(); ++d) out_shape[d] = in[static_cast<size_t>(dims[d])];
    for (int64_t i = 0; i < numel; ++i) {  // output element i reads input element j
      int64_t rest = i, j = 0;
      for (size_t d = in.size(); d-- > 0;) {
        j += (rest % out_shape[d]) * in_strides[static_cast<size_t>(dims[d])];
        rest /= out_shape[d];
      }
      next[static_cast<size_t>(i)] = src[static_cast<size_t>(j)];
    }
    src.swap(next);
  }
  return src;
}

// Attention's sizes, read off the SDPA node's query [B, H, Tq, D] and key [B, H, Tk, D].
struct Heads {
  int64_t batch = 0, heads = 0, tq = 0, tk = 0, dim = 0;
  std::string describe() const {
    return std::to_string(heads) + " heads of " + std::to_string(dim);
  }
};

// Whether `sources` maps [B, H, T, D] (the SDPA side) to [B, T, H*D] (the int8 side) as the
// head split does: `split` true when `sources` is indexed by the SDPA side (the split of an
// input), false when by the int8 side (the merge of the output).
bool moves_heads(const std::vector<int64_t>& sources, const Heads& h, int64_t t, bool split) {
  const int64_t H = h.heads, D = h.dim;
  for (int64_t b = 0, at = 0; b < h.batch; ++b) {
    for (int64_t x = 0; x < H; ++x) {
      for (int64_t y = 0; y < t; ++y) {
        for (int64_t d = 0; d < D; ++d, ++at) {
          const int64_t merged = ((b * t + y) * H + x) * D + d, heads = at;
          const bool ok = split ? sources[static_cast<size_t>(heads)] == merged
                                : sources[static_cast<size_t>(merged)] == heads;
          if (!ok) return false;
        }
      }
    }
  }
  return true;
}

// One side of the pattern: the [B, T, H*D] value it reads or writes (int8, or float32 for the
// float op), its quantization (int8), the nodes it covers and the values that go with them.
struct HeadSide {
  std::string value;
  QuantInfo q;
  std::vector<int> nodes, chain_nodes;
  std::vector<std::string> dead;
};

// The head split feeding SDPA input `x` (a dq's float output): "" or why it does not fit.
std::string match_split(const Graph& g, const std::string& x, const Heads& h, int64_t t,
                        const char* what, HeadSide& side) {
  const std::string prefix = std::string(what) + ": ";
  const int dq = g.producer(x);
  std::string why = single_use(g, x);
  if (!why.empty()) return prefix + why;
  QuantInfo read_as;
  why = check_activation_dq(g, g.nodes[dq], dq, read_as);
  if (!why.empty()) return prefix + why;
  const std::string& x_q = g.nodes[dq].inputs[0];
  const int q = g.producer(x_q);
  const int move = node_is(g, q, kQ) ? g.producer(g.nodes[q].inputs[0]) : -1;
  const std::optional<MoveChain> c = move >= 0 ? find_move_chain(g, move) : std::nullopt;
  if (!c || !c->float_domain() || c->q != q) {
    return prefix + "not a head split (dq -> view_copy -> transpose_copy -> q, one reader each)";
  }
  why = single_use(g, x_q);
  QuantInfo in, out;
  if (why.empty()) why = check_chain_quantization(g, *c, in, out);
  if (why.empty()) why = check_round_trip(in, out);
  if (why.empty()) why = check_round_trip(in, read_as);
  if (!why.empty()) return prefix + why;
  const std::vector<int64_t> want = {h.batch, t, h.heads * h.dim};
  if (g.value(c->source).shape != want) {
    return prefix + quoted(c->source) + " is " + shape_str(g.value(c->source).shape) +
           ", not the " + shape_str(want) + " the heads split";
  }
  if (!moves_heads(moved_sources(g, c->moves, element_count(want)), h, t, true)) {
    return prefix + "the moves do not split " + shape_str(want) + " into [B, H, T, D] heads";
  }
  side.value = c->source;
  side.q = in;
  side.chain_nodes = c->nodes;
  side.nodes = c->nodes;
  side.nodes.push_back(dq);
  side.dead = c->dead;
  side.dead.insert(side.dead.end(), {x_q, x});
  return "";
}

// The quantize of the SDPA output `y` and the head merge after it: "" or why they do not fit.
std::string match_merge(const Graph& g, const std::string& y, const Heads& h, HeadSide& side) {
  std::string why = single_use(g, y);
  const int q = why.empty() ? g.consumers(y)[0] : -1;
  if (why.empty() && !node_is(g, q, kQ))
    why = "its output is not quantized (" + describe_consumers(g, y) + ")";
  QuantInfo out_q;
  if (why.empty()) why = check_q(g, g.nodes[q], q, out_q);
  if (why.empty() && (out_q.quant_min != -128 || out_q.quant_max != 127)) {
    why = "the output's quantize narrows the int8 range (" + describe_quant(out_q) + ")";
  }
  if (!why.empty()) return "output: " + why;
  const std::string& y_q = g.nodes[q].outputs[0];
  why = single_use(g, y_q);
  const int dq = why.empty() ? g.consumers(y_q)[0] : -1;
  const std::string merged = node_is(g, dq, kDq) ? g.nodes[dq].outputs[0] : "";
  const int move = !merged.empty() && single_use(g, merged).empty() ? g.consumers(merged)[0] : -1;
  const std::optional<MoveChain> c = move >= 0 ? find_move_chain(g, move) : std::nullopt;
  if (!why.empty() || !c || c->dq != dq || c->q < 0) {
    return "output: not a head merge (q -> dq -> transpose_copy -> view_copy -> q, one reader "
           "each)";
  }
  QuantInfo in, out;
  why = check_chain_quantization(g, *c, in, out);
  if (why.empty()) why = check_round_trip(out_q, in);
  if (why.empty()) why = check_round_trip(in, out);
  if (!why.empty()) return "output: " + why;
  const std::vector<int64_t> want = {h.batch, h.tq, h.heads * h.dim};
  if (g.value(c->output).shape != want) {
    return "output: " + quoted(c->output) + " is " + shape_str(g.value(c->output).shape) +
           ", not the " + shape_str(want) + " the heads merge into";
  }
  if (!moves_heads(moved_sources(g, c->moves, element_count(want)), h, h.tq, false)) {
    return "output: the moves do not merge the [B, H, T, D] heads into " + shape_str(want);
  }
  side.value = c->output;
  side.q = out_q;
  side.chain_nodes = c->nodes;
  side.nodes = {q};
  side.nodes.insert(side.nodes.end(), c->nodes.begin(), c->nodes.end());
  side.dead = {y, y_q};
  side.dead.insert(side.dead.end(), c->dead.begin(), c->dead.end());
  return "";
}

// The float op's head split feeding SDPA input `x`: moves alone (views, transposes, clones),
// each intermediate read once, from a float32 [B, T, H*D] value. "" or why it does not fit.
std::string match_float_split(const Graph& g, const std::string& x, const Heads& h, int64_t t,
                              const char* what, HeadSide& side) {
  const std::string prefix = std::string(what) + ": ";
  std::vector<int> moves;
  std::string v = x;
  while (is_data_movement(g.nodes[static_cast<size_t>(std::max(g.producer(v), 0))].op) &&
         g.producer(v) >= 0 && single_use(g, v).empty()) {
    moves.insert(moves.begin(), g.producer(v));
    side.dead.push_back(v);
    v = g.nodes[moves.front()].inputs[0];
  }
  const std::vector<int64_t> want = {h.batch, t, h.heads * h.dim};
  if (moves.empty())
    return prefix + "not a head split (view_copy -> transpose_copy, one reader each)";
  if (g.value(v).dtype != DType::Float32 || g.value(v).shape != want) {
    return prefix + quoted(v) + " is not the float32 " + shape_str(want) + " the heads split";
  }
  if (!moves_heads(moved_sources(g, moves, element_count(want)), h, t, true)) {
    return prefix + "the moves do not split " + shape_str(want) + " into [B, H, T, D] heads";
  }
  side.value = v;
  side.nodes = moves;
  return "";
}

// The float op's head merge reading the SDPA output `y`: moves alone, each intermediate read
// once, into a float32 [B, Tq, H*D] value. "" or why it does not fit.
std::string match_float_merge(const Graph& g, const std::string& y, const Heads& h,
                              HeadSide& side) {
  std::string v = y;
  while (single_use(g, v).empty() && is_data_movement(g.nodes[g.consumers(v)[0]].op)) {
    side.nodes.push_back(g.consumers(v)[0]);
    side.dead.push_back(v);
    v = g.nodes[side.nodes.back()].outputs[0];
  }
  const std::vector<int64_t> want = {h.batch, h.tq, h.heads * h.dim};
  if (side.nodes.empty()) {
    return "output: not a head merge (transpose_copy -> view_copy, one reader each)";
  }
  if (g.value(v).shape != want) {
    return "output: " + quoted(v) + " is " + shape_str(g.value(v).shape) + ", not the " +
           shape_str(want) + " the heads merge into";
  }
  if (!moves_heads(moved_sources(g, side.nodes, element_count(want)), h, h.tq, false)) {
    return "output: the moves do not merge the [B, H, T, D] heads into " + shape_str(want);
  }
  side.value = v;
  return "";
}

// "" when SDPA node `n` has the shapes and arguments the kernel takes (fills `h`).
std::string check_attention(const Graph& g, const Node& n, int64_t max_dim, Heads& h) {
  const std::vector<int64_t>& q = g.value(n.inputs[0]).shape;
  const std::vector<int64_t>& k = g.value(n.inputs[1]).shape;
  if (q.size() != 4 || k.size() != 4 || g.value(n.inputs[2]).shape != k || k[0] != q[0] ||
      k[1] != q[1] || k[3] != q[3]) {
    return "query " + shape_str(q) + ", key " + shape_str(k) + " and value " +
           shape_str(g.value(n.inputs[2]).shape) +
           " are not [B, H, Tq, D], [B, H, Tk, D], [B, H, Tk, D]";
  }
  h = {q[0], q[1], q[2], k[2], q[3]};
  if (h.dim % 4 != 0 || h.dim > max_dim) {
    return h.describe() + ": the kernel takes heads of a multiple of 4 columns, at most " +
           std::to_string(max_dim);
  }
  if (n.inputs.size() > 3 && !n.inputs[3].empty()) {
    const Value& m = g.value(n.inputs[3]);
    std::vector<int64_t> d = m.shape;
    while (d.size() < 4) d.insert(d.begin(), 1);
    const bool fits = m.dtype == DType::Float32 && d.size() == 4 &&
                      (d[0] == 1 || d[0] == h.batch) && d[1] == 1 && (d[2] == 1 || d[2] == h.tq) &&
                      d[3] == h.tk;
    if (!fits) {
      return "the mask " + shape_str(m.shape) +
             " is not a float32 [1 or B, 1, 1 or Tq, Tk] = [1 or " + std::to_string(h.batch) +
             ", 1, 1 or " + std::to_string(h.tq) + ", " + std::to_string(h.tk) +
             "] (per head, or another shape)";
    }
  }
  return "";
}

// The chain that makes SDPA node `anchor`'s mask `mask`: one or two float steps x * a + b
// (aten.rsub.Scalar: a = -alpha, b = other; aten.mul.Scalar: a = other, b = -0.0, which adds
// nothing to any product) and views after them, from `source`.
struct MadeMask {
  std::string source;
  double a[2] = {1.0, 1.0}, b[2] = {-0.0, -0.0};  // in the order applied; one step: (1, -0.0)
  std::vector<int> nodes;                         // the steps and the views, in graph order
  std::vector<std::string> values;                // their outputs
  bool take = false;  // this anchor takes the nodes: every other reader reads `source` now
};

// The 4-D [batches, 1, rows, columns] reading the kernel makes of a mask's shape (leading
// dims folded into the batch), as runtime/ops/Attention.cpp reads its mask tensor.
std::vector<int64_t> mask_reading(std::vector<int64_t> shape) {
  while (shape.size() < 4) shape.insert(shape.begin(), 1);
  int64_t batches = 1;
  for (size_t d = 0; d + 2 < shape.size(); ++d) batches *= shape[d];
  return {batches, shape.end()[-2], shape.back()};
}

std::optional<MadeMask> match_made_mask(const FuseState& state, int anchor,
                                        const std::string& mask) {
  const Graph& g = state.graph;
  MadeMask m;
  std::string v = mask;
  for (int p = g.producer(v); p >= 0 && (g.nodes[p].op == kViewCopy || is_clone(g.nodes[p].op));
       p = g.producer(v)) {
    m.nodes.insert(m.nodes.begin(), p);
    v = g.nodes[p].inputs[0];
  }
  std::vector<int> steps;
  for (int p = g.producer(v); p >= 0 && steps.size() < 2; p = g.producer(v)) {
    const Node& n = g.nodes[p];
    const std::optional<double> other = opt_float(n, "other");
    if ((n.op != kRsubScalar && n.op != kMulScalar) || !other || n.inputs.size() != 1) break;
    steps.insert(steps.begin(), p);
    m.nodes.insert(m.nodes.begin(), p);
    v = n.inputs[0];
  }
  if (steps.empty() || g.value(v).dtype != DType::Float32 ||
      mask_reading(g.value(v).shape) != mask_reading(g.value(mask).shape)) {
    return std::nullopt;
  }
  m.source = v;
  for (size_t k = 0; k < steps.size(); ++k) {
    const Node& n = g.nodes[steps[k]];
    const double other = *opt_float(n, "other");
    m.a[k] = n.op == kMulScalar ? other : -opt_float(n, "alpha").value_or(1.0);
    m.b[k] = n.op == kMulScalar ? -0.0 : other;
  }
  // The chain's nodes go with the last reader, once every earlier reader is a match whose
  // node reads none of the chain's values (it took the made form).
  m.take = true;
  for (int k : m.nodes) {
    for (const std::string& out : g.nodes[k].outputs) {
      m.values.push_back(out);
      m.take = m.take && !g.is_graph_output(out);
    }
  }
  for (const std::string& out : m.values) {
    for (int r : g.consumers(out)) {
      if (r == anchor || std::find(m.nodes.begin(), m.nodes.end(), r) != m.nodes.end()) continue;
      m.take = m.take && r < anchor && state.claimed[static_cast<size_t>(r)];
    }
  }
  for (const Fusion& f : state.fusions) {
    for (const std::string& in : f.node.inputs) {
      m.take = m.take && std::find(m.values.begin(), m.values.end(), in) == m.values.end();
    }
  }
  std::sort(m.nodes.begin(), m.nodes.end());
  return m;
}

}  // namespace

void fuse_attention(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.size() < 3 || n.outputs.size() != 1) return;
  // Quantized: Q, K, V each a dq's output; float: each a move's (a float head split).
  int dqs = 0, moves = 0;
  for (int k = 0; k < 3; ++k) {
    const int p = g.producer(n.inputs[static_cast<size_t>(k)]);
    dqs += node_is(g, p, kDq);
    moves += p >= 0 && is_data_movement(g.nodes[static_cast<size_t>(p)].op);
  }
  const bool float_io = moves == 3;
  if (dqs != 3 && !float_io) return;
  const std::string backend = float_io ? kFloatAttention : kAttention;
  if (!state.allowed(i, backend)) return;
  Heads h;
  HeadSide sides[4];  // query, key, value, output
  const char* names[] = {"query", "key", "value"};
  std::string why = check_attention(g, n, float_io ? 64 : 128, h);
  for (int k = 0; k < 3 && why.empty(); ++k) {
    const std::string& x = n.inputs[static_cast<size_t>(k)];
    const int64_t t = k == 0 ? h.tq : h.tk;
    why = float_io ? match_float_split(g, x, h, t, names[k], sides[k])
                   : match_split(g, x, h, t, names[k], sides[k]);
  }
  if (why.empty()) {
    why = float_io ? match_float_merge(g, n.outputs[0], h, sides[3])
                   : match_merge(g, n.outputs[0], h, sides[3]);
  }
  const bool has_mask = n.inputs.size() > 3 && !n.inputs[3].empty();
  std::optional<MadeMask> made;
  if (why.empty() && !float_io && has_mask && state.may_target(kMaskAffine)) {
    made = match_made_mask(state, i, n.inputs[3]);
  }
  std::vector<int> nodes = {i};
  for (const HeadSide& s : sides) nodes.insert(nodes.end(), s.nodes.begin(), s.nodes.end());
  if (made && made->take) nodes.insert(nodes.end(), made->nodes.begin(), made->nodes.end());
  std::sort(nodes.begin(), nodes.end());
  const std::string chain = (sides[0].nodes.empty() ? std::string(float_io ? "" : "dq ")
                                                    : chain_label(g, sides[0].nodes) + " ") +
                            "(query; key, value alike) -> " + n.op +
                            (sides[3].nodes.empty() ? "" : " -> " + chain_label(g, sides[3].nodes));
  if (why.empty() && state.any_claimed(nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) return state.not_fused(chain, nodes, backend, why);

  Fusion f;
  f.nodes = nodes;
  for (const HeadSide& s : sides) f.dead.insert(f.dead.end(), s.dead.begin(), s.dead.end());
  Node& out = f.node;
  out.op = made ? kMaskAffine : backend;
  std::string mask;
  if (made) {
    mask = made->source;
    for (int k = 0; k < 2; ++k) {
      out.args["mask_multiplier_" + std::to_string(k)] = made->a[k];
      out.args["mask_addend_" + std::to_string(k)] = made->b[k];
    }
    if (made->take) f.dead.insert(f.dead.end(), made->values.begin(), made->values.end());
  } else if (has_mask) {
    mask = n.inputs[3];
  } else {  // no mask: zeros (adding 0 to a score changes nothing)
    Value zeros;
    zeros.name = state.graph.unique_name(sides[3].value + "_no_mask");
    zeros.dtype = DType::Float32;
    zeros.shape = {h.tk};
    zeros.data = std::vector<uint8_t>(static_cast<size_t>(h.tk) * sizeof(float), 0);
    mask = state.graph.add_value(zeros).name;
  }
  out.inputs = {sides[0].value, sides[1].value, sides[2].value, mask};
  out.outputs = {sides[3].value};
  const std::optional<double> scale = opt_float(n, "scale");
  const bool causal = arg_present(n, "is_causal") && arg_bool(n, "is_causal");
  out.args["num_heads"] = h.heads;
  out.args["is_causal"] = causal;
  out.args["scale"] = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(h.dim));
  out.origin = state.fused_origin(i, out.op);
  if (!float_io) {
    for (int k = 0; k < 3; ++k) {
      out.args[std::string(names[k]) + "_scale"] = sides[k].q.scale;
      out.args[std::string(names[k]) + "_zero_point"] = sides[k].q.zero_point;
      state.consume_quant(sides[k].value, sides[k].nodes[0], sides[k].q);
    }
    out.args["output_scale"] = sides[3].q.scale;
    out.args["output_zero_point"] = sides[3].q.zero_point;
    state.produced[sides[3].value] = sides[3].q;
  }
  // The head split chains were reported as no single data-movement op before this anchor was
  // tried; they are part of this match now.
  for (int k = 0; k < 3; ++k) {
    const std::string stale = "(" + node_list(sides[k].chain_nodes) + ") as a data-movement op";
    auto& lines = state.report.lines;
    lines.erase(std::remove_if(lines.begin(), lines.end(),
                               [&](const std::string& l) {
                                 return l.rfind("not fused: ", 0) == 0 &&
                                        l.find(stale) != std::string::npos;
                               }),
                lines.end());
  }
  std::string detail = " (" + h.describe() + ", ";
  if (made) {
    detail += "mask made in the kernel from " + quoted(mask) + " " +
              shape_str(g.value(mask).shape) + " by " + chain_label(g, made->nodes) +
              (made->take ? ", " + node_list(made->nodes) + " taken" : "") + ")";
  } else {
    detail += has_mask ? "mask " + quoted(mask) + " " + shape_str(g.value(mask).shape) + ")"
              : causal ? "causal)"
                       : "no mask)";
  }
  state.commit(std::move(f), chain, detail);
}

}  // namespace vkd::compiler::fusion

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
          .computed_by(reference_scaled_dot_product_attention)
          .fused_by(fusion::fuse_attention, {"q8ta_attention", "attention"})
          .fusing_before_its_producers(),
  };
}

}  // namespace vkd::compiler
