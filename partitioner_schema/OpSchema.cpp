#include "partitioner_schema/OpSchema.h"

#include <iterator>
#include <utility>

#include "core/Error.h"

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
// One or more tensors of one argument (a value_list in the blob).
ArgSchema tensor_list_in(std::string name, std::vector<DType> dtypes, PlacementSet set) {
  ArgSchema a = tensor_in(std::move(name), std::move(dtypes), set);
  a.kind = ArgKind::TensorList;
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
// scale and bias per output channel, named `prefix`weight, `prefix`weight_scales, `prefix`bias
// (an op with two convolutions names the first one's "dw_").
std::vector<ArgSchema> per_channel_weights(int weight_rank, const std::string& prefix = "") {
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
// A fused relu / clamp on an int8 output.
std::vector<ArgSchema> activation_range() {
  return {scalar("activation_min", ArgKind::Int), scalar("activation_max", ArgKind::Int)};
}

void append(std::vector<ArgSchema>& out, ArgSchema arg) { out.push_back(std::move(arg)); }
void append(std::vector<ArgSchema>& out, std::vector<ArgSchema> args) {
  out.insert(out.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
}
// An op's arguments in blob order, from single arguments and groups of them.
template <typename... Parts>
std::vector<ArgSchema> arg_list(Parts&&... parts) {
  std::vector<ArgSchema> out;
  (append(out, std::forward<Parts>(parts)), ...);
  return out;
}

// --- op builders: what the runtime does with the op, named at each entry ------------------
OpSchema kernel_op(std::string name, std::string summary, std::vector<ArgSchema> args) {
  OpSchema op{std::move(name), std::move(args)};
  op.has_kernel = true;
  op.summary = std::move(summary);
  return op;
}
// Output == input: always removed by the compiler, so it needs no kernel.
OpSchema identity_op(std::string name, std::string summary, std::vector<ArgSchema> args) {
  OpSchema op{std::move(name), std::move(args)};
  op.identity = true;
  op.summary = std::move(summary);
  return op;
}
// No kernel yet: the compiler parses and checks it and reports it as not yet runnable.
OpSchema schema_only_op(std::string name, std::string summary, std::vector<ArgSchema> args) {
  OpSchema op{std::move(name), std::move(args)};
  op.summary = std::move(summary);
  return op;
}

// --- the entries, one function per family ---------------------------------------------------

// quantized_decomposed.quantize_per_tensor / dequantize_per_tensor.
void quantize_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const PlacementSet any_float = PlacementSet::all_float(), int8 = PlacementSet::all_int8();
  s.push_back(
      kernel_op("q8ta_quantize", "float32 -> int8x4, per-tensor affine",
                arg_list(tensor_in("input", f32, any_float, {kBufW}), per_tensor_qparams(""),
                         quant_range(), tensor_out("output", i8x4, int8, {k4W4C}))));
  s.push_back(kernel_op("q8ta_dequantize", "int8x4 -> float32, per-tensor affine",
                        arg_list(tensor_in("input", i8x4, int8, {k4W4C}), per_tensor_qparams(""),
                                 quant_range(), tensor_out("output", f32, any_float, {kBufW}))));
}

// torchao affine ops (runtime/ops/AffineQuant.h): per-block scale (float32) / zero point
// (int32) buffers, one entry per block; block_size in the input's rank. The int8 side prefers
// 4H4W, the linear input layout (per-token / per-group-along-K activations feed linears).
void affine_quant_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i32 = {DType::Int32}, i8x4 = {DType::Int8x4};
  const PlacementSet any_float = PlacementSet::all_float(), int8 = PlacementSet::all_int8();
  const PlacementSet f32_buffer{kBufW};
  const std::vector<ArgSchema> block_params =
      arg_list(tensor_in("scale", f32, f32_buffer), tensor_in("zero_point", i32, f32_buffer),
               scalar("block_size", ArgKind::IntList), quant_range());
  s.push_back(kernel_op("q8ta_quantize_affine",
                        "float32 -> int8x4, torchao quantize_affine (block-wise)",
                        arg_list(tensor_in("input", f32, any_float, {kBufW}), block_params,
                                 tensor_out("output", i8x4, int8, {k4H4W}))));
  s.push_back(kernel_op("q8ta_dequantize_affine",
                        "int8x4 -> float32, torchao dequantize_affine (block-wise)",
                        arg_list(tensor_in("input", i8x4, int8, {k4H4W}), block_params,
                                 tensor_out("output", f32, any_float, {kBufW}))));
  s.push_back(kernel_op(
      "choose_qparams_affine", "per-block scale / zero point, torchao choose_qparams_affine",
      arg_list(tensor_in("input", f32, any_float, {kBufW}),
               // 0 SYMMETRIC, 1 SYMMETRIC_NO_CLIPPING_ERR, 2 ASYMMETRIC
               scalar("mapping_type", ArgKind::Int), scalar("block_size", ArgKind::IntList),
               quant_range(), scalar("eps", ArgKind::Float), tensor_out("scale", f32, f32_buffer),
               tensor_out("zero_point", i32, f32_buffer))));
}

// Storage / layout conversions, inserted by the compiler's layout propagation.
void conversion_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const PlacementSet any_float = PlacementSet::all_float(), int8 = PlacementSet::all_int8();
  s.push_back(kernel_op("q8ta_convert", "int8x4 layout conversion (inserted by the compiler)",
                        arg_list(tensor_in("input", i8x4, int8), scalar("zero_point", ArgKind::Int),
                                 tensor_out("output", i8x4, int8))));
  // A reshape of int8 data (view_copy / flatten / squeeze / unsqueeze) that is not free: the
  // elements in NCHW order under other sizes, in any layout on either side.
  s.push_back(kernel_op("q8ta_view", "int8x4 reshape: same elements in NCHW order, other sizes",
                        arg_list(tensor_in("input", i8x4, int8), scalar("zero_point", ArgKind::Int),
                                 tensor_out("output", i8x4, int8))));
  s.push_back(kernel_op(
      "float_convert", "float32 storage/layout conversion (inserted by the compiler)",
      arg_list(tensor_in("input", f32, any_float), tensor_out("output", f32, any_float))));
}

// clone / alias / view keeping the packed dim: copied as is, always folded.
void identity_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> moved = {DType::Float32, DType::Float16, DType::Int8x4};
  const PlacementSet anywhere = PlacementSet::all_float() | PlacementSet::all_int8();
  s.push_back(identity_op("identity", "clone/alias/view_copy: output shares the input's layout",
                          arg_list(tensor_in("input", moved, anywhere),
                                   tied(tensor_out("output", moved, anywhere), 0))));
}

// The epilogue arguments of q8ta_conv2d_add / q8ta_linear_add after the op's own `before` ones:
// the op's int8 output (`prefix` scale, zero point, activation range), the tensor added to it
// (`other`, one of `set`, preferably `preferred`) with its qparams, then the sum's qparams,
// activation range and output, in `other`'s placement (runtime/ops/Linear.h, ResidualAdd).
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

// int8 linear: the requantizing op (fused activation) and the dequantizing one (_dq).
void linear_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const std::vector<ArgSchema> head = arg_list(
      tensor_in("input", i8x4, {k4H4W}), per_tensor_qparams("input_"), per_channel_weights(2));
  s.push_back(kernel_op("q8ta_linear", "int8 linear, requantized output (GEMM / GEMV kernels)",
                        arg_list(head, per_tensor_qparams("output_"), activation_range(),
                                 tensor_out("output", i8x4, {k4H4W}, {k4H4W}))));
  s.push_back(kernel_op("q8ta_linear_dq", "int8 linear, float32 output (GEMM / GEMV kernels)",
                        arg_list(head, tensor_out("output", f32, {kBufW}, {kBufW}))));
  // q8ta_linear then q8ta_add with `other`, in the linear's store (runtime/ops/Linear.h).
  s.push_back(kernel_op("q8ta_linear_add", "int8 linear + a residual int8 tensor, requantized",
                        arg_list(head, residual_add_args("linear_", {k4H4W}, k4H4W, head.size()))));
}

// int8 conv2d, as linear: requantizing (fused activation) or dequantizing (_dq).
void conv2d_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const PlacementSet chw_int8 = PlacementSet::channels_packed_int8();
  // The weights and the geometry, after the input and its qparams.
  const std::vector<ArgSchema> conv =
      arg_list(per_channel_weights(4), scalar("stride", ArgKind::IntList),
               scalar("padding", ArgKind::IntList), scalar("dilation", ArgKind::IntList),
               scalar("groups", ArgKind::Int));
  const std::vector<ArgSchema> head =
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"), conv);
  s.push_back(kernel_op("q8ta_conv2d", "int8 conv2d, requantized output, fused relu/clamp",
                        arg_list(head, per_tensor_qparams("output_"), activation_range(),
                                 tensor_out("output", i8x4, chw_int8, {k4W4C}))));
  s.push_back(kernel_op("q8ta_conv2d_dq", "int8 conv2d, float32 output",
                        arg_list(head, tensor_out("output", f32, {kBufW}, {kBufW}))));
  // q8ta_conv2d then q8ta_dequantize with its output's qparams, in the convolution's store
  // (runtime/ops/Conv2d.h).
  s.push_back(kernel_op("q8ta_conv2d_q_dq", "int8 conv2d, requantized then dequantized float32",
                        arg_list(head, per_tensor_qparams("output_"), activation_range(),
                                 tensor_out("output", f32, {kBufW}, {kBufW}))));
  // q8ta_quantize (the input's qparams and range) then q8ta_conv2d, the float32 NCHW input
  // quantized on load by the direct kernel (runtime/ops/Conv2d.h).
  s.push_back(kernel_op(
      "q8ta_conv2d_fq", "int8 conv2d of a float32 input quantized on load, fused relu/clamp",
      arg_list(tensor_in("input", f32, {kBufW}, {kBufW}), per_tensor_qparams("input_"),
               scalar("input_quant_min", ArgKind::Int), scalar("input_quant_max", ArgKind::Int),
               conv, per_tensor_qparams("output_"), activation_range(),
               tensor_out("output", i8x4, chw_int8, {k4W4C}))));
  // q8ta_conv2d then the byte-moving pixel shuffle, in the convolution's store: output
  // [N, C_out / r^2, H_out r, W_out r] (runtime/ops/Conv2d.h).
  s.push_back(kernel_op(
      "q8ta_conv2d_ps", "int8 conv2d writing its output pixel-shuffled, fused relu/clamp",
      arg_list(head, scalar("upscale_factor", ArgKind::Int), per_tensor_qparams("output_"),
               activation_range(), tensor_out("output", i8x4, chw_int8, {k4W4C}))));
  // q8ta_conv2d [-> the pixel shuffle (upscale_factor > 1)] then q8ta_add with `other`, in the
  // convolution's store (runtime/ops/Conv2d.h).
  s.push_back(kernel_op("q8ta_conv2d_add",
                        "int8 conv2d [pixel-shuffled] + a residual int8 tensor, requantized",
                        arg_list(head, scalar("upscale_factor", ArgKind::Int),
                                 residual_add_args("conv_", chw_int8, k4W4C, head.size() + 1))));
  // A depthwise q8ta_conv2d (groups = C, dw_weight [C, 1, KH, KW], its int8 output "mid") then
  // a 1x1 q8ta_conv2d (stride 1, padding 0, groups 1, weight [N, C, 1, 1]) reading mid, in one
  // dispatch that keeps the mid tile in shared memory (C <= 1024); 4W4C only
  // (runtime/ops/Conv2d.h). _add: then q8ta_add with `other`, as q8ta_conv2d_add.
  const std::vector<ArgSchema> dw_pw =
      arg_list(tensor_in("input", i8x4, {k4W4C}, {k4W4C}), per_tensor_qparams("input_"),
               per_channel_weights(4, "dw_"), scalar("stride", ArgKind::IntList),
               scalar("padding", ArgKind::IntList), scalar("dilation", ArgKind::IntList),
               per_tensor_qparams("mid_"), scalar("mid_activation_min", ArgKind::Int),
               scalar("mid_activation_max", ArgKind::Int), per_channel_weights(4));
  s.push_back(kernel_op("q8ta_conv2d_dw_pw",
                        "int8 depthwise conv2d then a 1x1 conv2d on its int8 output",
                        arg_list(dw_pw, per_tensor_qparams("output_"), activation_range(),
                                 tensor_out("output", i8x4, {k4W4C}, {k4W4C}))));
  s.push_back(
      kernel_op("q8ta_conv2d_dw_pw_add",
                "int8 depthwise conv2d then a 1x1 conv2d + a residual int8 tensor, requantized",
                arg_list(dw_pw, residual_add_args("conv_", {k4W4C}, k4W4C, dw_pw.size()))));
  // A 1x1 q8ta_conv2d expansion (weight [C, C_in, 1, 1]) whose int8 output only the depthwise
  // reads, then q8ta_conv2d_dw_pw[_add] (an inverted-residual block; runtime/ops/
  // DepthwisePointwise.h): the expansion's arguments between the input's and the depthwise's.
  const std::vector<ArgSchema> pw_dw_pw = arg_list(
      tensor_in("input", i8x4, {k4W4C}, {k4W4C}), per_tensor_qparams("input_"),
      per_channel_weights(4, "expand_"), per_tensor_qparams("expand_"),
      scalar("expand_activation_min", ArgKind::Int), scalar("expand_activation_max", ArgKind::Int),
      std::vector<ArgSchema>(dw_pw.begin() + 3, dw_pw.end()));
  s.push_back(kernel_op("q8ta_conv2d_pw_dw_pw",
                        "int8 1x1 expansion, depthwise conv2d and 1x1 conv2d in one kernel",
                        arg_list(pw_dw_pw, per_tensor_qparams("output_"), activation_range(),
                                 tensor_out("output", i8x4, {k4W4C}, {k4W4C}))));
  s.push_back(kernel_op(
      "q8ta_conv2d_pw_dw_pw_add",
      "int8 1x1 expansion, depthwise and 1x1 conv2d + a residual int8 tensor, requantized",
      arg_list(pw_dw_pw, residual_add_args("conv_", {k4W4C}, k4W4C, pw_dw_pw.size()))));
  // A 1x1 q8ta_conv2d_ps (stride 1, padding 0, groups 1, ps_weight [C r^2, C_in, 1, 1]) whose
  // int8 pixel-shuffled output "mid" [N, C, H r, W r] only a 1x1 q8ta_conv2d_q_dq (weight
  // [N_out, C, 1, 1]) reads, in one dispatch that never writes mid (a segmentation head after
  // its last upsampling stage; runtime/ops/ShuffledHead.h).
  s.push_back(kernel_op(
      "q8ta_conv2d_ps_pw_q_dq",
      "int8 1x1 conv2d pixel-shuffled, then a 1x1 conv2d requantized and dequantized to float32",
      arg_list(tensor_in("input", i8x4, {k4W4C}, {k4W4C}), per_tensor_qparams("input_"),
               per_channel_weights(4, "ps_"), scalar("upscale_factor", ArgKind::Int),
               per_tensor_qparams("mid_"), scalar("mid_activation_min", ArgKind::Int),
               scalar("mid_activation_max", ArgKind::Int), per_channel_weights(4),
               per_tensor_qparams("output_"), activation_range(),
               tensor_out("output", f32, {kBufW}, {kBufW}))));
  // Weights in q8ta_conv2d's order [C_out, C_in / groups, KH, KW] (the compiler swaps PyTorch's
  // [C_in, C_out / groups, KH, KW]), so scales and bias are one per output channel as there.
  s.push_back(kernel_op(
      "q8ta_conv_transpose2d", "int8 transposed conv2d, requantized output, fused relu/clamp",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"),
               per_channel_weights(4), scalar("stride", ArgKind::IntList),
               scalar("padding", ArgKind::IntList), scalar("output_padding", ArgKind::IntList),
               scalar("dilation", ArgKind::IntList), scalar("groups", ArgKind::Int),
               per_tensor_qparams("output_"), activation_range(),
               tensor_out("output", i8x4, chw_int8, {k4W4C}))));
}

// q8ta_add and q8ta_mul: the same arguments (one kernel family, q8ta_binary).
void add_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8();
  auto binary = [&](const char* name, const char* summary) {
    return kernel_op(name, summary,
                     arg_list(tensor_in("a", i8x4, int8, {k4W4C}), per_tensor_qparams("a_"),
                              tied(tensor_in("b", i8x4, int8), 0), per_tensor_qparams("b_"),
                              per_tensor_qparams("output_"), activation_range(),
                              tied(tensor_out("output", i8x4, int8), 0)));
  };
  s.push_back(binary(
      "q8ta_add",
      "int8 add with own scales, fused relu; b (or a) may be [N or 1, C, 1, 1] or [1, 1, 1, 1]"));
  s.push_back(binary(
      "q8ta_mul",
      "int8 mul with own scales, fused relu; b (or a) may be [N or 1, C, 1, 1] or [1, 1, 1, 1]"));
}

// A standalone relu / hardtanh / clamp between int8 ops that could not join the producer's
// epilogue, a multiplication by a scalar, a batch norm: requantizing, any layout (the output
// shares the input's).
void clamp_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8();
  s.push_back(kernel_op("q8ta_clamp", "int8 requantizing relu / clamp (a standalone activation)",
                        arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"),
                                 per_tensor_qparams("output_"), activation_range(),
                                 tied(tensor_out("output", i8x4, int8), 0))));
  // A multiplication by a constant scalar, requantizing (the q8ta_clamp kernel).
  s.push_back(kernel_op("q8ta_mul_scalar", "int8 requantizing multiplication by a scalar",
                        arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"),
                                 scalar("scalar", ArgKind::Float), per_tensor_qparams("output_"),
                                 activation_range(), tied(tensor_out("output", i8x4, int8), 0))));
  // A per-channel affine map, requantizing: an inference batch norm whose parameters the
  // compiler folded into one float32 scale and shift per channel (dim 1 of the 4-D input), y =
  // fma(x, scale_c, shift_c) rounded once as PyTorch's CPU kernel computes it (the q8ta_clamp
  // kernel's PER_CHANNEL variant).
  ArgSchema scale = constant_in("scale", DType::Float32);
  scale.constant_rank = 1;
  ArgSchema shift = constant_in("shift", DType::Float32);
  shift.constant_rank = 1;
  s.push_back(kernel_op(
      "q8ta_batch_norm",
      "int8 requantizing per-channel x * scale + shift (a standalone batch norm), fused relu",
      arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"), scale, shift,
               per_tensor_qparams("output_"), activation_range(),
               tied(tensor_out("output", i8x4, int8), 0))));
}

// An element-wise function of one int8 tensor between fixed quantizations (the smooth
// activations: hardswish, sigmoid, gelu, ...): the compiler computes its 256 outputs into an
// int8 table [256] (entry v + 128 for input v), the kernel looks them up; any layout (the output
// shares the input's).
void lut_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8();
  ArgSchema table = constant_in("table", DType::Int8);
  table.constant_rank = 1;
  s.push_back(kernel_op(
      "q8ta_lut", "int8 -> int8 by a 256-entry table (a smooth activation)",
      arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"), table,
               per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, int8), 0))));
}

// softmax / log_softmax (`log`) over the last dim of a dequantized int8 tensor (any layout):
// float32 out (_dq, any float buffer), or requantized into the input's layout.
void softmax_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8();
  const std::vector<ArgSchema> head = arg_list(
      tensor_in("input", i8x4, int8), per_tensor_qparams("input_"), scalar("log", ArgKind::Bool));
  s.push_back(kernel_op(
      "q8ta_softmax", "int8 softmax / log_softmax over the last dim, requantized",
      arg_list(head, per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, int8), 0))));
  s.push_back(
      kernel_op("q8ta_softmax_dq", "int8 softmax / log_softmax over the last dim, float32 output",
                arg_list(head, tensor_out("output", f32, PlacementSet::float_buffers(), {kBufW}))));
}

void pool_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet chw_int8 = PlacementSet::channels_packed_int8();
  // The max of the int8 values; requantized once (full int8 range) when the qparams differ.
  s.push_back(kernel_op(
      "q8ta_max_pool2d", "int8 max_pool2d (the max, requantized when the qparams differ)",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"),
               scalar("kernel_size", ArgKind::IntList), scalar("stride", ArgKind::IntList),
               scalar("padding", ArgKind::IntList), scalar("dilation", ArgKind::IntList),
               scalar("ceil_mode", ArgKind::Bool), per_tensor_qparams("output_"),
               tied(tensor_out("output", i8x4, chw_int8), 0))));
  s.push_back(kernel_op(
      "q8ta_avg_pool2d", "int8 avg_pool2d (int32 sums), requantized",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"),
               scalar("kernel_size", ArgKind::IntList), scalar("stride", ArgKind::IntList),
               scalar("padding", ArgKind::IntList), scalar("ceil_mode", ArgKind::Bool),
               scalar("count_include_pad", ArgKind::Bool),
               scalar("divisor_override", ArgKind::Int),  // 0: none
               per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, chw_int8), 0))));
  // Output sizes are the output tensor's.
  s.push_back(kernel_op(
      "q8ta_adaptive_avg_pool2d", "int8 adaptive_avg_pool2d to any size (int32 sums), requantized",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"),
               per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, chw_int8), 0))));
  s.push_back(kernel_op(
      "q8ta_mean", "int8 mean over H and W (keepdim), requantized",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"),
               per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, chw_int8), 0))));
  // keepdim = False (or a flatten folded into the mean): [N, C] rows in the q8ta_linear input
  // layout, so a classifier head's pooled features go into the linear as they are.
  s.push_back(kernel_op(
      "q8ta_mean_flat", "int8 mean over H and W into [N, C] rows, requantized",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"),
               per_tensor_qparams("output_"), tensor_out("output", i8x4, {k4H4W}, {k4H4W}))));
}

void int8_pixel_shuffle_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet chw_int8 = PlacementSet::channels_packed_int8();
  s.push_back(kernel_op(
      "q8ta_pixel_shuffle", "int8 pixel shuffle (byte shuffle or requantize)",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C, k4C1W}), per_tensor_qparams("input_"),
               scalar("upscale_factor", ArgKind::Int), per_tensor_qparams("output_"),
               tied(tensor_out("output", i8x4, chw_int8), 0))));
}

// Data movement of int8 data: a channel shuffle (any layout, the output shares the input's)
// and a permute of the 4 dims (any layout on either side). Both move bytes when input and
// output share scale and zero point, else requantize each element (full int8 range).
void permute_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8();
  s.push_back(kernel_op("q8ta_channel_shuffle",
                        "int8 channel shuffle: out channel c = in channel (c % g) * C/g + c / g",
                        arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"),
                                 scalar("groups", ArgKind::Int), per_tensor_qparams("output_"),
                                 tied(tensor_out("output", i8x4, int8), 0))));
  s.push_back(kernel_op("q8ta_permute", "int8 permute of the 4 dims (output dim k = input dims[k])",
                        arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"),
                                 scalar("dims", ArgKind::IntList), per_tensor_qparams("output_"),
                                 tensor_out("output", i8x4, int8))));
}

// upsample_nearest2d / upsample_bilinear2d on int8, any layout (the output shares the input's);
// scales_h / scales_w are ATen's scale factors (0 = none: the step is in / out).
void upsample_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8();
  const std::vector<ArgSchema> scales = {scalar("scales_h", ArgKind::Float),
                                         scalar("scales_w", ArgKind::Float)};
  s.push_back(kernel_op(
      "q8ta_upsample_nearest2d", "int8 nearest upsampling (bytes moved, or requantized)",
      arg_list(tensor_in("input", i8x4, int8, {k4W4C}), per_tensor_qparams("input_"), scales,
               per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, int8), 0))));
  s.push_back(kernel_op(
      "q8ta_upsample_bilinear2d",
      "int8 bilinear upsampling (exact fixed-point weights, one requantization)",
      arg_list(tensor_in("input", i8x4, int8, {k4W4C}), per_tensor_qparams("input_"),
               scalar("align_corners", ArgKind::Bool), scales, per_tensor_qparams("output_"),
               tied(tensor_out("output", i8x4, int8), 0))));
}

void float_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32};
  // float16 buffers need 16-bit storage on the device (textures need nothing extra).
  const std::vector<DType> f32_f16 = {DType::Float32, DType::Float16};
  const PlacementSet any_float = PlacementSet::all_float();
  s.push_back(schema_only_op(
      "relu", "float relu",
      arg_list(tensor_in("input", f32, any_float), tied(tensor_out("output", f32, any_float), 0))));
  s.push_back(schema_only_op(
      "clamp", "float clamp / hardtanh",
      arg_list(tensor_in("input", f32, any_float), scalar("min", ArgKind::Float),
               scalar("max", ArgKind::Float), tied(tensor_out("output", f32, any_float), 0))));
  s.push_back(kernel_op(
      "pixel_shuffle", "float pixel shuffle",
      arg_list(tensor_in("input", f32_f16, any_float), scalar("upscale_factor", ArgKind::Int),
               tied(tensor_out("output", f32_f16, any_float), 0))));
}

// aten.cat and what split / chunk / slice_copy become: int8 data moved along one dim, each
// input requantized where its quantization differs from the output's (one kernel, q8ta_cat);
// any layout, shared by inputs and output.
void concat_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8();
  s.push_back(kernel_op(
      "q8ta_cat", "int8 concatenation along one dim, requantizing",
      arg_list(tensor_list_in("inputs", i8x4, int8), scalar("input_scales", ArgKind::FloatList),
               scalar("input_zero_points", ArgKind::IntList), scalar("dim", ArgKind::Int),
               per_tensor_qparams("output_"), quant_range(),
               tied(tensor_out("output", i8x4, int8), 0))));
  s.push_back(kernel_op("q8ta_slice", "int8 slice (start, step) along one dim, requantizing",
                        arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"),
                                 scalar("dim", ArgKind::Int), scalar("start", ArgKind::Int),
                                 scalar("step", ArgKind::Int), per_tensor_qparams("output_"),
                                 quant_range(), tied(tensor_out("output", i8x4, int8), 0))));
}

// The order of op_schemas(): kernel signatures and compiler reports list ops in it.
std::vector<OpSchema> build_schemas() {
  std::vector<OpSchema> s;
  quantize_schemas(s);
  affine_quant_schemas(s);
  conversion_schemas(s);
  identity_schemas(s);
  linear_schemas(s);
  conv2d_schemas(s);
  add_schemas(s);
  clamp_schemas(s);
  lut_schemas(s);
  softmax_schemas(s);
  pool_schemas(s);
  concat_schemas(s);
  int8_pixel_shuffle_schemas(s);
  upsample_schemas(s);
  permute_schemas(s);
  float_schemas(s);
  return s;
}

}  // namespace

PlacementSet::PlacementSet(std::initializer_list<Placement> list) {
  for (const auto& p : list) bits_ |= bit(p);
}

const std::vector<Placement>& all_placements() {
  static const std::vector<Placement> all = {{S::Buffer, L::WidthPacked},
                                             {S::Buffer, L::HeightPacked},
                                             {S::Buffer, L::ChannelsPacked},
                                             {S::Texture3D, L::WidthPacked},
                                             {S::Texture3D, L::HeightPacked},
                                             {S::Texture3D, L::ChannelsPacked},
                                             k4W4C,
                                             k4H4W,
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
