// The two kinds of function fuse_and_lower (compiler/Fuse.h) calls per edge op: a fusion pattern
// anchored at the op and a direct lowering of a node left after fusion. A family's own are defined
// in its file, compiler/ops/<Family>.cpp, before the descriptors that point at them
// (`.fused_by(fusion::fuse_add, {"q8ta_add"})`); declared here are the ones shared across
// families or defined in this folder (Epilogue.cpp, DepthwisePointwise.cpp, ShuffledHead.cpp).
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

// A matched int8 op that may run in the epilogue of the committed match writing its input
// (Epilogue.cpp): the store of that op then does its work, one dispatch instead of two.
struct EpilogueCandidate {
  std::string x_q;                // the int8 value it reads: the producer's output
  QuantInfo in_q;                 // how its dequantize reads x_q
  std::vector<int> nodes;         // its nodes, the dequantize of x_q included
  std::vector<std::string> dead;  // its intermediate values
  std::string output;             // the int8 value it writes
  QuantInfo out_q;
  std::string chain;  // "dq -> aten.pixel_shuffle -> q", for the report
};

// A pixel shuffle by `factor` (compiler/ops/PixelShuffle.cpp's match `c`) joins the epilogue of
// the q8ta_conv2d match writing c.x_q, which becomes q8ta_conv2d_ps writing c.output: true when
// it did (reported); false when not, reported when x_q is a q8ta_conv2d / q8ta_linear output
// (the shuffle is then its own op).
bool join_shuffle_epilogue(FuseState& state, const EpilogueCandidate& c, int64_t factor);

// A matched dq(a), dq(b) -> aten.add.Tensor [-> act] -> q (compiler/ops/Elementwise.cpp) that may
// run in the epilogue of the match writing one of its operands (Epilogue.cpp).
struct AddCandidate {
  std::string operand[2];  // the int8 values the dequantizes read (a, b)
  int dq[2] = {-1, -1};    // their dequantize nodes
  QuantInfo in_q[2];
  std::vector<int> nodes;         // the match's nodes, the dequantizes included
  std::vector<std::string> dead;  // its intermediate values
  std::string output;             // the int8 value it writes
  QuantInfo out_q;
  Activation activation;  // its relu / clamp on the sum
  std::string chain;      // "dq, dq -> aten.add.Tensor -> q", for the report
};

// The add joins the epilogue of the q8ta_conv2d / q8ta_conv2d_ps / q8ta_linear match writing
// one of its operands (the first that can take it), which becomes q8ta_conv2d_add /
// q8ta_linear_add reading the other operand: true when it did (reported); false when not,
// reported when an operand is such an op's output (the add is then its own op).
bool join_add_epilogue(FuseState& state, const AddCandidate& c);

// The dequantize at node `anchor` whose float result no node reads (a graph output) joins the
// epilogue of the q8ta_conv2d match writing its input when nothing else reads that int8 value:
// it becomes q8ta_conv2d_q_dq writing the float output (Epilogue.cpp; reported, with the
// reason when it does not join).
void fuse_dequantize(FuseState& state, int anchor);

// Each committed depthwise q8ta_conv2d match whose int8 output only a committed 1x1
// q8ta_conv2d / q8ta_conv2d_add (upscale_factor 1) match reads, with the parameters it was
// written with, merges into that match, which becomes q8ta_conv2d_dw_pw / q8ta_conv2d_dw_pw_add
// (DepthwisePointwise.cpp; reported either way). Then each committed plain 1x1 q8ta_conv2d
// match whose int8 output only such a merged match reads, as its input, with the parameters it
// was written with, merges into it too: q8ta_conv2d_pw_dw_pw / q8ta_conv2d_pw_dw_pw_add. Run
// once every pattern was matched (the 1x1 has taken its residual add by then), before the
// matches are applied.
void join_depthwise_pointwise(FuseState& state);

// Each committed 1x1 q8ta_conv2d_ps match (upscale_factor >= 2) whose int8 output only a
// committed 1x1 q8ta_conv2d_q_dq match reads, with the parameters it was written with, merges
// into that match, which becomes q8ta_conv2d_ps_pw_q_dq (ShuffledHead.cpp; reported either way,
// for every convolution reading a pixel-shuffled convolution's output). Run after
// join_depthwise_pointwise, before the matches are applied.
void join_shuffled_head(FuseState& state);

// Each committed q8ta_attention / _mask_affine match whose query, key and value are written by
// three committed plain q8ta_linear matches of one input (each output read by the attention
// alone) takes them as one q8ta_linear_qkv writing [B, T, 3C], read as column blocks by
// q8ta_attention_qkv / _mask_affine_qkv (QkvLinear.cpp; reported either way). Run before the
// matches are applied.
void join_qkv_linears(FuseState& state);

// The quantize at node `anchor` whose float input nothing else reads joins the load of the
// q8ta_conv2d match reading its int8 output when nothing else reads that: it becomes
// q8ta_conv2d_fq reading the float input (Epilogue.cpp; reported, with the reason when it does
// not join). Tried after every other pattern (EdgeOp::fuses_after_its_consumers).
void fuse_quantize(FuseState& state, int anchor);

}  // namespace vkd::compiler::fusion
