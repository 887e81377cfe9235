#include "compiler/ops/ShapeFormulas.h"

#include <algorithm>
#include <utility>

namespace vkd::compiler {

namespace {

// Floor division (rounds toward negative infinity), as PyTorch's div_rtn.
int64_t div_floor(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                         int64_t dilation) {
  return div_floor(in + 2 * pad - dilation * (kernel - 1) - 1, stride) + 1;
}

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                         bool ceil_mode) {
  int64_t out =
      div_floor(in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) +
      1;
  // With ceil_mode the last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

bool broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                      std::vector<int64_t>* out) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      result[i] = da;
    } else if (da == 1) {
      result[i] = db;
    } else {
      return false;
    }
  }
  *out = std::move(result);
  return true;
}

}  // namespace vkd::compiler
