// aten.convolution and aten.linear (float; the quantized patterns around them are fused).
#include "compiler/ops/EdgeOp.h"

#include <algorithm>

#include "compiler/ops/ShapeContext.h"
#include "compiler/ops/ShapeFormulas.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/ConvLinear.cpp.
std::vector<HostTensor> reference_convolution(const ReferenceContext& c);
std::vector<HostTensor> reference_linear(const ReferenceContext& c);

// The fusion pattern and direct lowerings these ops use, defined in compiler/fusion/.
namespace fusion {
// dq -> aten.linear | aten.convolution [-> act] -> q => q8ta_linear | q8ta_conv2d (transposed:
// q8ta_conv_transpose2d); with no quantized tail the float-output q8ta_linear_dq |
// q8ta_conv2d_dq (none for transposed).
void fuse_linear_conv(FuseState& state, int anchor);
}  // namespace fusion

namespace {

// aten.convolution with transposed = true: weight [C_in, C_out / groups, KH, KW], output
// (H - 1) * stride - 2 * padding + dilation * (KH - 1) + output_padding + 1 (W likewise), each
// output_padding smaller than its stride or dilation (PyTorch's rule).
std::vector<TypedShape> transposed_convolution(const ShapeContext& c, const Value& x,
                                               const Value& w) {
  const std::vector<int64_t> stride = c.pair("stride", 1);
  const std::vector<int64_t> padding = c.pair("padding", 0);
  const std::vector<int64_t> dilation = c.pair("dilation", 1);
  const std::vector<int64_t> output_padding = c.pair("output_padding", 0);
  const int64_t groups = c.i64("groups");
  if (groups < 1) c.fail(c.arg_field("groups"), "expected a value >= 1, got ", groups);
  const int64_t ch = x.shape[1];
  if (w.shape[0] != ch || ch % groups != 0) {
    c.fail(c.input_field("weight"), "expected [C_in = ", ch,
           ", C_out / groups, KH, KW] with C_in "
           "divisible by groups ",
           groups, " (transposed), got ", shape_str(w.shape));
  }
  const int64_t oc = w.shape[1] * groups;
  if (const Value* b = c.opt_in("bias")) {
    c.dtype(*b, "bias", DType::Float32);
    c.shape(*b, "bias", {oc}, "one per output channel");
  }
  std::vector<int64_t> out = {x.shape[0], oc, 0, 0};
  for (size_t i = 0; i < 2; ++i) {
    if (output_padding[i] >= std::max(stride[i], dilation[i])) {
      c.fail(c.arg_field("output_padding"), "must be smaller than either stride ",
             shape_str(stride), " or dilation ", shape_str(dilation), ", got ",
             shape_str(output_padding));
    }
    out[2 + i] = (x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] +
                 dilation[i] * (w.shape[2 + i] - 1) + output_padding[i] + 1;
  }
  if (out[2] < 1 || out[3] < 1) {
    c.fail(c.input_field("input"), "spatial size ", x.shape[2], "x", x.shape[3], " with padding ",
           shape_str(padding), " gives an empty output ", out[2], "x", out[3]);
  }
  return {{DType::Float32, out}};
}

std::vector<TypedShape> convolution(const ShapeContext& c) {
  const Value& x = c.in("input");
  const Value& w = c.in("weight");
  c.dtype(x, "input", DType::Float32);
  c.rank(x, "input", 4);
  c.dtype(w, "weight", DType::Float32);
  c.rank(w, "weight", 4);
  if (c.flag_or("transposed", false)) return transposed_convolution(c, x, w);
  const std::vector<int64_t> stride = c.pair("stride", 1);
  const std::vector<int64_t> padding = c.pair("padding", 0);
  const std::vector<int64_t> dilation = c.pair("dilation", 1);
  if (c.node().args.count("output_padding") != 0) (void)c.ints("output_padding");
  const int64_t groups = c.i64("groups");
  if (groups < 1) c.fail(c.arg_field("groups"), "expected a value >= 1, got ", groups);

  const int64_t n = x.shape[0], ch = x.shape[1], h = x.shape[2], wd = x.shape[3];
  const int64_t oc = w.shape[0];
  if (ch % groups != 0) {
    c.fail(c.input_field("input"), "input channels ", ch, " are not divisible by groups ", groups);
  }
  if (oc % groups != 0) {
    c.fail(c.input_field("weight"), "output channels ", oc, " are not divisible by groups ",
           groups);
  }
  if (w.shape[1] != ch / groups) {
    c.fail(c.input_field("weight"), "expected ", ch / groups,
           " input channels per group (input channels ", ch, " / groups ", groups, "), got ",
           w.shape[1], " (weight shape ", shape_str(w.shape), ")");
  }
  if (const Value* b = c.opt_in("bias")) {
    c.dtype(*b, "bias", DType::Float32);
    c.shape(*b, "bias", {oc}, "one per output channel");
  }
  const int64_t oh = conv_output_size(h, w.shape[2], stride[0], padding[0], dilation[0]);
  const int64_t ow = conv_output_size(wd, w.shape[3], stride[1], padding[1], dilation[1]);
  if (oh < 1 || ow < 1) {
    c.fail(c.input_field("input"), "spatial size ", h, "x", wd, " (padding ", shape_str(padding),
           ") is too small for kernel ", w.shape[2], "x", w.shape[3], " with dilation ",
           shape_str(dilation), ": output would be ", oh, "x", ow);
  }
  return {{DType::Float32, {n, oc, oh, ow}}};
}

std::vector<TypedShape> linear(const ShapeContext& c) {
  const Value& x = c.in("input");
  const Value& w = c.in("weight");
  c.dtype(x, "input", DType::Float32);
  c.dtype(w, "weight", DType::Float32);
  if (x.shape.empty()) c.fail(c.input_field("input"), "expected rank >= 1, got a scalar");
  c.rank(w, "weight", 2);
  const int64_t k = x.shape.back();
  if (w.shape[1] != k) {
    c.fail(c.input_field("weight"), "expected [N, ", k, "] (input features ", k, "), got ",
           shape_str(w.shape));
  }
  const int64_t out_features = w.shape[0];
  if (const Value* b = c.opt_in("bias")) {
    c.dtype(*b, "bias", DType::Float32);
    c.shape(*b, "bias", {out_features}, "one per output feature");
  }
  std::vector<int64_t> out = x.shape;
  out.back() = out_features;
  return {{DType::Float32, out}};
}

}  // namespace

std::vector<EdgeOp> conv_linear_edge_ops() {
  return {
      EdgeOp{"aten.convolution",
             {"input", "weight", "bias"},
             2,
             {required_arg("stride", Lit::Ints), required_arg("padding", Lit::Ints),
              required_arg("dilation", Lit::Ints), required_arg("transposed", Lit::Bool),
              required_arg("output_padding", Lit::Ints), required_arg("groups", Lit::Int)},
             1,
             convolution}
          .computed_by(reference_convolution)
          // _dw_pw[_add]: a depthwise match and the 1x1 match reading it, joined once every
          // pattern was matched, _pw_dw_pw[_add]: then the 1x1 expansion before them
          // (fusion/DepthwisePointwise.cpp); _ps_pw_q_dq: a 1x1 q8ta_conv2d_ps match and the
          // 1x1 q8ta_conv2d_q_dq match reading it (fusion/ShuffledHead.cpp)
          .fused_by(fusion::fuse_linear_conv,
                    {"q8ta_conv2d", "q8ta_conv2d_dq", "q8ta_conv_transpose2d", "q8ta_conv2d_dw_pw",
                     "q8ta_conv2d_dw_pw_add", "q8ta_conv2d_pw_dw_pw", "q8ta_conv2d_pw_dw_pw_add",
                     "q8ta_conv2d_ps_pw_q_dq"}),
      EdgeOp{"aten.linear", {"input", "weight", "bias"}, 2, {}, 1, linear}
          .computed_by(reference_linear)
          .fused_by(fusion::fuse_linear_conv, {"q8ta_linear", "q8ta_linear_dq"}),
  };
}

}  // namespace vkd::compiler
