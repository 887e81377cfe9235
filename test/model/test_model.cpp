// vkd::Model end to end: partitioned models compiled from the compiler's and the CLI's test
// graphs (GPU partitions with host steps between them) and a plain blob, run whole on the
// default device and compared byte for byte with the reference interpreter on the original,
// unpartitioned graph (as the CLI's run_partitioned case does: the GPU's bytes equal the
// reference's, README "Numerics"); the steps and timings the API describes.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "test/model/ModelFixture.h"

namespace vkd_test {
namespace {

using Profiling = vkd::Delegate::Profiling;

// qdq_maxpool.json: quantize -> clone -> dequantize on the GPU, the float max_pool on the host
// (no kernel writes its q's range -127..127), quantize -> dequantize on the GPU again.
TEST_F(ModelTest, PartitionedModelMatchesTheInterpreterOnTheWholeGraph) {
  const std::string graph = kCompilerGraphs + "/qdq_maxpool.json";
  const std::unique_ptr<vkd::Model> model = load(compile_partitioned(graph, "", "m"));
  ASSERT_TRUE(model);
  ASSERT_EQ(model->input_count(), 1u);
  EXPECT_EQ(model->input(0).name, "x");
  EXPECT_EQ(model->input(0).host_dtype, vkd::HostDType::Float32);
  EXPECT_EQ(model->input(0).sizes, (std::vector<int64_t>{1, 4, 6, 10}));
  ASSERT_EQ(model->output_count(), 1u);
  EXPECT_EQ(model->output(0).name, "y");
  EXPECT_EQ(model->output(0).sizes, (std::vector<int64_t>{1, 4, 3, 5}));
  EXPECT_EQ(model->input(1).name, "");  // out of range: empty

  ASSERT_EQ(model->step_count(), 3u);
  const vkd::StepInfo host = model->step(1);
  EXPECT_EQ(host.place, vkd::StepPlace::Host);
  EXPECT_EQ(host.label, "step 1 (host node 3 (aten.max_pool2d))");
  EXPECT_EQ(host.op, "aten.max_pool2d");
  EXPECT_EQ(host.inputs, std::vector<std::string>{"xd"});
  EXPECT_EQ(host.outputs, std::vector<std::string>{"m"});
  const vkd::StepInfo gpu = model->step(2);
  EXPECT_EQ(gpu.place, vkd::StepPlace::Gpu);
  EXPECT_EQ(gpu.label, "step 2 (GPU m.p1.vkd)");
  EXPECT_EQ(gpu.blob, "m.p1.vkd");
  EXPECT_EQ(gpu.blob_path, path("m.p1.vkd"));
  EXPECT_GT(gpu.memory.device_bytes, 0u);

  for (uint32_t seed : {1u, 2u}) {
    const TensorMap inputs = {{"x", random_input({1, 4, 6, 10}, seed)}};
    EXPECT_TRUE(same_outputs(interpret_file(graph, "", inputs), run_model(*model, inputs)))
        << "seed " << seed;
  }
  const std::vector<vkd::StepTiming> timings = model->last_timings();
  ASSERT_EQ(timings.size(), 3u);
  for (size_t i = 0; i < timings.size(); ++i) {
    EXPECT_EQ(timings[i].step, i);
    EXPECT_EQ(timings[i].label, model->step(i).label);
    EXPECT_EQ(timings[i].place, model->step(i).place);
    EXPECT_GT(timings[i].wall_us, 0.0);
  }
  EXPECT_TRUE(timings[1].profile.empty());  // the host step has no GPU profile
  EXPECT_EQ(model->validation_message_count(), 0u);
}

// add_constant.json: the float add of a [1,1,4,1,1] constant (rank 5: no device tensor) is a
// host step; the plan names the constant's tensor in the original weights file ("data":
// "add.other"), so those weights are what the model takes.
TEST_F(ModelTest, HostStepReadsItsConstantFromTheOriginalWeights) {
  const std::string graph = kCliGraphs + "/add_constant.json";
  const std::string weights = write_add_weights();
  vkd::ModelOptions options;
  options.weights_path = weights;
  const std::unique_ptr<vkd::Model> model = load(compile_partitioned(graph, weights, "a"), options);
  ASSERT_TRUE(model);
  EXPECT_EQ(model->step(1).op, "aten.add.Tensor");
  EXPECT_EQ(model->step(1).inputs, (std::vector<std::string>{"xd", "other"}));
  const TensorMap inputs = {{"x", random_input({1, 4, 4, 4}, 3)}};
  EXPECT_TRUE(same_outputs(interpret_file(graph, weights, inputs), run_model(*model, inputs)));
  EXPECT_EQ(model->validation_message_count(), 0u);
}

// int8 tensors cross between the host and the GPU: a rank-5 input (device tensors are at most
// 4-D) leaves its quantize and the view back to 4-D to host steps, whose int8 result (int8 NCHW
// on the host) a partition dequantizes and requantizes into an int8 model output.
TEST_F(ModelTest, Int8TensorsCrossBetweenHostAndGpu) {
  write_text("int8_view.json", R"({ "vkd_graph": 1, "inputs": ["x"], "outputs": ["y"],
  "values": { "x": {"dtype": "float32", "shape": [1, 1, 4, 6, 10]} },
  "nodes": [
    {"op": "quantized_decomposed.quantize_per_tensor", "inputs": ["x"],
     "args": {"scale": 0.05, "zero_point": 3, "quant_min": -128, "quant_max": 127, "dtype": "int8"},
     "outputs": ["xq"]},
    {"op": "aten.view_copy", "inputs": ["xq"], "args": {"size": [1, 4, 6, 10]}, "outputs": ["v"]},
    {"op": "quantized_decomposed.dequantize_per_tensor", "inputs": ["v"],
     "args": {"scale": 0.05, "zero_point": 3, "quant_min": -128, "quant_max": 127, "dtype": "int8"},
     "outputs": ["d"]},
    {"op": "quantized_decomposed.quantize_per_tensor", "inputs": ["d"],
     "args": {"scale": 0.07, "zero_point": -2, "quant_min": -128, "quant_max": 127, "dtype": "int8"},
     "outputs": ["y"]} ] })");
  const std::string graph = path("int8_view.json");
  const std::unique_ptr<vkd::Model> model = load(compile_partitioned(graph, "", "q"));
  ASSERT_TRUE(model);
  ASSERT_EQ(model->step_count(), 3u);
  EXPECT_EQ(model->step(1).place, vkd::StepPlace::Host);
  EXPECT_EQ(model->step(2).place, vkd::StepPlace::Gpu);
  EXPECT_EQ(model->input(0).storage, "host");  // only host steps read it
  EXPECT_EQ(model->input(0).sizes, (std::vector<int64_t>{1, 1, 4, 6, 10}));
  EXPECT_EQ(model->output(0).host_dtype, vkd::HostDType::Int8);
  const TensorMap inputs = {{"x", random_input({1, 1, 4, 6, 10}, 4)}};
  EXPECT_TRUE(same_outputs(interpret_file(graph, "", inputs), run_model(*model, inputs)));
  EXPECT_EQ(model->validation_message_count(), 0u);
}

// A plain blob is a model of one GPU step with the blob's own inputs and outputs.
TEST_F(ModelTest, PlainBlobIsOneGpuStep) {
  const std::string graph = kCompilerGraphs + "/qdq_clone.json";
  const std::unique_ptr<vkd::Model> model = load(compile_blob(graph, "c.vkd"));
  ASSERT_TRUE(model);
  ASSERT_EQ(model->step_count(), 1u);
  EXPECT_EQ(model->step(0).place, vkd::StepPlace::Gpu);
  EXPECT_EQ(model->step(0).label, "step 0 (GPU " + path("c.vkd") + ")");
  EXPECT_EQ(model->input(0).name, "x");
  EXPECT_EQ(model->output(0).name, "y");
  const TensorMap inputs = {{"x", random_input({1, 5, 7, 9}, 5)}};
  EXPECT_TRUE(same_outputs(interpret_file(graph, "", inputs), run_model(*model, inputs)));
  ASSERT_EQ(model->last_timings().size(), 1u);
  EXPECT_EQ(model->validation_message_count(), 0u);
}

// The dispatch nodes a delegate of `blob_path` lists (Delegate::describe(): a "node N: kernel"
// line each), counted apart from any profile.
size_t dispatch_nodes(const std::string& blob_path) {
  std::ifstream file(blob_path, std::ios::binary);
  const std::vector<uint8_t> blob((std::istreambuf_iterator<char>(file)), {});
  std::unique_ptr<vkd::Delegate> d;
  std::string error;
  EXPECT_EQ(vkd::Delegate::create(blob.data(), blob.size(), {}, &d, &error), vkd::Status::Ok)
      << error;
  if (!d) return 0;
  const std::string text = d->describe();
  size_t n = 0;
  for (size_t at = text.find(": kernel "); at != std::string::npos;
       at = text.find(": kernel ", at + 1)) {
    ++n;
  }
  return n;
}

// set_profiling reaches every GPU step's delegate: Off (and Span) leave no per-dispatch profile,
// PerDispatch gives one entry per dispatch node the step's blob has; the outputs stay the
// reference's in every mode.
TEST_F(ModelTest, SetProfilingTimesEveryGpuStepOrNone) {
  const std::string graph = kCompilerGraphs + "/qdq_maxpool.json";
  const std::unique_ptr<vkd::Model> model = load(compile_partitioned(graph, "", "m"));
  ASSERT_TRUE(model);
  const TensorMap inputs = {{"x", random_input({1, 4, 6, 10}, 6)}};
  const TensorMap expected = interpret_file(graph, "", inputs);
  for (const Profiling mode : {Profiling::Off, Profiling::Span, Profiling::PerDispatch}) {
    ASSERT_EQ(model->set_profiling(mode), vkd::Status::Ok) << model->last_error();
    EXPECT_TRUE(same_outputs(expected, run_model(*model, inputs)));
    const std::vector<vkd::StepTiming> timings = model->last_timings();
    ASSERT_EQ(timings.size(), 3u);
    for (const vkd::StepTiming& t : timings) {
      const vkd::StepInfo step = model->step(t.step);
      const bool gpu = step.place == vkd::StepPlace::Gpu;
      const size_t nodes = gpu ? dispatch_nodes(step.blob_path) : 0;
      EXPECT_EQ(nodes > 0, gpu) << t.label;
      EXPECT_EQ(t.profile.size(), mode == Profiling::PerDispatch ? nodes : 0u)
          << t.label << ", mode " << static_cast<int>(mode);
    }
  }
  EXPECT_EQ(model->validation_message_count(), 0u);
}

// Without options.delegate.profiling only Off is taken, also by a model of host steps alone
// (the rule does not depend on where the steps run); with it, such a model takes every mode.
TEST_F(ModelTest, SetProfilingNeedsProfilingAtLoad) {
  vkd::ModelOptions untimed;
  untimed.delegate.profiling = false;
  const std::string plan = compile_partitioned(kCompilerGraphs + "/qdq_maxpool.json", "", "m");
  write_text("host_only.json", R"({ "vkd_graph": 1, "inputs": ["x"], "outputs": ["n"],
  "values": { "x": {"dtype": "float32", "shape": [1, 4, 6, 10]} },
  "nodes": [
    {"op": "aten.layer_norm", "inputs": ["x"], "args": {"normalized_shape": [6, 10], "eps": 1e-5},
     "outputs": ["n"]} ] })");
  const std::string host_plan = compile_partitioned(path("host_only.json"), "", "h");
  for (const std::string& p : {plan, host_plan}) {
    const std::unique_ptr<vkd::Model> model = load(p, untimed);
    ASSERT_TRUE(model);
    for (const Profiling mode : {Profiling::PerDispatch, Profiling::Span}) {
      EXPECT_EQ(model->set_profiling(mode), vkd::Status::InvalidArgument) << p;
      EXPECT_EQ(model->last_error(),
                std::string("set_profiling(") + (mode == Profiling::Span ? "Span" : "PerDispatch") +
                    "): the model was loaded with options.delegate.profiling off, so its GPU "
                    "steps record no timestamps");
    }
    EXPECT_EQ(model->set_profiling(Profiling::Off), vkd::Status::Ok) << model->last_error();
    EXPECT_EQ(model->last_error(), "");
  }
  const std::unique_ptr<vkd::Model> host = load(host_plan);
  ASSERT_TRUE(host);
  ASSERT_EQ(host->step_count(), 1u);
  EXPECT_EQ(host->step(0).place, vkd::StepPlace::Host);
  EXPECT_EQ(host->set_profiling(Profiling::PerDispatch), vkd::Status::Ok) << host->last_error();
}

}  // namespace
}  // namespace vkd_test
