// make_seed_corpus OUT_DIR: writes a few valid blobs for fuzz_deserialize to start from.
// Random bytes almost never get past the magic and the FlatBuffers verifier; mutating valid
// blobs reaches the value, constant, op and input/output checks. Between them the seeds use
// every value kind, every dtype, both storages, every layout, constants, ops from
// test/fuzz/FuzzOps.h (and one op that is not in it), value lists and named and unnamed I/O.
// Each blob is read back with deserialize() first, so a seed is never rejected by mistake.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/common/Error.h"
#include "serialization/Deserializer.h"
#include "serialization/Serializer.h"
#include "test/fuzz/FuzzOps.h"

namespace {

using namespace vkd;
using namespace vkd::serialization;
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

// constant_byte_size(s) bytes of a simple pattern.
Bytes constant_for(const TensorSpec& s) {
  Bytes b(static_cast<size_t>(constant_byte_size(s)));
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 7 + 1);
  return b;
}

ValueId add_constant(GraphBuilder& b, const TensorSpec& s, std::string name) {
  return b.add_tensor(s, std::move(name), constant_for(s));
}

// The smallest valid blob: no values, no ops.
Bytes empty_graph() { return GraphBuilder().finish(); }

// One value of every kind, constants of every dtype, the "mix" op and a quantize.
Bytes every_kind() {
  GraphBuilder b;
  const ValueId x = b.add_tensor(spec({1, 3, 4, 4}, DType::Float32), "x");
  const ValueId w = add_constant(b, spec({3, 4}, DType::Int8), "w");
  const ValueId h = add_constant(b, spec({5}, DType::Float16, MemoryLayout::HeightPacked), "h");
  const ValueId idx = add_constant(b, spec({2}, DType::Int32), "");
  const ValueId f32 = add_constant(
      b, spec({2, 4}, DType::Float32, MemoryLayout::ChannelsPacked, StorageType::Texture3D),
      "f");
  const ValueId q = add_constant(
      b, spec({1, 5, 2, 3}, DType::Int8x4, MemoryLayout::PackedInt8_4C1W), "q");
  const ValueId y = b.add_tensor(spec({1, 3, 4, 4}, DType::Int8x4, MemoryLayout::PackedInt8_4W4C),
                                 "y");
  const ValueId z = b.add_tensor(spec({1, 3, 4, 4}, DType::Int8x4, MemoryLayout::PackedInt8_4H4W),
                                 "z");
  const ValueId scale = b.add_float(0.125);
  const ValueId zero = b.add_int(-3);
  const ValueId flag = b.add_bool(true);
  const ValueId ints = b.add_int_list({1, -2, 3});
  const ValueId floats = b.add_float_list({0.5, -1.5});
  const ValueId mode = b.add_string("nearest");
  const ValueId list = b.add_value_list({w, h, idx, f32, q});
  b.add_op("quantize", {x, scale, zero, y});
  b.add_op("mix", {y, list, ints, floats, mode, flag, z});
  b.set_inputs({x}, {"image"});
  b.set_outputs({y, z}, {"q", "mixed"});
  return b.finish();
}

// A quantized convolution: int8 weights, int32 bias, per-channel scales, textures.
Bytes conv_chain() {
  GraphBuilder b;
  const ValueId in = b.add_tensor(
      spec({1, 8, 6, 6}, DType::Float32, MemoryLayout::ChannelsPacked, StorageType::Texture3D),
      "input");
  const ValueId qin =
      b.add_tensor(spec({1, 8, 6, 6}, DType::Int8x4, MemoryLayout::PackedInt8_4W4C));
  const ValueId weight = add_constant(b, spec({4, 8, 3, 3}, DType::Int8), "weight");
  const ValueId bias = add_constant(b, spec({4}, DType::Int32), "bias");
  const ValueId qout =
      b.add_tensor(spec({1, 4, 4, 4}, DType::Int8x4, MemoryLayout::PackedInt8_4W4C));
  const ValueId out = b.add_tensor(
      spec({1, 4, 4, 4}, DType::Float32, MemoryLayout::WidthPacked, StorageType::Texture3D),
      "output");
  b.add_op("quantize", {in, b.add_float(0.02), b.add_int(0), qin});
  b.add_op("conv2d", {qin, weight, bias, b.add_int_list({1, 1}), b.add_int_list({0, 0}),
                      b.add_float_list({0.01, 0.02, 0.03, 0.04}), qout});
  b.add_op("dequantize", {qout, b.add_float(0.05), b.add_int(-1), out});
  b.set_inputs({in}, {"input"});
  b.set_outputs({out}, {"output"});
  return b.finish();
}

// Unnamed I/O, nested and empty lists, an op missing from the table (valid without one).
Bytes odd_corners() {
  GraphBuilder b;
  const ValueId a = b.add_tensor(spec({7}, DType::Float16));
  const ValueId c = b.add_tensor(spec({2, 3, 5}, DType::Int32, MemoryLayout::HeightPacked));
  const ValueId empty = b.add_value_list({});
  const ValueId nested = b.add_value_list({a, empty, c});
  b.add_op("custom_op", {a, nested, b.add_int_list({}), b.add_float_list({}), b.add_string("")});
  b.add_op("noop", {});
  b.set_inputs({a});
  b.set_outputs({c, a});
  return b.finish();
}

// `ops`: the table the seed must pass with (nullptr when it calls ops outside it).
void write_seed(const std::string& dir, const char* name, const Bytes& blob,
                const OpSignatureTable* ops) {
  deserialize(blob, ops);  // throws if a seed is not valid
  const std::string path = dir + "/" + name + ".vkd";
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(blob.data()), static_cast<std::streamsize>(blob.size()));
  VKD_CHECK(f.good(), ErrorCode::Internal, "cannot write ", path);
  std::printf("%s: %zu bytes\n", path.c_str(), blob.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR (the directory must exist)\n", argv[0]);
    return 2;
  }
  try {
    const std::string dir = argv[1];
    const OpSignatureTable ops = fuzz::fuzz_op_table();
    write_seed(dir, "empty", empty_graph(), &ops);
    write_seed(dir, "every_kind", every_kind(), &ops);
    write_seed(dir, "conv_chain", conv_chain(), &ops);
    write_seed(dir, "odd_corners", odd_corners(), nullptr);
  } catch (const vkd::Error& e) {
    std::fprintf(stderr, "make_seed_corpus: %s\n", e.what());
    return 1;
  }
  return 0;
}
