// Fusion and lowering: turns an edge-dialect graph (explicit quantize/dequantize around float
// ATen ops) into backend ops (partitioner_schema/OpSchema). Runs after shape inference: every
// value's dtype and shape must be set.
//
// 1. Fusion (patterns matched on the graph as given, anchors in node order):
//    dq -> aten.linear      [-> act] -> q  => q8ta_linear      (no q: q8ta_linear_dq)
//    dq -> aten.convolution [-> act] -> q  => q8ta_conv2d      (no q: q8ta_conv2d_dq)
//    dq, dq -> aten.add.Tensor [-> act] -> q => q8ta_add, or, one operand the output of a
//      q8ta_conv2d[_ps] / q8ta_linear that the add alone reads, that op's epilogue:
//      q8ta_conv2d_add / q8ta_linear_add (compiler/fusion/Epilogue.cpp)
//    dq -> [clone]* -> aten.pixel_shuffle -> [clone]* -> q => q8ta_pixel_shuffle, or, moving
//      the bytes of a q8ta_conv2d's output that it alone reads, that conv's epilogue:
//      q8ta_conv2d_ps (compiler/fusion/Epilogue.cpp)
//    dq of a q8ta_conv2d's output that it alone reads, writing a value no node reads (the
//      graph's last dequantize) => that conv's epilogue: q8ta_conv2d_q_dq (Epilogue.cpp)
//    q of a float value nothing else reads, whose int8 output only a q8ta_conv2d reads (the
//      graph's first quantize) => that conv's load: q8ta_conv2d_fq (Epilogue.cpp; tried after
//      every other pattern, as it joins a later node's match)
//    a depthwise q8ta_conv2d whose int8 output only a 1x1 q8ta_conv2d / q8ta_conv2d_add
//      (upscale_factor 1) reads, with the parameters it was written with, and that 1x1 =>
//      q8ta_conv2d_dw_pw / q8ta_conv2d_dw_pw_add (fusion/DepthwisePointwise.cpp; joined once
//      every pattern was matched, so after the residual add joined the 1x1)
//    a plain 1x1 q8ta_conv2d whose int8 output only such a q8ta_conv2d_dw_pw[_add] reads, as
//      its input, with the parameters it was written with, and that op =>
//      q8ta_conv2d_pw_dw_pw / q8ta_conv2d_pw_dw_pw_add (the same unit, right after)
//    a 1x1 q8ta_conv2d_ps (upscale_factor >= 2) whose int8 output only a 1x1 q8ta_conv2d_q_dq
//      reads, with the parameters it was written with, and that head =>
//      q8ta_conv2d_ps_pw_q_dq (fusion/ShuffledHead.cpp; joined after the depthwise joins)
//    dq -> (view_copy | permute | transpose | clone | q -> dq)* -> q, or the same moves on int8
//      data => q8ta_channel_shuffle | q8ta_permute | identity | q8ta_view, whichever moves the
//      elements as the chain does (compiler/ops/Permute.cpp); a lone int8 permute likewise
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
//    choose_qparams_affine (fusion/LowerAffine.h; what those cannot express throws Unsupported
//    naming the node, or with runnable_only stays for the host). Other nodes keep their edge op.
// 3. int8 activations touched by backend ops become DType::Int8x4 with Value::quant set;
//    constant int8 weights stay DType::Int8.
// Deterministic: the same graph gives the same result (node order, value order and names).
#pragma once

#include "compiler/GraphIR.h"
#include "compiler/PassReport.h"
#include "compiler/fusion/FuseOptions.h"
#include "compiler/fusion/SinkDequantize.h"  // sink_dequantize, the pass before

namespace vkd::compiler {

// Rewrites `g` in place. Report lines:
//   "fused dq -> aten.convolution -> aten.relu -> q (node 3..6) into q8ta_conv2d 'y_q'
//    (activation relu)"
//   "not fused: dq -> aten.linear -> q (node 0..2) as q8ta_linear: <why>"
//   "fused dq -> aten.pixel_shuffle -> q (node 7..9) into the epilogue of q8ta_conv2d 'c':
//    q8ta_conv2d_ps writes 'y' pixel-shuffled (upscale 2)" (or "not fused: ... into the
//    epilogue of q8ta_conv2d 'c': <why>", then the shuffle's own line)
//   "fused dq, dq -> aten.add.Tensor -> q (node 10..13) into the epilogue of q8ta_conv2d 'c':
//    q8ta_conv2d_add adds 's' and writes 'y' (activation none)"
//   "fused dq (node 14) into the epilogue of q8ta_conv2d 'y_q': q8ta_conv2d_q_dq writes 'y'
//    dequantized (float32)"
//   "fused q (node 0) into the load of q8ta_conv2d 'c': q8ta_conv2d_fq reads 'x' (float32) and
//    quantizes it on load"
//   "fused depthwise q8ta_conv2d 'mq' (node 2..5) into q8ta_conv2d 'yq' (node 6..8):
//    q8ta_conv2d_dw_pw reads 'xq' and writes 'yq'; 'mq' (8 channels) is not written" (or "not
//    fused: depthwise q8ta_conv2d 'mq' (node 2..5) into q8ta_conv2d 'yq' (node 6..8): <why>")
//   "fused 1x1 expansion q8ta_conv2d 'xq' (node 1..4) into q8ta_conv2d_dw_pw 'yq' (node
//    7..13): q8ta_conv2d_pw_dw_pw reads 'iq' and writes 'yq'; 'xq' (8 channels) is not
//    written" (or "not fused: 1x1 expansion ...: <why>")
//   "fused pixel-shuffled q8ta_conv2d_ps 'mq' (node 2..8) into q8ta_conv2d_q_dq 'yf' (node
//    9..12): q8ta_conv2d_ps_pw_q_dq reads 'xq' and writes 'yf'; 'mq' (4 channels) is not
//    written" (or "not fused: pixel-shuffled ...: <why>", for any convolution reading a
//    pixel-shuffled convolution's output)
//   "folded <n> weight dequantize node(s): ..." / "lowered <n> node(s): ..." /
//   "left <n> node(s) as edge ops: ..."
// Throws vkd::Error(Internal) if it would produce a backend node that does not match its
// OpSchema entry.
PassReport fuse_and_lower(Graph& g, const FuseOptions& options = {});

}  // namespace vkd::compiler
