// aten.pixel_shuffle.
#include "compiler/ops/EdgeOp.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Lowering.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/ReferenceContext.h"
#include "core/TensorLimits.h"

// CPU reference of pixel_shuffle (semantics above each function): moves elements byte for byte,
// so it takes any dtype the interpreter holds (float16 included).
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

// aten.pixel_shuffle(r): out[n, c, oh, ow] = in[n, c*r*r + (oh % r)*r + (ow % r), oh / r, ow / r].
std::vector<HostTensor> reference_pixel_shuffle(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  const int64_t r = c.int_arg("upscale_factor");
  c.require(r > 0, "upscale_factor must be positive");
  c.require(x.shape.size() >= 3, "input must have rank >= 3");
  const size_t rank = x.shape.size();
  const int64_t C = x.shape[rank - 3], H = x.shape[rank - 2], W = x.shape[rank - 1];
  c.require(C % (r * r) == 0, detail::concat("channels ", C, " are not divisible by ", r * r));
  const int64_t OC = C / (r * r), OH = H * r, OW = W * r;
  const int64_t batch = element_count({x.shape.begin(), x.shape.end() - 3});
  std::vector<int64_t> shape(x.shape.begin(), x.shape.end() - 3);
  shape.insert(shape.end(), {OC, OH, OW});
  HostTensor out = make_tensor(x.dtype, shape);
  const size_t es = elem_bytes(x.dtype);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < OC; ++oc) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t ic = oc * r * r + (oh % r) * r + (ow % r);
          const int64_t src = ((n * C + ic) * H + oh / r) * W + ow / r;
          const int64_t dst = ((n * OC + oc) * OH + oh) * OW + ow;
          std::memcpy(out.bytes.data() + dst * es, x.bytes.data() + src * es, es);
        }
      }
    }
  }
  return {out};
}

}  // namespace vkd::compiler

// dq -> [clone]* -> aten.pixel_shuffle -> [clone]* -> q => q8ta_pixel_shuffle. A shuffle only
// moves values, so the clones around it (what export leaves for memory-format changes) go too.
// The kernel moves the bytes where the qparams round-trip, else requantizes each one into the
// full int8 range (requantize_moved): the fusion checks that this is the chain's dq -> q.
// A shuffle of a convolution's output may instead join that convolution's epilogue
// (compiler/fusion/Epilogue.cpp: q8ta_conv2d_ps).
namespace vkd::compiler::fusion {
namespace {

// The nodes and values from the dq, through the shuffle, to the q (as far as they were found).
struct ShuffleChain {
  int dq = -1, q = -1;
  std::vector<int> nodes;           // dq, clones, the shuffle, clones, q: in data order
  std::vector<std::string> values;  // intermediates
  std::string why;                  // why no q was reached (q == -1)
};

// Walks back from shuffle `i` through clones; sets `c.dq` to the node reached (-1 for none).
void walk_to_dq(const Graph& g, int i, ShuffleChain& c) {
  std::vector<int> before;  // clones before the shuffle, nearest first
  std::string v = g.nodes[i].inputs[0];
  int p = g.producer(v);
  while (p >= 0 && is_clone(g.nodes[p].op) && !g.nodes[p].inputs.empty()) {
    before.push_back(p);
    c.values.push_back(v);
    v = g.nodes[p].inputs[0];
    p = g.producer(v);
  }
  c.dq = p;
  c.values.push_back(v);  // the dq's output
  c.nodes = {p};
  c.nodes.insert(c.nodes.end(), before.rbegin(), before.rend());
  c.nodes.push_back(i);
}

// Walks forward from shuffle `i` through clones to a quantize_per_tensor.
void walk_to_q(const Graph& g, int i, ShuffleChain& c) {
  std::string cur = g.nodes[i].outputs[0];
  for (;;) {
    int next = -1;
    for (int k : g.consumers(cur)) {
      if (g.nodes[k].op == kQ || is_clone(g.nodes[k].op)) {
        next = k;
        break;
      }
    }
    if (next < 0) {
      c.why = describe_consumers(g, cur);
      return;
    }
    c.values.push_back(cur);
    c.nodes.push_back(next);
    if (g.nodes[next].op == kQ) {
      c.q = next;
      return;
    }
    cur = g.nodes[next].outputs.at(0);
  }
}

// "" when the found chain fits q8ta_pixel_shuffle; fills the qparams of both ends.
std::string check_chain(const Graph& g, const ShuffleChain& c, QuantInfo& in_q, QuantInfo& out_q) {
  const std::string dq_why = check_activation_dq(g, g.nodes[c.dq], c.dq, in_q);
  if (!dq_why.empty()) return dq_why;
  for (const auto& value : c.values) {
    const std::string use = single_use(g, value);
    if (!use.empty()) return use;
  }
  if (c.q < 0) return c.why;
  const std::string q_why = check_q(g, g.nodes[c.q], c.q, out_q);
  if (!q_why.empty()) return q_why;
  return check_bytes_or_requantization(in_q, out_q);
}

Node build_shuffle(FuseState& state, int i, const ShuffleChain& c, const QuantInfo& in_q,
                   const QuantInfo& out_q, int64_t factor) {
  const Graph& g = state.graph;
  Node out;
  out.op = "q8ta_pixel_shuffle";
  const std::string x_q = g.nodes[c.dq].inputs[0];
  const std::string output = g.nodes[c.q].outputs[0];
  out.inputs = {x_q};
  out.args["input_scale"] = in_q.scale;
  out.args["input_zero_point"] = in_q.zero_point;
  out.args["upscale_factor"] = factor;
  out.args["output_scale"] = out_q.scale;
  out.args["output_zero_point"] = out_q.zero_point;
  out.outputs = {output};
  out.origin = state.fused_origin(i, out.op);
  state.produced[output] = out_q;
  state.consume_quant(x_q, c.dq, in_q);
  return out;
}

}  // namespace

void fuse_pixel_shuffle(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.empty() || n.outputs.size() != 1) return;
  ShuffleChain c;
  walk_to_dq(g, i, c);
  if (!node_is(g, c.dq, kDq)) return;  // not a quantized pattern
  if (!state.allowed(i, "q8ta_pixel_shuffle")) return;
  walk_to_q(g, i, c);
  std::string chain;
  for (size_t k = 0; k < c.nodes.size(); ++k) {
    chain += (k ? " -> " : "") + label(g.nodes[c.nodes[k]]);
  }
  auto fail = [&](const std::string& why) {
    state.not_fused(chain, c.nodes, "q8ta_pixel_shuffle", why);
  };

  QuantInfo in_q, out_q;
  const std::string why = check_chain(g, c, in_q, out_q);
  if (!why.empty()) return fail(why);
  const auto factor = opt_int(n, "upscale_factor");
  if (!factor || *factor < 1) return fail("upscale_factor is not a positive integer");
  if (state.any_claimed(c.nodes)) return fail("overlaps another fused pattern");
  const EpilogueCandidate epilogue{g.nodes[c.dq].inputs[0], in_q,  c.nodes, c.values,
                                   g.nodes[c.q].outputs[0], out_q, chain};
  if (join_shuffle_epilogue(state, epilogue, *factor)) return;
  Fusion f;
  f.nodes = c.nodes;
  f.dead = c.values;
  f.node = build_shuffle(state, i, c, in_q, out_q, *factor);
  state.commit(std::move(f), chain, "");
}

// The direct lowerings of what fusion leaves (Patterns.h's DirectLowering).

// Float32 or float16 (pure data movement takes half precision too).
std::string lower_pixel_shuffle(FuseState& state, Node& node, int where) {
  const Value* in = unary_input(state.graph, node);
  if (!is_float32(in) && !(in && in->dtype == DType::Float16)) return "";
  const auto factor = opt_int(node, "upscale_factor");
  if (!factor || *factor < 1) return "";
  return rewrite_unary(state, node, where, "pixel_shuffle", {{"upscale_factor", *factor}});
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

std::vector<TypedShape> pixel_shuffle(const ShapeContext& c) {
  const Value& x = c.in("self");
  const size_t rank = x.shape.size();
  if (rank < 3) {
    c.fail(c.input_field("self"), "expected rank >= 3 ([.., C, H, W]), got shape ",
           shape_str(x.shape));
  }
  const int64_t r = c.i64("upscale_factor");
  if (r < 1) c.fail(c.arg_field("upscale_factor"), "expected a value >= 1, got ", r);
  std::vector<int64_t> out = x.shape;
  const int64_t ch = out[rank - 3];
  // r * r is computed only where it fits (the channels are at most 2^31 - 1, TensorLimits.h).
  if (r > kMaxTensorElements) {
    c.fail(c.arg_field("upscale_factor"), r, " is above the largest size of a tensor");
  }
  if (ch % (r * r) != 0) {
    c.fail(c.input_field("self"), "channels ", ch,
           " are not divisible by upscale_factor^2 = ", r * r, " (shape ", shape_str(x.shape), ")");
  }
  out[rank - 3] = ch / (r * r);
  out[rank - 2] *= r;
  out[rank - 1] *= r;
  return {{x.dtype, out}};
}

}  // namespace

std::vector<EdgeOp> pixel_shuffle_edge_ops() {
  return {
      EdgeOp{"aten.pixel_shuffle",
             {"self"},
             1,
             {required_arg("upscale_factor", Lit::Int)},
             1,
             pixel_shuffle}
          .computed_by(reference_pixel_shuffle)
          .fused_by(fusion::fuse_pixel_shuffle, {"q8ta_pixel_shuffle", "q8ta_conv2d_ps"})
          .lowered_by(fusion::lower_pixel_shuffle, {"pixel_shuffle"}),
  };
}

}  // namespace vkd::compiler
