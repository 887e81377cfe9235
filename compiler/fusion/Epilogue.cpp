// Ops that join the epilogue of the int8 convolution before them: the convolution's store does
// their work, one dispatch instead of two, and the bytes stay those of the two ops in turn.
//   dq -> [clone]* -> aten.pixel_shuffle -> [clone]* -> q that moves the bytes (the qparams
//   round-trip) of a q8ta_conv2d's output that nothing else reads => q8ta_conv2d_ps: the
//   convolution computes its channels in phase-major order (runtime/ops/Conv2d.cpp permutes
//   the weights when it loads them) and writes each packed word at its shuffled place.
// Anything else stays the shuffle's own op, with the reason in the report; the compiler checks
// here exactly what the runtime's q8ta_conv2d_ps requires (groups 1, channels after the shuffle
// a multiple of 4), so a fused graph always loads.
#include <string>

#include "compiler/fusion/Patterns.h"

namespace vkd::compiler::fusion {
namespace {

// "" when q8ta_conv2d match `f` can write its output pixel-shuffled by `factor`.
std::string check_shuffled_store(const FuseState& state, const Fusion& f,
                                 const EpilogueCandidate& c, int64_t factor) {
  if (!state.options.fuse_epilogues) return "epilogue fusion is off (--no-fuse-epilogue)";
  if (f.node.op == "q8ta_linear") {
    return "q8ta_linear writes [..., M, N] rows: its N is the shuffle's width, not its channels";
  }
  std::string why = state.read_as_written(c.x_q, c.in_q);
  if (!why.empty()) return why;
  why = check_round_trip(c.in_q, c.out_q);
  if (!why.empty()) return "only a shuffle that moves the bytes joins: " + why;
  const int64_t groups = std::get<int64_t>(f.node.args.at("groups"));
  if (groups != 1) {
    return "groups " + std::to_string(groups) +
           ": the shuffled store computes the channels in phase-major order, across groups";
  }
  const int64_t channels = state.graph.value(f.node.inputs.at(1)).shape.at(0) / (factor * factor);
  if (channels % 4 != 0) {
    return std::to_string(channels) + " channels after the shuffle, not a multiple of 4: a "
           "packed word would hold channels of two sub-pixel phases";
  }
  return "";
}

}  // namespace

bool join_shuffle_epilogue(FuseState& state, const EpilogueCandidate& c, int64_t factor) {
  Fusion* f = state.fusion_writing(c.x_q);
  if (f == nullptr || (f->node.op != "q8ta_conv2d" && f->node.op != "q8ta_linear")) return false;
  const std::string producer = f->node.op + " " + quoted(c.x_q);
  const std::string why = check_shuffled_store(state, *f, c, factor);
  if (!why.empty() || !state.may_target("q8ta_conv2d_ps")) {
    state.note("not fused: " + c.chain + " (" + node_list(c.nodes) + ") into the epilogue of " +
               producer + ": " + (why.empty() ? "q8ta_conv2d_ps has no kernel" : why));
    return false;
  }
  state.absorb(*f, c.nodes, c.dead, c.output, c.out_q);
  FuseState::retarget(*f, "q8ta_conv2d_ps");
  f->node.args["upscale_factor"] = factor;
  state.note("fused " + c.chain + " (" + node_list(c.nodes) + ") into the epilogue of " +
             producer + ": q8ta_conv2d_ps writes " + quoted(c.output) +
             " pixel-shuffled (upscale " + std::to_string(factor) + ")");
  return true;
}

}  // namespace vkd::compiler::fusion
