// aten.max_pool2d, aten.avg_pool2d, aten.mean.dim and aten.adaptive_avg_pool2d.
#include "compiler/ops/EdgeOp.h"

#include <set>

#include "compiler/ops/ShapeContext.h"
#include "compiler/ops/ShapeFormulas.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/Pool.cpp.
std::vector<HostTensor> reference_max_pool2d(const ReferenceContext& c);
std::vector<HostTensor> reference_avg_pool2d(const ReferenceContext& c);
std::vector<HostTensor> reference_mean_dim(const ReferenceContext& c);
std::vector<HostTensor> reference_adaptive_avg_pool2d(const ReferenceContext& c);

// The fusion pattern and direct lowerings these ops use, defined in compiler/fusion/.
namespace fusion {
// dq -> aten.max_pool2d -> q => q8ta_max_pool2d; dq -> aten.avg_pool2d -> q => q8ta_avg_pool2d;
// dq -> aten.mean.dim (H, W) | aten.adaptive_avg_pool2d (1x1) -> q => q8ta_mean (keepdim) |
// q8ta_mean_flat (keepdim=False); adaptive_avg_pool2d to another size =>
// q8ta_adaptive_avg_pool2d.
void fuse_pool(FuseState& state, int anchor);
}  // namespace fusion

namespace {

// The input of a 2-d pool: float32 of rank 3 or 4.
const Value& pool_input(const ShapeContext& c) {
  const Value& x = c.in("self");
  c.dtype(x, "self", DType::Float32);
  const size_t rank = x.shape.size();
  if (rank != 3 && rank != 4) {
    c.fail(c.input_field("self"), "expected rank 3 or 4, got shape ", shape_str(x.shape));
  }
  return x;
}

// The output shape of max_pool2d / avg_pool2d (`dilation` 1 for avg_pool2d): kernel_size,
// stride (absent or empty: the kernel size), padding (at most half the kernel), ceil_mode.
std::vector<TypedShape> pool_window_shape(const ShapeContext& c, const Value& x,
                                          const std::vector<int64_t>& dilation) {
  const size_t rank = x.shape.size();
  const std::vector<int64_t> kernel = c.pair("kernel_size", 1);
  std::vector<int64_t> stride = kernel;
  if (arg_present(c.node(), "stride")) {
    std::vector<int64_t> s = c.ints("stride");
    if (!s.empty()) stride = c.checked_pair("stride", s, 1);
  }
  const std::vector<int64_t> padding =
      arg_present(c.node(), "padding") ? c.pair("padding", 0) : std::vector<int64_t>{0, 0};
  const bool ceil_mode = c.flag_or("ceil_mode", false);
  for (size_t i = 0; i < 2; ++i) {
    if (padding[i] > kernel[i] / 2) {
      c.fail(c.arg_field("padding"), "must be at most half of kernel_size ", shape_str(kernel),
             ", got ", shape_str(padding));
    }
  }
  std::vector<int64_t> out = x.shape;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t in = x.shape[rank - 2 + i];
    const int64_t o =
        pool_output_size(in, kernel[i], stride[i], padding[i], dilation[i], ceil_mode);
    if (o < 1) {
      c.fail(c.input_field("self"), "spatial size ", x.shape[rank - 2], "x", x.shape[rank - 1],
             " is too small for kernel_size ", shape_str(kernel), " with padding ",
             shape_str(padding), " and dilation ", shape_str(dilation));
    }
    out[rank - 2 + i] = o;
  }
  return {{DType::Float32, out}};
}

std::vector<TypedShape> max_pool2d(const ShapeContext& c) {
  const Value& x = pool_input(c);
  const std::vector<int64_t> dilation =
      arg_present(c.node(), "dilation") ? c.pair("dilation", 1) : std::vector<int64_t>{1, 1};
  return pool_window_shape(c, x, dilation);
}

std::vector<TypedShape> avg_pool2d(const ShapeContext& c) {
  const Value& x = pool_input(c);
  (void)c.flag_or("count_include_pad", true);
  if (arg_present(c.node(), "divisor_override") && c.i64("divisor_override") == 0) {
    c.fail(c.arg_field("divisor_override"), "must not be 0 (None for no override)");
  }
  return pool_window_shape(c, x, {1, 1});
}

std::vector<TypedShape> mean_dim(const ShapeContext& c) {
  const Value& x = c.in("self");
  c.dtype(x, "self", DType::Float32);
  c.rank(x, "self", 4);
  const std::vector<int64_t> dims = c.ints("dim");
  std::set<int64_t> norm;
  for (int64_t d : dims) norm.insert(d < 0 ? d + 4 : d);
  if (dims.size() != 2 || norm != std::set<int64_t>{2, 3}) {
    c.fail(c.arg_field("dim"), "only the spatial dims [-1, -2] / [2, 3] are supported, got ",
           shape_str(dims));
  }
  const bool keepdim = c.flag_or("keepdim", false);
  std::vector<int64_t> out = {x.shape[0], x.shape[1]};
  if (keepdim) {
    out.push_back(1);
    out.push_back(1);
  }
  return {{DType::Float32, out}};
}

std::vector<TypedShape> adaptive_avg_pool2d(const ShapeContext& c) {
  const Value& x = pool_input(c);
  const size_t rank = x.shape.size();
  const std::vector<int64_t> size = c.pair("output_size", 1);
  std::vector<int64_t> out = x.shape;
  out[rank - 2] = size[0];
  out[rank - 1] = size[1];
  return {{DType::Float32, out}};
}

// PyTorch's max_pool2d and avg_pool2d: an absent stride means the kernel size.
void default_stride_to_kernel_size(Args& args) {
  if (!args.count("stride")) args["stride"] = args.at("kernel_size");
}

}  // namespace

std::vector<EdgeOp> pool_edge_ops() {
  using V = std::vector<int64_t>;
  EdgeOp max_pool = {"aten.max_pool2d",
                     {"self"},
                     1,
                     {required_arg("kernel_size", Lit::Ints),
                      optional_arg("stride", Lit::Ints, std::nullopt, false),
                      optional_arg("padding", Lit::Ints, ArgValue(V{0, 0}), false),
                      optional_arg("dilation", Lit::Ints, ArgValue(V{1, 1}), false),
                      optional_arg("ceil_mode", Lit::Bool, ArgValue(false), false)},
                     1,
                     max_pool2d};
  max_pool.computed_by(reference_max_pool2d).fused_by(fusion::fuse_pool, {"q8ta_max_pool2d"});
  max_pool.complete_args = default_stride_to_kernel_size;
  EdgeOp avg_pool = {"aten.avg_pool2d",
                     {"self"},
                     1,
                     {required_arg("kernel_size", Lit::Ints),
                      optional_arg("stride", Lit::Ints, std::nullopt, false),
                      optional_arg("padding", Lit::Ints, ArgValue(V{0, 0}), false),
                      optional_arg("ceil_mode", Lit::Bool, ArgValue(false), false),
                      optional_arg("count_include_pad", Lit::Bool, ArgValue(true), false),
                      optional_arg("divisor_override", Lit::Int)},
                     1,
                     avg_pool2d};
  avg_pool.computed_by(reference_avg_pool2d).fused_by(fusion::fuse_pool, {"q8ta_avg_pool2d"});
  avg_pool.complete_args = default_stride_to_kernel_size;
  return {
      max_pool,
      avg_pool,
      EdgeOp{"aten.mean.dim",
             {"self"},
             1,
             {required_arg("dim", Lit::Ints),
              optional_arg("keepdim", Lit::Bool, ArgValue(false), false)},
             1,
             mean_dim}
          .computed_by(reference_mean_dim)
          .fused_by(fusion::fuse_pool, {"q8ta_mean", "q8ta_mean_flat"}),
      EdgeOp{"aten.adaptive_avg_pool2d",
             {"self"},
             1,
             {required_arg("output_size", Lit::Ints)},
             1,
             adaptive_avg_pool2d}
          .computed_by(reference_adaptive_avg_pool2d)
          .fused_by(fusion::fuse_pool, {"q8ta_mean", "q8ta_adaptive_avg_pool2d"}),
  };
}

}  // namespace vkd::compiler
