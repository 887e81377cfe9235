#include "core/TensorSpec.h"

#include <sstream>

#include "core/Error.h"
#include "core/TensorLimits.h"

namespace vkd {

namespace {

// Word count of an int8x4 layout as the sizes of the word array, for checked_element_count.
std::vector<int64_t> packed_word_dims(MemoryLayout layout, const Dims4& d) {
  switch (layout) {
    case MemoryLayout::PackedInt8_4W4C: return {d.n, d.h, div_up(d.w, 4), div_up(d.c, 4), 4};
    case MemoryLayout::PackedInt8_4H4W: return {d.n, d.c, div_up(d.h, 4), div_up(d.w, 4), 4};
    case MemoryLayout::PackedInt8_4C1W: return {d.n, d.h, div_up(d.c, 4), d.w};
    default: return {};
  }
}

}  // namespace

std::string sizes_string(const std::vector<int64_t>& sizes, const char* separator) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? separator : "") + std::to_string(sizes[i]);
  return s + "]";
}

Dims4 TensorSpec::dims4() const {
  VKD_CHECK(sizes.size() <= 4, ErrorCode::InvalidArgument, "tensor ", sizes_string(sizes),
            ": rank ", sizes.size(), " not in 1..4");
  int64_t d[4] = {1, 1, 1, 1};
  const size_t offset = 4 - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) d[offset + i] = sizes[i];
  return Dims4{d[0], d[1], d[2], d[3]};
}

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::string TensorSpec::describe() const {
  std::ostringstream os;
  os << sizes_string(sizes) << ' ' << to_string(dtype) << ' ' << to_string(storage) << ' '
     << to_string(layout);
  return os.str();
}

void validate(const TensorSpec& spec) {
  const std::string name = "tensor " + sizes_string(spec.sizes);
  const size_t rank = spec.sizes.size();
  VKD_CHECK(rank >= 1 && rank <= 4, ErrorCode::InvalidArgument, name, ": rank ", rank,
            " not in 1..4");
  for (size_t i = 0; i < rank; ++i) {
    VKD_CHECK(spec.sizes[i] >= 1, ErrorCode::InvalidArgument, name, ": size ", spec.sizes[i],
              " in dim ", i, " (every size must be >= 1)");
  }

  const std::string_view dt = to_string(spec.dtype);
  const std::string_view st = to_string(spec.storage);
  const std::string_view ly = to_string(spec.layout);
  if (!layout_is_legal(spec.dtype, spec.storage, spec.layout)) {
    if (spec.dtype == DType::Int8x4) {
      VKD_CHECK(is_packed_int8(spec.layout), ErrorCode::InvalidArgument, name,
                ": int8x4 needs a packed int8 layout (4W4C, 4H4W or 4C1W), got layout ", ly);
      VKD_THROW(ErrorCode::InvalidArgument, name, ": int8x4 needs buffer storage, got ", st);
    }
    if (spec.dtype == DType::Int8) {
      VKD_THROW(ErrorCode::InvalidArgument, name,
                ": int8 (one byte per element) is host-only and needs buffer width_packed, got ",
                st, ' ', ly);
    }
    if (is_packed_int8(spec.layout)) {
      VKD_THROW(ErrorCode::InvalidArgument, name, ": dtype ", dt, " cannot use packed int8 layout ",
                ly, " (only int8x4 can)");
    }
    VKD_THROW(ErrorCode::InvalidArgument, name, ": dtype ", dt, ", storage ", st, " and layout ",
              ly, " do not go together");
  }

  // The caps of every tensor (TensorLimits.h); the kernels index elements and words with int32.
  const std::string problem = tensor_size_problem(spec.sizes, element_size(spec.dtype), 4);
  VKD_CHECK(problem.empty(), ErrorCode::InvalidArgument, name, ": ", problem);
  if (spec.dtype == DType::Int8x4) {
    VKD_CHECK(checked_element_count(packed_word_dims(spec.layout, spec.dims4())).has_value(),
              ErrorCode::InvalidArgument, name, " ", ly,
              ": packed word count exceeds the int32 word index limit (words must be < 2^31)");
  }
}

}  // namespace vkd
