// Partitioning (compiler/Partition.h) on structural graphs: which nodes run on the
// backend is decided by the test's predicate (ops named "B..."), so cycles through the host can
// be built with any number of inputs.
#include <gtest/gtest.h>

#include "compiler/Partition.h"

namespace {

using namespace vkd::compiler;

bool on_backend(const Node& n) { return n.op[0] == 'B'; }

struct Builder {
  Graph g;
  void value(const std::string& name) {
    Value v;
    v.name = name;
    v.shape = {4};
    g.add_value(v);
  }
  void input(const std::string& name) {
    value(name);
    g.inputs.push_back(name);
  }
  void node(const std::string& op, std::vector<std::string> in, const std::string& out) {
    value(out);
    g.nodes.push_back({op, std::move(in), {}, {out}, out + " (" + op + ")"});
  }
};

std::vector<std::string> ops_of(const Partition& p) {
  std::vector<std::string> ops;
  for (const auto& n : p.graph.nodes) ops.push_back(n.op);
  return ops;
}

TEST(Partition, NodeThatWouldCloseACycleThroughTheHostStartsANewPartition) {
  Builder b;
  b.input("x");
  b.node("B1", {"x"}, "a");
  b.node("H", {"a"}, "h");
  b.node("B2", {"a", "h"}, "c");  // reads B1 directly and through the host node
  b.g.outputs = {"c"};
  const PartitionPlan plan = partition_graph(b.g, on_backend);
  ASSERT_EQ(plan.partitions.size(), 2u);
  ASSERT_EQ(plan.steps.size(), 3u);
  EXPECT_TRUE(plan.steps[0].delegate);
  EXPECT_FALSE(plan.steps[1].delegate);
  EXPECT_EQ(plan.steps[1].index, 1u);
  EXPECT_TRUE(plan.steps[2].delegate);
  EXPECT_EQ(ops_of(plan.partitions[0]), std::vector<std::string>{"B1"});
  EXPECT_EQ(plan.partitions[0].graph.outputs, std::vector<std::string>{"a"});
  EXPECT_EQ(ops_of(plan.partitions[1]), std::vector<std::string>{"B2"});
  EXPECT_EQ(plan.partitions[1].graph.inputs, (std::vector<std::string>{"a", "h"}));
  EXPECT_EQ(plan.partitions[1].graph.outputs, std::vector<std::string>{"c"});
}

TEST(Partition, BranchesThatMeetOnTheBackendMerge) {
  Builder b;
  b.input("x");
  b.node("B1", {"x"}, "a");
  b.node("B2", {"x"}, "b");
  b.node("B3", {"a", "b"}, "c");
  b.node("H", {"c"}, "y");
  b.g.outputs = {"y"};
  const PartitionPlan plan = partition_graph(b.g, on_backend);
  ASSERT_EQ(plan.partitions.size(), 1u);
  EXPECT_EQ(ops_of(plan.partitions[0]), (std::vector<std::string>{"B1", "B2", "B3"}));
  EXPECT_EQ(plan.partitions[0].graph.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(plan.partitions[0].graph.outputs, std::vector<std::string>{"c"});
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_FALSE(plan.steps[1].delegate);
}

TEST(Partition, IndependentHostBranchDoesNotSplitAChain) {
  // B1 -> B2 with a host node beside them that reads x only: one partition.
  Builder b;
  b.input("x");
  b.node("B1", {"x"}, "a");
  b.node("H", {"x"}, "h");
  b.node("B2", {"a"}, "c");
  b.g.outputs = {"c", "h"};
  const PartitionPlan plan = partition_graph(b.g, on_backend);
  ASSERT_EQ(plan.partitions.size(), 1u);
  EXPECT_EQ(ops_of(plan.partitions[0]), (std::vector<std::string>{"B1", "B2"}));
  EXPECT_EQ(plan.partitions[0].graph.outputs, std::vector<std::string>{"c"});
}

TEST(Partition, ValueReadInsideAndOutsideIsAnOutput) {
  Builder b;
  b.input("x");
  b.node("B1", {"x"}, "a");
  b.node("B2", {"a"}, "c");
  b.node("H", {"a"}, "h");
  b.g.outputs = {"c", "h"};
  const PartitionPlan plan = partition_graph(b.g, on_backend);
  ASSERT_EQ(plan.partitions.size(), 1u);
  EXPECT_EQ(plan.partitions[0].graph.outputs, (std::vector<std::string>{"a", "c"}));
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_TRUE(plan.steps[0].delegate);  // the host node needs the partition's output first
}

// Whatever the predicate, a node touching a tensor above rank 4 has one to name.
TEST(Partition, TensorBeyondDeviceIsTheFirstAboveRank4) {
  Builder b;
  b.input("x");
  b.node("B1", {"x", ""}, "a");
  b.node("H", {"a"}, "h");
  b.g.value("h").shape = {1, 1, 2, 2, 4};
  b.g.outputs = {"h"};
  EXPECT_EQ(tensor_beyond_device(b.g, b.g.nodes[0]), nullptr);
  const Value* v = tensor_beyond_device(b.g, b.g.nodes[1]);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->name, "h");
  EXPECT_EQ(beyond_device_reason(*v),
            "value 'h' has rank 5 ([1, 1, 2, 2, 4]); device tensors are at most 4-D");
}

}  // namespace
