// What PERF records about the conditions of each measurement, so that a slow figure says
// whether the kernel or its conditions were slow (issue 20 item 6: the same case measured 3-50x
// slower in some processes than in others on an H100):
// - where the case's tensors landed in device memory (memory type, heap, property flags, offset
//   alignment), with a warning when that is not what a GPU kernel should read;
// - the GPU's ALU rate just before and after the case's timed submission, from a fixed probe
//   kernel whose rate follows the SM clock, against the best the probe measured in the run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "test/custom_ops/Harness.h"

namespace vkd::custom_ops {

// Offsets of buffers bound inside an allocation should be multiples of this: the kernels load
// and store up to 16 bytes at a time (ivec4), which the buffers' own alignment must allow.
inline constexpr uint64_t kVectorBytes = 16;

struct PlacementReport {
  // "3 buffers in 2 allocations: memory type 1 (DEVICE_LOCAL; heap 0, device-local, 79.6 GiB);
  // offsets 256-byte aligned or more"
  std::string summary;
  uint64_t min_offset_alignment = 0;   // the largest power of two dividing every offset (0: none)
  std::vector<uint32_t> memory_types;  // distinct, in first-use order
  // One line per tensor that landed somewhere unexpected: outside device-local memory on a
  // device that has it, or at an offset not a multiple of kVectorBytes.
  std::vector<std::string> warnings;
};

// Where the tensors of a prepared graph landed.
PlacementReport report_placement(const graph::ComputeGraph& g, const vk::MemoryAllocator& memory);

// "DEVICE_LOCAL|HOST_VISIBLE" ("none" for 0).
std::string memory_flags_name(VkMemoryPropertyFlags flags);

// The probe: a fixed register-resident int8 dot-product kernel (peak_cases.cpp's, ~2^18
// invocations, ~0.1 ms at an H100's full clock), prepared once, timed alone. Its rate is
// proportional to the SM clock and independent of memory, so a case whose probe rate around it
// fell well below the run's best ran at lowered clocks.
class ClockProbe {
 public:
  explicit ClockProbe(vk::Context& ctx);
  // The probe's rate now, GOP/s (the fastest of 3 back-to-back repetitions after `busy`
  // untimed ones); also raises best().
  double measure(uint32_t busy = 0);
  double best() const { return best_; }
  // Runs the probe until it reaches `share` of best() or `max_ms` of wall time pass; returns
  // the last rate. Brings the clocks up after host-side phases in which the GPU idled.
  double settle(double share, int max_ms);

 private:
  std::unique_ptr<CaseInstance> probe_;
  graph::ComputeGraph graph_;
  double ops_ = 0;
  double best_ = 0;
};

}  // namespace vkd::custom_ops
