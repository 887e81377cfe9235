// What the model tests share: a temporary directory per test, partitioned models compiled into
// it through the compiler's API (as `vkd compile --partition` writes them), random inputs, and
// the two runs compared: vkd::Model on the files and the reference interpreter on the original
// graph.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/Interpreter.h"
#include "vkdelegate/Model.hpp"

namespace vkd_test {

using HostTensor = vkd::compiler::HostTensor;
using TensorMap = std::map<std::string, HostTensor>;

extern const std::string kCompilerGraphs;  // test/compiler/graphs
extern const std::string kCliGraphs;       // test/cli/graphs

class ModelTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write_text(const std::string& name, const std::string& text) const;

  // `graph` (+ `weights`) compiled with --partition into the test directory as STEM.p<i>.vkd and
  // STEM.partition.json; returns the plan's path.
  std::string compile_partitioned(const std::string& graph, const std::string& weights,
                                  const std::string& stem) const;
  // `graph` compiled whole into NAME; returns its path.
  std::string compile_blob(const std::string& graph, const std::string& name) const;
  // weights.safetensors holding add_constant.json's constant ("add.other": 4 float32 values).
  std::string write_add_weights() const;

 private:
  std::filesystem::path dir_;
};

// Seeded random float32 values in [-6, 6) for `shape`.
HostTensor random_input(const std::vector<int64_t>& shape, uint32_t seed);

// The reference interpreter on the ORIGINAL graph (unfused, unpartitioned) given `inputs`.
TensorMap interpret_file(const std::string& graph, const std::string& weights,
                         const TensorMap& inputs);

// `inputs` (by model input name) through Model::execute; the outputs by model output name, as
// the host holds them (float16 narrowed back). Fails the test on a bad status.
TensorMap run_model(vkd::Model& model, const TensorMap& inputs);

// Byte-exact comparison of every output of `actual` with the same name in `expected`.
::testing::AssertionResult same_outputs(const TensorMap& expected, const TensorMap& actual);

// Model::load; ADD_FAILURE with the message when it fails.
std::unique_ptr<vkd::Model> load(const std::string& path, const vkd::ModelOptions& options = {});
// The status and message of a Model::load expected to fail.
struct LoadFailure {
  vkd::Status status = vkd::Status::Ok;
  std::string message;
};
LoadFailure load_failure(const std::string& path, const vkd::ModelOptions& options = {});

}  // namespace vkd_test
