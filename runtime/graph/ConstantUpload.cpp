#include "runtime/graph/ConstantUpload.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/Error.h"
#include "runtime/graph/GraphCommands.h"

namespace vkd::graph {
namespace {

// Copies packed constants into their tensors through one host-visible staging buffer of
// `capacity` bytes, submitting (and waiting) whenever it is full: a buffer constant is copied
// in chunks of whatever space is left, a texture constant waits for its whole size.
class ConstantStager {
 public:
  ConstantStager(vk::Context& context, uint64_t capacity)
      : context_(context),
        capacity_(capacity),
        staging_(context.memory().create_buffer(capacity, vk::MemoryUse::HostUpload,
                                                "constant staging")),
        mapped_(static_cast<uint8_t*>(staging_.mapped())),
        cmd_(context.new_command_buffer()) {
    cmd_.begin(true);
  }

  uint64_t staging_bytes() const { return staging_.size(); }

  void add(const GpuTensor& t, const std::vector<uint8_t>& packed) {
    if (t.is_image()) {
      add_image(t, packed);
    } else {
      add_buffer(t, packed);
    }
  }

  // Submits what is still staged; the last, empty command buffer is never submitted.
  void finish() {
    flush();
    cmd_.end();
  }

 private:
  // A buffer-to-image copy must start at a multiple of the texel size (8 or 16 bytes), so an
  // image goes at the next multiple of 16 after what is staged, in a fresh batch when it would
  // end past the capacity: used_ never exceeds capacity_ (add_buffer's free space relies on it).
  void add_image(const GpuTensor& t, const std::vector<uint8_t>& packed) {
    uint64_t offset = (used_ + 15) / 16 * 16;
    if (offset + packed.size() > capacity_) {
      flush();
      offset = 0;
    }
    std::memcpy(mapped_ + offset, packed.data(), packed.size());
    record_copy(cmd_, t, staging_.handle(), true, offset);
    used_ = offset + packed.size();
  }

  void add_buffer(const GpuTensor& t, const std::vector<uint8_t>& packed) {
    for (uint64_t done = 0; done < packed.size();) {
      if (used_ == capacity_) flush();
      const uint64_t n = std::min<uint64_t>(capacity_ - used_, packed.size() - done);
      std::memcpy(mapped_ + used_, packed.data() + done, n);
      cmd_.copy_buffer(staging_.handle(), t.buffer().handle(), VkBufferCopy{used_, done, n});
      used_ += n;
      done += n;
    }
  }

  void flush() {
    if (used_ == 0) return;
    staging_.flush();
    cmd_.end();
    submit_and_wait_keeping(context_, cmd_, "constant upload", staging_);
    cmd_ = context_.new_command_buffer();
    cmd_.begin(true);
    used_ = 0;
  }

  vk::Context& context_;
  const uint64_t capacity_;
  vk::Buffer staging_;
  uint8_t* mapped_;
  vk::CommandBuffer cmd_;  // destroyed before the staging buffer it copies from
  uint64_t used_ = 0;
};

// Staging bytes for the constant upload: 0 without constants.
uint64_t constant_staging_capacity(const GraphDefinition& graph, const GraphMemory& memory,
                                   uint64_t batch_bytes) {
  uint64_t total = 0, largest_image = 0;
  for (ValueRef ref = 0; static_cast<size_t>(ref) < graph.tensor_count(); ++ref) {
    if (!graph.is_constant(ref) || memory.constant_shared(ref)) continue;
    const GpuTensor& t = graph.tensor(ref);
    // Sizes rounded up to 16 cover the padding ConstantStager puts before images, so
    // constants below the batch limit still go in one batch.
    total += (t.bytes() + 15) / 16 * 16;
    if (t.is_image()) largest_image = std::max(largest_image, t.bytes());
  }
  if (total == 0) return 0;
  return std::max<uint64_t>(std::min<uint64_t>(std::max<uint64_t>(batch_bytes, 16), total),
                            largest_image);
}

}  // namespace

void upload_constants(vk::Context& context, GraphDefinition& graph, GraphMemory& memory,
                      uint64_t batch_bytes) {
  // Constants go through one host-visible staging buffer of at most `batch_bytes`
  // (larger buffer constants are copied in chunks; a texture constant is staged whole), which
  // is freed before prepare() goes on: load memory stays near the model's own size.
  const uint64_t capacity = constant_staging_capacity(graph, memory, batch_bytes);
  if (capacity == 0) return;
  ConstantStager stager(context, capacity);
  memory.add_staging_bytes(stager.staging_bytes());
  for (ValueRef ref = 0; static_cast<size_t>(ref) < graph.tensor_count(); ++ref) {
    // A constant bound in another graph's uploaded bytes has nothing to upload.
    if (!graph.is_constant(ref) || memory.constant_shared(ref)) continue;
    const GpuTensor& t = graph.tensor(ref);
    // Taken from the graph, so whatever the packer captured is dropped once it ran.
    const std::vector<uint8_t> packed = graph.take_constant_packer(ref)();
    memory.note_load_bytes(packed.size());
    VKD_CHECK(packed.size() == t.bytes(), ErrorCode::Internal, "constant '", t.name(),
              "': packer gave ", packed.size(), " bytes, the tensor holds ", t.bytes());
    stager.add(t, packed);
    memory.constant_uploaded(ref, packed);
  }
  stager.finish();
  memory.release_staging_bytes(stager.staging_bytes());
}

}  // namespace vkd::graph
