// A depthwise convolution and the 1x1 convolution that alone reads its int8 output, as one op,
// then the 1x1 expansion before them (an inverted-residual block):
//   committed q8ta_conv2d match D, depthwise (groups == C_in == C_out, weight [C, 1, KH, KW],
//   a plain int8 output "mid"), and committed match P reading mid through a dequantize with the
//   scale and zero point mid was written with, P a 1x1 q8ta_conv2d (stride 1, padding 0,
//   dilation 1, groups 1) or q8ta_conv2d_add with upscale_factor 1
//   => q8ta_conv2d_dw_pw / q8ta_conv2d_dw_pw_add: one dispatch keeps each tile of mid in
//   shared memory and runs the 1x1 on it, so mid is never written (on CPU devices the runtime
//   runs the two convolutions one after the other; the bytes are the same either way);
//   then committed plain q8ta_conv2d match E, a 1x1 (weight [C, C_in, 1, 1]) whose int8 output
//   "expanded" only such a merged match reads, as its input, with the qparams it was written
//   with => q8ta_conv2d_pw_dw_pw / q8ta_conv2d_pw_dw_pw_add: expanded is never written either
//   (the runtime computes it per tile where the window fits shared memory, else writes it).
// Run once every pattern was matched, so P has already taken its residual add. The compiler
// checks exactly what the runtime requires (runtime/ops/DepthwisePointwise.h): C at most
// kMaxDepthwisePointwiseChannels, mid and expanded read by nothing else; anything else keeps
// the ops apart, with the reason in the report.
#include <string>
#include <vector>

#include "compiler/fusion/Join.h"
#include "compiler/fusion/Patterns.h"
#include "partitioner_schema/ConvRoutes.h"

namespace vkd::compiler::fusion {
namespace {

bool is_depthwise(const Graph& g, const Fusion& f) {
  if (!is_one_conv(g, f)) return false;
  const int64_t groups = arg_int(f.node, "groups");
  const std::vector<int64_t>& w = weight_shape(g, f);
  return w.size() == 4 && w[0] == groups && w[1] == 1;
}

// "" when match f, the fused op's `role` convolution, writes a plain int8 output.
std::string check_plain(const Fusion& f, const std::string& role) {
  return check_conv_op(f, role, "q8ta_conv2d", "a plain q8ta_conv2d (int8 output)");
}

// "" when P's store is one the fused op has: a plain int8 output or a residual add, neither
// pixel-shuffled nor dequantized.
std::string check_pointwise_store(const Node& p) {
  std::string what;
  if (p.op == "q8ta_conv2d_add" && arg_int(p, "upscale_factor") != 1) {
    what = "q8ta_conv2d_add writes its sum pixel-shuffled (upscale_factor " +
           std::to_string(arg_int(p, "upscale_factor")) + ")";
  } else if (p.op == "q8ta_conv2d_ps") {
    what = "q8ta_conv2d_ps writes its output pixel-shuffled";
  } else if (p.op != "q8ta_conv2d" && p.op != "q8ta_conv2d_add") {
    what = p.op + " writes no plain int8 output";
  }
  return what.empty() ? ""
                      : what +
                            ": the fused op's store writes int8, or adds a residual "
                            "tensor (q8ta_conv2d_add with upscale_factor 1)";
}

// ---- the depthwise into the 1x1 reading it ----

bool is_pointwise_candidate(const Graph&, const Fusion& p) {
  return p.node.op.rfind("q8ta_conv2d", 0) == 0 && !p.node.inputs.empty();
}

std::string dw_pw_target(const Fusion& p) {
  return p.node.op == "q8ta_conv2d_add" ? "q8ta_conv2d_dw_pw_add" : "q8ta_conv2d_dw_pw";
}

std::string check_dw_pw(const FuseState& state, const Fusion& d, const Fusion& p) {
  std::string why = check_plain(d, "depthwise");
  if (why.empty()) why = check_pointwise_store(p.node);
  if (why.empty()) why = check_pointwise_geometry(state.graph, p, "second convolution");
  if (!why.empty()) return why;
  const int64_t channels = weight_shape(state.graph, d).at(0);
  if (channels > kMaxDepthwisePointwiseChannels) {
    return std::to_string(channels) + " channels: the fused kernel keeps the depthwise " +
           "output's tile in shared memory, at most " +
           std::to_string(kMaxDepthwisePointwiseChannels) + " channels";
  }
  return check_hidden(state, d, p, dw_pw_target(p));
}

// P's node: D's head (Join.h) with its output's parameters as mid_*, and D's geometry; P's
// own geometry is the 1x1's, implied.
void merge_dw_pw(const Fusion& d, Fusion& p) {
  merge_writer_head(d, p, "mid_");
  for (const char* name : {"stride", "padding", "dilation"}) {
    p.node.args[name] = d.node.args.at(name);
  }
  p.node.args.erase("groups");
  p.node.args.erase("upscale_factor");
}

// ---- the 1x1 expansion into the merged op reading it ----

bool is_dw_pw(const Graph&, const Fusion& p) {
  return p.node.op == "q8ta_conv2d_dw_pw" || p.node.op == "q8ta_conv2d_dw_pw_add";
}

std::string pw_dw_pw_target(const Fusion& p) {
  return p.node.op == "q8ta_conv2d_dw_pw_add" ? "q8ta_conv2d_pw_dw_pw_add" : "q8ta_conv2d_pw_dw_pw";
}

// Its output channels are the depthwise's (the depthwise's groups are its input's channels),
// so the channel limit holds already.
std::string check_pw_dw_pw(const FuseState& state, const Fusion& e, const Fusion& p) {
  std::string why = check_plain(e, "expansion");
  if (why.empty()) why = check_pointwise_geometry(state.graph, e, "expansion");
  if (why.empty()) why = check_hidden(state, e, p, pw_dw_pw_target(p));
  return why;
}

// P's node: E's head (Join.h) with its output's parameters as expand_*, before P's depthwise
// weights (E's geometry is the 1x1's, implied).
void merge_pw_dw_pw(const Fusion& e, Fusion& p) { merge_writer_head(e, p, "expand_"); }

}  // namespace

void join_depthwise_pointwise(FuseState& state) {
  run_join(state, {"depthwise", is_pointwise_candidate, is_depthwise, check_dw_pw, dw_pw_target,
                   merge_dw_pw});
  run_join(state, {"1x1 expansion", is_dw_pw, is_one_conv, check_pw_dw_pw, pw_dw_pw_target,
                   merge_pw_dw_pw});
}

}  // namespace vkd::compiler::fusion
