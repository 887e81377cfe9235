#include "serialization/Blob.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "serialization/Xxh64.h"

namespace vkd::serialization {

namespace {

// "[begin, end)"; spelled "[begin, begin + size)" when the end does not fit in 64 bits.
std::string range_string(uint64_t begin, uint64_t size) {
  if (size > UINT64_MAX - begin)
    return vkd::detail::concat('[', begin, ", ", begin, " + ", size, ')');
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
            "blob: ", what, ' ', range_string(begin, size), " extends past the end of the ",
            blob_size, "-byte blob");
}

bool overlap(uint64_t a, uint64_t a_size, uint64_t b, uint64_t b_size) {
  if (a_size == 0 || b_size == 0) return false;  // empty ranges overlap nothing
  return a < b + b_size && b < a + a_size;
}

bool inside(uint64_t begin, uint64_t size, uint64_t blob_size) {
  return begin <= blob_size && size <= blob_size - begin;
}

// A version 2 blob's segment against the checksum its header records. `what` names the bytes
// ("flatbuffer"), `meaning` what a mismatch means for the user ("graph").
void check_segment(const uint8_t* data, const char* what, const char* meaning, uint64_t begin,
                   uint64_t size, uint64_t recorded) {
  const uint64_t computed = xxh64(data + begin, static_cast<size_t>(size));
  VKD_CHECK(computed == recorded, ErrorCode::InvalidArgument, "blob: ", what, ' ',
            range_string(begin, size), " checksum mismatch (recorded ", hash_string(recorded),
            ", computed ", hash_string(computed), "): the ", meaning, " is corrupt");
}

// Bytes [begin, end) must be zero: padding no checksum covers.
void check_padding(const uint8_t* data, uint64_t begin, uint64_t end) {
  for (uint64_t i = begin; i < end; ++i) {
    VKD_CHECK(data[i] == 0, ErrorCode::InvalidArgument, "blob: padding byte ", i,
              " (outside the header and both segments) is ", int{data[i]},
              ", not 0: the blob is corrupt");
  }
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
  std::memset(out, 0, h.header_version == 1 ? kBlobHeaderSizeV1 : kBlobHeaderSize);
  std::memcpy(out + header_field::kMagic, kBlobMagic, sizeof(kBlobMagic));
  store_le32(out + header_field::kHeaderVersion, h.header_version);
  store_le32(out + header_field::kHeaderSize, h.header_size);
  store_le32(out + header_field::kReserved, 0);
  store_le64(out + header_field::kFlatbufferOffset, h.flatbuffer_offset);
  store_le64(out + header_field::kFlatbufferSize, h.flatbuffer_size);
  store_le64(out + header_field::kConstantOffset, h.constant_offset);
  store_le64(out + header_field::kConstantSize, h.constant_size);
  if (h.header_version == 1) return;
  store_le64(out + header_field::kBlobSize, h.blob_size);
  store_le64(out + header_field::kSourceGraphHash, h.source_graph_hash);
  store_le64(out + header_field::kHeaderChecksum, h.header_checksum);
  store_le64(out + header_field::kGraphChecksum, h.graph_checksum);
  store_le64(out + header_field::kConstantChecksum, h.constant_checksum);
}

uint64_t header_checksum(const uint8_t* data, uint32_t header_size) {
  static constexpr uint8_t kZero[8] = {};
  Xxh64 h;
  h.update(data, header_field::kHeaderChecksum);
  h.update(kZero, sizeof kZero);
  const size_t after = header_field::kHeaderChecksum + 8;
  h.update(data + after, header_size - after);
  return h.digest();
}

void seal_blob(uint8_t* data, size_t size) {
  if (data == nullptr || size < kBlobHeaderSize) return;
  if (load_le32(data + header_field::kHeaderVersion) != kBlobHeaderVersion) return;
  store_le64(data + header_field::kBlobSize, size);
  const auto seal_segment = [&](size_t offset_field, size_t size_field, size_t checksum_field) {
    const uint64_t begin = load_le64(data + offset_field), bytes = load_le64(data + size_field);
    if (inside(begin, bytes, size)) {
      store_le64(data + checksum_field, xxh64(data + begin, static_cast<size_t>(bytes)));
    }
  };
  seal_segment(header_field::kFlatbufferOffset, header_field::kFlatbufferSize,
               header_field::kGraphChecksum);
  seal_segment(header_field::kConstantOffset, header_field::kConstantSize,
               header_field::kConstantChecksum);
  const uint32_t header_size = load_le32(data + header_field::kHeaderSize);
  if (header_size >= kBlobHeaderSize && header_size <= size) {
    store_le64(data + header_field::kHeaderChecksum, header_checksum(data, header_size));
  }
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
  VKD_CHECK(h.header_version == 1 || h.header_version == kBlobHeaderVersion,
            ErrorCode::InvalidArgument, "blob: header version ", h.header_version,
            " not supported (this build reads 1 and ", kBlobHeaderVersion, ")");
  const bool v1 = h.header_version == 1;
  h.header_size = r.u32(header_field::kHeaderSize, "header_size");
  // Version 1 headers were only ever written with 48 bytes (so a corrupt version field alone
  // cannot make a version 2 blob skip its checksums); a later version may append fields.
  if (v1) {
    VKD_CHECK(h.header_size == kBlobHeaderSizeV1, ErrorCode::InvalidArgument, "blob: header size ",
              h.header_size, " is not the ", kBlobHeaderSizeV1, " bytes of header version 1");
  } else {
    VKD_CHECK(h.header_size >= kBlobHeaderSize, ErrorCode::InvalidArgument, "blob: header size ",
              h.header_size, " is smaller than the ", kBlobHeaderSize, " bytes of header version ",
              kBlobHeaderVersion);
  }
  r.u32(header_field::kReserved, "reserved");
  h.flatbuffer_offset = r.u64(header_field::kFlatbufferOffset, "flatbuffer_offset");
  h.flatbuffer_size = r.u64(header_field::kFlatbufferSize, "flatbuffer_size");
  h.constant_offset = r.u64(header_field::kConstantOffset, "constant_offset");
  h.constant_size = r.u64(header_field::kConstantSize, "constant_size");
  if (!v1) {
    h.blob_size = r.u64(header_field::kBlobSize, "blob_size");
    h.source_graph_hash = r.u64(header_field::kSourceGraphHash, "source_graph_hash");
    h.header_checksum = r.u64(header_field::kHeaderChecksum, "header_checksum");
    h.graph_checksum = r.u64(header_field::kGraphChecksum, "graph_checksum");
    h.constant_checksum = r.u64(header_field::kConstantChecksum, "constant_checksum");
  }
  VKD_CHECK(h.header_size <= size, ErrorCode::InvalidArgument, "blob: header size ", h.header_size,
            " extends past the end of the ", size, "-byte blob");
  if (!v1) {
    // Before any offset is trusted: a corrupt header is named as such, not by what its
    // corrupt fields would mean.
    const uint64_t computed = header_checksum(data, h.header_size);
    VKD_CHECK(computed == h.header_checksum, ErrorCode::InvalidArgument,
              "blob: header checksum mismatch (recorded ", hash_string(h.header_checksum),
              ", computed ", hash_string(computed), "): the header [0, ", h.header_size,
              ") is corrupt");
    VKD_CHECK(h.blob_size == size, ErrorCode::InvalidArgument, "blob: the header records ",
              h.blob_size, " bytes, the blob has ", size, ": ",
              size < h.blob_size ? "it was truncated" : "bytes were appended to it");
  }

  check_segment_in_blob("flatbuffer", h.flatbuffer_offset, h.flatbuffer_size, size);
  check_segment_in_blob("constant segment", h.constant_offset, h.constant_size, size);
  VKD_CHECK(h.flatbuffer_size > 0, ErrorCode::InvalidArgument, "blob: flatbuffer is empty");
  VKD_CHECK(h.flatbuffer_offset >= h.header_size, ErrorCode::InvalidArgument, "blob: flatbuffer ",
            range_string(h.flatbuffer_offset, h.flatbuffer_size), " overlaps the header [0, ",
            h.header_size, ')');
  VKD_CHECK(h.constant_size == 0 || h.constant_offset >= h.header_size, ErrorCode::InvalidArgument,
            "blob: constant segment ", range_string(h.constant_offset, h.constant_size),
            " overlaps the header [0, ", h.header_size, ')');
  VKD_CHECK(!overlap(h.flatbuffer_offset, h.flatbuffer_size, h.constant_offset, h.constant_size),
            ErrorCode::InvalidArgument, "blob: flatbuffer ",
            range_string(h.flatbuffer_offset, h.flatbuffer_size), " and constant segment ",
            range_string(h.constant_offset, h.constant_size), " overlap");
  VKD_CHECK(h.constant_offset % kConstantAlignment == 0, ErrorCode::InvalidArgument,
            "blob: constant segment offset ", h.constant_offset, " is not ", kConstantAlignment,
            "-byte aligned");
  return h;
}

void verify_checksums(const uint8_t* data, size_t size, const BlobHeader& h) {
  if (h.header_version == 1) return;
  check_segment(data, "flatbuffer", "graph", h.flatbuffer_offset, h.flatbuffer_size,
                h.graph_checksum);
  check_segment(data, "constant segment", "constant data (weights)", h.constant_offset,
                h.constant_size, h.constant_checksum);
  // The rest, in order: the segments do not overlap each other or the header (parse_header).
  struct Range {
    uint64_t begin, end;
  };
  Range segments[2] = {{h.flatbuffer_offset, h.flatbuffer_offset + h.flatbuffer_size},
                       {h.constant_offset, h.constant_offset + h.constant_size}};
  if (segments[1].begin < segments[0].begin) std::swap(segments[0], segments[1]);
  uint64_t at = h.header_size;
  for (const Range& s : segments) {
    if (s.begin == s.end) continue;  // an empty constant segment may sit anywhere
    check_padding(data, at, s.begin);
    at = std::max(at, s.end);
  }
  check_padding(data, at, size);
}

uint64_t constant_byte_size(const TensorSpec& spec) {
  return static_cast<uint64_t>(spec.numel()) * host_element_size(spec.dtype);
}

}  // namespace vkd::serialization
