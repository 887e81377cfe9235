// The tensors the CPU reference interpreter (compiler/Interpreter.h) reads and writes, and every
// reference op of this folder computes on.
#pragma once

#include <cstdint>
#include <vector>

#include "core/DType.h"

namespace vkd::compiler {

// A host tensor: little-endian elements in C (row-major) order. DType Float32, Float16 (IEEE
// binary16 bits), Int8 or Int32.
struct HostTensor {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  int64_t numel() const;  // product of shape (1 for rank 0)

  // Throw vkd::Error InvalidArgument when the element count does not match the shape.
  static HostTensor from_floats(std::vector<int64_t> shape, const std::vector<float>& values);
  static HostTensor from_int8(std::vector<int64_t> shape, const std::vector<int8_t>& values);
  static HostTensor from_int32(std::vector<int64_t> shape, const std::vector<int32_t>& values);
  // Throw vkd::Error InvalidArgument when the dtype differs or the byte count is wrong.
  std::vector<float> to_floats() const;
  std::vector<int8_t> to_int8() const;
  std::vector<int32_t> to_int32() const;
};

}  // namespace vkd::compiler
