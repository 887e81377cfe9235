// Dimension permutations: aten.permute_copy / aten.permute (dims) and aten.transpose.int /
// aten.transpose_copy.int (dim0, dim1); PyTorch's view forms and the edge dialect's copy forms
// mean the same here (values are never aliased).
#include "compiler/ops/EdgeOp.h"

#include <algorithm>

#include "compiler/ops/ShapeContext.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/Permute.cpp.
std::vector<HostTensor> reference_permute(const ReferenceContext& c);
std::vector<HostTensor> reference_transpose(const ReferenceContext& c);

// The fusion pattern and direct lowering these ops use, defined in compiler/fusion/Permute.cpp.
namespace fusion {
// A chain of data movement on int8 data, or between a dequantize and a quantize (views,
// permutes, transposes, clones; round-trip q -> dq pairs inside), => the one backend op that
// moves the elements the same way: q8ta_channel_shuffle, q8ta_permute, or a view.
void fuse_data_movement(FuseState& state, int anchor);
// A permute / transpose of int8 data left after fusion => q8ta_permute (or a view).
std::string lower_permute(FuseState& state, Node& node, int where);
}  // namespace fusion

namespace {

// A dim index in [-rank, rank) made non-negative, or a failure naming `arg`.
int64_t wrapped_dim(const ShapeContext& c, const std::string& arg, int64_t dim, size_t rank) {
  const int64_t r = static_cast<int64_t>(std::max<size_t>(rank, 1));
  if (dim < -r || dim >= r) {
    c.fail(c.arg_field(arg), "dim ", dim, " is out of range for rank ", rank, " (expected ", -r,
           "..", r - 1, ")");
  }
  return dim < 0 ? dim + r : dim;
}

std::vector<TypedShape> permute(const ShapeContext& c) {
  const Value& x = c.in("self");
  const std::vector<int64_t> dims = c.ints("dims");
  if (dims.size() != x.shape.size()) {
    c.fail(c.arg_field("dims"), "expected ", x.shape.size(), " dims for shape ", shape_str(x.shape),
           ", got ", shape_str(dims));
  }
  std::vector<int64_t> seen(dims.size(), 0), out(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrapped_dim(c, "dims", dims[i], dims.size());
    if (seen[static_cast<size_t>(d)]++ != 0) {
      c.fail(c.arg_field("dims"), "dim ", d, " appears more than once in ", shape_str(dims));
    }
    out[i] = x.shape[static_cast<size_t>(d)];
  }
  return {{x.dtype, out}};
}

std::vector<TypedShape> transpose(const ShapeContext& c) {
  const Value& x = c.in("self");
  const int64_t d0 = wrapped_dim(c, "dim0", c.i64("dim0"), x.shape.size());
  const int64_t d1 = wrapped_dim(c, "dim1", c.i64("dim1"), x.shape.size());
  std::vector<int64_t> out = x.shape;
  if (!out.empty()) std::swap(out[static_cast<size_t>(d0)], out[static_cast<size_t>(d1)]);
  return {{x.dtype, out}};
}

const std::vector<std::string> kBackend = {"q8ta_channel_shuffle", "q8ta_permute", "identity",
                                           "q8ta_view"};

EdgeOp permute_op(const char* name) {
  return EdgeOp{name, {"self"}, 1, {required_arg("dims", Lit::Ints)}, 1, permute}
      .computed_by(reference_permute)
      .fused_by(fusion::fuse_data_movement, kBackend)
      .fusing_beyond_device()
      .lowered_by(fusion::lower_permute, {"q8ta_permute", "identity", "q8ta_view"});
}

EdgeOp transpose_op(const char* name) {
  return EdgeOp{name, {"self"}, 1, {required_arg("dim0", Lit::Int), required_arg("dim1", Lit::Int)},
                1,    transpose}
      .computed_by(reference_transpose)
      .fused_by(fusion::fuse_data_movement, kBackend)
      .fusing_beyond_device()
      .lowered_by(fusion::lower_permute, {"q8ta_permute", "identity", "q8ta_view"});
}

}  // namespace

std::vector<EdgeOp> permute_edge_ops() {
  return {permute_op("aten.permute_copy"), permute_op("aten.permute"),
          transpose_op("aten.transpose_copy.int"), transpose_op("aten.transpose.int")};
}

}  // namespace vkd::compiler
