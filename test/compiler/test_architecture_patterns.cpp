// Patterns common CNN architectures put in a traced graph that the tests' own models do not
// (issue 31): ops that are the identity in eval mode (dropouts, stochastic depth), a view whose
// quantize has other parameters than its dequantize (flatten before a classifier), a standalone
// batch norm (after a concatenation, at the start of a block), a channel shuffle spelled with a
// contiguous() clone. Each graph is written here as JSON and compiled whole; the checks are on
// the backend ops it becomes and on the report.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "compiler/Compiler.h"
#include "compiler/Interpreter.h"
#include "compiler/Parse.h"
#include "compiler/Safetensors.h"
#include "core/Error.h"
#include "test/compiler/GraphText.h"

namespace {

using namespace vkd::compiler;

const char* const kQ = "quantized_decomposed.quantize_per_tensor";
const char* const kDq = "quantized_decomposed.dequantize_per_tensor";

using namespace vkd::compiler::graph_text;

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
        "[1, 8, 4, 4]",
        {node(kDq, "xq", q_args(0.5, 1), "x"), node("aten.relu", "x", "{}", "r"),
         node(kQ, "r", q_args(0.25, -128), "rq"), node(kDq, "rq", q_args(0.25, -128), "rf"),
         node(op, "rf", args, "d"), node(kQ, "d", q_args(0.25, -128), "dq"),
         node(kDq, "dq", q_args(0.25, -128), "df"), node("aten.relu", "df", "{}", "s"),
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
    const std::string json =
        graph_json("[1, 8, 4, 4]", {node(kDq, "xq", q_args(0.5, 1), "x"), node(op, "x", args, "d"),
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
  const std::string bad_p =
      graph_json("[1, 8, 4, 4]", {node(kDq, "xq", q_args(0.5, 1), "x"),
                                  node("aten.dropout", "x", "{\"p\": 1.5, \"train\": false}", "d"),
                                  node(kQ, "d", q_args(0.5, 1), "y")});
  EXPECT_THROW((void)parse_graph(bad_p, "g.json", nullptr), vkd::Error);
}

// ---- views and clones whose quantize has other parameters -----------------------------------

// x.flatten(1) before a classifier, observed on its own by FX: dq -> view -> q with a new scale.
// The view moves the int8 values (here q8ta_view: [1, 8, 2, 2] -> [1, 32] changes the packed
// shape), then q8ta_clamp requantizes them over the q's range.
TEST(RequantizedViews, FlattenWithItsOwnQuantizationIsAViewThenARequantization) {
  const CompileResult r = compile_json(
      graph_json("[1, 8, 2, 2]", {node(kDq, "xq", q_args(0.05, -2), "x"),
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
  const CompileResult r = compile_json(
      graph_json("[1, 8, 2, 2]", {node(kDq, "xq", q_args(0.05, -2), "x"),
                                  node("aten.view_copy", "x", "{\"size\": [8, 2, 2]}", "f"),
                                  node(kQ, "f", q_args(0.1, 3), "y")}));
  ASSERT_TRUE(r.ok()) << format_report(r);
  EXPECT_EQ(ops_of(r.graph), (std::vector<std::string>{"q8ta_clamp"})) << format_report(r);
}

// A contiguous() clone between quantizations (FX puts q -> dq around it) is no kernel when the
// parameters round-trip, one requantization when they do not.
TEST(RequantizedViews, CloneBetweenQuantizationsFoldsOrRequantizes) {
  auto clone_graph = [](double out_scale) {
    return graph_json(
        "[1, 8, 4, 4]",
        {node(kDq, "xq", q_args(0.5, 1), "x"), node("aten.relu", "x", "{}", "r"),
         node(kQ, "r", q_args(0.25, -128), "rq"), node(kDq, "rq", q_args(0.25, -128), "rf"),
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
              << what << "\n"
              << format_report(r);
          EXPECT_EQ(std::get<int64_t>(r.graph.nodes[0].args.at("groups")), 2) << what;
          EXPECT_EQ(std::get<double>(r.graph.nodes[0].args.at("output_scale")), out_scale) << what;
        }
      }
    }
  }
}

// ---- a standalone batch norm -----------------------------------------------------------------

// A float32 tensor of the safetensors file.
SafetensorsTensor f32_tensor(const std::string& name, const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return {name, "F32", {static_cast<int64_t>(v.size())}, bytes};
}

// The per-channel parameters of the tests' batch norms (C = 5): both signs of weight, a mean
// far from 0, variances from 0.09 to 2.
const std::vector<float> kWeight = {1.5f, -0.75f, 0.3f, 2.0f, 0.9f};
const std::vector<float> kBias = {0.1f, -0.4f, 0.25f, 0.0f, 1.1f};
const std::vector<float> kMean = {0.2f, -1.3f, 0.05f, 0.7f, -0.1f};
const std::vector<float> kVar = {0.09f, 1.0f, 2.0f, 0.5f, 0.33f};

// The batch norm written out for the test (PyTorch 1.13's CPU kernel, eval mode): per channel
// invstd = 1 / sqrt(var + eps), scale = invstd * weight, shift = bias - mean * scale with one
// rounding, y = x * scale + shift with one rounding.
struct TestAffine {
  std::vector<float> scale, shift;
};
TestAffine test_affine(bool affine, float eps) {
  TestAffine a;
  for (size_t c = 0; c < kMean.size(); ++c) {
    const float invstd = 1.0f / std::sqrt(kVar[c] + eps);
    const float scale = affine ? invstd * kWeight[c] : invstd;
    a.scale.push_back(scale);
    a.shift.push_back(std::fma(-kMean[c], scale, affine ? kBias[c] : 0.0f));
  }
  return a;
}

// xq [1, 5, 3, 4] -> dq -> <bn op> (the parameters "w", "b", "m", "v") [-> act] -> q -> y.
std::string batch_norm_graph(const std::string& op, const std::string& args, bool affine,
                             const std::string& act, const std::string& act_args,
                             int64_t in_shape_rank = 4) {
  const std::string shape = in_shape_rank == 4 ? "[1, 5, 3, 4]" : "[3, 5]";
  std::string values = "\"xq\": {\"dtype\": \"int8\", \"shape\": " + shape + "}";
  for (const char* name : {"w", "b", "m", "v"}) {
    if (!affine && (name[0] == 'w' || name[0] == 'b')) continue;
    values += std::string(", \"") + name +
              "\": {\"dtype\": \"float32\", \"shape\": [5], "
              "\"data\": \"" +
              name + "\"}";
  }
  const std::string bn_inputs =
      affine ? "[\"x\", \"w\", \"b\", \"m\", \"v\"]" : "[\"x\", \"\", \"\", \"m\", \"v\"]";
  const bool legit = op == "aten._native_batch_norm_legit_no_training";
  std::string nodes = node(kDq, "xq", q_args(0.05, -3), "x") + ", {\"op\": \"" + op +
                      "\", \"inputs\": " + bn_inputs + ", \"args\": " + args + ", \"outputs\": " +
                      (legit ? "[\"n\", \"save_mean\", \"save_invstd\"]" : "[\"n\"]") + "}";
  std::string last = "n";
  if (!act.empty()) {
    nodes += ", " + node(act, "n", act_args, "a");
    last = "a";
  }
  nodes += ", " + node(kQ, last, q_args(0.04, 5), "y");
  return "{\"vkd_graph\": 1, \"inputs\": [\"xq\"], \"outputs\": [\"y\"], \"values\": {" + values +
         "}, \"nodes\": [" + nodes + "]}";
}

SafetensorsFile bn_weights() {
  return SafetensorsFile::from_bytes(
      serialize_safetensors({f32_tensor("w", kWeight), f32_tensor("b", kBias),
                             f32_tensor("m", kMean), f32_tensor("v", kVar)}),
      "bn.safetensors");
}

const std::string kBatchNormArgs =
    "{\"training\": false, \"momentum\": 0.1, \"eps\": 1e-05, \"cudnn_enabled\": true}";
const std::string kLegitArgs = "{\"momentum\": 0.1, \"eps\": 1e-05}";

std::vector<float> floats_of(const Value& v) {
  std::vector<float> out(v.data ? v.data->size() / 4 : 0);
  if (!out.empty()) std::memcpy(out.data(), v.data->data(), out.size() * 4);
  return out;
}

// dq -> batch norm -> relu -> q, both edge spellings: one q8ta_batch_norm whose scale and shift
// are the test's fold of the parameters and whose range is the relu's [zp_out, 127].
TEST(BatchNormFusion, StandaloneBatchNormWithReluIsOneOp) {
  const SafetensorsFile weights = bn_weights();
  for (const auto& [op, args] :
       {std::make_pair(std::string("aten.batch_norm"), kBatchNormArgs),
        std::make_pair(std::string("aten._native_batch_norm_legit_no_training"), kLegitArgs)}) {
    const CompileResult r = compile_graph(
        parse_graph(batch_norm_graph(op, args, true, "aten.relu", "{}"), "bn.json", &weights), {});
    ASSERT_TRUE(r.ok()) << op << "\n" << format_report(r);
    ASSERT_EQ(ops_of(r.graph), (std::vector<std::string>{"q8ta_batch_norm"})) << op << "\n"
                                                                              << format_report(r);
    const Node& n = r.graph.nodes[0];
    EXPECT_EQ(n.inputs.at(0), "xq");
    EXPECT_EQ(n.outputs.at(0), "y");
    EXPECT_EQ(std::get<double>(n.args.at("input_scale")), 0.05);
    EXPECT_EQ(std::get<int64_t>(n.args.at("input_zero_point")), -3);
    EXPECT_EQ(std::get<double>(n.args.at("output_scale")), 0.04);
    EXPECT_EQ(std::get<int64_t>(n.args.at("output_zero_point")), 5);
    EXPECT_EQ(std::get<int64_t>(n.args.at("activation_min")), 5);  // relu: the zero point
    EXPECT_EQ(std::get<int64_t>(n.args.at("activation_max")), 127);
    const TestAffine want = test_affine(true, 1e-5f);
    EXPECT_EQ(floats_of(r.graph.value(n.inputs.at(1))), want.scale) << op;
    EXPECT_EQ(floats_of(r.graph.value(n.inputs.at(2))), want.shift) << op;
    // The parameters folded into them are gone from the blob.
    for (const char* v : {"w", "b", "m", "v"}) EXPECT_FALSE(r.graph.has_value(v)) << v;
    EXPECT_NE(format_report(r).find("into q8ta_batch_norm 'y' (5 channels, activation range "
                                    "5..127)"),
              std::string::npos)
        << format_report(r);
  }
}

// The interpreter runs the batch norm as the test's own arithmetic does, element by element
// (dq, then x * scale + shift with one rounding, the hardtanh, the quantize rounding half to
// even); no weight and bias: scale = invstd, shift = -mean * invstd.
TEST(BatchNormFusion, InterpreterComputesTheBatchNormAsPyTorchDoes) {
  const SafetensorsFile weights = bn_weights();
  const std::string json =
      batch_norm_graph("aten.batch_norm", kBatchNormArgs, false, "aten.hardtanh",
                       "{\"min_val\": -1.0, \"max_val\": 3.0}");
  const Graph g = parse_graph(json, "bn.json", &weights);
  std::vector<int8_t> x(60);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int8_t>(int(i * 37 % 256) - 128);
  const auto values = interpret(g, {{"xq", HostTensor::from_int8({1, 5, 3, 4}, x)}});
  const std::vector<int8_t> got = values.at("y").to_int8();
  const TestAffine a = test_affine(false, 1e-5f);
  const float inv_out = static_cast<float>(1.0 / static_cast<double>(0.04f));
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i / 12;
    const float xf = static_cast<float>(x[i] + 3) * 0.05f;
    const float y = std::min(std::max(std::fma(xf, a.scale[c], a.shift[c]), -1.0f), 3.0f);
    const double q = std::nearbyint(static_cast<double>(y * inv_out)) + 5;
    EXPECT_EQ(got[i], static_cast<int8_t>(std::min(std::max(q, -128.0), 127.0))) << i;
  }
  // And the compiled graph is the one kernel, its range the hardtanh's quantized bounds.
  const CompileResult r = compile_graph(g, {});
  ASSERT_EQ(ops_of(r.graph), (std::vector<std::string>{"q8ta_batch_norm"})) << format_report(r);
  EXPECT_EQ(std::get<int64_t>(r.graph.nodes[0].args.at("activation_min")), -20);
  EXPECT_EQ(std::get<int64_t>(r.graph.nodes[0].args.at("activation_max")), 80);
}

// A relu FX left apart (torch.relu after a BatchNorm2d module), quantized as the batch norm's
// output is, joins its epilogue: the range narrows to the relu's.
TEST(BatchNormFusion, ReluAfterTheBatchNormJoinsItsEpilogue) {
  const SafetensorsFile weights = bn_weights();
  std::string json = batch_norm_graph("aten.batch_norm", kBatchNormArgs, true, "", "");
  const std::string tail = node(kQ, "n", q_args(0.04, 5), "y");
  ASSERT_NE(json.find(tail), std::string::npos);
  json.replace(json.find(tail), tail.size(),
               node(kQ, "n", q_args(0.04, 5), "nq") + ", " +
                   node(kDq, "nq", q_args(0.04, 5), "nf") + ", " +
                   node("aten.relu", "nf", "{}", "r") + ", " + node(kQ, "r", q_args(0.04, 5), "y"));
  const CompileResult r = compile_graph(parse_graph(json, "bn.json", &weights), {});
  ASSERT_TRUE(r.ok()) << format_report(r);
  ASSERT_EQ(ops_of(r.graph), (std::vector<std::string>{"q8ta_batch_norm"})) << format_report(r);
  EXPECT_EQ(std::get<int64_t>(r.graph.nodes[0].args.at("activation_min")), 5);
  EXPECT_EQ(r.graph.nodes[0].outputs.at(0), "y");
}

// What q8ta_batch_norm does not take is reported and left to the host: a float batch norm (no
// quantize after it), a 2-D input (BatchNorm1d), parameters the kernel cannot compute exactly.
TEST(BatchNormFusion, WhatDoesNotFuseIsReported) {
  const SafetensorsFile weights = bn_weights();
  {
    const std::string json = batch_norm_graph("aten.batch_norm", kBatchNormArgs, true, "", "",
                                              /*in_shape_rank=*/2);
    const CompileResult r = compile_graph(parse_graph(json, "bn.json", &weights), {});
    EXPECT_FALSE(r.ok());
    EXPECT_NE(format_report(r).find("not fused: dq -> aten.batch_norm -> q (node 0..2) as "
                                    "q8ta_batch_norm: input shape [3, 5]: q8ta_batch_norm takes "
                                    "4-D [N, C, H, W] data"),
              std::string::npos)
        << format_report(r);
  }
  {  // a variance so small that x * scale leaves the kernel's exact range
    std::vector<float> var = kVar;
    var[2] = 0.0f;
    const SafetensorsFile tiny = SafetensorsFile::from_bytes(
        serialize_safetensors({f32_tensor("w", kWeight), f32_tensor("b", kBias),
                               f32_tensor("m", kMean), f32_tensor("v", var)}),
        "bn.safetensors");
    const std::string args =
        "{\"training\": false, \"momentum\": 0.1, \"eps\": 0.0, \"cudnn_enabled\": true}";
    const CompileResult r = compile_graph(
        parse_graph(batch_norm_graph("aten.batch_norm", args, true, "", ""), "bn.json", &tiny), {});
    EXPECT_FALSE(r.ok());
    EXPECT_NE(format_report(r).find("channel 2: scale inf and shift"), std::string::npos)
        << format_report(r);
  }
}

// Training mode normalizes with the batch's own statistics: refused when the graph is read.
TEST(BatchNormFusion, TrainingModeIsRefused) {
  const SafetensorsFile weights = bn_weights();
  const std::string args =
      "{\"training\": true, \"momentum\": 0.1, \"eps\": 1e-05, \"cudnn_enabled\": true}";
  try {
    (void)parse_graph(batch_norm_graph("aten.batch_norm", args, true, "", ""), "bn.json", &weights);
    ADD_FAILURE() << "accepted";
  } catch (const vkd::Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 1 (aten.batch_norm): argument 'training': true"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
