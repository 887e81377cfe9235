// CPU reference of the ops that copy a tensor unchanged or reshape it: view_copy, clone,
// alias_copy, _clone_dim_order (semantics above each function). Host tensors are always in logical
// C order, so the bytes are copied as they are.
#include "compiler/reference/Reference.h"

#include <cstdint>
#include <vector>

#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

// aten.clone / aten.alias_copy / aten._clone_dim_order: copies (host tensors are always logical
//   C order, so a dim_order does not change the bytes).
std::vector<HostTensor> reference_copy(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  return {x};
}

// aten.view_copy: the input's bytes with the `size` argument as shape (one -1 is inferred).
std::vector<HostTensor> reference_view_copy(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  std::vector<int64_t> size = c.ints_arg("size");
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == -1) {
      c.require(infer < 0, "size has more than one -1");
      infer = static_cast<int>(i);
    } else {
      c.require(size[i] >= 0, detail::concat("invalid size ", shape_str(size)));
      known *= size[i];
    }
  }
  if (infer >= 0) {
    c.require(known != 0 && x.numel() % known == 0,
              detail::concat("size ", shape_str(size), " is invalid for ", x.numel(), " elements"));
    size[static_cast<size_t>(infer)] = x.numel() / known;
  }
  c.require(element_count(size) == x.numel(),
            detail::concat("size ", shape_str(size), " is invalid for ", x.numel(), " elements"));
  HostTensor out = x;
  out.shape = size;
  return {out};
}

}  // namespace vkd::compiler
