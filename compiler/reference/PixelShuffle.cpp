// CPU reference of pixel_shuffle (semantics above each function): moves elements byte for byte,
// so it takes any dtype the interpreter holds (float16 included).
#include "compiler/reference/Reference.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

// aten.pixel_shuffle(r): out[n, c, oh, ow] = in[n, c*r*r + (oh % r)*r + (ow % r), oh / r, ow / r].
std::vector<HostTensor> reference_pixel_shuffle(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  const int64_t r = c.int_arg("upscale_factor");
  c.require(r > 0, "upscale_factor must be positive");
  c.require(x.shape.size() >= 3, "input must have rank >= 3");
  const size_t rank = x.shape.size();
  const int64_t C = x.shape[rank - 3], H = x.shape[rank - 2], W = x.shape[rank - 1];
  c.require(C % (r * r) == 0, detail::concat("channels ", C, " are not divisible by ", r * r));
  const int64_t OC = C / (r * r), OH = H * r, OW = W * r;
  const int64_t batch = element_count({x.shape.begin(), x.shape.end() - 3});
  std::vector<int64_t> shape(x.shape.begin(), x.shape.end() - 3);
  shape.insert(shape.end(), {OC, OH, OW});
  HostTensor out = make_tensor(x.dtype, shape);
  const size_t es = elem_bytes(x.dtype);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < OC; ++oc) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t ic = oc * r * r + (oh % r) * r + (ow % r);
          const int64_t src = ((n * C + ic) * H + oh / r) * W + ow / r;
          const int64_t dst = ((n * OC + oc) * OH + oh) * OW + ow;
          std::memcpy(out.bytes.data() + dst * es, x.bytes.data() + src * es, es);
        }
      }
    }
  }
  return {out};
}

}  // namespace vkd::compiler
