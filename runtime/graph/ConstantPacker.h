// How a constant's bytes reach prepare(): a packer the op builder (or the blob loader) hands
// the graph with the constant, run once during the upload (ConstantUpload.h), then dropped, so
// packed copies of the weights never live longer than their batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/TensorSpec.h"

namespace vkd::graph {

// Produces a constant's bytes in the tensor's device element order (exactly
// GpuTensor::bytes()); called once during prepare(), then dropped.
using ConstantPacker = std::function<std::vector<uint8_t>()>;
// The default packer: host NCHW bytes (serialization's constant format: float32/int32 4 bytes,
// float16 2, int8/int8x4 1 per element) into the layout of `spec`. `nchw` must stay valid until
// prepare() returns. int8x4 padding lanes get `pad_value`.
ConstantPacker nchw_constant_packer(const TensorSpec& spec, const uint8_t* nchw, size_t bytes,
                                    int8_t pad_value);

}  // namespace vkd::graph
