// A ComputeGraph owns GPU tensors and an ordered list of dispatch nodes. prepare() creates
// pipelines and descriptor sets and records ONE command buffer for the whole graph (input
// uploads, every dispatch with a timestamp pair around it, output downloads); execute()
// resubmits it. Host data enters and leaves through per-tensor staging buffers in the
// tensor's device element order (packing happens on the CPU, runtime/tensor/HostPacking.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/graph/GpuTensor.h"
#include "runtime/vk/Commands.h"
#include "runtime/vk/Context.h"
#include "runtime/vk/Descriptors.h"
#include "runtime/vk/TimestampQueries.h"
#include "runtime/vk/WorkgroupChooser.h"
#include "vkd/generated/ShaderRegistry.h"

namespace vkd::graph {

using ValueRef = int32_t;

struct DispatchNode {
  std::string op;                      // op name shown in profiles, e.g. "q8ta_quantize"
  shaders::Kernel kernel;
  std::vector<ValueRef> bindings;      // binding i of the kernel = tensor bindings[i]
  std::vector<uint8_t> push_constants; // exactly the kernel's push-constant block size
  std::vector<uint32_t> spec_constants;// the kernel's ids >= 3, in order
  vk::DispatchPlan plan;
};

// Copies a push-constant struct into the byte vector a DispatchNode carries.
template <typename T>
std::vector<uint8_t> push_constant_bytes(const T& value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  return std::vector<uint8_t>(p, p + sizeof(T));
}

struct NodeTiming {
  std::string op;
  std::string kernel;
  double gpu_us;
};

class ComputeGraph {
 public:
  explicit ComputeGraph(vk::Context& context);
  ~ComputeGraph();
  ComputeGraph(const ComputeGraph&) = delete;
  ComputeGraph& operator=(const ComputeGraph&) = delete;

  vk::Context& context() { return context_; }
  const vk::DeviceProfile& profile() const { return context_.profile(); }

  ValueRef add_tensor(const TensorSpec& spec, std::string name = "");
  const TensorSpec& spec(ValueRef ref) const { return tensor(ref).spec(); }
  const GpuTensor& tensor(ValueRef ref) const;
  size_t tensor_count() const { return tensors_.size(); }

  // Checks the binding kinds and constant sizes against the kernel before accepting the node.
  void add_node(DispatchNode node);
  const std::vector<DispatchNode>& nodes() const { return nodes_; }

  void add_input(ValueRef ref);
  void add_output(ValueRef ref);

  void prepare();
  bool prepared() const { return prepared_; }

  // Host -> input staging. Float tensors take NCHW float32 (float16 tensors are converted),
  // int32 tensors NCHW int32, int8x4 tensors NCHW int8 (packed on the CPU, padding =
  // pad_value, the tensor's zero point) or raw words.
  void write_float(ValueRef input, const std::vector<float>& nchw);
  void write_int32(ValueRef input, const std::vector<int32_t>& nchw);
  void write_int8(ValueRef input, const std::vector<int8_t>& nchw, int8_t pad_value);
  void write_words(ValueRef input, const std::vector<int32_t>& words);

  void execute();

  std::vector<float> read_float(ValueRef output) const;
  std::vector<int32_t> read_int32(ValueRef output) const;
  std::vector<int8_t> read_int8(ValueRef output) const;
  std::vector<int32_t> read_words(ValueRef output) const;

  // GPU time of every dispatch node in the last execute() (empty without timestamp support).
  std::vector<NodeTiming> last_timings() const;

  // Benchmarking: runs the dispatch nodes only (no staging copies) `warmup` + `repetitions`
  // times back to back in one submission, so the GPU stays busy and its clocks up, and
  // returns the GPU time of each timed repetition in microseconds (timestamps around each).
  // Inputs keep whatever the last execute() uploaded.
  std::vector<double> benchmark(uint32_t warmup, uint32_t repetitions);

 private:
  struct Staging {
    ValueRef tensor;
    vk::Buffer buffer;
  };
  const Staging& staging_for(const std::vector<Staging>& list, ValueRef ref,
                             const char* role) const;
  void upload_bytes(ValueRef input, const void* data, size_t bytes);
  std::vector<uint8_t> download_bytes(ValueRef output) const;
  void record_copy(VkCommandBuffer cmd, const GpuTensor& t, VkBuffer staging, bool to_device);
  void record_dispatch(VkCommandBuffer cmd, size_t node_index);

  vk::Context& context_;
  std::vector<std::unique_ptr<GpuTensor>> tensors_;
  std::vector<DispatchNode> nodes_;
  std::vector<ValueRef> input_refs_, output_refs_;
  std::vector<Staging> inputs_, outputs_;
  bool prepared_ = false;
  vk::DescriptorPool descriptor_pool_;
  vk::TimestampQueries timestamps_;
  vk::CommandBuffer command_buffer_;
  std::vector<const vk::Pipeline*> node_pipelines_;
  std::vector<VkDescriptorSet> node_sets_;
};

}  // namespace vkd::graph
