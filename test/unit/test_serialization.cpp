// Tests for serialization/: the blob header, GraphBuilder and the validating deserializer.
// Malformed blobs are made either with the builder (it checks nothing on purpose) or by patching
// header fields / flatbuffer bytes of a good blob; each must fail with its own message. A
// patched blob is resealed (seal_blob: new checksums) before it is read, so the patch reaches
// the check it is about; the integrity tests (BlobIntegrity.*) read blobs as they are.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/Error.h"
#include "core/TensorSpec.h"
#include "serialization/Blob.h"
#include "serialization/Deserializer.h"
#include "serialization/GraphAtLength.h"
#include "serialization/Serializer.h"
#include "serialization/Xxh64.h"

namespace vkd::serialization {
namespace {

using Bytes = std::vector<uint8_t>;

TensorSpec spec(std::vector<int64_t> sizes, DType dtype,
                MemoryLayout layout = MemoryLayout::WidthPacked,
                StorageType storage = StorageType::Buffer) {
  TensorSpec s;
  s.sizes = std::move(sizes);
  s.dtype = dtype;
  s.storage = storage;
  s.layout = layout;
  return s;
}

Bytes iota_bytes(size_t n, uint8_t start) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(start + i);
  return b;
}

// A graph with every value kind, three constants of different dtypes and two ops.
struct Sample {
  GraphBuilder b;
  ValueId input, weight, bias, idx, output, i, f, t, ints, floats, str, list;
};

void build_sample(Sample& s) {
  GraphBuilder& b = s.b;
  s.input = b.add_tensor(spec({1, 3, 4, 4}, DType::Float32), "x");
  s.weight = b.add_tensor(spec({3, 4}, DType::Int8), "w", iota_bytes(12, 1));
  s.bias =
      b.add_tensor(spec({4}, DType::Float32, MemoryLayout::ChannelsPacked, StorageType::Texture3D),
                   "b", iota_bytes(16, 100));
  s.idx = b.add_tensor(spec({2}, DType::Int32), "", iota_bytes(8, 200));
  s.output = b.add_tensor(spec({1, 3, 4, 4}, DType::Int8x4, MemoryLayout::PackedInt8_4W4C), "y");
  s.i = b.add_int(-42);
  s.f = b.add_float(0.125);
  s.t = b.add_bool(true);
  s.ints = b.add_int_list({1, -2, 3});
  s.floats = b.add_float_list({0.5, -1.5});
  s.str = b.add_string("nearest");
  s.list = b.add_value_list({s.weight, s.bias});
  b.add_op("quantize", {s.input, s.f, s.i, s.output});
  b.add_op("mix", {s.output, s.list, s.ints, s.floats, s.str, s.t, s.idx});
  b.set_inputs({s.input}, {"image"});
  b.set_outputs({s.output}, {"logits"});
}

Bytes sample_blob() {
  Sample s;
  build_sample(s);
  return s.b.finish();
}

OpSignatureTable sample_ops() {
  using K = ValueKind;
  return {{"quantize", {{K::Tensor, K::Float, K::Int, K::Tensor}}},
          {"mix",
           {{K::Tensor, K::ValueList, K::IntList, K::FloatList, K::String, K::Bool, K::Tensor}}}};
}

Bytes sealed(Bytes blob) {
  seal_blob(blob);
  return blob;
}

// The error message of deserialize(blob) exactly as given, or "" when it succeeds. Every
// failure must be an InvalidArgument vkd::Error.
std::string unsealed_error_of(const Bytes& blob, const OpSignatureTable* ops = nullptr) {
  try {
    deserialize(blob, ops);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    return e.what();
  }
  return "";
}

// The same for the blob resealed: what its (patched) contents alone make deserialize say.
std::string error_of(const Bytes& blob, const OpSignatureTable* ops = nullptr) {
  return unsealed_error_of(sealed(blob), ops);
}

// Success when deserialize(blob) fails with a message containing `substr`.
::testing::AssertionResult fails_with(const Bytes& blob, const std::string& substr,
                                      const OpSignatureTable* ops = nullptr) {
  const std::string msg = error_of(blob, ops);
  if (msg.empty()) return ::testing::AssertionFailure() << "no error; expected '" << substr << "'";
  if (msg.find(substr) == std::string::npos) {
    return ::testing::AssertionFailure() << "message '" << msg << "' lacks '" << substr << "'";
  }
  return ::testing::AssertionSuccess();
}

#define EXPECT_BLOB_ERROR(...) EXPECT_TRUE(fails_with(__VA_ARGS__))

// The same, for the blob exactly as given (not resealed).
::testing::AssertionResult fails_unsealed_with(const Bytes& blob, const std::string& substr) {
  const std::string msg = unsealed_error_of(blob);
  if (msg.empty()) return ::testing::AssertionFailure() << "no error; expected '" << substr << "'";
  if (msg.find(substr) == std::string::npos) {
    return ::testing::AssertionFailure() << "message '" << msg << "' lacks '" << substr << "'";
  }
  return ::testing::AssertionSuccess();
}

#define EXPECT_UNSEALED_BLOB_ERROR(...) EXPECT_TRUE(fails_unsealed_with(__VA_ARGS__))

BlobHeader header_of(const Bytes& blob) { return parse_header(blob.data(), blob.size()); }

void patch32(Bytes& blob, size_t offset, uint32_t v) { store_le32(blob.data() + offset, v); }
void patch64(Bytes& blob, size_t offset, uint64_t v) { store_le64(blob.data() + offset, v); }

// Builds a one-tensor graph (optionally with a constant) for the tensor-validation tests.
Bytes single_tensor_blob(const TensorSpec& s, std::optional<Bytes> constant = std::nullopt) {
  GraphBuilder b;
  b.add_tensor(s, "t", std::move(constant));
  return b.finish();
}

// Just enough of the FlatBuffers wire format to reach fields GraphBuilder always writes right
// (schema version, constant ids, vector lengths and offsets) and corrupt them. Positions are
// byte offsets into the blob. Field indices are declaration order in schema.fbs.
namespace graph_field {
constexpr size_t kSchemaVersion = 0, kValues = 1, kInputs = 3, kOutputs = 5, kConstants = 7;
}
constexpr size_t kValuePayload = 1;      // Value.value (the union's table)
constexpr size_t kTensorSizes = 0;       // TensorValue.sizes
constexpr size_t kTensorConstantId = 4;  // TensorValue.constant_id
constexpr size_t kListItems = 0;         // IntListValue.items, FloatListValue.items

class FlatbufferPatcher {
 public:
  explicit FlatbufferPatcher(Bytes& blob)
      : b_(blob), base_(static_cast<size_t>(header_of(blob).flatbuffer_offset)) {}

  size_t root() const { return deref(base_); }
  // Where the uoffset stored at `pos` points (a table, vector or string).
  size_t deref(size_t pos) const { return pos + u32(pos); }
  // The vtable slot of field `index` of the table at `table` (its value: the field's offset
  // in the table, 0 when absent).
  size_t vtable_slot(size_t table, size_t index) const {
    const auto soffset = static_cast<int32_t>(u32(table));
    const size_t vtable = static_cast<size_t>(static_cast<int64_t>(table) - soffset);
    EXPECT_LT(4 + 2 * index, u16(vtable)) << "field " << index << " outside the vtable";
    return vtable + 4 + 2 * index;
  }
  // Position of field `index` of the table at `table`; the field must be present.
  size_t field(size_t table, size_t index) const {
    const size_t off = u16(vtable_slot(table, index));
    EXPECT_NE(off, 0u) << "field " << index << " is absent";
    return table + off;
  }
  size_t graph_field(size_t index) const { return field(root(), index); }
  // The payload table of value `id` (a TensorValue, IntListValue, ...).
  size_t value_payload(size_t id) const {
    const size_t values = deref(graph_field(graph_field::kValues));
    const size_t value = deref(values + 4 + 4 * id);
    return deref(field(value, kValuePayload));
  }
  // Offset of `pos` from the start of the flatbuffer (alignment is relative to it).
  size_t in_flatbuffer(size_t pos) const { return pos - base_; }

  uint16_t u16(size_t pos) const { return static_cast<uint16_t>(b_[pos] | b_[pos + 1] << 8); }
  uint32_t u32(size_t pos) const { return load_le32(&b_[pos]); }
  void set_u16(size_t pos, uint16_t v) {
    b_[pos] = static_cast<uint8_t>(v);
    b_[pos + 1] = static_cast<uint8_t>(v >> 8);
  }
  void set_u32(size_t pos, uint32_t v) { store_le32(&b_[pos], v); }
  void set_u64(size_t pos, uint64_t v) { store_le64(&b_[pos], v); }

 private:
  Bytes& b_;
  size_t base_;
};

// Moves the 8-byte-element vector that the uoffset at `field_pos` points to 4 bytes later, so
// its elements sit at 4 mod 8. The new length is the low half of element 0, which the caller
// sets to 1 so the vector stays inside the flatbuffer and passes the FlatBuffers verifier.
void misalign_wide_vector(FlatbufferPatcher& p, size_t field_pos) {
  const size_t vec = p.deref(field_pos);
  ASSERT_EQ(p.in_flatbuffer(vec + 4) % 8, 0u) << "the builder aligns 8-byte elements";
  ASSERT_EQ(p.u32(vec + 4), 1u) << "element 0 must start with the 32-bit value 1";
  p.set_u32(field_pos, p.u32(field_pos) + 4);
}

// ---------------------------------------------------------------------------------------------
TEST(Serialization, RoundTripEveryValueKind) {
  Sample s;
  build_sample(s);
  const Bytes blob = s.b.finish();
  const OpSignatureTable ops = sample_ops();
  const DeserializedGraph g = deserialize(blob, &ops);

  EXPECT_EQ(g.schema_version, kGraphSchemaVersion);
  ASSERT_EQ(g.values.size(), s.b.value_count());

  const auto& x = std::get<TensorValue>(g.values[s.input]);
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.spec.sizes, (std::vector<int64_t>{1, 3, 4, 4}));
  EXPECT_EQ(x.spec.dtype, DType::Float32);
  EXPECT_FALSE(x.constant.has_value());

  const auto& w = std::get<TensorValue>(g.values[s.weight]);
  ASSERT_TRUE(w.constant.has_value());
  EXPECT_EQ(Bytes(w.constant->data, w.constant->data + w.constant->size), iota_bytes(12, 1));
  EXPECT_EQ(w.constant->offset % kConstantAlignment, 0u);
  EXPECT_EQ(w.constant->data, blob.data() + w.constant->offset);  // a view, not a copy

  const auto& bias = std::get<TensorValue>(g.values[s.bias]);
  EXPECT_EQ(bias.spec.storage, StorageType::Texture3D);
  EXPECT_EQ(bias.spec.layout, MemoryLayout::ChannelsPacked);
  ASSERT_TRUE(bias.constant.has_value());
  EXPECT_EQ(Bytes(bias.constant->data, bias.constant->data + 16), iota_bytes(16, 100));
  EXPECT_EQ(bias.constant->offset % kConstantAlignment, 0u);

  const auto& idx = std::get<TensorValue>(g.values[s.idx]);
  EXPECT_EQ(idx.name, "");
  ASSERT_TRUE(idx.constant.has_value());
  EXPECT_EQ(Bytes(idx.constant->data, idx.constant->data + 8), iota_bytes(8, 200));

  const auto& y = std::get<TensorValue>(g.values[s.output]);
  EXPECT_EQ(y.spec.dtype, DType::Int8x4);
  EXPECT_EQ(y.spec.layout, MemoryLayout::PackedInt8_4W4C);

  EXPECT_EQ(std::get<IntValue>(g.values[s.i]).value, -42);
  EXPECT_EQ(std::get<FloatValue>(g.values[s.f]).value, 0.125);
  EXPECT_TRUE(std::get<BoolValue>(g.values[s.t]).value);
  EXPECT_EQ(std::get<IntListValue>(g.values[s.ints]).items, (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(std::get<FloatListValue>(g.values[s.floats]).items, (std::vector<double>{0.5, -1.5}));
  EXPECT_EQ(std::get<StringValue>(g.values[s.str]).value, "nearest");
  EXPECT_EQ(std::get<ValueListValue>(g.values[s.list]).items,
            (std::vector<ValueId>{s.weight, s.bias}));
  EXPECT_EQ(kind_of(g.values[s.list]), ValueKind::ValueList);

  ASSERT_EQ(g.ops.size(), 2u);
  EXPECT_EQ(g.ops[0].name, "quantize");
  EXPECT_EQ(g.ops[0].args, (std::vector<ValueId>{s.input, s.f, s.i, s.output}));
  EXPECT_EQ(g.ops[1].name, "mix");
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].value, s.input);
  EXPECT_EQ(g.inputs[0].name, "image");
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0].value, s.output);
  EXPECT_EQ(g.outputs[0].name, "logits");

  // The same blob also reads without a signature table.
  EXPECT_EQ(deserialize(blob).ops.size(), 2u);
}

TEST(Serialization, BlobLayoutMatchesReadme) {
  const Bytes blob = sample_blob();
  ASSERT_GE(blob.size(), kBlobHeaderSize);
  EXPECT_EQ(std::memcmp(blob.data(), "VKDB", 4), 0);
  const BlobHeader h = header_of(blob);
  EXPECT_EQ(h.header_version, 2u);
  EXPECT_EQ(h.header_size, 88u);
  EXPECT_EQ(h.flatbuffer_offset, 96u);  // the header rounded up to 16 bytes
  EXPECT_EQ(std::memcmp(blob.data() + h.flatbuffer_offset + 4, "VKDG", 4), 0);
  EXPECT_EQ(h.constant_offset % kConstantAlignment, 0u);
  EXPECT_GE(h.constant_offset, h.flatbuffer_offset + h.flatbuffer_size);
  EXPECT_EQ(h.constant_offset + h.constant_size, blob.size());
  // 12 (w) pad to 16, 16 (b), 8 (idx): 16 + 16 + 8.
  EXPECT_EQ(h.constant_size, 40u);
  // Version 2: the blob's size, no graph hash (none given), the three checksums as README
  // defines them, computed here from the bytes.
  EXPECT_EQ(h.blob_size, blob.size());
  EXPECT_EQ(h.source_graph_hash, 0u);
  EXPECT_EQ(h.graph_checksum, xxh64(blob.data() + h.flatbuffer_offset, h.flatbuffer_size));
  EXPECT_EQ(h.constant_checksum, xxh64(blob.data() + h.constant_offset, h.constant_size));
  Bytes header(blob.begin(), blob.begin() + 88);
  std::memset(header.data() + 64, 0, 8);
  EXPECT_EQ(h.header_checksum, xxh64(header.data(), header.size()));
  EXPECT_EQ(load_le64(blob.data() + 64), h.header_checksum);
  // Everything else is zero padding.
  for (size_t i = 88; i < 96; ++i) EXPECT_EQ(blob[i], 0) << i;
  for (size_t i = h.flatbuffer_offset + h.flatbuffer_size; i < h.constant_offset; ++i) {
    EXPECT_EQ(blob[i], 0) << i;
  }
}

TEST(Serialization, SourceGraphHashRoundTrip) {
  Sample s;
  build_sample(s);
  s.b.set_source_graph_hash(0x0123456789abcdefull);
  const Bytes blob = s.b.finish();
  EXPECT_EQ(header_of(blob).source_graph_hash, 0x0123456789abcdefull);
  EXPECT_EQ(deserialize(blob).source_graph_hash, 0x0123456789abcdefull);
  EXPECT_EQ(deserialize(blob).header_version, 2u);
}

TEST(Serialization, DeterministicBytes) {
  const Bytes a = sample_blob();
  const Bytes b = sample_blob();
  EXPECT_EQ(a, b);
  Sample s;
  build_sample(s);
  EXPECT_EQ(s.b.finish(), s.b.finish());
}

TEST(Serialization, EmptyGraphAndNoConstants) {
  GraphBuilder b;
  const Bytes blob = b.finish();
  const DeserializedGraph g = deserialize(blob);
  EXPECT_TRUE(g.values.empty());
  EXPECT_TRUE(g.ops.empty());
  EXPECT_EQ(header_of(blob).constant_size, 0u);
}

TEST(Serialization, MisalignedBlobIsReadThroughACopy) {
  const Bytes blob = sample_blob();
  Bytes shifted(blob.size() + 1);
  std::memcpy(shifted.data() + 1, blob.data(), blob.size());
  const DeserializedGraph g = deserialize(shifted.data() + 1, blob.size());
  EXPECT_EQ(g.values.size(), 12u);
  const auto& w = std::get<TensorValue>(g.values[1]);
  EXPECT_EQ(w.constant->data, shifted.data() + 1 + w.constant->offset);
}

TEST(Serialization, BuilderRejectsMismatchedNames) {
  GraphBuilder b;
  const ValueId x = b.add_tensor(spec({4}, DType::Float32));
  EXPECT_THROW(b.set_inputs({x}, {"a", "b"}), Error);
  EXPECT_THROW(b.set_outputs({x}, {"a", "b"}), Error);
}

// --- header -----------------------------------------------------------------------------------
TEST(BlobHeader, EncodeParseRoundTrip) {
  BlobHeader h;
  h.flatbuffer_offset = 96;
  h.flatbuffer_size = 100;
  h.constant_offset = 208;
  h.constant_size = 32;
  h.source_graph_hash = 77;
  Bytes blob(240, 0);
  encode_header(h, blob.data());
  seal_blob(blob);
  const BlobHeader r = header_of(blob);
  EXPECT_EQ(r.header_version, 2u);
  EXPECT_EQ(r.flatbuffer_offset, 96u);
  EXPECT_EQ(r.flatbuffer_size, 100u);
  EXPECT_EQ(r.constant_offset, 208u);
  EXPECT_EQ(r.constant_size, 32u);
  EXPECT_EQ(r.blob_size, 240u);
  EXPECT_EQ(r.source_graph_hash, 77u);
  EXPECT_EQ(blob[header_field::kFlatbufferSize], 100);  // little-endian
  EXPECT_EQ(blob[header_field::kSourceGraphHash], 77);

  BlobHeader v1;  // a version 1 header: 48 bytes, no checksums
  v1.header_version = 1;
  v1.header_size = 48;
  v1.flatbuffer_offset = 48;
  v1.flatbuffer_size = 100;
  v1.constant_offset = 160;
  v1.constant_size = 32;
  Bytes old(192, 0xee);
  encode_header(v1, old.data());
  EXPECT_EQ(old[48], 0xee) << "a version 1 header is 48 bytes";
  const BlobHeader r1 = header_of(old);
  EXPECT_EQ(r1.header_version, 1u);
  EXPECT_EQ(r1.constant_offset, 160u);
  EXPECT_EQ(r1.blob_size, 0u);
}

TEST(BlobHeader, TruncatedAtEveryField) {
  const Bytes blob = sample_blob();
  for (size_t len = 0; len < kBlobHeaderSize; ++len) {
    const char* field = len < 4    ? "magic"
                        : len < 8  ? "header_version"
                        : len < 12 ? "header_size"
                        : len < 16 ? "reserved"
                        : len < 24 ? "flatbuffer_offset"
                        : len < 32 ? "flatbuffer_size"
                        : len < 40 ? "constant_offset"
                        : len < 48 ? "constant_size"
                        : len < 56 ? "blob_size"
                        : len < 64 ? "source_graph_hash"
                        : len < 72 ? "header_checksum"
                        : len < 80 ? "graph_checksum"
                                   : "constant_checksum";
    const Bytes cut(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(len));
    SCOPED_TRACE("length " + std::to_string(len));
    EXPECT_BLOB_ERROR(cut, std::string("truncated header: field '") + field + "'");
    EXPECT_BLOB_ERROR(cut, "the blob has " + std::to_string(len) + " bytes");
  }
  // Cut just after the header: the size the header records says so.
  const Bytes cut(blob.begin(), blob.begin() + kBlobHeaderSize);
  EXPECT_UNSEALED_BLOB_ERROR(cut, "blob: the header records " + std::to_string(blob.size()) +
                                      " bytes, the blob has 88: it was truncated");
  // Resealed (as if written that short), the flatbuffer no longer fits.
  EXPECT_BLOB_ERROR(cut, "blob: flatbuffer [96, ");
}

TEST(BlobHeader, WrongMagic) {
  const Bytes good = sample_blob();
  for (size_t i = 0; i < 4; ++i) {  // every magic byte is checked, not just the first
    Bytes blob = good;
    blob[i] = 'X';
    std::string bytes = "0x56 0x4b 0x44 0x42";
    bytes.replace(5 * i + 2, 2, "58");
    EXPECT_BLOB_ERROR(
        blob, "blob: bad magic bytes " + bytes + " (expected 'VKDB'; not a vkdelegate blob)");
  }
}

TEST(BlobHeader, BadHeaderVersion) {
  for (uint32_t version : {0u, 3u, 0x01000002u}) {
    Bytes blob = sample_blob();
    patch32(blob, header_field::kHeaderVersion, version);
    EXPECT_BLOB_ERROR(blob, "header version " + std::to_string(version) +
                                " not supported (this build reads 1 and 2)");
  }
}

TEST(BlobHeader, HeaderSizeTooSmallOrPastTheEnd) {
  Bytes blob = sample_blob();
  patch32(blob, header_field::kHeaderSize, 40);
  EXPECT_BLOB_ERROR(blob, "header size 40 is smaller than the 88 bytes of header version 2");
  patch32(blob, header_field::kHeaderSize, 1u << 30);
  EXPECT_BLOB_ERROR(blob, "header size 1073741824 extends past the end");
  // Version 1 headers were all 48 bytes: a version 2 blob whose version field says 1 is not
  // read as an old blob (which would skip its checksums).
  Bytes old = sample_blob();
  patch32(old, header_field::kHeaderVersion, 1);
  EXPECT_BLOB_ERROR(old, "header size 88 is not the 48 bytes of header version 1");
}

TEST(BlobHeader, FlatbufferPastTheEnd) {
  const Bytes blob = sample_blob();
  const std::string end = "-byte blob";
  Bytes a = blob;
  patch64(a, header_field::kFlatbufferOffset, blob.size() + 16);
  EXPECT_BLOB_ERROR(a, "blob: flatbuffer [" + std::to_string(blob.size() + 16));
  EXPECT_BLOB_ERROR(a, "extends past the end of the " + std::to_string(blob.size()) + end);
  Bytes b = blob;
  patch64(b, header_field::kFlatbufferSize, blob.size());
  EXPECT_BLOB_ERROR(b, "blob: flatbuffer [96, " + std::to_string(96 + blob.size()) + ")");
  Bytes c = blob;  // offset + size wraps around 2^64
  patch64(c, header_field::kFlatbufferSize, UINT64_MAX - 8);
  EXPECT_BLOB_ERROR(c, "blob: flatbuffer [96, 96 + ");
  Bytes d = blob;
  patch64(d, header_field::kFlatbufferSize, 0);
  EXPECT_BLOB_ERROR(d, "blob: flatbuffer is empty");
}

TEST(BlobHeader, ConstantSegmentPastTheEnd) {
  Bytes blob = sample_blob();
  const BlobHeader h = header_of(blob);
  Bytes a = blob;
  patch64(a, header_field::kConstantSize, h.constant_size + 1);
  EXPECT_BLOB_ERROR(a, "blob: constant segment [" + std::to_string(h.constant_offset) + ", " +
                           std::to_string(h.constant_offset + h.constant_size + 1) +
                           ") extends past the end of the " + std::to_string(blob.size()) +
                           "-byte blob");
  Bytes b = blob;
  patch64(b, header_field::kConstantOffset, UINT64_MAX - 15);
  EXPECT_BLOB_ERROR(b, "blob: constant segment [18446744073709551600, ");
}

TEST(BlobHeader, OverlappingSegments) {
  const Bytes blob = sample_blob();
  const BlobHeader h = header_of(blob);
  Bytes a = blob;  // constant segment starts inside the flatbuffer
  patch64(a, header_field::kConstantOffset, h.flatbuffer_offset + 16);
  EXPECT_BLOB_ERROR(a, "blob: flatbuffer [96, " +
                           std::to_string(h.flatbuffer_offset + h.flatbuffer_size) +
                           ") and constant segment [112, ");
  EXPECT_BLOB_ERROR(a, ") overlap");
  Bytes b = blob;  // flatbuffer starts inside the header
  patch64(b, header_field::kFlatbufferOffset, 16);
  EXPECT_BLOB_ERROR(b, "blob: flatbuffer [16, ");
  EXPECT_BLOB_ERROR(b, "overlaps the header [0, 88)");
  Bytes c = blob;  // constant segment inside the header
  patch64(c, header_field::kConstantOffset, 0);
  EXPECT_BLOB_ERROR(c, "blob: constant segment [0, 40) overlaps the header");
  Bytes d = blob;  // constant segment (aligned, after the header) covers the whole flatbuffer
  patch64(d, header_field::kConstantOffset, 96);
  patch64(d, header_field::kConstantSize, blob.size() - 96);
  EXPECT_BLOB_ERROR(
      d, "blob: flatbuffer [96, " + std::to_string(h.flatbuffer_offset + h.flatbuffer_size) +
             ") and constant segment [96, " + std::to_string(blob.size()) + ") overlap");
}

TEST(BlobHeader, MisalignedConstantSegment) {
  Bytes blob = sample_blob();
  const BlobHeader h = header_of(blob);
  patch64(blob, header_field::kConstantOffset, h.constant_offset + 8);
  patch64(blob, header_field::kConstantSize, h.constant_size - 8);
  EXPECT_BLOB_ERROR(blob, "constant segment offset " + std::to_string(h.constant_offset + 8) +
                              " is not 16-byte aligned");
}

// --- XXH64 (serialization/Xxh64.h) -----------------------------------------------------------
// The published test vectors: xxHash's own sanity check (xxhsum.c, BMK_sanityCheck) over its
// generated 101-byte buffer, seeds 0 and 2654435761, lengths 0 / 1 / 14 / 101 (every path:
// 32-byte stripes, 8-, 4- and 1-byte tails), and the strings "a" and "abc".
TEST(Xxh64, PublishedTestVectors) {
  constexpr uint32_t kPrime = 2654435761u;
  uint8_t buffer[101];
  uint32_t gen = kPrime;
  for (uint8_t& b : buffer) {
    b = static_cast<uint8_t>(gen >> 24);
    gen *= gen;
  }
  struct Vector {
    size_t length;
    uint64_t seed, hash;
  };
  const Vector vectors[] = {{0, 0, 0xEF46DB3751D8E999ull},   {0, kPrime, 0xAC75FDA2929B17EFull},
                            {1, 0, 0x4FCE394CC88952D8ull},   {1, kPrime, 0x739840CB819FA723ull},
                            {14, 0, 0xCFFA8DB881BC3A3Dull},  {14, kPrime, 0x5B9611585EFCC9CBull},
                            {101, 0, 0x0EAB543384F878ADull}, {101, kPrime, 0xCAA65939306F1E21ull}};
  for (const Vector& v : vectors) {
    EXPECT_EQ(xxh64(buffer, v.length, v.seed), v.hash) << v.length << " bytes, seed " << v.seed;
    Xxh64 bytewise(v.seed);  // the streaming form, one byte per update
    for (size_t i = 0; i < v.length; ++i) bytewise.update(buffer + i, 1);
    EXPECT_EQ(bytewise.digest(), v.hash) << v.length << " bytes, seed " << v.seed;
  }
  EXPECT_EQ(xxh64("a", 1), 0xD24EC4F1A98C6E5Bull);
  EXPECT_EQ(xxh64("abc", 3), 0x44BC2CF5AD770999ull);
  EXPECT_EQ(hash_string(0x44BC2CF5AD770999ull), "0x44bc2cf5ad770999");
}

TEST(Xxh64, PiecesGiveTheWholeDigest) {
  const Bytes data = iota_bytes(1000, 7);
  const uint64_t whole = xxh64(data.data(), data.size());
  std::mt19937 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    Xxh64 h;
    for (size_t at = 0; at < data.size();) {
      const size_t n = std::min<size_t>(data.size() - at, rng() % 70);
      h.update(data.data() + at, n);
      at += n;
    }
    EXPECT_EQ(h.digest(), whole);
  }
  Xxh64 words;  // update_u64: the value's little-endian bytes
  words.update_u64(0x0807060504030201ull);
  const uint8_t bytes[] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(words.digest(), xxh64(bytes, 8));
}

// --- integrity: checksums, size, padding (blobs read as they are, never resealed) --------------
// A blob as compiled models are: mostly weights.
Bytes weighty_blob() {
  Sample s;
  build_sample(s);
  Bytes weights(64 * 1024);
  std::mt19937 rng(1);
  for (uint8_t& b : weights) b = static_cast<uint8_t>(rng());
  s.b.add_tensor(spec({64, 1024}, DType::Int8), "big_w", weights);
  return s.b.finish();
}

// The probe: of 20 blobs with 3 random bit flips each, 10 loaded with altered weights.
// Every such blob must be refused, here 300 of them, with 1, 2 and 3 flips.
TEST(BlobIntegrity, RandomBitFlipsAreAllRefused) {
  const Bytes good = weighty_blob();
  ASSERT_EQ(unsealed_error_of(good), "");
  std::mt19937_64 rng(31);
  std::map<std::string, int> regions;  // what the refusals named
  for (int trial = 0; trial < 300; ++trial) {
    Bytes bad = good;
    std::set<uint64_t> bits;
    while (bits.size() < static_cast<size_t>(1 + trial % 3)) bits.insert(rng() % (good.size() * 8));
    for (const uint64_t bit : bits) bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    const std::string error = unsealed_error_of(bad);
    EXPECT_NE(error, "") << "trial " << trial << ": flipped bits " << *bits.begin() << "... loaded";
    for (const char* region : {"header", "flatbuffer", "constant segment", "padding"}) {
      if (error.find(region) != std::string::npos) ++regions[region];
    }
  }
  // Most bits are weights; their mismatch names the constant segment.
  EXPECT_GT(regions["constant segment"], 250)
      << "header " << regions["header"] << ", flatbuffer " << regions["flatbuffer"];
}

TEST(BlobIntegrity, EachRegionIsNamed) {
  const Bytes good = weighty_blob();
  const BlobHeader h = header_of(good);
  const auto flipped = [&](uint64_t byte) {
    Bytes b = good;
    b[byte] ^= 0x10;
    return b;
  };
  const std::string fb = "[96, " + std::to_string(96 + h.flatbuffer_size) + ")";
  const std::string cs =
      "[" + std::to_string(h.constant_offset) + ", " + std::to_string(good.size()) + ")";
  // Any header field, the checksums included: the header checksum, before any offset is used.
  for (const size_t field : {header_field::kFlatbufferSize, header_field::kConstantOffset,
                             header_field::kSourceGraphHash, header_field::kHeaderChecksum,
                             header_field::kGraphChecksum, header_field::kConstantChecksum}) {
    EXPECT_UNSEALED_BLOB_ERROR(flipped(field + 1), "blob: header checksum mismatch (recorded 0x");
    EXPECT_UNSEALED_BLOB_ERROR(flipped(field + 1), "): the header [0, 88) is corrupt");
  }
  EXPECT_UNSEALED_BLOB_ERROR(flipped(h.flatbuffer_offset + h.flatbuffer_size / 2),
                             "blob: flatbuffer " + fb + " checksum mismatch (recorded " +
                                 hash_string(h.graph_checksum) + ", computed 0x");
  EXPECT_UNSEALED_BLOB_ERROR(flipped(h.flatbuffer_offset + 10), "): the graph is corrupt");
  EXPECT_UNSEALED_BLOB_ERROR(flipped(good.size() - 1),
                             "blob: constant segment " + cs + " checksum mismatch (recorded " +
                                 hash_string(h.constant_checksum) + ", computed 0x");
  EXPECT_UNSEALED_BLOB_ERROR(flipped(h.constant_offset),
                             "): the constant data (weights) is corrupt");
  // Padding: after the header, and between the flatbuffer and the constants.
  EXPECT_UNSEALED_BLOB_ERROR(flipped(90),
                             "blob: padding byte 90 (outside the header and both "
                             "segments) is 16, not 0: the blob is corrupt");
  const uint64_t fb_end = h.flatbuffer_offset + h.flatbuffer_size;
  ASSERT_LT(fb_end, h.constant_offset) << "the sample's flatbuffer should need padding";
  EXPECT_UNSEALED_BLOB_ERROR(flipped(fb_end), "blob: padding byte " + std::to_string(fb_end));
  // The magic and the version are checked before the checksum (another file, a newer blob).
  EXPECT_UNSEALED_BLOB_ERROR(flipped(0), "bad magic bytes");
  EXPECT_UNSEALED_BLOB_ERROR(flipped(header_field::kHeaderVersion), "header version 18");
}

TEST(BlobIntegrity, TruncatedOrExtendedIsRefused) {
  const Bytes good = weighty_blob();
  const std::string records = "blob: the header records " + std::to_string(good.size()) + " bytes";
  for (const size_t cut : {size_t{1}, size_t{100}, good.size() / 2}) {
    const Bytes b(good.begin(), good.end() - static_cast<std::ptrdiff_t>(cut));
    EXPECT_UNSEALED_BLOB_ERROR(
        b, records + ", the blob has " + std::to_string(b.size()) + ": it was truncated");
  }
  for (const size_t extra : {size_t{1}, size_t{16}, good.size()}) {
    Bytes b = good;
    b.resize(good.size() + extra, 0);  // zeros: what an over-long read or copy leaves
    EXPECT_UNSEALED_BLOB_ERROR(
        b, records + ", the blob has " + std::to_string(b.size()) + ": bytes were appended to it");
  }
}

// A blob from before header version 2 (vkdelegate 0.1.0): a 48-byte header and nothing to
// verify. It still loads, with the same graph.
TEST(BlobIntegrity, Version1BlobsStillRead) {
  const Bytes v2 = weighty_blob();
  Bytes v1 = v2;
  patch32(v1, header_field::kHeaderVersion, 1);
  patch32(v1, header_field::kHeaderSize, 48);
  std::fill(v1.begin() + 48, v1.begin() + 96, 0);  // the version 2 fields: now padding
  const OpSignatureTable ops = sample_ops();
  const DeserializedGraph old = deserialize(v1, &ops);
  const DeserializedGraph now = deserialize(v2, &ops);
  EXPECT_EQ(old.header_version, 1u);
  EXPECT_EQ(old.source_graph_hash, 0u);
  ASSERT_EQ(old.values.size(), now.values.size());
  const auto& w_old = std::get<TensorValue>(old.values.back());
  const auto& w_now = std::get<TensorValue>(now.values.back());
  EXPECT_EQ(w_old.name, "big_w");
  EXPECT_EQ(std::memcmp(w_old.constant->data, w_now.constant->data, w_now.constant->size), 0);
  // seal_blob leaves a version 1 blob alone.
  Bytes resealed = v1;
  seal_blob(resealed);
  EXPECT_EQ(resealed, v1);
}

// seal_blob on bytes that are not a complete version 2 blob: no write outside them (ASan),
// and segments outside the blob keep their old checksums.
TEST(BlobIntegrity, SealLeavesWhatItCannotReadAlone) {
  const Bytes good = sample_blob();
  for (size_t len : {size_t{0}, size_t{10}, size_t{87}}) {
    Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len));
    const Bytes before = cut;
    seal_blob(cut);
    EXPECT_EQ(cut, before) << len;
  }
  seal_blob(nullptr, 0);
  Bytes far = good;
  patch64(far, header_field::kConstantOffset, UINT64_MAX - 15);
  seal_blob(far);
  EXPECT_EQ(load_le64(&far[header_field::kConstantChecksum]),
            load_le64(&good[header_field::kConstantChecksum]));
  EXPECT_UNSEALED_BLOB_ERROR(far, "blob: constant segment [18446744073709551600, ");
}

// --- flatbuffer -------------------------------------------------------------------------------
TEST(Serialization, FlatbufferIdentifierAndVerifier) {
  const Bytes blob = sample_blob();
  const BlobHeader h = header_of(blob);
  Bytes a = blob;
  a[h.flatbuffer_offset + 4] = 'X';
  EXPECT_BLOB_ERROR(a, "flatbuffer: file identifier 'XKDG' is not 'VKDG'");

  Bytes b = blob;  // root table offset points far outside the flatbuffer
  patch32(b, h.flatbuffer_offset, 0x7ffffff0u);
  EXPECT_BLOB_ERROR(b, "flatbuffer: FlatBuffers verification failed");

  // The flatbuffer cut short, what is cut off zeroed (padding must be zero).
  const auto shortened = [&](uint64_t size) {
    Bytes cut = blob;
    patch64(cut, header_field::kFlatbufferSize, size);
    std::fill(cut.begin() + static_cast<std::ptrdiff_t>(h.flatbuffer_offset + size),
              cut.begin() + static_cast<std::ptrdiff_t>(h.flatbuffer_offset + h.flatbuffer_size),
              0);
    return cut;
  };
  // Tables now reach past its end.
  EXPECT_BLOB_ERROR(shortened(12), "flatbuffer: FlatBuffers verification failed");
  EXPECT_BLOB_ERROR(shortened(6), "flatbuffer: 6 bytes is too small");
}

// Every single-byte corruption of the flatbuffer either still reads or fails with a
// vkd::Error: never a crash, never another exception (run under ASan/UBSan too).
TEST(Serialization, CorruptFlatbufferBytesNeverCrash) {
  const Bytes blob = sample_blob();
  const BlobHeader h = header_of(blob);
  const OpSignatureTable ops = sample_ops();
  size_t failures = 0;
  for (uint64_t i = h.flatbuffer_offset; i < h.flatbuffer_offset + h.flatbuffer_size; ++i) {
    for (uint8_t flip : {uint8_t{0xff}, uint8_t{0x80}, uint8_t{0x01}}) {
      Bytes bad = blob;
      bad[i] ^= flip;
      seal_blob(bad);  // (else every one is a checksum mismatch)
      try {
        deserialize(bad, &ops);
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
        ++failures;
      }
    }
  }
  EXPECT_GT(failures, 0u);
}

// --- values -----------------------------------------------------------------------------------
// IntValue{0} and FloatValue{0.0} serialize to the same tables (default fields are omitted), so
// the two blobs differ only in the value's union type byte: patch it to craft bad kinds.
TEST(Serialization, UnknownValueKind) {
  GraphBuilder a, b;
  a.add_int(0);
  b.add_float(0.0);
  Bytes blob = a.finish();
  const Bytes other = b.finish();
  ASSERT_EQ(blob.size(), other.size());
  size_t diff = 0, at = 0;
  const BlobHeader h = header_of(blob);  // (the checksums in the header differ too)
  for (size_t i = h.flatbuffer_offset; i < h.flatbuffer_offset + h.flatbuffer_size; ++i) {
    if (blob[i] != other[i]) ++diff, at = i;
  }
  ASSERT_EQ(diff, 1u);
  blob[at] = 42;
  EXPECT_BLOB_ERROR(blob, "value 0: unknown value kind 42");
  blob[at] = 0;
  EXPECT_BLOB_ERROR(blob, "value 0: empty (union type NONE)");
}

// Each enum: the first number past the last known one, and the largest a ubyte holds.
TEST(Serialization, UnknownDType) {
  for (int v : {5, 255}) {
    EXPECT_BLOB_ERROR(single_tensor_blob(spec({4}, static_cast<DType>(v))),
                      "value 0 (tensor 't'): unknown dtype " + std::to_string(v));
  }
}

TEST(Serialization, UnknownStorageType) {
  for (int v : {2, 255}) {
    EXPECT_BLOB_ERROR(single_tensor_blob(spec({4}, DType::Float32, MemoryLayout::WidthPacked,
                                              static_cast<StorageType>(v))),
                      "value 0 (tensor 't'): unknown storage type " + std::to_string(v));
  }
}

TEST(Serialization, UnknownMemoryLayout) {
  for (int v : {6, 255}) {
    EXPECT_BLOB_ERROR(single_tensor_blob(spec({4}, DType::Float32, static_cast<MemoryLayout>(v))),
                      "value 0 (tensor 't'): unknown memory layout " + std::to_string(v));
  }
}

TEST(Serialization, UnsupportedSchemaVersion) {
  Bytes blob = sample_blob();
  FlatbufferPatcher p(blob);
  const size_t version = p.graph_field(graph_field::kSchemaVersion);
  ASSERT_EQ(p.u32(version), kGraphSchemaVersion);
  p.set_u32(version, 2);
  EXPECT_BLOB_ERROR(blob, "graph: schema version 2 not supported (this build reads 1)");
}

// The union type says "int" but the table is missing (its vtable slot zeroed).
TEST(Serialization, ValueWithoutPayload) {
  GraphBuilder b;
  b.add_int(7);
  Bytes blob = b.finish();
  FlatbufferPatcher p(blob);
  const size_t values = p.deref(p.graph_field(graph_field::kValues));
  const size_t value = p.deref(values + 4);
  p.set_u16(p.vtable_slot(value, kValuePayload), 0);
  EXPECT_BLOB_ERROR(blob, "value 0: kind 2 without a payload");
}

TEST(Serialization, IllegalLayoutForDtype) {
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({1, 4, 4, 4}, DType::Int8x4)),
                    "value 0 (tensor 't'): tensor [1,4,4,4]: int8x4 needs a packed int8 layout");
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({4, 4}, DType::Float32, MemoryLayout::PackedInt8_4H4W)),
                    "cannot use packed int8 layout");
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({1, 4, 4, 4}, DType::Int8x4,
                                            MemoryLayout::PackedInt8_4C1W, StorageType::Texture3D)),
                    "int8x4 needs buffer storage");
}

TEST(Serialization, BadTensorSizes) {
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({}, DType::Float32)), "rank 0 not in 1..4");
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({1, 2, 3, 4, 5}, DType::Float32)),
                    "rank 5 not in 1..4");
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({2, 0}, DType::Float32)), "size 0 in dim 1");
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({-3}, DType::Float32)), "size -3 in dim 0");
}

TEST(Serialization, ConstantSizeMustMatchTensor) {
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({3, 4}, DType::Int8), iota_bytes(11, 0)),
                    "value 0 (tensor 't'): constant 0 has 11 bytes, tensor [3,4] int8 buffer "
                    "width_packed needs 12");
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({3, 4}, DType::Float32), iota_bytes(12, 0)),
                    "constant 0 has 12 bytes, tensor [3,4] float32");
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({2}, DType::Int32), iota_bytes(12, 0)),
                    "constant 0 has 12 bytes, tensor [2] int32 buffer width_packed needs 8");
  // int8x4 constants are unpacked NCHW bytes: one per element.
  const Bytes ok = single_tensor_blob(
      spec({1, 3, 2, 2}, DType::Int8x4, MemoryLayout::PackedInt8_4C1W), iota_bytes(12, 0));
  EXPECT_EQ(error_of(ok), "");
}

TEST(Serialization, ConstantIdOutOfRange) {
  for (int32_t id : {1, 1000, -2}) {  // 1 == the constant count; -1 alone means "none"
    Bytes blob = single_tensor_blob(spec({4}, DType::Int8), iota_bytes(4, 0));
    FlatbufferPatcher p(blob);
    const size_t field = p.field(p.value_payload(0), kTensorConstantId);
    ASSERT_EQ(p.u32(field), 0u);
    p.set_u32(field, static_cast<uint32_t>(id));
    EXPECT_BLOB_ERROR(blob, "value 0 (tensor 't'): constant id " + std::to_string(id) +
                                " out of range (the graph has 1 constants)");
  }
}

// offset + length wraps around 2^64: the check must not add them.
TEST(Serialization, ConstantEntryOffsetWraps) {
  Bytes blob = single_tensor_blob(spec({3, 4}, DType::Int8), iota_bytes(12, 0));
  FlatbufferPatcher p(blob);
  const size_t entry0 = p.deref(p.graph_field(graph_field::kConstants)) + 4;
  ASSERT_EQ(load_le64(&blob[entry0 + 8]), 12u);  // (offset, length)
  p.set_u64(entry0, UINT64_MAX - 3);
  EXPECT_BLOB_ERROR(blob,
                    "constant 0: [18446744073709551612, 18446744073709551612 + 12) "
                    "extends past the end of the 12-byte constant segment");
}

TEST(Serialization, ConstantEntryPastTheSegment) {
  Bytes blob = sample_blob();
  const BlobHeader h = header_of(blob);
  // Shrink the segment so the last entry (idx: [32, 40)) no longer fits (and the blob, so
  // no padding is left where its bytes were).
  patch64(blob, header_field::kConstantSize, h.constant_size - 4);
  blob.resize(blob.size() - 4);
  EXPECT_BLOB_ERROR(blob,
                    "constant 2: [32, 32 + 8) extends past the end of the 36-byte "
                    "constant segment");
}

// Ids out of range, each at the first bad id (the value count: catches an off-by-one) and at
// the largest one.
constexpr ValueId kBadIds[] = {2, 99, UINT32_MAX};

TEST(Serialization, OpArgumentIdOutOfRange) {
  for (ValueId bad : kBadIds) {
    GraphBuilder b;
    const ValueId x = b.add_tensor(spec({4}, DType::Float32));
    b.add_int(0);
    b.add_op("relu", {x, bad});
    EXPECT_BLOB_ERROR(b.finish(), "op 0 'relu': argument 1 refers to value " + std::to_string(bad) +
                                      ", but the graph has 2 values");
  }
}

TEST(Serialization, InputIdOutOfRange) {
  for (ValueId bad : kBadIds) {
    GraphBuilder b;
    const ValueId x = b.add_tensor(spec({4}, DType::Float32));
    b.add_tensor(spec({4}, DType::Float32));
    b.set_inputs({x, bad});
    EXPECT_BLOB_ERROR(b.finish(), "input 1 refers to value " + std::to_string(bad) +
                                      ", but the graph has 2 values");
  }
}

TEST(Serialization, OutputIdOutOfRange) {
  for (ValueId bad : kBadIds) {
    GraphBuilder b;
    const ValueId x = b.add_tensor(spec({4}, DType::Float32));
    b.add_tensor(spec({4}, DType::Float32));
    b.set_outputs({bad, x});
    EXPECT_BLOB_ERROR(b.finish(), "output 0 refers to value " + std::to_string(bad) +
                                      ", but the graph has 2 values");
  }
}

TEST(Serialization, ValueListIdOutOfRange) {
  for (ValueId bad : kBadIds) {
    GraphBuilder b;
    b.add_int(1);
    b.add_value_list({0, 1, bad});  // a list may hold itself; only the range is checked
    EXPECT_BLOB_ERROR(b.finish(), "value 1 (value_list): item 2 refers to value " +
                                      std::to_string(bad) + ", but the graph has 2 values");
  }
}

// GraphBuilder refuses a name count that differs from the id count; cut the id vector instead.
TEST(Serialization, InputOutputNameCountMismatch) {
  GraphBuilder b;
  const ValueId x = b.add_tensor(spec({4}, DType::Float32));
  const ValueId y = b.add_tensor(spec({4}, DType::Float32));
  b.set_inputs({x}, {"in"});
  b.set_outputs({x, y}, {"a", "b"});
  const Bytes good = b.finish();
  {
    Bytes blob = good;
    FlatbufferPatcher p(blob);
    const size_t inputs = p.deref(p.graph_field(graph_field::kInputs));
    ASSERT_EQ(p.u32(inputs), 1u);
    p.set_u32(inputs, 0);
    EXPECT_BLOB_ERROR(blob, "graph: 1 input names for 0 inputs");
  }
  {
    Bytes blob = good;
    FlatbufferPatcher p(blob);
    const size_t outputs = p.deref(p.graph_field(graph_field::kOutputs));
    ASSERT_EQ(p.u32(outputs), 2u);
    p.set_u32(outputs, 1);
    EXPECT_BLOB_ERROR(blob, "graph: 2 output names for 1 outputs");
  }
}

// FlatBuffers 2.0's verifier does not check the alignment of 8-byte vector elements; reading
// them at 4 mod 8 is undefined behaviour (found by fuzz_deserialize under UBSan), so
// deserialize rejects such vectors.
TEST(Serialization, MisalignedWideVectors) {
  {
    GraphBuilder b;
    b.add_int_list({1, 5});
    Bytes blob = b.finish();
    FlatbufferPatcher p(blob);
    misalign_wide_vector(p, p.field(p.value_payload(0), kListItems));
    EXPECT_BLOB_ERROR(blob,
                      "value 0 (int_list): items vector is not 8-byte aligned in the "
                      "flatbuffer");
  }
  {
    GraphBuilder b;
    b.add_float_list({std::numeric_limits<double>::denorm_min(), 2.0});  // bits: 1
    Bytes blob = b.finish();
    FlatbufferPatcher p(blob);
    misalign_wide_vector(p, p.field(p.value_payload(0), kListItems));
    EXPECT_BLOB_ERROR(blob, "value 0 (float_list): items vector is not 8-byte aligned");
  }
  {
    Bytes blob = single_tensor_blob(spec({1, 4}, DType::Float32));
    FlatbufferPatcher p(blob);
    misalign_wide_vector(p, p.field(p.value_payload(0), kTensorSizes));
    EXPECT_BLOB_ERROR(blob, "value 0 (tensor 't'): sizes vector is not 8-byte aligned");
  }
  {
    GraphBuilder b;
    b.add_tensor(spec({4}, DType::Int8), "a", iota_bytes(4, 0));
    b.add_tensor(spec({4}, DType::Int8), "b", iota_bytes(4, 0));
    Bytes blob = b.finish();
    FlatbufferPatcher p(blob);
    const size_t field = p.graph_field(graph_field::kConstants);
    p.set_u64(p.deref(field) + 4, 1);  // entry 0's offset: 1, so the moved vector has 1 entry
    misalign_wide_vector(p, field);
    EXPECT_BLOB_ERROR(blob, "graph: constants vector is not 8-byte aligned");
  }
}

TEST(Serialization, InputsMustBeRuntimeTensors) {
  {
    GraphBuilder b;
    const ValueId i = b.add_int(3);
    b.set_inputs({i});
    EXPECT_BLOB_ERROR(b.finish(), "input 0 (value 0) is a int, not a tensor");
  }
  {
    GraphBuilder b;
    const ValueId w = b.add_tensor(spec({4}, DType::Int8), "w", iota_bytes(4, 0));
    b.set_inputs({w});
    EXPECT_BLOB_ERROR(b.finish(), "input 0 (value 0, tensor 'w') is a constant");
  }
}

// --- ops --------------------------------------------------------------------------------------
TEST(Serialization, UnknownOpWithTable) {
  GraphBuilder b;
  const ValueId x = b.add_tensor(spec({4}, DType::Float32));
  b.add_op("quantize", {x, b.add_float(1.0), b.add_int(0), x});
  b.add_op("mystery", {x});
  const Bytes blob = b.finish();
  const OpSignatureTable ops = sample_ops();
  EXPECT_BLOB_ERROR(blob, "op 1 'mystery': unknown op (not in the op signature table)", &ops);
  EXPECT_EQ(error_of(blob), "");  // without a table op names are not checked
}

TEST(Serialization, OpArgumentCountAndKinds) {
  const OpSignatureTable ops = sample_ops();
  {
    GraphBuilder b;
    const ValueId x = b.add_tensor(spec({4}, DType::Float32));
    b.add_op("quantize", {x, b.add_float(1.0), x});
    EXPECT_BLOB_ERROR(b.finish(),
                      "op 0 'quantize': expects 4 arguments (tensor, float, int, tensor), got 3",
                      &ops);
  }
  {
    GraphBuilder b;
    const ValueId x = b.add_tensor(spec({4}, DType::Float32));
    const ValueId i = b.add_int(0);
    b.add_op("quantize", {x, i, i, x});
    EXPECT_BLOB_ERROR(b.finish(), "op 0 'quantize': argument 1 (value 1) is a int, expected float",
                      &ops);
  }
  {
    GraphBuilder b;
    b.add_op("", {});
    EXPECT_BLOB_ERROR(b.finish(), "op 0: has no name");
  }
}

// ---- the dynamic length (issue 35) --------------------------------------------------------------

// x [1, T, 8] -> y [1, T * 2 + 1, 8] with a view shape [1, T, 2, 4] and an int T, compiled at
// T = 16 for T in [min_length, 16]; a constant [4] that no entry may name.
struct DynamicSample {
  GraphBuilder b;
  ValueId x, y, shape, count, weight, rate;
  DynamicLength dynamic;
};

void build_dynamic(DynamicSample& s, int64_t min_length = 1) {
  GraphBuilder& b = s.b;
  s.x = b.add_tensor(spec({1, 16, 8}, DType::Float32), "x");
  s.weight = b.add_tensor(spec({4}, DType::Float32), "w", iota_bytes(16, 1));
  s.shape = b.add_int_list({1, 16, 2, 4});
  s.count = b.add_int(16);
  s.rate = b.add_float(0.5);
  s.y = b.add_tensor(spec({1, 33, 8}, DType::Float32), "y");
  b.add_op("grow", {s.x, s.weight, s.shape, s.count, s.rate, s.y});
  b.set_inputs({s.x}, {"ids"});
  b.set_outputs({s.y});
  s.dynamic.name = "T";
  s.dynamic.min = min_length;
  s.dynamic.max = 16;
  s.dynamic.entries = {{s.x, 1, 1, 0}, {s.shape, 1, 1, 0}, {s.count, 0, 1, 0}, {s.y, 1, 2, 1}};
}

Bytes dynamic_blob(const std::function<void(DynamicSample&)>& change = {}) {
  DynamicSample s;
  build_dynamic(s);
  if (change) change(s);
  s.b.set_dynamic_length(s.dynamic);
  return s.b.finish();
}

TEST(DynamicLength, RoundTripAndGraphAtEachLength) {
  const Bytes blob = dynamic_blob();
  const DeserializedGraph g = deserialize(blob);
  ASSERT_TRUE(g.dynamic.has_value());
  EXPECT_EQ(g.dynamic->name, "T");
  EXPECT_EQ(g.dynamic->min, 1);
  EXPECT_EQ(g.dynamic->max, 16);
  ASSERT_EQ(g.dynamic->entries.size(), 4u);
  EXPECT_EQ(g.dynamic->entries[3].a, 2);
  EXPECT_EQ(g.dynamic->entries[3].b, 1);
  const Bytes static_blob = sample_blob();
  EXPECT_FALSE(deserialize(static_blob).dynamic.has_value());  // static blobs: none

  for (const int64_t length : {1, 7, 16}) {
    const DeserializedGraph at = graph_at_length(g, length);
    EXPECT_EQ(std::get<TensorValue>(at.values[0]).spec.sizes, (std::vector<int64_t>{1, length, 8}));
    EXPECT_EQ(std::get<IntListValue>(at.values[2]).items, (std::vector<int64_t>{1, length, 2, 4}));
    EXPECT_EQ(std::get<IntValue>(at.values[3]).value, length);
    EXPECT_EQ(std::get<FloatValue>(at.values[4]).value, 0.5);  // untouched
    EXPECT_EQ(std::get<TensorValue>(at.values[5]).spec.sizes,
              (std::vector<int64_t>{1, 2 * length + 1, 8}));
    EXPECT_EQ(std::get<TensorValue>(at.values[1]).constant->data,
              std::get<TensorValue>(g.values[1]).constant->data);  // the blob's constants
    EXPECT_EQ(length_of_inputs(g, {{1, length, 8}}, {"ids"}), length);
  }
  EXPECT_THROW(graph_at_length(g, 17), Error);
  EXPECT_THROW(graph_at_length(g, 0), Error);
}

// Exactly the message `length_of_inputs` gives for `sizes`, "" when it accepts them.
std::string length_error(const DeserializedGraph& g, std::vector<int64_t> sizes) {
  try {
    length_of_inputs(g, {std::move(sizes)}, {"ids"});
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    return e.what();
  }
  return "";
}

TEST(DynamicLength, InputsOutsideTheRangeNameInputDimAndLimit) {
  const Bytes blob = dynamic_blob();
  const DeserializedGraph g = deserialize(blob);
  EXPECT_EQ(length_error(g, {1, 17, 8}),
            "input 0 'ids' has shape [1,17,8]: dim 1 is 1*T for the length T from 1 to 16 (1 to "
            "16), got 17 (longer than the maximum the model was compiled for)");
  EXPECT_EQ(length_error(g, {2, 7, 8}), "input 0 'ids' has shape [2,7,8]: dim 0 must be 1");
  EXPECT_EQ(
      length_error(g, {1, 7}),
      "input 0 'ids' has shape [1,7], the model takes rank 3 ([1,16,8] at the maximum T = 16)");
  const Bytes odd = dynamic_blob([](DynamicSample& s) {  // x [1, 2T + 1, 8]: T = 3 for 7
    s.b = GraphBuilder();
    s.x = s.b.add_tensor(spec({1, 33, 8}, DType::Float32), "x");
    s.b.set_inputs({s.x});
    s.dynamic.entries = {{s.x, 1, 2, 1}};
  });
  const DeserializedGraph h = deserialize(odd);
  EXPECT_EQ(length_of_inputs(h, {{1, 7, 8}}, {"x"}), 3);
  EXPECT_NE(length_error(h, {1, 8, 8}).find("dim 1 is 2*T+1 for the length T"), std::string::npos);
}

// A constant following the length (a position table cut to the length): the first rows of its
// bytes at a shorter length; only in its leading dimension, once.
TEST(DynamicLength, ConstantIsAPrefixOfItsBytes) {
  auto blob_with = [](const TensorSpec& s, std::vector<DynamicEntry> entries) {
    GraphBuilder b;
    const ValueId x = b.add_tensor(spec({1, 16}, DType::Float32), "x");
    b.add_tensor(s, "pos", iota_bytes(static_cast<size_t>(constant_byte_size(s)), 0));
    b.set_inputs({x});
    entries.insert(entries.begin(), DynamicEntry{x, 1, 1, 0});
    b.set_dynamic_length(DynamicLength{"T", 1, 16, entries});
    return b.finish();
  };
  const Bytes blob = blob_with(spec({1, 16, 2}, DType::Float32), {{1, 1, 1, 0}});
  const DeserializedGraph g = deserialize(blob);
  const DeserializedGraph at = graph_at_length(g, 7);
  const auto& pos = std::get<TensorValue>(at.values[1]);
  EXPECT_EQ(pos.spec.sizes, (std::vector<int64_t>{1, 7, 2}));
  EXPECT_EQ(pos.constant->size, 7u * 2 * 4);
  EXPECT_EQ(pos.constant->data, std::get<TensorValue>(g.values[1]).constant->data);
  EXPECT_BLOB_ERROR(blob_with(spec({2, 16}, DType::Float32), {{1, 1, 1, 0}}),
                    "constant 'pos' [2,16] float32 buffer width_packed can follow the length only "
                    "in its first dimension larger than 1");
  EXPECT_BLOB_ERROR(blob_with(spec({16, 16}, DType::Float32), {{1, 0, 1, 0}, {1, 1, 1, 0}}),
                    "constant 'pos' has a second entry");
}

TEST(DynamicLength, MalformedTablesAreRefused) {
  auto with = [](std::function<void(DynamicSample&)> f) { return dynamic_blob(f); };
  EXPECT_BLOB_ERROR(with([](DynamicSample& s) { s.dynamic.min = 0; }),
                    "dynamic length: range [0, 16] is not within [1, 2147483648] (min <= max)");
  EXPECT_BLOB_ERROR(with([](DynamicSample& s) { s.dynamic.min = 17; }),
                    "dynamic length: range [17, 16]");
  EXPECT_BLOB_ERROR(with([](DynamicSample& s) { s.dynamic.entries.clear(); }),
                    "dynamic length: no entries");
  EXPECT_BLOB_ERROR(
      with([](DynamicSample& s) { std::swap(s.dynamic.entries[0], s.dynamic.entries[1]); }),
      "dynamic length: entry 1 (value 0, element 1): entries must be sorted");
  EXPECT_BLOB_ERROR(with([](DynamicSample& s) { s.dynamic.entries[1] = s.dynamic.entries[0]; }),
                    "entries must be sorted by (value, element), each once");
  EXPECT_BLOB_ERROR(with([](DynamicSample& s) { s.dynamic.entries[3].value = 99; }),
                    "dynamic length: entry 3 (value 99, element 1) refers to value 99, but the "
                    "graph has 6 values");
  EXPECT_BLOB_ERROR(with([](DynamicSample& s) {
                      s.dynamic.entries.insert(s.dynamic.entries.begin() + 1,
                                               {s.weight, 0, -1, 20});
                    }),
                    "constant 'w' would grow at shorter lengths (a = -1)");
  EXPECT_BLOB_ERROR(with([](DynamicSample& s) { s.dynamic.entries[0].element = 3; }),
                    "dynamic length: entry 0 (value 0, element 3): tensor 'x' has rank 3");
  EXPECT_BLOB_ERROR(with([](DynamicSample& s) { s.dynamic.entries[1].element = 4; }),
                    "the int list has 4 items");
  EXPECT_BLOB_ERROR(with([](DynamicSample& s) { s.dynamic.entries[2].element = 1; }),
                    "an int has only element 0");
  EXPECT_BLOB_ERROR(with([](DynamicSample& s) {
                      s.dynamic.entries.insert(s.dynamic.entries.begin() + 3, {s.rate, 0, 0, 0});
                    }),
                    "a float cannot follow the length (only tensor sizes, ints and int lists)");
  EXPECT_BLOB_ERROR(with([](DynamicSample& s) { s.dynamic.entries[3].b = 0; }),
                    "dynamic length: entry 3 (value 5, element 1): 2 * 16 + 0 = 32, but the graph "
                    "(compiled at the maximum length 16) holds 33");
  EXPECT_BLOB_ERROR(with([](DynamicSample& s) {
                      s.dynamic.entries[3].a = 4;
                      s.dynamic.entries[3].b = -31;
                    }),
                    "the size is -27 at the minimum length 1 (sizes must be >= 1)");
  EXPECT_BLOB_ERROR(
      with([](DynamicSample& s) { s.dynamic.entries[2].a = std::numeric_limits<int64_t>::max(); }),
      "coefficients a = 9223372036854775807, b = 0 exceed +-2147483648");
}

}  // namespace
}  // namespace vkd::serialization
