// Fusion and lowering: turns an edge-dialect graph (explicit quantize/dequantize around float
// ATen ops) into backend ops (partitioner_schema/OpSchema). Runs after shape inference: every
// value's dtype and shape must be set.
//
// 1. Fusion (patterns matched on the graph as given, anchors in node order):
//    dq -> aten.linear      [-> act] -> q  => q8ta_linear      (no q: q8ta_linear_dq)
//    dq -> aten.convolution [-> act] -> q  => q8ta_conv2d      (no q: q8ta_conv2d_dq)
//    dq, dq -> aten.add.Tensor [-> act] -> q => q8ta_add
//    dq -> [clone]* -> aten.pixel_shuffle -> [clone]* -> q => q8ta_pixel_shuffle
//    act = aten.relu | aten.hardtanh | aten.clamp, folded into activation_min/max (int8 range).
//    Weights must be dequantize_per_channel(axis 0) / dequantize_per_tensor of an int8 constant
//    with all-zero zero points; those weight dq nodes are folded away. Every intermediate value
//    of a match must have exactly one consumer and not be a graph output; a pattern that
//    matches only partly is left as it is (or, for linear/conv, fused as the float-output
//    variant when only the quantized tail fails) and reported.
// 2. Lowering of the rest: q -> q8ta_quantize, dq of an activation -> q8ta_dequantize,
//    clone/alias_copy/_clone_dim_order/view_copy (leading 1s only) -> identity, relu -> relu,
//    hardtanh/clamp -> clamp, pixel_shuffle -> pixel_shuffle, torchao quantize_affine /
//    dequantize_affine / choose_qparams_affine -> q8ta_quantize_affine / q8ta_dequantize_affine /
//    choose_qparams_affine (LowerAffine.h; what those cannot express throws Unsupported naming
//    the node, or with runnable_only stays for the host). Other nodes keep their edge op.
// 3. int8 activations touched by backend ops become DType::Int8x4 with Value::quant set;
//    constant int8 weights stay DType::Int8.
// Deterministic: the same graph gives the same result (node order, value order and names).
#pragma once

#include "compiler/GraphIR.h"
#include "compiler/PassReport.h"

namespace vkd::compiler {

struct FuseOptions {
  // Fuse and lower only into backend ops the runtime has a kernel for; everything else stays
  // an edge op (what `vkd compile --partition` leaves to the host, in the form it was given).
  bool runnable_only = false;
};

// Rewrites `g` in place. Report lines:
//   "fused dq -> aten.convolution -> aten.relu -> q (node 3..6) into q8ta_conv2d 'y_q'
//    (activation relu)"
//   "not fused: dq -> aten.linear -> q (node 0..2) as q8ta_linear: <why>"
//   "folded <n> weight dequantize node(s): ..." / "lowered <n> node(s): ..." /
//   "left <n> node(s) as edge ops: ..."
// Throws vkd::Error(Internal) if it would produce a backend node that does not match its
// OpSchema entry.
PassReport fuse_and_lower(Graph& g, const FuseOptions& options = {});

}  // namespace vkd::compiler
