// tools/vkd/CheckCompare: what `vkd run --check` does without a device. A device tensor is
// compared with a reference recomputed from the device's own inputs (the region of the graph
// between the tensors the device exposes), so an early difference does not make every later
// tensor differ; an int8 result 1 off where the reference rounded an exact halfway value is a
// rounding tie, counted apart from real differences, and so is a result that follows from a
// tie inside a fused op's region rounded the other way.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/Interpreter.h"
#include "compiler/Parse.h"
#include "tools/vkd/CheckCompare.h"

namespace vkd::cli {
namespace {

using compiler::HostTensor;

// x -> quantize (xq) -> clone (xc) -> dequantize (xd) -> quantize (q2) -> dequantize (y), as
// test/compiler/graphs/qdq_clone.json; compiled, clone disappears (the device exposes xq, xd,
// q2 and y).
const char* kGraph = R"({ "vkd_graph": 1, "inputs": ["x"], "outputs": ["y"],
  "values": {"x": {"dtype": "float32", "shape": [1, 1, 1, 4]}},
  "nodes": [
    {"op": "quantized_decomposed.quantize_per_tensor", "inputs": ["x"],
     "args": {"scale": 0.5, "zero_point": 0, "quant_min": -128, "quant_max": 127,
              "dtype": "int8"}, "outputs": ["xq"]},
    {"op": "aten.clone", "inputs": ["xq"], "args": {}, "outputs": ["xc"]},
    {"op": "quantized_decomposed.dequantize_per_tensor", "inputs": ["xc"],
     "args": {"scale": 0.5, "zero_point": 0, "quant_min": -128, "quant_max": 127,
              "dtype": "int8"}, "outputs": ["xd"]},
    {"op": "quantized_decomposed.quantize_per_tensor", "inputs": ["xd"],
     "args": {"scale": 0.25, "zero_point": 1, "quant_min": -128, "quant_max": 127,
              "dtype": "int8"}, "outputs": ["q2"]},
    {"op": "quantized_decomposed.dequantize_per_tensor", "inputs": ["q2"],
     "args": {"scale": 0.25, "zero_point": 1, "quant_min": -128, "quant_max": 127,
              "dtype": "int8"}, "outputs": ["y"]}]})";

compiler::Graph graph() { return compiler::parse_graph(kGraph, "g.json", nullptr); }

TEST(CheckCompare, RegionStopsAtWhatTheDeviceExposes) {
  const compiler::Graph g = graph();
  const std::set<std::string> exposed{"xq", "xd", "q2", "y"};
  Region r = region_of(g, "xd", exposed);  // clone folded away: clone + dequantize from xq
  EXPECT_EQ(r.nodes, (std::vector<int>{1, 2}));
  EXPECT_EQ(r.inputs, (std::vector<std::string>{"xq"}));
  r = region_of(g, "q2", exposed);  // its own op alone
  EXPECT_EQ(r.nodes, (std::vector<int>{3}));
  EXPECT_EQ(r.inputs, (std::vector<std::string>{"xd"}));
  r = region_of(g, "xq", exposed);  // from the graph input
  EXPECT_EQ(r.inputs, (std::vector<std::string>{"x"}));
  r = region_of(g, "y", {});  // nothing exposed: the whole graph, as an end-to-end reference
  EXPECT_EQ(r.nodes, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(r.inputs, (std::vector<std::string>{"x"}));
}

TEST(CheckCompare, AnEarlyDifferenceIsNotInherited) {
  // The device got xq one off in element 0; the reference of q2, fed the device's xd (made from
  // that xq), agrees with the device's q2, while the end-to-end reference would not.
  const compiler::Graph g = graph();
  const HostTensor x = HostTensor::from_floats({1, 1, 1, 4}, {1.0f, -2.0f, 0.5f, 3.0f});
  const HostTensor device_xd = HostTensor::from_floats({1, 1, 1, 4}, {1.5f, -2.0f, 0.5f, 3.0f});
  const HostTensor device_q2 = HostTensor::from_int8({1, 1, 1, 4}, {7, -7, 3, 13});

  const Region r = region_of(g, "q2", {"xq", "xd", "q2", "y"});
  const auto local = compiler::interpret(region_graph(g, r, "q2"), {{"xd", device_xd}});
  const Comparison c = compare_tensors(device_q2, local.at("q2"), {});
  EXPECT_FALSE(c.differs());

  const auto full = compiler::interpret(g, {{"x", x}});
  EXPECT_TRUE(compare_tensors(device_q2, full.at("q2"), {}).differs());
}

TEST(CheckCompare, OneOffAtAnExactTieIsCountedApart) {
  // quantize with scale 0.5: x * 2 = 0.5 and 2.5 are ties (round half to even: 0 and 2).
  const compiler::Graph g = graph();
  const HostTensor x = HostTensor::from_floats({1, 1, 1, 4}, {0.25f, 1.25f, 1.0f, 0.6f});
  const auto values = compiler::interpret(g, {{"x", x}});
  const std::vector<double> pre = pre_rounding_values(g.nodes[0], values);
  EXPECT_EQ(pre, (std::vector<double>{0.5, 2.5, 2.0, 1.2000000476837158}));
  EXPECT_EQ(values.at("xq").to_int8(), (std::vector<int8_t>{0, 2, 2, 1}));

  // Ties rounded the other way (1, 3): ties; a 1-off away from a tie (element 2) and a 2-off at
  // a tie are real.
  Comparison c =
      compare_tensors(HostTensor::from_int8({1, 1, 1, 4}, {1, 3, 2, 1}), values.at("xq"), pre);
  EXPECT_EQ(c.ties, 2u);
  EXPECT_EQ(c.mismatches, 0u);
  EXPECT_FALSE(c.differs());
  c = compare_tensors(HostTensor::from_int8({1, 1, 1, 4}, {2, 2, 3, 1}), values.at("xq"), pre);
  EXPECT_EQ(c.ties, 0u);
  EXPECT_EQ(c.mismatches, 2u);
  EXPECT_EQ(c.first_index, 0u);
  EXPECT_EQ(c.first_device, 2.0);
  EXPECT_EQ(c.first_ref, 0.0);
  // Without the values before rounding, every difference is real.
  c = compare_tensors(HostTensor::from_int8({1, 1, 1, 4}, {1, 3, 2, 1}), values.at("xq"), {});
  EXPECT_EQ(c.mismatches, 2u);
  // Only a quantize has them.
  EXPECT_TRUE(pre_rounding_values(g.nodes[2], values).empty());
}

TEST(CheckCompare, ATieBeforeAViewIsTheRequantizedValuesTie) {
  // q -> dq -> view_copy -> q with one quantization (a global pool's output flattened): the
  // second quantize rounds nothing, so its ties are the first quantize's; with other parameters
  // it rounds on its own.
  const char* text = R"({ "vkd_graph": 1, "inputs": ["x"], "outputs": ["f", "g"],
    "values": {"x": {"dtype": "float32", "shape": [1, 4, 1, 1]}},
    "nodes": [
      {"op": "quantized_decomposed.quantize_per_tensor", "inputs": ["x"],
       "args": {"scale": 0.5, "zero_point": 0, "quant_min": -128, "quant_max": 127,
                "dtype": "int8"}, "outputs": ["xq"]},
      {"op": "quantized_decomposed.dequantize_per_tensor", "inputs": ["xq"],
       "args": {"scale": 0.5, "zero_point": 0, "quant_min": -128, "quant_max": 127,
                "dtype": "int8"}, "outputs": ["xd"]},
      {"op": "aten.view_copy", "inputs": ["xd"], "args": {"size": [1, 4]}, "outputs": ["v"]},
      {"op": "quantized_decomposed.quantize_per_tensor", "inputs": ["v"],
       "args": {"scale": 0.5, "zero_point": 0, "quant_min": -128, "quant_max": 127,
                "dtype": "int8"}, "outputs": ["f"]},
      {"op": "quantized_decomposed.quantize_per_tensor", "inputs": ["v"],
       "args": {"scale": 0.25, "zero_point": 0, "quant_min": -128, "quant_max": 127,
                "dtype": "int8"}, "outputs": ["g"]}]})";
  const compiler::Graph g = compiler::parse_graph(text, "g.json", nullptr);
  const HostTensor x = HostTensor::from_floats({1, 4, 1, 1}, {0.25f, 1.25f, 1.0f, 0.6f});
  const auto values = compiler::interpret(g, {{"x", x}});
  const std::vector<double> first = {0.5, 2.5, 2.0, 1.2000000476837158};
  EXPECT_EQ(rounding_of(g, "xq", values), first);
  EXPECT_EQ(rounding_of(g, "f", values), first);
  EXPECT_EQ(rounding_of(g, "g", values), (std::vector<double>{0.0, 4.0, 4.0, 2.0}));
  EXPECT_TRUE(rounding_of(g, "v", values).empty());
}

TEST(CheckCompare, TiesRoundedTheOtherWay) {
  // quantize with scale 0.5: x * 2 = 0.5 and -1.5 are ties (round half to even: 0, -2), 2.0
  // is none, 127.5 rounds to 128, clamped to 127 either way.
  const compiler::Graph g = graph();
  const HostTensor x = HostTensor::from_floats({1, 1, 1, 4}, {0.25f, 1.0f, -0.75f, 63.75f});
  const auto values = compiler::interpret(g, {{"x", x}});
  EXPECT_EQ(values.at("xq").to_int8(), (std::vector<int8_t>{0, 2, -2, 127}));
  const auto other = rounded_the_other_way(g.nodes[0], values);
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->to_int8(), (std::vector<int8_t>{1, 2, -1, 127}));
  EXPECT_EQ(other->shape, (std::vector<int64_t>{1, 1, 1, 4}));
  // No tie that changes anything, or no quantize: none.
  const auto none =
      compiler::interpret(g, {{"x", HostTensor::from_floats({1, 1, 1, 4}, {1, 2, 3, 63.75f})}});
  EXPECT_FALSE(rounded_the_other_way(g.nodes[0], none).has_value());
  EXPECT_FALSE(rounded_the_other_way(g.nodes[2], values).has_value());
}

// One int8 (de)quantize node of the graph IR, zero point 0.
std::string quant(const std::string& op, const std::string& in, const std::string& out,
                  const std::string& scale) {
  return R"({"op": "quantized_decomposed.)" + op + R"(", "inputs": [")" + in +
         R"("], "args": {"scale": )" + scale +
         R"(, "zero_point": 0, "quant_min": -128, "quant_max": 127, "dtype": "int8"},
          "outputs": [")" +
         out + R"("]})";
}

// dq (scale `in_scale`) of `in`, times `factor`, q (scale `out_scale`) into `out`: one int8
// step of a fused region (`in`_d and `in`_m between).
std::string scaled_step(const std::string& in, const std::string& in_scale,
                        const std::string& factor, const std::string& out,
                        const std::string& out_scale) {
  return quant("dequantize_per_tensor", in, in + "_d", in_scale) +
         R"(, {"op": "aten.mul.Scalar", "inputs": [")" + in + R"(_d"], "args": {"other": )" +
         factor + R"(}, "outputs": [")" + in + R"(_m"]}, )" +
         quant("quantize_per_tensor", in + "_m", out, out_scale);
}

// The whole region of 'y' of a graph whose float input x [1, 1, 1, 2] = {0.25, 1} goes through
// `nodes` (the device exposing nothing between: one fused op), run by the interpreter: y's
// reference, its pre-rounding values and its tie alternatives.
struct FusedRegionRun {
  HostTensor ref;
  std::vector<double> pre;
  std::vector<HostTensor> alts;
};
FusedRegionRun run_fused_region(const std::string& nodes) {
  const std::string text =
      R"({ "vkd_graph": 1, "inputs": ["x"], "outputs": ["y"],
           "values": {"x": {"dtype": "float32", "shape": [1, 1, 1, 2]}}, "nodes": [)" +
      nodes + "]}";
  const compiler::Graph g = compiler::parse_graph(text, "g.json", nullptr);
  const compiler::Graph sub = region_graph(g, region_of(g, "y", {}), "y");
  const auto values =
      compiler::interpret(sub, {{"x", HostTensor::from_floats({1, 1, 1, 2}, {0.25f, 1.0f})}});
  return {values.at("y"), rounding_of(sub, "y", values), tie_alternatives(sub, "y", values)};
}

HostTensor device_y(int8_t a, int8_t b) { return HostTensor::from_int8({1, 1, 1, 2}, {a, b}); }

// A device y = {y0, y1} whose first element follows from a tie inside the region: one fused
// tie, no difference.
void expect_fused_tie(const FusedRegionRun& r, int8_t y0, int8_t y1) {
  const Comparison c = compare_tensors(device_y(y0, y1), r.ref, r.pre, r.alts);
  EXPECT_EQ(c.fused_ties, 1u) << int(y0);
  EXPECT_FALSE(c.differs()) << int(y0);
}

TEST(CheckCompare, ATieInsideAFusedRegionReachesItsResult) {
  // x -> q (0.5) 'xq' -> dq -> mul by 3 -> q (1, 0) 'y': x = 0.25 is a tie in xq (0, or 1), so
  // y is 0, or 2 (3 * 0.5 = 1.5 rounds to even); x = 1 is no tie (y = 3).
  const FusedRegionRun r = run_fused_region(quant("quantize_per_tensor", "x", "xq", "0.5") + ", " +
                                            scaled_step("xq", "0.5", "3.0", "y", "1.0"));
  EXPECT_EQ(r.ref.to_int8(), (std::vector<int8_t>{0, 3}));
  ASSERT_EQ(r.alts.size(), 1u);  // xq's; y's own quantize has none
  EXPECT_EQ(r.alts[0].to_int8(), (std::vector<int8_t>{2, 3}));
  // The other side of the tie, or between (several ties in one element): fused ties.
  expect_fused_tie(r, 2, 3);
  expect_fused_tie(r, 1, 3);
  // Past the alternative, or an element no tie reaches: real; without the alternatives too.
  EXPECT_EQ(compare_tensors(device_y(3, 3), r.ref, r.pre, r.alts).mismatches, 1u);
  EXPECT_EQ(compare_tensors(device_y(0, 4), r.ref, r.pre, r.alts).mismatches, 1u);
  EXPECT_EQ(compare_tensors(device_y(2, 3), r.ref, r.pre).mismatches, 1u);
}

TEST(CheckCompare, ATieInTheFirstOfTwoHiddenValuesReachesTheResult) {
  // x -> q (0.5) 'xq' -> dq, * 3 -> q (1) 'mq' -> dq, * 2 -> q (1) 'y' (as
  // q8ta_conv2d_pw_dw_pw keeps its expansion's and its depthwise's outputs): x = 0.25 is a tie
  // in xq (0, or 1), so mq is 0, or 2 (1.5 rounds to even), and y 0, or 4; mq itself has no tie
  // in the reference, only where xq's was flipped (then 1.5 may also round to 1: y 2).
  const FusedRegionRun r = run_fused_region(quant("quantize_per_tensor", "x", "xq", "0.5") + ", " +
                                            scaled_step("xq", "0.5", "3.0", "mq", "1.0") + ", " +
                                            scaled_step("mq", "1.0", "2.0", "y", "1.0"));
  EXPECT_EQ(r.ref.to_int8(), (std::vector<int8_t>{0, 6}));
  // xq's tie flipped, then mq's tie that only that flip makes (1.5: 2, or 1) flipped too.
  ASSERT_EQ(r.alts.size(), 2u);
  EXPECT_EQ(r.alts[0].to_int8(), (std::vector<int8_t>{4, 6}));
  EXPECT_EQ(r.alts[1].to_int8(), (std::vector<int8_t>{2, 6}));
  expect_fused_tie(r, 4, 6);  // the other side of xq's tie
  expect_fused_tie(r, 2, 6);  // and of mq's
  EXPECT_EQ(compare_tensors(device_y(5, 6), r.ref, r.pre, r.alts).mismatches, 1u);
}

TEST(CheckCompare, OneOfTwoTiesReadByOneResultRoundedTheOtherWay) {
  // x -> q (0.5) 'xq' -> dq -> mean over W -> q (0.25) 'y': x = {0.25, 0.75} makes xq's two
  // elements ties (0.5, 1.5: 0 and 2, to even), y = mean(0, 1) / 0.25 = 2. Both flipped
  // ({1, 1}) y is 2 again; the first alone ({1, 2}) 3, the second alone ({0, 1}) 1. A device
  // that rounds one of them the other way is a fused tie, which only the single flips show.
  const std::string text =
      R"({ "vkd_graph": 1, "inputs": ["x"], "outputs": ["y"],
           "values": {"x": {"dtype": "float32", "shape": [1, 1, 1, 2]}}, "nodes": [)" +
      quant("quantize_per_tensor", "x", "xq", "0.5") + ", " +
      quant("dequantize_per_tensor", "xq", "xd", "0.5") +
      R"(, {"op": "aten.mean.dim", "inputs": ["xd"], "args": {"dim": [2, 3], "keepdim": true},
            "outputs": ["m"]}, )" +
      quant("quantize_per_tensor", "m", "y", "0.25") + "]}";
  const compiler::Graph g = compiler::parse_graph(text, "g.json", nullptr);
  const compiler::Graph sub = region_graph(g, region_of(g, "y", {}), "y");
  const auto values =
      compiler::interpret(sub, {{"x", HostTensor::from_floats({1, 1, 1, 2}, {0.25f, 0.75f})}});
  EXPECT_EQ(values.at("y").to_int8(), (std::vector<int8_t>{2}));
  const std::vector<HostTensor> alts = tie_alternatives(sub, "y", values);
  ASSERT_EQ(alts.size(), 3u);  // both flipped, then each alone
  EXPECT_EQ(alts[0].to_int8(), (std::vector<int8_t>{2}));
  EXPECT_EQ(alts[1].to_int8(), (std::vector<int8_t>{3}));
  EXPECT_EQ(alts[2].to_int8(), (std::vector<int8_t>{1}));
  const std::vector<double> pre = rounding_of(sub, "y", values);
  for (const int8_t y : {int8_t(3), int8_t(1)}) {
    const Comparison c =
        compare_tensors(HostTensor::from_int8({1, 1, 1, 1}, {y}), values.at("y"), pre, alts);
    EXPECT_EQ(c.fused_ties, 1u) << int(y);
    EXPECT_FALSE(c.differs()) << int(y);
  }
  EXPECT_EQ(compare_tensors(HostTensor::from_int8({1, 1, 1, 1}, {4}), values.at("y"), pre, alts)
                .mismatches,
            1u);
  // Without the single flips (only the all-flipped reference) 3 would be a difference.
  EXPECT_EQ(
      compare_tensors(HostTensor::from_int8({1, 1, 1, 1}, {3}), values.at("y"), pre, {alts[0]})
          .mismatches,
      1u);
}

TEST(CheckCompare, TieTolerance) {
  EXPECT_TRUE(is_rounding_tie(2.5));
  EXPECT_TRUE(is_rounding_tie(-3.5));
  EXPECT_TRUE(is_rounding_tie(2.5 + 0.5 * kTieTolerance));
  EXPECT_FALSE(is_rounding_tie(2.5 + 2 * kTieTolerance));
  EXPECT_FALSE(is_rounding_tie(2.0));
}

TEST(CheckCompare, FloatToleranceAndIncomparableTensors) {
  const HostTensor ref = HostTensor::from_floats({2}, {1000.0f, 0.0f});
  const HostTensor close = HostTensor::from_floats({2}, {1000.005f, 5e-7f});
  EXPECT_FALSE(compare_tensors(close, ref, {}).differs());
  const Comparison c = compare_tensors(HostTensor::from_floats({2}, {1000.1f, 0.0f}), ref, {});
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_NEAR(c.max_abs, 0.1, 1e-4);
  const Comparison shape = compare_tensors(HostTensor::from_floats({1, 2}, {1, 2}), ref, {});
  EXPECT_FALSE(shape.comparable);
  EXPECT_EQ(shape.problem, "shape differs: device [1,2], reference [2]");
  const Comparison dtype = compare_tensors(HostTensor::from_int8({2}, {1, 2}), ref, {});
  EXPECT_EQ(dtype.problem, "dtype differs: device int8, reference float32");
}

// A tensor whose bytes do not fill its shape (issue 31: the device output viewed with another
// graph's shape) is not comparable: nothing is read past its bytes.
TEST(CheckCompare, BytesThatDoNotFillTheShapeAreNotRead) {
  const HostTensor ref = HostTensor::from_floats({2, 4}, std::vector<float>(8, 1.0f));
  HostTensor short_device = HostTensor::from_floats({2}, {1.0f, 1.0f});
  short_device.shape = {2, 4};  // 8 bytes under a shape that needs 32
  const Comparison c = compare_tensors(short_device, ref, {});
  EXPECT_FALSE(c.comparable);
  EXPECT_EQ(c.problem, "device tensor holds 8 bytes, its shape [2,4] needs 32");
  HostTensor short_ref = ref;
  short_ref.bytes.resize(12);
  EXPECT_EQ(compare_tensors(ref, short_ref, {}).problem,
            "reference tensor holds 12 bytes, its shape [2,4] needs 32");
}

}  // namespace
}  // namespace vkd::cli
