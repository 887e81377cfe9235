// The edge-dialect op names fusion and lowering look for (as the JSON graph IR spells them),
// kept in one place so the patterns, the lowerings and their dispatch cannot disagree.
#pragma once

#include <string>

namespace vkd::compiler::fusion {

inline constexpr char kQ[] = "quantized_decomposed.quantize_per_tensor";
inline constexpr char kDq[] = "quantized_decomposed.dequantize_per_tensor";
inline constexpr char kDqChannel[] = "quantized_decomposed.dequantize_per_channel";
inline constexpr char kLinear[] = "aten.linear";
inline constexpr char kConv[] = "aten.convolution";
inline constexpr char kAdd[] = "aten.add.Tensor";
inline constexpr char kRelu[] = "aten.relu";
inline constexpr char kHardtanh[] = "aten.hardtanh";
inline constexpr char kClamp[] = "aten.clamp";
inline constexpr char kPixelShuffle[] = "aten.pixel_shuffle";
inline constexpr char kMaxPool[] = "aten.max_pool2d";
inline constexpr char kAvgPool[] = "aten.avg_pool2d";
inline constexpr char kMean[] = "aten.mean.dim";
inline constexpr char kAdaptiveAvgPool[] = "aten.adaptive_avg_pool2d";
inline constexpr char kViewCopy[] = "aten.view_copy";
inline constexpr char kClone[] = "aten.clone";
inline constexpr char kCloneDimOrder[] = "aten._clone_dim_order";
inline constexpr char kAliasCopy[] = "aten.alias_copy";
inline constexpr char kPermuteCopy[] = "aten.permute_copy";
inline constexpr char kPermute[] = "aten.permute";
inline constexpr char kTransposeCopy[] = "aten.transpose_copy.int";
inline constexpr char kTranspose[] = "aten.transpose.int";
inline constexpr char kQuantizeAffine[] = "torchao.quantize_affine";
inline constexpr char kDequantizeAffine[] = "torchao.dequantize_affine";
inline constexpr char kChooseQparamsAffine[] = "torchao.choose_qparams_affine";

// The ops that are the identity outside training (compiler/ops/Copy.cpp: a node in training
// mode is refused when the graph is read, so every one left is the identity).
inline bool is_eval_identity(const std::string& op) {
  return op == "aten.dropout" || op == "aten.alpha_dropout" || op == "aten.feature_dropout" ||
         op == "aten.feature_alpha_dropout" || op == "aten.stochastic_depth";
}

// Copies that change nothing a backend op sees (fusion looks through them; lowering makes them
// identity).
inline bool is_clone(const std::string& op) {
  return op == kClone || op == kCloneDimOrder || op == kAliasCopy || is_eval_identity(op);
}

// Permutations of dims: permute (dims) and transpose (dim0, dim1), view and copy forms.
inline bool is_permute(const std::string& op) {
  return op == kPermuteCopy || op == kPermute || op == kTransposeCopy || op == kTranspose;
}

// Ops that only move elements (every value the output holds is one the input held, unchanged):
// they commute with a per-tensor dequantize, so they can move int8 data instead of floats.
inline bool is_data_movement(const std::string& op) {
  return op == kViewCopy || is_clone(op) || is_permute(op);
}

// The activations a fused pattern folds into its int8 output range.
inline bool is_activation(const std::string& op) {
  return op == kRelu || op == kHardtanh || op == kClamp;
}

}  // namespace vkd::compiler::fusion
