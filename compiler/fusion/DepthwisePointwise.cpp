// A depthwise convolution and the 1x1 convolution that alone reads its int8 output, as one op:
//   committed q8ta_conv2d match D, depthwise (groups == C_in == C_out, weight [C, 1, KH, KW],
//   a plain int8 output "mid"), and committed match P reading mid through a dequantize with the
//   scale and zero point mid was written with, P a 1x1 q8ta_conv2d (stride 1, padding 0,
//   dilation 1, groups 1) or q8ta_conv2d_add with upscale_factor 1
//   => q8ta_conv2d_dw_pw / q8ta_conv2d_dw_pw_add: one dispatch keeps each tile of mid in
//   shared memory and runs the 1x1 on it, so mid is never written (on CPU devices the runtime
//   runs the two convolutions one after the other; the bytes are the same either way).
// Run once every pattern was matched, so P has already taken its residual add. The compiler
// checks exactly what the runtime requires (runtime/ops/DepthwisePointwise.h): C at most
// kMaxDepthwisePointwiseChannels, mid read by nothing else; anything else keeps the two ops,
// with the reason in the report.
#include <string>
#include <vector>

#include "compiler/fusion/Patterns.h"
#include "runtime/core/ConvRoutes.h"

namespace vkd::compiler::fusion {
namespace {

const std::vector<int64_t>& weight_shape(const Graph& g, const Fusion& f) {
  return g.value(f.node.inputs.at(1)).shape;  // [C_out, C_in / groups, KH, KW]
}

// A q8ta_conv2d family match whose convolution is depthwise (any variant; the merged op has no
// groups argument and is none).
bool is_depthwise(const Graph& g, const Fusion& f) {
  if (f.node.op.rfind("q8ta_conv2d", 0) != 0 || !f.node.args.count("groups")) return false;
  const int64_t groups = arg_int(f.node, "groups");
  const std::vector<int64_t>& w = weight_shape(g, f);
  return w.size() == 4 && w[0] == groups && w[1] == 1;
}

// "" when P's convolution is the fused op's second one: a 1x1 of stride 1, padding 0, dilation
// 1 and groups 1.
std::string check_pointwise_geometry(const Graph& g, const Fusion& p) {
  const std::vector<int64_t>& w = weight_shape(g, p);
  std::string what;
  if (w.at(2) != 1 || w.at(3) != 1) {
    what = "a " + std::to_string(w[2]) + "x" + std::to_string(w[3]) + " kernel";
  } else if (arg_ints(p.node, "stride") != std::vector<int64_t>{1, 1}) {
    what = "stride " + shape_str(arg_ints(p.node, "stride"));
  } else if (arg_ints(p.node, "padding") != std::vector<int64_t>{0, 0}) {
    what = "padding " + shape_str(arg_ints(p.node, "padding"));
  } else if (arg_ints(p.node, "dilation") != std::vector<int64_t>{1, 1}) {
    what = "dilation " + shape_str(arg_ints(p.node, "dilation"));
  } else if (arg_int(p.node, "groups") != 1) {
    what = "groups " + std::to_string(arg_int(p.node, "groups"));
  }
  return what.empty() ? "" : what + ": the second convolution must be a 1x1 of stride 1, "
                                    "padding 0, dilation 1 and groups 1";
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
  return what.empty() ? "" : what + ": the fused op's store writes int8, or adds a residual "
                                    "tensor (q8ta_conv2d_add with upscale_factor 1)";
}

// The backend op D and the 1x1 match P become together.
std::string target_of(const Fusion& p) {
  return p.node.op == "q8ta_conv2d_add" ? "q8ta_conv2d_dw_pw_add" : "q8ta_conv2d_dw_pw";
}

// "" when depthwise match D and the 1x1 match P reading its output can be one op.
std::string check_pair(const FuseState& state, const Fusion& d, const Fusion& p) {
  if (!state.options.fuse_epilogues) return "epilogue fusion is off (--no-fuse-epilogue)";
  if (d.node.op != "q8ta_conv2d") {
    return "the depthwise is " + d.node.op + ": only a plain q8ta_conv2d (int8 output) fuses";
  }
  std::string why = check_pointwise_store(p.node);
  if (why.empty()) why = check_pointwise_geometry(state.graph, p);
  if (!why.empty()) return why;
  const int64_t channels = weight_shape(state.graph, d).at(0);
  if (channels > kMaxDepthwisePointwiseChannels) {
    return std::to_string(channels) + " channels: the fused kernel keeps the depthwise " +
           "output's tile in shared memory, at most " +
           std::to_string(kMaxDepthwisePointwiseChannels) + " channels";
  }
  why = state.read_as_written(d.node.outputs.at(0), {arg_float(p.node, "input_scale"),
                                                     arg_int(p.node, "input_zero_point")});
  if (why.empty() && !state.may_target(target_of(p))) why = target_of(p) + " has no kernel";
  return why;
}

// P's node becomes `target`: D's input, qparams, weights and geometry, D's output parameters as
// mid_*, then P's weights and everything after them (P's input qparams are mid's, checked equal).
void merge(FuseState& state, Fusion& d, Fusion& p, const std::string& target) {
  const Node& dw = d.node;
  Node& pw = p.node;
  pw.inputs[0] = dw.inputs.at(0);
  pw.inputs.insert(pw.inputs.begin() + 1, dw.inputs.begin() + 1, dw.inputs.begin() + 4);
  for (const char* name : {"input_scale", "input_zero_point", "stride", "padding", "dilation"}) {
    pw.args[name] = dw.args.at(name);
  }
  pw.args["mid_scale"] = dw.args.at("output_scale");
  pw.args["mid_zero_point"] = dw.args.at("output_zero_point");
  pw.args["mid_activation_min"] = dw.args.at("activation_min");
  pw.args["mid_activation_max"] = dw.args.at("activation_max");
  pw.args.erase("groups");
  pw.args.erase("upscale_factor");
  const std::string& mid = dw.outputs.at(0);
  p.nodes.insert(p.nodes.begin(), d.nodes.begin(), d.nodes.end());
  p.dead.insert(p.dead.end(), d.dead.begin(), d.dead.end());
  p.dead.push_back(mid);
  p.folded.insert(p.folded.end(), d.folded.begin(), d.folded.end());
  state.produced.erase(mid);
  FuseState::retarget(p, target);
}

}  // namespace

void join_depthwise_pointwise(FuseState& state) {
  const Graph& g = state.graph;
  std::vector<bool> merged(state.fusions.size(), false);
  for (size_t k = 0; k < state.fusions.size(); ++k) {
    Fusion& p = state.fusions[k];
    if (merged[k] || p.node.op.rfind("q8ta_conv2d", 0) != 0 || p.node.inputs.empty()) continue;
    Fusion* writer = state.fusion_writing(p.node.inputs[0]);
    // Only after a depthwise convolution: any other producer is simply not this pattern.
    if (writer == nullptr || !is_depthwise(g, *writer)) continue;
    const size_t at = static_cast<size_t>(writer - state.fusions.data());
    if (merged[at]) continue;
    Fusion& d = *writer;
    const std::string& mid = d.node.outputs[0];
    const std::string into = "depthwise " + d.node.op + " " + quoted(mid) + " (" +
                             node_list(d.nodes) + ") into " + p.node.op + " " +
                             quoted(p.node.outputs.at(0)) + " (" + node_list(p.nodes) + ")";
    const std::string why = check_pair(state, d, p);
    if (!why.empty()) {
      state.note("not fused: " + into + ": " + why);
      continue;
    }
    const std::string target = target_of(p);
    const std::string channels = std::to_string(weight_shape(g, d).at(0));
    merge(state, d, p, target);
    merged[at] = true;
    state.note("fused " + into + ": " + target + " reads " + quoted(p.node.inputs[0]) +
               " and writes " + quoted(p.node.outputs.at(0)) + "; " + quoted(mid) + " (" +
               channels + " channels) is not written");
  }
  std::vector<Fusion> kept;
  for (size_t k = 0; k < state.fusions.size(); ++k) {
    if (!merged[k]) kept.push_back(std::move(state.fusions[k]));
  }
  state.fusions = std::move(kept);
}

}  // namespace vkd::compiler::fusion
