// CPU reference of the ops that join and cut tensors along one dim: aten.cat and the splits
// (semantics above each function). Bytes are moved as they are (any dtype the interpreter holds,
// float16 included), so the results are exact.
#include "compiler/reference/Reference.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "compiler/reference/ReferenceContext.h"
#include "compiler/reference/Slicing.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// Elements before dim `dim` (outer) and bytes of one index along it (inner block).
struct Blocks {
  int64_t outer = 1, inner_bytes = 0;
};

Blocks blocks_of(const HostTensor& t, int64_t dim) {
  Blocks b;
  b.inner_bytes = static_cast<int64_t>(elem_bytes(t.dtype));
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (static_cast<int64_t>(d) < dim) b.outer *= t.shape[d];
    if (static_cast<int64_t>(d) > dim) b.inner_bytes *= t.shape[d];
  }
  return b;
}

}  // namespace

// aten.cat(tensors, dim=0): the tensors (one dtype, equal shapes but along `dim`, rank >= 1)
//   joined along `dim` in order; dim in [-rank, rank).
std::vector<HostTensor> reference_cat(const ReferenceContext& c) {
  const HostTensor& first = c.input(0, "tensors");
  c.require(elem_bytes(first.dtype) != 0, "unsupported dtype");
  c.require(!first.shape.empty(), "a zero-dimensional tensor cannot be concatenated");
  const int64_t dim = norm_dim(c, c.int_arg("dim", 0), first.shape.size());
  std::vector<int64_t> shape = first.shape;
  shape[static_cast<size_t>(dim)] = 0;
  std::vector<const HostTensor*> xs;
  for (size_t i = 0; i < c.node().inputs.size(); ++i) {
    const HostTensor& x = c.input(i, "tensors");
    std::vector<int64_t> a = x.shape, b = first.shape;
    if (a.size() == b.size()) a[static_cast<size_t>(dim)] = b[static_cast<size_t>(dim)] = 0;
    c.require(x.dtype == first.dtype && a == b,
              detail::concat("tensor ", i, " (", to_string(x.dtype), " ", shape_str(x.shape),
                             ") does not match tensor 0 (", to_string(first.dtype), " ",
                             shape_str(first.shape), ") but along dim ", dim));
    shape[static_cast<size_t>(dim)] += x.shape[static_cast<size_t>(dim)];
    xs.push_back(&x);
  }
  HostTensor out = make_tensor(first.dtype, shape);
  const Blocks ob = blocks_of(out, dim);
  const int64_t row = shape[static_cast<size_t>(dim)] * ob.inner_bytes;  // bytes per outer index
  int64_t offset = 0;  // bytes into each output row where the current tensor starts
  for (const HostTensor* x : xs) {
    const int64_t chunk = x->shape[static_cast<size_t>(dim)] * ob.inner_bytes;
    for (int64_t o = 0; o < ob.outer && chunk > 0; ++o) {
      std::memcpy(out.bytes.data() + o * row + offset, x->bytes.data() + o * chunk,
                  static_cast<size_t>(chunk));
    }
    offset += chunk;
  }
  return {out};
}

// aten.split_with_sizes_copy(self, split_sizes, dim=0), aten.split_copy.Tensor(self,
//   split_size, dim=0), aten.chunk(self, chunks, dim=0), aten.slice_copy.Tensor(self, dim=0,
//   start=None, end=None, step=1): one output per piece along `dim`, as PyTorch cuts it
//   (compiler/reference/Slicing.h); output k holds input indices start_k + j * step_k.
std::vector<HostTensor> reference_slices(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  c.require(elem_bytes(x.dtype) != 0, "unsupported dtype");
  int64_t dim = 0;
  std::vector<SliceRange> pieces;
  const SliceError e = slices_of(c.node(), x.shape, dim, pieces);
  c.require(e.ok(), e.field + ": " + e.why);
  const Blocks xb = blocks_of(x, dim);
  const int64_t d = x.shape[static_cast<size_t>(dim)];
  std::vector<HostTensor> outs;
  for (const SliceRange& r : pieces) {
    std::vector<int64_t> shape = x.shape;
    shape[static_cast<size_t>(dim)] = r.length;
    HostTensor out = make_tensor(x.dtype, shape);
    for (int64_t o = 0; o < xb.outer; ++o) {
      for (int64_t j = 0; j < r.length; ++j) {
        std::memcpy(out.bytes.data() + (o * r.length + j) * xb.inner_bytes,
                    x.bytes.data() + (o * d + r.start + j * r.step) * xb.inner_bytes,
                    static_cast<size_t>(xb.inner_bytes));
      }
    }
    outs.push_back(std::move(out));
  }
  return outs;
}

}  // namespace vkd::compiler
