// ACCU and PERF cases for q8ta_softmax (int8 output) and q8ta_softmax_dq (float32 output):
// softmax and log_softmax over the last dim, every packed int8 input layout, every float buffer
// layout for the float output, awkward shapes (rows of 1 to 33 elements, odd channel counts,
// rank 1 to 4) and long rows (more chunks than the workgroup has invocations).
//
// Checked against a double-precision reference (test/reference/SoftmaxReference.h). The kernel
// computes in float32 with the device's exp and log, so each float output must satisfy
//   |y - y_ref| <= kRelTol * |y_ref| + kAbsTol
// and each int8 output must lie between the quantizations of y_ref - tol and y_ref + tol (a
// result next to a rounding boundary may round either way; nothing else is accepted). The int8
// output's padding lanes must hold its zero point.
#include <algorithm>
#include <cmath>
#include <optional>

#include "runtime/ops/Softmax.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/SoftmaxReference.h"

namespace vkd::custom_ops {
namespace {

using testing::RefShape;

constexpr double kRelTol = 1e-5;
constexpr double kAbsTol = 1e-6;

double tolerance(double y_ref) { return kRelTol * std::fabs(y_ref) + kAbsTol; }

// The input's quantization rotated over the cases: d * s up to 25.5 (exp down to 1e-11), and a
// finer one.
const ops::QuantParams kInputs[] = {{0.1f, 3}, {0.02f, -20}, {0.05f, 127}};

// The int8 output's quantization: softmax's fixed [0, 1) range (PyTorch's), log_softmax's
// values <= 0.
ops::QuantParams output_quant(bool log) {
  return log ? ops::QuantParams{0.08f, 127} : ops::QuantParams{1.0f / 256, -128};
}

// clamp(nearbyint(y * inv_s) + zp, -128, 127): the kernel's requantization, in double.
int quantize(double y, const ops::QuantParams& q) {
  const double inv = static_cast<float>(1.0 / static_cast<double>(q.scale));
  const double t = std::nearbyint(y * inv) + q.zero_point;
  return static_cast<int>(std::min(std::max(t, -128.0), 127.0));
}

class SoftmaxCase : public CaseInstance {
 public:
  // `float_layout`: the float output's buffer layout; none: int8 output in `layout`.
  SoftmaxCase(std::vector<int64_t> sizes, MemoryLayout layout,
              std::optional<MemoryLayout> float_layout, bool log, ops::QuantParams in_q)
      : sizes_(std::move(sizes)),
        layout_(layout),
        float_layout_(float_layout),
        log_(log),
        in_q_(in_q) {}

  void build(graph::ComputeGraph& g) override {
    in_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "x");
    const TensorSpec out =
        float_layout_ ? TensorSpec{sizes_, DType::Float32, StorageType::Buffer, *float_layout_}
                      : TensorSpec{sizes_, DType::Int8x4, StorageType::Buffer, layout_};
    out_ = g.add_tensor(out, "y");
    ops::SoftmaxParams p{in_q_, log_, std::nullopt};
    if (!float_layout_) p.output = output_quant(log_);
    ops::add_q8ta_softmax_node(g, in_, out_, p);
    g.add_input(in_);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    x_ = random_int8(g.spec(in_).numel(), -128, 127, rng);
    g.write_words(in_,
                  testing::ref_pack(layout_, testing::ref_shape_of(sizes_), x_, in_q_.zero_point));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const RefShape s = testing::ref_shape_of(sizes_);
    const std::vector<double> want = testing::ref_softmax_rows(x_, s, in_q_.scale, log_);
    AccuResult r;
    if (float_layout_) {
      const std::vector<float> got = g.read_float(out_);
      for (size_t i = 0; i < want.size(); ++i) {
        const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
        record(r, err, !(err <= tolerance(want[i])));
      }
      return r;
    }
    const ops::QuantParams q = output_quant(log_);
    const std::vector<int8_t> got = g.read_int8(out_);
    for (size_t i = 0; i < want.size(); ++i) {
      const int lo = quantize(want[i] - tolerance(want[i]), q);
      const int hi = quantize(want[i] + tolerance(want[i]), q);
      record(r, std::abs(got[i] - quantize(want[i], q)), got[i] < lo || got[i] > hi);
    }
    // The words: the values just checked where they belong, the zero point in every padding lane.
    compare_words(g.read_words(out_), testing::ref_pack(layout_, s, got, q.zero_point), r);
    return r;
  }
  PerfWork work() const override {
    const RefShape s = testing::ref_shape_of(sizes_);
    const double in_bytes = 4.0 * testing::ref_word_count(layout_, s);
    return {in_bytes + (float_layout_ ? 4.0 * s.n * s.c * s.h * s.w : in_bytes), 0.0};
  }

 private:
  std::vector<int64_t> sizes_;
  MemoryLayout layout_;
  std::optional<MemoryLayout> float_layout_;
  bool log_;
  ops::QuantParams in_q_;
  graph::ValueRef in_ = -1, out_ = -1;
  std::vector<int8_t> x_;
};

void add_softmax_case(Registry& registry, const std::string& prefix,
                      const std::vector<int64_t>& sizes, MemoryLayout layout,
                      std::optional<MemoryLayout> float_layout, bool log, ops::QuantParams in_q) {
  const std::string shape = shape_string(sizes), lname(to_string(layout));
  const std::string out = float_layout ? "float_" + std::string(to_string(*float_layout)) : "int8";
  const std::string op = log ? "log_softmax" : "softmax";
  registry.add(
      {prefix + "q8ta_softmax/" + op + "/" + lname + "/" + out + "/" + shape,
       float_layout ? "q8ta_softmax_dq" : "q8ta_softmax", shape, lname + " -> " + out + " " + op,
       prefix.empty(), !prefix.empty(), false, Metric::GBps,
       [=] { return std::make_unique<SoftmaxCase>(sizes, layout, float_layout, log, in_q); }});
}

}  // namespace

void register_softmax_cases(Registry& registry) {
  const MemoryLayout float_layouts[] = {MemoryLayout::WidthPacked, MemoryLayout::HeightPacked,
                                        MemoryLayout::ChannelsPacked};
  std::vector<std::vector<int64_t>> shapes = awkward_shapes();
  shapes.push_back({2, 1000});  // a classifier's logits: rows longer than 4 x 64 chunks
  shapes.push_back({1, 3, 5, 300});
  size_t index = 0;
  for (MemoryLayout layout : kAllPackedInt8Layouts) {
    for (const auto& sizes : shapes) {
      for (bool log : {false, true}) {
        const ops::QuantParams in_q = kInputs[index % std::size(kInputs)];
        add_softmax_case(registry, "", sizes, layout, float_layouts[index % 3], log, in_q);
        add_softmax_case(registry, "", sizes, layout, std::nullopt, log, in_q);
        ++index;
      }
    }
  }
  for (MemoryLayout layout : {MemoryLayout::PackedInt8_4H4W, MemoryLayout::PackedInt8_4W4C}) {
    add_softmax_case(registry, "perf/", {1, 32, 256, 256}, layout, MemoryLayout::WidthPacked, false,
                     kInputs[0]);
    add_softmax_case(registry, "perf/", {1, 32, 256, 256}, layout, std::nullopt, false, kInputs[0]);
  }
  add_softmax_case(registry, "perf/", {64, 1000}, MemoryLayout::PackedInt8_4H4W,
                   MemoryLayout::WidthPacked, false, kInputs[0]);
}

}  // namespace vkd::custom_ops
