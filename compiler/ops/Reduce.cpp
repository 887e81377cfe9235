// Float reductions over a list of dims: aten.sum.dim_IntList and aten.linalg_vector_norm (ord 2),
// what sentence-embedding pooling (masked mean over tokens, then F.normalize) exports into. Over
// one dim of a float32 tensor of rank 1 to 4 they become float_sum / float_vector_norm
// (runtime/ops/Reduce.h); over several dims or all of them the host runs their CPU references.
// The whole pooling chain, from the mask's mul to the normalized rows, is one op
// (fuse_masked_mean: float_masked_mean / q8ta_masked_mean [_normalize]).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/FuseState.h"
#include "compiler/fusion/Lowering.h"
#include "compiler/fusion/Match.h"
#include "compiler/ops/EdgeOp.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/Reduction.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of the reductions: each output element accumulates its reduced input elements in
// float32, from +0.0, in row-major input order (in order along a single reduced dim), each
// product and sum rounded on its own; the norm's square root is correctly rounded. The GPU
// kernels (shaders/float_reduce.glsl) compute exactly this, bit for bit. PyTorch accumulates in
// float32 too, in another order (vectorized, cascaded sums): the two agree to a few float32 ulps
// of the values summed, not bit for bit.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// Which of `rank` dims `dims` reduces: an absent or empty list reduces them all (PyTorch's
// dim=None / dim=[]); a dim given twice is an error.
std::vector<bool> reduced_dims(const ReferenceContext& c, size_t rank) {
  const std::vector<int64_t> dims = c.present("dim") ? c.ints_arg("dim") : std::vector<int64_t>{};
  std::vector<bool> reduced(rank, dims.empty());
  for (int64_t d : dims) {
    const int64_t nd = norm_dim(c, d, rank);
    if (rank == 0) continue;
    c.require(!reduced[static_cast<size_t>(nd)], detail::concat("dim ", d, " appears twice"));
    reduced[static_cast<size_t>(nd)] = true;
  }
  return reduced;
}

// For every output element, finish(sum over its reduced elements x of term(x)), accumulated in
// float32 from +0.0 in row-major input order.
HostTensor reduce(const ReferenceContext& c, float (*term)(float), float (*finish)(float)) {
  const HostTensor& x = c.input(0, "self");
  c.expect_dtype(x, DType::Float32, "self");
  if (c.present("dtype")) {
    c.require(c.dtype_arg("dtype") == DType::Float32, "dtype must be float32");
  }
  const size_t rank = x.shape.size();
  const std::vector<bool> reduced = reduced_dims(c, rank);
  const ReductionShape r = reduction_shape(x.shape, reduced, c.bool_arg("keepdim", false));
  std::vector<float> acc(static_cast<size_t>(element_count(r.kept)), 0.0f);
  strided_loop(x.shape, {r.strides}, [&](int64_t i, const std::vector<int64_t>& off) {
    const float t = term(get_f32(x, i));
    acc[static_cast<size_t>(off[0])] = acc[static_cast<size_t>(off[0])] + t;
  });
  for (float& v : acc) v = finish(v);
  return HostTensor::from_floats(r.out, acc);
}

float identity(float v) { return v; }
float square(float v) { return v * v; }
float square_root(float v) { return std::sqrt(v); }  // IEEE: correctly rounded

}  // namespace

// aten.sum.dim_IntList(self, dim, keepdim=False, dtype=None): the sum over `dim` (None or [] =
//   every dim), those dims kept as size 1 when keepdim, else removed. float32 only.
std::vector<HostTensor> reference_sum_dim(const ReferenceContext& c) {
  return {reduce(c, identity, identity)};
}

// aten.linalg_vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None) with ord 2 only:
//   sqrt(sum over `dim` of x^2), dims as for sum (what F.normalize(p=2) divides by).
std::vector<HostTensor> reference_vector_norm(const ReferenceContext& c) {
  const double ord = c.present("ord") ? c.float_arg("ord") : 2.0;
  c.require(ord == 2.0, detail::concat("ord ", ord, " is not supported (only ord 2)"));
  return {reduce(c, square, square_root)};
}

}  // namespace vkd::compiler

// A reduction over one dim of a float32 tensor of rank 1 to 4 (the output of rank >= 1) =>
// float_sum / float_vector_norm with that dim; over several dims or all of them, or a rank-0
// result, the host runs it.
namespace vkd::compiler::fusion {
namespace {

std::string lower_reduction(FuseState& state, Node& node, int where, const std::string& backend) {
  if (node.inputs.size() != 1 || node.outputs.size() != 1 || !state.may_target(backend)) return "";
  const Value& x = state.graph.value(node.inputs[0]);
  const Value& y = state.graph.value(node.outputs[0]);
  const auto rank = static_cast<int64_t>(x.shape.size());
  const std::optional<std::vector<int64_t>> dims = opt_ints(node, "dim");
  if (x.dtype != DType::Float32 || rank < 1 || rank > 4 || y.shape.empty() || !dims ||
      dims->size() != 1 || element_count(x.shape) > std::numeric_limits<int32_t>::max()) {
    return "";
  }
  const int64_t dim = (*dims)[0] < 0 ? (*dims)[0] + rank : (*dims)[0];
  if (node.origin.empty()) node.origin = origin_of(node, where);
  node.op = backend;
  node.args = {{"dim", dim}};
  return backend;
}

}  // namespace

namespace {

constexpr char kSum[] = "aten.sum.dim_IntList";
constexpr char kMul[] = "aten.mul.Tensor";
constexpr char kDiv[] = "aten.div.Tensor";
constexpr char kNorm[] = "aten.linalg_vector_norm";
constexpr char kClampMin[] = "aten.clamp_min";
constexpr char kExpandAs[] = "aten.expand_as";
constexpr int64_t kMaxPooledChannels = 4096;  // the kernel's shared memory (runtime/ops/Reduce.h)

// Whether node `r` reduces over dim `dim` only (of a rank-`rank` input), with keepdim `keep`, in
// float32.
bool reduces_over(const Graph& g, int r, const char* op, int64_t dim, int64_t rank, bool keep) {
  if (!node_is(g, r, op) || g.nodes[r].inputs.size() != 1 || g.nodes[r].outputs.size() != 1) {
    return false;
  }
  const Node& n = g.nodes[r];
  const std::optional<std::vector<int64_t>> dims = opt_ints(n, "dim");
  const auto keepdim = n.args.find("keepdim");
  const bool kept = keepdim != n.args.end() && std::holds_alternative<bool>(keepdim->second) &&
                    std::get<bool>(keepdim->second);
  if (opt_string(n, "dtype").value_or("float32") != "float32") return false;
  if (op == kNorm && opt_float(n, "ord").value_or(2.0) != 2.0) return false;
  return dims && dims->size() == 1 && ((*dims)[0] == dim || (*dims)[0] == dim - rank) &&
         kept == keep;
}

// The lower bound of a clamp (or clamp_min) node `c` that has no upper one; nullopt otherwise.
std::optional<double> lower_bound_only(const Graph& g, int c) {
  if (node_is(g, c, kClampMin)) return opt_float(g.nodes[c], "min");
  if (!node_is(g, c, kClamp) || opt_float(g.nodes[c], "max")) return std::nullopt;
  return opt_float(g.nodes[c], "min");
}

// Whether node `p` only moves a float32 mask unchanged: view_copy, to.dtype to float32, clone.
bool mask_move(const Graph& g, int p) {
  if (p < 0 || g.nodes[p].inputs.size() != 1 || g.nodes[p].outputs.size() != 1) return false;
  const Node& n = g.nodes[p];
  return n.op == kViewCopy || is_clone(n.op) ||
         (n.op == "aten.to.dtype" && opt_string(n, "dtype").value_or("") == "float32");
}

// The single reader of `v` (not a graph output), or -1.
int only_reader(const Graph& g, const std::string& v) {
  const std::vector<int> readers = g.consumers(v);
  return readers.size() == 1 && !g.is_graph_output(v) ? readers[0] : -1;
}

// F.normalize(mean, p=2, dim=1) after the masked mean: linalg_vector_norm(mean, dim 1, keepdim)
// -> clamp_min(eps) [-> expand_as(., mean)] -> div(mean, .). Its nodes (norm first, the div
// last) and eps, or nothing when `mean`'s readers are not exactly that.
struct Normalize {
  std::vector<int> nodes;
  double eps = 0;
};
std::optional<Normalize> match_normalize(const Graph& g, const std::string& mean) {
  if (g.is_graph_output(mean)) return std::nullopt;
  const std::vector<int> readers = g.consumers(mean);
  int norm = -1;
  for (int r : readers) {
    if (reduces_over(g, r, kNorm, 1, 2, true)) norm = r;
  }
  if (norm < 0) return std::nullopt;
  const int clamp = only_reader(g, g.nodes[norm].outputs[0]);
  const std::optional<double> eps = lower_bound_only(g, clamp);
  if (!eps) return std::nullopt;
  Normalize m{{norm, clamp}, *eps};
  std::string divisor = g.nodes[clamp].outputs[0];
  int div = only_reader(g, divisor);
  if (node_is(g, div, kExpandAs) && g.nodes[div].inputs.size() == 2 &&
      g.nodes[div].inputs[0] == divisor && g.nodes[div].inputs[1] == mean) {
    m.nodes.push_back(div);
    divisor = g.nodes[div].outputs[0];
    div = only_reader(g, divisor);
  }
  if (!node_is(g, div, kDiv) || g.nodes[div].inputs != std::vector<std::string>{mean, divisor}) {
    return std::nullopt;
  }
  m.nodes.push_back(div);
  if (readers.size() != m.nodes.size() - 1) return std::nullopt;  // all but the clamp read mean
  return m;
}

}  // namespace

// sentence-transformers' mean pooling, optionally followed by F.normalize(p=2, dim=1):
//   [dq ->] aten.mul(x [B, T, C], keep [B, T, 1]) -> sum(dim 1)
//     -> div(., clamp(sum(keep, dim 1), min=mask_min))                    the mean [B, C]
//   [-> linalg_vector_norm(dim 1, keepdim) -> clamp_min(eps) [-> expand_as] -> div(mean, .)]
// => float_masked_mean (x float32) / q8ta_masked_mean (x the dequantize of an int8 activation
// only the mul reads), `_normalize` with the norm; the mask read as `keep`, or as the [B, T]
// tensor a view_copy made `keep` of when only the mul and the sum read it. Anchor: the sum of
// the product. The kernel computes the unfused ops' bits (shaders/float_masked_mean.glsl).
void fuse_masked_mean(FuseState& state, int i) {
  Graph& g = state.graph;
  const int mul = g.producer(g.nodes[i].inputs.empty() ? "" : g.nodes[i].inputs[0]);
  if (!node_is(g, mul, kMul) || g.nodes[mul].inputs.size() != 2 ||
      !reduces_over(g, i, kSum, 1, 3, false)) {
    return;
  }
  const Node& m = g.nodes[mul];
  const Value &a = g.value(m.inputs[0]), &b = g.value(m.inputs[1]);
  const bool keep_second = b.shape.size() == 3 && b.shape[2] == 1;
  const std::string x = m.inputs[keep_second ? 0 : 1], keep = m.inputs[keep_second ? 1 : 0];
  const Value& xv = keep_second ? a : b;
  const Value& kv = keep_second ? b : a;
  if (xv.shape.size() != 3 || kv.shape != std::vector<int64_t>{xv.shape[0], xv.shape[1], 1}) {
    return;
  }
  const int dq = g.producer(x);
  const bool int8 = node_is(g, dq, kDq);
  // The mean: div(sum of the product, clamp(sum of keep)).
  const std::string product_sum = g.nodes[i].outputs[0];
  const int div = only_reader(g, product_sum);
  if (!node_is(g, div, kDiv) || g.nodes[div].inputs.size() != 2 ||
      g.nodes[div].inputs[0] != product_sum) {
    return;
  }
  const int clamp = g.producer(g.nodes[div].inputs[1]);
  const std::optional<double> mask_min = lower_bound_only(g, clamp);
  const int count =
      clamp < 0 || g.nodes[clamp].inputs.empty() ? -1 : g.producer(g.nodes[clamp].inputs[0]);
  if (!mask_min || !reduces_over(g, count, kSum, 1, 3, false) || g.nodes[count].inputs[0] != keep) {
    return;
  }
  const std::string mean = g.nodes[div].outputs[0];
  const std::optional<Normalize> normalize = match_normalize(g, mean);
  const std::string backend =
      std::string(int8 ? "q8ta" : "float") + "_masked_mean" + (normalize ? "_normalize" : "");
  if (!state.allowed(i, backend)) return;

  std::vector<int> nodes = {mul, i, count, clamp, div};
  std::vector<int> head;
  if (int8) head.push_back(dq);
  // The mask as given: up from `keep` (read by the mul and the mask's sum alone) through the
  // view_copy / float32 to.dtype / clone nodes that made it of a [B, T] or [B, T, 1] float32
  // tensor nothing else reads on the way.
  std::string mask = keep;
  std::vector<std::string> moved;  // the values the walk passes (dead once fused)
  if (!g.is_graph_output(keep) && g.consumers(keep).size() == 2) {
    const std::vector<int64_t> rows = {xv.shape[0], xv.shape[1]};
    for (int p = g.producer(mask); mask_move(g, p);) {
      const std::string& from = g.nodes[p].inputs[0];
      const Value& v = g.value(from);
      if (v.dtype != DType::Float32 || (v.shape != rows && v.shape != kv.shape)) break;
      head.push_back(p);
      if (mask != keep) moved.push_back(mask);
      mask = from;
      if (g.is_graph_output(mask) || g.consumers(mask).size() != 1) break;
      p = g.producer(mask);
    }
    std::reverse(head.begin() + (int8 ? 1 : 0), head.end());
  }
  std::vector<int> tail = {count, clamp, div};
  if (normalize) tail.insert(tail.end(), normalize->nodes.begin(), normalize->nodes.end());
  // "dq, aten.view_copy -> aten.mul.Tensor -> ... -> aten.div.Tensor": the head (inputs), then
  // the ops in graph order.
  std::string chain;
  for (int h : head) chain += (chain.empty() ? "" : ", ") + label(g.nodes[h]);
  for (int t : std::vector<int>{mul, i}) chain += (chain.empty() ? "" : " -> ") + label(g.nodes[t]);
  for (int t : tail) chain += " -> " + label(g.nodes[t]);
  nodes.insert(nodes.end(), head.begin(), head.end());
  if (normalize) nodes.insert(nodes.end(), normalize->nodes.begin(), normalize->nodes.end());

  QuantInfo in_q;
  std::string why;
  if (int8) {
    why = check_activation_dq(g, g.nodes[dq], dq, in_q);
    if (why.empty()) why = single_use(g, x);
  } else if (xv.dtype != DType::Float32) {
    why = "the hidden states are not float32";
  }
  if (why.empty() && (kv.dtype != DType::Float32 || g.value(mask).dtype != DType::Float32)) {
    why = "the mask is not float32";
  }
  if (why.empty() && xv.shape[2] > kMaxPooledChannels) {
    why = std::to_string(xv.shape[2]) + " channels (the kernel pools up to " +
          std::to_string(kMaxPooledChannels) + ")";
  }
  if (why.empty()) why = single_use(g, m.outputs[0]);
  if (why.empty() && only_reader(g, g.nodes[count].outputs[0]) != clamp) {
    why = "the token count is read by another node";
  }
  if (why.empty() && only_reader(g, g.nodes[clamp].outputs[0]) != div) {
    why = "the clamped token count is read by another node";
  }
  if (why.empty() && state.any_claimed(nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) return state.not_fused(chain, nodes, backend, why);

  Fusion f;
  f.nodes = nodes;
  f.dead = {m.outputs[0], product_sum, g.nodes[count].outputs[0], g.nodes[clamp].outputs[0]};
  if (int8) f.dead.push_back(x);
  if (mask != keep) f.dead.push_back(keep);
  f.dead.insert(f.dead.end(), moved.begin(), moved.end());
  Node& out = f.node;
  out.op = backend;
  out.inputs = {int8 ? g.nodes[dq].inputs[0] : x, mask};
  if (int8) {
    out.args["input_scale"] = in_q.scale;
    out.args["input_zero_point"] = in_q.zero_point;
    state.consume_quant(g.nodes[dq].inputs[0], dq, in_q);
  }
  out.args["mask_min"] = *mask_min;
  std::string detail = " (B " + std::to_string(xv.shape[0]) + ", T " + std::to_string(xv.shape[1]) +
                       ", C " + std::to_string(xv.shape[2]) + ", mask " + quoted(mask) +
                       ", count clamped to >= " + fmt(*mask_min);
  if (normalize) {
    out.args["eps"] = normalize->eps;
    for (size_t k = 0; k + 1 < normalize->nodes.size(); ++k) {
      f.dead.push_back(g.nodes[normalize->nodes[k]].outputs[0]);
    }
    f.dead.push_back(mean);
    out.outputs = {g.nodes[normalize->nodes.back()].outputs[0]};
    detail += ", L2-normalised, norm clamped to >= " + fmt(normalize->eps);
  } else {
    out.outputs = {mean};
  }
  out.origin = state.fused_origin(i, backend);
  state.commit(std::move(f), chain, detail + ")");
}

std::string lower_sum_dim(FuseState& state, Node& node, int where) {
  return lower_reduction(state, node, where, "float_sum");
}

std::string lower_vector_norm(FuseState& state, Node& node, int where) {
  return lower_reduction(state, node, where, "float_vector_norm");
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

// A float32 'self' reduced over the 'dim' list (absent, None or [] = every dim; each in range,
// none twice): float32 of its shape with those dims 1 (keepdim) or removed. 'dtype', when
// given, must be float32.
std::vector<TypedShape> reduction(const ShapeContext& c) {
  const Value& x = c.in("self");
  c.dtype(x, "self", DType::Float32);
  if (const std::optional<std::string> dtype = c.opt_str("dtype")) {
    if (parse_dtype(*dtype) != DType::Float32) {
      c.fail(ShapeContext::arg_field("dtype"), *dtype, " is not supported (only float32)");
    }
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const std::vector<int64_t> dims =
      arg_present(c.node(), "dim") ? c.ints("dim") : std::vector<int64_t>{};
  std::vector<bool> reduced(x.shape.size(), dims.empty());
  for (int64_t d : dims) {
    if (d < -rank || d >= rank) {
      c.fail(ShapeContext::arg_field("dim"), "dim ", d, " is out of range for rank ", rank);
    }
    const size_t nd = static_cast<size_t>(d < 0 ? d + rank : d);
    if (reduced[nd]) c.fail(ShapeContext::arg_field("dim"), "dim ", d, " appears twice");
    reduced[nd] = true;
  }
  const bool keepdim = c.flag_or("keepdim", false);
  std::vector<int64_t> out;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (!reduced[d]) {
      out.push_back(x.shape[d]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return {{DType::Float32, out}};
}

std::vector<TypedShape> vector_norm(const ShapeContext& c) {
  const double ord = c.opt_f64("ord").value_or(2.0);
  if (ord != 2.0) {
    c.fail(ShapeContext::arg_field("ord"), "ord ", ord, " is not supported (only ord 2)");
  }
  return reduction(c);
}

}  // namespace

std::vector<EdgeOp> reduce_edge_ops() {
  return {
      EdgeOp{"aten.sum.dim_IntList",
             {"self"},
             1,
             {optional_arg("dim", Lit::Ints),
              optional_arg("keepdim", Lit::Bool, ArgValue(false), false),
              optional_arg("dtype", Lit::String)},
             1,
             reduction}
          .computed_by(reference_sum_dim)
          .fused_by(fusion::fuse_masked_mean, {"float_masked_mean", "float_masked_mean_normalize",
                                               "q8ta_masked_mean", "q8ta_masked_mean_normalize"})
          .lowered_by(fusion::lower_sum_dim, {"float_sum"}),
      EdgeOp{
          "aten.linalg_vector_norm",
          {"self"},
          1,
          {optional_arg("ord", Lit::Number, ArgValue(2.0), false), optional_arg("dim", Lit::Ints),
           optional_arg("keepdim", Lit::Bool, ArgValue(false), false),
           optional_arg("dtype", Lit::String)},
          1,
          vector_norm}
          .computed_by(reference_vector_norm)
          .lowered_by(fusion::lower_vector_norm, {"float_vector_norm"}),
  };
}

}  // namespace vkd::compiler
