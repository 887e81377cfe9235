// ACCU and PERF cases for q8ta_layer_norm (int8 in and out), q8ta_layer_norm_dq (int8 in,
// float32 out), layer_norm (float32 in and out), layer_norm_q (float32 in, int8 out) and
// layer_norm_dual (float32 in, float32 and int8 out): every packed int8 layout, every float buffer
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
//
// layer_norm_q and layer_norm_dual must also write exactly what their unfused form writes: the
// ACCU graph runs layer_norm then q8ta_quantize on the same input beside them, and their int8
// output must equal, bit for bit, both that q8ta_quantize's words and the host's float32
// quantization of that layer_norm's output (quantize_f32), and layer_norm_dual's float32 output
// must equal that layer_norm's bit for bit. PERF times layer_norm_dual beside that unfused form
// writing the same two outputs (case names with "unfused_").
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include "runtime/ops/LayerNorm.h"
#include "runtime/ops/QuantizeDequantize.h"
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

// q8ta_quantize of a float32 value (full int8 range): the product y * float32(1 / s) rounded to
// float32, then rounded half to even, plus the zero point, clamped.
int quantize_f32(float y, const ops::QuantParams& q) {
  const float inv = static_cast<float>(1.0 / static_cast<double>(q.scale));
  const float t = y * inv;
  const double r = std::nearbyint(static_cast<double>(t)) + q.zero_point;
  return static_cast<int>(std::min(std::max(r, -128.0), 127.0));
}

// What a case reads and writes: an int8 input in a packed layout or a float32 buffer; a float32
// output in a float buffer and / or an int8 output (an int8 input's: in its layout).
struct LayerNormForm {
  MemoryLayout in_layout;                 // a packed int8 layout, or a float one
  std::optional<MemoryLayout> out_float;  // the float32 output's layout, if any
  std::optional<MemoryLayout> out_int8;   // the int8 output's layout, if any
  bool float_input() const { return !is_packed_int8(in_layout); }
  std::string op() const {
    if (!float_input()) return out_float ? "q8ta_layer_norm_dq" : "q8ta_layer_norm";
    if (!out_int8) return "layer_norm";
    return out_float ? "layer_norm_dual" : "layer_norm_q";
  }
};

// An int8 output in `layout`, the input's float32 one: what the unfused form writes too.
LayerNormForm int8_form(MemoryLayout layout) { return {layout, std::nullopt, layout}; }

// What a case's graph runs for a float input's quantized output: the fused op; the fused op and
// beside it the unfused form (layer_norm, q8ta_quantize) to compare with (ACCU); or, for the
// dual form, only the unfused form writing both outputs (the PERF baseline of layer_norm_dual).
enum class Build { Fused, FusedAndUnfused, UnfusedOnly };

class LayerNormCase : public CaseInstance {
 public:
  LayerNormCase(std::vector<int64_t> sizes, LayerNormForm form, ops::QuantParams in_q, double eps,
                Build build)
      : sizes_(std::move(sizes)), form_(form), in_q_(in_q), eps_(eps), build_(build) {}

  void build(graph::ComputeGraph& g) override {
    const DType in_dtype = form_.float_input() ? DType::Float32 : DType::Int8x4;
    in_ = g.add_tensor({sizes_, in_dtype, StorageType::Buffer, form_.in_layout}, "x");
    if (form_.out_float) {
      out_ = g.add_tensor({sizes_, DType::Float32, StorageType::Buffer, *form_.out_float}, "y");
    }
    if (form_.out_int8) {
      out_q_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, *form_.out_int8}, "yq");
    }
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
    if (form_.out_int8) p.output = kOutput;
    weight_ = p.weight;
    bias_ = p.bias;
    g.add_input(in_);
    if (build_ == Build::UnfusedOnly) {
      p.output.reset();
      ops::add_q8ta_layer_norm_node(g, in_, out_, p);
      ops::add_q8ta_quantize_node(g, out_, out_q_, kOutput);
    } else if (form_.out_float && form_.out_int8) {
      ops::add_layer_norm_dual_node(g, in_, out_, out_q_, p);
    } else {
      ops::add_q8ta_layer_norm_node(g, in_, form_.out_int8 ? out_q_ : out_, p);
    }
    for (graph::ValueRef v : {out_, out_q_}) {
      if (v >= 0) g.add_output(v);
    }
    if (build_ != Build::FusedAndUnfused || !form_.float_input() || !form_.out_int8) return;
    // The unfused form: layer_norm into a float buffer, then q8ta_quantize.
    twin_ = g.add_tensor({sizes_, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked},
                         "unfused_y");
    twin_q_ =
        g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, *form_.out_int8}, "unfused_yq");
    p.output.reset();
    ops::add_q8ta_layer_norm_node(g, in_, twin_, p);
    ops::add_q8ta_quantize_node(g, twin_, twin_q_, kOutput);
    g.add_output(twin_);
    g.add_output(twin_q_);
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
    }
    if (!form_.out_int8) return r;
    const std::vector<int8_t> got = g.read_int8(out_q_);
    for (size_t i = 0; i < want.y.size(); ++i) {
      const int lo = quantize(want.y[i] - tolerance(i), kOutput);
      const int hi = quantize(want.y[i] + tolerance(i), kOutput);
      record(r, std::abs(got[i] - quantize(want.y[i], kOutput)), got[i] < lo || got[i] > hi);
    }
    // The words: the values just checked where they belong, the zero point in every padding lane.
    const std::vector<int32_t> words = g.read_words(out_q_);
    compare_words(words, testing::ref_pack(*form_.out_int8, s, got, kOutput.zero_point), r);
    if (twin_ >= 0) check_against_unfused(g, got, words, r);
    return r;
  }
  PerfWork work() const override {
    const RefShape s = testing::ref_shape_of(sizes_);
    const double elements = static_cast<double>(s.n * s.c * s.h * s.w);
    const double int8_bytes = 4.0 * testing::ref_word_count(form_.in_layout, s);
    const double in_bytes = form_.float_input() ? 4.0 * elements : int8_bytes;
    const double out_bytes =
        (form_.out_float ? 4.0 * elements : 0.0) +
        (form_.out_int8 ? 4.0 * testing::ref_word_count(*form_.out_int8, s) : 0.0);
    return {in_bytes + out_bytes + 8.0 * static_cast<double>(s.w), 0.0};
  }

 private:
  // Bit for bit: the int8 output against the host's quantization of the unfused layer_norm's
  // float32 output and against q8ta_quantize's words; the float32 output against that layer_norm.
  void check_against_unfused(const graph::ComputeGraph& g, const std::vector<int8_t>& got,
                             const std::vector<int32_t>& words, AccuResult& r) const {
    const std::vector<float> unfused_y = g.read_float(twin_);
    for (size_t i = 0; i < got.size(); ++i) {
      const int want = quantize_f32(unfused_y[i], kOutput);
      record(r, std::abs(got[i] - want), got[i] != want);
    }
    compare_words(words, g.read_words(twin_q_), r);
    if (!form_.out_float) return;
    const std::vector<float> y = g.read_float(out_);
    for (size_t i = 0; i < y.size(); ++i) {
      const bool same = std::memcmp(&y[i], &unfused_y[i], sizeof(float)) == 0;
      record(r, std::fabs(static_cast<double>(y[i]) - unfused_y[i]), !same);
    }
  }

  std::vector<int64_t> sizes_;
  LayerNormForm form_;
  ops::QuantParams in_q_;
  double eps_;
  Build build_;
  graph::ValueRef in_ = -1, out_ = -1, out_q_ = -1, twin_ = -1, twin_q_ = -1;
  std::vector<int8_t> q_;
  std::vector<float> xf_, weight_, bias_;
};

// `fallback`: ACCU runs it again without subgroup arithmetic (the tree reduction variant).
// `unfused`: a PERF case of the dual form's unfused baseline (layer_norm, q8ta_quantize).
void add_layer_norm_case(Registry& registry, const std::string& prefix,
                         const std::vector<int64_t>& sizes, LayerNormForm form,
                         ops::QuantParams in_q, double eps, bool fallback = false,
                         bool unfused = false) {
  const std::string shape = shape_string(sizes);
  const std::string in = form.float_input() ? "float_" + std::string(to_string(form.in_layout))
                                            : std::string(to_string(form.in_layout));
  // An int8 input's int8 output is in its layout ("int8"); a float input's names its layout.
  std::string out = form.out_float ? "float_" + std::string(to_string(*form.out_float)) : "";
  if (form.out_int8) {
    out += std::string(out.empty() ? "" : "+") + "int8" +
           (form.float_input() ? "_" + std::string(to_string(*form.out_int8)) : "");
  }
  if (unfused) out = "unfused_" + out;
  const std::string op = unfused ? "layer_norm+q8ta_quantize" : form.op();
  const Build build =
      unfused ? Build::UnfusedOnly : (prefix.empty() ? Build::FusedAndUnfused : Build::Fused);
  char eps_text[32];
  std::snprintf(eps_text, sizeof(eps_text), "%g", eps);
  registry.add({prefix + "q8ta_layer_norm/" + in + "/" + out + "/" + shape + "/eps" + eps_text, op,
                shape, in + " -> " + out, prefix.empty(), !prefix.empty(), fallback, Metric::GBps,
                [=] { return std::make_unique<LayerNormCase>(sizes, form, in_q, eps, build); }});
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
      add_layer_norm_case(registry, "", sizes, int8_form(layout), in_q, eps, fallback);
      add_layer_norm_case(registry, "", sizes, {layout, float_layouts[index % 3], std::nullopt},
                          in_q, eps, fallback);
      ++index;
    }
    for (MemoryLayout in_layout : float_layouts) {
      add_layer_norm_case(registry, "", sizes, {in_layout, float_layouts[index % 3], std::nullopt},
                          kInputs[0], kEps[index % std::size(kEps)],
                          in_layout == MemoryLayout::WidthPacked);
      ++index;
    }
    // A float input quantized (layer_norm_q) and written both ways (layer_norm_dual), into each
    // packed layout; the 4H4W ones (the linear's input layout) also without subgroup arithmetic.
    for (MemoryLayout layout : kAllPackedInt8Layouts) {
      const MemoryLayout in_layout = float_layouts[index % 3];
      const double eps = kEps[index % std::size(kEps)];
      const bool fallback = layout == MemoryLayout::PackedInt8_4H4W;
      add_layer_norm_case(registry, "", sizes, {in_layout, std::nullopt, layout}, kInputs[0], eps,
                          fallback);
      add_layer_norm_case(registry, "", sizes, {in_layout, float_layouts[(index + 1) % 3], layout},
                          kInputs[0], eps, fallback);
      ++index;
    }
  }
  // MiniLM's and BERT-base's activations at sequence length 128 and 512; 16 MiB of int8 (the
  // kernel's own rate, past the launch cost).
  for (const std::vector<int64_t>& sizes :
       {std::vector<int64_t>{1, 128, 384}, std::vector<int64_t>{1, 512, 768},
        std::vector<int64_t>{1, 16384, 1024}}) {
    const LayerNormForm forms[] = {
        int8_form(MemoryLayout::PackedInt8_4H4W),
        int8_form(MemoryLayout::PackedInt8_4W4C),
        {MemoryLayout::PackedInt8_4H4W, MemoryLayout::WidthPacked, std::nullopt},
        {MemoryLayout::WidthPacked, MemoryLayout::WidthPacked, std::nullopt},
        {MemoryLayout::WidthPacked, std::nullopt, MemoryLayout::PackedInt8_4H4W},
        {MemoryLayout::WidthPacked, MemoryLayout::WidthPacked, MemoryLayout::PackedInt8_4H4W}};
    for (const LayerNormForm& form : forms) {
      add_layer_norm_case(registry, "perf/", sizes, form, kInputs[0], 1e-12);
      if (form.op() == "layer_norm_dual") {
        add_layer_norm_case(registry, "perf/", sizes, form, kInputs[0], 1e-12, false, true);
      }
    }
  }
}

}  // namespace vkd::custom_ops
