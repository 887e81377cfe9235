#include "partitioner_schema/ops/SchemaBuilders.h"

#include <iterator>

namespace vkd::schema {

ArgSchema tensor_in(std::string name, std::vector<DType> dtypes, PlacementSet set,
                    std::vector<Placement> preferred) {
  ArgSchema a{std::move(name), ArgKind::Tensor};
  a.dtypes = std::move(dtypes);
  a.placements = set;
  a.preferred = std::move(preferred);
  return a;
}
ArgSchema tensor_out(std::string name, std::vector<DType> dtypes, PlacementSet set,
                     std::vector<Placement> preferred) {
  ArgSchema a = tensor_in(std::move(name), std::move(dtypes), set, std::move(preferred));
  a.output = true;
  return a;
}
ArgSchema tensor_list_in(std::string name, std::vector<DType> dtypes, PlacementSet set) {
  ArgSchema a = tensor_in(std::move(name), std::move(dtypes), set);
  a.kind = ArgKind::TensorList;
  return a;
}
ArgSchema tied(ArgSchema a, int to) {
  a.tied_to = to;
  return a;
}
ArgSchema constant_in(std::string name, DType dtype) {
  ArgSchema a = tensor_in(std::move(name), {dtype}, {kBufW});
  a.constant = true;
  return a;
}
std::vector<ArgSchema> per_channel_weights(int weight_rank, const std::string& prefix) {
  ArgSchema weight = constant_in(prefix + "weight", DType::Int8);
  weight.constant_rank = weight_rank;
  ArgSchema scales = constant_in(prefix + "weight_scales", DType::Float32);
  scales.count_is_dim0_of = weight.name;
  ArgSchema bias = constant_in(prefix + "bias", DType::Float32);
  bias.count_is_dim0_of = weight.name;
  return {weight, scales, bias};
}
ArgSchema scalar(std::string name, ArgKind kind) { return ArgSchema{std::move(name), kind}; }

std::vector<ArgSchema> per_tensor_qparams(const std::string& prefix) {
  return {scalar(prefix + "scale", ArgKind::Float), scalar(prefix + "zero_point", ArgKind::Int)};
}
std::vector<ArgSchema> quant_range() {
  return {scalar("quant_min", ArgKind::Int), scalar("quant_max", ArgKind::Int)};
}
std::vector<ArgSchema> activation_range() {
  return {scalar("activation_min", ArgKind::Int), scalar("activation_max", ArgKind::Int)};
}

void append(std::vector<ArgSchema>& out, ArgSchema arg) { out.push_back(std::move(arg)); }
void append(std::vector<ArgSchema>& out, std::vector<ArgSchema> args) {
  out.insert(out.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
}

std::vector<ArgSchema> residual_add_args(const std::string& prefix, PlacementSet set,
                                         Placement preferred, size_t before) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const int other = static_cast<int>(before) + 4;
  return arg_list(per_tensor_qparams(prefix), scalar(prefix + "activation_min", ArgKind::Int),
                  scalar(prefix + "activation_max", ArgKind::Int),
                  tensor_in("other", i8x4, set, {preferred}), per_tensor_qparams("other_"),
                  per_tensor_qparams("output_"), activation_range(),
                  tied(tensor_out("output", i8x4, set, {preferred}), other));
}

OpSchema kernel_op(std::string name, std::string summary, std::vector<ArgSchema> args) {
  OpSchema op{std::move(name), std::move(args)};
  op.has_kernel = true;
  op.summary = std::move(summary);
  return op;
}
OpSchema identity_op(std::string name, std::string summary, std::vector<ArgSchema> args) {
  OpSchema op{std::move(name), std::move(args)};
  op.identity = true;
  op.summary = std::move(summary);
  return op;
}
OpSchema schema_only_op(std::string name, std::string summary, std::vector<ArgSchema> args) {
  OpSchema op{std::move(name), std::move(args)};
  op.summary = std::move(summary);
  return op;
}

}  // namespace vkd::schema
