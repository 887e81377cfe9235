// A model run whole (vkd::Model's engine): every step in the plan's order, GPU steps through
// the public C++ API (vkd::Delegate) on host tensors, host steps on the CPU through the
// compiler's reference interpreter (a one-node graph per step). Between steps the host holds
// int8 boundary tensors as int8 NCHW (their quantization is in the plan) and float tensors as
// float32 (float16 ones as float16, widened for a delegate).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/PlanFiles.h"
#include "vkdelegate/Delegate.hpp"
#include "vkdelegate/Model.hpp"

namespace vkd::model {

class PartitionedModel {
 public:
  // Loads every blob on the device (an Error naming the step and the delegate's status on
  // failure) and checks each delegate's inputs and outputs against the plan (names, dtypes,
  // shapes). A plain blob's plan (PartitionPlan::from_blob) is described from its delegate.
  static std::unique_ptr<PartitionedModel> create(PlanFiles files, const DelegateOptions& options);

  const PartitionPlan& plan() const { return files_.plan; }
  // The model's inputs and outputs as a delegate describes its own: dtype and shape from the
  // plan, the device fields from the delegate step that reads (writes) it, "host" otherwise.
  std::vector<TensorInfo> input_infos() const;
  std::vector<TensorInfo> output_infos() const;
  std::vector<StepInfo> step_infos() const;
  std::string device_name() const;
  uint64_t validation_message_count() const;  // summed over the delegates
  // Delegate::set_profiling on every delegate; anything but Off without the options' profiling
  // is an InvalidArgument Error (also with no delegate: the rule does not depend on the plan).
  void set_profiling(Delegate::Profiling mode);

  // Runs every step in order. `inputs`: each model input by name, with the plan's dtype and
  // shape. Returns every tensor (inputs, constants, each step's outputs); `timings` gets one
  // entry per step. A failing step is an Error naming it (a delegate's with its status's code).
  TensorMap run(const TensorMap& inputs, std::vector<StepTiming>* timings);

  // A model of one GPU step that takes and gives the model's own tensors, none float16 (every
  // plain blob): the caller's views go to the delegate as they are, with no host copy.
  bool runs_direct() const { return direct_; }
  // That one GPU step's delegate (null for any other model): a blob with a dynamic length runs
  // through it at any length.
  Delegate* direct_delegate() const { return direct_ ? delegates_.front().get() : nullptr; }
  StepTiming run_direct(const std::vector<ConstTensorView>& in, const std::vector<TensorView>& out);

 private:
  explicit PartitionedModel(PlanFiles files) : files_(std::move(files)) {}
  TensorInfo boundary_info(const std::string& name, bool is_input) const;
  StepTiming run_gpu_step(const PlanStep& step, TensorMap& values);
  StepTiming run_host_step(const PlanStep& step, TensorMap& values) const;
  StepTiming execute_step(const PlanStep& step, const std::vector<ConstTensorView>& in,
                          const std::vector<TensorView>& out);

  PlanFiles files_;
  std::vector<std::unique_ptr<Delegate>> delegates_;  // per step; null for a host step
  bool direct_ = false;                               // see runs_direct()
  bool profiling_ = false;                            // the delegates' options.profiling
};

}  // namespace vkd::model
