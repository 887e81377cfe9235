// Tests for serialization/: the blob header, GraphBuilder and the validating deserializer.
// Malformed blobs are made either with the builder (it checks nothing on purpose) or by patching
// header fields / flatbuffer bytes of a good blob; each must fail with its own message.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/common/Error.h"
#include "runtime/tensor/TensorSpec.h"
#include "serialization/Blob.h"
#include "serialization/Deserializer.h"
#include "serialization/Serializer.h"

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
  s.bias = b.add_tensor(spec({4}, DType::Float32, MemoryLayout::ChannelsPacked,
                             StorageType::Texture3D),
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
          {"mix", {{K::Tensor, K::ValueList, K::IntList, K::FloatList, K::String, K::Bool,
                    K::Tensor}}}};
}

// The error message of deserialize(blob), or "" when it succeeds. Every failure must be an
// InvalidArgument vkd::Error.
std::string error_of(const Bytes& blob, const OpSignatureTable* ops = nullptr) {
  try {
    deserialize(blob, ops);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    return e.what();
  }
  return "";
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

BlobHeader header_of(const Bytes& blob) { return parse_header(blob.data(), blob.size()); }

void patch32(Bytes& blob, size_t offset, uint32_t v) { store_le32(blob.data() + offset, v); }
void patch64(Bytes& blob, size_t offset, uint64_t v) { store_le64(blob.data() + offset, v); }

// Builds a one-tensor graph (optionally with a constant) for the tensor-validation tests.
Bytes single_tensor_blob(const TensorSpec& s, std::optional<Bytes> constant = std::nullopt) {
  GraphBuilder b;
  b.add_tensor(s, "t", std::move(constant));
  return b.finish();
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
  EXPECT_EQ(h.header_version, kBlobHeaderVersion);
  EXPECT_EQ(h.header_size, kBlobHeaderSize);
  EXPECT_EQ(h.flatbuffer_offset, kBlobHeaderSize);
  EXPECT_EQ(std::memcmp(blob.data() + h.flatbuffer_offset + 4, "VKDG", 4), 0);
  EXPECT_EQ(h.constant_offset % kConstantAlignment, 0u);
  EXPECT_GE(h.constant_offset, h.flatbuffer_offset + h.flatbuffer_size);
  EXPECT_EQ(h.constant_offset + h.constant_size, blob.size());
  // 12 (w) pad to 16, 16 (b), 8 (idx): 16 + 16 + 8.
  EXPECT_EQ(h.constant_size, 40u);
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
  h.flatbuffer_offset = 48;
  h.flatbuffer_size = 100;
  h.constant_offset = 160;
  h.constant_size = 32;
  Bytes blob(192, 0);
  encode_header(h, blob.data());
  const BlobHeader r = header_of(blob);
  EXPECT_EQ(r.flatbuffer_offset, 48u);
  EXPECT_EQ(r.flatbuffer_size, 100u);
  EXPECT_EQ(r.constant_offset, 160u);
  EXPECT_EQ(r.constant_size, 32u);
  EXPECT_EQ(blob[header_field::kFlatbufferSize], 100);  // little-endian
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
                                   : "constant_size";
    const Bytes cut(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(len));
    SCOPED_TRACE("length " + std::to_string(len));
    EXPECT_BLOB_ERROR(cut, std::string("truncated header: field '") + field + "'");
    EXPECT_BLOB_ERROR(cut, "the blob has " + std::to_string(len) + " bytes");
  }
  // Cut just after the header: the flatbuffer no longer fits.
  const Bytes cut(blob.begin(), blob.begin() + kBlobHeaderSize);
  EXPECT_BLOB_ERROR(cut, "blob: flatbuffer [48, ");
}

TEST(BlobHeader, WrongMagic) {
  Bytes blob = sample_blob();
  blob[0] = 'X';
  EXPECT_BLOB_ERROR(blob, "bad magic bytes 0x58");
}

TEST(BlobHeader, BadHeaderVersion) {
  Bytes blob = sample_blob();
  patch32(blob, header_field::kHeaderVersion, 2);
  EXPECT_BLOB_ERROR(blob, "header version 2 not supported (this build reads 1)");
}

TEST(BlobHeader, HeaderSizeTooSmallOrPastTheEnd) {
  Bytes blob = sample_blob();
  patch32(blob, header_field::kHeaderSize, 40);
  EXPECT_BLOB_ERROR(blob, "header size 40 is smaller than the 48 bytes");
  patch32(blob, header_field::kHeaderSize, 1u << 30);
  EXPECT_BLOB_ERROR(blob, "header size 1073741824 extends past the end");
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
  EXPECT_BLOB_ERROR(b, "blob: flatbuffer [48, " + std::to_string(48 + blob.size()) + ")");
  Bytes c = blob;  // offset + size wraps around 2^64
  patch64(c, header_field::kFlatbufferSize, UINT64_MAX - 8);
  EXPECT_BLOB_ERROR(c, "blob: flatbuffer [48, 48 + ");
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
  EXPECT_BLOB_ERROR(a, "blob: flatbuffer [48, " +
                           std::to_string(h.flatbuffer_offset + h.flatbuffer_size) +
                           ") and constant segment [64, ");
  EXPECT_BLOB_ERROR(a, ") overlap");
  Bytes b = blob;  // flatbuffer starts inside the header
  patch64(b, header_field::kFlatbufferOffset, 16);
  EXPECT_BLOB_ERROR(b, "blob: flatbuffer [16, ");
  EXPECT_BLOB_ERROR(b, "overlaps the header [0, 48)");
  Bytes c = blob;  // constant segment inside the header
  patch64(c, header_field::kConstantOffset, 0);
  EXPECT_BLOB_ERROR(c, "blob: constant segment [0, 40) overlaps the header");
}

TEST(BlobHeader, MisalignedConstantSegment) {
  Bytes blob = sample_blob();
  const BlobHeader h = header_of(blob);
  patch64(blob, header_field::kConstantOffset, h.constant_offset + 8);
  patch64(blob, header_field::kConstantSize, h.constant_size - 8);
  EXPECT_BLOB_ERROR(blob, "constant segment offset " + std::to_string(h.constant_offset + 8) +
                              " is not 16-byte aligned");
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

  Bytes c = blob;  // flatbuffer cut short: tables now reach past its end
  patch64(c, header_field::kFlatbufferSize, 12);
  EXPECT_BLOB_ERROR(c, "flatbuffer: FlatBuffers verification failed");

  Bytes d = blob;
  patch64(d, header_field::kFlatbufferSize, 6);
  EXPECT_BLOB_ERROR(d, "flatbuffer: 6 bytes is too small");
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
  for (size_t i = 0; i < blob.size(); ++i) {
    if (blob[i] != other[i]) ++diff, at = i;
  }
  ASSERT_EQ(diff, 1u);
  blob[at] = 42;
  EXPECT_BLOB_ERROR(blob, "value 0: unknown value kind 42");
  blob[at] = 0;
  EXPECT_BLOB_ERROR(blob, "value 0: empty (union type NONE)");
}

TEST(Serialization, UnknownEnumValues) {
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({4}, static_cast<DType>(9))),
                    "value 0 (tensor 't'): unknown dtype 9");
  EXPECT_BLOB_ERROR(
      single_tensor_blob(spec({4}, DType::Float32, MemoryLayout::WidthPacked,
                              static_cast<StorageType>(7))),
      "value 0 (tensor 't'): unknown storage type 7");
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({4}, DType::Float32, static_cast<MemoryLayout>(6))),
                    "value 0 (tensor 't'): unknown memory layout 6");
}

TEST(Serialization, IllegalLayoutForDtype) {
  EXPECT_BLOB_ERROR(single_tensor_blob(spec({1, 4, 4, 4}, DType::Int8x4)),
                    "value 0 (tensor 't'): tensor [1,4,4,4]: int8x4 needs a packed int8 layout");
  EXPECT_BLOB_ERROR(
      single_tensor_blob(spec({4, 4}, DType::Float32, MemoryLayout::PackedInt8_4H4W)),
      "cannot use packed int8 layout");
  EXPECT_BLOB_ERROR(
      single_tensor_blob(spec({1, 4, 4, 4}, DType::Int8x4, MemoryLayout::PackedInt8_4C1W,
                              StorageType::Texture3D)),
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

TEST(Serialization, ConstantEntryPastTheSegment) {
  Bytes blob = sample_blob();
  const BlobHeader h = header_of(blob);
  // Shrink the segment so the last entry (idx: [32, 40)) no longer fits.
  patch64(blob, header_field::kConstantSize, h.constant_size - 4);
  EXPECT_BLOB_ERROR(blob, "constant 2: [32, 32 + 8) extends past the end of the 36-byte "
                          "constant segment");
}

TEST(Serialization, ValueIdsOutOfRange) {
  {
    GraphBuilder b;
    const ValueId x = b.add_tensor(spec({4}, DType::Float32));
    b.add_op("relu", {x, 99});
    EXPECT_BLOB_ERROR(b.finish(), "op 0 'relu': argument 1 refers to value 99, but the graph "
                                  "has 1 values");
  }
  {
    GraphBuilder b;
    b.add_tensor(spec({4}, DType::Float32));
    b.set_inputs({42});
    EXPECT_BLOB_ERROR(b.finish(), "input 0 refers to value 42");
  }
  {
    GraphBuilder b;
    const ValueId x = b.add_tensor(spec({4}, DType::Float32));
    b.set_outputs({x, 7});
    EXPECT_BLOB_ERROR(b.finish(), "output 1 refers to value 7");
  }
  {
    GraphBuilder b;
    b.add_int(1);
    b.add_value_list({0, 5});
    EXPECT_BLOB_ERROR(b.finish(), "value 1 (value_list): item 1 refers to value 5");
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

}  // namespace
}  // namespace vkd::serialization
