// ACCU and PERF cases for q8ta_layer_norm (int8 in and out), q8ta_layer_norm_dq (int8 in,
// float32 out) and layer_norm (float32 in and out): every packed int8 layout, every float buffer
// layout, awkward shapes (rows of 1 to 33 elements, odd channel counts, rank 1 to 4), rows of 10
// (no multiple of 4), 384 (MiniLM), 768 and 1000 (more chunks than a workgroup has
// invocations), eps from 1e-12 to 0.1.
//
// Checked against a double-precision reference (test/reference/LayerNormReference.h) with exact
// row statistics. The kernel computes the rest in float32 with the device's inversesqrt, so each
// float output must satisfy
//   |y - y_ref| <= kRelTol * (|normalized * weight| + |bias|) + kAbsTol
// and each int8 output must lie between the quantizations of y_ref - tol and y_ref + tol (a
// result next to a rounding boundary may round either way; nothing else is accepted). The int8
// output's padding lanes must hold its zero point.
#include <algorithm>
#include <cmath>
#include <optional>

#include "runtime/ops/LayerNorm.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/reference/LayerNormReference.h"
#include "test/reference/LayoutReference.h"

namespace vkd::custom_ops {
namespace {

using testing::RefShape;

constexpr double kRelTol = 1e-5;
constexpr double kAbsTol = 1e-6;

// The input's quantization rotated over the cases, and the eps.
const ops::QuantParams kInputs[] = {{0.05f, 3}, {0.02f, -20}, {0.1f, 127}};
const double kEps[] = {1e-5, 1e-12, 0.1};
// The int8 output: y mostly within +-4 (|weight| <= 1.5, |bias| <= 0.5).
const ops::QuantParams kOutput{0.035f, -3};

// clamp(nearbyint(y * inv_s) + zp, -128, 127): the kernel's requantization, in double.
int quantize(double y, const ops::QuantParams& q) {
  const double inv = static_cast<float>(1.0 / static_cast<double>(q.scale));
  const double t = std::nearbyint(y * inv) + q.zero_point;
  return static_cast<int>(std::min(std::max(t, -128.0), 127.0));
}

// What a case reads and writes: an int8 input in a packed layout or a float32 buffer; an int8
// output in the input's layout or a float32 buffer.
struct LayerNormForm {
  MemoryLayout in_layout;                 // a packed int8 layout, or a float one
  std::optional<MemoryLayout> out_float;  // none: int8 output
  bool float_input() const { return !is_packed_int8(in_layout); }
};

class LayerNormCase : public CaseInstance {
 public:
  LayerNormCase(std::vector<int64_t> sizes, LayerNormForm form, ops::QuantParams in_q, double eps)
      : sizes_(std::move(sizes)), form_(form), in_q_(in_q), eps_(eps) {}

  void build(graph::ComputeGraph& g) override {
    const DType in_dtype = form_.float_input() ? DType::Float32 : DType::Int8x4;
    in_ = g.add_tensor({sizes_, in_dtype, StorageType::Buffer, form_.in_layout}, "x");
    const TensorSpec out =
        form_.out_float ? TensorSpec{sizes_, DType::Float32, StorageType::Buffer, *form_.out_float}
                        : TensorSpec{sizes_, DType::Int8x4, StorageType::Buffer, form_.in_layout};
    out_ = g.add_tensor(out, "y");
    // weight and bias are constants of the node: drawn here, at build time.
    std::mt19937 rng(static_cast<uint32_t>(sizes_.back() * 7 + 1));
    std::uniform_real_distribution<float> w(0.5f, 1.5f), b(-0.5f, 0.5f);
    const int64_t W = sizes_.back();
    ops::LayerNormParams p;
    for (int64_t i = 0; i < W; ++i) {
      p.weight.push_back(i % 5 == 3 ? -w(rng) : w(rng));
      p.bias.push_back(b(rng));
    }
    p.eps = eps_;
    if (!form_.float_input()) p.input = in_q_;
    if (!form_.out_float) p.output = kOutput;
    weight_ = p.weight;
    bias_ = p.bias;
    ops::add_q8ta_layer_norm_node(g, in_, out_, p);
    g.add_input(in_);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    const int64_t count = g.spec(in_).numel();
    if (form_.float_input()) {
      std::uniform_real_distribution<float> d(-5.0f, 7.0f);  // mean 1, not centred
      xf_.resize(static_cast<size_t>(count));
      for (float& v : xf_) v = d(rng);
      g.write_float(in_, xf_);
      return;
    }
    q_ = random_int8(count, -128, 127, rng);
    g.write_words(in_, testing::ref_pack(form_.in_layout, testing::ref_shape_of(sizes_), q_,
                                         in_q_.zero_point));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const RefShape s = testing::ref_shape_of(sizes_);
    const testing::LayerNormRef want =
        form_.float_input()
            ? testing::ref_layer_norm_rows(std::vector<double>(xf_.begin(), xf_.end()), s.w,
                                           weight_, bias_, eps_)
            : testing::ref_layer_norm_int8_rows(q_, s.w, in_q_.scale, in_q_.zero_point, weight_,
                                                bias_, eps_);
    const auto tolerance = [&](size_t i) {
      return kRelTol * (want.lin[i] + std::fabs(bias_[i % static_cast<size_t>(s.w)])) + kAbsTol;
    };
    AccuResult r;
    if (form_.out_float) {
      const std::vector<float> got = g.read_float(out_);
      for (size_t i = 0; i < want.y.size(); ++i) {
        const double err = std::fabs(static_cast<double>(got[i]) - want.y[i]);
        record(r, err, !(err <= tolerance(i)));
      }
      return r;
    }
    const std::vector<int8_t> got = g.read_int8(out_);
    for (size_t i = 0; i < want.y.size(); ++i) {
      const int lo = quantize(want.y[i] - tolerance(i), kOutput);
      const int hi = quantize(want.y[i] + tolerance(i), kOutput);
      record(r, std::abs(got[i] - quantize(want.y[i], kOutput)), got[i] < lo || got[i] > hi);
    }
    // The words: the values just checked where they belong, the zero point in every padding lane.
    compare_words(g.read_words(out_),
                  testing::ref_pack(form_.in_layout, s, got, kOutput.zero_point), r);
    return r;
  }
  PerfWork work() const override {
    const RefShape s = testing::ref_shape_of(sizes_);
    const double elements = static_cast<double>(s.n * s.c * s.h * s.w);
    const double int8_bytes = 4.0 * testing::ref_word_count(form_.in_layout, s);
    const double in_bytes = form_.float_input() ? 4.0 * elements : int8_bytes;
    const double out_bytes = form_.out_float ? 4.0 * elements : int8_bytes;
    return {in_bytes + out_bytes + 8.0 * static_cast<double>(s.w), 0.0};
  }

 private:
  static void record(AccuResult& r, double err, bool bad) {
    r.max_abs_error = std::max(r.max_abs_error, std::isnan(err) ? INFINITY : err);
    r.mismatches += bad;
    ++r.checked;
  }

  std::vector<int64_t> sizes_;
  LayerNormForm form_;
  ops::QuantParams in_q_;
  double eps_;
  graph::ValueRef in_ = -1, out_ = -1;
  std::vector<int8_t> q_;
  std::vector<float> xf_, weight_, bias_;
};

// `fallback`: ACCU runs it again without subgroup arithmetic (the tree reduction variant).
void add_layer_norm_case(Registry& registry, const std::string& prefix,
                         const std::vector<int64_t>& sizes, LayerNormForm form,
                         ops::QuantParams in_q, double eps, bool fallback = false) {
  const std::string shape = shape_string(sizes);
  const std::string in = form.float_input() ? "float_" + std::string(to_string(form.in_layout))
                                            : std::string(to_string(form.in_layout));
  const std::string out =
      form.out_float ? "float_" + std::string(to_string(*form.out_float)) : "int8";
  const std::string op = form.float_input()
                             ? "layer_norm"
                             : (form.out_float ? "q8ta_layer_norm_dq" : "q8ta_layer_norm");
  char eps_text[32];
  std::snprintf(eps_text, sizeof(eps_text), "%g", eps);
  registry.add({prefix + "q8ta_layer_norm/" + in + "/" + out + "/" + shape + "/eps" + eps_text, op,
                shape, in + " -> " + out, prefix.empty(), !prefix.empty(), fallback, Metric::GBps,
                [=] { return std::make_unique<LayerNormCase>(sizes, form, in_q, eps); }});
}

}  // namespace

void register_layer_norm_cases(Registry& registry) {
  const MemoryLayout float_layouts[] = {MemoryLayout::WidthPacked, MemoryLayout::HeightPacked,
                                        MemoryLayout::ChannelsPacked};
  std::vector<std::vector<int64_t>> shapes = awkward_shapes();
  for (std::vector<int64_t> s :
       {std::vector<int64_t>{1, 7, 10}, {1, 16, 384}, {2, 5, 768}, {3, 32}, {1, 3, 5, 1000}}) {
    shapes.push_back(std::move(s));
  }
  size_t index = 0;
  for (const auto& sizes : shapes) {
    for (MemoryLayout layout : kAllPackedInt8Layouts) {
      const ops::QuantParams in_q = kInputs[index % std::size(kInputs)];
      const double eps = kEps[index % std::size(kEps)];
      // Each shape's 4H4W cases also without subgroup arithmetic.
      const bool fallback = layout == MemoryLayout::PackedInt8_4H4W;
      add_layer_norm_case(registry, "", sizes, {layout, std::nullopt}, in_q, eps, fallback);
      add_layer_norm_case(registry, "", sizes, {layout, float_layouts[index % 3]}, in_q, eps,
                          fallback);
      ++index;
    }
    for (MemoryLayout in_layout : float_layouts) {
      add_layer_norm_case(registry, "", sizes, {in_layout, float_layouts[index % 3]}, kInputs[0],
                          kEps[index % std::size(kEps)], in_layout == MemoryLayout::WidthPacked);
      ++index;
    }
  }
  // MiniLM's and BERT-base's activations at sequence length 128 and 512; 16 MiB of int8 (the
  // kernel's own rate, past the launch cost).
  for (const std::vector<int64_t>& sizes :
       {std::vector<int64_t>{1, 128, 384}, std::vector<int64_t>{1, 512, 768},
        std::vector<int64_t>{1, 16384, 1024}}) {
    const LayerNormForm forms[] = {{MemoryLayout::PackedInt8_4H4W, std::nullopt},
                                   {MemoryLayout::PackedInt8_4W4C, std::nullopt},
                                   {MemoryLayout::PackedInt8_4H4W, MemoryLayout::WidthPacked},
                                   {MemoryLayout::WidthPacked, MemoryLayout::WidthPacked}};
    for (const LayerNormForm& form : forms) {
      add_layer_norm_case(registry, "perf/", sizes, form, kInputs[0], 1e-12);
    }
  }
}

}  // namespace vkd::custom_ops
