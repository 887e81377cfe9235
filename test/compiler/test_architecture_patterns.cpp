// Patterns common CNN architectures put in a traced graph that the tests' own models do not
// (issue 31): ops that are the identity in eval mode (dropouts, stochastic depth), a view whose
// quantize has other parameters than its dequantize (flatten before a classifier), a standalone
// batch norm (after a concatenation, at the start of a block), a channel shuffle spelled with a
// contiguous() clone. Each graph is written here as JSON and compiled whole; the checks are on
// the backend ops it becomes and on the report.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "compiler/Compiler.h"
#include "compiler/Parse.h"
#include "runtime/core/Error.h"

namespace {

using namespace vkd::compiler;

const char* const kQ = "quantized_decomposed.quantize_per_tensor";
const char* const kDq = "quantized_decomposed.dequantize_per_tensor";

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodes) ops.push_back(n.op);
  return ops;
}

std::string q_args(double scale, int zp) {
  return "{\"scale\": " + std::to_string(scale) + ", \"zero_point\": " + std::to_string(zp) +
         ", \"quant_min\": -128, \"quant_max\": 127, \"dtype\": \"int8\"}";
}

std::string node(const std::string& op, const std::string& in, const std::string& args,
                 const std::string& out) {
  return "{\"op\": \"" + op + "\", \"inputs\": [\"" + in + "\"], \"args\": " + args +
         ", \"outputs\": [\"" + out + "\"]}";
}

// An int8 graph input `xq` of `shape`, then `nodes` (comma-joined), output `y`.
std::string graph_json(const std::string& shape, const std::vector<std::string>& nodes) {
  std::string list;
  for (const std::string& n : nodes) list += (list.empty() ? "" : ", ") + n;
  return "{\"vkd_graph\": 1, \"inputs\": [\"xq\"], \"outputs\": [\"y\"], \"values\": {\"xq\": "
         "{\"dtype\": \"int8\", \"shape\": " +
         shape + "}}, \"nodes\": [" + list + "]}";
}

CompileResult compile_json(const std::string& json) {
  return compile_graph(parse_graph(json, "test", nullptr), {});
}

// ---- ops that are the identity in eval mode ---------------------------------------------------

// dq -> <op> -> q with the same parameters on both sides: the op folds, and the int8 data is
// passed through (no kernel at all for the op).
TEST(EvalIdentities, DropoutVariantsAndStochasticDepthFoldBetweenQuantizations) {
  const std::vector<std::pair<std::string, std::string>> ops = {
      {"aten.dropout", "{\"p\": 0.2, \"train\": false}"},
      {"aten.alpha_dropout", "{\"p\": 0.2, \"train\": false}"},
      {"aten.feature_dropout", "{\"p\": 0.5, \"train\": false}"},
      {"aten.feature_alpha_dropout", "{\"p\": 0.5, \"train\": false}"},
      {"aten.stochastic_depth", "{\"p\": 0.1, \"mode\": \"row\", \"training\": false}"},
      {"aten.dropout", "{\"p\": 0.0, \"train\": true}"},  // drops nothing
  };
  for (const auto& [op, args] : ops) {
    // relu -> the op -> relu: each relu stays a q8ta_clamp, so the op sits between two kernels.
    const std::string json = graph_json(
        "[1, 8, 4, 4]", {node(kDq, "xq", q_args(0.5, 1), "x"), node("aten.relu", "x", "{}", "r"),
                         node(kQ, "r", q_args(0.25, -128), "rq"),
                         node(kDq, "rq", q_args(0.25, -128), "rf"), node(op, "rf", args, "d"),
                         node(kQ, "d", q_args(0.25, -128), "dq"),
                         node(kDq, "dq", q_args(0.25, -128), "df"),
                         node("aten.relu", "df", "{}", "s"),
                         node(kQ, "s", q_args(0.125, -128), "y")});
    const CompileResult r = compile_json(json);
    ASSERT_TRUE(r.ok()) << op << "\n" << format_report(r);
    EXPECT_EQ(ops_of(r.graph), (std::vector<std::string>{"q8ta_clamp", "q8ta_clamp"})) << op;
  }
}

// Without a quantize after it (the op between a dequantize and a float consumer) it folds too.
TEST(EvalIdentities, StochasticDepthBeforeAResidualAddFolds) {
  const std::string json = graph_json(
      "[1, 8, 4, 4]",
      {node(kDq, "xq", q_args(0.5, 1), "x"),
       node("aten.stochastic_depth", "x", "{\"p\": 0.2, \"mode\": \"batch\", \"training\": false}",
            "d"),
       node(kDq, "xq", q_args(0.5, 1), "x2"),
       "{\"op\": \"aten.add.Tensor\", \"inputs\": [\"d\", \"x2\"], \"args\": {}, \"outputs\": "
       "[\"s\"]}",
       node(kQ, "s", q_args(1.0, 2), "y")});
  const CompileResult r = compile_json(json);
  ASSERT_TRUE(r.ok()) << format_report(r);
  EXPECT_EQ(ops_of(r.graph), (std::vector<std::string>{"q8ta_add"}));
}

// In training mode these zero random elements: the graph is refused when read, naming the node
// and the argument.
TEST(EvalIdentities, TrainingModeIsRefusedWhenTheGraphIsRead) {
  const std::vector<std::pair<std::string, std::string>> ops = {
      {"aten.dropout", "{\"p\": 0.2, \"train\": true}"},
      {"aten.feature_alpha_dropout", "{\"p\": 0.5, \"train\": true}"},
      {"aten.stochastic_depth", "{\"p\": 0.1, \"mode\": \"row\", \"training\": true}"},
      {"aten.stochastic_depth", "{\"p\": 0.1, \"mode\": \"row\"}"},  // training defaults to true
  };
  for (const auto& [op, args] : ops) {
    const std::string json = graph_json(
        "[1, 8, 4, 4]", {node(kDq, "xq", q_args(0.5, 1), "x"), node(op, "x", args, "d"),
                         node(kQ, "d", q_args(0.5, 1), "y")});
    try {
      (void)parse_graph(json, "g.json", nullptr);
      ADD_FAILURE() << op << " " << args << " was accepted";
    } catch (const vkd::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("node 1 (" + op + ")"), std::string::npos) << what;
      EXPECT_NE(what.find("training mode"), std::string::npos) << what;
    }
  }
  const std::string bad_p = graph_json(
      "[1, 8, 4, 4]", {node(kDq, "xq", q_args(0.5, 1), "x"),
                       node("aten.dropout", "x", "{\"p\": 1.5, \"train\": false}", "d"),
                       node(kQ, "d", q_args(0.5, 1), "y")});
  EXPECT_THROW((void)parse_graph(bad_p, "g.json", nullptr), vkd::Error);
}

// ---- views and clones whose quantize has other parameters -----------------------------------

// x.flatten(1) before a classifier, observed on its own by FX: dq -> view -> q with a new scale.
// The view moves the int8 values (here q8ta_view: [1, 8, 2, 2] -> [1, 32] changes the packed
// shape), then q8ta_clamp requantizes them over the q's range.
TEST(RequantizedViews, FlattenWithItsOwnQuantizationIsAViewThenARequantization) {
  const CompileResult r = compile_json(graph_json(
      "[1, 8, 2, 2]", {node(kDq, "xq", q_args(0.05, -2), "x"),
                       node("aten.view_copy", "x", "{\"size\": [1, 32]}", "f"),
                       node(kQ, "f", q_args(0.0125, -17), "y")}));
  ASSERT_TRUE(r.ok()) << format_report(r);
  ASSERT_EQ(ops_of(r.graph), (std::vector<std::string>{"q8ta_view", "q8ta_clamp"}))
      << format_report(r);
  const Node& clamp = r.graph.nodes[1];
  EXPECT_EQ(std::get<double>(clamp.args.at("input_scale")), 0.05);
  EXPECT_EQ(std::get<int64_t>(clamp.args.at("input_zero_point")), -2);
  EXPECT_EQ(std::get<double>(clamp.args.at("output_scale")), 0.0125);
  EXPECT_EQ(std::get<int64_t>(clamp.args.at("output_zero_point")), -17);
  EXPECT_NE(format_report(r).find("fused q (node 2) into q8ta_clamp 'y' (requantizes the view "
                                  "'f_int8'"),
            std::string::npos)
      << format_report(r);
}

// A view that keeps the packed shape folds away: only the requantization runs.
TEST(RequantizedViews, FreeViewWithItsOwnQuantizationIsOneRequantization) {
  const CompileResult r = compile_json(graph_json(
      "[1, 8, 2, 2]", {node(kDq, "xq", q_args(0.05, -2), "x"),
                       node("aten.view_copy", "x", "{\"size\": [8, 2, 2]}", "f"),
                       node(kQ, "f", q_args(0.1, 3), "y")}));
  ASSERT_TRUE(r.ok()) << format_report(r);
  EXPECT_EQ(ops_of(r.graph), (std::vector<std::string>{"q8ta_clamp"})) << format_report(r);
}

// A contiguous() clone between quantizations (FX puts q -> dq around it) is no kernel when the
// parameters round-trip, one requantization when they do not.
TEST(RequantizedViews, CloneBetweenQuantizationsFoldsOrRequantizes) {
  auto clone_graph = [](double out_scale) {
    return graph_json("[1, 8, 4, 4]",
                      {node(kDq, "xq", q_args(0.5, 1), "x"), node("aten.relu", "x", "{}", "r"),
                       node(kQ, "r", q_args(0.25, -128), "rq"),
                       node(kDq, "rq", q_args(0.25, -128), "rf"),
                       node("aten.clone", "rf", "{\"memory_format\": \"contiguous_format\"}", "c"),
                       node(kQ, "c", q_args(out_scale, -128), "y")});
  };
  const CompileResult same = compile_json(clone_graph(0.25));
  ASSERT_TRUE(same.ok()) << format_report(same);
  EXPECT_EQ(ops_of(same.graph), (std::vector<std::string>{"q8ta_clamp"})) << format_report(same);
  const CompileResult other = compile_json(clone_graph(0.5));
  ASSERT_TRUE(other.ok()) << format_report(other);
  EXPECT_EQ(ops_of(other.graph), (std::vector<std::string>{"q8ta_clamp", "q8ta_clamp"}))
      << format_report(other);
}

// ---- channel shuffle spelled with contiguous() ------------------------------------------------

// ShuffleNet's channel shuffle as torch.export and other exporters write it: view (5-D) ->
// transpose (or permute) -> clone (or _clone_dim_order) -> view, with no quantize between the
// moves or (FX) with q -> dq pairs around each one, and a final quantize with the same or other
// parameters: always one q8ta_channel_shuffle.
TEST(ChannelShuffleSpellings, ViewTransposeCloneViewIsOneChannelShuffle) {
  const std::string view5 = "{\"size\": [1, 2, 4, 3, 3]}", view4 = "{\"size\": [1, 8, 3, 3]}";
  const std::vector<std::pair<std::string, std::string>> swaps = {
      {"aten.transpose_copy.int", "{\"dim0\": 1, \"dim1\": 2}"},
      {"aten.transpose.int", "{\"dim0\": 1, \"dim1\": 2}"},
      {"aten.permute_copy", "{\"dims\": [0, 2, 1, 3, 4]}"}};
  const std::vector<std::pair<std::string, std::string>> copies = {
      {"aten.clone", "{\"memory_format\": \"contiguous_format\"}"},
      {"aten._clone_dim_order", "{\"dim_order\": [0, 1, 2, 3, 4]}"},
      {"aten.alias_copy", "{}"}};
  for (bool pairs : {false, true}) {
    for (double out_scale : {0.5, 0.25}) {
      for (const auto& [swap, swap_args] : swaps) {
        for (const auto& [copy, copy_args] : copies) {
          // With pairs, each move's output is quantized and dequantized again (the input's
          // parameters), as FX's reference graphs write it.
          std::vector<std::string> nodes = {node(kDq, "xq", q_args(0.5, 1), "x")};
          std::string cur = "x";
          int k = 0;
          auto move = [&](const std::string& op, const std::string& args) {
            const std::string out = "m" + std::to_string(k++);
            nodes.push_back(node(op, cur, args, out));
            cur = out;
            if (!pairs) return;
            nodes.push_back(node(kQ, cur, q_args(0.5, 1), cur + "q"));
            nodes.push_back(node(kDq, cur + "q", q_args(0.5, 1), cur + "f"));
            cur += "f";
          };
          move("aten.view_copy", view5);
          move(swap, swap_args);
          move(copy, copy_args);
          nodes.push_back(node("aten.view_copy", cur, view4, "v"));
          nodes.push_back(node(kQ, "v", q_args(out_scale, 1), "y"));
          const CompileResult r = compile_json(graph_json("[1, 8, 3, 3]", nodes));
          const std::string what = swap + " " + copy + (pairs ? " with pairs" : "") +
                                   " out scale " + std::to_string(out_scale);
          ASSERT_TRUE(r.ok()) << what << "\n" << format_report(r);
          ASSERT_EQ(ops_of(r.graph), (std::vector<std::string>{"q8ta_channel_shuffle"}))
              << what << "\n" << format_report(r);
          EXPECT_EQ(std::get<int64_t>(r.graph.nodes[0].args.at("groups")), 2) << what;
          EXPECT_EQ(std::get<double>(r.graph.nodes[0].args.at("output_scale")), out_scale)
              << what;
        }
      }
    }
  }
}

}  // namespace
