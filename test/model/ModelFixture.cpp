#include "test/model/ModelFixture.h"

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>

#include "compiler/Compiler.h"
#include "compiler/Parse.h"
#include "compiler/Safetensors.h"
#include "core/HostPacking.h"

namespace vkd_test {

namespace fs = std::filesystem;
using namespace vkd::compiler;

const std::string kCompilerGraphs = VKD_TEST_GRAPH_DIR;
const std::string kCliGraphs = VKD_TEST_CLI_GRAPH_DIR;

namespace {

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

}  // namespace

void ModelTest::SetUp() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  dir_ = fs::temp_directory_path() / ("vkd_model_test_" + std::to_string(::getpid()) + "_" +
                                      info->test_suite_name() + "_" + info->name());
  fs::remove_all(dir_);
  fs::create_directories(dir_);
}

void ModelTest::TearDown() { fs::remove_all(dir_); }

void ModelTest::write_text(const std::string& name, const std::string& text) const {
  write_bytes(path(name), std::vector<uint8_t>(text.begin(), text.end()));
}

std::string ModelTest::compile_partitioned(const std::string& graph, const std::string& weights,
                                           const std::string& stem) const {
  const PartitionedResult r =
      vkd::compiler::compile_partitioned(parse_graph_file(graph, weights), {});
  std::vector<std::string> blobs;
  for (size_t i = 0; i < r.parts.size(); ++i) {
    blobs.push_back(stem + ".p" + std::to_string(i) + ".vkd");
    write_bytes(path(blobs.back()), r.parts[i].blob);
  }
  write_text(stem + ".partition.json", partition_plan_json(r, blobs));
  return path(stem + ".partition.json");
}

std::string ModelTest::compile_blob(const std::string& graph, const std::string& name) const {
  const CompileResult r = compile_file(graph, "", {});
  EXPECT_TRUE(r.ok()) << graph;
  write_bytes(path(name), r.blob);
  return path(name);
}

std::string ModelTest::write_add_weights() const {
  const std::vector<float> other = {0.5f, -0.25f, 1.0f, 2.0f};
  std::vector<uint8_t> bytes(other.size() * 4);
  std::memcpy(bytes.data(), other.data(), bytes.size());
  write_safetensors(path("weights.safetensors"), {{"add.other", "F32", {1, 1, 4, 1, 1}, bytes}});
  return path("weights.safetensors");
}

HostTensor random_input(const std::vector<int64_t>& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return HostTensor::from_floats(shape, v);
}

TensorMap interpret_file(const std::string& graph, const std::string& weights,
                         const TensorMap& inputs) {
  return interpret(parse_graph_file(graph, weights), inputs);
}

TensorMap run_model(vkd::Model& model, const TensorMap& inputs) {
  std::vector<vkd::ConstTensorView> in;
  std::vector<std::vector<uint8_t>> widened(model.input_count());
  for (size_t i = 0; i < model.input_count(); ++i) {
    const vkd::TensorInfo info = model.input(i);
    const HostTensor& t = inputs.at(info.name);
    widened[i] = t.dtype == vkd::DType::Float16 ? vkd::float16_bytes_to_float32(t.bytes) : t.bytes;
    in.push_back({widened[i].data(), widened[i].size(), info.host_dtype, info.sizes});
  }
  std::vector<std::vector<uint8_t>> data(model.output_count());
  std::vector<vkd::TensorView> out;
  for (size_t i = 0; i < data.size(); ++i) {
    const vkd::TensorInfo info = model.output(i);
    data[i].assign(info.host_bytes(), 0);
    out.push_back({data[i].data(), data[i].size(), info.host_dtype, info.sizes});
  }
  const vkd::Status s = model.execute(in, out);
  EXPECT_EQ(s, vkd::Status::Ok) << model.last_error();
  TensorMap outputs;
  for (size_t i = 0; i < data.size(); ++i) {
    const vkd::TensorInfo info = model.output(i);
    const bool half = info.device_dtype == "float16";
    const vkd::DType dtype = half                                       ? vkd::DType::Float16
                             : info.host_dtype == vkd::HostDType::Int8  ? vkd::DType::Int8
                             : info.host_dtype == vkd::HostDType::Int32 ? vkd::DType::Int32
                                                                        : vkd::DType::Float32;
    outputs[info.name] =
        HostTensor{dtype, info.sizes, half ? vkd::float32_bytes_to_float16(data[i]) : data[i]};
  }
  return outputs;
}

::testing::AssertionResult same_outputs(const TensorMap& expected, const TensorMap& actual) {
  if (actual.empty()) return ::testing::AssertionFailure() << "no outputs";
  for (const auto& [name, t] : actual) {
    const auto it = expected.find(name);
    if (it == expected.end()) return ::testing::AssertionFailure() << "no reference for " << name;
    if (it->second.dtype != t.dtype || it->second.shape != t.shape) {
      return ::testing::AssertionFailure() << name << ": dtype or shape differs";
    }
    size_t differ = 0, first = 0;
    for (size_t i = t.bytes.size(); i-- > 0;) {
      if (t.bytes[i] != it->second.bytes[i]) {
        ++differ;
        first = i;
      }
    }
    if (differ > 0) {
      return ::testing::AssertionFailure() << name << ": " << differ << " of " << t.bytes.size()
                                           << " bytes differ, the first at byte " << first;
    }
  }
  return ::testing::AssertionSuccess();
}

std::unique_ptr<vkd::Model> load(const std::string& path, const vkd::ModelOptions& options) {
  std::unique_ptr<vkd::Model> model;
  std::string error;
  const vkd::Status s = vkd::Model::load(path, options, &model, &error);
  EXPECT_EQ(s, vkd::Status::Ok) << error;
  EXPECT_EQ(model != nullptr, s == vkd::Status::Ok);
  return model;
}

LoadFailure load_failure(const std::string& path, const vkd::ModelOptions& options) {
  std::unique_ptr<vkd::Model> model;
  LoadFailure f;
  f.status = vkd::Model::load(path, options, &model, &f.message);
  EXPECT_NE(f.status, vkd::Status::Ok) << path << " loaded";
  EXPECT_EQ(model, nullptr);
  return f;
}

}  // namespace vkd_test
