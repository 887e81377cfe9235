// Float reductions over a list of dims: aten.sum.dim_IntList and aten.linalg_vector_norm (ord 2),
// what sentence-embedding pooling (masked mean over tokens, then F.normalize) exports into. Over
// one dim of a float32 tensor of rank 1 to 4 they become float_sum / float_vector_norm
// (runtime/ops/Reduce.h); over several dims or all of them the host runs their CPU references.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

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
