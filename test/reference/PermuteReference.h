// CPU references for the int8 data-movement ops, written for the tests (they share no code with
// the shaders, the runtime or the compiler): NCHW values, every index spelled out.
//   channel shuffle (groups g): out[n, c, h, w] = in[n, (c % g) * (C / g) + c / g, h, w]
//   permute (dims):             out[i0, i1, i2, i3] = in[j] with j[dims[k]] = ik
// Requantization (when the parameters differ) is reference_requantize (QuantReference.h).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "test/reference/LayoutReference.h"
#include "test/reference/QuantReference.h"

namespace vkd::testing {

inline std::vector<int8_t> reference_channel_shuffle(const std::vector<int8_t>& x,
                                                     const RefShape& s, int64_t groups) {
  std::vector<int8_t> out(x.size());
  const int64_t per_group = s.c / groups, plane = s.h * s.w;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c) {
      const int64_t from = (c % groups) * per_group + c / groups;
      for (int64_t i = 0; i < plane; ++i) {
        out[static_cast<size_t>((n * s.c + c) * plane + i)] =
            x[static_cast<size_t>((n * s.c + from) * plane + i)];
      }
    }
  return out;
}

// The sizes of `s` permuted by `dims`.
inline RefShape reference_permuted_shape(const RefShape& s, const std::array<int, 4>& dims) {
  const int64_t in[4] = {s.n, s.c, s.h, s.w};
  return {in[dims[0]], in[dims[1]], in[dims[2]], in[dims[3]]};
}

inline std::vector<int8_t> reference_permute(const std::vector<int8_t>& x, const RefShape& s,
                                             const std::array<int, 4>& dims) {
  const int64_t in_size[4] = {s.n, s.c, s.h, s.w};
  const RefShape o = reference_permuted_shape(s, dims);
  std::vector<int8_t> out(x.size());
  int64_t i[4];
  for (i[0] = 0; i[0] < o.n; ++i[0])
    for (i[1] = 0; i[1] < o.c; ++i[1])
      for (i[2] = 0; i[2] < o.h; ++i[2])
        for (i[3] = 0; i[3] < o.w; ++i[3]) {
          int64_t j[4];
          for (int k = 0; k < 4; ++k) j[dims[k]] = i[k];
          const int64_t src = ((j[0] * in_size[1] + j[1]) * in_size[2] + j[2]) * in_size[3] + j[3];
          const int64_t dst = ((i[0] * o.c + i[1]) * o.h + i[2]) * o.w + i[3];
          out[static_cast<size_t>(dst)] = x[static_cast<size_t>(src)];
        }
  return out;
}

}  // namespace vkd::testing
