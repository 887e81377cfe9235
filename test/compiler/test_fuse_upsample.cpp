// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): nearest / bilinear
// upsampling (compiler/ops/Upsample.cpp).
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

// ---- upsampling -------------------------------------------------------------------------------

// dq -> upsample -> q with `op` and `args` on a [1, 3, 4, 5] input, output `out_shape`.
Builder upsample_graph(const std::string& op, Args args, std::vector<int64_t> out_shape,
                       double out_scale, int64_t out_zp) {
  Builder b;
  b.input("xq", DType::Int8, {1, 3, 4, 5});
  b.dq("xq", "x", 0.05, -7);
  b.value("u", DType::Float32, std::move(out_shape));
  b.node(op, {"x"}, std::move(args), {"u"});
  b.q("u", "yq", out_scale, out_zp);
  b.output("yq");
  return b;
}

TEST(Fuse, NearestUpsampleWithScaleFactorsMovesBytes) {
  Builder b =
      upsample_graph("aten.upsample_nearest2d.vec",
                     {{"output_size", NoneArg{}}, {"scale_factors", std::vector<double>{2.0, 3.0}}},
                     {1, 3, 8, 15}, 0.05, -7);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(b.g.nodes.size(), 1u) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_upsample_nearest2d");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_names(n),
            (std::vector<std::string>{"input_scale", "input_zero_point", "output_scale",
                                      "output_zero_point", "scales_h", "scales_w"}));
  EXPECT_EQ(arg_d(n, "scales_h"), 2.0);
  EXPECT_EQ(arg_d(n, "scales_w"), 3.0);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -7);
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.upsample_nearest2d.vec -> q (node 0..2) into "
            "q8ta_upsample_nearest2d 'yq' (bytes moved)");
  expect_quant(b.g.value("yq"), 0.05, -7, -128, 127);
  expect_valid(b.g);
}

// The default overload with an output size: no scale reaches the kernel (0 = none).
TEST(Fuse, BilinearUpsampleWithOutputSizeRequantizes) {
  Builder b = upsample_graph("aten.upsample_bilinear2d",
                             {{"output_size", std::vector<int64_t>{7, 9}}, {"align_corners", true}},
                             {1, 3, 7, 9}, 0.04, 3);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(b.g.nodes.size(), 1u) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_upsample_bilinear2d");
  EXPECT_EQ(std::get<bool>(n.args.at("align_corners")), true);
  EXPECT_EQ(arg_d(n, "scales_h"), 0.0);
  EXPECT_EQ(arg_d(n, "scales_w"), 0.0);
  EXPECT_EQ(arg_d(n, "input_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "input_zero_point"), -7);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.04);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 3);
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.upsample_bilinear2d -> q (node 0..2) into "
            "q8ta_upsample_bilinear2d 'yq' (requantized)");
  expect_valid(b.g);
}

TEST(Fuse, UpsampleLimits) {
  {  // an activation after it
    Builder b;
    b.input("xq", DType::Int8, {1, 3, 4, 5});
    b.dq("xq", "x", 0.05, -7);
    b.value("u", DType::Float32, {1, 3, 8, 10});
    b.node("aten.upsample_bilinear2d.vec", {"x"},
           {{"output_size", std::vector<int64_t>{8, 10}},
            {"align_corners", false},
            {"scale_factors", NoneArg{}}},
           {"u"});
    b.value("r", DType::Float32, {1, 3, 8, 10});
    b.node("aten.relu", {"u"}, {}, {"r"});
    b.q("r", "yq", 0.05, -128);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.upsample_bilinear2d.vec -> aten.relu -> q "
                         "(node 0..3) as q8ta_upsample_bilinear2d: an activation follows "
                         "(q8ta_upsample_bilinear2d fuses none)"))
        << all_lines(r);
  }
  {  // a float output
    Builder b;
    b.input("xq", DType::Int8, {1, 3, 4, 5});
    b.dq("xq", "x", 0.05, -7);
    b.value("u", DType::Float32, {1, 3, 8, 10});
    b.node("aten.upsample_nearest2d", {"x"}, {{"output_size", std::vector<int64_t>{8, 10}}}, {"u"});
    b.output("u");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.upsample_nearest2d (node 0..1) as "
                         "q8ta_upsample_nearest2d: 'u' is a graph output, not quantized "
                         "(q8ta_upsample_nearest2d has no float-output variant)"))
        << all_lines(r);
  }
  {  // a quantize into a narrowed range
    Builder b =
        upsample_graph("aten.upsample_nearest2d", {{"output_size", std::vector<int64_t>{8, 10}}},
                       {1, 3, 8, 10}, 0.05, -7);
    b.g.nodes[2].args = q_args(0.05, -7, -100, 100);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.upsample_nearest2d -> q (node 0..2) as "
                         "q8ta_upsample_nearest2d: output range -100..100 is not the full "
                         "int8 range"))
        << all_lines(r);
  }
}

}  // namespace
