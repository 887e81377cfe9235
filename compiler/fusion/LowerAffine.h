// Lowering of torchao's affine quantization ops (part of fuse_and_lower: fusion::lower_affine):
//   torchao.quantize_affine       (input, scale, [zero_point])  -> q8ta_quantize_affine
//   torchao.dequantize_affine     (input, scale, [zero_point])  -> q8ta_dequantize_affine
//   torchao.choose_qparams_affine (input) -> (scale, zero_point) -> choose_qparams_affine
// The backend ops compute exactly what torchao (and the reference interpreter) computes
// (runtime/ops/AffineQuant.h). Argument translation:
//   - an absent zero point becomes an int32 zeros constant with one value per block (the
//     backend ops always read one); scale / zero point stay tensors (constants or choose outputs)
//     and are placed as width-packed float32 / int32 buffers (the schema allows only that);
//     an int64 zero-point constant was already narrowed to int32 by the parser;
//   - absent / None quant_min, quant_max become int8's -128 / 127; absent / None eps becomes
//     torch.finfo(torch.float32).eps (2^-23); mapping_type becomes 0 SYMMETRIC,
//     1 SYMMETRIC_NO_CLIPPING_ERR, 2 ASYMMETRIC ("MappingType." prefix accepted);
//   - output_dtype / target_dtype int8 is implied by the backend op (its int8 tensor is int8x4).
// Not lowered (the reason is returned): preserve_zero = false, a zero_point_domain other than
// INT, eps <= 0 (the kernel divides by the scale), dequantizing an int8 constant (the backend op
// reads int8x4 activations). These qparams are per block, so the int8 activations these ops
// read or write carry no per-tensor Value::quant.
#pragma once

#include <string>

#include "compiler/GraphIR.h"

namespace vkd::compiler {

// The backend op for a torchao affine edge op, or "" when `op` is not one.
std::string affine_backend_op(const std::string& op);

// Rewrites `n` (a torchao affine edge op) in place into its backend op: tensors in schema order,
// args under the schema's names. May add a zero-point constant to `g`. Returns "" on success;
// otherwise why it cannot be lowered, with `n` and `g` unchanged.
std::string lower_affine_node(Graph& g, Node& n);

}  // namespace vkd::compiler
