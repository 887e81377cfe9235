// The device's own ceilings, measured in the same run as the op cases so every PERF figure is
// a ratio to them: a streaming copy (GB/s, read + write) and a register-resident int8
// dot-product loop (GOP/s): 32 independent dependent chains per invocation; on devices with
// int8 cooperative matrices, a register-resident tensor-core loop too. ACCU cases check the dot
// product itself (OpSDot and fallback paths) and the cooperative-matrix product against CPU
// replicas of the kernels' loops.
#include <algorithm>

#include "core/Error.h"
#include "runtime/ops/Linear.h"
#include "runtime/vk/WorkgroupChooser.h"
#include "test/custom_ops/Harness.h"

namespace vkd::custom_ops {
namespace {

// Mirrors `Params` in shaders/bench_copy.glsl.
struct CopyPush {
  uint32_t count;
  uint32_t stride;
};

// Peak: 256 MiB each way on GPUs (read + write = 512 MiB, ten times a 50 MB L2), smaller on CPU
// devices and within the device's storage-buffer range. Accu: 1 MiB, checked. Floor: 256 bytes,
// one workgroup: what a dispatch costs with (almost) no work, the floor under every small layer.
// Layer: 4 MiB each way, the traffic of an int8 op over 1x64x256x256 in and out: the best any
// single dispatch of that size reaches (the dispatch cost is a large part of it), the ceiling
// the memory-bound ops of that size are compared with besides the peak. Head: the traffic of
// the wide-N GEMV 1 x 512 -> 9059 (its 4.6 MB of int8 weights), half of it each way: the best a
// dispatch moving that many bytes reaches, the GEMV's ceiling besides the peak.
enum class CopySize { Peak, Accu, Floor, Layer, Head, Nodes };

// The bytes the GEMV 1 x 512 -> 9059 reads: its weights, 9060 channels (4 a word) x 512.
constexpr uint64_t kHeadGemvBytes = uint64_t(9060) * 512;

class CopyPeakCase : public CaseInstance {
 public:
  explicit CopyPeakCase(CopySize size) : small_(size == CopySize::Accu), size_(size) {}
  // CopySize::Nodes: node_bytes / 2 copied by each of nodes(profile) dispatches.
  CopyPeakCase(uint64_t node_bytes, std::function<int64_t(const vk::DeviceProfile&)> nodes)
      : small_(false), size_(CopySize::Nodes), node_bytes_(node_bytes), nodes_(std::move(nodes)) {}

  void build(graph::ComputeGraph& g) override {
    uint64_t bytes = size_ == CopySize::Floor   ? 256
                     : size_ == CopySize::Layer ? (4u << 20)
                     : size_ == CopySize::Head  ? kHeadGemvBytes / 2
                     : size_ == CopySize::Nodes ? node_bytes_ / 2
                     : small_                   ? (1u << 20)
                     : g.profile().is_cpu()     ? (32u << 20)
                                                : (256u << 20);
    bytes = std::min<uint64_t>(bytes, g.profile().max_storage_buffer_range_bytes / 2);
    words_ = static_cast<int64_t>(bytes / 4);
    node_count_ = size_ == CopySize::Nodes ? std::max<int64_t>(nodes_(g.profile()), 1) : 1;
    for (int64_t i = 0; i < node_count_; ++i) add_copy_node(g);
    if (small_) {
      g.add_input(src_);
      g.add_output(dst_);
    }
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    if (!small_) return;  // bandwidth does not depend on the bytes copied
    data_.resize(static_cast<size_t>(words_));
    for (auto& v : data_) v = static_cast<int32_t>(rng());
    g.write_int32(src_, data_);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    compare_words(g.read_int32(dst_), data_, r);
    return r;
  }
  PerfWork work() const override { return {8.0 * double(words_) * double(node_count_), 0.0}; }

 private:
  // One dispatch copying words_ words from a buffer of its own into another (src_ and dst_:
  // the last node's).
  void add_copy_node(graph::ComputeGraph& g) {
    src_ = g.add_tensor({{words_}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked},
                        "src");
    dst_ = g.add_tensor({{words_}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked},
                        "dst");
    const uint64_t vec4s = static_cast<uint64_t>(words_ / 4);
    // Enough invocations to fill any GPU, each looping over a few 16-byte chunks.
    const uint64_t invocations = std::max<uint64_t>(std::min<uint64_t>(vec4s, 1u << 20), 1);
    graph::DispatchNode node;
    node.op = "bench_copy";
    node.kernel = shaders::Kernel::bench_copy;
    node.bindings = {dst_, src_};
    node.plan = vk::plan_linear(g.profile(), invocations, 256);
    CopyPush push{static_cast<uint32_t>(vec4s), static_cast<uint32_t>(node.plan.invocations())};
    node.push_constants = graph::push_constant_bytes(push);
    g.add_node(std::move(node));
  }

  bool small_;
  CopySize size_;
  uint64_t node_bytes_ = 0;
  std::function<int64_t(const vk::DeviceProfile&)> nodes_;
  int64_t words_ = 0, node_count_ = 1;
  graph::ValueRef src_ = -1, dst_ = -1;
  std::vector<int32_t> data_;
};

// Mirrors `Params` in shaders/bench_int8_dot.glsl.
struct DotPush {
  int32_t iterations;
};

int32_t dot_int8x4_ref(uint32_t a, uint32_t b) {
  int32_t sum = 0;
  for (int lane = 0; lane < 4; ++lane) {
    sum += static_cast<int8_t>(a >> (8 * lane)) * static_cast<int8_t>(b >> (8 * lane));
  }
  return sum;
}

// Peak: the run's ceiling; Accu: checked; Probe: the clock probe (PerfChecks.h), a quarter of
// the peak's invocations and an eighth of its iterations (~0.1 ms on an H100).
enum class DotSize { Peak, Accu, Probe };

class DotPeakCase : public CaseInstance {
 public:
  explicit DotPeakCase(DotSize size) : small_(size == DotSize::Accu), size_(size) {}

  void build(graph::ComputeGraph& g) override {
    if (small_) {
      invocations_ = 512;
      iterations_ = 7;
    } else if (size_ == DotSize::Probe) {
      invocations_ = 1u << 18;
      iterations_ = 32;
    } else if (g.profile().is_cpu()) {
      invocations_ = 1u << 14;
      iterations_ = 64;
    } else {
      invocations_ = 1u << 21;
      iterations_ = 256;
    }
    data_ref_ = g.add_tensor({{1024 + static_cast<int64_t>(invocations_)},
                              DType::Int32,
                              StorageType::Buffer,
                              MemoryLayout::WidthPacked},
                             "data");
    graph::DispatchNode node;
    node.op = "bench_int8_dot";
    node.kernel = shaders::variants::bench_int8_dot[g.profile().int8_dot_product ? 0 : 1];
    node.bindings = {data_ref_};
    node.plan = vk::plan_linear(g.profile(), invocations_);
    invocations_ = node.plan.invocations();  // every launched invocation runs the loop
    VKD_CHECK(invocations_ <= (1u << 22), ErrorCode::Internal, "dot peak dispatch too large");
    node.push_constants = graph::push_constant_bytes(DotPush{iterations_});
    g.add_node(std::move(node));
    g.add_input(data_ref_);
    g.add_output(data_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    data_.assign(1024 + invocations_, 0);
    for (int i = 0; i < 1024; ++i) data_[i] = static_cast<int32_t>(rng());
    g.write_int32(data_ref_, data_);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    // Replays the shader's loop with wrapping int32 arithmetic.
    const auto out = g.read_int32(data_ref_);
    std::vector<int32_t> expected(data_.begin(), data_.begin() + 1024);
    for (uint32_t id = 0; id < invocations_; ++id) {
      uint32_t b[4], acc[32];
      for (uint32_t i = 0; i < 4; ++i) b[i] = static_cast<uint32_t>(data_[(id * 7 + i) & 1023]);
      for (uint32_t i = 0; i < 32; ++i) acc[i] = static_cast<uint32_t>(data_[(id + i) & 1023]);
      for (int it = 0; it < iterations_; ++it) {
        for (int step = 0; step < 4; ++step) {
          for (int i = 0; i < 32; ++i) {
            acc[i] += static_cast<uint32_t>(dot_int8x4_ref(acc[i], b[i & 3]));
          }
        }
      }
      uint32_t sum = 0;
      for (uint32_t v : acc) sum += v;
      expected.push_back(static_cast<int32_t>(sum));
    }
    AccuResult r;
    compare_words(out, expected, r);
    return r;
  }
  PerfWork work() const override {
    // 128 OpSDot per iteration (4 steps x 32 chains), 8 ops (4 multiply-adds) each.
    return {0.0, 8.0 * 128.0 * double(iterations_) * double(invocations_)};
  }

 private:
  bool small_;
  DotSize size_;
  uint32_t invocations_ = 0;
  int32_t iterations_ = 0;
  graph::ValueRef data_ref_ = -1;
  std::vector<int32_t> data_;
};

// Mirrors `Params` in shaders/bench_int8_coopmat.glsl.
struct CoopMatPush {
  int32_t iterations;
};

// Where the fragments come from: SOURCE in shaders/bench_int8_coopmat.glsl (the variant index).
enum class FragmentSource { Registers = 0, Shared = 1, Staged = 2 };

class CoopMatPeakCase : public CaseInstance {
 public:
  CoopMatPeakCase(bool small, FragmentSource source) : small_(small), source_(source) {}

  void build(graph::ComputeGraph& g) override {
    const std::string missing = ops::linear_coopmat_unavailable(g.profile());
    VKD_CHECK(missing.empty(), ErrorCode::Unsupported, "the device lacks ", missing);
    workgroups_ = small_ ? 2 : 4096;
    iterations_ = small_ ? 3 : 2048;
    subgroups_ = workgroups_ * 256 / int64_t(g.profile().subgroup_size);
    data_ref_ = g.add_tensor(
        {{256 + 256 * subgroups_}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked},
        "data");
    graph::DispatchNode node;
    node.op = "bench_int8_coopmat";
    node.kernel = shaders::variants::bench_int8_coopmat[static_cast<int>(source_)];
    node.bindings = {data_ref_};
    node.plan.local_size = {256, 1, 1};
    node.plan.group_count = {static_cast<uint32_t>(workgroups_), 1, 1};
    node.push_constants = graph::push_constant_bytes(CoopMatPush{iterations_});
    g.add_node(std::move(node));
    g.add_input(data_ref_);
    g.add_output(data_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    data_.assign(static_cast<size_t>(256 + 256 * subgroups_), 0);
    for (int i = 0; i < 256; ++i) data_[i] = static_cast<int32_t>(rng());
    g.write_int32(data_ref_, data_);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    // A row-major 16 x 32 int8 from word 0, B column-major 32 x 16 from word 128; every
    // subgroup stores 8 * iterations * (A * B) with wrapping int32 sums (8 products per iteration
    // in every SOURCE: 8 chains, or FM x FN = 4 x 2 fragments of copies of A and B).
    auto byte = [&](int word, int lane) { return static_cast<int8_t>(data_[word] >> (8 * lane)); };
    std::vector<int32_t> expected(data_.begin(), data_.begin() + 256);
    std::vector<int32_t> c(256);
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 16; ++n) {
        int32_t sum = 0;
        for (int k = 0; k < 32; ++k)
          sum += byte(m * 8 + k / 4, k % 4) * byte(128 + n * 8 + k / 4, k % 4);
        c[m * 16 + n] = static_cast<int32_t>(static_cast<uint32_t>(sum) * 8u *
                                             static_cast<uint32_t>(iterations_));
      }
    }
    for (int64_t s = 0; s < subgroups_; ++s) expected.insert(expected.end(), c.begin(), c.end());
    AccuResult r;
    compare_words(g.read_int32(data_ref_), expected, r);
    return r;
  }
  PerfWork work() const override {
    // 8 chains x 16 x 16 x 32 multiply-adds per iteration and subgroup.
    return {0.0, 2.0 * 8.0 * 16.0 * 16.0 * 32.0 * double(iterations_) * double(subgroups_)};
  }

 private:
  bool small_;
  FragmentSource source_;
  int64_t workgroups_ = 0, subgroups_ = 0;
  int32_t iterations_ = 0;
  graph::ValueRef data_ref_ = -1;
  std::vector<int32_t> data_;
};

}  // namespace

std::unique_ptr<CaseInstance> make_clock_probe() {
  return std::make_unique<DotPeakCase>(DotSize::Probe);
}

std::unique_ptr<CaseInstance> make_copy_case(
    uint64_t node_bytes, std::function<int64_t(const vk::DeviceProfile&)> nodes) {
  return std::make_unique<CopyPeakCase>(node_bytes, std::move(nodes));
}

void register_peak_cases(Registry& registry) {
  registry.add({"peak/copy", "bench_copy", "", "buffer -> buffer", false, true, false, Metric::GBps,
                [] { return std::make_unique<CopyPeakCase>(CopySize::Peak); }});
  registry.add({"floor/dispatch", "bench_copy", "256 B", "buffer -> buffer", false, true, false,
                Metric::GBps, [] { return std::make_unique<CopyPeakCase>(CopySize::Floor); }});
  registry.add({"ceiling/copy_4MiB", "bench_copy", "4 MiB", "buffer -> buffer", false, true, false,
                Metric::GBps, [] { return std::make_unique<CopyPeakCase>(CopySize::Layer); }});
  registry.add({"ceiling/copy_gemv_head", "bench_copy", "2.3 MB", "buffer -> buffer", false, true,
                false, Metric::GBps,
                [] { return std::make_unique<CopyPeakCase>(CopySize::Head); }});
  registry.add({"peak/int8_dot", "bench_int8_dot", "", "registers", false, true, false,
                Metric::GOPs, [] { return std::make_unique<DotPeakCase>(DotSize::Peak); }});
  registry.add(
      {"peak/int8_coopmat", "bench_int8_coopmat", "", "registers", false, true, false, Metric::GOPs,
       [] { return std::make_unique<CoopMatPeakCase>(false, FragmentSource::Registers); }});
  // Not peaks: what the linear cooperative-matrix kernel's staging leaves of the one above.
  for (const auto& [name, source] :
       {std::pair{"shared", FragmentSource::Shared}, std::pair{"staged", FragmentSource::Staged}}) {
    registry.add({std::string("coopmat_ceiling/") + name, "bench_int8_coopmat", "", name, false,
                  true, false, Metric::GOPs,
                  [source = source] { return std::make_unique<CoopMatPeakCase>(false, source); },
                  ops::linear_coopmat_unavailable, "peak/int8_coopmat"});
  }
  registry.add({"bench_copy/accu", "bench_copy", "262144", "buffer -> buffer", true, false, false,
                Metric::GBps, [] { return std::make_unique<CopyPeakCase>(CopySize::Accu); }});
  registry.add({"int8_dot/accu", "bench_int8_dot", "512x7", "registers", true, false, true,
                Metric::GOPs, [] { return std::make_unique<DotPeakCase>(DotSize::Accu); }});
  for (const auto& [name, source] :
       {std::pair{"registers", FragmentSource::Registers},
        std::pair{"shared", FragmentSource::Shared}, std::pair{"staged", FragmentSource::Staged}}) {
    registry.add({std::string("int8_coopmat/accu ") + name, "bench_int8_coopmat", "2x256x3", name,
                  true, false, false, Metric::GOPs,
                  [source = source] { return std::make_unique<CoopMatPeakCase>(true, source); },
                  ops::linear_coopmat_unavailable});
  }
}

}  // namespace vkd::custom_ops
