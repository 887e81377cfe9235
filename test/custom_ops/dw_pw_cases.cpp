// ACCU and PERF cases for the fused depthwise -> 1x1 convolution (q8ta_conv2d_dw_pw, _add) and
// with the 1x1 expansion before it (q8ta_conv2d_pw_dw_pw, _add; runtime/ops/
// DepthwisePointwise.h), both forms. The expected output is the unfused sequence computed by the
// CPU reference: [the 1x1 expansion q8ta_conv2d, its int8 output requantized with its own
// scale, zero point and activation range,] the depthwise q8ta_conv2d, its int8 output likewise,
// the 1x1 q8ta_conv2d of that, [q8ta_add].
// Compiled with -ffp-contract=off (test/CMakeLists.txt), as the conv cases.
#include <cmath>
#include <optional>
#include <string>

#include "core/Error.h"
#include "runtime/ops/DepthwisePointwise.h"
#include "test/custom_ops/ConvWeightsCase.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/custom_ops/ResidualCase.h"
#include "test/reference/ConvReference.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/QuantReference.h"

namespace vkd::custom_ops {
namespace {

using ops::DepthwisePointwiseForm;
using testing::RefConv2d;
using testing::RefShape;

constexpr MemoryLayout k4W4C = MemoryLayout::PackedInt8_4W4C;

struct DwPwSetup {
  int64_t n = 1, c = 8, h = 5, w = 5, n_out = 4;  // depthwise [n, c, h, w]; 1x1 output channels
  int64_t c_x = 0;  // > 0: a 1x1 expansion c_x -> c first (the input [n, c_x, h, w])
  OutputQuant expanded{"relu6", -128, -128, 100};  // the expansion's int8 output
  int64_t k = 3;                                   // square depthwise kernel
  int32_t stride = 1, pad = 1, dilation = 1;
  int32_t input_zp = 0;
  OutputQuant mid{"relu6", -128, -128, 127};  // the depthwise's int8 output
  OutputQuant out{"none", 3, -128, 127};      // the 1x1's int8 value
  std::optional<OutputQuant> residual;        // _add: the sum's quantization
  DepthwisePointwiseForm form = DepthwisePointwiseForm::Auto;
  int32_t tiles = 0;  // tiles_per_workgroup
  int32_t rows = 0;   // rows_per_workgroup
  int32_t wg = 0;     // workgroup_size
  bool accu = true;
  uint32_t seed = 1;
};

RefConv2d depthwise_conv(const DwPwSetup& s) {
  RefConv2d c;
  c.n = s.n;
  c.c_in = c.c_out = c.groups = s.c;
  c.h = s.h;
  c.w = s.w;
  c.kh = c.kw = s.k;
  c.stride_h = c.stride_w = s.stride;
  c.pad_top = c.pad_left = c.pad_bottom = c.pad_right = s.pad;
  c.dilation_h = c.dilation_w = s.dilation;
  return c;
}

RefConv2d pointwise_conv(const DwPwSetup& s) {
  const RefConv2d dw = depthwise_conv(s);
  RefConv2d c;
  c.n = s.n;
  c.c_in = s.c;
  c.h = testing::reference_conv_out_h(dw);
  c.w = testing::reference_conv_out_w(dw);
  c.c_out = s.n_out;
  return c;
}

RefShape input_shape(const DwPwSetup& s) { return {s.n, s.c_x ? s.c_x : s.c, s.h, s.w}; }

RefShape output_shape(const DwPwSetup& s) {
  const RefConv2d pw = pointwise_conv(s);
  return {s.n, s.n_out, pw.h, pw.w};
}

// Multiply-adds of one execution: the depthwise's taps and the 1x1's channels per output.
double dw_pw_macs(const DwPwSetup& s) {
  const RefConv2d pw = pointwise_conv(s);
  return double(s.n * pw.h * pw.w) * double(s.c) * double(s.k * s.k + s.n_out) +
         double(s.n * s.h * s.w) * double(s.c_x * s.c);
}

std::string op_of(const DwPwSetup& s) {
  return std::string(s.c_x ? "q8ta_conv2d_pw_dw_pw" : "q8ta_conv2d_dw_pw") +
         (s.residual ? "_add" : "");
}

class DwPwCase : public CaseInstance {
 public:
  explicit DwPwCase(DwPwSetup s) : s_(std::move(s)) {}

  void build(graph::ComputeGraph& g) override {
    std::mt19937 rng(s_.seed);
    const RefConv2d dw = depthwise_conv(s_), pw = pointwise_conv(s_);
    const RefShape in = input_shape(s_);
    qx_ = random_int8(in.n * in.c * in.h * in.w, -128, 127, rng);
    const float dw_acc = kTypicalProduct * std::sqrt(float(s_.k * s_.k));
    const float pw_acc = kTypicalProduct * std::sqrt(float(s_.c));
    p_.input = {kInputScale, s_.input_zp, -128, 127};
    // The depthwise's int8 input and its quantization: the input, or the expansion's output.
    std::vector<int8_t> q_dw = qx_;
    ops::QuantParams dw_in = p_.input;
    if (s_.c_x) {
      const float e_acc = kTypicalProduct * std::sqrt(float(s_.c_x));
      expand_ = random_host_conv(s_.c, s_.c_x, 1, 1, true, kInputScale, e_acc, rng);
      RefConv2d e;
      e.n = s_.n, e.c_in = s_.c_x, e.h = s_.h, e.w = s_.w, e.c_out = s_.c;
      std::vector<float> y_e;
      if (s_.accu) {
        y_e = testing::reference_q8ta_conv2d(qx_, expand_.weight, e, kInputScale, s_.input_zp,
                                             expand_.scales, expand_.bias);
      }
      dw_in = {case_output_scale(s_.accu, y_e, s_.expanded.zero_point, e_acc),
               s_.expanded.zero_point, -128, 127};
      p_.expansion =
          ops::DepthwiseExpansion{expand_.view(), dw_in, s_.expanded.act_min, s_.expanded.act_max};
      if (s_.accu) {
        q_dw = testing::reference_quantize(y_e, dw_in.scale, dw_in.zero_point, s_.expanded.act_min,
                                           s_.expanded.act_max);
      }
    }
    dw_ = random_host_conv(s_.c, 1, s_.k, s_.k, true, dw_in.scale, dw_acc, rng);
    p_.geometry.stride_h = p_.geometry.stride_w = s_.stride;
    p_.geometry.pad_top = p_.geometry.pad_left = p_.geometry.pad_bottom = p_.geometry.pad_right =
        s_.pad;
    p_.geometry.dilation_h = p_.geometry.dilation_w = s_.dilation;
    p_.form = s_.form;
    p_.tiles_per_workgroup = s_.tiles;
    p_.rows_per_workgroup = s_.rows;
    p_.workgroup_size = s_.wg;

    // The depthwise's float result, its int8 output (mid) and the 1x1's, as unfused ops.
    std::vector<float> y_mid;
    if (s_.accu) {
      y_mid = testing::reference_q8ta_conv2d(q_dw, dw_.weight, dw, dw_in.scale, dw_in.zero_point,
                                             dw_.scales, dw_.bias);
    }
    p_.mid = {case_output_scale(s_.accu, y_mid, s_.mid.zero_point, dw_acc), s_.mid.zero_point, -128,
              127};
    p_.mid_activation_min = s_.mid.act_min;
    p_.mid_activation_max = s_.mid.act_max;
    pw_ = random_host_conv(s_.n_out, s_.c, 1, 1, true, p_.mid.scale, pw_acc, rng);
    std::vector<float> y;
    if (s_.accu) {
      const auto q_mid = testing::reference_quantize(y_mid, p_.mid.scale, s_.mid.zero_point,
                                                     s_.mid.act_min, s_.mid.act_max);
      y = testing::reference_q8ta_conv2d(q_mid, pw_.weight, pw, p_.mid.scale, s_.mid.zero_point,
                                         pw_.scales, pw_.bias);
    }
    p_.output = {case_output_scale(s_.accu, y, s_.out.zero_point, pw_acc), s_.out.zero_point, -128,
                 127};
    p_.activation_min = s_.out.act_min;
    p_.activation_max = s_.out.act_max;
    if (s_.accu) {
      expected_ = testing::reference_quantize(y, p_.output.scale, s_.out.zero_point, s_.out.act_min,
                                              s_.out.act_max);
    }

    const RefShape out = output_shape(s_);
    const TensorSpec out_spec{
        {out.n, out.c, out.h, out.w}, DType::Int8x4, StorageType::Buffer, k4W4C};
    in_ref_ =
        g.add_tensor({{in.n, in.c, in.h, in.w}, DType::Int8x4, StorageType::Buffer, k4W4C}, "x");
    out_ref_ = g.add_tensor(out_spec, "y");
    in_bytes_ = 4.0 * double(testing::ref_word_count(k4W4C, in));
    out_bytes_ = 4.0 * double(testing::ref_word_count(k4W4C, out));
    if (s_.residual) {
      residual_.emplace(-5, *s_.residual);
      residual_->draw(expected_.empty() ? std::vector<int8_t>(size_t(out.n * out.c * out.h * out.w))
                                        : expected_,
                      p_.output, rng);
      p_.residual = residual_->add_input(g, out_spec);
      in_bytes_ += out_bytes_;
    }
    const size_t before = g.nodes().size();
    const DepthwisePointwiseForm taken =
        ops::add_q8ta_conv2d_dw_pw_node(g, in_ref_, dw_.view(), pw_.view(), out_ref_, p_);
    // The fused kernel fits the device: its storage buffers (as reflected) and its workgroup
    // (128 invocations unless the case sets it; a device class may allow fewer of either).
    const auto& fused = shaders::shader_info(
        shaders::variants::q8ta_conv2d_dw_pw[p_.expansion ? 1 : 0][p_.residual ? 1 : 0]
                                            [g.profile().int8_dot_product ? 0 : 1]);
    const bool fits = fused.binding_count <= g.profile().max_per_stage_storage_buffers &&
                      g.profile().max_workgroup_invocations >=
                          (p_.workgroup_size > 0 ? uint32_t(p_.workgroup_size) : 128u);
    const DepthwisePointwiseForm want =
        s_.form != DepthwisePointwiseForm::Auto ? s_.form
        : !fits || g.profile().cpu_kernels || s_.n_out > 32 || s_.c_x * s_.c > 32 * 192
            ? DepthwisePointwiseForm::Split
            : DepthwisePointwiseForm::Fused;
    const size_t dispatches = g.nodes().size() - before;
    VKD_CHECK(taken == want && dispatches >= 1 &&
                  (taken == DepthwisePointwiseForm::Fused) == (dispatches == 1),
              ErrorCode::Internal, "q8ta_conv2d_dw_pw took the ", ops::to_string(taken),
              " form in ", dispatches, " dispatch(es), expected the ", ops::to_string(want),
              " form");
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937&) override {
    g.write_words(in_ref_, testing::ref_pack(k4W4C, input_shape(s_), qx_, s_.input_zp));
    if (residual_) residual_->write(g, k4W4C, output_shape(s_));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    const RefShape out = output_shape(s_);
    const auto expected = residual_ ? residual_->expected(expected_, p_.output) : expected_;
    const int32_t zp = residual_ ? residual_->sum_zero_point() : s_.out.zero_point;
    // Every word, padding lanes and widths included (they must hold the output zero point).
    compare_words(g.read_words(out_ref_), testing::ref_pack(k4W4C, out, expected, zp), r);
    if (r.mismatches) {
      report_first_mismatch(g.read_int8(out_ref_), expected, 0.0, [&](int64_t i) {
        return "n " + std::to_string(i / (out.c * out.h * out.w)) + " c " +
               std::to_string(i / (out.h * out.w) % out.c) + " h " +
               std::to_string(i / out.w % out.h) + " w " + std::to_string(i % out.w);
      });
    }
    return r;
  }
  PerfWork work() const override {
    return {expand_.bytes() + dw_.bytes() + pw_.bytes() + in_bytes_ + out_bytes_,
            2.0 * dw_pw_macs(s_)};
  }

 private:
  DwPwSetup s_;
  ops::DepthwisePointwiseParams p_;
  std::vector<int8_t> qx_, expected_;
  HostConv expand_, dw_, pw_;
  std::optional<ResidualCase> residual_;
  double in_bytes_ = 0, out_bytes_ = 0;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
};

// "1x96x16x9 k3 s2 p1 ->24", with an expansion "1x24x16x9 e96 k3 s2 p1 ->24".
std::string shape_name(const DwPwSetup& s) {
  const RefShape in = input_shape(s);
  std::string name = std::to_string(in.n) + "x" + std::to_string(in.c) + "x" +
                     std::to_string(in.h) + "x" + std::to_string(in.w);
  if (s.c_x) name += " e" + std::to_string(s.c);
  name +=
      " k" + std::to_string(s.k) + " s" + std::to_string(s.stride) + " p" + std::to_string(s.pad);
  if (s.dilation != 1) name += " d" + std::to_string(s.dilation);
  return name + " ->" + std::to_string(s.n_out);
}

std::string form_name(const DwPwSetup& s) {
  return ops::to_string(s.form) + (s.tiles ? " tp" + std::to_string(s.tiles) : "") +
         (s.rows ? " rows" + std::to_string(s.rows) : "") +
         (s.wg ? " wg" + std::to_string(s.wg) : "");
}

void add_case(Registry& registry, const std::string& prefix, const DwPwSetup& s, bool accu) {
  Case c{prefix + op_of(s) + "/" + shape_name(s) + " " + form_name(s) + " mid " + s.mid.name +
             " out " + s.out.name + (s.residual ? std::string(" add ") + s.residual->name : ""),
         op_of(s),
         shape_name(s),
         "4W4C -> 4W4C",
         accu,
         !accu,
         accu,
         Metric::GOPs,
         [s] { return std::make_unique<DwPwCase>(s); }};
  registry.add(std::move(c));
}

// Shapes that meet every edge of the fused kernel: channels off multiples of 4 (padding lanes
// of mid and of the output), widths off multiples of 4 (padding widths), stride 2, dilation 2,
// padding 0 and 2, 5x5, batch 2, more output than mid channels, one output pixel, the
// tile count off the tiles per workgroup, and mid channels enough for several invocation rounds
// per workgroup; each with the residual add and without, both forms.
void register_accu(Registry& registry) {
  const OutputQuant mids[] = {
      {"relu6", -128, -128, -25}, {"none", 5, -128, 127}, {"relu", -20, -20, 127}};
  const OutputQuant outs[] = {
      {"none", -7, -128, 127}, {"clamp", 3, -20, 90}, {"none", 127, -128, 127}};
  struct Shape {
    int64_t n, c, h, w, n_out, k;
    int32_t stride, pad, dilation;
  };
  const Shape shapes[] = {
      {1, 8, 6, 7, 4, 3, 1, 1, 1},    {1, 6, 9, 11, 5, 3, 2, 1, 1},    {2, 13, 7, 5, 9, 3, 1, 1, 1},
      {1, 12, 9, 10, 20, 5, 1, 2, 1}, {1, 16, 11, 9, 8, 3, 1, 2, 2},   {1, 4, 3, 3, 4, 3, 1, 0, 1},
      {1, 96, 10, 9, 24, 3, 2, 1, 1}, {1, 40, 13, 14, 12, 3, 1, 1, 1},
  };
  int index = 0;
  for (const Shape& sh : shapes) {
    for (const bool add : {false, true}) {
      for (const int64_t c_x : {int64_t{0}, sh.c % 3 + 5}) {
        for (const auto form : {DepthwisePointwiseForm::Fused, DepthwisePointwiseForm::Split}) {
          DwPwSetup s;
          s.n = sh.n, s.c = sh.c, s.h = sh.h, s.w = sh.w, s.n_out = sh.n_out, s.k = sh.k;
          s.stride = sh.stride, s.pad = sh.pad, s.dilation = sh.dilation;
          s.input_zp = kInputZeroPoints[index % 3];
          s.mid = mids[index % 3];
          s.out = outs[(index / 3) % 3];
          if (add) s.residual = OutputQuant{"relu", -30, -30, 127};
          s.form = form;
          // A third of the fused cases with a tile count off their tile grid.
          s.tiles = form == DepthwisePointwiseForm::Fused && (index / 2) % 3 == 1 ? 3 : 0;
          s.c_x = c_x;  // expansions from 5, 6 or 7 channels
          s.expanded = mids[(index + 1) % 3];
          s.seed = 9000 + uint32_t(index);
          add_case(registry, "", s, true);
          ++index;
        }
      }
    }
  }
  // Auto (Split on CPU devices and past 32 output channels, else Fused) on refinenet_lite's
  // stride-1 shape, and on a wider 1x1.
  DwPwSetup s;
  s.c = 96, s.h = 12, s.w = 10, s.n_out = 24;
  s.residual = OutputQuant{"none", 0, -128, 127};
  add_case(registry, "", s, true);
  s.n_out = 40;
  s.residual.reset();
  add_case(registry, "", s, true);
  // With refinenet_lite's expansion 24 -> 96.
  s.c_x = 24;
  s.n_out = 24;
  add_case(registry, "", s, true);
  // Several output rows per workgroup sharing the expansion's window rows: 2 and 3 rows (the
  // last group of 13 or 7 rows partly past the output), strides 1 and 2, dilation 2, a 5x5
  // kernel, batch 2 (row groups do not cross images), 2 tiles per row, with and without the add.
  const Shape row_shapes[] = {{1, 8, 13, 9, 4, 3, 1, 1, 1},
                              {2, 12, 7, 10, 8, 3, 2, 1, 1},
                              {1, 16, 11, 9, 8, 3, 1, 2, 2},
                              {1, 12, 9, 10, 20, 5, 1, 2, 1},
                              {1, 96, 12, 10, 24, 3, 1, 1, 1}};
  for (const Shape& sh : row_shapes) {
    for (const int32_t rows : {2, 3}) {
      DwPwSetup r;
      r.n = sh.n, r.c = sh.c, r.h = sh.h, r.w = sh.w, r.n_out = sh.n_out, r.k = sh.k;
      r.stride = sh.stride, r.pad = sh.pad, r.dilation = sh.dilation;
      r.c_x = sh.c % 3 + 5;
      r.input_zp = kInputZeroPoints[index % 3];
      r.mid = mids[index % 3];
      r.out = outs[(index / 3) % 3];
      r.expanded = mids[(index + 1) % 3];
      if (rows == 3) r.residual = OutputQuant{"relu", -30, -30, 127};
      r.form = DepthwisePointwiseForm::Fused;
      r.rows = rows;
      r.tiles = rows == 2 ? 2 : 0;
      r.seed = 9000 + uint32_t(index++);
      add_case(registry, "", r, true);
      // The same with 128 / 256 invocations per workgroup (2 / 3 rows).
      r.wg = rows == 2 ? 128 : 256;
      r.seed = 9000 + uint32_t(index++);
      add_case(registry, "", r, true);
      r.wg = 0;
    }
  }
  // Without an expansion, 128 and 256 invocations per workgroup.
  for (const int32_t wg : {128, 256}) {
    DwPwSetup r;
    r.c = 40, r.h = 13, r.w = 14, r.n_out = 12;
    r.form = DepthwisePointwiseForm::Fused;
    r.wg = wg;
    r.seed = 9000 + uint32_t(index++);
    add_case(registry, "", r, true);
  }
}

// refinenet_lite's four sites (1x24x128x72 expanded to 96, depthwise 3x3 at stride 1 then 2,
// projected to 24) and MobileNetV2's projection shapes at 224, both forms and a few tile counts;
// the expansions of refinenet_lite and of MobileNetV2's narrow blocks too.
void register_perf(Registry& registry) {
  struct Shape {
    int64_t c, h, w, n_out;
    int32_t stride;
    int64_t c_x;
  };
  const Shape shapes[] = {
      {96, 128, 72, 24, 1, 0},  {96, 128, 72, 24, 2, 0}, {96, 64, 36, 24, 2, 0},
      {96, 32, 18, 24, 2, 0},   {144, 56, 56, 24, 1, 0}, {192, 28, 28, 32, 1, 0},
      {576, 14, 14, 96, 1, 0},  {960, 7, 7, 160, 1, 0},  {96, 128, 72, 24, 1, 24},
      {96, 128, 72, 24, 2, 24}, {96, 64, 36, 24, 2, 24}, {96, 32, 18, 24, 2, 24},
      {144, 56, 56, 24, 1, 24}, {192, 28, 28, 32, 1, 32}};
  for (const Shape& sh : shapes) {
    for (const auto form : {DepthwisePointwiseForm::Fused, DepthwisePointwiseForm::Split}) {
      for (const int32_t tiles : {0, 1, 2, 8}) {
        if (form == DepthwisePointwiseForm::Split && tiles != 0) continue;
        if (sh.c_x ? tiles == 8 : tiles == 1) continue;
        // With an expansion, fused, also 2 and 4 rows per workgroup.
        for (const int32_t rows : {0, 2, 4}) {
          if (rows && (!sh.c_x || form == DepthwisePointwiseForm::Split || tiles == 0)) continue;
          DwPwSetup s;
          s.c = sh.c, s.h = sh.h, s.w = sh.w, s.n_out = sh.n_out, s.stride = sh.stride;
          s.c_x = sh.c_x;
          s.form = form;
          s.tiles = tiles;
          s.rows = rows;
          s.accu = false;
          add_case(registry, "perf/", s, false);
          // The op's tiles, fused, also with 64, 128 and 256 invocations per workgroup; with an
          // expansion at stride 1 each rows x tiles too.
          if (form == DepthwisePointwiseForm::Split) continue;
          if (tiles == 0 && rows == 0) {
            for (const int32_t wg : {64, 128, 256}) {
              s.wg = wg;
              add_case(registry, "perf/", s, false);
            }
          } else if (sh.c_x && sh.stride == 1 && rows) {
            for (const int32_t wg : {64, 256}) {
              s.wg = wg;
              add_case(registry, "perf/", s, false);
            }
          }
        }
      }
    }
  }
}

}  // namespace

void register_dw_pw_cases(Registry& registry) {
  register_accu(registry);
  register_perf(registry);
}

}  // namespace vkd::custom_ops
