// Float reductions over a list of dims: aten.sum.dim_IntList and aten.linalg_vector_norm (ord 2),
// what sentence-embedding pooling (masked mean over tokens, then F.normalize) exports into. No
// backend op yet: `vkd compile --partition` leaves them to the host, which runs their CPU
// references (below).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ops/EdgeOp.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/Reduction.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of the reductions: each output element accumulates its reduced input elements
// in double and is rounded once to float32. PyTorch accumulates in float32 (vectorized, cascaded
// sums), so the two agree to a few float32 ulps of the values summed, not bit for bit.
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
// double in row-major input order and rounded once to float32.
HostTensor reduce(const ReferenceContext& c, double (*term)(double), double (*finish)(double)) {
  const HostTensor& x = c.input(0, "self");
  c.expect_dtype(x, DType::Float32, "self");
  if (c.present("dtype")) {
    c.require(c.dtype_arg("dtype") == DType::Float32, "dtype must be float32");
  }
  const size_t rank = x.shape.size();
  const std::vector<bool> reduced = reduced_dims(c, rank);
  const ReductionShape r = reduction_shape(x.shape, reduced, c.bool_arg("keepdim", false));
  std::vector<double> acc(static_cast<size_t>(element_count(r.kept)), 0.0);
  strided_loop(x.shape, {r.strides}, [&](int64_t i, const std::vector<int64_t>& off) {
    acc[static_cast<size_t>(off[0])] += term(get_f32(x, i));
  });
  std::vector<float> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) out[i] = static_cast<float>(finish(acc[i]));
  return HostTensor::from_floats(r.out, out);
}

double identity(double v) { return v; }
double square(double v) { return v * v; }
double square_root(double v) { return std::sqrt(v); }

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
          .computed_by(reference_sum_dim),
      EdgeOp{
          "aten.linalg_vector_norm",
          {"self"},
          1,
          {optional_arg("ord", Lit::Number, ArgValue(2.0), false), optional_arg("dim", Lit::Ints),
           optional_arg("keepdim", Lit::Bool, ArgValue(false), false),
           optional_arg("dtype", Lit::String)},
          1,
          vector_norm}
          .computed_by(reference_vector_norm),
  };
}

}  // namespace vkd::compiler
