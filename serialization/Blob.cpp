#include "serialization/Blob.h"

#include <cstdint>
#include <cstring>

namespace vkd::serialization {

namespace {

// "[begin, end)"; spelled "[begin, begin + size)" when the end does not fit in 64 bits.
std::string range_string(uint64_t begin, uint64_t size) {
  if (size > UINT64_MAX - begin) return vkd::detail::concat('[', begin, ", ", begin, " + ", size, ')');
  return vkd::detail::concat('[', begin, ", ", begin + size, ')');
}

// Sequential header reader: each read names its field when the blob ends inside it, so a
// truncated blob says where it was cut.
class HeaderReader {
 public:
  HeaderReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  void require(size_t offset, size_t bytes, const char* field) const {
    VKD_CHECK(offset + bytes <= size_, ErrorCode::InvalidArgument,
              "blob: truncated header: field '", field, "' needs bytes ",
              range_string(offset, bytes), " but the blob has ", size_, " bytes");
  }
  uint32_t u32(size_t offset, const char* field) const {
    require(offset, 4, field);
    return load_le32(data_ + offset);
  }
  uint64_t u64(size_t offset, const char* field) const {
    require(offset, 8, field);
    return load_le64(data_ + offset);
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

// [begin, begin + size) inside a blob of blob_size bytes, without overflowing.
void check_segment_in_blob(const char* what, uint64_t begin, uint64_t size, uint64_t blob_size) {
  VKD_CHECK(begin <= blob_size && size <= blob_size - begin, ErrorCode::InvalidArgument,
            "blob: ", what, ' ', range_string(begin, size), " extends past the end of the ", blob_size, "-byte blob");
}

bool overlap(uint64_t a, uint64_t a_size, uint64_t b, uint64_t b_size) {
  if (a_size == 0 || b_size == 0) return false;  // empty ranges overlap nothing
  return a < b + b_size && b < a + a_size;
}

}  // namespace

uint32_t load_le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint64_t load_le64(const uint8_t* p) {
  return uint64_t{load_le32(p)} | uint64_t{load_le32(p + 4)} << 32;
}

void store_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

void store_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

void encode_header(const BlobHeader& h, uint8_t* out) {
  std::memset(out, 0, kBlobHeaderSize);
  std::memcpy(out + header_field::kMagic, kBlobMagic, sizeof(kBlobMagic));
  store_le32(out + header_field::kHeaderVersion, h.header_version);
  store_le32(out + header_field::kHeaderSize, h.header_size);
  store_le32(out + header_field::kReserved, 0);
  store_le64(out + header_field::kFlatbufferOffset, h.flatbuffer_offset);
  store_le64(out + header_field::kFlatbufferSize, h.flatbuffer_size);
  store_le64(out + header_field::kConstantOffset, h.constant_offset);
  store_le64(out + header_field::kConstantSize, h.constant_size);
}

BlobHeader parse_header(const uint8_t* data, size_t size) {
  VKD_CHECK(data != nullptr || size == 0, ErrorCode::InvalidArgument, "blob: null data");
  const HeaderReader r(data, size);
  BlobHeader h;

  r.require(header_field::kMagic, sizeof(kBlobMagic), "magic");
  if (std::memcmp(data + header_field::kMagic, kBlobMagic, sizeof(kBlobMagic)) != 0) {
    VKD_THROW(ErrorCode::InvalidArgument, "blob: bad magic bytes 0x", std::hex, int{data[0]}, " 0x",
              int{data[1]}, " 0x", int{data[2]}, " 0x", int{data[3]},
              " (expected 'VKDB'; not a vkdelegate blob)");
  }
  h.header_version = r.u32(header_field::kHeaderVersion, "header_version");
  VKD_CHECK(h.header_version == kBlobHeaderVersion, ErrorCode::InvalidArgument,
            "blob: header version ", h.header_version, " not supported (this build reads ",
            kBlobHeaderVersion, ")");
  h.header_size = r.u32(header_field::kHeaderSize, "header_size");
  // A later version may append fields; this one needs at least its own.
  VKD_CHECK(h.header_size >= kBlobHeaderSize, ErrorCode::InvalidArgument, "blob: header size ",
            h.header_size, " is smaller than the ", kBlobHeaderSize,
            " bytes of header version ", kBlobHeaderVersion);
  r.u32(header_field::kReserved, "reserved");
  h.flatbuffer_offset = r.u64(header_field::kFlatbufferOffset, "flatbuffer_offset");
  h.flatbuffer_size = r.u64(header_field::kFlatbufferSize, "flatbuffer_size");
  h.constant_offset = r.u64(header_field::kConstantOffset, "constant_offset");
  h.constant_size = r.u64(header_field::kConstantSize, "constant_size");
  VKD_CHECK(h.header_size <= size, ErrorCode::InvalidArgument, "blob: header size ",
            h.header_size, " extends past the end of the ", size, "-byte blob");

  check_segment_in_blob("flatbuffer", h.flatbuffer_offset, h.flatbuffer_size, size);
  check_segment_in_blob("constant segment", h.constant_offset, h.constant_size, size);
  VKD_CHECK(h.flatbuffer_size > 0, ErrorCode::InvalidArgument, "blob: flatbuffer is empty");
  VKD_CHECK(h.flatbuffer_offset >= h.header_size, ErrorCode::InvalidArgument, "blob: flatbuffer ",
            range_string(h.flatbuffer_offset, h.flatbuffer_size), " overlaps the header [0, ",
            h.header_size, ')');
  VKD_CHECK(h.constant_size == 0 || h.constant_offset >= h.header_size,
            ErrorCode::InvalidArgument, "blob: constant segment ",
            range_string(h.constant_offset, h.constant_size), " overlaps the header [0, ",
            h.header_size, ')');
  VKD_CHECK(!overlap(h.flatbuffer_offset, h.flatbuffer_size, h.constant_offset, h.constant_size),
            ErrorCode::InvalidArgument, "blob: flatbuffer ",
            range_string(h.flatbuffer_offset, h.flatbuffer_size), " and constant segment ",
            range_string(h.constant_offset, h.constant_size), " overlap");
  VKD_CHECK(h.constant_offset % kConstantAlignment == 0, ErrorCode::InvalidArgument,
            "blob: constant segment offset ", h.constant_offset, " is not ", kConstantAlignment,
            "-byte aligned");
  return h;
}

uint64_t constant_byte_size(const TensorSpec& spec) {
  return static_cast<uint64_t>(spec.numel()) * host_element_size(spec.dtype);
}

}  // namespace vkd::serialization
