// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): max / avg / adaptive avg
// pools and mean (compiler/ops/Pool.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "test/compiler/FuseTestUtil.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

// ---- max_pool2d, avg_pool2d, adaptive_avg_pool2d, mean ------------------------------------------

TEST(Fuse, MaxPoolWithSharedQparamsFuses) {
  Builder b = unary_graph("aten.max_pool2d", {1, 4, 7, 6},
                          {{"kernel_size", std::vector<int64_t>{3, 3}},
                           {"stride", std::vector<int64_t>{2, 2}},
                           {"padding", std::vector<int64_t>{1, 1}},
                           {"dilation", std::vector<int64_t>{1, 1}},
                           {"ceil_mode", true}},
                          {1, 4, 4, 4}, 0.1, 2);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(b.g.nodes.size(), 1u) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_max_pool2d");
  EXPECT_EQ(std::get<std::vector<int64_t>>(n.args.at("kernel_size")), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(std::get<std::vector<int64_t>>(n.args.at("padding")), (std::vector<int64_t>{1, 1}));
  EXPECT_TRUE(std::get<bool>(n.args.at("ceil_mode")));
  EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 2);
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.max_pool2d -> q (node 0..2) into q8ta_max_pool2d 'yq'");
  expect_valid(b.g);
}

// Other output qparams: the kernel requantizes the max (U-Net encoders, where FX gives the
// pooled map its own observer), which equals dq -> q for all 256 int8 values.
TEST(Fuse, MaxPoolWithOtherOutputQparamsRequantizes) {
  Builder b = unary_graph("aten.max_pool2d", {1, 4, 6, 6},
                          {{"kernel_size", std::vector<int64_t>{2, 2}}}, {1, 4, 3, 3}, 0.2, -5);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), std::vector<std::string>{"q8ta_max_pool2d"}) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -5);
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.max_pool2d -> q (node 0..2) into q8ta_max_pool2d "
            "'yq' (the max requantized: scale 0.1 zero_point 2 -> scale 0.2 "
            "zero_point -5)");
  expect_valid(b.g);
}

// A narrower output range is no requantization the kernels that move or select int8 values do
// (they clamp to -128..127), and, with the dq's scale too, no byte move (-128 does not come
// back): reported, and the nodes stay edge ops.
TEST(Fuse, MaxPoolAndPixelShuffleIntoANarrowerRangeAreNotFused) {
  struct Case {
    std::string op;
    Args args;
    std::vector<int64_t> in, out;
    std::string backend, edge_op;  // the edge op as lowered
  };
  const std::vector<Case> cases = {{"aten.max_pool2d",
                                    {{"kernel_size", std::vector<int64_t>{2, 2}}},
                                    {1, 4, 6, 6},
                                    {1, 4, 3, 3},
                                    "q8ta_max_pool2d",
                                    "aten.max_pool2d"},
                                   {"aten.pixel_shuffle",
                                    {{"upscale_factor", int64_t{2}}},
                                    {1, 8, 2, 2},
                                    {1, 2, 4, 4},
                                    "q8ta_pixel_shuffle",
                                    "pixel_shuffle"}};
  for (const Case& c : cases) {
    for (const auto& [scale, text] : {std::pair<double, std::string>{0.2, "0.2"}, {0.1, "0.1"}}) {
      Builder b = unary_graph(c.op, c.in, c.args, c.out, scale, 2);
      b.g.nodes.back().args["quant_min"] = int64_t{-127};
      const PassReport r = fuse_and_lower(b.g);
      EXPECT_TRUE(has_line(r, "not fused: dq -> " + c.op + " -> q (node 0..2) as " + c.backend +
                                  ": input (scale 0.1 zero_point 2 range -128..127) and output "
                                  "(scale " +
                                  text +
                                  " zero_point 2 range -127..127) "
                                  "quantization differ and the quantize's range -127..127 is "
                                  "not the full int8 range a requantizing kernel writes"))
          << all_lines(r);
      EXPECT_EQ(ops_of(b.g),
                (std::vector<std::string>{"q8ta_dequantize", c.edge_op, "q8ta_quantize"}))
          << all_lines(r);
      expect_valid(b.g);
    }
  }
}

TEST(Fuse, MeanOverHeightAndWidthAndAdaptiveAvgPoolFuse) {
  {
    Builder b = unary_graph("aten.mean.dim", {2, 8, 5, 5},
                            {{"dim", std::vector<int64_t>{-1, -2}}, {"keepdim", true}},
                            {2, 8, 1, 1}, 0.05, -3);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(b.g.nodes.size(), 1u) << all_lines(r);
    EXPECT_EQ(b.g.nodes[0].op, "q8ta_mean");
    EXPECT_EQ(arg_d(b.g.nodes[0], "output_scale"), 0.05);
    EXPECT_EQ(arg_i(b.g.nodes[0], "output_zero_point"), -3);
    expect_valid(b.g);
  }
  {
    Builder b = unary_graph("aten.adaptive_avg_pool2d", {1, 8, 5, 5},
                            {{"output_size", std::vector<int64_t>{1, 1}}}, {1, 8, 1, 1}, 0.05, -3);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mean"})) << all_lines(r);
    expect_valid(b.g);
  }
  {  // over W only: not this op
    Builder b =
        unary_graph("aten.mean.dim", {1, 8, 5, 5},
                    {{"dim", std::vector<int64_t>{3}}, {"keepdim", true}}, {1, 8, 5, 1}, 0.05, -3);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.mean.dim -> q (node 0..2) as q8ta_mean: mean "
                         "is not over exactly H and W"))
        << all_lines(r);
  }
}

// avg_pool2d: every argument goes to q8ta_avg_pool2d (an absent stride stays empty: the kernel
// size; divisor_override None is 0), requantized to the q's parameters; adaptive pooling to
// another size than 1x1 becomes q8ta_adaptive_avg_pool2d (to 1x1 it stays q8ta_mean).
TEST(Fuse, AvgPoolAndAdaptiveAvgPoolFuse) {
  using I = std::vector<int64_t>;
  {
    Builder b = unary_graph("aten.avg_pool2d", {1, 4, 7, 6},
                            {{"kernel_size", I{3, 3}},
                             {"stride", I{2, 2}},
                             {"padding", I{1, 1}},
                             {"ceil_mode", true},
                             {"count_include_pad", false},
                             {"divisor_override", NoneArg{}}},
                            {1, 4, 4, 4}, 0.05, -3);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_avg_pool2d"})) << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(arg_l(n, "kernel_size"), (I{3, 3}));
    EXPECT_EQ(arg_l(n, "stride"), (I{2, 2}));
    EXPECT_EQ(arg_l(n, "padding"), (I{1, 1}));
    EXPECT_TRUE(std::get<bool>(n.args.at("ceil_mode")));
    EXPECT_FALSE(std::get<bool>(n.args.at("count_include_pad")));
    EXPECT_EQ(arg_i(n, "divisor_override"), 0);
    EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
    EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
    EXPECT_EQ(arg_d(n, "output_scale"), 0.05);
    EXPECT_EQ(arg_i(n, "output_zero_point"), -3);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.avg_pool2d -> q (node 0..2) into q8ta_avg_pool2d "
                         "'yq'"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {  // defaults: no stride, padding 0, count_include_pad true; divisor_override 3
    Builder b = unary_graph("aten.avg_pool2d", {1, 4, 6, 6},
                            {{"kernel_size", I{2, 2}}, {"divisor_override", int64_t{3}}},
                            {1, 4, 3, 3}, 0.1, 2);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_avg_pool2d"})) << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(arg_l(n, "stride"), (I{}));
    EXPECT_EQ(arg_l(n, "padding"), (I{0}));
    EXPECT_TRUE(std::get<bool>(n.args.at("count_include_pad")));
    EXPECT_EQ(arg_i(n, "divisor_override"), 3);
    expect_valid(b.g);
  }
  {
    Builder b = unary_graph("aten.adaptive_avg_pool2d", {2, 8, 7, 9}, {{"output_size", I{3, 2}}},
                            {2, 8, 3, 2}, 0.05, -3);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_adaptive_avg_pool2d"})) << all_lines(r);
    EXPECT_EQ(arg_d(b.g.nodes[0], "output_scale"), 0.05);
    EXPECT_EQ(arg_i(b.g.nodes[0], "output_zero_point"), -3);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.adaptive_avg_pool2d -> q (node 0..2) into "
                         "q8ta_adaptive_avg_pool2d 'yq'"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {  // the averaging kernels requantize into the full int8 range only
    Builder b;
    b.input("xq", DType::Int8, {1, 4, 6, 6});
    b.dq("xq", "x", 0.1, 2);
    b.value("m", DType::Float32, {1, 4, 3, 3});
    b.node("aten.avg_pool2d", {"x"}, {{"kernel_size", I{2, 2}}}, {"m"});
    b.value("yq", DType::Int8, {1, 4, 3, 3});
    b.node(kQ, {"m"}, q_args(0.1, 2, -127, 127), {"yq"});
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.avg_pool2d -> q (node 0..2) as "
                         "q8ta_avg_pool2d: output range -127..127 is not the full int8 range"))
        << all_lines(r);
  }
}

}  // namespace
