#include "core/DType.h"

#include <cctype>
#include <string>

#include "core/Error.h"

namespace vkd {

size_t host_element_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Float16: return 2;
    case DType::Int32: return 4;
    case DType::Int8: return 1;
    case DType::Int8x4: return 1;
  }
  VKD_THROW(ErrorCode::InvalidArgument, "unknown dtype ", static_cast<int>(dtype));
}

size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Float16: return 2;
    case DType::Int32: return 4;
    case DType::Int8: return 1;
    // One int8 element occupies one byte lane of an int32 word. The word count (and so the
    // byte size) of an int8x4 tensor comes from packed_int8_word_count(), not numel * 1.
    case DType::Int8x4: return 1;
  }
  return 0;
}

bool is_packed_int8(MemoryLayout layout) {
  switch (layout) {
    case MemoryLayout::PackedInt8_4W4C:
    case MemoryLayout::PackedInt8_4H4W:
    case MemoryLayout::PackedInt8_4C1W: return true;
    case MemoryLayout::WidthPacked:
    case MemoryLayout::HeightPacked:
    case MemoryLayout::ChannelsPacked: return false;
  }
  return false;
}

namespace {

bool is_float_layout(MemoryLayout layout) {
  switch (layout) {
    case MemoryLayout::WidthPacked:
    case MemoryLayout::HeightPacked:
    case MemoryLayout::ChannelsPacked: return true;
    default: return false;
  }
}

bool is_known_storage(StorageType storage) {
  return storage == StorageType::Buffer || storage == StorageType::Texture3D;
}

}  // namespace

bool layout_is_legal(DType dtype, StorageType storage, MemoryLayout layout) {
  if (!is_known_storage(storage)) return false;
  switch (dtype) {
    case DType::Int8x4: return storage == StorageType::Buffer && is_packed_int8(layout);
    case DType::Int8:
      // One byte per element is a host-side format (CPU references, staging): NCHW buffer only.
      return storage == StorageType::Buffer && layout == MemoryLayout::WidthPacked;
    case DType::Float32:
    case DType::Float16:
    case DType::Int32: return is_float_layout(layout);
  }
  return false;
}

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float16: return "float16";
    case DType::Int32: return "int32";
    case DType::Int8: return "int8";
    case DType::Int8x4: return "int8x4";
  }
  return "unknown_dtype";
}

std::string_view to_string(StorageType storage) {
  switch (storage) {
    case StorageType::Buffer: return "buffer";
    case StorageType::Texture3D: return "texture3d";
  }
  return "unknown_storage";
}

std::string_view to_string(MemoryLayout layout) {
  switch (layout) {
    case MemoryLayout::WidthPacked: return "width_packed";
    case MemoryLayout::HeightPacked: return "height_packed";
    case MemoryLayout::ChannelsPacked: return "channels_packed";
    case MemoryLayout::PackedInt8_4W4C: return "4W4C";
    case MemoryLayout::PackedInt8_4H4W: return "4H4W";
    case MemoryLayout::PackedInt8_4C1W: return "4C1W";
  }
  return "unknown_layout";
}

namespace {

// Lower-cased copy; parsing is case-insensitive ("4w4c" == "4W4C").
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  const std::string s = lower(name);
  if (s == "float32" || s == "fp32" || s == "f32") return DType::Float32;
  if (s == "float16" || s == "fp16" || s == "f16") return DType::Float16;
  if (s == "int32" || s == "i32") return DType::Int32;
  if (s == "int8" || s == "i8") return DType::Int8;
  if (s == "int8x4") return DType::Int8x4;
  return std::nullopt;
}

std::optional<StorageType> parse_storage(std::string_view name) {
  const std::string s = lower(name);
  if (s == "buffer") return StorageType::Buffer;
  if (s == "texture3d" || s == "texture") return StorageType::Texture3D;
  return std::nullopt;
}

std::optional<MemoryLayout> parse_layout(std::string_view name) {
  const std::string s = lower(name);
  if (s == "width_packed") return MemoryLayout::WidthPacked;
  if (s == "height_packed") return MemoryLayout::HeightPacked;
  if (s == "channels_packed") return MemoryLayout::ChannelsPacked;
  if (s == "4w4c") return MemoryLayout::PackedInt8_4W4C;
  if (s == "4h4w") return MemoryLayout::PackedInt8_4H4W;
  if (s == "4c1w") return MemoryLayout::PackedInt8_4C1W;
  return std::nullopt;
}

}  // namespace vkd
