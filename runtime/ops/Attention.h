// q8ta_attention / attention: scaled dot-product attention of int8 (float32) Q, K, V whose heads
// are column blocks, with a float32 additive mask, requantized into an int8 output (float32).
#pragma once

#include <optional>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

// The mask q8ta_attention_mask_affine adds, made from the one it reads: m' = (m * a[0] + b[0]) *
// a[1] + b[1], each multiply and add rounded to float32 on its own (aten.rsub.Scalar: a = -alpha,
// b = other; aten.mul.Scalar: a = other, b = -0.0; one step of these: the other 1, -0.0).
struct MaskAffine {
  float a[2] = {1.0f, 1.0f};
  float b[2] = {-0.0f, -0.0f};
};

// Q, K and V as column ranges of wider tensors (the three of one [B, T, 3 H*D] tensor a merged
// Q/K/V linear writes): each one's first column, a multiple of 4; H*D is the output's width.
struct AttentionColumns {
  int64_t query = 0, key = 0, value = 0;
};

struct AttentionParams {
  QuantParams query, key, value, output;
  int num_heads = 1;
  float scale = 1.0f;   // the score scale (PyTorch's default 1 / sqrt(D) is the compiler's to set)
  bool causal = false;  // PyTorch's is_causal: key j > query row l is masked out
  std::optional<MaskAffine> mask_affine;    // set: the mask is made in the kernel (above)
  std::optional<AttentionColumns> columns;  // set: Q, K, V are column ranges (above)
};

// query [B, Tq, H*D], key and value [B, Tk, H*D] (rank 2 to 4: the leading dims are the batch
// B), int8x4 4H4W buffers; head h is the columns h*D .. h*D+D-1 of each (D a multiple of 4, at
// most 128). mask: a float32 width-packed buffer of Tk columns, rows of 1 or Tq, batches of 1
// or B (as [B, 1, 1, Tk], [B, 1, Tq, Tk], [1, 1, Tq, Tk], [Tk], ...), added to every head's
// scores. output: int8x4 4H4W of the query's sizes (padding = zp_out). Per batch, head and
// query row l (shaders/q8ta_attention.glsl):
//   a[l, j] = sum over the head's dims of (q - zp_q) * (k - zp_k)           exact int32
//   s[l, j] = float32(a) * (s_q * s_k * scale) + mask[l, j]                  float32
//     (causal: -inf where j > l, the top-left triangle of PyTorch's is_causal)
//   p[l, j] = exp(s[l, j] - max_j s) (online over tiles of keys); -inf scores give p = 0
//   y[l, d] = (sum_j p[l, j] * (v[j, d] - zp_v)) * (s_v / sum_j p[l, j])     (0 if the sum is 0)
//   q_out = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127)
// exp and the summation order are the device's: within one step of an exact computation where
// y * inv_s_out lies next to a rounding boundary. Any Tq and Tk (keys stream through shared
// memory in tiles). With params.mask_affine (q8ta_attention_mask_affine) the mask added is
// m' = (mask * a0 + b0) * a1 + b1 of the mask read (MaskAffine), bit for bit. With
// params.columns Q, K and V are [B, Tq, Wq], [B, Tk, Wkv] (K and V the same sizes, or all three
// one tensor) holding the H*D columns from columns.query (.key, .value) on: the output's H*D
// decides the heads' width; the result is bit for bit the one on those columns as tensors.
void add_q8ta_attention_node(graph::ComputeGraph& graph, graph::ValueRef query, graph::ValueRef key,
                             graph::ValueRef value, graph::ValueRef mask, graph::ValueRef output,
                             const AttentionParams& params);

// The int8 kernel's form for heads of `head_columns` columns over a grid of `query_rows` x
// `heads` x `batches` (the one place it is chosen): the smallest tile of heads that holds them
// (small_head: 1 for D <= 32, tiles of 128 keys; 2 for D <= 64, tiles of 64; 0 up to 128,
// tiles of 32), 4 query rows per workgroup where 8 would make at most kFourRowsMaxGroups
// workgroups (docs/BENCHMARKS.md has the H200 numbers), else 8, and the workgroup's size, the
// shader's WG: 256 for 4 rows of a small head, else 128. A device allowing fewer than 256
// invocations a workgroup (`max_invocations`: phones, device classes) takes 8 rows of 128.
struct AttentionForm {
  int small_head = 0;
  int64_t rows_per_workgroup = 8;
  uint32_t workgroup = 128;
};
AttentionForm plan_int8_attention(int64_t head_columns, int64_t query_rows, int64_t heads,
                                  int64_t batches, uint32_t max_invocations);

// The float op `attention`: query, key, value and output float32 width-packed buffers of the
// sizes above, D a multiple of 4 and at most 64, the same mask; per row
//   s[l, j] = (q[l] . k[j] in float32) * scale + mask[l, j]
//   y[l] = sum_j p[l, j] * v[j] / sum_j p[l, j]     (p as above; 0 where every s is -inf)
void add_attention_node(graph::ComputeGraph& graph, graph::ValueRef query, graph::ValueRef key,
                        graph::ValueRef value, graph::ValueRef mask, graph::ValueRef output,
                        int num_heads, float scale, bool causal = false);

}  // namespace vkd::ops
