// CPU reference of softmax and log_softmax (aten._softmax, aten._log_softmax, aten.softmax.int,
// aten.log_softmax.int), over any dim of a float32 tensor. Per row along `dim`, in double from
// the float32 inputs, each result rounded once to float32 (PyTorch computes in float32: x - max,
// exp, a float32 sum; the torch oracle checks the two within 1e-5):
//   m = max x (NaN if any x is NaN);  sum = sum over the row of exp(x - m)
//   softmax:     y = exp(x - m) / sum
//   log_softmax: y = (x - m) - log(sum)
// The max makes it numerically stable: exp never overflows and sum >= 1.
#include "compiler/reference/Reference.h"

#include <cmath>
#include <string>
#include <vector>

#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// The row of `size` elements `stride` apart starting at element `first` (C order): softmax or
// log_softmax.
void softmax_row(const HostTensor& x, HostTensor& y, int64_t first, int64_t size, int64_t stride,
                 bool log) {
  double m = -INFINITY;
  for (int64_t k = 0; k < size; ++k) {
    const double v = get_f32(x, first + k * stride);
    if (std::isnan(v)) {
      m = v;
      break;
    }
    if (v > m) m = v;
  }
  double sum = 0.0;
  for (int64_t k = 0; k < size; ++k) sum += std::exp(get_f32(x, first + k * stride) - m);
  for (int64_t k = 0; k < size; ++k) {
    const double d = get_f32(x, first + k * stride) - m;
    set_f32(y, first + k * stride, static_cast<float>(log ? d - std::log(sum) : std::exp(d) / sum));
  }
}

}  // namespace

std::vector<HostTensor> reference_softmax(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  c.expect_dtype(x, DType::Float32, "self");
  const int64_t dim = norm_dim(c, c.int_arg("dim"), x.shape.size());
  const bool log = c.node().op.find("log_softmax") != std::string::npos;
  int64_t inner = 1, outer = 1;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (static_cast<int64_t>(d) < dim) outer *= x.shape[d];
    if (static_cast<int64_t>(d) > dim) inner *= x.shape[d];
  }
  const int64_t size = x.shape[static_cast<size_t>(dim)];
  HostTensor y = make_tensor(DType::Float32, x.shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) softmax_row(x, y, o * size * inner + i, size, inner, log);
  }
  return {y};
}

}  // namespace vkd::compiler
