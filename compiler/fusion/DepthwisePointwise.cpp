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

#include "compiler/fusion/Patterns.h"
#include "runtime/core/ConvRoutes.h"

namespace vkd::compiler::fusion {
namespace {

const std::vector<int64_t>& weight_shape(const Graph& g, const Fusion& f) {
  return g.value(f.node.inputs.at(1)).shape;  // [C_out, C_in / groups, KH, KW]
}

// A match of one q8ta_conv2d family convolution (any variant: the merged ops have no groups
// argument and are none).
bool is_one_conv(const Graph&, const Fusion& f) {
  return f.node.op.rfind("q8ta_conv2d", 0) == 0 && f.node.args.count("groups");
}

bool is_depthwise(const Graph& g, const Fusion& f) {
  if (!is_one_conv(g, f)) return false;
  const int64_t groups = arg_int(f.node, "groups");
  const std::vector<int64_t>& w = weight_shape(g, f);
  return w.size() == 4 && w[0] == groups && w[1] == 1;
}

// "" when match f's convolution is a 1x1 of stride 1, padding 0, dilation 1 and groups 1 (the
// fused op's `role` convolution, for the reason).
std::string check_pointwise_geometry(const Graph& g, const Fusion& f, const std::string& role) {
  const std::vector<int64_t>& w = weight_shape(g, f);
  std::string what;
  if (w.at(2) != 1 || w.at(3) != 1) {
    what = "a " + std::to_string(w[2]) + "x" + std::to_string(w[3]) + " kernel";
  } else if (arg_ints(f.node, "stride") != std::vector<int64_t>{1, 1}) {
    what = "stride " + shape_str(arg_ints(f.node, "stride"));
  } else if (arg_ints(f.node, "padding") != std::vector<int64_t>{0, 0}) {
    what = "padding " + shape_str(arg_ints(f.node, "padding"));
  } else if (arg_ints(f.node, "dilation") != std::vector<int64_t>{1, 1}) {
    what = "dilation " + shape_str(arg_ints(f.node, "dilation"));
  } else if (arg_int(f.node, "groups") != 1) {
    what = "groups " + std::to_string(arg_int(f.node, "groups"));
  }
  return what.empty() ? "" : what + ": the " + role + " must be a 1x1 of stride 1, padding 0, "
                                    "dilation 1 and groups 1";
}

// "" when match f, the fused op's `role` convolution, writes a plain int8 output.
std::string check_plain(const Fusion& f, const std::string& role) {
  if (f.node.op == "q8ta_conv2d") return "";
  return "the " + role + " is " + f.node.op + ": only a plain q8ta_conv2d (int8 output) fuses";
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

// "" when the fused op may read `w`'s output inside itself: `target` may be targeted, and
// nothing but P (through the dequantize with P's input qparams) reads it.
std::string check_hidden(const FuseState& state, const Fusion& w, const Fusion& p,
                         const std::string& target) {
  std::string why = state.read_as_written(
      w.node.outputs.at(0), {arg_float(p.node, "input_scale"), arg_int(p.node, "input_zero_point")});
  if (why.empty() && !state.may_target(target)) why = target + " has no kernel";
  return why;
}

// ---- the depthwise into the 1x1 reading it ----

bool is_pointwise_candidate(const Fusion& p) {
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

// P's node: D's input, qparams, weights and geometry, D's output parameters as mid_*, then P's
// weights and everything after them (P's input qparams are mid's, checked equal).
void merge_dw_pw(const Fusion& d, Fusion& p) {
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
}

// ---- the 1x1 expansion into the merged op reading it ----

bool is_dw_pw(const Fusion& p) {
  return p.node.op == "q8ta_conv2d_dw_pw" || p.node.op == "q8ta_conv2d_dw_pw_add";
}

std::string pw_dw_pw_target(const Fusion& p) {
  return p.node.op == "q8ta_conv2d_dw_pw_add" ? "q8ta_conv2d_pw_dw_pw_add"
                                              : "q8ta_conv2d_pw_dw_pw";
}

// Its output channels are the depthwise's (the depthwise's groups are its input's channels),
// so the channel limit holds already.
std::string check_pw_dw_pw(const FuseState& state, const Fusion& e, const Fusion& p) {
  std::string why = check_plain(e, "expansion");
  if (why.empty()) why = check_pointwise_geometry(state.graph, e, "expansion");
  if (why.empty()) why = check_hidden(state, e, p, pw_dw_pw_target(p));
  return why;
}

// P's node: E's input, qparams and weights, E's output parameters as expand_*, then P's
// depthwise weights and everything after them (P's input qparams are E's output's, checked
// equal; E's geometry is the 1x1's, implied).
void merge_pw_dw_pw(const Fusion& e, Fusion& p) {
  const Node& ex = e.node;
  Node& n = p.node;
  n.inputs[0] = ex.inputs.at(0);
  n.inputs.insert(n.inputs.begin() + 1, ex.inputs.begin() + 1, ex.inputs.begin() + 4);
  n.args["input_scale"] = ex.args.at("input_scale");
  n.args["input_zero_point"] = ex.args.at("input_zero_point");
  n.args["expand_scale"] = ex.args.at("output_scale");
  n.args["expand_zero_point"] = ex.args.at("output_zero_point");
  n.args["expand_activation_min"] = ex.args.at("activation_min");
  n.args["expand_activation_max"] = ex.args.at("activation_max");
}

// One join: a committed match W writing the first input of a committed match P merges into P.
struct Join {
  const char* what;                                // W's part in the report: "depthwise"
  bool (*reads)(const Fusion& p);                  // P is a candidate
  bool (*writes)(const Graph& g, const Fusion& w); // W is this pattern (else no line)
  std::string (*check)(const FuseState& state, const Fusion& w, const Fusion& p);
  std::string (*target)(const Fusion& p);
  void (*merge)(const Fusion& w, Fusion& p);       // P's inputs and arguments
};

// Every (W, P) pair of `join`, reported either way; a W merged into P goes from the matches and
// its output (now computed inside P only) from the graph.
void run_join(FuseState& state, const Join& join) {
  const Graph& g = state.graph;
  std::vector<bool> merged(state.fusions.size(), false);
  for (size_t k = 0; k < state.fusions.size(); ++k) {
    Fusion& p = state.fusions[k];
    if (merged[k] || !join.reads(p)) continue;
    Fusion* writer = state.fusion_writing(p.node.inputs[0]);
    // Only after this pattern's producer: any other is simply not this pattern.
    if (writer == nullptr || !join.writes(g, *writer)) continue;
    const size_t at = static_cast<size_t>(writer - state.fusions.data());
    if (merged[at]) continue;
    const Fusion& w = *writer;
    const std::string& hidden = w.node.outputs[0];
    const std::string into = std::string(join.what) + " " + w.node.op + " " + quoted(hidden) +
                             " (" + node_list(w.nodes) + ") into " + p.node.op + " " +
                             quoted(p.node.outputs.at(0)) + " (" + node_list(p.nodes) + ")";
    const std::string why = state.options.fuse_epilogues
                                ? join.check(state, w, p)
                                : "epilogue fusion is off (--no-fuse-epilogue)";
    if (!why.empty()) {
      state.note("not fused: " + into + ": " + why);
      continue;
    }
    const std::string target = join.target(p);
    const std::string channels = std::to_string(weight_shape(g, w).at(0));
    join.merge(w, p);
    p.nodes.insert(p.nodes.begin(), w.nodes.begin(), w.nodes.end());
    p.dead.insert(p.dead.end(), w.dead.begin(), w.dead.end());
    p.dead.push_back(hidden);
    p.folded.insert(p.folded.end(), w.folded.begin(), w.folded.end());
    state.produced.erase(hidden);
    FuseState::retarget(p, target);
    merged[at] = true;
    state.note("fused " + into + ": " + target + " reads " + quoted(p.node.inputs[0]) +
               " and writes " + quoted(p.node.outputs.at(0)) + "; " + quoted(hidden) + " (" +
               channels + " channels) is not written");
  }
  std::vector<Fusion> kept;
  for (size_t k = 0; k < state.fusions.size(); ++k) {
    if (!merged[k]) kept.push_back(std::move(state.fusions[k]));
  }
  state.fusions = std::move(kept);
}

}  // namespace

void join_depthwise_pointwise(FuseState& state) {
  run_join(state, {"depthwise", is_pointwise_candidate, is_depthwise, check_dw_pw, dw_pw_target,
                   merge_dw_pw});
  run_join(state, {"1x1 expansion", is_dw_pw, is_one_conv, check_pw_dw_pw, pw_dw_pw_target,
                   merge_pw_dw_pw});
}

}  // namespace vkd::compiler::fusion
