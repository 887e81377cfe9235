// The fusion patterns and direct lowerings of fuse_and_lower (compiler/Fuse.h), one function
// each, for per-op descriptors to point at (`.fuse = fusion::fuse_linear_conv`,
// `.lower = fusion::lower_relu`).
#pragma once

#include <string>

#include "compiler/GraphIR.h"
#include "compiler/fusion/FuseState.h"

namespace vkd::compiler::fusion {

// Tries the pattern anchored at node `anchor` (an index into the graph as given, not yet
// claimed): commits a Fusion, or reports why it does not fuse, or returns silently when the
// anchor is not part of a quantized pattern at all. Never rewrites the graph's nodes (it may
// add constants to it).
using FusePattern = void (*)(FuseState& state, int anchor);

// Lowers edge node `node` (node `where` of the graph as given) left over after fusion: rewrites
// it in place into its backend op and returns that op's name, or returns "" with `node`
// unchanged when it cannot (the node stays an edge op for the host).
using DirectLowering = std::string (*)(FuseState& state, Node& node, int where);

// ---- fusion patterns (one per file in compiler/fusion/) -------------------------------------

// dq -> aten.linear | aten.convolution [-> act] -> q => q8ta_linear | q8ta_conv2d; with no
// quantized tail the float-output q8ta_linear_dq | q8ta_conv2d_dq.
void fuse_linear_conv(FuseState& state, int anchor);
// dq, dq -> aten.add.Tensor [-> act] -> q => q8ta_add.
void fuse_add(FuseState& state, int anchor);
// dq -> aten.max_pool2d -> q => q8ta_max_pool2d; dq -> aten.mean.dim (H, W, keepdim) |
// aten.adaptive_avg_pool2d (1x1) -> q => q8ta_mean.
void fuse_pool(FuseState& state, int anchor);
// dq -> [clone]* -> aten.pixel_shuffle -> [clone]* -> q => q8ta_pixel_shuffle.
void fuse_pixel_shuffle(FuseState& state, int anchor);

// ---- direct lowerings (Lowerings.cpp) -------------------------------------------------------

std::string lower_quantize(FuseState& state, Node& node, int where);     // -> q8ta_quantize
std::string lower_dequantize(FuseState& state, Node& node, int where);   // -> q8ta_dequantize
std::string lower_identity(FuseState& state, Node& node, int where);     // clones, view_copy
std::string lower_relu(FuseState& state, Node& node, int where);         // -> relu
std::string lower_clamp(FuseState& state, Node& node, int where);        // hardtanh, clamp
std::string lower_pixel_shuffle(FuseState& state, Node& node, int where);  // -> pixel_shuffle
// torchao quantize / dequantize / choose_qparams_affine (compiler/LowerAffine.h).
std::string lower_affine(FuseState& state, Node& node, int where);

// ---- dispatch by edge op (Patterns.cpp); nullptr when the op has none -----------------------

FusePattern pattern_for(const std::string& op);
DirectLowering lowering_for(const std::string& op);

}  // namespace vkd::compiler::fusion
