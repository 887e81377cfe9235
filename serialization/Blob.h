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

#include "core/Error.h"
#include "core/TensorSpec.h"

namespace vkd::serialization {

using ValueId = uint32_t;  // index into the graph's value list

inline constexpr char kBlobMagic[4] = {'V', 'K', 'D', 'B'};
// Version 2 added the blob's size, the hash of the graph IR it was compiled from and three
// checksums (header, graph, constants); version 1 blobs (48-byte header, nothing to verify)
// are still read.
inline constexpr uint32_t kBlobHeaderVersion = 2;   // written by this version
inline constexpr uint32_t kBlobHeaderSize = 88;     // bytes of a version 2 header
inline constexpr uint32_t kBlobHeaderSizeV1 = 48;   // bytes of a version 1 header
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
// Version 2 only:
inline constexpr size_t kBlobSize = 48;          // uint64, bytes of the whole blob
inline constexpr size_t kSourceGraphHash = 56;   // uint64, 0 when not recorded
inline constexpr size_t kHeaderChecksum = 64;    // uint64, of the header with this field 0
inline constexpr size_t kGraphChecksum = 72;     // uint64, of the flatbuffer segment
inline constexpr size_t kConstantChecksum = 80;  // uint64, of the constant segment
}  // namespace header_field

struct BlobHeader {
  uint32_t header_version = kBlobHeaderVersion;
  uint32_t header_size = kBlobHeaderSize;
  uint64_t flatbuffer_offset = 0;
  uint64_t flatbuffer_size = 0;
  uint64_t constant_offset = 0;
  uint64_t constant_size = 0;
  // Version 2 (0 in a version 1 header). The checksums are XXH64 (Xxh64.h), seed 0.
  uint64_t blob_size = 0;
  // XXH64 of the graph IR the compiler read (compiler/GraphHash.h); 0: not recorded (a blob
  // GraphBuilder wrote without one, or a version 1 blob).
  uint64_t source_graph_hash = 0;
  uint64_t header_checksum = 0;
  uint64_t graph_checksum = 0;
  uint64_t constant_checksum = 0;
};

// Writes the header bytes (magic included) to out[0..header.header_size): the version 2 fields
// as given (seal_blob() computes blob_size and the checksums once the blob is complete), or a
// version 1 header when header.header_version is 1 (tests of old blobs).
void encode_header(const BlobHeader& header, uint8_t* out);

// Reads and checks the header of a blob of `size` bytes: every field within the blob, magic,
// header version (1 or 2), header size; for version 2 the header checksum and the blob's size
// (a truncated or extended blob is named as such); both segments inside the blob, not
// overlapping each other or the header, the constant segment aligned to kConstantAlignment.
// Throws vkd::Error(InvalidArgument) naming the field and the numbers.
BlobHeader parse_header(const uint8_t* data, size_t size);

// For a version 2 header (from parse_header): the flatbuffer and constant segments against
// their checksums, and every byte outside the header and the two segments (padding) zero, so
// that no bit of the blob can change unnoticed. Throws vkd::Error(InvalidArgument) naming the
// region ("blob: constant segment [...) checksum mismatch ...: the constants are corrupt").
// Nothing to check in a version 1 blob.
void verify_checksums(const uint8_t* data, size_t size, const BlobHeader& header);

// XXH64 of the header bytes [0, header_size) with the header checksum field read as zero.
// `data` must hold header_size >= kBlobHeaderSize bytes.
uint64_t header_checksum(const uint8_t* data, uint32_t header_size);

// Completes a version 2 blob of `size` bytes in place: writes blob_size, the graph and constant
// checksums (of each segment that lies inside the blob) and, last, the header checksum. The
// writer's last step (GraphBuilder::finish), and what tests and fuzzers call after patching a
// blob so that the patch reaches the checks behind the checksums. Leaves a blob too short for
// a version 2 header, or of another version, unchanged; never reads outside [data, data+size).
void seal_blob(uint8_t* data, size_t size);
inline void seal_blob(std::vector<uint8_t>& blob) { seal_blob(blob.data(), blob.size()); }

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
