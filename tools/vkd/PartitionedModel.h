// A partitioned model run whole (`vkd compile --partition`: MODEL.partition.json, one blob per
// partition): every step in the plan's order, delegate steps through the public C++ API
// (vkd::Delegate) on host tensors, host steps on the CPU through the compiler's reference
// interpreter (a one-node graph per step). Between steps the host holds int8 boundary tensors
// as int8 NCHW (their quantization is in the plan) and float tensors as float32 (float16 ones as
// float16, widened for a delegate).
//
// Kept apart from the command so that a public C++ API (a vkd::Model) can take it over; that API
// needs a design decision first, as the runtime library may not include compiler/ (the host
// steps' interpreter).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/Interpreter.h"
#include "tools/vkd/PartitionPlan.h"
#include "vkdelegate/Delegate.hpp"

namespace vkd::cli {

using TensorMap = std::map<std::string, compiler::HostTensor>;

// What a partitioned model reads before a device is touched: the plan, every blob, and the
// constants of its host steps with the one-node graph of each host step.
struct PlanFiles {
  PartitionPlan plan;
  std::vector<std::vector<uint8_t>> blobs;     // per step; empty for a host step
  TensorMap constants;                         // by value name
  std::vector<compiler::Graph> host_graphs;    // per step; empty for a GPU step
};

// Reads and validates the plan (PartitionPlan.h), reads every blob it names (all missing ones
// listed) and, when a host step reads a constant, the constants from `weights_path` (by the
// plan's weights name, dtype and shape checked). CliError(2) naming the plan, the step, the
// file and the tensor. --weights without a constant to read is an error too.
PlanFiles read_plan_files(const std::string& plan_path,
                          const std::optional<std::string>& weights_path);

// One step of one run.
struct StepTiming {
  const PlanStep* step = nullptr;
  double wall_us = 0.0;              // host wall time of execute() / interpret()
  std::vector<NodeProfile> profile;  // GPU steps: the delegate's profile of this execute()
};

class PartitionedModel {
 public:
  // Loads every blob on the device (CliError naming the step on failure) and checks each
  // delegate's inputs and outputs against the plan (names, dtypes, shapes).
  static std::unique_ptr<PartitionedModel> create(PlanFiles files, const DelegateOptions& options);

  const PartitionPlan& plan() const { return files_.plan; }
  // The model's inputs and outputs as a delegate describes its own: dtype and shape from the
  // plan, the device fields from the delegate step that reads (writes) it, "host" otherwise.
  std::vector<TensorInfo> input_infos() const;
  std::vector<TensorInfo> output_infos() const;
  // The delegate of a GPU step (nullptr for a host step).
  const Delegate* delegate(size_t step) const { return delegates_[step].get(); }
  std::string device_name() const;
  uint64_t validation_message_count() const;  // summed over the delegates

  // Runs every step in order. `inputs`: each model input by name, with the plan's dtype and
  // shape. Returns every tensor (inputs, constants, each step's outputs); `timings` gets one
  // entry per step. A failing step is CliError naming it.
  TensorMap run(const TensorMap& inputs, std::vector<StepTiming>* timings);

 private:
  explicit PartitionedModel(PlanFiles files) : files_(std::move(files)) {}
  TensorInfo boundary_info(const std::string& name, bool is_input) const;
  StepTiming run_gpu_step(const PlanStep& step, TensorMap& values);
  StepTiming run_host_step(const PlanStep& step, TensorMap& values) const;

  PlanFiles files_;
  std::vector<std::unique_ptr<Delegate>> delegates_;  // per step; null for a host step
};

}  // namespace vkd::cli
