// Data movement: aten.view_copy, aten.clone, aten.alias_copy, aten._clone_dim_order.
#include "compiler/ops/EdgeOp.h"

#include <algorithm>

#include "compiler/ops/ShapeContext.h"
#include "core/TensorLimits.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/Copy.cpp.
std::vector<HostTensor> reference_view_copy(const ReferenceContext& c);
std::vector<HostTensor> reference_copy(const ReferenceContext& c);

// The fusion pattern and direct lowerings these ops use, defined in compiler/fusion/.
namespace fusion {
std::string lower_identity(FuseState& state, Node& node, int where);  // clones
// dq -> views / clones -> q (same quantization) => identity | q8ta_view, or folded into the
// q8ta_mean it flattens (q8ta_mean_flat); int8 view_copy into a q8ta_mean's output likewise; a q
// with other parameters => the view, then q8ta_clamp. A chain with a permute or a 5-D / 6-D
// tensor is fuse_data_movement's (compiler/fusion/Permute.cpp): a channel shuffle, a permute,
// or a view again.
void fuse_view(FuseState& state, int anchor);
// identity when the packed shape is the same, else q8ta_view on int8 data.
std::string lower_view(FuseState& state, Node& node, int where);
}  // namespace fusion

namespace {

std::vector<TypedShape> view_copy(const ShapeContext& c) {
  const Value& x = c.in("self");
  std::vector<int64_t> size = c.ints("size");  // any graph rank (5-D inside channel shuffles)
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == -1) {
      if (infer >= 0) c.fail(c.arg_field("size"), "-1 appears more than once in ", shape_str(size));
      infer = static_cast<int>(i);
    } else if (size[i] < 0) {
      c.fail(c.arg_field("size"), "invalid dimension ", size[i], " in ", shape_str(size));
    } else if (size[i] > 0 && known > kMaxTensorElements / size[i]) {
      // (a product that wraps could equal the input's count: [2^62 + 1, 4] has "4" elements)
      c.fail(c.arg_field("size"), shape_str(size), " has more elements than a tensor may (",
             kMaxTensorElements, ")");
    } else {
      known *= size[i];
    }
  }
  const int64_t total = element_count(x.shape);
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      c.fail(c.arg_field("size"), shape_str(size), " is invalid for input of shape ",
             shape_str(x.shape), " (", total, " elements)");
    }
    size[static_cast<size_t>(infer)] = total / known;
  } else if (known != total) {
    c.fail(c.arg_field("size"), shape_str(size), " has ", known, " elements, but the input shape ",
           shape_str(x.shape), " has ", total);
  }
  return {{x.dtype, size}};
}

std::vector<TypedShape> clone_like(const ShapeContext& c) {
  const Value& x = c.in("self");
  if (c.node().args.count("memory_format") != 0) (void)c.opt_str("memory_format");
  return {{x.dtype, x.shape}};
}

std::vector<TypedShape> clone_dim_order(const ShapeContext& c) {
  const Value& x = c.in("self");
  (void)c.flag_or("non_blocking", false);
  if (arg_present(c.node(), "dim_order")) {
    std::vector<int64_t> order = c.ints("dim_order");
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    bool ok = order.size() == x.shape.size();
    for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int64_t>(i);
    if (!ok) {
      c.fail(c.arg_field("dim_order"), "expected a permutation of the ", x.shape.size(),
             " dims of shape ", shape_str(x.shape), ", got ", shape_str(order));
    }
  }
  return {{x.dtype, x.shape}};
}

}  // namespace

// What a chain of views and clones on quantized data becomes (fuse_view; with a permute or a 5-D
// tensor in it, Permute.cpp's data movement; a view requantizing into a q8ta_clamp after it).
std::vector<std::string> moved_by_ops() {
  return {"identity",     "q8ta_view", "q8ta_mean_flat", "q8ta_channel_shuffle",
          "q8ta_permute", "q8ta_clamp"};
}

std::vector<EdgeOp> copy_edge_ops() {
  return {
      EdgeOp{"aten.view_copy", {"self"}, 1, {required_arg("size", Lit::Ints)}, 1, view_copy}
          .computed_by(reference_view_copy)
          .fused_by(fusion::fuse_view, moved_by_ops())
          .fusing_beyond_device()
          .lowered_by(fusion::lower_view, {"identity", "q8ta_view"}),
      EdgeOp{"aten.clone", {"self"}, 1, {optional_arg("memory_format", Lit::String)}, 1, clone_like}
          .computed_by(reference_copy)
          .fused_by(fusion::fuse_view, moved_by_ops())
          .lowered_by(fusion::lower_identity, {"identity"}),
      EdgeOp{"aten.alias_copy",
             {"self"},
             1,
             {optional_arg("memory_format", Lit::String)},
             1,
             clone_like}
          .computed_by(reference_copy)
          .fused_by(fusion::fuse_view, moved_by_ops())
          .lowered_by(fusion::lower_identity, {"identity"}),
      EdgeOp{"aten._clone_dim_order",
             {"self"},
             1,
             {optional_arg("non_blocking", Lit::Bool, ArgValue(false), false),
              optional_arg("dim_order", Lit::Ints)},
             1,
             clone_dim_order}
          .computed_by(reference_copy)
          .fused_by(fusion::fuse_view, moved_by_ops())
          .lowered_by(fusion::lower_identity, {"identity"}),
  };
}

}  // namespace vkd::compiler
