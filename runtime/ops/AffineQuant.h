// torchao affine quantization on the GPU: quantize_affine, dequantize_affine and
// choose_qparams_affine with block-wise scales and zero points (per tensor, per channel, per
// group along any dim, per token: any block_size torchao accepts).
//
// Exact definitions (float32 throughout; every result equals torch's CPU bits, and the CPU
// reference interpreter's, compiler/ops/AffineQuant.cpp):
//   block grid   block_size has the input's rank (or is [-1]: one block); entry b of dim d of
//                size n: -1 or n -> the whole dim; 1 -> one block per index; 1 < b < n -> n / b
//                blocks, and b must divide n (torchao's _get_reduction_params asserts it).
//                Scales / zero points hold one value per block in row-major grid order, as a
//                float32 / int32 width-packed buffer of that many elements (any shape: torchao's
//                keepdim or reduced form).
//   quantize     q = clamp(roundEven(x * inv) + float(zp), quant_min, quant_max), inv =
//                1/scale correctly rounded (torch's `input * (1.0 / scale)`), roundEven =
//                round half to even (torch.round); NaN -> quant_min.
//   dequantize   x = float(int32(q) - zp) * scale.
//   choose       min_neg = min(amin(block), 0), max_pos = max(amax(block), 0);
//     SYMMETRIC                 scale = max(-min_neg, max_pos) / (float(qmax - qmin) / 2)
//     SYMMETRIC_NO_CLIPPING_ERR scale = smin > smax ? smin : smax (min_neg / qmin, max_pos / qmax)
//       (both)                  scale = max(scale, eps); zero_point = int((qmax + qmin + 1) / 2)
//     ASYMMETRIC                scale = max((max_pos - min_neg) / float(qmax - qmin), eps),
//                               zero_point = clamp(qmin - roundEven(min_neg / scale), qmin, qmax)
//   with every division correctly rounded (shaders/common/exact_div.glslh: Vulkan's own division
//   is not), eps the op's argument (torchao's default: torch.finfo(torch.float32).eps = 2^-23),
//   so an all-equal (zero-range) block gets scale eps. This is current torchao
//   (_choose_qparams_affine: eps applied before the zero point); torchao releases before it
//   applied eps after computing the zero point, which gave NaN zero points for zero-range
//   asymmetric blocks. A NaN in a block gives scale NaN and (asymmetric) zero point 0.
//   Subnormal inputs are exact only on devices that keep float32 denormals.
//
// Tensor forms: float32 input/output in any storage and float layout; int8 side as int8x4 in any
// packed layout (the schema prefers 4H4W: per-token and per-group-along-K quantization feed
// linear layers, whose activations are 4H4W). quant_min / quant_max inside [-128, 127] (int4
// and uint4-in-int8 ranges included). Padding lanes of a quantized output hold
// clamp(0, quant_min, quant_max): per-block zero points leave no single tensor zero point, and
// no consumer reads padding values (their weights / outputs there are zero or dropped).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

// Same numbers as the blob's `mapping_type` argument.
enum class AffineMapping : int32_t { Symmetric = 0, SymmetricNoClippingErr = 1, Asymmetric = 2 };

// The block grid of `sizes` for `block_size`, [1]-prefixed to 4-D (NCHW). Throws
// InvalidArgument naming `op` for a block_size torchao rejects.
struct AffineGrid {
  std::array<int32_t, 4> extent{1, 1, 1, 1};  // elements of one block per dim
  std::array<int32_t, 4> count{1, 1, 1, 1};   // blocks per dim
  int64_t blocks = 1;
};
AffineGrid affine_grid(const std::string& op, const std::vector<int64_t>& sizes,
                       const std::vector<int64_t>& block_size);

// `scale`: float32 buffer, `zero_point`: int32 buffer, each with one entry per block.
// `output`: int8x4 (any packed layout), same sizes as `input`.
void add_quantize_affine_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef scale, graph::ValueRef zero_point,
                              const std::vector<int64_t>& block_size, int32_t quant_min,
                              int32_t quant_max, graph::ValueRef output);

void add_dequantize_affine_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                graph::ValueRef scale, graph::ValueRef zero_point,
                                const std::vector<int64_t>& block_size, int32_t quant_min,
                                int32_t quant_max, graph::ValueRef output);

// Writes `scale` (float32 buffer) and `zero_point` (int32 buffer), one entry per block.
void add_choose_qparams_affine_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                    AffineMapping mapping, const std::vector<int64_t>& block_size,
                                    int32_t quant_min, int32_t quant_max, float eps,
                                    graph::ValueRef scale, graph::ValueRef zero_point);

// The padding value of a quantized output (see above).
int32_t affine_pad_value(int32_t quant_min, int32_t quant_max);

}  // namespace vkd::ops
