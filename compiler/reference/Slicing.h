// How ATen's slicing ops cut one dim of size d, as PyTorch defines them; shared by their shape
// rules, their CPU references and their fusion (compiler/ops/Concat.cpp). Each returns "" or why
// the arguments are invalid (in PyTorch's words where it has them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"

namespace vkd::compiler {

// Output k of a split: `length` elements along the dim, input index start + j * step.
struct SliceRange {
  int64_t start = 0, length = 0, step = 1;
};

// aten.slice_copy.Tensor: start / end default to 0 / d, a negative one counts from the end,
// both are clamped to [0, d] (end to at least start); length ceil((end - start) / step).
std::string slice_range(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
                        int64_t step, SliceRange& out);

// aten.split_with_sizes_copy: consecutive pieces of the given lengths, which must add up to d.
std::string split_with_sizes(int64_t d, const std::vector<int64_t>& sizes,
                             std::vector<SliceRange>& out);

// aten.split_copy.Tensor: pieces of split_size, the last one shorter (at least one piece;
// split_size 0 only for d = 0).
std::string split_by_size(int64_t d, int64_t split_size, std::vector<SliceRange>& out);

// aten.chunk: split_copy.Tensor by ceil(d / chunks) (so possibly fewer than `chunks` pieces);
// d = 0 gives `chunks` empty pieces.
std::string chunk_ranges(int64_t d, int64_t chunks, std::vector<SliceRange>& out);

// Why a split's arguments are invalid: the field ("argument 'dim'") and the reason.
struct SliceError {
  std::string field, why;
  bool ok() const { return why.empty(); }
};

// The dim (made non-negative) and the pieces that node `n` (aten.split_with_sizes_copy,
// aten.split_copy.Tensor, aten.chunk or aten.slice_copy.Tensor) cuts an input of `shape` into,
// one per output, from its arguments by their ATen names.
SliceError slices_of(const Node& n, const std::vector<int64_t>& shape, int64_t& dim,
                     std::vector<SliceRange>& out);

}  // namespace vkd::compiler
