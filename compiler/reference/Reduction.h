// The shapes of a reduction over some dims of a tensor, shared by the references that reduce
// (mean in Pool.cpp, sum and the vector norm in Reduce.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace vkd::compiler::reference {

struct ReductionShape {
  std::vector<int64_t> kept;     // the output in its keepdim form: reduced dims of size 1
  std::vector<int64_t> out;      // the output's shape: reduced dims dropped unless keepdim
  std::vector<int64_t> strides;  // `kept`'s row-major strides seen from the input: 0 along
                                 // reduced dims (an input element's offset into the output)
  int64_t count = 1;             // input elements per output element
};

// `reduced[d]`: dim d of `shape` is reduced.
ReductionShape reduction_shape(const std::vector<int64_t>& shape, const std::vector<bool>& reduced,
                               bool keepdim);

}  // namespace vkd::compiler::reference
