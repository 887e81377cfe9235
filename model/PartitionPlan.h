// The host's plan of a partitioned model: MODEL.partition.json as `vkd compile --partition`
// writes it (format: compiler/README.md, "Partitioning"). Read and validated here without a
// device, so every mistake in the plan is reported before anything runs, with the step and the
// tensor named. No Vulkan and no delegate (it needs the compiler: its ops and shape rules).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"
#include "compiler/Interpreter.h"
#include "core/Error.h"

namespace vkd::model {

// Whether `model_path` names a partition plan (vkd::Model::load, `vkd run`): a name ending in
// ".json" (a blob is a .vkd; anything else is read as a blob and rejected by its magic bytes).
bool is_partition_plan_path(const std::string& model_path);

// A tensor as the host holds it between steps: int8x4 activations are int8 NCHW with their
// quantization; a constant a host step reads comes from the original weights file.
struct PlanTensor {
  std::string name;
  DType dtype = DType::Float32;  // Float32, Float16, Int8 or Int32
  std::vector<int64_t> shape;
  std::optional<compiler::QuantInfo> quant;
  bool constant = false;
  // Constants: the weights-file tensor it comes from: the plan's "data" (vkd compile writes it),
  // else the value's own name (compiler/README.md, "Partitioning").
  std::string weights_name;
};

struct PlanStep {
  size_t index = 0;
  bool on_gpu = false;    // a delegate step (else a host step)
  std::string blob;       // delegate: the file as the plan names it (a plain file name)
  std::string blob_path;  // delegate: that file in the plan's directory
  std::string op;         // host: the edge op ("aten.max_pool2d")
  compiler::Args args;    // host: its args, as in the original graph
  std::string origin;     // host: "node 3 (aten.max_pool2d)"
  std::vector<std::string> inputs, outputs;  // host inputs may hold "" (an absent optional)

  // "step 0 (GPU m.p0.vkd)", "step 1 (host node 3 (aten.max_pool2d))": how messages name it.
  std::string label() const;
};

struct PartitionPlan {
  std::string path;
  // A plain blob read as a plan (vkd::Model::load of a .vkd): one GPU step, whose inputs,
  // outputs and tensors its delegate describes once it is loaded (PartitionedModel::create).
  bool from_blob = false;
  std::vector<std::string> inputs, outputs;
  std::vector<PlanStep> steps;
  std::map<std::string, PlanTensor> tensors;

  const PlanTensor& tensor(const std::string& name) const;  // validated: every name is there
  size_t gpu_step_count() const;
  bool needs_weights() const;  // a host step reads a constant
};

// Parses and validates a plan (`path` names it in the messages and locates the blobs). Checks:
// the JSON structure (no duplicate keys, nesting within kMaxJsonDepth: compiler/StrictJson.h)
// and every field's type; each blob a plain file name (its file is in the plan's directory);
// each tensor a step or the model names is described in "tensors" (dtype, shape within the
// caps of core/TensorLimits.h); each step reads only tensors that a model input, a
// constant or an earlier step provides, and writes tensors nothing else writes; each model
// output is written. Error(InvalidArgument) "<path>: <what>", one line per problem.
PartitionPlan parse_partition_plan(const std::string& json_text, const std::string& path);
// parse_partition_plan() of a file (a regular file, size-capped).
PartitionPlan read_partition_plan(const std::string& path);

// Every problem in `errors` at once, one per line, as Error(InvalidArgument); none: nothing.
void throw_if_any(const std::vector<std::string>& errors);

// `e`, thrown by the compiler (a shape rule, the interpreter) for a step, as that step's error:
// prefixed with `where`, Internal kept (the compiler's own fault), anything else InvalidArgument
// (the plan's or the inputs').
Error step_error(const std::string& where, const Error& e);

// The one-node graph a host step runs as on the CPU reference interpreter: its inputs are the
// step's tensor inputs (each once), its constants the values in `constants`, every value
// declared as the plan describes it. The step's output dtypes and shapes are checked against
// the op's shape rule (an Error naming the step on a mismatch or a bad argument: Internal for
// the compiler's own faults, else InvalidArgument), and a step the host cannot run
// (compiler::host_refusal, the check `vkd compile --partition` makes) is refused here
// (InvalidArgument), before anything runs.
compiler::Graph host_step_graph(const PartitionPlan& plan, const PlanStep& step,
                                const std::map<std::string, compiler::HostTensor>& constants);

}  // namespace vkd::model
