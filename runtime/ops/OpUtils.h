// Small helpers every op file uses: checks with op-named messages, the 4x4x4 tile count, the
// float-tensor descriptor the tile shaders take, and enum -> variant-table index mapping.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/tensor/TensorSpec.h"

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

// N * C4 * H4 * W4: one invocation per 4x4x4 tile.
int64_t tile_count(const Dims4& d);
std::array<int32_t, 4> nchw_sizes(const Dims4& d);
// The `meta` ivec4 of shaders/common/float_tile.glslh: element strides for buffers, the packed
// dim (NCHW numbering) for textures.
std::array<int32_t, 4> float_tile_meta(const TensorSpec& spec);

// Index of an int8x4 layout / a storage type in the generated variant tables (manifest order).
int int8_layout_index(MemoryLayout layout);
int storage_index(StorageType storage);

}  // namespace vkd::ops
