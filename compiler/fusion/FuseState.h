// What the fusion patterns and direct lowerings of fuse_and_lower (compiler/Fuse.h) share: the
// graph being rewritten, the report, which nodes are already taken by a match, the matches
// themselves, and the quantization learnt for int8 activations; plus the small operations every
// pattern performs on them (report a match or a refusal, add a constant, record a quantization).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/GraphIR.h"
#include "compiler/PassReport.h"
#include "compiler/fusion/FuseOptions.h"
#include "compiler/fusion/Match.h"
#include "compiler/reference/HostTensor.h"

namespace vkd::compiler::fusion {

// One matched pattern, applied only after every anchor was tried (node indices stay valid
// while matching).
struct Fusion {
  std::vector<int> nodes;           // matched nodes (removed); the backend node replaces them
  std::vector<std::string> dead;    // intermediate values (removed)
  std::vector<std::string> folded;  // weight dq outputs the node no longer reads
  Node node;
};

// The start every single-input pattern shares: anchor node `anchor` reads, through its first
// input `x`, the output of a dequantize (node `dq`) and its float output feeds `tail`.
struct DqAnchor {
  std::string x;
  int dq = -1;
  Tail tail;
  std::vector<int> nodes;  // dq, the anchor, then the tail's nodes as far as they matched
  std::string chain;       // "dq -> <op> -> act -> q", for the report
};

// The reference interpreter's entry point (compiler/Interpreter.h, interpret), handed in by
// fuse_and_lower: the interpreter finds each op's reference through the descriptors of
// compiler/ops/, which sit above fusion, so a pattern that computes with it (the LUT's table)
// gets it from its caller instead of including it.
using InterpretFn = std::map<std::string, HostTensor> (*)(
    const Graph& g, const std::map<std::string, HostTensor>& inputs);

struct FuseState {
  FuseState(Graph& g, const FuseOptions& opts, InterpretFn interpret_fn);

  Graph& graph;
  FuseOptions options;
  InterpretFn interpret;
  PassReport report{"fuse_and_lower", {}};
  std::vector<bool> claimed;  // per node of the graph as given: part of a match
  std::vector<Fusion> fusions;
  std::map<std::string, std::string> scales_for;  // weight dq output -> weight_scales constant
  // Quantization of int8 activations: defined by their producer (q), else by the first
  // consumer (dq) in node order.
  std::map<std::string, QuantInfo> produced;
  std::map<std::string, std::vector<std::pair<int, QuantInfo>>> consumed;
  // int8 activations written or read by the torchao affine ops: their qparams are per-block
  // tensors, so they have no per-tensor QuantInfo (and none is expected of them).
  std::set<std::string> affine_int8;

  void note(std::string line);
  // Whether fusing or lowering into `backend` is allowed under `options`.
  bool may_target(const std::string& backend) const;
  // False (and reported) when options forbid fusing node `anchor` into `backend`; checked
  // before a pattern is matched, as matching adds constants to the graph.
  bool allowed(int anchor, const std::string& backend);
  bool any_claimed(const std::vector<int>& nodes) const;
  // Anchor `anchor` (one input, one output) as the start of a dq -> op [-> act] -> q pattern
  // into `backend`; nullopt, silently, when it is not a quantized pattern, or, reported, when
  // `backend` may not be targeted.
  std::optional<DqAnchor> match_dq_anchor(int anchor, const std::string& backend);

  // "dq -> aten.linear -> q": the labels of `head` nodes, the anchor's op, then `tail`'s.
  std::string chain_of(const std::vector<int>& head, int anchor,
                       const std::vector<int>& tail) const;
  void not_fused(const std::string& chain, const std::vector<int>& nodes,
                 const std::string& backend, const std::string& why);
  // Claims `f`'s nodes, reports the match (`detail` appended) and keeps `f` for applying.
  void commit(Fusion f, const std::string& chain, const std::string& detail);
  // The match of dq anchor `m` (node `anchor`; `nodes`: what it takes) into `backend`: its node
  // reads the dq's int8 input (inputs[0]; `in_q` as input_scale / input_zero_point, consumed)
  // and writes the tail's int8 output (`int8_out`) or the anchor's float output. The caller adds
  // its own inputs and args, then commits it.
  Fusion dq_anchor_fusion(int anchor, const DqAnchor& m, const std::vector<int>& nodes,
                          const std::string& backend, const QuantInfo& in_q, bool int8_out);
  // Match `f`'s node writes the matched quantize `tail`'s int8 output: the tail's intermediates
  // go, its qparams become output_scale / output_zero_point and the output's produced qparams.
  void take_quantized_tail(Fusion& f, const Tail& tail);
  // The committed match whose node writes `v`, or nullptr.
  Fusion* fusion_writing(const std::string& v);
  // Grows committed match `f` by `nodes` (a chain reading its output): its node now writes
  // `output`, quantized with `q`; its old output and the values in `dead` go.
  void absorb(Fusion& f, const std::vector<int>& nodes, const std::vector<std::string>& dead,
              const std::string& output, const QuantInfo& q);
  // The origin of a fused node: the anchor's own origin, or its place and op.
  std::string fused_origin(int anchor, const std::string& backend) const;
  // Match `f`'s node becomes backend op `op` (an epilogue joined it); its origin says so.
  static void retarget(Fusion& f, const std::string& op);

  // The float32 weight_scales constant of `w` (one per weight dq, shared by its users).
  std::string scales_constant(const WeightFold& w);
  // A float32 zeros constant of `n` elements, the bias of `output`'s node.
  std::string zero_bias(const std::string& output, int64_t n);
  // "" when int8 activation `v`, written by a fused op, is read by one node only (a dequantize
  // with `read_as`) with the scale and zero point it was written with: an op reading it can
  // then join its producer's epilogue.
  std::string read_as_written(const std::string& v, const QuantInfo& read_as) const;
  // Records that node `node` (original index) dequantizes int8 activation `v` with `q`.
  void consume_quant(const std::string& v, int node, const QuantInfo& q);
};

}  // namespace vkd::compiler::fusion
