// The schema entries of runtime/ops/FloatElementwise.cpp's ops: float_add, float_mul, float_div,
// float_affine_scalar, float_clamp, float_gelu (what a quantizer leaves float: a transformer's
// residual stream, its attention mask, the sentence pooling's scaling, a dynamically quantized
// FFN's activation).
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// float32 in and out, any float buffers. The binary ops broadcast a and b to the output's shape
// (numpy rules; either may be a float32 constant), the unary ones their input (a broadcast
// copy: aten.expand_as).
void float_elementwise_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32};
  const PlacementSet floats = PlacementSet::float_buffers();
  auto binary = [&](const char* name, const char* summary, std::vector<ArgSchema> extra) {
    return kernel_op(
        name, summary,
        arg_list(tensor_in("a", f32, floats, {kBufW}), tensor_in("b", f32, floats, {kBufW}),
                 std::move(extra), tensor_out("output", f32, floats, {kBufW})));
  };
  s.push_back(
      binary("float_add", "float32 a + alpha * b, broadcast", {scalar("alpha", ArgKind::Float)}));
  s.push_back(binary("float_mul", "float32 a * b, broadcast", {}));
  s.push_back(binary("float_div", "float32 a / b (correctly rounded), broadcast", {}));
  s.push_back(kernel_op(
      "float_affine_scalar", "float32 x * multiplier + addend (mul / rsub by a scalar)",
      arg_list(tensor_in("input", f32, floats, {kBufW}), scalar("multiplier", ArgKind::Float),
               scalar("addend", ArgKind::Float), tensor_out("output", f32, floats, {kBufW}))));
  s.push_back(kernel_op(
      "float_clamp", "float32 clamp to [min, max] (NaN passes)",
      arg_list(tensor_in("input", f32, floats, {kBufW}), scalar("min", ArgKind::Float),
               scalar("max", ArgKind::Float), tensor_out("output", f32, floats, {kBufW}))));
  s.push_back(kernel_op(
      "float_gelu", "float32 GELU, approximate 0 = erf, 1 = tanh (within 1e-6 |x|)",
      arg_list(tensor_in("input", f32, floats, {kBufW}), scalar("approximate", ArgKind::Int),
               tensor_out("output", f32, floats, {kBufW}))));
}

}  // namespace vkd::schema
