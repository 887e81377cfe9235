// End to end: graph IR -> compiler -> blob -> delegate on the device, compared with the CPU
// reference interpreter running the ORIGINAL (unfused, unlowered) graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "compiler/Compiler.h"
#include "compiler/Interpreter.h"
#include "compiler/Parse.h"
#include "compiler/ShapeInference.h"
#include "test/unit/GpuTest.h"
#include "vkdelegate/Delegate.hpp"

namespace {

using namespace vkd::compiler;

const std::string kGraphs = VKD_TEST_GRAPH_DIR;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

TEST(CompileEndToEnd, QuantizedChainWithClonesMatchesTheInterpreter) {
  const CompileResult r = compile_file(kGraphs + "/qdq_clone.json", "", {});
  ASSERT_TRUE(r.ok());
  // Folding removed both identities; no conversion was needed.
  size_t identities = 0, conversions = 0;
  for (const auto& n : r.graph.nodes) {
    identities += n.op == "identity";
    conversions += n.op == "q8ta_convert" || n.op == "float_convert";
  }
  EXPECT_EQ(identities, 0u);
  EXPECT_EQ(conversions, 0u);
  // The clones and the second quantize's requantization are one q8ta_clamp between the model's
  // quantize and dequantize.
  EXPECT_EQ(r.graph.nodes.size(), 3u);

  std::unique_ptr<vkd::Delegate> d;
  std::string error;
  ASSERT_EQ(vkd::Delegate::create(r.blob.data(), r.blob.size(), {}, &d, &error), vkd::Status::Ok)
      << error;
  const std::vector<int64_t> shape = {1, 5, 7, 9};
  const auto x = random_floats(315, 7);
  std::vector<float> y(315);
  ASSERT_EQ(d->execute({{x.data(), x.size() * 4, vkd::HostDType::Float32, shape}},
                       {{y.data(), y.size() * 4, vkd::HostDType::Float32, shape}}),
            vkd::Status::Ok)
      << d->last_error();

  Graph original = parse_graph_file(kGraphs + "/qdq_clone.json", "");
  infer_shapes(original);
  const auto ref = interpret(original, {{"x", HostTensor::from_floats(shape, x)}});
  EXPECT_TRUE(vkd_test::floats_equal(ref.at("y").to_floats(), y));
  EXPECT_EQ(d->validation_message_count(), 0u);
}

// dq -> hardswish -> q -> dq -> gelu(tanh) -> q: two q8ta_lut nodes whose blob tables the
// runtime reads; then log_softmax (float output) and softmax requantized to 1/256, both over the
// last dim. The table chain equals the interpreter bit for bit; softmax, computed with the
// device's exp and log, within 1e-5 relative (log_softmax) and one output step (softmax).
TEST(CompileEndToEnd, TableActivationsAndSoftmaxMatchTheInterpreter) {
  const CompileResult r = compile_file(kGraphs + "/qdq_activations.json", "", {});
  ASSERT_TRUE(r.ok());
  std::vector<std::string> ops;
  for (const auto& n : r.graph.nodes) ops.push_back(n.op);
  EXPECT_EQ(ops,
            (std::vector<std::string>{"q8ta_quantize", "q8ta_lut", "q8ta_lut", "q8ta_dequantize",
                                      "q8ta_softmax_dq", "q8ta_softmax", "q8ta_dequantize"}));
  std::unique_ptr<vkd::Delegate> d;
  std::string error;
  ASSERT_EQ(vkd::Delegate::create(r.blob.data(), r.blob.size(), {}, &d, &error), vkd::Status::Ok)
      << error;
  const std::vector<int64_t> shape = {1, 5, 7, 9};
  const auto x = random_floats(315, 5);
  std::vector<float> h(315), y(315), z(315);
  auto view = [&](std::vector<float>& v) {
    return vkd::TensorView{v.data(), v.size() * 4, vkd::HostDType::Float32, shape};
  };
  ASSERT_EQ(d->execute({{x.data(), x.size() * 4, vkd::HostDType::Float32, shape}},
                       {view(h), view(y), view(z)}),
            vkd::Status::Ok)
      << d->last_error();

  Graph original = parse_graph_file(kGraphs + "/qdq_activations.json", "");
  infer_shapes(original);
  const auto ref = interpret(original, {{"x", HostTensor::from_floats(shape, x)}});
  EXPECT_TRUE(vkd_test::floats_equal(ref.at("h").to_floats(), h));
  const std::vector<float> y_ref = ref.at("y").to_floats(), z_ref = ref.at("z").to_floats();
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_NEAR(y[i], y_ref[i], 1e-5 * std::max(1.0f, std::fabs(y_ref[i]))) << i;
    EXPECT_NEAR(z[i], z_ref[i], 1.0 / 256 + 1e-7) << i;
  }
  EXPECT_EQ(d->validation_message_count(), 0u);
}

TEST(CompileEndToEnd, SameGraphGivesByteIdenticalBlobs) {
  const CompileResult a = compile_file(kGraphs + "/qdq_clone.json", "", {});
  const CompileResult b = compile_file(kGraphs + "/qdq_clone.json", "", {});
  EXPECT_EQ(a.blob, b.blob);
}

// --partition: the max-pool (no kernel writes its -127..127 output range) is left to the host
// between two partitions; running partition 0 on the device, the host node on the CPU and
// partition 1 on the device gives the interpreter's answer for the whole graph.
TEST(CompileEndToEnd, PartitionedGraphRunsPieceByPiece) {
  Graph original = parse_graph_file(kGraphs + "/qdq_maxpool.json", "");
  const PartitionedResult r = compile_partitioned(original, {});
  ASSERT_EQ(r.parts.size(), 2u);
  ASSERT_EQ(r.plan.steps.size(), 3u);
  EXPECT_TRUE(r.plan.steps[0].delegate);
  EXPECT_FALSE(r.plan.steps[1].delegate);
  EXPECT_TRUE(r.plan.steps[2].delegate);
  const Node& host = r.lowered.nodes.at(r.plan.steps[1].index);
  EXPECT_EQ(host.op, "aten.max_pool2d");
  EXPECT_EQ(r.plan.partitions[0].graph.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(r.plan.partitions[0].graph.outputs, std::vector<std::string>{"xd"});
  EXPECT_EQ(r.plan.partitions[1].graph.inputs, std::vector<std::string>{"m"});
  EXPECT_EQ(r.plan.partitions[1].graph.outputs, std::vector<std::string>{"y"});

  const std::vector<int64_t> in_shape = {1, 4, 6, 10}, mid_shape = {1, 4, 3, 5};
  const auto x = random_floats(240, 11);
  const auto run = [](const CompileResult& part, const std::vector<float>& in,
                      const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape) {
    std::unique_ptr<vkd::Delegate> d;
    std::string error;
    EXPECT_EQ(vkd::Delegate::create(part.blob.data(), part.blob.size(), {}, &d, &error),
              vkd::Status::Ok)
        << error;
    size_t n = 1;
    for (auto s : out_shape) n *= static_cast<size_t>(s);
    std::vector<float> out(n);
    EXPECT_EQ(d->execute({{in.data(), in.size() * 4, vkd::HostDType::Float32, in_shape}},
                         {{out.data(), out.size() * 4, vkd::HostDType::Float32, out_shape}}),
              vkd::Status::Ok)
        << d->last_error();
    EXPECT_EQ(d->validation_message_count(), 0u);
    return out;
  };
  const auto xd = run(r.parts[0], x, in_shape, in_shape);
  // The host step, on the CPU: a one-node graph holding the node the plan left to the host.
  Graph host_graph;
  host_graph.add_value(r.lowered.value("xd"));
  host_graph.add_value(r.lowered.value("m"));
  host_graph.inputs = {"xd"};
  host_graph.outputs = {"m"};
  host_graph.nodes = {host};
  const auto m =
      interpret(host_graph, {{"xd", HostTensor::from_floats(in_shape, xd)}}).at("m").to_floats();
  const auto y = run(r.parts[1], m, mid_shape, mid_shape);

  infer_shapes(original);
  const auto ref = interpret(original, {{"x", HostTensor::from_floats(in_shape, x)}});
  EXPECT_TRUE(vkd_test::floats_equal(ref.at("xd").to_floats(), xd));
  EXPECT_TRUE(vkd_test::floats_equal(ref.at("y").to_floats(), y));
}

TEST(CompileEndToEnd, PartitionPlanNamesBoundaryTensors) {
  const PartitionedResult r =
      compile_partitioned(parse_graph_file(kGraphs + "/qdq_maxpool.json", ""), {});
  const std::string json = partition_plan_json(r, {"a.p0.vkd", "a.p1.vkd"});
  for (const char* needle :
       {"\"delegate\": \"a.p0.vkd\"", "\"host\": \"aten.max_pool2d\"", "\"delegate\": \"a.p1.vkd\"",
        "\"origin\": \"node 3 (aten.max_pool2d)\"", "\"xd\": {", "\"m\": {"}) {
    EXPECT_NE(json.find(needle), std::string::npos) << needle << "\n" << json;
  }
}

}  // namespace
