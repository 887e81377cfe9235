// ACCU and PERF cases for q8ta_quantize and q8ta_dequantize.
#include <cmath>

#include "runtime/ops/QuantizeDequantize.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/QuantReference.h"

namespace vkd::custom_ops {
namespace {

using testing::RefShape;

// Quantization parameters rotated over the cases: zero points at both ends of the range, in
// the middle, and a narrow (int4-like) range.
const ops::QuantParams kParams[] = {
    {0.05f, 0, -128, 127}, {0.013f, -128, -128, 127}, {0.2f, 127, -128, 127}, {0.1f, -3, -8, 7}};

RefShape ref_shape(const TensorSpec& spec) {
  const Dims4 d = spec.dims4();
  return {d.n, d.c, d.h, d.w};
}

// One pass over the float32 tensor plus one over its int8x4 words.
PerfWork float_and_int8_traffic(const std::vector<int64_t>& sizes, MemoryLayout layout) {
  const TensorSpec s{sizes, DType::Int8x4, StorageType::Buffer, layout};
  return {4.0 * s.numel() + 4.0 * testing::ref_word_count(layout, ref_shape(s)), 0.0};
}

class QuantizeCase : public CaseInstance {
 public:
  QuantizeCase(std::vector<int64_t> sizes, FloatPlacement in, MemoryLayout out, ops::QuantParams q)
      : sizes_(std::move(sizes)), in_(in), out_layout_(out), q_(q) {}

  void build(graph::ComputeGraph& g) override {
    in_ref_ = g.add_tensor({sizes_, DType::Float32, in_.storage, in_.layout}, "x");
    out_ref_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, out_layout_}, "xq");
    ops::add_q8ta_quantize_node(g, in_ref_, out_ref_, q_);
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    x_ = random_activations(g.spec(in_ref_).numel(), q_.scale, q_.zero_point, q_.quant_min,
                            q_.quant_max, rng);
    g.write_float(in_ref_, x_);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const auto expected_q =
        testing::reference_quantize(x_, q_.scale, q_.zero_point, q_.quant_min, q_.quant_max);
    const auto expected =
        testing::ref_pack(out_layout_, ref_shape(g.spec(out_ref_)), expected_q, q_.zero_point);
    AccuResult r;
    compare_words(g.read_words(out_ref_), expected, r);
    return r;
  }
  PerfWork work() const override { return float_and_int8_traffic(sizes_, out_layout_); }

 private:
  std::vector<int64_t> sizes_;
  FloatPlacement in_;
  MemoryLayout out_layout_;
  ops::QuantParams q_;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
  std::vector<float> x_;
};

class DequantizeCase : public CaseInstance {
 public:
  DequantizeCase(std::vector<int64_t> sizes, MemoryLayout in, FloatPlacement out,
                 ops::QuantParams q)
      : sizes_(std::move(sizes)), in_layout_(in), out_(out), q_(q) {}

  void build(graph::ComputeGraph& g) override {
    in_ref_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, in_layout_}, "xq");
    out_ref_ = g.add_tensor({sizes_, DType::Float32, out_.storage, out_.layout}, "x");
    ops::add_q8ta_dequantize_node(g, in_ref_, out_ref_, q_);
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    std::uniform_int_distribution<int> value(q_.quant_min, q_.quant_max);
    q_values_.resize(static_cast<size_t>(g.spec(in_ref_).numel()));
    for (auto& v : q_values_) v = static_cast<int8_t>(value(rng));
    // Words built by the test's own packing reference, padding = zero point.
    g.write_words(in_ref_, testing::ref_pack(in_layout_, ref_shape(g.spec(in_ref_)), q_values_,
                                             q_.zero_point));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    compare_floats(g.read_float(out_ref_),
                   testing::reference_dequantize(q_values_, q_.scale, q_.zero_point), 0.0, r);
    return r;
  }
  PerfWork work() const override { return float_and_int8_traffic(sizes_, in_layout_); }

 private:
  std::vector<int64_t> sizes_;
  MemoryLayout in_layout_;
  FloatPlacement out_;
  ops::QuantParams q_;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
  std::vector<int8_t> q_values_;
};

const std::vector<std::vector<int64_t>> kPerfShapes = {
    {1, 64, 1024, 1024},  // 256 MiB of float32: far larger than a 50 MB L2
    {1, 64, 256, 256},
    {1, 96, 128, 72},
};

}  // namespace

void register_quantize_cases(Registry& registry) {
  size_t index = 0;
  for (const auto& sizes : awkward_shapes()) {
    for (const auto& fp : kAllFloatPlacements) {
      for (MemoryLayout layout : kAllPackedInt8Layouts) {
        const ops::QuantParams q = kParams[index++ % std::size(kParams)];
        const std::string shape = shape_string(sizes);
        const std::string lname(to_string(layout));
        registry.add({"q8ta_quantize/" + placement_name(fp) + "->" + lname + "/" + shape,
                      "q8ta_quantize", shape, placement_name(fp) + " -> " + lname, true, false,
                      false, Metric::GBps,
                      [=] { return std::make_unique<QuantizeCase>(sizes, fp, layout, q); }});
        registry.add({"q8ta_dequantize/" + lname + "->" + placement_name(fp) + "/" + shape,
                      "q8ta_dequantize", shape, lname + " -> " + placement_name(fp), true, false,
                      false, Metric::GBps,
                      [=] { return std::make_unique<DequantizeCase>(sizes, layout, fp, q); }});
      }
    }
  }
  const ops::QuantParams q = kParams[0];
  for (const auto& sizes : kPerfShapes) {
    const std::string shape = shape_string(sizes);
    for (const FloatPlacement fp : {kAllFloatPlacements[0], kAllFloatPlacements[5]}) {
      for (MemoryLayout layout : kAllPackedInt8Layouts) {
        const std::string lname(to_string(layout));
        registry.add({"perf/q8ta_quantize/" + placement_name(fp) + "->" + lname + "/" + shape,
                      "q8ta_quantize", shape, placement_name(fp) + " -> " + lname, false, true,
                      false, Metric::GBps,
                      [=] { return std::make_unique<QuantizeCase>(sizes, fp, layout, q); }});
        registry.add({"perf/q8ta_dequantize/" + lname + "->" + placement_name(fp) + "/" + shape,
                      "q8ta_dequantize", shape, lname + " -> " + placement_name(fp), false, true,
                      false, Metric::GBps,
                      [=] { return std::make_unique<DequantizeCase>(sizes, layout, fp, q); }});
      }
    }
  }
}

}  // namespace vkd::custom_ops
