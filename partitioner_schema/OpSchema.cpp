#include "partitioner_schema/OpSchema.h"

#include "runtime/core/Error.h"

namespace vkd::schema {
namespace {

using S = StorageType;
using L = MemoryLayout;

constexpr Placement kBufW{S::Buffer, L::WidthPacked};
constexpr Placement k4W4C{S::Buffer, L::PackedInt8_4W4C};
constexpr Placement k4H4W{S::Buffer, L::PackedInt8_4H4W};
constexpr Placement k4C1W{S::Buffer, L::PackedInt8_4C1W};

// --- argument builders --------------------------------------------------------------------
ArgSchema tensor_in(std::string name, std::vector<DType> dtypes, PlacementSet set,
                    std::vector<Placement> preferred = {}) {
  ArgSchema a{std::move(name), ArgKind::Tensor};
  a.dtypes = std::move(dtypes);
  a.placements = set;
  a.preferred = std::move(preferred);
  return a;
}
ArgSchema tensor_out(std::string name, std::vector<DType> dtypes, PlacementSet set,
                     std::vector<Placement> preferred = {}) {
  ArgSchema a = tensor_in(std::move(name), std::move(dtypes), set, std::move(preferred));
  a.output = true;
  return a;
}
ArgSchema tied(ArgSchema a, int to) {
  a.tied_to = to;
  return a;
}
// Weights, per-channel scales and bias: constants the op prepacks itself.
ArgSchema constant_in(std::string name, DType dtype) {
  ArgSchema a = tensor_in(std::move(name), {dtype}, {kBufW});
  a.constant = true;
  return a;
}
// int8 weights of rank `weight_rank` ([N, K] or [C_out, C_in / groups, KH, KW]) and one float32
// scale and bias per output channel.
std::vector<ArgSchema> per_channel_weights(int weight_rank) {
  ArgSchema weight = constant_in("weight", DType::Int8);
  weight.constant_rank = weight_rank;
  ArgSchema scales = constant_in("weight_scales", DType::Float32);
  scales.count_is_dim0_of = "weight";
  ArgSchema bias = constant_in("bias", DType::Float32);
  bias.count_is_dim0_of = "weight";
  return {weight, scales, bias};
}
ArgSchema scalar(std::string name, ArgKind kind) { return ArgSchema{std::move(name), kind}; }

std::vector<ArgSchema> per_tensor_qparams(const std::string& prefix) {
  return {scalar(prefix + "scale", ArgKind::Float), scalar(prefix + "zero_point", ArgKind::Int)};
}

template <typename... Parts>
std::vector<ArgSchema> concat(Parts&&... parts) {
  std::vector<ArgSchema> out;
  (out.insert(out.end(), parts.begin(), parts.end()), ...);
  return out;
}

std::vector<OpSchema> build_schemas() {
  const PlacementSet any_float = PlacementSet::all_float();
  const PlacementSet int8 = PlacementSet::all_int8();
  const PlacementSet chw_int8 = PlacementSet::channels_packed_int8();
  const std::vector<DType> f32 = {DType::Float32};
  // float16 buffers need 16-bit storage on the device (textures need nothing extra).
  const std::vector<DType> f32_f16 = {DType::Float32, DType::Float16};
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const std::vector<ArgSchema> activation = {scalar("activation_min", ArgKind::Int),
                                             scalar("activation_max", ArgKind::Int)};
  std::vector<OpSchema> s;

  // ---- ops with kernels ----
  s.push_back({"q8ta_quantize",
               concat(std::vector<ArgSchema>{tensor_in("input", f32, any_float, {kBufW})},
                      per_tensor_qparams(""),
                      std::vector<ArgSchema>{scalar("quant_min", ArgKind::Int),
                                             scalar("quant_max", ArgKind::Int),
                                             tensor_out("output", i8x4, int8, {k4W4C})}),
               true, false, false, "float32 -> int8x4, per-tensor affine"});
  s.push_back({"q8ta_dequantize",
               concat(std::vector<ArgSchema>{tensor_in("input", i8x4, int8, {k4W4C})},
                      per_tensor_qparams(""),
                      std::vector<ArgSchema>{scalar("quant_min", ArgKind::Int),
                                             scalar("quant_max", ArgKind::Int),
                                             tensor_out("output", f32, any_float, {kBufW})}),
               true, false, false, "int8x4 -> float32, per-tensor affine"});
  // torchao affine ops (runtime/ops/AffineQuant.h): per-block scale (float32) / zero point
  // (int32) buffers, one entry per block; block_size in the input's rank. The int8 side prefers
  // 4H4W, the linear input layout (per-token / per-group-along-K activations feed linears).
  const PlacementSet f32_buffer{kBufW};
  const std::vector<DType> i32 = {DType::Int32};
  const std::vector<ArgSchema> affine_params = {
      tensor_in("scale", f32, f32_buffer), tensor_in("zero_point", i32, f32_buffer),
      scalar("block_size", ArgKind::IntList), scalar("quant_min", ArgKind::Int),
      scalar("quant_max", ArgKind::Int)};
  s.push_back({"q8ta_quantize_affine",
               concat(std::vector<ArgSchema>{tensor_in("input", f32, any_float, {kBufW})},
                      affine_params,
                      std::vector<ArgSchema>{tensor_out("output", i8x4, int8, {k4H4W})}),
               true, false, false, "float32 -> int8x4, torchao quantize_affine (block-wise)"});
  s.push_back({"q8ta_dequantize_affine",
               concat(std::vector<ArgSchema>{tensor_in("input", i8x4, int8, {k4H4W})},
                      affine_params,
                      std::vector<ArgSchema>{tensor_out("output", f32, any_float, {kBufW})}),
               true, false, false, "int8x4 -> float32, torchao dequantize_affine (block-wise)"});
  s.push_back({"choose_qparams_affine",
               {tensor_in("input", f32, any_float, {kBufW}),
                scalar("mapping_type", ArgKind::Int),  // 0 SYMMETRIC, 1 ..._NO_CLIPPING_ERR, 2 ASYMMETRIC
                scalar("block_size", ArgKind::IntList), scalar("quant_min", ArgKind::Int),
                scalar("quant_max", ArgKind::Int), scalar("eps", ArgKind::Float),
                tensor_out("scale", f32, f32_buffer), tensor_out("zero_point", i32, f32_buffer)},
               true, false, false, "per-block scale / zero point, torchao choose_qparams_affine"});
  s.push_back({"q8ta_convert",
               {tensor_in("input", i8x4, int8), scalar("zero_point", ArgKind::Int),
                tensor_out("output", i8x4, int8)},
               true, false, false, "int8x4 layout conversion (inserted by the compiler)"});
  s.push_back({"float_convert",
               {tensor_in("input", f32, any_float), tensor_out("output", f32, any_float)},
               true, false, false, "float32 storage/layout conversion (inserted by the compiler)"});

  // ---- identity: clone / alias / view keeping the packed dim; always folded ----
  const std::vector<DType> moved = {DType::Float32, DType::Float16, DType::Int8x4};  // copied as is
  s.push_back({"identity",
               {tensor_in("input", moved, any_float | int8),
                tied(tensor_out("output", moved, any_float | int8), 0)},
               false, true, false, "clone/alias/view_copy: output shares the input's layout"});

  // ---- fused quantized ops: linear, conv2d, add, pooling, pixel shuffle ----
  const auto linear_head = concat(
      std::vector<ArgSchema>{tensor_in("input", i8x4, {k4H4W})}, per_tensor_qparams("input_"),
      per_channel_weights(2));
  s.push_back({"q8ta_linear",
               concat(linear_head, per_tensor_qparams("output_"), activation,
                      std::vector<ArgSchema>{tensor_out("output", i8x4, {k4H4W}, {k4H4W})}),
               true, false, false, "int8 linear, requantized output (GEMM / GEMV kernels)"});
  s.push_back({"q8ta_linear_dq",
               concat(linear_head,
                      std::vector<ArgSchema>{tensor_out("output", f32, {kBufW}, {kBufW})}),
               true, false, false, "int8 linear, float32 output (GEMM / GEMV kernels)"});
  const auto conv_head = concat(
      std::vector<ArgSchema>{tensor_in("input", i8x4, chw_int8, {k4W4C})},
      per_tensor_qparams("input_"), per_channel_weights(4),
      std::vector<ArgSchema>{scalar("stride", ArgKind::IntList),
                             scalar("padding", ArgKind::IntList),
                             scalar("dilation", ArgKind::IntList),
                             scalar("groups", ArgKind::Int)});
  s.push_back({"q8ta_conv2d",
               concat(conv_head, per_tensor_qparams("output_"), activation,
                      std::vector<ArgSchema>{tensor_out("output", i8x4, chw_int8, {k4W4C})}),
               true, false, false, "int8 conv2d, requantized output, fused relu/clamp"});
  s.push_back({"q8ta_conv2d_dq",
               concat(conv_head,
                      std::vector<ArgSchema>{tensor_out("output", f32, {kBufW}, {kBufW})}),
               true, false, false, "int8 conv2d, float32 output"});
  s.push_back({"q8ta_add",
               concat(std::vector<ArgSchema>{tensor_in("a", i8x4, int8, {k4W4C})},
                      per_tensor_qparams("a_"),
                      std::vector<ArgSchema>{tied(tensor_in("b", i8x4, int8), 0)},
                      per_tensor_qparams("b_"), per_tensor_qparams("output_"), activation,
                      std::vector<ArgSchema>{tied(tensor_out("output", i8x4, int8), 0)}),
               true, false, false,
               "int8 add with own scales, fused relu; b (or a) may be [N or 1, C, 1, 1] or [1, 1, 1, 1]"});
  s.push_back({"q8ta_max_pool2d",
               concat(std::vector<ArgSchema>{tensor_in("input", i8x4, chw_int8, {k4W4C})},
                      per_tensor_qparams("input_"),
                      std::vector<ArgSchema>{scalar("kernel_size", ArgKind::IntList),
                                             scalar("stride", ArgKind::IntList),
                                             scalar("padding", ArgKind::IntList),
                                             scalar("dilation", ArgKind::IntList),
                                             scalar("ceil_mode", ArgKind::Bool),
                                             tied(tensor_out("output", i8x4, chw_int8), 0)}),
               true, false, false, "int8 max_pool2d (input and output share qparams)"});
  s.push_back({"q8ta_mean",
               concat(std::vector<ArgSchema>{tensor_in("input", i8x4, chw_int8, {k4W4C})},
                      per_tensor_qparams("input_"), per_tensor_qparams("output_"),
                      std::vector<ArgSchema>{tied(tensor_out("output", i8x4, chw_int8), 0)}),
               true, false, false, "int8 mean over H and W (keepdim), requantized"});
  s.push_back({"q8ta_pixel_shuffle",
               concat(std::vector<ArgSchema>{tensor_in("input", i8x4, chw_int8, {k4W4C, k4C1W})},
                      per_tensor_qparams("input_"),
                      std::vector<ArgSchema>{scalar("upscale_factor", ArgKind::Int)},
                      per_tensor_qparams("output_"),
                      std::vector<ArgSchema>{tied(tensor_out("output", i8x4, chw_int8), 0)}),
               true, false, false, "int8 pixel shuffle (byte shuffle or requantize)"});

  // ---- float ops (no kernels yet) ----
  s.push_back({"relu", {tensor_in("input", f32, any_float), tied(tensor_out("output", f32, any_float), 0)},
               false, false, false, "float relu"});
  s.push_back({"clamp",
               {tensor_in("input", f32, any_float), scalar("min", ArgKind::Float),
                scalar("max", ArgKind::Float), tied(tensor_out("output", f32, any_float), 0)},
               false, false, false, "float clamp / hardtanh"});
  s.push_back({"pixel_shuffle",
               {tensor_in("input", f32_f16, any_float), scalar("upscale_factor", ArgKind::Int),
                tied(tensor_out("output", f32_f16, any_float), 0)},
               true, false, false, "float pixel shuffle"});
  return s;
}

}  // namespace

PlacementSet::PlacementSet(std::initializer_list<Placement> list) {
  for (const auto& p : list) bits_ |= bit(p);
}

const std::vector<Placement>& all_placements() {
  static const std::vector<Placement> all = {
      {S::Buffer, L::WidthPacked},     {S::Buffer, L::HeightPacked},
      {S::Buffer, L::ChannelsPacked},  {S::Texture3D, L::WidthPacked},
      {S::Texture3D, L::HeightPacked}, {S::Texture3D, L::ChannelsPacked},
      k4W4C,                           k4H4W,
      k4C1W};
  return all;
}

uint16_t PlacementSet::bit(const Placement& p) {
  const auto& all = all_placements();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] == p) return static_cast<uint16_t>(1u << i);
  }
  VKD_THROW(ErrorCode::Internal, "placement ", vkd::schema::describe(p), " is not legal");
}

PlacementSet PlacementSet::from_bits(uint16_t bits) {
  PlacementSet s;
  s.bits_ = bits;
  return s;
}

PlacementSet PlacementSet::all_float() { return from_bits(0x3f); }
PlacementSet PlacementSet::float_buffers() { return from_bits(0x07); }
PlacementSet PlacementSet::all_int8() { return from_bits(0x1c0); }
PlacementSet PlacementSet::channels_packed_int8() { return {k4W4C, k4C1W}; }

std::vector<Placement> PlacementSet::list() const {
  std::vector<Placement> out;
  for (const auto& p : all_placements()) {
    if (contains(p)) out.push_back(p);
  }
  return out;
}

std::string PlacementSet::describe() const {
  std::string out = "{";
  for (const auto& p : list()) out += (out.size() > 1 ? ", " : "") + vkd::schema::describe(p);
  return out + "}";
}

std::string describe(const Placement& p) {
  return std::string(to_string(p.storage)) + " " + std::string(to_string(p.layout));
}

int OpSchema::arg_index(std::string_view arg_name) const {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].name == arg_name) return static_cast<int>(i);
  }
  return -1;
}

const std::vector<OpSchema>& op_schemas() {
  static const std::vector<OpSchema> schemas = build_schemas();
  return schemas;
}

bool is_runnable_op(std::string_view op) {
  const OpSchema* s = find_op_schema(op);
  return s != nullptr && s->runnable();
}

const OpSchema* find_op_schema(std::string_view name) {
  for (const auto& s : op_schemas()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace vkd::schema
