// torchao quantize_affine, dequantize_affine and choose_qparams_affine (block-wise).
#include "compiler/ops/EdgeOp.h"

#include <cmath>
#include <optional>

#include "compiler/ops/ShapeContext.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/Affine.cpp.
std::vector<HostTensor> reference_quantize_affine(const ReferenceContext& c);
std::vector<HostTensor> reference_dequantize_affine(const ReferenceContext& c);
std::vector<HostTensor> reference_choose_qparams_affine(const ReferenceContext& c);
// The arguments those references do not implement (defined with them).
std::optional<std::string> affine_host_refusal(const Node& node);

// The fusion pattern and direct lowerings these ops use, defined in compiler/fusion/.
namespace fusion {
// torchao quantize / dequantize / choose_qparams_affine (compiler/fusion/LowerAffine.h).
std::string lower_affine(FuseState& state, Node& node, int where);
}  // namespace fusion

namespace {

// block_size checks shared by the torchao affine ops; returns shape / block_size.
std::vector<int64_t> affine_blocks(const ShapeContext& c, const Value& x) {
  const std::vector<int64_t> block = c.ints("block_size");
  if (block.size() != x.shape.size()) {
    c.fail(c.arg_field("block_size"), "expected ", x.shape.size(),
           " entries (the input rank, input shape ", shape_str(x.shape), "), got ",
           shape_str(block));
  }
  std::vector<int64_t> out(block.size());
  for (size_t i = 0; i < block.size(); ++i) {
    if (block[i] < 1 || x.shape[i] % block[i] != 0) {
      c.fail(c.arg_field("block_size"), shape_str(block), " does not divide input shape ",
             shape_str(x.shape), " (dim ", i, ")");
    }
    out[i] = x.shape[i] / block[i];
  }
  return out;
}

// A scale or zero point of an affine op: shape / block_size, or that with its size-1 dims
// dropped (torchao squeezes them).
void affine_param(const ShapeContext& c, const Value& v, const char* name, DType dtype,
                  const std::vector<int64_t>& blocks) {
  c.dtype(v, name, dtype);
  if (v.shape == blocks) return;
  auto squeeze = [](const std::vector<int64_t>& s) {
    std::vector<int64_t> out;
    for (int64_t d : s) {
      if (d != 1) out.push_back(d);
    }
    return out;
  };
  if (squeeze(v.shape) != squeeze(blocks)) {
    c.fail(c.input_field(name), "expected shape ", shape_str(blocks),
           " (input shape / block_size), got ", shape_str(v.shape));
  }
}

std::vector<TypedShape> quantize_affine(const ShapeContext& c) {
  const Value& x = c.in("input");
  c.dtype(x, "input", DType::Float32);
  const std::vector<int64_t> blocks = affine_blocks(c, x);
  affine_param(c, c.in("scale"), "scale", DType::Float32, blocks);
  if (const Value* zp = c.opt_in("zero_point")) {
    affine_param(c, *zp, "zero_point", DType::Int32, blocks);
  }
  c.str_in("output_dtype", {"int8"}, false);
  c.int8_range("quant_min", "quant_max", true);
  return {{DType::Int8, x.shape}};
}

std::vector<TypedShape> dequantize_affine(const ShapeContext& c) {
  const Value& x = c.in("input");
  c.str_in("input_dtype", {"int8"}, false);
  c.dtype(x, "input", DType::Int8);
  const std::vector<int64_t> blocks = affine_blocks(c, x);
  affine_param(c, c.in("scale"), "scale", DType::Float32, blocks);
  if (const Value* zp = c.opt_in("zero_point")) {
    affine_param(c, *zp, "zero_point", DType::Int32, blocks);
  }
  c.int8_range("quant_min", "quant_max", true);
  c.str_in("output_dtype", {"float32"}, true);
  return {{DType::Float32, x.shape}};
}

std::vector<TypedShape> choose_qparams_affine(const ShapeContext& c) {
  const Value& x = c.in("input");
  c.dtype(x, "input", DType::Float32);
  c.str_in("mapping_type", {"SYMMETRIC", "ASYMMETRIC", "SYMMETRIC_NO_CLIPPING_ERR"}, false);
  const std::vector<int64_t> blocks = affine_blocks(c, x);
  c.str_in("target_dtype", {"int8"}, false);
  c.int8_range("quant_min", "quant_max", true);
  if (std::optional<double> eps = c.opt_f64("eps")) {
    if (!(std::isfinite(*eps) && *eps >= 0)) {
      c.fail(c.arg_field("eps"), "expected a finite value >= 0, got ", *eps);
    }
  }
  c.str_in("scale_dtype", {"float32"}, true);
  // The zero point is stored as int32 whatever integer type was asked for.
  c.str_in("zero_point_dtype", {"int32", "int64", "int8"}, true);
  return {{DType::Float32, blocks}, {DType::Int32, blocks}};
}

}  // namespace

std::vector<EdgeOp> affine_edge_ops() {
  return {
      EdgeOp{"torchao.quantize_affine",
             {"input", "scale", "zero_point"},
             2,
             {required_arg("block_size", Lit::Ints), required_arg("output_dtype", Lit::String),
              required_arg("quant_min", Lit::Int, true), required_arg("quant_max", Lit::Int, true),
              optional_arg("zero_point_domain", Lit::String)},
             1,
             quantize_affine}
          .computed_by(reference_quantize_affine)
          .refused_on_host_when(affine_host_refusal)
          .lowered_by(fusion::lower_affine, {"q8ta_quantize_affine"}),
      EdgeOp{"torchao.dequantize_affine",
             {"input", "scale", "zero_point"},
             2,
             {required_arg("block_size", Lit::Ints), required_arg("input_dtype", Lit::String),
              required_arg("quant_min", Lit::Int, true), required_arg("quant_max", Lit::Int, true),
              optional_arg("output_dtype", Lit::String),
              optional_arg("zero_point_domain", Lit::String)},
             1,
             dequantize_affine}
          .computed_by(reference_dequantize_affine)
          .refused_on_host_when(affine_host_refusal)
          .lowered_by(fusion::lower_affine, {"q8ta_dequantize_affine"}),
      EdgeOp{
          "torchao.choose_qparams_affine",
          {"input"},
          1,
          {required_arg("mapping_type", Lit::String), required_arg("block_size", Lit::Ints),
           required_arg("target_dtype", Lit::String), required_arg("quant_min", Lit::Int, true),
           required_arg("quant_max", Lit::Int, true), required_arg("eps", Lit::Number, true),
           optional_arg("scale_dtype", Lit::String), optional_arg("zero_point_dtype", Lit::String),
           optional_arg("preserve_zero", Lit::Bool, ArgValue(true), false),
           optional_arg("zero_point_domain", Lit::String)},
          2,
          choose_qparams_affine}
          .computed_by(reference_choose_qparams_affine)
          .refused_on_host_when(affine_host_refusal)
          .lowered_by(fusion::lower_affine, {"choose_qparams_affine"}),
  };
}

}  // namespace vkd::compiler
