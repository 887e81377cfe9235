// The extents PyTorch computes for convolutions, poolings and broadcasting: what the shape rules
// of compiler/ops/ share, and shape inference (compiler/ShapeInference.h) exposes for passes and
// tests.
#pragma once

#include <cstdint>
#include <vector>

namespace vkd::compiler {

// Convolution output extent: floor((in + 2*pad - dil*(k-1) - 1) / stride) + 1 (may be < 1).
int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation);
// Pooling output extent as PyTorch computes it: like conv_output_size, rounded up with
// ceil_mode, where the last window must then start inside the input or its left padding.
int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                         bool ceil_mode);
// PyTorch broadcasting of two shapes; false when they do not broadcast.
bool broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                      std::vector<int64_t>* out);

}  // namespace vkd::compiler
