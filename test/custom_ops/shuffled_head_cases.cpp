// ACCU and PERF cases for the fused shuffled head (q8ta_conv2d_ps_pw_q_dq, runtime/ops/
// ShuffledHead.h), both forms. The expected output is the unfused sequence computed by the CPU
// reference: the 1x1 q8ta_conv2d, its int8 output requantized with mid's scale, zero point and
// activation range, q8ta_pixel_shuffle's byte move, the 1x1 q8ta_conv2d of that requantized with
// the head's parameters, q8ta_dequantize; compared bit for bit.
// Compiled with -ffp-contract=off (test/CMakeLists.txt), as the conv cases.
#include <cmath>
#include <string>

#include "core/Error.h"
#include "runtime/ops/ShuffledHead.h"
#include "test/custom_ops/ConvWeightsCase.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/reference/ConvReference.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/PixelShuffleReference.h"
#include "test/reference/QuantReference.h"

namespace vkd::custom_ops {
namespace {

using ops::ShuffledHeadForm;
using testing::RefConv2d;
using testing::RefShape;

constexpr MemoryLayout k4W4C = MemoryLayout::PackedInt8_4W4C;

struct ShuffledHeadSetup {
  int64_t n = 1, c_in = 8, h = 4, w = 5;  // the input
  int64_t c = 4, r = 2, n_out = 3;        // mid channels (after the shuffle), factor, head
  int32_t input_zp = 0;
  OutputQuant mid{"relu", -128, -128, 127};  // the shuffled convolution's int8 output
  OutputQuant out{"none", 3, -128, 127};     // the head's int8 value (then dequantized)
  ShuffledHeadForm form = ShuffledHeadForm::Auto;
  bool accu = true;
  uint32_t seed = 1;
};

RefShape input_shape(const ShuffledHeadSetup& s) { return {s.n, s.c_in, s.h, s.w}; }
RefShape output_shape(const ShuffledHeadSetup& s) { return {s.n, s.n_out, s.h * s.r, s.w * s.r}; }

// A 1x1 convolution of `c_in` -> `c_out` channels at h x w.
RefConv2d pointwise(int64_t n, int64_t c_in, int64_t c_out, int64_t h, int64_t w) {
  RefConv2d c;
  c.n = n, c.c_in = c_in, c.c_out = c_out, c.h = h, c.w = w;
  return c;
}

class ShuffledHeadCase : public CaseInstance {
 public:
  explicit ShuffledHeadCase(ShuffledHeadSetup s) : s_(std::move(s)) {}

  void build(graph::ComputeGraph& g) override {
    std::mt19937 rng(s_.seed);
    const int64_t c_ps = s_.c * s_.r * s_.r;
    const RefShape in = input_shape(s_), out = output_shape(s_);
    qx_ = random_int8(in.n * in.c * in.h * in.w, -128, 127, rng);
    const float ps_acc = kTypicalProduct * std::sqrt(float(s_.c_in));
    const float head_acc = kTypicalProduct * std::sqrt(float(s_.c));
    p_.input = {kInputScale, s_.input_zp, -128, 127};
    p_.upscale = int32_t(s_.r);
    p_.form = s_.form;
    ps_ = random_host_conv(c_ps, s_.c_in, 1, 1, true, kInputScale, ps_acc, rng);
    // The shuffled convolution's float result, its int8 output shuffled (mid), the head's.
    std::vector<float> y_ps;
    if (s_.accu) {
      y_ps = testing::reference_q8ta_conv2d(qx_, ps_.weight,
                                            pointwise(s_.n, s_.c_in, c_ps, s_.h, s_.w), kInputScale,
                                            s_.input_zp, ps_.scales, ps_.bias);
    }
    p_.mid = {case_output_scale(s_.accu, y_ps, s_.mid.zero_point, ps_acc), s_.mid.zero_point, -128,
              127};
    p_.mid_activation_min = s_.mid.act_min;
    p_.mid_activation_max = s_.mid.act_max;
    head_ = random_host_conv(s_.n_out, s_.c, 1, 1, true, p_.mid.scale, head_acc, rng);
    std::vector<float> y;
    if (s_.accu) {
      const auto q_mid = testing::reference_pixel_shuffle(
          testing::reference_quantize(y_ps, p_.mid.scale, s_.mid.zero_point, s_.mid.act_min,
                                      s_.mid.act_max),
          s_.n, c_ps, s_.h, s_.w, s_.r);
      y = testing::reference_q8ta_conv2d(q_mid, head_.weight,
                                         pointwise(s_.n, s_.c, s_.n_out, out.h, out.w),
                                         p_.mid.scale, s_.mid.zero_point, head_.scales, head_.bias);
    }
    p_.output = {case_output_scale(s_.accu, y, s_.out.zero_point, head_acc), s_.out.zero_point,
                 -128, 127};
    p_.activation_min = s_.out.act_min;
    p_.activation_max = s_.out.act_max;
    if (s_.accu) {
      expected_ = testing::reference_dequantize(
          testing::reference_quantize(y, p_.output.scale, s_.out.zero_point, s_.out.act_min,
                                      s_.out.act_max),
          p_.output.scale, s_.out.zero_point);
    }
    in_ref_ =
        g.add_tensor({{in.n, in.c, in.h, in.w}, DType::Int8x4, StorageType::Buffer, k4W4C}, "x");
    out_ref_ = g.add_tensor({{out.n, out.c, out.h, out.w},
                             DType::Float32,
                             StorageType::Buffer,
                             MemoryLayout::WidthPacked},
                            "y");
    in_bytes_ = 4.0 * double(testing::ref_word_count(k4W4C, in));
    out_bytes_ = 4.0 * double(out.n * out.c * out.h * out.w);
    const size_t before = g.nodes().size();
    const ShuffledHeadForm taken =
        ops::add_q8ta_conv2d_ps_pw_q_dq_node(g, in_ref_, ps_.view(), head_.view(), out_ref_, p_);
    // Auto: fused wherever the kernel takes the pair (every case here), but on CPU devices and
    // where its 6 storage buffers exceed a stage (a device class's 4).
    const bool auto_splits =
        g.profile().cpu_kernels || g.profile().max_per_stage_storage_buffers < 6;
    const ShuffledHeadForm want =
        s_.form == ShuffledHeadForm::Split || (s_.form == ShuffledHeadForm::Auto && auto_splits)
            ? ShuffledHeadForm::Split
            : ShuffledHeadForm::Fused;
    const size_t dispatches = g.nodes().size() - before;
    VKD_CHECK(taken == want && (taken == ShuffledHeadForm::Fused) == (dispatches == 1),
              ErrorCode::Internal, "q8ta_conv2d_ps_pw_q_dq took the ", ops::to_string(taken),
              " form in ", dispatches, " dispatch(es), expected the ", ops::to_string(want),
              " form");
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937&) override {
    g.write_words(in_ref_, testing::ref_pack(k4W4C, input_shape(s_), qx_, s_.input_zp));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    const RefShape out = output_shape(s_);
    const auto actual = g.read_float(out_ref_);
    compare_floats(actual, expected_, 0.0, r);
    if (r.mismatches) {
      report_first_mismatch(actual, expected_, 0.0, [&](int64_t i) {
        return "n " + std::to_string(i / (out.c * out.h * out.w)) + " c " +
               std::to_string(i / (out.h * out.w) % out.c) + " h " +
               std::to_string(i / out.w % out.h) + " w " + std::to_string(i % out.w);
      });
    }
    return r;
  }
  PerfWork work() const override {
    const double pixels = double(s_.n * s_.h * s_.w * s_.r * s_.r);
    return {ps_.bytes() + head_.bytes() + in_bytes_ + out_bytes_,
            2.0 * pixels * double(s_.c) * double(s_.c_in + s_.n_out)};
  }

 private:
  ShuffledHeadSetup s_;
  ops::ShuffledHeadParams p_;
  std::vector<int8_t> qx_;
  std::vector<float> expected_;
  HostConv ps_, head_;
  double in_bytes_ = 0, out_bytes_ = 0;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
};

// "1x24x128x72 ->96 r2 ->8" (the input, the shuffled convolution's channels, the head's).
std::string shape_name(const ShuffledHeadSetup& s) {
  return std::to_string(s.n) + "x" + std::to_string(s.c_in) + "x" + std::to_string(s.h) + "x" +
         std::to_string(s.w) + " ->" + std::to_string(s.c * s.r * s.r) + " r" +
         std::to_string(s.r) + " ->" + std::to_string(s.n_out);
}

void add_case(Registry& registry, const std::string& prefix, const ShuffledHeadSetup& s,
              bool accu) {
  const std::string op = "q8ta_conv2d_ps_pw_q_dq";
  registry.add({prefix + op + "/" + shape_name(s) + " " + ops::to_string(s.form) + " mid " +
                    s.mid.name + " out " + s.out.name,
                op, shape_name(s), "4W4C -> float", accu, !accu, accu, Metric::GOPs,
                [s] { return std::make_unique<ShuffledHeadCase>(s); }});
}

// Shapes that meet every edge of the fused kernel: input channels off multiples of 4 (padding
// lanes of the input words), widths off multiples of 4 (the 4W4C tile's padding widths are
// never read), head channels off multiples of 4 (the last word's unstored lanes), factors 2
// and 3, batch 2, one input pixel, refinenet_lite's 24 -> 96 -> 8 at a small size; activation
// ranges on mid and the head, each zero point kind; both forms forced, and Auto.
void register_accu(Registry& registry) {
  const OutputQuant mids[] = {
      {"relu6", -128, -128, -25}, {"none", 5, -128, 127}, {"relu", -20, -20, 127}};
  const OutputQuant outs[] = {
      {"none", -7, -128, 127}, {"clamp", 3, -20, 90}, {"none", 127, -128, 127}};
  struct Shape {
    int64_t n, c_in, h, w, c, r, n_out;
  };
  const Shape shapes[] = {{1, 8, 4, 5, 4, 2, 3},   {1, 5, 3, 7, 8, 2, 8},
                          {2, 12, 5, 3, 4, 3, 5},  {1, 24, 6, 9, 24, 2, 8},
                          {1, 3, 1, 1, 12, 2, 13}, {1, 32, 7, 10, 16, 2, 4}};
  int index = 0;
  for (const Shape& sh : shapes) {
    for (const auto form : {ShuffledHeadForm::Fused, ShuffledHeadForm::Split}) {
      ShuffledHeadSetup s;
      s.n = sh.n, s.c_in = sh.c_in, s.h = sh.h, s.w = sh.w, s.c = sh.c, s.r = sh.r;
      s.n_out = sh.n_out;
      s.input_zp = kInputZeroPoints[index % 3];
      s.mid = mids[index % 3];
      s.out = outs[(index / 3) % 3];
      s.form = form;
      s.seed = 9500 + uint32_t(index);
      add_case(registry, "", s, true);
    }
    ++index;
  }
  // Auto (Fused, but Split on CPU devices) on refinenet_lite's channels.
  ShuffledHeadSetup s;
  s.c_in = 24, s.h = 5, s.w = 7, s.c = 24, s.r = 2, s.n_out = 8;
  add_case(registry, "", s, true);
}

// refinenet_lite's head (up4 1x24x128x72 -> 96 shuffled by 2, then 24 -> 8), both forms.
void register_perf(Registry& registry) {
  for (const auto form : {ShuffledHeadForm::Fused, ShuffledHeadForm::Split}) {
    ShuffledHeadSetup s;
    s.c_in = 24, s.h = 128, s.w = 72, s.c = 24, s.r = 2, s.n_out = 8;
    s.form = form;
    s.accu = false;
    add_case(registry, "perf/", s, false);
  }
}

}  // namespace

void register_shuffled_head_cases(Registry& registry) {
  register_accu(registry);
  register_perf(registry);
}

}  // namespace vkd::custom_ops
