// Host data in and out of a prepared graph: one staging buffer per graph input and output, in
// the tensor's device element order (packing happens on the CPU, core/HostPacking.h), or the
// tensor's own memory where it was bound directly in host-visible memory (GraphMemory.h). The
// recorded execution copies staging -> inputs and outputs -> staging (GraphRecorder.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/graph/GraphDefinition.h"
#include "runtime/graph/GraphMemory.h"

namespace vkd::graph {

class GraphIO {
 public:
  struct Staging {
    ValueRef tensor;
    vk::Buffer buffer;    // empty when the tensor is bound in host-visible memory (direct)
    bool direct = false;  // then the tensor's own buffer is the staging
  };

  GraphIO(vk::Context& context, const GraphDefinition& graph);

  // A prepare() step after the memory plan: the staging of every graph input and output (a
  // direct one is its tensor's own memory), counted in `memory`'s figures.
  void create_staging_buffers(GraphMemory& memory);
  const std::vector<Staging>& inputs() const { return inputs_; }
  const std::vector<Staging>& outputs() const { return outputs_; }

  // Host -> input staging. Float tensors take NCHW float32 (float16 tensors are converted),
  // int32 tensors NCHW int32, int8x4 tensors NCHW int8 (packed on the CPU, padding =
  // pad_value, the tensor's zero point) or raw words.
  // The pointer forms read `count` elements straight from caller memory (no copy).
  void write_float(ValueRef input, const float* nchw, size_t count);
  void write_int32(ValueRef input, const int32_t* nchw, size_t count);
  void write_int8(ValueRef input, const int8_t* nchw, size_t count, int8_t pad_value);
  void write_words(ValueRef input, const std::vector<int32_t>& words);

  // Whether graph input/output `ref`'s staging memory holds exactly its NCHW host form: then
  // callers may write / read that mapped memory in place (staging_data) and skip the host copy.
  bool staging_is_host_form(ValueRef ref) const;
  // The mapped staging memory of graph input or output `ref`; kept for the graph's lifetime.
  void* staging_data(ValueRef ref);
  // After the host wrote an input's staging in place: its writes made visible to the device.
  void flush_input(ValueRef input);
  // Before the host reads an output's staging in place: the device's writes made visible.
  void invalidate_output(ValueRef output) const { output_staging(output); }
  // Output staging -> host, NCHW. The pointer forms write `count` elements (checked against
  // the tensor) straight into caller memory, unpacked from the mapped staging memory.
  void read_float(ValueRef output, float* nchw, size_t count) const;
  void read_int32(ValueRef output, int32_t* nchw, size_t count) const;
  void read_int8(ValueRef output, int8_t* nchw, size_t count) const;
  std::vector<float> read_float(ValueRef output) const;
  std::vector<int32_t> read_int32(ValueRef output) const;
  std::vector<int8_t> read_int8(ValueRef output) const;
  std::vector<int32_t> read_words(ValueRef output) const;

 private:
  const vk::Buffer& staging_buffer(const Staging& s) const {
    return s.direct ? graph_.tensor(s.tensor).buffer() : s.buffer;
  }
  // Token ids of `input` (its numel, NCHW) within the embedding table it indexes, when it is
  // such an input (GraphDefinition::id_limit): else an error naming the element.
  void check_ids(ValueRef input, const int32_t* ids) const;
  const Staging& staging_for(const std::vector<Staging>& list, ValueRef ref,
                             const char* role) const;
  // The mapped staging memory of an input (`bytes` long, checked) / of an output (made
  // visible to the host first).
  void* input_staging(ValueRef input, size_t bytes);
  const void* output_staging(ValueRef output) const;
  // Caller NCHW values <-> a float32 / int32 input's or output's staging memory: one copy
  // shared by the context's host copy threads where the staging is the host form
  // (staging_is_host_form), else packed / unpacked element runs.
  template <typename T>
  void pack_input(ValueRef input, const T* nchw);
  template <typename T>
  void unpack_output(ValueRef output, T* nchw) const;

  vk::Context& context_;
  const GraphDefinition& graph_;
  std::vector<Staging> inputs_, outputs_;
};

}  // namespace vkd::graph
