// make_seed_corpus OUT_DIR [GRAPH_DIR...]: the seed corpora of the fuzz targets, one directory
// each under OUT_DIR (created), plus libFuzzer dictionaries:
//   fuzz_deserialize/  a few valid blobs (below) and the op blobs of fuzz_load_blob. Random
//                      bytes almost never get past the magic and the FlatBuffers verifier;
//                      mutating valid blobs reaches the value, constant, op and input/output
//                      checks. Between them these seeds use every value kind, every dtype, both
//                      storages, every layout, constants, ops from test/fuzz/FuzzOps.h (and one
//                      op that is not in it), value lists and named and unnamed I/O.
//   fuzz_load_blob/    real blobs for every op with a kernel (test/fuzz/SeedBlobs.cpp) and the
//                      blobs the compiler makes of the graphs in GRAPH_DIR
//   fuzz_graph_ir/     every GRAPH_DIR/*.json, alone and followed by a safetensors file with
//                      the weights its values name (test/fuzz/GraphIrInput.h), made up here
//   fuzz_partition_plan/  the plan `vkd compile --partition` writes of each GRAPH_DIR/*.json
//                      that compiles so, with its blobs and those weights (test/fuzz/PlanInput.h)
//   fuzz_load_blob.dict, fuzz_graph_ir.dict, fuzz_partition_plan.dict: op names, JSON keys and
//                      strings of the seeds; for the JSON targets also deep nesting, sizes past
//                      the caps (core/TensorLimits.h) and, for plans, names that leave
//                      the plan's folder
// Each blob is read back with deserialize() first, so a seed is never rejected by mistake.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/Compiler.h"
#include "compiler/Parse.h"
#include "compiler/Safetensors.h"
#include "core/Error.h"
#include "partitioner_schema/KernelSignatures.h"
#include "serialization/Deserializer.h"
#include "serialization/Serializer.h"
#include "test/fuzz/FuzzOps.h"
#include "test/fuzz/GraphIrInput.h"
#include "test/fuzz/PlanInput.h"
#include "test/fuzz/SeedBlobs.h"

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
      b, spec({2, 4}, DType::Float32, MemoryLayout::ChannelsPacked, StorageType::Texture3D), "f");
  const ValueId q =
      add_constant(b, spec({1, 5, 2, 3}, DType::Int8x4, MemoryLayout::PackedInt8_4C1W), "q");
  const ValueId y =
      b.add_tensor(spec({1, 3, 4, 4}, DType::Int8x4, MemoryLayout::PackedInt8_4W4C), "y");
  const ValueId z =
      b.add_tensor(spec({1, 3, 4, 4}, DType::Int8x4, MemoryLayout::PackedInt8_4H4W), "z");
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

// A dynamic length (issue 35): x [1, T, 8], a view shape and a count following T, T in [1, 16].
Bytes dynamic_length() {
  GraphBuilder b;
  const ValueId x = b.add_tensor(spec({1, 16, 8}, DType::Float32), "x");
  const ValueId shape = b.add_int_list({1, 16, 2, 4});
  const ValueId count = b.add_int(16);
  const ValueId y = b.add_tensor(spec({1, 33, 8}, DType::Float32), "y");
  b.add_op("custom_op", {x, shape, count, y});
  b.set_inputs({x}, {"ids"});
  b.set_outputs({y});
  b.set_dynamic_length(
      DynamicLength{"T", 1, 16, {{x, 1, 1, 0}, {shape, 1, 1, 0}, {count, 0, 1, 0}, {y, 1, 2, 1}}});
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

void write_file(const std::string& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  VKD_CHECK(f.good(), ErrorCode::Internal, "cannot write ", path);
}

// `ops`: the table the seed must pass with (nullptr when it calls ops outside it).
void write_seed(const std::string& dir, const std::string& name, const Bytes& blob,
                const OpSignatureTable* ops) {
  deserialize(blob, ops);  // throws if a seed is not valid
  write_file(dir + "/" + name + ".vkd", blob.data(), blob.size());
}

// A libFuzzer dictionary: one quoted token a line, bytes outside printable ASCII escaped.
void write_dict(const std::string& path, const std::set<std::string>& tokens) {
  std::string text;
  for (const std::string& t : tokens) {
    if (t.empty() || t.size() > 64) continue;
    text += '"';
    for (unsigned char c : t) {
      if (c == '"' || c == '\\' || c < 0x20 || c > 0x7e) {
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02X", c);
        text += hex;
      } else {
        text += static_cast<char>(c);
      }
    }
    text += "\"\n";
  }
  write_file(path, text.data(), text.size());
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  VKD_CHECK(f.good(), ErrorCode::InvalidArgument, "cannot read ", path.string());
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Every object key and string value of a JSON document.
void collect_strings(const nlohmann::json& j, std::set<std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      out.insert(it.key());
      collect_strings(it.value(), out);
    }
  } else if (j.is_array()) {
    for (const auto& item : j) collect_strings(item, out);
  } else if (j.is_string()) {
    out.insert(j.get<std::string>());
  }
}

// Made-up weights for every value of a graph IR document with "data": small int8 weights,
// positive float scales, small integers (zero points, indices), in the value's dtype and shape.
std::vector<compiler::SafetensorsTensor> made_up_weights(const nlohmann::json& doc) {
  std::vector<compiler::SafetensorsTensor> out;
  if (!doc.is_object() || !doc.contains("values") || !doc["values"].is_object()) return out;
  std::set<std::string> seen;
  for (const auto& [name, v] : doc["values"].items()) {
    if (!v.is_object() || !v.contains("data") || !v["data"].is_string()) continue;
    const std::string data = v["data"].get<std::string>();
    if (!seen.insert(data).second) continue;
    const std::string dtype = v.value("dtype", "float32");
    const std::vector<int64_t> shape = v.value("shape", std::vector<int64_t>{});
    size_t numel = 1;
    for (int64_t d : shape) numel *= static_cast<size_t>(std::max<int64_t>(d, 0));
    const char* st_dtype = dtype == "float32"   ? "F32"
                           : dtype == "float16" ? "F16"
                           : dtype == "int8"    ? "I8"
                           : dtype == "int32"   ? "I32"
                           : dtype == "int64"   ? "I64"
                                                : nullptr;
    if (!st_dtype) continue;  // a dtype the graph IR does not know: no weights for it
    compiler::SafetensorsTensor t{data, st_dtype, shape, {}};
    const size_t width = compiler::safetensors_element_size(st_dtype);
    for (size_t i = 0; i < numel; ++i) {
      uint64_t bits = 0;  // little-endian, `width` bytes of it
      if (dtype == "float32") {
        const float f = 0.0625f * static_cast<float>(1 + i % 4);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        bits = u;
      } else if (dtype == "float16") {
        bits = 0x2c00 + (i % 4) * 0x100;  // 1/16 .. 1/8
      } else if (dtype == "int8") {
        bits = static_cast<uint64_t>(static_cast<int64_t>((i * 7 + 3) % 15) - 7);
      } else {
        bits = static_cast<uint64_t>(static_cast<int64_t>(i % 5) - 2);
      }
      for (size_t b = 0; b < width; ++b) t.data.push_back(static_cast<uint8_t>(bits >> (8 * b)));
    }
    out.push_back(std::move(t));
  }
  return out;
}

// Tokens the JSON targets' mutations should try: nesting past the readers' depth cap, sizes
// whose products wrap or pass the caps, integers past int64.
const std::set<std::string> kJsonEdgeTokens = {"[[[[[[[[[[[[[[[[",
                                               "]]]]]]]]]]]]]]]]",
                                               "{\"a\": {\"a\": {\"a\": {\"a\": ",
                                               "}}}}",
                                               "[{\"a\": [{\"a\": [",
                                               "4611686018427387905",
                                               "9223372036854775807",
                                               "18446744073709551615",
                                               "2147483647",
                                               "2147483648",
                                               "65536",
                                               "-1",
                                               "1e300",
                                               "null"};

// The partitioned compile of one graph as a fuzz_partition_plan seed: its plan, its blobs and
// `weights` (when not empty) as weights.safetensors.
void plan_seed(const compiler::Graph& g, const std::string& stem, const Bytes& weights,
               const std::string& plan_dir, std::set<std::string>& dict) {
  const compiler::PartitionedResult r = compiler::compile_partitioned(g, {});
  std::vector<std::string> names;
  std::vector<std::pair<std::string, std::string>> files;
  const OpSignatureTable ops = schema::kernel_signatures();
  for (size_t i = 0; i < r.parts.size(); ++i) {
    names.push_back("m.p" + std::to_string(i) + ".vkd");
    deserialize(r.parts[i].blob, &ops);  // throws if a seed is not valid
    files.emplace_back(names.back(), std::string(r.parts[i].blob.begin(), r.parts[i].blob.end()));
  }
  if (!weights.empty()) {
    files.emplace_back(std::string(fuzz::kWeightsFileName),
                       std::string(weights.begin(), weights.end()));
  }
  const std::string plan = compiler::partition_plan_json(r, names);
  for (const auto& [name, bytes] : files) {
    VKD_CHECK(bytes.find(fuzz::kFileSeparator) == std::string::npos, ErrorCode::Internal, stem,
              ": ", name, " holds the input format's separator");
  }
  collect_strings(nlohmann::json::parse(plan), dict);
  const std::string input = fuzz::join_plan_input(plan, files);
  write_file(plan_dir + "/" + stem + ".plan", input.data(), input.size());
}

// The graph IR seeds of one JSON file, and the blob the compiler makes of it (when it can).
void graph_seeds(const std::filesystem::path& json_path, const std::string& graph_dir,
                 const std::string& blob_dir, const std::string& plan_dir,
                 std::set<std::string>& dict, std::set<std::string>& plan_dict) {
  const std::string stem =
      json_path.parent_path().parent_path().filename().string() + "_" + json_path.stem().string();
  const std::string text = read_text(json_path);
  write_file(graph_dir + "/" + stem + ".json", text.data(), text.size());
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return;  // a malformed-JSON test case: its text alone is the seed
  }
  collect_strings(doc, dict);
  std::vector<compiler::SafetensorsTensor> weights;
  try {
    weights = made_up_weights(doc);
  } catch (const nlohmann::json::exception&) {
    // a field of an unexpected type: no weights
  }
  Bytes st;
  std::string input = text;
  if (!weights.empty()) {
    st = compiler::serialize_safetensors(weights);
    input.append(fuzz::kWeightsSeparator);
    input.append(reinterpret_cast<const char*>(st.data()), st.size());
    write_file(graph_dir + "/" + stem + ".weights", input.data(), input.size());
  }
  try {
    std::optional<compiler::SafetensorsFile> file;
    if (!weights.empty()) file = compiler::SafetensorsFile::from_bytes(st, stem + ".safetensors");
    compiler::Graph g = compiler::parse_graph(text, stem, file ? &*file : nullptr);
    try {
      plan_seed(g, stem, st, plan_dir, plan_dict);
    } catch (const vkd::Error& e) {
      std::printf("make_seed_corpus: %s: no plan (%s)\n", stem.c_str(), e.what());
    }
    const compiler::CompileResult r = compiler::compile_graph(std::move(g), {});
    if (!r.ok()) return;
    const OpSignatureTable ops = schema::kernel_signatures();
    write_seed(blob_dir, "compiled_" + stem, r.blob, &ops);
  } catch (const vkd::Error& e) {
    std::printf("make_seed_corpus: %s: no blob (%s)\n", stem.c_str(), e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [GRAPH_DIR...]\n", argv[0]);
    return 2;
  }
  try {
    namespace fs = std::filesystem;
    const std::string out = argv[1];
    const std::string deser = out + "/fuzz_deserialize", blobs = out + "/fuzz_load_blob",
                      graphs = out + "/fuzz_graph_ir", plans = out + "/fuzz_partition_plan";
    for (const auto& d : {deser, blobs, graphs, plans}) fs::create_directories(d);

    const OpSignatureTable toy = fuzz::fuzz_op_table();
    write_seed(deser, "empty", empty_graph(), &toy);
    write_seed(deser, "every_kind", every_kind(), &toy);
    write_seed(deser, "conv_chain", conv_chain(), &toy);
    write_seed(deser, "odd_corners", odd_corners(), nullptr);
    write_seed(deser, "dynamic_length", dynamic_length(), nullptr);

    const OpSignatureTable kernels = schema::kernel_signatures();
    std::set<std::string> blob_dict;
    for (const auto& [name, sig] : kernels) blob_dict.insert(name);
    for (const auto& [name, blob] : fuzz::op_seed_blobs()) {
      write_seed(blobs, name, blob, &kernels);
      write_seed(deser, "op_" + name, blob, nullptr);
    }

    std::set<std::string> graph_dict(compiler::accepted_edge_ops().begin(),
                                     compiler::accepted_edge_ops().end());
    graph_dict.insert(kJsonEdgeTokens.begin(), kJsonEdgeTokens.end());
    std::set<std::string> plan_dict = graph_dict;
    // Names that leave the plan's folder, and the separator of the input format.
    plan_dict.insert({"../", "/etc/passwd", "..", "m.partition.json", "weights.safetensors",
                      std::string(fuzz::kFileSeparator)});
    for (int i = 2; i < argc; ++i) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(argv[i])) {
        if (e.path().extension() == ".json") files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) graph_seeds(f, graphs, blobs, plans, graph_dict, plan_dict);
    }
    write_dict(out + "/fuzz_load_blob.dict", blob_dict);
    write_dict(out + "/fuzz_graph_ir.dict", graph_dict);
    write_dict(out + "/fuzz_partition_plan.dict", plan_dict);
    for (const auto& d : {deser, blobs, graphs, plans}) {
      std::printf(
          "make_seed_corpus: %s: %zu seeds\n", d.c_str(),
          static_cast<size_t>(std::distance(fs::directory_iterator(d), fs::directory_iterator())));
    }
  } catch (const vkd::Error& e) {
    std::fprintf(stderr, "make_seed_corpus: %s\n", e.what());
    return 1;
  }
  return 0;
}
