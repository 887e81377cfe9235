// The CPU reference of every edge op the interpreter (compiler/Interpreter.h) runs: one function
// per op, grouped by op family (one .cpp per family in this folder), each with its semantics as
// PyTorch computes them in float32 on CPU, where that is defined. Every family is built with
// -ffp-contract=off, so no fused multiply-add is ever formed.
//
// A reference function reads the node's inputs and arguments from its ReferenceContext and
// returns the node's outputs in order. Not supported (vkd::Error Unsupported naming the node):
// transposed convolution, other ranks than those below, zero_point_domain other than INT,
// preserve_zero = false, dtypes other than float32 / int8 / int32 (float16 only for the ops that
// move data: pixel_shuffle, clone, alias_copy, view_copy; bit-exact). Malformed nodes (missing
// inputs or arguments, shapes that do not fit) give InvalidArgument naming the node.
#pragma once

#include <vector>

#include "compiler/Interpreter.h"

namespace vkd::compiler {

class ReferenceContext;  // compiler/reference/ReferenceContext.h

using ReferenceFn = std::vector<HostTensor> (*)(const ReferenceContext&);

// ---------------------------------------------------------------------------------------------
// Quantize.cpp: quantized_decomposed (de)quantization.

// quantized_decomposed.quantize_per_tensor (the project's rounding,
// test/reference/QuantReference.h):
//   s = float(scale); inv = float(1.0 / double(s));
//   q = clamp(nearbyint(float(x * inv)) + zero_point, quant_min, quant_max)  (ties to even)
//   PyTorch computes float(1.0 / scale) from the double scale; the two agree whenever the scale
//   is a float32 value (what exporters write, observers hold float32 scales).
std::vector<HostTensor> reference_quantize_per_tensor(const ReferenceContext& c);

// quantized_decomposed.dequantize_per_tensor:   x = float(q - zero_point) * float(scale)
std::vector<HostTensor> reference_dequantize_per_tensor(const ReferenceContext& c);

// quantized_decomposed.dequantize_per_channel:  x = float(q - zp[c]) * scale[c], c = index along
//   `axis` (negative counts from the end); absent zero_points mean 0.
std::vector<HostTensor> reference_dequantize_per_channel(const ReferenceContext& c);

// ---------------------------------------------------------------------------------------------
// ConvLinear.cpp: float32 convolution and linear.

// aten.convolution (rank-4 NCHW, transposed = false; stride/padding/dilation: 1 or 2 ints):
//   out[n,co,oh,ow] = sum + bias[co], where sum is one float32 accumulator starting at +0.0f
//   that adds x * w (each product rounded to float32) for ci ascending over the group's input
//   channels, then kh ascending, then kw ascending; taps in the zero padding are skipped (they
//   would add +0 or -0, which cannot change a sum that starts at +0). Bias is added last.
std::vector<HostTensor> reference_convolution(const ReferenceContext& c);

// aten.linear: y[..., n] = (sum over k ascending of x[..., k] * w[n, k], float32) + b[n].
std::vector<HostTensor> reference_linear(const ReferenceContext& c);

// ---------------------------------------------------------------------------------------------
// Elementwise.cpp: add, relu, hardtanh, clamp.

// aten.add.Tensor: numpy broadcasting; out = a + b when alpha == 1, else a + float(alpha) * b
//   (PyTorch's vectorized CPU kernel fuses the alpha multiply-add, its scalar tail does not, so
//   alpha != 1 can differ from PyTorch in the last bit). int32 tensors: a + alpha * b.
std::vector<HostTensor> reference_add(const ReferenceContext& c);

// aten.relu: x < 0 ? 0 : x.   aten.hardtanh / aten.clamp: min(max(x, lo), hi) with the bounds
//   as float32 (an absent clamp bound is not applied; lo > hi gives hi, as in PyTorch); NaN
//   propagates through all three.
std::vector<HostTensor> reference_relu(const ReferenceContext& c);
std::vector<HostTensor> reference_hardtanh(const ReferenceContext& c);
std::vector<HostTensor> reference_clamp(const ReferenceContext& c);

// ---------------------------------------------------------------------------------------------
// PixelShuffle.cpp.

// aten.pixel_shuffle(r): out[n, c, oh, ow] = in[n, c*r*r + (oh % r)*r + (ow % r), oh / r, ow / r].
std::vector<HostTensor> reference_pixel_shuffle(const ReferenceContext& c);

// ---------------------------------------------------------------------------------------------
// Pool.cpp: pooling and reductions.

// aten.max_pool2d: PyTorch's output size (pooling_output_shape: with ceil_mode the last window
//   is dropped when it would start in the right padding), padding acts as -inf, taps are at
//   start + k * dilation, NaN wins; padding must be <= kernel / 2 as PyTorch requires.
std::vector<HostTensor> reference_max_pool2d(const ReferenceContext& c);

// aten.mean.dim (any dims; empty list = all dims) and aten.adaptive_avg_pool2d (output 1x1
//   only; PyTorch itself computes it as mean over (-1, -2)): for each output element one float32
//   accumulator sums the reduced elements in row-major order of the input, then divides by the
//   element count (as a float32). PyTorch sums in a different (vectorized, cascaded) order, so
//   means agree with it to rounding, not bit for bit.
std::vector<HostTensor> reference_mean_dim(const ReferenceContext& c);
std::vector<HostTensor> reference_adaptive_avg_pool2d(const ReferenceContext& c);

// ---------------------------------------------------------------------------------------------
// Copy.cpp: copies and views.

// aten.view_copy: the input's bytes with the `size` argument as shape (one -1 is inferred).
std::vector<HostTensor> reference_view_copy(const ReferenceContext& c);

// aten.clone / aten.alias_copy / aten._clone_dim_order: copies (host tensors are always logical
//   C order, so a dim_order does not change the bytes).
std::vector<HostTensor> reference_copy(const ReferenceContext& c);

// ---------------------------------------------------------------------------------------------
// Affine.cpp: torchao block-wise affine quantization.
//
// torchao.quantize_affine / dequantize_affine / choose_qparams_affine, zero_point_domain INT:
//   block_size has one entry per input dim (-1 = the whole dim; [-1] alone = per tensor); each
//   dim must be divisible by its block size; the scale (and zero point) tensors hold one value
//   per block, blocks in row-major order of the block grid (their shape is not checked beyond
//   their element count, as torchao views them).

// quantize_affine:   q = clamp(round_half_even(float(x * float(1 / s))) + zp, qmin, qmax).
//   torchao's source (quant_primitives.py, _quantize_affine_no_dtype_cast) computes
//   `torch.round(input * (1.0 / scale)) + zero_point`, i.e. it MULTIPLIES by the float32
//   reciprocal of the float32 scale tensor (its docstrings say "float_val / scale"). This is
//   what is implemented, and it equals the project's quantize rounding above.
std::vector<HostTensor> reference_quantize_affine(const ReferenceContext& c);

// dequantize_affine: x = float(int32(q) - int32(zp)) * s.
std::vector<HostTensor> reference_dequantize_affine(const ReferenceContext& c);

// choose_qparams_affine (preserve_zero = true), per block:
//   min_neg = min(min(x), 0), max_pos = max(max(x), 0)    (float32)
//   SYMMETRIC: scale = max(-min_neg, max_pos) / float((qmax - qmin) / 2)
//              zero_point = int((qmax + qmin + 1) / 2)  (Python true division, truncated:
//              0 for int8 [-128, 127] and [-127, 127], 128 for [0, 255])
//              scale = max(scale, eps)
//   SYMMETRIC_NO_CLIPPING_ERR: smin = min_neg / float(qmin), smax = max_pos / float(qmax),
//              scale = smin > smax ? smin : smax, then as SYMMETRIC.
//   ASYMMETRIC: scale = (max_pos - min_neg) / float(qmax - qmin); scale = max(scale, eps);
//              zero_point = clamp(qmin - round_half_even(min_neg / scale), qmin, qmax)
//   eps absent/None: float32 epsilon (2^-23). The eps clamp comes BEFORE the asymmetric zero
//   point, as in current torchao; older torchao releases clamped after it, which made the
//   zero point of an all-zero block 0/0 = NaN. These follow torchao's definitions as best
//   known from its source; the min/max reductions are exact, every division is one float32
//   division. Outputs: scale (float32) and zero_point (the declared output's dtype: int32,
//   int8 or float32; an int64 zero_point_dtype is narrowed to int32), shaped as torchao
//   returns them (reduced dims dropped: [2, 8] with block_size [1, 8] gives [2]) unless the
//   graph declares another shape with the same element count (e.g. [2, 1]), which is kept.
std::vector<HostTensor> reference_choose_qparams_affine(const ReferenceContext& c);

}  // namespace vkd::compiler
