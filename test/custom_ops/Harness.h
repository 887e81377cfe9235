// The custom-op test and benchmark harness. A case builds a small ComputeGraph around one op,
// fills its inputs, and checks the outputs against an independent CPU reference (ACCU), or is
// timed with GPU timestamps (PERF). Op families add cases in one file each
// (<family>_cases.cpp) through a register_<family>_cases(Registry&) function; main.cpp calls
// every one, from a list the build makes from the folder (test/CMakeLists.txt).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"

namespace vkd::custom_ops {

struct AccuResult {
  double max_abs_error = 0.0;
  int64_t mismatches = 0;
  int64_t repeat_mismatches = 0;  // --repeat: output words that differ on a second execute
  int64_t checked = 0;
};

// One checked value: its error (NaN counts as infinite) and whether it is out of tolerance.
inline void record(AccuResult& r, double err, bool bad) {
  r.max_abs_error = std::max(r.max_abs_error, std::isnan(err) ? INFINITY : err);
  r.mismatches += bad;
  ++r.checked;
}

// Work done by one execution, for throughput figures.
struct PerfWork {
  double bytes = 0.0;  // bytes that must cross device memory (each input read, output written once)
  double ops = 0.0;    // arithmetic ops (a multiply-add counts as 2)
};

class CaseInstance {
 public:
  virtual ~CaseInstance() = default;
  virtual void build(graph::ComputeGraph& graph) = 0;
  virtual void write_inputs(graph::ComputeGraph& graph, std::mt19937& rng) = 0;
  virtual AccuResult check(const graph::ComputeGraph& graph) = 0;
  virtual PerfWork work() const = 0;
};

enum class Metric { GBps, GOPs };

struct Case {
  std::string name;  // unique; --filter matches it
  std::string op;
  std::string shape;                       // e.g. "1x3x5x7"
  std::string layout;                      // e.g. "buffer/width_packed -> 4W4C"
  bool accu = true;                        // part of ACCU mode
  bool perf = false;                       // part of PERF mode
  bool with_and_without_int8_dot = false;  // ACCU runs again with the int8 dot product and
                                           // subgroup arithmetic off (the fallback paths) and,
                                           // on a CPU device, with its CPU kernels off
  Metric metric = Metric::GBps;
  std::function<std::unique_ptr<CaseInstance>()> make;
  // What the device must offer for the case to run ("" = it has it); an ACCU case whose
  // device lacks it is reported as not run, never as passed. Empty function: runs anywhere.
  std::function<std::string(const vk::DeviceProfile&)> unavailable;
  // The peak or ceiling case whose rate is this case's 100% ("" = peak/copy for GB/s,
  // peak/int8_dot for GOP/s).
  std::string peak;
  // The reference backend's latency for the same problem on an H100 (EtvkShapes.h), printed
  // next to ours with the ratio; 0: none.
  double reference_us = 0;
};

class Registry {
 public:
  void add(Case c) { cases_.push_back(std::move(c)); }
  const std::vector<Case>& cases() const { return cases_; }

 private:
  std::vector<Case> cases_;
};

// The clock probe's kernel (PerfChecks.h): the int8 dot-product peak loop, ~2^18 invocations.
std::unique_ptr<CaseInstance> make_clock_probe();

// A copy moving `node_bytes` (half read, half written) in each of `nodes(profile)` independent
// dispatches, each with its own buffers (peak_cases.cpp): the copy bandwidth a memory-bound
// case moving the same bytes the same way (one node per streamed weight copy) is held to.
std::unique_ptr<CaseInstance> make_copy_case(
    uint64_t node_bytes, std::function<int64_t(const vk::DeviceProfile&)> nodes);

// Shapes that exercise partial blocks in every dimension.
const std::vector<std::vector<int64_t>>& awkward_shapes();
std::string shape_string(const std::vector<int64_t>& sizes);

// Where a float tensor of a case lives: its storage type and float layout.
struct FloatPlacement {
  StorageType storage;
  MemoryLayout layout;
};
// Every storage type with every float layout, buffers first.
inline constexpr FloatPlacement kAllFloatPlacements[] = {
    {StorageType::Buffer, MemoryLayout::WidthPacked},
    {StorageType::Buffer, MemoryLayout::HeightPacked},
    {StorageType::Buffer, MemoryLayout::ChannelsPacked},
    {StorageType::Texture3D, MemoryLayout::WidthPacked},
    {StorageType::Texture3D, MemoryLayout::HeightPacked},
    {StorageType::Texture3D, MemoryLayout::ChannelsPacked},
};
// "storage/layout", as case names and layout columns show it.
std::string placement_name(const FloatPlacement& p);

// Compare helpers that fill an AccuResult.
void compare_words(const std::vector<int32_t>& actual, const std::vector<int32_t>& expected,
                   AccuResult& result);
void compare_floats(const std::vector<float>& actual, const std::vector<float>& expected,
                    double tolerance, AccuResult& result);

}  // namespace vkd::custom_ops
