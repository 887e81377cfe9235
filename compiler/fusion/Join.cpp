#include "compiler/fusion/Join.h"

#include "compiler/fusion/Match.h"

namespace vkd::compiler::fusion {

const std::vector<int64_t>& weight_shape(const Graph& g, const Fusion& f) {
  return g.value(f.node.inputs.at(1)).shape;
}

bool is_one_conv(const Graph&, const Fusion& f) {
  return f.node.op.rfind("q8ta_conv2d", 0) == 0 && f.node.args.count("groups");
}

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
  return what.empty() ? ""
                      : what + ": the " + role +
                            " must be a 1x1 of stride 1, padding 0, "
                            "dilation 1 and groups 1";
}

std::string check_conv_op(const Fusion& f, const std::string& role, const std::string& op,
                          const std::string& what) {
  if (f.node.op == op) return "";
  return "the " + role + " is " + f.node.op + ": only " + what + " fuses";
}

std::string check_hidden(const FuseState& state, const Fusion& w, const Fusion& p,
                         const std::string& target) {
  const QuantInfo read_as{arg_float(p.node, "input_scale"), arg_int(p.node, "input_zero_point")};
  std::string why = state.read_as_written(w.node.outputs.at(0), read_as);
  if (why.empty() && !state.may_target(target)) why = target + " has no kernel";
  return why;
}

void merge_writer_head(const Fusion& w, Fusion& p, const std::string& prefix) {
  const Node& from = w.node;
  Node& n = p.node;
  n.inputs[0] = from.inputs.at(0);
  n.inputs.insert(n.inputs.begin() + 1, from.inputs.begin() + 1, from.inputs.begin() + 4);
  n.args["input_scale"] = from.args.at("input_scale");
  n.args["input_zero_point"] = from.args.at("input_zero_point");
  n.args[prefix + "scale"] = from.args.at("output_scale");
  n.args[prefix + "zero_point"] = from.args.at("output_zero_point");
  n.args[prefix + "activation_min"] = from.args.at("activation_min");
  n.args[prefix + "activation_max"] = from.args.at("activation_max");
}

void run_join(FuseState& state, const Join& join) {
  const Graph& g = state.graph;
  std::vector<bool> merged(state.fusions.size(), false);
  for (size_t k = 0; k < state.fusions.size(); ++k) {
    Fusion& p = state.fusions[k];
    if (merged[k] || !join.reads(g, p)) continue;
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
    // The hidden value's own channels (a pixel-shuffled W's weights have r^2 times as many).
    const std::string channels = std::to_string(g.value(hidden).shape.at(1));
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

}  // namespace vkd::compiler::fusion
