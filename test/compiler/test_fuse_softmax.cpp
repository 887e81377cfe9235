// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): q8ta_softmax
// (compiler/ops/Softmax.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test/compiler/FuseTestUtil.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

// ---- softmax ------------------------------------------------------------------------------------

// xq [2, 3, 10] -> dq (0.1, 3) -> `op` (dim `dim`) [-> q (1/256, -128) -> yq].
Builder softmax_graph(const std::string& op, int64_t dim, bool quantized) {
  Builder b;
  const std::vector<int64_t> shape = {2, 3, 10};
  b.input("xq", DType::Int8, shape);
  b.dq("xq", "x", 0.1, 3);
  b.value("s", DType::Float32, shape);
  Args args = {{"dim", dim}};
  if (op == "aten._softmax" || op == "aten._log_softmax") args["half_to_float"] = false;
  b.node(op, {"x"}, args, {"s"});
  if (quantized) {
    b.q("s", "yq", 1.0 / 256, -128);
    b.output("yq");
  } else {
    b.output("s");
  }
  return b;
}

// Followed by a quantize: q8ta_softmax writes the int8 output; alone: q8ta_softmax_dq writes the
// float one; log_softmax sets `log`; the .int forms fuse the same way.
TEST(Fuse, SoftmaxOverTheLastDimFuses) {
  {
    Builder b = softmax_graph("aten._softmax", -1, true);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_softmax"})) << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
    EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
    EXPECT_EQ(arg_i(n, "input_zero_point"), 3);
    EXPECT_EQ(std::get<bool>(n.args.at("log")), false);
    EXPECT_EQ(arg_d(n, "output_scale"), 1.0 / 256);
    EXPECT_EQ(arg_i(n, "output_zero_point"), -128);
    expect_quant(b.g.value("yq"), 1.0 / 256, -128, -128, 127);
    EXPECT_TRUE(has_line(r, "fused dq -> aten._softmax -> q (node 0..2) into q8ta_softmax 'yq'"))
        << all_lines(r);
    expect_valid(b.g);
  }
  for (const char* op : {"aten._log_softmax", "aten.log_softmax.int", "aten.softmax.int"}) {
    Builder b = softmax_graph(op, 2, false);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_softmax_dq"})) << op << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"s"}));
    EXPECT_EQ(std::get<bool>(n.args.at("log")), std::string(op).find("log") != std::string::npos);
    EXPECT_EQ(b.g.value("s").dtype, DType::Float32);
    EXPECT_TRUE(has_line(r, std::string("fused dq -> ") + op +
                                " (node 0..1) into "
                                "q8ta_softmax_dq 's'"))
        << all_lines(r);
    expect_valid(b.g);
  }
}

// Another dim than the last stays a host op; a quantize into a narrowed range is not folded in
// (the kernel clamps to the int8 range): the float variant, then q8ta_quantize.
TEST(Fuse, SoftmaxLimits) {
  {
    Builder b = softmax_graph("aten._softmax", 1, false);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_dequantize", "aten._softmax"}))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten._softmax (node 0..1) as q8ta_softmax_dq: dim "
                         "1 is not the last dim of a rank-3 input (only the last dim is "
                         "supported)"))
        << all_lines(r);
  }
  {
    Builder b = softmax_graph("aten._softmax", -1, false);
    b.g.outputs.clear();
    b.value("yq", DType::Int8, {2, 3, 10});
    b.node(kQ, {"s"}, q_args(1.0 / 256, -128, -128, 100), {"yq"});
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_softmax_dq", "q8ta_quantize"}))
        << all_lines(r);
    expect_valid(b.g);
  }
}

}  // namespace
