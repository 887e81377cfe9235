// partition_plan_json (Compiler.h): the host's side of `vkd compile --partition`.
#include <nlohmann/json.hpp>

#include "compiler/Compiler.h"
#include "core/Error.h"

namespace vkd::compiler {
namespace {

using Json = nlohmann::ordered_json;

Json arg_json(const ArgValue& v) {
  return std::visit(
      [](const auto& x) -> Json {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, NoneArg>) {
          return nullptr;
        } else {
          return x;
        }
      },
      v);
}

// A tensor as the host holds it: int8x4 activations are int8 in NCHW order.
Json tensor_json(const Value& v) {
  Json j;
  j["dtype"] = std::string(to_string(v.dtype == DType::Int8x4 ? DType::Int8 : v.dtype));
  j["shape"] = v.shape;
  if (v.quant) {
    j["quant"] = {{"scale", v.quant->scale},
                  {"zero_point", v.quant->zero_point},
                  {"quant_min", v.quant->quant_min},
                  {"quant_max", v.quant->quant_max}};
  }
  if (v.is_constant()) j["constant"] = true;
  // Where the host finds it: the original weights file's tensor (the plan reader falls back to
  // the value's name when "data" is absent).
  if (v.is_constant() && !v.weights_name.empty()) j["data"] = v.weights_name;
  return j;
}

}  // namespace

std::string partition_plan_json(const PartitionedResult& result,
                                const std::vector<std::string>& blob_files) {
  VKD_CHECK(blob_files.size() == result.parts.size(), ErrorCode::Internal,
            "partition_plan_json: ", blob_files.size(), " blob names for ", result.parts.size(),
            " partitions");
  const Graph& g = result.lowered;
  Json doc;
  doc["vkd_partition"] = 1;
  doc["inputs"] = g.inputs;
  doc["outputs"] = g.outputs;
  Json steps = Json::array();
  Json tensors = Json::object();
  const auto note_tensor = [&](const std::string& name) {
    if (!name.empty() && !tensors.contains(name)) tensors[name] = tensor_json(g.value(name));
  };
  for (const auto& step : result.plan.steps) {
    Json s;
    if (step.delegate) {
      const Graph& part = result.plan.partitions[step.index].graph;
      s["delegate"] = blob_files[step.index];
      s["inputs"] = part.inputs;
      s["outputs"] = part.outputs;
      for (const auto& v : part.inputs) note_tensor(v);
      for (const auto& v : part.outputs) note_tensor(v);
    } else {
      const Node& n = g.nodes[step.index];
      s["host"] = n.op;
      s["inputs"] = n.inputs;
      Json args = Json::object();
      for (const auto& [name, value] : n.args) args[name] = arg_json(value);
      s["args"] = args;
      s["outputs"] = n.outputs;
      s["origin"] = n.origin.empty() ? "node " + std::to_string(step.index) : n.origin;
      for (const auto& v : n.inputs) note_tensor(v);
      for (const auto& v : n.outputs) note_tensor(v);
    }
    steps.push_back(std::move(s));
  }
  doc["steps"] = std::move(steps);
  doc["tensors"] = std::move(tensors);
  return doc.dump(2) + "\n";
}

}  // namespace vkd::compiler
