// Ops that join the epilogue of the int8 convolution or linear before them: its store does
// their work, one dispatch instead of two, and the bytes stay those of the ops in turn.
//   dq -> [clone]* -> aten.pixel_shuffle -> [clone]* -> q that moves the bytes (the qparams
//   round-trip) of a q8ta_conv2d's output that nothing else reads => q8ta_conv2d_ps: the
//   convolution computes its channels in phase-major order (runtime/ops/Conv2d.cpp permutes
//   the weights when it loads them) and writes each packed word at its shuffled place.
//   dq(a), dq(b) -> aten.add.Tensor [-> act] -> q where a (or b) is the output of a
//   q8ta_conv2d / q8ta_conv2d_ps / q8ta_linear that nothing else reads, and the other operand
//   has the same sizes => q8ta_conv2d_add / q8ta_linear_add: the op's int8 value, computed as
//   before, is q8ta_add's operand and the other is read from memory at the same position
//   (float addition commutes, so which operand the graph named first changes no bit).
//   dq of a q8ta_conv2d's output that nothing else reads, whose float result no node reads (the
//   graph's last dequantize, writing a graph output) => q8ta_conv2d_q_dq: the convolution
//   requantizes as before and its store dequantizes that int8 value as q8ta_dequantize does.
// And the mirror at the other end, in the convolution's load: a q whose float input nothing else
// reads, writing an int8 value only a q8ta_conv2d match reads (through its dequantize, with the
// same scale and zero point) => q8ta_conv2d_fq: the direct kernel reads the float32 input and
// quantizes each element as q8ta_quantize does (the graph's first quantize).
// Anything else stays its own op, with the reason in the report; the compiler checks here
// exactly what the runtime requires (groups 1 and channels after the shuffle a multiple of 4 for
// a shuffle, no depthwise convolution for an add), so a fused graph always loads.
#include <string>

#include "compiler/fusion/Patterns.h"
#include "partitioner_schema/ConvRoutes.h"

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
    return std::to_string(channels) +
           " channels after the shuffle, not a multiple of 4: a "
           "packed word would hold channels of two sub-pixel phases";
  }
  return "";
}

// The backend op a match `op` becomes with an add in its epilogue, and the prefix of its own
// output's arguments there; "" for an op that takes none.
struct AddTarget {
  const char* op;
  const char* prefix;
};
AddTarget add_target(const std::string& op) {
  if (op == "q8ta_conv2d" || op == "q8ta_conv2d_ps") return {"q8ta_conv2d_add", "conv_"};
  if (op == "q8ta_linear") return {"q8ta_linear_add", "linear_"};
  return {"", ""};
}

// "" when match `f` (writing operand `side` of `c`) can add the other operand in its store.
std::string check_add_store(const FuseState& state, const Fusion& f, const AddCandidate& c,
                            int side) {
  if (!state.options.fuse_epilogues) return "epilogue fusion is off (--no-fuse-epilogue)";
  const Graph& g = state.graph;
  const std::string& other = c.operand[1 - side];
  if (other == c.operand[side]) return "both operands are its output";
  std::string why = state.read_as_written(c.operand[side], c.in_q[side]);
  if (!why.empty()) return why;
  if (g.value(other).shape != g.value(c.operand[side]).shape) {
    return quoted(other) + " " + shape_str(g.value(other).shape) +
           " is broadcast; the epilogue adds a tensor of the output's sizes " +
           shape_str(g.value(c.operand[side]).shape);
  }
  if (f.node.op != "q8ta_linear") {
    const int64_t groups = std::get<int64_t>(f.node.args.at("groups"));
    const Value& w = g.value(f.node.inputs.at(1));
    if (groups > 1 && groups == w.shape.at(0) && w.shape.at(1) == 1) {
      return "a depthwise convolution (groups " + std::to_string(groups) +
             "): its kernel's store adds nothing";
    }
  }
  return "";
}

// Rewrites match `f` into `target`, reading `other` (dequantized by node `other_dq` with
// `other_q`) and writing c's output: its own output's arguments get the target's prefix.
void add_in_store(FuseState& state, Fusion& f, const AddCandidate& c, const AddTarget& target,
                  int side) {
  Args& args = f.node.args;
  const std::string prefix = target.prefix;
  for (const char* name : {"scale", "zero_point"}) {
    args[prefix + name] = args.at(std::string("output_") + name);
  }
  for (const char* name : {"activation_min", "activation_max"}) {
    args[prefix + name] = args.at(name);
  }
  if (target.op == std::string("q8ta_conv2d_add") && !args.count("upscale_factor")) {
    args["upscale_factor"] = int64_t{1};
  }
  const QuantInfo& other_q = c.in_q[1 - side];
  args["other_scale"] = other_q.scale;
  args["other_zero_point"] = other_q.zero_point;
  args["output_scale"] = c.out_q.scale;
  args["output_zero_point"] = c.out_q.zero_point;
  args["activation_min"] = c.activation.min;
  args["activation_max"] = c.activation.max;
  f.node.inputs.push_back(c.operand[1 - side]);
  state.absorb(f, c.nodes, c.dead, c.output, c.out_q);
  FuseState::retarget(f, target.op);
  state.consume_quant(c.operand[1 - side], c.dq[1 - side], other_q);
}

// "" when the convolution writing `x` can dequantize it in its store as the dq reading it with
// `q`.
std::string check_dequantized_store(const FuseState& state, const std::string& x,
                                    const QuantInfo& q) {
  if (!state.options.fuse_epilogues) return "epilogue fusion is off (--no-fuse-epilogue)";
  return state.read_as_written(x, q);
}

// The committed q8ta_conv2d family match whose convolution reads int8 value `v`, or nullptr.
Fusion* conv_reading(FuseState& state, const std::string& v) {
  for (Fusion& f : state.fusions) {
    if (f.node.op.rfind("q8ta_conv2d", 0) == 0 && !f.node.inputs.empty() && f.node.inputs[0] == v) {
      return &f;
    }
  }
  return nullptr;
}

// "" when the convolution of match `f` can quantize on load the float input of quantize node
// `n` (its output written with `q`). Only plain q8ta_conv2d has the variant: its store writes an
// int8 output, neither pixel-shuffled, added to nor dequantized (the kernel's store and load
// would combine, but each combination is a shader variant no graph has needed yet).
std::string check_quantized_load(const FuseState& state, const Fusion& f, const Node& n,
                                 const QuantInfo& q) {
  if (!state.options.fuse_epilogues) return "epilogue fusion is off (--no-fuse-epilogue)";
  const Graph& g = state.graph;
  const std::string &x = n.inputs[0], &x_q = n.outputs[0];
  std::string why = single_use(g, x_q);
  if (!why.empty()) return why;
  const auto readers = g.consumers(x);
  if (readers.size() != 1) {
    return quoted(x) + " has " + std::to_string(readers.size()) + " consumers (" +
           node_list(readers) + "): the float input is read by other nodes too";
  }
  if (g.value(x).is_constant()) return quoted(x) + " is a constant";
  if (f.node.op != "q8ta_conv2d") {
    return f.node.op + " has no quantizing load (only q8ta_conv2d, a plain int8 output, has)";
  }
  // Only the direct kernel quantizes on load: a convolution that would run a faster route on
  // its int8 input keeps the quantize (on the H100 resnet18's 7x7 stem took 70 us direct with
  // the float input against 30 for quantize + im2col + GEMM).
  const std::vector<int64_t>& w = g.value(f.node.inputs.at(1)).shape;  // [C_out, C_in/g, KH, KW]
  const int64_t groups = std::get<int64_t>(f.node.args.at("groups"));
  if (groups != 1) {
    return "groups " + std::to_string(groups) +
           ": the grouped / depthwise routes read int8 (only the direct kernel quantizes on load)";
  }
  if (w.at(2) == 1 && w.at(3) == 1) return "a 1x1 convolution runs the linear kernels on int8";
  if (w.at(1) * w.at(2) * w.at(3) >= kIm2colMinProducts) {
    return std::to_string(w.at(1) * w.at(2) * w.at(3)) +
           " products per output (>= " + std::to_string(kIm2colMinProducts) +
           ") run im2col + GEMM on int8, faster than the direct kernel";
  }
  const QuantInfo read_as{arg_float(f.node, "input_scale"), arg_int(f.node, "input_zero_point")};
  if (!same_scale_and_zero_point(q, read_as)) {
    return "the dq (" + describe_quant(read_as) + ") reads " + quoted(x_q) +
           " with other parameters than it was written with (" + describe_quant(q) + ")";
  }
  return "";
}

}  // namespace

void fuse_quantize(FuseState& state, int anchor) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[anchor];
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return;
  Fusion* f = conv_reading(state, n.outputs[0]);
  // Only a convolution has the quantizing load: before any other op the quantize is simply its
  // own op (lowered as usual), not a missed fusion worth a report line.
  if (f == nullptr) return;
  const std::string into = "q (" + node_list({anchor}) + ") into the load of " + f->node.op + " " +
                           quoted(f->node.outputs.at(0)) + ": ";
  QuantInfo q;
  std::string why = check_q(g, n, anchor, q);
  if (why.empty()) why = check_quantized_load(state, *f, n, q);
  if (why.empty() && !state.may_target("q8ta_conv2d_fq")) why = "q8ta_conv2d_fq has no kernel";
  if (!why.empty()) {
    state.note("not fused: " + into + why);
    return;
  }
  const std::string x = n.inputs[0];
  state.claimed[anchor] = true;
  f->nodes.push_back(anchor);
  f->dead.push_back(n.outputs[0]);
  f->node.inputs[0] = x;
  f->node.args["input_quant_min"] = q.quant_min;
  f->node.args["input_quant_max"] = q.quant_max;
  FuseState::retarget(*f, "q8ta_conv2d_fq");
  state.note("fused " + into + "q8ta_conv2d_fq reads " + quoted(x) +
             " (float32) and quantizes it on load");
}

void fuse_dequantize(FuseState& state, int anchor) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[anchor];
  // Only a dequantize whose float result no node reads: one that feeds an op is that op's
  // pattern's.
  if (n.inputs.empty() || n.outputs.size() != 1 || !g.consumers(n.outputs[0]).empty()) return;
  const std::string& x = n.inputs[0];
  Fusion* f = state.fusion_writing(x);
  // Only a convolution has the dequantizing store: after any other op the dequantize is simply
  // its own op (lowered as usual), not a missed fusion worth a report line.
  if (f == nullptr || f->node.op != "q8ta_conv2d") return;
  const std::string into = "dq (" + node_list({anchor}) + ") into the epilogue of " + f->node.op +
                           " " + quoted(x) + ": ";
  QuantInfo q;
  std::string why = check_activation_dq(g, n, anchor, q);
  if (why.empty()) why = check_dequantized_store(state, x, q);
  if (why.empty() && !state.may_target("q8ta_conv2d_q_dq")) why = "q8ta_conv2d_q_dq has no kernel";
  if (!why.empty()) {
    state.note("not fused: " + into + why);
    return;
  }
  const std::string output = n.outputs[0];
  state.absorb(*f, {anchor}, {}, output, q);
  state.produced.erase(output);  // a float value
  FuseState::retarget(*f, "q8ta_conv2d_q_dq");
  state.note("fused " + into + "q8ta_conv2d_q_dq writes " + quoted(output) +
             " dequantized (float32)");
}

bool join_add_epilogue(FuseState& state, const AddCandidate& c) {
  for (int side = 0; side < 2; ++side) {
    Fusion* f = state.fusion_writing(c.operand[side]);
    const AddTarget target = add_target(f ? f->node.op : "");
    if (target.op[0] == '\0') continue;
    const std::string into = " (" + node_list(c.nodes) + ") into the epilogue of " + f->node.op +
                             " " + quoted(c.operand[side]) + ": ";
    std::string why = check_add_store(state, *f, c, side);
    if (why.empty() && !state.may_target(target.op))
      why = std::string(target.op) + " has no kernel";
    if (!why.empty()) {
      state.note("not fused: " + c.chain + into + why);
      continue;
    }
    add_in_store(state, *f, c, target, side);
    state.note("fused " + c.chain + into + target.op + " adds " + quoted(c.operand[1 - side]) +
               " and writes " + quoted(c.output) + " (activation " + c.activation.label + ")");
    return true;
  }
  return false;
}

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
  state.note("fused " + c.chain + " (" + node_list(c.nodes) + ") into the epilogue of " + producer +
             ": q8ta_conv2d_ps writes " + quoted(c.output) + " pixel-shuffled (upscale " +
             std::to_string(factor) + ")");
  return true;
}

}  // namespace vkd::compiler::fusion
