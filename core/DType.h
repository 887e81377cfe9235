// Element types, storage kinds and memory layouts: the vocabulary every layer shares.
// Pure C++ (no Vulkan) so the AOT compiler can use it without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vkd {

// Numbers are stable: they appear in serialized blobs.
enum class DType : uint8_t {
  Float32 = 0,
  Float16 = 1,
  Int32 = 2,
  Int8 = 3,    // one byte per element (host side, CPU references)
  Int8x4 = 4,  // int32 words each holding four int8 (lane 0 = least-significant byte)
};

enum class StorageType : uint8_t {
  Buffer = 0,
  Texture3D = 1,
};

enum class MemoryLayout : uint8_t {
  WidthPacked = 0,      // float/int: W is the fastest dim (NCHW contiguous for buffers)
  HeightPacked = 1,     // float/int: H is the fastest dim
  ChannelsPacked = 2,   // float/int: C is the fastest dim (NHWC for buffers)
  PackedInt8_4W4C = 3,  // int8x4: 4x4 tiles of (W, C), channels in the byte lanes
  PackedInt8_4H4W = 4,  // int8x4: 4x4 tiles of (H, W), widths in the byte lanes
  PackedInt8_4C1W = 5,  // int8x4: per (n, h) row, channel-block-major then width
};

inline constexpr MemoryLayout kAllPackedInt8Layouts[] = {
    MemoryLayout::PackedInt8_4W4C, MemoryLayout::PackedInt8_4H4W, MemoryLayout::PackedInt8_4C1W};
inline constexpr MemoryLayout kAllFloatLayouts[] = {
    MemoryLayout::WidthPacked, MemoryLayout::HeightPacked, MemoryLayout::ChannelsPacked};

size_t element_size(DType dtype);  // bytes per element as stored on the GPU
// Bytes per element in host NCHW form (blob constants, API tensors): int8x4 is 1 (unpacked).
size_t host_element_size(DType dtype);
bool is_packed_int8(MemoryLayout layout);
// Whether `layout` may hold `dtype` in `storage` (int8x4 needs a packed-int8 layout in a
// buffer; every other dtype needs a width/height/channels-packed layout).
bool layout_is_legal(DType dtype, StorageType storage, MemoryLayout layout);

std::string_view to_string(DType dtype);
std::string_view to_string(StorageType storage);
std::string_view to_string(MemoryLayout layout);  // "4W4C", "width_packed", ...
std::optional<DType> parse_dtype(std::string_view name);
std::optional<StorageType> parse_storage(std::string_view name);
std::optional<MemoryLayout> parse_layout(std::string_view name);

}  // namespace vkd
