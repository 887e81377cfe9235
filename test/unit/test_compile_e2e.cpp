// End to end: graph IR -> compiler -> blob -> delegate on the device, compared with the CPU
// reference interpreter running the ORIGINAL (unfused, unlowered) graph.
#include <gtest/gtest.h>

#include <random>

#include "partitioner_schema/Compiler.h"
#include "partitioner_schema/Interpreter.h"
#include "partitioner_schema/Parse.h"
#include "partitioner_schema/ShapeInference.h"
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
  EXPECT_EQ(r.graph.nodes.size(), 4u);

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

TEST(CompileEndToEnd, SameGraphGivesByteIdenticalBlobs) {
  const CompileResult a = compile_file(kGraphs + "/qdq_clone.json", "", {});
  const CompileResult b = compile_file(kGraphs + "/qdq_clone.json", "", {});
  EXPECT_EQ(a.blob, b.blob);
}

}  // namespace
