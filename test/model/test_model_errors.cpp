// vkd::Model's errors: every load problem (a missing blob, a malformed plan, a blob outside the
// plan's directory, a link or not a blob, sizes past the caps, the weights missing or wrong, a
// host step the interpreter cannot run) and every execute problem (input and output count,
// dtype, shape, bytes, null data) is a Status with a message naming what is at fault; nothing
// throws.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <tuple>

#include "compiler/Safetensors.h"
#include "test/model/ModelFixture.h"
#include "vkdelegate/vkd_model.h"

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
  EXPECT_TRUE(says(message,
                   "input 0 'x' has shape [1,4,6,9], the model was compiled for "
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
  EXPECT_TRUE(says(f.message, path("bad.partition.json") + ": malformed JSON at byte 33: "));
  write_text("graph.json", "{\"vkd_graph\": 1}");
  f = load_failure(path("graph.json"));
  EXPECT_TRUE(says(f.message, path("graph.json") + ": not a partition plan (no 'vkd_partition'"));
  f = load_failure(path("none.partition.json"));
  EXPECT_EQ(f.message,
            "cannot read partition plan '" + path("none.partition.json") + "': no such file");
  // A file that is not a blob is refused by its first bytes, which the message does not quote.
  write_text("junk.vkd", "not a blob");
  f = load_failure(path("junk.vkd"));
  EXPECT_EQ(f.status, Status::InvalidArgument);
  EXPECT_EQ(f.message,
            "cannot read model file '" + path("junk.vkd") + "': it is not a vkdelegate blob");
}

// The plan as `vkd compile --partition` wrote it, with `from` replaced by `to`, as NAME.
std::string derived_plan(const std::string& plan, const std::string& name, const std::string& from,
                         const std::string& to) {
  std::ifstream in(plan);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  const std::string out = std::filesystem::path(plan).parent_path() / name;
  std::ofstream(out) << text;
  return out;
}

// Model.hpp: a plan's blobs are read from its directory. A name that leaves it, a link out of
// it (or to a blob beside it) and a file that is not a blob are refused at load, and nothing of
// a file that is not ours is quoted.
TEST_F(ModelErrors, BlobsAreFilesOfThePlansDirectoryOnly) {
  for (const std::string name : {"../m.p0.vkd", "/etc/passwd"}) {
    const LoadFailure f =
        load_failure(derived_plan(plan_, "out.partition.json", "\"m.p0.vkd\"", "\"" + name + "\""));
    EXPECT_EQ(f.status, Status::InvalidArgument);
    EXPECT_EQ(f.message, path("out.partition.json") + ": step 0: field 'delegate': '" + name +
                             "' is not a plain file name (a plan's blobs are files of its own "
                             "directory: no '/', '.' or '..')");
  }
  std::filesystem::create_symlink("m.p0.vkd", path("link.vkd"));
  LoadFailure f =
      load_failure(derived_plan(plan_, "link.partition.json", "\"m.p0.vkd\"", "\"link.vkd\""));
  EXPECT_EQ(f.message, path("link.partition.json") +
                           ": step 0 (GPU link.vkd): cannot read model "
                           "file '" +
                           path("link.vkd") + "': it is a symbolic link");
  write_text("notes.txt", "root:x:0:0:root:/root:/bin/bash\n");
  f = load_failure(derived_plan(plan_, "notes.partition.json", "\"m.p0.vkd\"", "\"notes.txt\""));
  EXPECT_EQ(f.message, path("notes.partition.json") +
                           ": step 0 (GPU notes.txt): cannot read "
                           "model file '" +
                           path("notes.txt") + "': it is not a vkdelegate blob");
}

// A crafted plan: a view to [2^62 + 1, 240] ("240" elements in int64 arithmetic, those of the
// input), two of them concatenated by a host cat that wrote past its 960-byte buffers (SIGSEGV
// in execute). Refused at load through both APIs, naming the tensor.
TEST_F(ModelErrors, ACraftedPlansSizesAreRefusedAtLoad) {
  write_text("cat.partition.json", R"({"vkd_partition": 1, "inputs": ["x"], "outputs": ["y"],
    "steps": [
      {"host": "aten.view_copy", "inputs": ["x"], "args": {"size": [4611686018427387905, 240]},
       "outputs": ["v"]},
      {"host": "aten.cat", "inputs": ["v", "v"], "args": {"dim": 1}, "outputs": ["c"]},
      {"host": "aten.view_copy", "inputs": ["c"], "args": {"size": [1, 4, 6, 20]},
       "outputs": ["y"]}],
    "tensors": {"x": {"dtype": "float32", "shape": [1, 4, 6, 10]},
                "v": {"dtype": "float32", "shape": [4611686018427387905, 240]},
                "c": {"dtype": "float32", "shape": [4611686018427387905, 480]},
                "y": {"dtype": "float32", "shape": [1, 4, 6, 20]}}})");
  const std::string expected =
      path("cat.partition.json") +
      ": tensor 'v': field 'shape' [4611686018427387905,240]: the "
      "product of the sizes (numel) is above the limit of 2^31 - 1 elements per tensor";
  const LoadFailure f = load_failure(path("cat.partition.json"));
  EXPECT_EQ(f.status, Status::InvalidArgument);
  EXPECT_EQ(f.message, expected);
  vkd_model* model = nullptr;
  EXPECT_EQ(vkd_model_load(path("cat.partition.json").c_str(), nullptr, nullptr, &model),
            VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(vkd_model_load_error(), expected);
}

TEST_F(ModelErrors, WeightsMissingOrWrongAreNamedNeedlessOnesUnread) {
  const std::string weights = write_add_weights();
  const std::string plan = compile_partitioned(kCliGraphs + "/add_constant.json", weights, "a");
  LoadFailure f = load_failure(plan);
  EXPECT_EQ(f.status, Status::InvalidArgument);
  EXPECT_EQ(f.message, plan +
                           ": step 1 (host node 2 (aten.add.Tensor)) reads constant 'other': "
                           "pass --weights W.safetensors (the original graph's weights)");
  // Weights without the tensor the plan names.
  vkd::compiler::write_safetensors(path("other.safetensors"),
                                   {{"other", "F32", {1, 4, 1, 1}, std::vector<uint8_t>(16)}});
  vkd::ModelOptions options;
  options.weights_path = path("other.safetensors");
  f = load_failure(plan, options);
  EXPECT_EQ(f.message, plan +
                           ": step 1 (host node 2 (aten.add.Tensor)): constant 'other': no "
                           "tensor 'add.other' in " +
                           path("other.safetensors") + " (the name the plan gives under 'data')");
  // Weights for a model that reads none: not read (vkd run says the file is unused), so one
  // that does not exist is no error either.
  options.weights_path = weights;
  EXPECT_TRUE(load(plan_, options));
  options.weights_path = path("absent.safetensors");
  EXPECT_TRUE(load(plan_, options));
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
  EXPECT_TRUE(says(f.message,
                   "cumsum.partition.json: step 1 (host node 3 (aten.max_pool2d)): "
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
