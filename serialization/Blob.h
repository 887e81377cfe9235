// The blob container: a fixed little-endian header, the FlatBuffers graph (schema.fbs), then the
// constant segment. Byte layout: serialization/README.md. No FlatBuffers and no Vulkan here, so
// tools and tests can read and patch headers without the generated code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/core/Error.h"
#include "runtime/core/TensorSpec.h"

namespace vkd::serialization {

using ValueId = uint32_t;  // index into the graph's value list

inline constexpr char kBlobMagic[4] = {'V', 'K', 'D', 'B'};
inline constexpr uint32_t kBlobHeaderVersion = 1;
inline constexpr uint32_t kBlobHeaderSize = 48;     // bytes written by this version
inline constexpr uint32_t kGraphSchemaVersion = 1;  // Graph.schema_version in schema.fbs
inline constexpr char kGraphFileIdentifier[5] = "VKDG";
// The constant segment and every constant in it start on this boundary (vec4 / 128-bit loads).
inline constexpr uint64_t kConstantAlignment = 16;

// Byte offsets of the header fields (all little-endian). Tests patch blobs through these.
namespace header_field {
inline constexpr size_t kMagic = 0;              // 4 bytes
inline constexpr size_t kHeaderVersion = 4;      // uint32
inline constexpr size_t kHeaderSize = 8;         // uint32
inline constexpr size_t kReserved = 12;          // uint32, written as 0, ignored on read
inline constexpr size_t kFlatbufferOffset = 16;  // uint64
inline constexpr size_t kFlatbufferSize = 24;    // uint64
inline constexpr size_t kConstantOffset = 32;    // uint64
inline constexpr size_t kConstantSize = 40;      // uint64
}  // namespace header_field

struct BlobHeader {
  uint32_t header_version = kBlobHeaderVersion;
  uint32_t header_size = kBlobHeaderSize;
  uint64_t flatbuffer_offset = 0;
  uint64_t flatbuffer_size = 0;
  uint64_t constant_offset = 0;
  uint64_t constant_size = 0;
};

// Writes the kBlobHeaderSize header bytes (magic included) to out[0..kBlobHeaderSize).
void encode_header(const BlobHeader& header, uint8_t* out);

// Reads and checks the header of a blob of `size` bytes: every field within the blob, magic,
// header version, header size, both segments inside the blob, not overlapping each other or
// the header, the constant segment aligned to kConstantAlignment. Throws
// vkd::Error(InvalidArgument) naming the field and the numbers.
BlobHeader parse_header(const uint8_t* data, size_t size);

// Bytes a constant of this tensor holds: host NCHW data, numel * (float32 4, float16 2,
// int32 4, int8 1, int8x4 1: int8x4 constants are stored unpacked and packed on load).
// `spec` must have passed vkd::validate().
uint64_t constant_byte_size(const TensorSpec& spec);

// Little-endian scalar access with no alignment requirement.
uint32_t load_le32(const uint8_t* p);
uint64_t load_le64(const uint8_t* p);
void store_le32(uint8_t* p, uint32_t v);
void store_le64(uint8_t* p, uint64_t v);

namespace detail {
// Runs f(); lets vkd::Error through and turns any other exception into a vkd::Error, so only
// vkd::Error leaves the serialization API.
template <typename F>
auto only_vkd_errors(const char* where, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    VKD_THROW(ErrorCode::OutOfMemory, where, ": out of memory");
  } catch (const std::exception& e) {
    VKD_THROW(ErrorCode::Internal, where, ": ", e.what());
  }
}
}  // namespace detail

}  // namespace vkd::serialization
