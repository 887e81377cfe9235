// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): q8ta_pixel_shuffle
// (compiler/ops/PixelShuffle.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test/compiler/FuseTestUtil.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

// ---- pixel shuffle ----------------------------------------------------------------------------

TEST(Fuse, PixelShuffleThroughClones) {
  Builder b;
  b.input("xq", DType::Int8, {1, 8, 2, 2});
  b.dq("xq", "x", 0.05, -7);
  b.value("c0", DType::Float32, {1, 8, 2, 2});
  b.node("aten.clone", {"x"}, {}, {"c0"});
  b.value("p", DType::Float32, {1, 2, 4, 4});
  b.node("aten.pixel_shuffle", {"c0"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.value("c1", DType::Float32, {1, 2, 4, 4});
  b.node("aten._clone_dim_order", {"p"}, {}, {"c1"});
  b.value("c2", DType::Float32, {1, 2, 4, 4});
  b.node("aten.alias_copy", {"c1"}, {}, {"c2"});
  b.q("c2", "yq", 0.06, 4);
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_pixel_shuffle");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "input_zero_point"), -7);
  EXPECT_EQ(arg_i(n, "upscale_factor"), 2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.06);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 4);
  EXPECT_EQ(g.value_names(), (std::vector<std::string>{"xq", "yq"}));
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.clone -> aten.pixel_shuffle -> "
            "aten._clone_dim_order -> aten.alias_copy -> q (node 0..5) into "
            "q8ta_pixel_shuffle 'yq'");
  expect_valid(g);
}

// float16 data movement lowers (pixel_shuffle, a clone into identity) with float16 tensors the
// schema accepts; float16 arithmetic (relu) stays an edge op.
TEST(Fuse, Float16PixelShuffleLowersReluStaysAnEdgeOp) {
  Builder b;
  b.input("x", DType::Float16, {1, 8, 2, 2});
  b.value("c", DType::Float16, {1, 8, 2, 2});
  b.node("aten.clone", {"x"}, {}, {"c"});
  b.value("p", DType::Float16, {1, 2, 4, 4});
  b.node("aten.pixel_shuffle", {"c"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.output("p");
  b.value("r", DType::Float16, {1, 8, 2, 2});
  b.node("aten.relu", {"x"}, {}, {"r"});
  b.output("r");
  const PassReport rep = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"identity", "pixel_shuffle", "aten.relu"}))
      << all_lines(rep);
  EXPECT_EQ(b.g.value("p").dtype, DType::Float16);
  EXPECT_TRUE(has_line(rep, "left 1 node(s) as edge ops: aten.relu (node 2)")) << all_lines(rep);
}

// `vkd compile --partition`: patterns whose backend op has no kernel yet stay edge ops (the
// host runs them as given); lowering into kernel-less ops (float pixel_shuffle) is skipped too.
// With runnable_only, a pattern whose backend op has a kernel fuses (the pixel shuffle), and a
// node whose backend op has none (the float relu) stays an edge op for the host.
TEST(Fuse, RunnableOnlyFusesOpsWithKernelsAndLeavesTheRest) {
  Builder b;
  b.input("xq", DType::Int8, {1, 8, 2, 2});
  b.dq("xq", "x", 0.05, 0);
  b.value("p", DType::Float32, {1, 2, 4, 4});
  b.node("aten.pixel_shuffle", {"x"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.value("c", DType::Float32, {1, 2, 4, 4});
  b.node("aten.clone", {"p"}, {}, {"c"});
  b.q("c", "yq", 0.05, 0);
  b.output("yq");
  b.dq("xq", "x2", 0.05, 0);
  b.value("r", DType::Float32, {1, 8, 2, 2});
  b.node("aten.relu", {"x2"}, {}, {"r"});
  b.output("r");
  const PassReport r = fuse_and_lower(b.g, FuseOptions{true});
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.pixel_shuffle -> aten.clone -> q (node 0..3) into "
                       "q8ta_pixel_shuffle 'yq'"))
      << all_lines(r);
  EXPECT_EQ(ops_of(b.g),
            (std::vector<std::string>{"q8ta_pixel_shuffle", "q8ta_dequantize", "aten.relu"}));
}

TEST(Fuse, PixelShuffleCloneWithTwoConsumersIsNotFused) {
  Builder b;
  b.input("xq", DType::Int8, {1, 8, 2, 2});
  b.dq("xq", "x", 0.05, 0);
  b.value("p", DType::Float32, {1, 2, 4, 4});
  b.node("aten.pixel_shuffle", {"x"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.value("c", DType::Float32, {1, 2, 4, 4});
  b.node("aten.clone", {"p"}, {}, {"c"});
  b.q("c", "yq", 0.05, 0);
  b.output("yq");
  b.output("c");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.pixel_shuffle -> aten.clone -> q (node 0..3) as "
                       "q8ta_pixel_shuffle: 'c' is a graph output"))
      << all_lines(r);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_dequantize", "pixel_shuffle", "identity",
                                                   "q8ta_quantize"}));
  expect_valid(b.g);
}

// A pixel shuffle moves values as a max pool selects them: into other output qparams over the
// full int8 range the kernel requantizes each one, which equals dq -> q for all 256 int8 values
// (PixelShuffleThroughClones checks the args).
TEST(Fuse, PixelShuffleRequantizingIntoTheFullRangeFuses) {
  Builder b = unary_graph("aten.pixel_shuffle", {1, 8, 2, 2}, {{"upscale_factor", int64_t{2}}},
                          {1, 2, 4, 4}, 0.2, -5);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), std::vector<std::string>{"q8ta_pixel_shuffle"}) << all_lines(r);
  EXPECT_EQ(arg_i(b.g.nodes[0], "output_zero_point"), -5);
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.pixel_shuffle -> q (node 0..2) into "
            "q8ta_pixel_shuffle 'yq'");
  expect_valid(b.g);
}

}  // namespace
