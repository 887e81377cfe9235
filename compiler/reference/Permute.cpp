// CPU reference of the dimension permutations (semantics above each function): elements are
// moved byte for byte, so they take any dtype the interpreter holds (float16 and int8 included)
// and any rank up to 6.
#include "compiler/reference/Reference.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// out[i_0, ..., i_{r-1}] = x[j] with j[dims[k]] = i_k: output dim k is input dim dims[k].
HostTensor permuted(const ReferenceContext& c, const HostTensor& x,
                    const std::vector<int64_t>& dims) {
  const size_t rank = x.shape.size();
  c.require(dims.size() == rank,
            detail::concat("dims ", shape_str(dims), " do not match rank ", rank));
  std::vector<int64_t> in_stride(rank, 1), out_shape(rank), stride(rank);
  for (size_t k = rank; k-- > 1;) in_stride[k - 1] = in_stride[k] * x.shape[k];
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < rank; ++k) {
    const size_t d = static_cast<size_t>(norm_dim(c, dims[k], rank));
    c.require(!seen[d], detail::concat("dims ", shape_str(dims), " repeat dim ", d));
    seen[d] = true;
    out_shape[k] = x.shape[d];
    stride[k] = in_stride[d];  // input elements between neighbours along output dim k
  }
  HostTensor out = make_tensor(x.dtype, out_shape);
  const size_t es = elem_bytes(x.dtype);
  strided_loop(out_shape, {stride}, [&](int64_t i, const std::vector<int64_t>& offsets) {
    std::memcpy(out.bytes.data() + i * es, x.bytes.data() + offsets[0] * es, es);
  });
  return out;
}

}  // namespace

// aten.permute_copy / aten.permute(dims): output dim k is input dim dims[k] (negative dims count
// from the end); out[i_0, .., i_{r-1}] = x[j] with j[dims[k]] = i_k.
std::vector<HostTensor> reference_permute(const ReferenceContext& c) {
  return {permuted(c, c.input(0, "self"), c.ints_arg("dims"))};
}

// aten.transpose.int / aten.transpose_copy.int(dim0, dim1): the permute that swaps the two dims.
std::vector<HostTensor> reference_transpose(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  const size_t rank = x.shape.size();
  std::vector<int64_t> dims(rank);
  for (size_t k = 0; k < rank; ++k) dims[k] = static_cast<int64_t>(k);
  if (rank > 0) {
    std::swap(dims[static_cast<size_t>(norm_dim(c, c.int_arg("dim0"), rank))],
              dims[static_cast<size_t>(norm_dim(c, c.int_arg("dim1"), rank))]);
  }
  return {permuted(c, x, dims)};
}

}  // namespace vkd::compiler
