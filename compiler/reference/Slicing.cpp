#include "compiler/reference/Slicing.h"

#include <algorithm>

namespace vkd::compiler {

std::string slice_range(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
                        int64_t step, SliceRange& out) {
  if (step <= 0) return "slice step must be positive, got " + std::to_string(step);
  int64_t lo = start.value_or(0), hi = end.value_or(d);
  if (lo < 0) lo += d;
  if (hi < 0) hi += d;
  lo = std::clamp<int64_t>(lo, 0, d);
  hi = std::clamp<int64_t>(hi, lo, d);
  out = {lo, (hi - lo + step - 1) / step, step};
  return "";
}

std::string split_with_sizes(int64_t d, const std::vector<int64_t>& sizes,
                             std::vector<SliceRange>& out) {
  out.clear();
  int64_t start = 0;
  for (int64_t s : sizes) {
    if (s < 0) return "split_sizes has a negative size " + std::to_string(s);
    out.push_back({start, s, 1});
    start += s;
  }
  if (sizes.empty() || start != d) {
    return "split_sizes add up to " + std::to_string(start) + ", the dim has " + std::to_string(d) +
           " (they must sum exactly to it)";
  }
  return "";
}

std::string split_by_size(int64_t d, int64_t split_size, std::vector<SliceRange>& out) {
  out.clear();
  if (split_size < 0 || (split_size == 0 && d != 0)) {
    return "split_size can only be 0 if the dim is 0 long, and never negative; got " +
           std::to_string(split_size) + " for a dim of " + std::to_string(d);
  }
  // At least one piece (a split_size above d gives the whole dim), as PyTorch.
  const int64_t pieces =
      split_size == 0 ? 1 : std::max<int64_t>((d + split_size - 1) / split_size, 1);
  for (int64_t k = 0; k < pieces; ++k) {
    out.push_back({k * split_size, std::min(split_size, d - k * split_size), 1});
  }
  return "";
}

std::string chunk_ranges(int64_t d, int64_t chunks, std::vector<SliceRange>& out) {
  out.clear();
  if (chunks <= 0) return "chunks must be positive, got " + std::to_string(chunks);
  if (d == 0) {
    out.assign(static_cast<size_t>(chunks), SliceRange{0, 0, 1});
    return "";
  }
  return split_by_size(d, (d + chunks - 1) / chunks, out);
}

SliceError slices_of(const Node& n, const std::vector<int64_t>& shape, int64_t& dim,
                     std::vector<SliceRange>& out) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  dim = arg_present(n, "dim") ? arg_int(n, "dim") : 0;
  if (rank == 0) return {"input 'self'", "a zero-dimensional tensor cannot be split"};
  if (dim < -rank || dim >= rank) {
    return {"argument 'dim'", "dim " + std::to_string(dim) + " is out of range for rank " +
                                  std::to_string(rank) + " (expected " + std::to_string(-rank) +
                                  ".." + std::to_string(rank - 1) + ")"};
  }
  if (dim < 0) dim += rank;
  const int64_t d = shape[static_cast<size_t>(dim)];
  if (n.op == "aten.split_with_sizes_copy") {
    return {"argument 'split_sizes'", split_with_sizes(d, arg_ints(n, "split_sizes"), out)};
  }
  if (n.op == "aten.split_copy.Tensor") {
    return {"argument 'split_size'", split_by_size(d, arg_int(n, "split_size"), out)};
  }
  if (n.op == "aten.chunk") {
    return {"argument 'chunks'", chunk_ranges(d, arg_int(n, "chunks"), out)};
  }
  auto opt = [&](const char* name) {
    return arg_present(n, name) ? std::optional<int64_t>(arg_int(n, name)) : std::nullopt;
  };
  out.assign(1, SliceRange{});
  const int64_t step = arg_present(n, "step") ? arg_int(n, "step") : 1;
  return {"argument 'step'", slice_range(d, opt("start"), opt("end"), step, out[0])};
}

}  // namespace vkd::compiler
