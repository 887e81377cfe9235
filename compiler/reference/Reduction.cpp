#include "compiler/reference/Reduction.h"

#include <cstddef>

namespace vkd::compiler::reference {

ReductionShape reduction_shape(const std::vector<int64_t>& shape, const std::vector<bool>& reduced,
                               bool keepdim) {
  const size_t rank = shape.size();
  ReductionShape r;
  r.kept.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    r.kept[d] = reduced[d] ? 1 : shape[d];
    if (reduced[d]) r.count *= shape[d];
    if (!reduced[d] || keepdim) r.out.push_back(r.kept[d]);
  }
  r.strides.assign(rank, 0);
  int64_t s = 1;
  for (size_t d = rank; d-- > 0;) {
    r.strides[d] = reduced[d] ? 0 : s;
    s *= r.kept[d];
  }
  return r;
}

}  // namespace vkd::compiler::reference
