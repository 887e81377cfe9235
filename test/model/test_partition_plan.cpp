// model/PartitionPlan: a plan as `vkd compile --partition` writes it is read back (steps,
// labels, tensors, host args with their types); every data-flow mistake is found before
// anything runs, with the step and the tensor named; a host step becomes a one-node graph the
// interpreter runs, its declared outputs checked by the op's shape rule.
#include <gtest/gtest.h>

#include <string>

#include "compiler/Interpreter.h"
#include "core/Error.h"
#include "model/PartitionPlan.h"

namespace vkd::model {
namespace {

// The plan of test/compiler/graphs/qdq_maxpool.json (a max_pool host step between two
// partitions), with `steps` and `tensors` replaceable.
const std::string kSteps = R"json([
  {"delegate": "m.p0.vkd", "inputs": ["x"], "outputs": ["xd"]},
  {"host": "aten.max_pool2d", "inputs": ["xd"],
   "args": {"ceil_mode": false, "dilation": [1, 1], "kernel_size": [2, 2], "padding": [0, 0],
            "stride": [2, 2]},
   "outputs": ["m"], "origin": "node 3 (aten.max_pool2d)"},
  {"delegate": "m.p1.vkd", "inputs": ["m"], "outputs": ["y"]}])json";
const std::string kTensors = R"json({
  "x": {"dtype": "float32", "shape": [1, 4, 6, 10]},
  "xd": {"dtype": "float32", "shape": [1, 4, 6, 10]},
  "m": {"dtype": "float32", "shape": [1, 4, 3, 5]},
  "y": {"dtype": "float32", "shape": [1, 4, 3, 5]}})json";

std::string plan_text(const std::string& steps = kSteps, const std::string& tensors = kTensors) {
  return R"({"vkd_partition": 1, "inputs": ["x"], "outputs": ["y"], "steps": )" + steps +
         R"(, "tensors": )" + tensors + "}";
}

// The message of the Error parsing `text` throws ("" when it parses).
std::string plan_error(const std::string& text) {
  try {
    parse_partition_plan(text, "dir/m.partition.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    return e.what();
  }
  return "";
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

TEST(PartitionPlan, ReadsWhatTheCompilerWrites) {
  const PartitionPlan p = parse_partition_plan(plan_text(), "dir/m.partition.json");
  ASSERT_EQ(p.steps.size(), 3u);
  EXPECT_EQ(p.gpu_step_count(), 2u);
  EXPECT_FALSE(p.needs_weights());
  EXPECT_EQ(p.steps[0].label(), "step 0 (GPU m.p0.vkd)");
  EXPECT_EQ(p.steps[0].blob_path, "dir/m.p0.vkd");  // next to the plan
  EXPECT_EQ(p.steps[1].label(), "step 1 (host node 3 (aten.max_pool2d))");
  EXPECT_EQ(p.steps[1].op, "aten.max_pool2d");
  EXPECT_EQ(std::get<std::vector<int64_t>>(p.steps[1].args.at("kernel_size")),
            (std::vector<int64_t>{2, 2}));
  EXPECT_FALSE(std::get<bool>(p.steps[1].args.at("ceil_mode")));
  EXPECT_EQ(p.tensor("m").shape, (std::vector<int64_t>{1, 4, 3, 5}));
  EXPECT_TRUE(is_partition_plan_path("out/m.partition.json"));
  EXPECT_FALSE(is_partition_plan_path("m.vkd"));
}

TEST(PartitionPlan, AStepReadingAnUndefinedTensorIsNamed) {
  // Read but written by no step.
  EXPECT_EQ(plan_error(plan_text(replaced(kSteps, "\"inputs\": [\"xd\"]", "\"inputs\": [\"q\"]"),
                                 replaced(kTensors, "\"m\":",
                                          "\"q\": {\"dtype\": \"float32\", "
                                          "\"shape\": [1]}, \"m\":"))),
            "dir/m.partition.json: step 1 (host node 3 (aten.max_pool2d)): reads tensor 'q' "
            "before anything writes it (no step writes it)");
  // Not described at all.
  EXPECT_EQ(plan_error(plan_text(replaced(kSteps, "\"inputs\": [\"m\"]", "\"inputs\": [\"z\"]"))),
            "dir/m.partition.json: step 2 (GPU m.p1.vkd): reads tensor 'z', which 'tensors' does "
            "not describe");
}

TEST(PartitionPlan, AStepOutOfOrderSaysWhichStepWritesLater) {
  const std::string swapped = R"([
    {"delegate": "m.p1.vkd", "inputs": ["m"], "outputs": ["y"]},
    {"host": "aten.max_pool2d", "inputs": ["xd"], "args": {"kernel_size": [2, 2]},
     "outputs": ["m"]},
    {"delegate": "m.p0.vkd", "inputs": ["x"], "outputs": ["xd"]}])";
  EXPECT_EQ(plan_error(plan_text(swapped)),
            "dir/m.partition.json: step 0 (GPU m.p1.vkd): reads tensor 'm' before anything writes "
            "it (step 1 (host aten.max_pool2d) writes it later)\n"
            "dir/m.partition.json: step 1 (host aten.max_pool2d): reads tensor 'xd' before "
            "anything writes it (step 2 (GPU m.p0.vkd) writes it later)");
}

TEST(PartitionPlan, WritesTwiceAndUnwrittenOutputsAreErrors) {
  EXPECT_EQ(plan_error(plan_text(replaced(kSteps, "\"outputs\": [\"y\"]", "\"outputs\": [\"m\"]"))),
            "dir/m.partition.json: step 2 (GPU m.p1.vkd): writes tensor 'm', which step 1 (host "
            "node 3 (aten.max_pool2d)) already provides\n"
            "dir/m.partition.json: model output 'y' is written by no step");
  EXPECT_EQ(
      plan_error(plan_text(replaced(kSteps, "\"outputs\": [\"xd\"]", "\"outputs\": [\"x\"]"))),
      "dir/m.partition.json: step 0 (GPU m.p0.vkd): writes tensor 'x', which the model "
      "input already provides\n"
      "dir/m.partition.json: step 1 (host node 3 (aten.max_pool2d)): reads tensor 'xd' "
      "before anything writes it (no step writes it)");
}

TEST(PartitionPlan, MalformedPlansAreNamed) {
  EXPECT_EQ(plan_error(R"({"vkd_graph": 1})"),
            "dir/m.partition.json: not a partition plan (no 'vkd_partition' field; vkd run takes "
            "a .vkd blob or the MODEL.partition.json of vkd compile --partition)");
  EXPECT_EQ(plan_error(replaced(plan_text(), "\"vkd_partition\": 1", "\"vkd_partition\": 2")),
            "dir/m.partition.json: field 'vkd_partition': version 2 (this vkd reads 1)");
  EXPECT_EQ(plan_error(plan_text(replaced(kSteps, "\"delegate\": \"m.p1.vkd\",",
                                          "\"delegate\": \"m.p1.vkd\", \"host\": \"aten.relu\","))),
            "dir/m.partition.json: step 2: needs exactly one of 'delegate' (a blob) and 'host' "
            "(an op)");
  EXPECT_EQ(plan_error(plan_text(kSteps, replaced(kTensors,
                                                  "\"dtype\": \"float32\", \"shape\": "
                                                  "[1, 4, 3, 5]}}",
                                                  "\"dtype\": \"int4\", \"shape\": [1]}}"))),
            "dir/m.partition.json: tensor 'y': field 'dtype': expected \"float32\", \"float16\", "
            "\"int8\" or \"int32\", got \"int4\"");
  EXPECT_NE(plan_error("{").find("dir/m.partition.json: malformed JSON at byte 2: "),
            std::string::npos);
  EXPECT_EQ(plan_error(replaced(plan_text(), "\"outputs\": [\"y\"]",
                                "\"outputs\": [\"y\"], \"outputs\": []")),
            "dir/m.partition.json: duplicate key 'outputs' in JSON object '(top level)'");
}

// A crafted plan's sizes: [2^62 + 1, 4] has "4" elements in int64 arithmetic, and a host cat
// over such tensors wrote past 16-byte buffers. Every size and product is refused by the caps
// of core/TensorLimits.h when the plan is read, before anything is allocated.
TEST(PartitionPlan, SizesBeyondTheTensorCapsAreRefusedByName) {
  const std::string m = "\"m\": {\"dtype\": \"float32\", \"shape\": [1, 4, 3, 5]}";
  EXPECT_EQ(plan_error(plan_text(kSteps, replaced(kTensors, m,
                                                  "\"m\": {\"dtype\": \"float32\", \"shape\": "
                                                  "[4611686018427387905, 4]}"))),
            "dir/m.partition.json: tensor 'm': field 'shape' [4611686018427387905,4]: the "
            "product of the sizes (numel) is above the limit of 2^31 - 1 elements per tensor");
  // 2^31 elements exactly; 2^31 - 1 is within the caps (the data flow is what fails then).
  EXPECT_EQ(plan_error(plan_text(kSteps, replaced(kTensors, m,
                                                  "\"m\": {\"dtype\": \"int8\", \"shape\": "
                                                  "[65536, 32768]}"))),
            "dir/m.partition.json: tensor 'm': field 'shape' [65536,32768]: the product of the "
            "sizes (numel) is above the limit of 2^31 - 1 elements per tensor");
  EXPECT_EQ(plan_error(plan_text(kSteps, replaced(kTensors, m,
                                                  "\"m\": {\"dtype\": \"int8\", \"shape\": "
                                                  "[2147483647]}"))),
            "");
  // A size 0 elsewhere does not hide a product past the cap (its strides would overflow).
  EXPECT_EQ(plan_error(plan_text(kSteps, replaced(kTensors, m,
                                                  "\"m\": {\"dtype\": \"float32\", \"shape\": "
                                                  "[0, 4294967296, 4294967296]}"))),
            "dir/m.partition.json: tensor 'm': field 'shape' [0,4294967296,4294967296]: the "
            "product of the sizes (numel) is above the limit of 2^31 - 1 elements per tensor");
  EXPECT_EQ(plan_error(plan_text(kSteps, replaced(kTensors, m,
                                                  "\"m\": {\"dtype\": \"float32\", \"shape\": "
                                                  "[1, 1, 1, 1, 1, 1, 1]}"))),
            "dir/m.partition.json: tensor 'm': field 'shape' [1,1,1,1,1,1,1]: rank 7 is above "
            "the limit of 6");
  // Above int64: not read as a wrapped negative or small number.
  EXPECT_EQ(plan_error(plan_text(kSteps, replaced(kTensors, m,
                                                  "\"m\": {\"dtype\": \"float32\", \"shape\": "
                                                  "[18446744073709551615]}"))),
            "dir/m.partition.json: tensor 'm': field 'shape': must be an integer of int64, got "
            "18446744073709551615");
}

// A host step's arguments are checked by its op's rule without overflowing either: a view whose
// size multiplies to "4" in int64 arithmetic.
TEST(PartitionPlan, AViewSizeBeyondTheCapsIsRefusedByItsRule) {
  const std::string steps = R"([
    {"host": "aten.view_copy", "inputs": ["x"], "args": {"size": [4611686018427387905, 4]},
     "outputs": ["y"]}])";
  const std::string tensors = R"({"x": {"dtype": "float32", "shape": [1, 4]},
                                  "y": {"dtype": "float32", "shape": [1, 4]}})";
  const PartitionPlan p = parse_partition_plan(plan_text(steps, tensors), "m.partition.json");
  try {
    host_step_graph(p, p.steps[0], {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_STREQ(e.what(),
                 "m.partition.json: step 0: aten.view_copy: argument 'size': "
                 "[4611686018427387905, 4] has more elements than a tensor may "
                 "(2147483647)");
  }
}

// A plan's blobs are files of its own directory (compiler/README.md, "Partitioning"): a name
// with a directory part, absolute or with '..', is refused when the plan is read.
TEST(PartitionPlan, ABlobOutsideThePlansDirectoryIsRefused) {
  for (const std::string name : {"../m.p0.vkd", "/etc/passwd", "sub/m.p0.vkd", "..", "."}) {
    EXPECT_EQ(plan_error(plan_text(replaced(kSteps, "\"m.p0.vkd\"", "\"" + name + "\""))),
              "dir/m.partition.json: step 0: field 'delegate': '" + name +
                  "' is not a plain "
                  "file name (a plan's blobs are files of its own directory: no '/', '.' or '..')");
  }
}

TEST(PartitionPlan, HostStepRunsAsOneNodeGraph) {
  const PartitionPlan p = parse_partition_plan(plan_text(), "m.partition.json");
  const compiler::Graph g = host_step_graph(p, p.steps[1], {});
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.inputs, (std::vector<std::string>{"xd"}));
  std::vector<float> x(240);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  const auto values =
      compiler::interpret(g, {{"xd", compiler::HostTensor::from_floats({1, 4, 6, 10}, x)}});
  const std::vector<float> m = values.at("m").to_floats();
  ASSERT_EQ(m.size(), 60u);
  EXPECT_EQ(m[0], 11.0f);  // max of x[0], x[1], x[10], x[11]
}

TEST(PartitionPlan, HostStepOutputsMustFitTheOpsShapeRule) {
  const PartitionPlan p = parse_partition_plan(
      plan_text(kSteps, replaced(kTensors, "\"shape\": [1, 4, 3, 5]},\n  \"y\"",
                                 "\"shape\": [1, 4, 3, 4]},\n  \"y\"")),
      "m.partition.json");
  try {
    host_step_graph(p, p.steps[1], {});
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("m.partition.json: step 1: node 3 (aten.max_pool2d)", 0), 0u)
        << message;
    EXPECT_NE(message.find("[1, 4, 3, 5]"), std::string::npos) << message;
  }
}

TEST(PartitionPlan, HostStepTheInterpreterCannotRunIsRefusedFirst) {
  const PartitionPlan p = parse_partition_plan(
      plan_text(replaced(kSteps, "aten.max_pool2d\", \"inputs\"", "aten.frobnicate\", \"inputs\"")),
      "m.partition.json");
  try {
    host_step_graph(p, p.steps[1], {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "m.partition.json: step 1 (host node 3 (aten.max_pool2d)): the host cannot run "
                 "it: the CPU reference interpreter has no function for 'aten.frobnicate'");
  }
}

}  // namespace
}  // namespace vkd::model
