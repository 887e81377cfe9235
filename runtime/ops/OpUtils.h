// Small helpers every op file uses: checks with op-named messages, the 4x4x4 tile count, the
// float-tensor descriptor the tile shaders take, and enum -> variant-table index mapping.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/TensorSpec.h"
#include "runtime/graph/ComputeGraph.h"

namespace vkd::ops {

// Per-tensor affine quantization of int8 activations.
struct QuantParams {
  float scale = 1.0f;
  int32_t zero_point = 0;
  int32_t quant_min = -128;
  int32_t quant_max = 127;
};

// scale finite and > 0; -128 <= quant_min <= zero_point <= quant_max <= 127.
void check_quant_params(const std::string& op, const QuantParams& q);

// 1/scale rounded to float32, as PyTorch's quantized_decomposed ops compute it.
float inverse_scale(float scale);

// Throws InvalidArgument naming the op and the tensor unless `spec` matches.
void check_float_tensor(const std::string& op, const graph::GpuTensor& t);
void check_int8x4_tensor(const std::string& op, const graph::GpuTensor& t);
void check_same_sizes(const std::string& op, const graph::GpuTensor& a, const graph::GpuTensor& b);
// An int8x4 buffer in a channels-packed layout (4W4C or 4C1W): what the conv, pixel-shuffle and
// pool kernels read and write.
bool is_channels_packed_int8(const TensorSpec& s);
// A float32 width-packed buffer (the float operands of the GEMM-like ops).
void check_float_buffer(const std::string& op, const graph::GpuTensor& t);
// A float32 buffer of any float layout (rank 1 to 4, as every device tensor) whose elements a
// kernel indexes with int (the float element-wise and reduction ops); `what` names it.
void check_float_operand(const std::string& op, const graph::GpuTensor& t, const char* what);
// A requantized int8 output: its parameters, and a fused activation range [act_min, act_max]
// inside [-128, 127] and not empty.
void check_requantized_output(const std::string& op, const QuantParams& q, int32_t act_min,
                              int32_t act_max);

// The name of a tensor an op adds for itself (a way down's intermediate): its output's name,
// or `op` for an unnamed output, then `suffix` (".rows", ".means", ...).
std::string own_tensor_name(const graph::ComputeGraph& graph, graph::ValueRef output,
                            const std::string& op, const std::string& suffix);

// Records a way down the op took (ComputeGraph::add_way_down): "op 'output': instead (why)".
void note_way_down(graph::ComputeGraph& graph, const std::string& op, graph::ValueRef output,
                   const std::string& instead, const std::string& why);

// The operands of a one-tensor element-wise int8 kernel (q8ta_clamp, q8ta_mul_scalar,
// q8ta_lut): `input` and `output` int8x4 of the same sizes in one packed layout. Returns their
// word count (Unsupported from 2^31 on: the kernels index words with int).
int64_t check_elementwise_int8x4(const std::string& op, const graph::GpuTensor& input,
                                 const graph::GpuTensor& output);

// The parameters of an op that moves int8 values (pixel shuffle, channel shuffle, permute): both
// valid, the output over the full int8 range (what the requantizing variants clamp to). Returns
// whether the values change (the parameters differ: requantize) or only move.
bool check_moved_quant(const std::string& op, const QuantParams& in_q, const QuantParams& out_q);
// Mirrors `MovedRequant` (shaders/common/int8x4_chunk.glslh), the push-constant member from
// which those kernels requantize.
struct MovedRequantPush {
  int32_t in_zp, out_zp;
  float in_scale, inv_out_scale;
  float t_min, t_max;  // -128 - out_zp, 127 - out_zp
};
MovedRequantPush moved_requant_push(const QuantParams& in_q, const QuantParams& out_q);

// Mirrors `BinaryQuant` (shaders/common/requant.glslh): the quantization of q8ta_add /
// q8ta_mul's arithmetic (runtime/ops/Elementwise.h), a push-constant member of q8ta_binary and
// of the conv / linear kernels whose epilogue adds a residual.
struct BinaryQuantPush {
  int32_t a_zp, b_zp, out_zp;
  float a_scale, b_scale, inv_out_scale;
  float act_lo, act_hi;  // act_min - out_zp, act_max - out_zp
};
BinaryQuantPush binary_quant_push(const QuantParams& a, const QuantParams& b,
                                  const QuantParams& out, int32_t act_min, int32_t act_max);

// N * C4 * H4 * W4 tiles of 4x4x4 elements.
int64_t tile_count(const Dims4& d);

// How a tile kernel walks the tiles (shaders/common/common.glslh, TILE_ORDER_*): the order is
// specialization constant 3, `items` the invocations to launch (the patch order rounds up).
struct TileWalk {
  uint32_t order;
  int64_t items;
};
enum class TileOrder : uint32_t { CWHN = 0, WCHN = 1, WHCN = 2, Patch = 3 };

// How a fused op of several convolutions runs (q8ta_conv2d_dw_pw and its family,
// q8ta_conv2d_ps_pw_q_dq): Fused in one dispatch, Split as its convolutions' own nodes, Auto as
// the op's rule says; the same bytes either way.
enum class FusionForm { Auto, Fused, Split };
std::string to_string(FusionForm form);
// The dim (NCHW numbering) whose consecutive elements, or 4-element groups, are adjacent in
// memory: channels for 4W4C, widths for 4H4W and 4C1W, the packed dim of float buffers.
int fastest_dim(const TensorSpec& s);
// The walk for a kernel whose output is `out` and input `in`: follow the output's memory order
// when both sides agree on their fastest dim, else the patch order. VKD_TILE_ORDER=0..3
// overrides (tuning experiments).
TileWalk choose_tile_walk(const Dims4& d, const TensorSpec& out, const TensorSpec& in);
std::array<int32_t, 4> nchw_sizes(const Dims4& d);
// The `meta` ivec4 of shaders/common/float_tile.glslh: element strides for buffers, the packed
// dim (NCHW numbering) for textures.
std::array<int32_t, 4> float_tile_meta(const TensorSpec& spec);
// FTILE_VECTOR_DIM of float_tile.glslh for a buffer: the vec4 path every tile of `spec` takes
// (its vector_dim's choice, which is the same for all tiles when the vector dim's size is a
// multiple of 4), else -1 (each tile chooses).
int32_t float_tile_vector_dim(const TensorSpec& spec);

// Adds a node of a tile kernel: `bindings` in the kernel's binding order (the output first, then
// the input and any per-op buffers), specialization constant 3 = the walk order and the kernel's
// own constants from 4 (`op_constants`), one invocation per walk item.
void add_tile_node(graph::ComputeGraph& graph, const std::string& op, shaders::Kernel kernel,
                   std::vector<graph::ValueRef> bindings, std::vector<uint8_t> push,
                   const TileWalk& walk, const std::vector<uint32_t>& op_constants = {});

// Index of an int8x4 layout / a storage type in the generated variant tables (manifest order).
int int8_layout_index(MemoryLayout layout);
int storage_index(StorageType storage);

}  // namespace vkd::ops
