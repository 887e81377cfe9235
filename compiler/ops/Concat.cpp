// Joining and cutting tensors along one dim: aten.cat, and the splits aten.split_with_sizes_copy,
// aten.split_copy.Tensor, aten.chunk (one output per piece) and aten.slice_copy.Tensor (any
// dtype the interpreter holds; on the backend, int8 data between a dq and a q).
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/fusion/CopiesBytes.h"
#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Lowering.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/QuantChain.h"
#include "compiler/reference/ReferenceContext.h"
#include "compiler/reference/Slicing.h"

// CPU reference of the ops that join and cut tensors along one dim: aten.cat and the splits
// (semantics above each function). Bytes are moved as they are (any dtype the interpreter holds,
// float16 included), so the results are exact.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// Elements before dim `dim` (outer) and bytes of one index along it (inner block).
struct Blocks {
  int64_t outer = 1, inner_bytes = 0;
};

Blocks blocks_of(const HostTensor& t, int64_t dim) {
  Blocks b;
  b.inner_bytes = static_cast<int64_t>(elem_bytes(t.dtype));
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (static_cast<int64_t>(d) < dim) b.outer *= t.shape[d];
    if (static_cast<int64_t>(d) > dim) b.inner_bytes *= t.shape[d];
  }
  return b;
}

}  // namespace

// aten.cat(tensors, dim=0): the tensors (one dtype, equal shapes but along `dim`, rank >= 1)
//   joined along `dim` in order; dim in [-rank, rank).
std::vector<HostTensor> reference_cat(const ReferenceContext& c) {
  const HostTensor& first = c.input(0, "tensors");
  c.require(elem_bytes(first.dtype) != 0, "unsupported dtype");
  c.require(!first.shape.empty(), "a zero-dimensional tensor cannot be concatenated");
  const int64_t dim = norm_dim(c, c.int_arg("dim", 0), first.shape.size());
  std::vector<int64_t> shape = first.shape;
  shape[static_cast<size_t>(dim)] = 0;
  std::vector<const HostTensor*> xs;
  for (size_t i = 0; i < c.node().inputs.size(); ++i) {
    const HostTensor& x = c.input(i, "tensors");
    std::vector<int64_t> a = x.shape, b = first.shape;
    if (a.size() == b.size()) a[static_cast<size_t>(dim)] = b[static_cast<size_t>(dim)] = 0;
    c.require(x.dtype == first.dtype && a == b,
              detail::concat("tensor ", i, " (", to_string(x.dtype), " ", shape_str(x.shape),
                             ") does not match tensor 0 (", to_string(first.dtype), " ",
                             shape_str(first.shape), ") but along dim ", dim));
    shape[static_cast<size_t>(dim)] += x.shape[static_cast<size_t>(dim)];
    xs.push_back(&x);
  }
  HostTensor out = make_tensor(first.dtype, shape);
  const Blocks ob = blocks_of(out, dim);
  const int64_t row = shape[static_cast<size_t>(dim)] * ob.inner_bytes;  // bytes per outer index
  int64_t offset = 0;  // bytes into each output row where the current tensor starts
  for (const HostTensor* x : xs) {
    const int64_t chunk = x->shape[static_cast<size_t>(dim)] * ob.inner_bytes;
    for (int64_t o = 0; o < ob.outer && chunk > 0; ++o) {
      std::memcpy(out.bytes.data() + o * row + offset, x->bytes.data() + o * chunk,
                  static_cast<size_t>(chunk));
    }
    offset += chunk;
  }
  return {out};
}

// aten.split_with_sizes_copy(self, split_sizes, dim=0), aten.split_copy.Tensor(self,
//   split_size, dim=0), aten.chunk(self, chunks, dim=0), aten.slice_copy.Tensor(self, dim=0,
//   start=None, end=None, step=1): one output per piece along `dim`, as PyTorch cuts it
//   (compiler/reference/Slicing.h); output k holds input indices start_k + j * step_k.
std::vector<HostTensor> reference_slices(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  c.require(elem_bytes(x.dtype) != 0, "unsupported dtype");
  int64_t dim = 0;
  std::vector<SliceRange> pieces;
  const SliceError e = slices_of(c.node(), x.shape, dim, pieces);
  c.require(e.ok(), e.field + ": " + e.why);
  const Blocks xb = blocks_of(x, dim);
  const int64_t d = x.shape[static_cast<size_t>(dim)];
  std::vector<HostTensor> outs;
  for (const SliceRange& r : pieces) {
    std::vector<int64_t> shape = x.shape;
    shape[static_cast<size_t>(dim)] = r.length;
    HostTensor out = make_tensor(x.dtype, shape);
    for (int64_t o = 0; o < xb.outer; ++o) {
      for (int64_t j = 0; j < r.length; ++j) {
        std::memcpy(out.bytes.data() + (o * r.length + j) * xb.inner_bytes,
                    x.bytes.data() + (o * d + r.start + j * r.step) * xb.inner_bytes,
                    static_cast<size_t>(xb.inner_bytes));
      }
    }
    outs.push_back(std::move(out));
  }
  return outs;
}

}  // namespace vkd::compiler

// Joining and cutting int8 data along one dim (runtime/ops/Concat.h).
// - dq, dq, ... -> aten.cat -> q => q8ta_cat: it reads the int8 inputs, each with its dq's
//   parameters, and writes the q's output.
// - dq -> aten.split_with_sizes_copy | aten.split_copy.Tensor | aten.chunk |
//   aten.slice_copy.Tensor -> q on each output that is read => one q8ta_slice per such output
//   (its start and step from the op's arguments, compiler/reference/Slicing.h); an output
//   nothing reads gets no node.
// Both requantize an input whose parameters differ from the output's and copy the bytes of one
// quantized like it; they fuse only when that gives what the edge graph's dq -> q gives for all
// 256 int8 values (compiler/reference/QuantChain.h), so the fused graph matches the interpreter
// bit for bit. Neither fuses an activation after it.
namespace vkd::compiler::fusion {
namespace {

// "" when q8ta_cat / q8ta_slice move every int8 value from `in` to `out` as dq -> q does: a
// byte copy where the kernel copies (the output's scale and zero point, the full int8 range),
// else the requantization clamped to the output's range.
std::string check_requantization(const QuantInfo& in, const QuantInfo& out) {
  const bool copies = copies_bytes(in, out);
  for (int64_t v = -128; v <= 127; ++v) {
    const int64_t want = reference_dq_clamp_q(v, in, {}, out);
    const int64_t got = copies ? v : requantize_clamp(v, in, out, out.quant_min, out.quant_max);
    if (got != want) {
      return "int8 value " + std::to_string(v) + " becomes " + std::to_string(got) + " (" +
             describe_quant(in) + " -> " + describe_quant(out) + "), dq -> q gives " +
             std::to_string(want);
    }
  }
  return "";
}

// "" when quantized tail `tail` of a join or cut can be its output (a q, no activation).
std::string check_tail(const Graph& g, const std::string& y, const Tail& tail) {
  if (tail.kind == Tail::None) return describe_consumers(g, y);
  if (tail.kind == Tail::Half) return tail.why;
  if (tail.act >= 0) return "an activation follows (it fuses none)";
  return "";
}

// The dequantized inputs of cat `n`: each a dq of an int8 activation, or of an int8 constant
// (a ViT's class token: constant_operand), read only by the cat; one activation at least.
std::string check_cat_inputs(const Graph& g, const Node& n, std::vector<int>& dqs,
                             std::vector<QuantInfo>& qs) {
  bool activation = false;
  for (const std::string& x : n.inputs) {
    const int p = g.producer(x);
    if (!node_is(g, p, kDq)) {
      return quoted(x) + " is not dequantized (" +
             (p >= 0                     ? "produced by " + g.nodes[p].op
              : g.value(x).is_constant() ? std::string("a constant")
                                         : "a graph input") +
             ")";
    }
    const bool constant = !constant_operand(g, p).empty();
    activation = activation || !constant;
    QuantInfo q;
    std::string why = check_operand_dq(g, p, constant, q);
    if (why.empty()) why = single_use(g, x);
    if (!why.empty()) return why;
    dqs.push_back(p);
    qs.push_back(q);
  }
  return activation ? "" : "every input is a constant";
}

// The backend node of a cat match: inputs the int8 values the dqs read (an int8x4 copy of a
// constant, as q8ta_add reads one).
Node cat_node(FuseState& state, int anchor, const std::vector<int>& dqs,
              const std::vector<QuantInfo>& qs, const Tail& tail) {
  Graph& g = state.graph;
  Node out;
  out.op = "q8ta_cat";
  std::vector<double> scales;
  std::vector<int64_t> zero_points;
  for (size_t k = 0; k < dqs.size(); ++k) {
    const std::string constant = constant_operand(g, dqs[k]);
    out.inputs.push_back(constant.empty() ? g.nodes[dqs[k]].inputs[0]
                                          : int8x4_constant(g, constant));
    scales.push_back(qs[k].scale);
    zero_points.push_back(qs[k].zero_point);
    if (constant.empty()) state.consume_quant(out.inputs.back(), dqs[k], qs[k]);
  }
  const Node& n = g.nodes[anchor];
  const size_t rank = g.value(n.outputs[0]).shape.size();
  const int64_t dim = arg_int(n, "dim");
  out.args["dim"] = dim < 0 ? dim + static_cast<int64_t>(rank) : dim;
  out.args["input_scales"] = scales;
  out.args["input_zero_points"] = zero_points;
  out.args["output_scale"] = tail.out_q.scale;
  out.args["output_zero_point"] = tail.out_q.zero_point;
  out.args["quant_min"] = tail.out_q.quant_min;
  out.args["quant_max"] = tail.out_q.quant_max;
  out.outputs = {g.nodes[tail.q].outputs[0]};
  out.origin = state.fused_origin(anchor, out.op);
  state.produced[out.outputs[0]] = tail.out_q;
  return out;
}

bool is_cut(const std::string& op) {
  return op == "aten.split_with_sizes_copy" || op == "aten.split_copy.Tensor" ||
         op == "aten.chunk" || op == "aten.slice_copy.Tensor";
}

// The piece a cut keeps of its input: along `dim`, the range `r`.
struct Step {
  int64_t dim = 0;
  SliceRange r;
};

// What one output of the anchor becomes: through single-output cuts that are each the only
// reader of the value before (x[:, :, 1:-1, 1:-1] is two slice_copy nodes) to the q reading
// the last one, or reading a view of it that only adds or drops 1s in front (x[:, 0], which the
// exporter writes as a slice and a view: a q8ta_view after the q8ta_slice).
struct Chain {
  size_t output = 0;                // of the anchor
  std::vector<int> cuts;            // the cut nodes after the anchor, in order
  std::vector<Step> steps;          // the anchor's piece, then each cut's
  std::vector<std::string> values;  // the float value after each step (and the view)
  int view = -1;                    // the view_copy before the q, if any
  int q = -1;
  QuantInfo out_q;
};

// What a cut matched: the dq and its parameters, and one chain per output that is read.
struct Cut {
  int dq = -1;
  QuantInfo in_q;
  std::vector<Chain> chains;
  std::vector<std::string> unread;  // outputs of the anchor nothing reads
};

// Follows the anchor's output k (its piece `first`) to its q; fills `c`.
std::string follow_chain(const Graph& g, const Node& anchor, size_t k, const Step& first,
                         Chain& c) {
  c.output = k;
  std::string y = anchor.outputs[k];
  c.steps = {first};
  c.values = {y};
  for (;;) {
    const std::vector<int> readers = g.consumers(y);
    const Node* r = readers.size() == 1 ? &g.nodes[readers[0]] : nullptr;
    if (g.is_graph_output(y) || r == nullptr) return describe_consumers(g, y);
    if (r->op == kQ) {
      c.q = readers[0];
      return check_q(g, *r, c.q, c.out_q);
    }
    if (r->op == kViewCopy && c.view < 0 && r->outputs.size() == 1 &&
        same_packed_shape(g.value(y).shape, g.value(r->outputs[0]).shape)) {
      c.view = readers[0];  // then the q, nothing else
      y = r->outputs[0];
      c.values.push_back(y);
      continue;
    }
    if (c.view >= 0 || !is_cut(r->op) || r->outputs.size() != 1) return describe_consumers(g, y);
    Step s;
    std::vector<SliceRange> pieces;
    const SliceError e = slices_of(*r, g.value(y).shape, s.dim, pieces);
    if (!e.ok()) return e.field + ": " + e.why;
    s.r = pieces[0];
    c.cuts.push_back(readers[0]);
    c.steps.push_back(s);
    y = r->outputs[0];
    c.values.push_back(y);
  }
}

// The chains of every output of cut `n` that is read, checked to end in a q the slices can
// requantize to; fills `cut`.
std::string follow_outputs(const Graph& g, const Node& n, Cut& cut) {
  int64_t dim = 0;
  std::vector<SliceRange> pieces;
  const SliceError e = slices_of(n, g.value(n.inputs[0]).shape, dim, pieces);
  if (!e.ok()) return e.field + ": " + e.why;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    if (g.consumers(n.outputs[k]).empty() && !g.is_graph_output(n.outputs[k])) {
      cut.unread.push_back(n.outputs[k]);
      continue;
    }
    Chain c;
    std::string why = follow_chain(g, n, k, {dim, pieces[k]}, c);
    if (why.empty()) why = check_requantization(cut.in_q, c.out_q);
    if (!why.empty()) return "output " + std::to_string(k) + ": " + why;
    cut.chains.push_back(std::move(c));
  }
  return "";
}

// The chain's steps with consecutive steps along one dim composed: a piece of a piece is a
// piece (start a + b * step_a, step step_a * step_b). Each run is one q8ta_slice.
std::vector<Step> runs_of(const Chain& c) {
  std::vector<Step> runs;
  for (const Step& s : c.steps) {
    if (!runs.empty() && runs.back().dim == s.dim) {
      SliceRange& r = runs.back().r;
      r = {r.start + s.r.start * r.step, s.r.length, r.step * s.r.step};
    } else {
      runs.push_back(s);
    }
  }
  return runs;
}

// " (output 1 of 2: dim 1, 58 from index 58)" for the report.
std::string describe_run(const Chain& c, size_t outputs, const Step& s) {
  return " (output " + std::to_string(c.output) + " of " + std::to_string(outputs) + ": dim " +
         std::to_string(s.dim) + ", " + std::to_string(s.r.length) + " from index " +
         std::to_string(s.r.start) + (s.r.step != 1 ? ", step " + std::to_string(s.r.step) : "") +
         ")";
}

Node slice_node(FuseState& state, int anchor, const std::string& in, const std::string& out,
                const QuantInfo& in_q, const Step& s, const QuantInfo& out_q) {
  Node n;
  n.op = "q8ta_slice";
  n.inputs = {in};
  n.outputs = {out};
  n.args["input_scale"] = in_q.scale;
  n.args["input_zero_point"] = in_q.zero_point;
  n.args["dim"] = s.dim;
  n.args["start"] = s.r.start;
  n.args["step"] = s.r.step;
  n.args["output_scale"] = out_q.scale;
  n.args["output_zero_point"] = out_q.zero_point;
  n.args["quant_min"] = out_q.quant_min;
  n.args["quant_max"] = out_q.quant_max;
  n.origin = state.fused_origin(anchor, n.op);
  state.produced[out] = out_q;
  return n;
}

// One q8ta_slice per run of each chain: the runs before the last copy into new int8 values
// (the input's scale and zero point, full range), the last requantizes into the q's output.
// Each slice is a match of its own, placed at its last node, so run j takes the chain's node j
// (its cuts, then the q; a chain has at least as many nodes as runs) and the last run the rest;
// the first match also takes the dq, the anchor and the values nothing reads any more.
void commit_cut(FuseState& state, int anchor, const Cut& cut) {
  Graph& g = state.graph;
  const std::string x_q = g.nodes[cut.dq].inputs[0];
  const size_t outputs = g.nodes[anchor].outputs.size();
  state.consume_quant(x_q, cut.dq, cut.in_q);
  QuantInfo copy = cut.in_q;
  copy.quant_min = -128;
  copy.quant_max = 127;
  bool first = true;
  for (const Chain& c : cut.chains) {
    const std::vector<Step> runs = runs_of(c);
    std::vector<int> nodes = c.cuts;
    if (c.view >= 0) nodes.push_back(c.view);
    nodes.push_back(c.q);
    const std::string label = state.chain_of({cut.dq}, anchor, nodes);
    std::string in = x_q;
    for (size_t j = 0; j < runs.size(); ++j) {
      const bool last = j + 1 == runs.size();
      const bool viewed = last && c.view >= 0;  // the last run, then an identity to the q's
      Fusion f;
      f.nodes.assign(
          nodes.begin() + static_cast<long>(j),
          last ? nodes.end() - (viewed ? 1 : 0) : nodes.begin() + static_cast<long>(j + 1));
      std::string out = g.nodes[c.q].outputs[0];
      if (!last || viewed) {  // a new int8 value of the run's shape
        Value v;
        v.name = g.unique_name(c.values.back() + "_run" + std::to_string(j));
        v.dtype = DType::Int8;
        v.shape = g.value(x_q).shape;
        for (size_t r = 0; r <= j; ++r) {
          v.shape[static_cast<size_t>(runs[r].dim)] = runs[r].r.length;
        }
        out = g.add_value(v).name;
      }
      if (last) f.dead = c.values;
      if (first) {
        f.nodes.insert(f.nodes.begin(), {cut.dq, anchor});
        f.dead.push_back(g.nodes[anchor].inputs[0]);
        f.dead.insert(f.dead.end(), cut.unread.begin(), cut.unread.end());
        first = false;
      }
      f.node = slice_node(state, anchor, in, out, cut.in_q, runs[j], last ? c.out_q : copy);
      state.commit(std::move(f), label, describe_run(c, outputs, runs[j]));
      in = out;
    }
    // The view: the same int8 bytes under the q's name and shape, as q8ta_view (an identity
    // would be folded into the slice's value, whose shape its readers then see: a linear
    // requires its output's leading dims to be its input's).
    if (c.view >= 0) {
      Fusion v;
      v.nodes = {c.q};
      v.node.op = "q8ta_view";
      v.node.inputs = {in};
      v.node.outputs = {g.nodes[c.q].outputs[0]};
      v.node.args["zero_point"] = c.out_q.zero_point;
      v.node.origin = state.fused_origin(c.view, v.node.op);
      state.produced[v.node.outputs[0]] = c.out_q;
      state.commit(std::move(v), label, " (a view of the int8 data)");
    }
  }
}

// Whether a q reads `y`, or through cuts (and views) what they cut from it.
bool reaches_q(const Graph& g, const std::string& y) {
  for (int r : g.consumers(y)) {
    const Node& n = g.nodes[r];
    if (n.op == kQ) return true;
    if (!is_cut(n.op) && n.op != kViewCopy) continue;
    for (const std::string& out : n.outputs) {
      if (reaches_q(g, out)) return true;
    }
  }
  return false;
}

}  // namespace

void fuse_cat(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.empty() || n.outputs.size() != 1) return;
  std::vector<int> head;
  for (const std::string& x : n.inputs) {
    const int p = g.producer(x);
    if (node_is(g, p, kDq)) head.push_back(p);
  }
  if (head.empty()) return;  // not a quantized pattern
  if (!state.allowed(i, "q8ta_cat")) return;
  const Tail tail = match_tail(g, n.outputs[0]);
  std::vector<int> all = head;
  all.push_back(i);
  all.insert(all.end(), tail.nodes.begin(), tail.nodes.end());
  const std::string chain = state.chain_of(head, i, tail.nodes);
  auto fail = [&](const std::string& why) { state.not_fused(chain, all, "q8ta_cat", why); };

  std::vector<int> dqs;
  std::vector<QuantInfo> qs;
  std::string why = check_cat_inputs(g, n, dqs, qs);
  if (why.empty()) why = check_tail(g, n.outputs[0], tail);
  for (size_t k = 0; why.empty() && k < qs.size(); ++k) {
    why = check_requantization(qs[k], tail.out_q);
    if (!why.empty()) why = "input " + std::to_string(k) + ": " + why;
  }
  if (why.empty() && state.any_claimed(all)) why = "overlaps another fused pattern";
  if (!why.empty()) return fail(why);
  Fusion f;
  f.nodes = all;
  f.dead = n.inputs;
  f.dead.insert(f.dead.end(), tail.values.begin(), tail.values.end());
  f.node = cat_node(state, i, dqs, qs, tail);
  const std::string detail = " (" + std::to_string(n.inputs.size()) + " inputs along dim " +
                             std::to_string(std::get<int64_t>(f.node.args.at("dim"))) + ")";
  state.commit(std::move(f), chain, detail);
}

void fuse_slices(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.empty()) return;
  Cut cut;
  cut.dq = g.producer(n.inputs[0]);
  if (!node_is(g, cut.dq, kDq)) return;  // not a quantized pattern
  // A float cut with no quantize after it stays a float op.
  if (std::none_of(n.outputs.begin(), n.outputs.end(),
                   [&](const std::string& y) { return reaches_q(g, y); })) {
    return;
  }
  if (!state.allowed(i, "q8ta_slice")) return;
  std::string why = check_activation_dq(g, g.nodes[cut.dq], cut.dq, cut.in_q);
  if (why.empty()) why = single_use(g, n.inputs[0]);
  if (why.empty()) why = follow_outputs(g, n, cut);
  std::vector<int> all = {cut.dq, i};
  for (const Chain& c : cut.chains) {
    all.insert(all.end(), c.cuts.begin(), c.cuts.end());
    if (c.view >= 0) all.push_back(c.view);
    all.push_back(c.q);
  }
  const bool viewed =
      std::any_of(cut.chains.begin(), cut.chains.end(), [](const Chain& c) { return c.view >= 0; });
  if (why.empty() && viewed && !state.may_target("q8ta_view")) why = "q8ta_view is ruled out";
  if (why.empty() && state.any_claimed(all)) why = "overlaps another fused pattern";
  if (!why.empty()) {
    return state.not_fused(state.chain_of({cut.dq}, i, {}) + " -> ...", all, "q8ta_slice", why);
  }
  commit_cut(state, i, cut);
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

// All inputs of one dtype and rank >= 1, equal but along `dim`; the output adds up that dim.
std::vector<TypedShape> cat(const ShapeContext& c) {
  const std::vector<const Value*> xs = c.list("tensors");
  const Value& first = *xs[0];
  if (first.shape.empty()) {
    c.fail(c.input_field("tensors"), "a zero-dimensional tensor cannot be concatenated");
  }
  const int64_t dim = c.dim_arg("dim", first.shape.size());
  std::vector<int64_t> out = first.shape;
  out[static_cast<size_t>(dim)] = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const Value& x = *xs[k];
    const std::string field =
        "input 'tensors' [" + std::to_string(k) + "] (value '" + x.name + "')";
    if (x.dtype != first.dtype) {
      c.fail(field, "dtype ", to_string(x.dtype), " differs from the first tensor's ",
             to_string(first.dtype));
    }
    std::vector<int64_t> a = x.shape, b = first.shape;
    if (a.size() == b.size()) a[static_cast<size_t>(dim)] = b[static_cast<size_t>(dim)] = 0;
    if (a != b) {
      c.fail(field, "shape ", shape_str(x.shape), " does not match the first tensor's ",
             shape_str(first.shape), " in every dim but ", dim);
    }
    out[static_cast<size_t>(dim)] += x.shape[static_cast<size_t>(dim)];
  }
  return {{first.dtype, out}};
}

// One output per piece (compiler/reference/Slicing.h), of the input's dtype.
std::vector<TypedShape> slices(const ShapeContext& c) {
  const Value& x = c.in("self");
  int64_t dim = 0;
  std::vector<SliceRange> pieces;
  const SliceError e = slices_of(c.node(), x.shape, dim, pieces);
  if (!e.ok()) c.fail(e.field, e.why, " (shape ", shape_str(x.shape), ")");
  std::vector<TypedShape> out;
  for (const SliceRange& r : pieces) {
    out.push_back({x.dtype, x.shape});
    out.back().shape[static_cast<size_t>(dim)] = r.length;
  }
  return out;
}

}  // namespace

std::vector<EdgeOp> concat_edge_ops() {
  const EdgeArg dim = optional_arg("dim", Lit::Int, ArgValue(int64_t{0}), false);
  auto split = [&](const char* name, std::vector<EdgeArg> args, size_t outputs) {
    return EdgeOp{name, {"self"}, 1, std::move(args), outputs, slices}
        .computed_by(reference_slices)
        .fused_by(fusion::fuse_slices, {"q8ta_slice"});
  };
  return {
      EdgeOp{"aten.cat", {"tensors"}, 1, {dim}, 1, cat}
          .taking_a_tensor_list()
          .computed_by(reference_cat)
          .fused_by(fusion::fuse_cat, {"q8ta_cat"}),
      split("aten.split_with_sizes_copy", {required_arg("split_sizes", Lit::Ints), dim}, 0),
      split("aten.split_copy.Tensor", {required_arg("split_size", Lit::Int), dim}, 0),
      split("aten.chunk", {required_arg("chunks", Lit::Int), dim}, 0),
      split("aten.slice_copy.Tensor",
            {dim, optional_arg("start", Lit::Int), optional_arg("end", Lit::Int),
             optional_arg("step", Lit::Int, ArgValue(int64_t{1}), false)},
            1),
  };
}

}  // namespace vkd::compiler
