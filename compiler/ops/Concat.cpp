// Joining and cutting tensors along one dim: aten.cat, and the splits aten.split_with_sizes_copy,
// aten.split_copy.Tensor, aten.chunk (one output per piece) and aten.slice_copy.Tensor (any
// dtype the interpreter holds; on the backend, int8 data between a dq and a q).
#include "compiler/ops/EdgeOp.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/Slicing.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/Concat.cpp.
std::vector<HostTensor> reference_cat(const ReferenceContext& c);
std::vector<HostTensor> reference_slices(const ReferenceContext& c);

// The fusion patterns these ops use, defined in compiler/fusion/Concat.cpp.
namespace fusion {
// dq, dq, ... -> aten.cat -> q => q8ta_cat.
void fuse_cat(FuseState& state, int anchor);
// dq -> split / chunk / slice_copy -> q (per output) => one q8ta_slice per output read.
void fuse_slices(FuseState& state, int anchor);
}  // namespace fusion

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
