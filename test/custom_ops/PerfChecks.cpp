#include "test/custom_ops/PerfChecks.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "core/Error.h"
#include "runtime/vk/Context.h"

namespace vkd::custom_ops {
namespace {

// The largest power of two dividing `offset` (0 for offset 0: any alignment).
uint64_t alignment_of(uint64_t offset) { return offset == 0 ? 0 : offset & (~offset + 1); }

bool device_has_device_local_type(const VkPhysicalDeviceMemoryProperties& props) {
  for (uint32_t i = 0; i < props.memoryTypeCount; ++i) {
    if (props.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) return true;
  }
  return false;
}

// "memory type 1 (DEVICE_LOCAL; heap 0, device-local, 79.6 GiB)"
std::string describe_type(const VkPhysicalDeviceMemoryProperties& props, uint32_t type) {
  if (type >= props.memoryTypeCount) return "no memory type (unbound)";
  const VkMemoryType& t = props.memoryTypes[type];
  const VkMemoryHeap& h = props.memoryHeaps[t.heapIndex];
  return "memory type " + std::to_string(type) + " (" + memory_flags_name(t.propertyFlags) +
         "; heap " + std::to_string(t.heapIndex) +
         (h.flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT ? ", device-local, " : ", not device-local, ") +
         vk::format_bytes(h.size) + ")";
}

}  // namespace

std::string memory_flags_name(VkMemoryPropertyFlags flags) {
  static const std::pair<VkMemoryPropertyFlagBits, const char*> kNames[] = {
      {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, "DEVICE_LOCAL"},
      {VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, "HOST_VISIBLE"},
      {VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, "HOST_COHERENT"},
      {VK_MEMORY_PROPERTY_HOST_CACHED_BIT, "HOST_CACHED"},
      {VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT, "LAZILY_ALLOCATED"},
      {VK_MEMORY_PROPERTY_PROTECTED_BIT, "PROTECTED"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (flags & bit) out += (out.empty() ? "" : "|") + std::string(name);
  }
  return out.empty() ? "none" : out;
}

PlacementReport report_placement(const graph::ComputeGraph& g, const vk::MemoryAllocator& memory) {
  const VkPhysicalDeviceMemoryProperties& props = memory.properties();
  const bool has_device_local = device_has_device_local_type(props);
  PlacementReport r;
  size_t buffers = 0, images = 0;
  std::vector<uint32_t> allocations;  // memory_range() ids: blocks, then each image's own
  for (size_t i = 0; i < g.tensor_count(); ++i) {
    const auto ref = static_cast<graph::ValueRef>(i);
    const graph::GpuTensor& t = g.tensor(ref);
    const uint32_t type = t.is_image() ? t.image().memory_type() : t.buffer().memory_type();
    (t.is_image() ? images : buffers)++;
    const uint32_t allocation = g.memory_range(ref).memory;
    if (std::find(allocations.begin(), allocations.end(), allocation) == allocations.end()) {
      allocations.push_back(allocation);
    }
    if (std::find(r.memory_types.begin(), r.memory_types.end(), type) == r.memory_types.end()) {
      r.memory_types.push_back(type);
    }
    const bool device_local =
        type < props.memoryTypeCount &&
        (props.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (has_device_local && !device_local) {
      r.warnings.push_back("tensor '" + t.name() + "' landed in " + describe_type(props, type) +
                           ", not in device-local memory, which the device has");
    }
    if (t.is_image()) continue;
    const uint64_t offset = t.buffer().memory_offset();
    const uint64_t a = alignment_of(offset);
    if (a != 0)
      r.min_offset_alignment = r.min_offset_alignment ? std::min(r.min_offset_alignment, a) : a;
    if (a != 0 && a < kVectorBytes) {
      r.warnings.push_back("tensor '" + t.name() + "' is bound at offset " +
                           std::to_string(offset) + " of its allocation, not a multiple of the " +
                           std::to_string(kVectorBytes) + "-byte vectors the kernels load");
    }
  }
  r.summary = std::to_string(buffers) + " buffers" +
              (images ? " + " + std::to_string(images) + " images" : "") + " in " +
              std::to_string(allocations.size()) +
              (allocations.size() == 1 ? " allocation:" : " allocations:");
  for (size_t i = 0; i < r.memory_types.size(); ++i) {
    r.summary += (i ? ", " : " ") + describe_type(props, r.memory_types[i]);
  }
  r.summary += r.min_offset_alignment
                   ? "; offsets " + std::to_string(r.min_offset_alignment) + "-byte aligned or more"
                   : "; every buffer at offset 0";
  return r;
}

ClockProbe::ClockProbe(vk::Context& ctx) : probe_(make_clock_probe()), graph_(ctx) {
  probe_->build(graph_);
  graph_.prepare();
  std::mt19937 rng(1);
  probe_->write_inputs(graph_, rng);
  graph_.execute();
  ops_ = probe_->work().ops;
}

double ClockProbe::measure(uint32_t busy) {
  const std::vector<double> times = graph_.benchmark(busy, 3).end_to_end_us;
  const double fastest = *std::min_element(times.begin(), times.end());
  const double rate = ops_ / (std::max(fastest, 1e-3) * 1e3);  // GOP/s
  best_ = std::max(best_, rate);
  return rate;
}

double ClockProbe::settle(double share, int max_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(max_ms);
  // Each check keeps the GPU busy for ~50 probe runs (~5 ms on an H100), so the clocks see load.
  double rate = measure(50);
  while (rate < share * best_ && std::chrono::steady_clock::now() < deadline) rate = measure(50);
  return rate;
}

}  // namespace vkd::custom_ops
