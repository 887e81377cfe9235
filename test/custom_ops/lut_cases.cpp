// ACCU and PERF cases for q8ta_lut: every smooth activation with model-like quantizations (the
// fixed output qparams PyTorch gives hardsigmoid / sigmoid / tanh included, and a narrowed
// output range), every packed layout, awkward shapes (odd channel counts, partial blocks in
// every dim), inputs covering all 256 int8 values. The table is computed by the test's own
// reference (test/reference/LutReference.h) and the output, padding included, compared word
// for word with that table applied on the CPU.
#include "runtime/ops/Lut.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/LutReference.h"

namespace vkd::custom_ops {
namespace {

using testing::RefAct;
using testing::RefActivation;
using testing::RefLutQuant;
using testing::RefShape;

// An activation with the quantization of its input and output.
struct LutSetup {
  RefActivation f;
  RefLutQuant in, out;
};
const LutSetup kSetups[] = {
    {{RefAct::Hardswish, "hardswish"}, {0.0322f, -4}, {0.0186f, -108}},
    {{RefAct::Hardsigmoid, "hardsigmoid"}, {0.0070f, 3}, {1.0f / 256, -128}},
    {{RefAct::Sigmoid, "sigmoid"}, {0.05f, 0}, {1.0f / 256, -128}},
    {{RefAct::Tanh, "tanh"}, {0.031f, 5}, {2.0f / 256, 0}},
    {{RefAct::Silu, "silu"}, {0.06f, -10}, {0.03f, -100}},
    {{RefAct::GeluErf, "gelu"}, {0.05f, 7}, {0.04f, -90}},
    {{RefAct::GeluTanh, "gelu_tanh"}, {0.05f, 7}, {0.04f, -90}},
    {{RefAct::Elu, "elu", 0.5, 1.25, 0.75}, {0.04f, 20}, {0.03f, 10}},
    {{RefAct::LeakyRelu, "leaky_relu", 0.2}, {0.05f, -3}, {0.04f, 2}},
    // An output range narrower than int8 (the table clamps to it; padding still zp_out).
    {{RefAct::Hardswish, "hardswish_range"}, {0.05f, 127}, {0.02f, -60, -100, 90}},
};

ops::QuantParams quant(const RefLutQuant& q) {
  return {q.scale, q.zero_point, q.quant_min, q.quant_max};
}

class LutCase : public CaseInstance {
 public:
  // `every_value`: element i holds int8 value i % 256 - 128 (every table entry read).
  LutCase(std::vector<int64_t> sizes, MemoryLayout layout, LutSetup s, bool every_value)
      : sizes_(std::move(sizes)), layout_(layout), s_(s), every_value_(every_value) {}

  void build(graph::ComputeGraph& g) override {
    in_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "x");
    out_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "y");
    const ops::LutParams p{quant(s_.in), quant(s_.out),
                           testing::ref_lut_table(s_.f, s_.in, s_.out)};
    ops::add_q8ta_lut_node(g, in_, out_, p);
    g.add_input(in_);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    x_ = random_int8(g.spec(in_).numel(), -128, 127, rng);
    if (every_value_) {
      for (size_t i = 0; i < x_.size(); ++i) x_[i] = static_cast<int8_t>(int(i % 256) - 128);
    }
    g.write_words(in_, testing::ref_pack(layout_, shape(), x_, s_.in.zero_point));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const auto table = testing::ref_lut_table(s_.f, s_.in, s_.out);
    AccuResult r;
    compare_words(
        g.read_words(out_),
        testing::ref_pack(layout_, shape(), testing::ref_apply_table(table, x_), s_.out.zero_point),
        r);
    return r;
  }
  PerfWork work() const override {
    return {8.0 * testing::ref_word_count(layout_, shape()), 0.0};  // each word read and written
  }

 private:
  RefShape shape() const { return testing::ref_shape_of(sizes_); }

  std::vector<int64_t> sizes_;
  MemoryLayout layout_;
  LutSetup s_;
  bool every_value_;
  graph::ValueRef in_ = -1, out_ = -1;
  std::vector<int8_t> x_;
};

void add_lut_case(Registry& registry, const std::string& prefix, const std::vector<int64_t>& sizes,
                  MemoryLayout layout, const LutSetup& s, bool every_value, bool accu) {
  const std::string shape = shape_string(sizes), lname(to_string(layout));
  const std::string what = std::string(s.f.name) + (every_value ? "/every_value" : "");
  registry.add({prefix + "q8ta_lut/" + lname + "/" + what + "/" + shape, "q8ta_lut", shape,
                lname + " " + s.f.name, accu, !accu, false, Metric::GBps,
                [=] { return std::make_unique<LutCase>(sizes, layout, s, every_value); }});
}

}  // namespace

void register_lut_cases(Registry& registry) {
  size_t index = 0;
  for (MemoryLayout layout : kAllPackedInt8Layouts) {
    for (const auto& sizes : awkward_shapes()) {
      add_lut_case(registry, "", sizes, layout, kSetups[index++ % std::size(kSetups)], false, true);
    }
    // Every activation on one odd shape with all 256 input values (3 x 256 elements).
    for (const LutSetup& s : kSetups) {
      add_lut_case(registry, "", {1, 3, 16, 16}, layout, s, true, true);
    }
    add_lut_case(registry, "perf/", {1, 64, 256, 256}, layout, kSetups[0], false, false);
  }
  add_lut_case(registry, "perf/", {1, 256, 56, 56}, MemoryLayout::PackedInt8_4W4C, kSetups[2],
               false, false);
  // 64 MiB each way: the dispatch's fixed cost (~4 us on the H100) amortized.
  add_lut_case(registry, "perf/", {1, 64, 1024, 1024}, MemoryLayout::PackedInt8_4W4C, kSetups[0],
               false, false);
}

}  // namespace vkd::custom_ops
