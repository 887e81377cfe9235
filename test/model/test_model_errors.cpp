// vkd::Model's errors: every load problem (a missing blob, a malformed plan, the weights missing,
// wrong or needless, a host step the interpreter cannot run) and every execute problem (input
// and output count, dtype, shape, bytes, null data) is a Status with a message naming what is
// at fault; nothing throws.
#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>
#include <fstream>
#include <iterator>

#include "compiler/Safetensors.h"
#include "test/model/ModelFixture.h"

namespace vkd_test {
namespace {

using vkd::Status;

// The message contains `needle` (printed in full when not).
::testing::AssertionResult says(const std::string& message, const std::string& needle) {
  if (message.find(needle) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << message << "' lacks '" << needle << "'";
}

class ModelErrors : public ModelTest {
 protected:
  void SetUp() override {
    ModelTest::SetUp();
    plan_ = compile_partitioned(kCompilerGraphs + "/qdq_maxpool.json", "", "m");
    model_ = load(plan_);
    ASSERT_TRUE(model_);
  }

  // Model::execute on these views: its status and message.
  std::pair<Status, std::string> execute(const std::vector<vkd::ConstTensorView>& in,
                                         const std::vector<vkd::TensorView>& out) {
    const Status s = model_->execute(in, out);
    return {s, model_->last_error()};
  }

  std::string plan_;
  std::unique_ptr<vkd::Model> model_;
  std::vector<float> x_ = std::vector<float>(240), y_ = std::vector<float>(60);
  const std::vector<int64_t> x_shape_ = {1, 4, 6, 10}, y_shape_ = {1, 4, 3, 5};
  vkd::ConstTensorView x() const { return {x_.data(), 960, vkd::HostDType::Float32, x_shape_}; }
  vkd::TensorView y() { return {y_.data(), 240, vkd::HostDType::Float32, y_shape_}; }
};

TEST_F(ModelErrors, EveryInputViewIsChecked) {
  auto [s, message] = execute({}, {y()});
  EXPECT_EQ(s, Status::InvalidArgument);
  EXPECT_EQ(message, "the model takes 1 inputs, got 0");
  std::tie(s, message) = execute({x(), x()}, {y()});
  EXPECT_EQ(message, "the model takes 1 inputs, got 2");

  vkd::ConstTensorView bad = x();
  bad.dtype = vkd::HostDType::Int8;
  std::tie(s, message) = execute({bad}, {y()});
  EXPECT_EQ(s, Status::InvalidArgument);
  EXPECT_EQ(message, "input 0 'x' is float32, got int8");
  bad = x();
  bad.sizes = {1, 4, 6, 9};
  std::tie(s, message) = execute({bad}, {y()});
  EXPECT_TRUE(says(message, "input 0 'x' has shape [1,4,6,9], the model was compiled for "
                            "[1,4,6,10]"));
  bad = x();
  bad.bytes = 959;
  std::tie(s, message) = execute({bad}, {y()});
  EXPECT_EQ(message, "input 0 'x' needs 960 bytes, got 959");
  bad = x();
  bad.data = nullptr;
  std::tie(s, message) = execute({bad}, {y()});
  EXPECT_EQ(s, Status::InvalidArgument);
  EXPECT_EQ(message, "input 0 'x': data is null");
}

TEST_F(ModelErrors, EveryOutputViewIsChecked) {
  auto [s, message] = execute({x()}, {});
  EXPECT_EQ(s, Status::InvalidArgument);
  EXPECT_EQ(message, "the model gives 1 outputs, got 0");
  vkd::TensorView bad = y();
  bad.sizes = {1, 4, 6, 10};
  std::tie(s, message) = execute({x()}, {bad});
  EXPECT_TRUE(says(message, "output 0 'y' has shape [1,4,6,10]"));
  // A failed execute leaves no timings behind; a good one afterwards clears the message.
  EXPECT_TRUE(model_->last_timings().empty());
  std::tie(s, message) = execute({x()}, {y()});
  EXPECT_EQ(s, Status::Ok);
  EXPECT_EQ(message, "");
  EXPECT_EQ(model_->last_timings().size(), 3u);
}

TEST_F(ModelErrors, AMissingBlobIsNamedWithItsStep) {
  std::filesystem::remove(path("m.p1.vkd"));
  const LoadFailure f = load_failure(plan_);
  EXPECT_EQ(f.status, Status::InvalidArgument);
  EXPECT_EQ(f.message, plan_ + ": step 2 (GPU m.p1.vkd): cannot read model file '" +
                           path("m.p1.vkd") + "': no such file");
}

TEST_F(ModelErrors, MalformedPlansAreNamed) {
  write_text("bad.partition.json", "{\"vkd_partition\": 1, \"inputs\": [");
  LoadFailure f = load_failure(path("bad.partition.json"));
  EXPECT_EQ(f.status, Status::InvalidArgument);
  EXPECT_TRUE(says(f.message, path("bad.partition.json") + ": malformed JSON: "));
  write_text("graph.json", "{\"vkd_graph\": 1}");
  f = load_failure(path("graph.json"));
  EXPECT_TRUE(says(f.message, path("graph.json") + ": not a partition plan (no 'vkd_partition'"));
  f = load_failure(path("none.partition.json"));
  EXPECT_EQ(f.message, "cannot read partition plan '" + path("none.partition.json") +
                           "': no such file");
  // A blob that is not one fails in the delegate, named as the model.
  write_text("junk.vkd", "not a blob");
  f = load_failure(path("junk.vkd"));
  EXPECT_EQ(f.status, Status::InvalidArgument);
  EXPECT_TRUE(says(f.message, "cannot load model '" + path("junk.vkd") + "' (invalid argument): "));
}

TEST_F(ModelErrors, WeightsMissingWrongOrNeedlessAreNamed) {
  const std::string weights = write_add_weights();
  const std::string plan = compile_partitioned(kCliGraphs + "/add_constant.json", weights, "a");
  LoadFailure f = load_failure(plan);
  EXPECT_EQ(f.status, Status::InvalidArgument);
  EXPECT_EQ(f.message, plan + ": step 1 (host node 2 (aten.add.Tensor)) reads constant 'other': "
                              "pass --weights W.safetensors (the original graph's weights)");
  // Weights without the tensor the plan names.
  vkd::compiler::write_safetensors(path("other.safetensors"),
                                   {{"other", "F32", {1, 4, 1, 1}, std::vector<uint8_t>(16)}});
  vkd::ModelOptions options;
  options.weights_path = path("other.safetensors");
  f = load_failure(plan, options);
  EXPECT_EQ(f.message, plan + ": step 1 (host node 2 (aten.add.Tensor)): constant 'other': no "
                              "tensor 'add.other' in " + path("other.safetensors") +
                              " (the name the plan gives under 'data')");
  // Weights for a model that reads none.
  options.weights_path = weights;
  f = load_failure(plan_, options);
  EXPECT_EQ(f.message, "--weights " + weights + ": " + plan_ +
                           " has no host step that reads a constant");
}

// `vkd compile --partition` writes no plan with a step the host cannot run; one written by
// hand (the max pool's step made an aten.cumsum, which the reference interpreter has no
// function for) is refused at load by the same check, before any device work.
TEST_F(ModelErrors, AHostStepTheInterpreterCannotRunIsRefusedAtLoad) {
  std::ifstream in(plan_);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string op = "\"host\": \"aten.max_pool2d\"";
  ASSERT_NE(text.find(op), std::string::npos) << text;
  text.replace(text.find(op), op.size(), "\"host\": \"aten.cumsum\"");
  write_text("cumsum.partition.json", text);
  const LoadFailure f = load_failure(path("cumsum.partition.json"));
  EXPECT_EQ(f.status, Status::InvalidArgument);
  EXPECT_TRUE(says(f.message, "cumsum.partition.json: step 1 (host node 3 (aten.max_pool2d)): "
                              "the host cannot run it: the CPU reference interpreter has no "
                              "function for 'aten.cumsum'"));
}

TEST_F(ModelErrors, LoadWithoutAnOutPointerFails) {
  std::string error;
  EXPECT_EQ(vkd::Model::load(plan_, {}, nullptr, &error), Status::InvalidArgument);
  EXPECT_EQ(error, "Model::load: out is null");
}

}  // namespace
}  // namespace vkd_test
