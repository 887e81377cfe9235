// ACCU and PERF cases for q8ta_conv2d (int8x4 4W4C / 4C1W in, or float32 quantized on load; int8
// 4W4C / 4C1W or float out; the Direct, Pointwise, Depthwise and Im2col routes) and
// q8ta_conv_transpose2d (its phase convolution through each of them).
// Compiled with -ffp-contract=off (test/CMakeLists.txt): the reference's float epilogue must
// round the product before adding the bias, as the shader does.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <utility>

#include "core/Error.h"
#include "runtime/ops/Conv2d.h"
#include "runtime/ops/ConvTranspose2d.h"
#include "test/custom_ops/ConvWeightsCase.h"
#include "test/custom_ops/EtvkShapes.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/custom_ops/ResidualCase.h"
#include "test/reference/ConvReference.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/PixelShuffleReference.h"
#include "test/reference/QuantReference.h"

namespace vkd::custom_ops {
namespace {

using ops::Conv2dRoute;
using testing::RefConv2d;
using testing::RefShape;

constexpr MemoryLayout k4W4C = MemoryLayout::PackedInt8_4W4C;
constexpr MemoryLayout k4C1W = MemoryLayout::PackedInt8_4C1W;
// Output quantizations rotated over the int8-output ACCU cases: zero points at both ends of
// the range, relu (activation_min = zero point) where it clamps nothing (zp -128) and where it
// does (zp 10), relu6-like clamps (zero point to a bound inside the range; one with the upper
// bound below zero), and a clamp strictly inside the range. Seven entries: a period coprime
// with the input zero points' 3 and the bias's 5.
const OutputQuant kOutputQuants[] = {{"none", -7, -128, 127},  {"relu", -128, -128, 127},
                                     {"relu", 10, 10, 127},    {"relu6", -20, -20, 60},
                                     {"clamp", 3, -20, 90},    {"none", 127, -128, 127},
                                     {"relu6", -128, -128, -5}};

// One convolution: input sizes [N, C_in, H, W], C_out, kernel and geometry.
struct ConvShape {
  int64_t n, c_in, h, w, c_out, kh, kw;
  ops::Conv2dGeometry geo;
};

// Square kernel, stride, padding and dilation.
ConvShape conv(int64_t n, int64_t c_in, int64_t h, int64_t w, int64_t c_out, int64_t k,
               int32_t stride, int32_t pad, int32_t dilation = 1, int32_t groups = 1) {
  ops::Conv2dGeometry g;
  g.stride_h = g.stride_w = stride;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = pad;
  g.dilation_h = g.dilation_w = dilation;
  g.groups = groups;
  return {n, c_in, h, w, c_out, k, k, g};
}

// The same with padding per side (a folded asymmetric pad op).
ConvShape with_pads(ConvShape s, int32_t top, int32_t left, int32_t bottom, int32_t right) {
  s.geo.pad_top = top;
  s.geo.pad_left = left;
  s.geo.pad_bottom = bottom;
  s.geo.pad_right = right;
  return s;
}

// A non-square kernel, stride and dilation (no padding: add it with with_pads).
ConvShape rect(int64_t n, int64_t c_in, int64_t h, int64_t w, int64_t c_out, int64_t kh, int64_t kw,
               int32_t stride_h, int32_t stride_w, int32_t dilation_h, int32_t dilation_w,
               int32_t groups = 1) {
  ConvShape s = conv(n, c_in, h, w, c_out, 1, 1, 0, 1, groups);
  s.kh = kh;
  s.kw = kw;
  s.geo.stride_h = stride_h;
  s.geo.stride_w = stride_w;
  s.geo.dilation_h = dilation_h;
  s.geo.dilation_w = dilation_w;
  return s;
}

ConvShape depthwise(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int32_t stride,
                    int32_t pad, int32_t dilation = 1) {
  return conv(n, c, h, w, c, k, stride, pad, dilation, static_cast<int32_t>(c));
}

RefConv2d ref_conv(const ConvShape& s) {
  RefConv2d c;
  c.n = s.n;
  c.c_in = s.c_in;
  c.h = s.h;
  c.w = s.w;
  c.c_out = s.c_out;
  c.kh = s.kh;
  c.kw = s.kw;
  c.stride_h = s.geo.stride_h;
  c.stride_w = s.geo.stride_w;
  c.pad_top = s.geo.pad_top;
  c.pad_left = s.geo.pad_left;
  c.pad_bottom = s.geo.pad_bottom;
  c.pad_right = s.geo.pad_right;
  c.dilation_h = s.geo.dilation_h;
  c.dilation_w = s.geo.dilation_w;
  c.groups = s.geo.groups;
  return c;
}

RefShape input_shape(const ConvShape& s) { return {s.n, s.c_in, s.h, s.w}; }

RefShape output_shape(const ConvShape& s) {
  const RefConv2d c = ref_conv(s);
  return {s.n, s.c_out, testing::reference_conv_out_h(c), testing::reference_conv_out_w(c)};
}

std::vector<int64_t> sizes_of(const RefShape& r) { return {r.n, r.c, r.h, r.w}; }

int64_t numel(const RefShape& r) { return r.n * r.c * r.h * r.w; }

bool is_depthwise(const ConvShape& s) { return s.geo.groups == s.c_in && s.c_in == s.c_out; }

// Multiply-adds of one execution (each output sums C_in / groups channels of KH x KW taps).
double macs(const ConvShape& s) {
  return double(numel(output_shape(s))) * double(s.c_in / s.geo.groups) * double(s.kh * s.kw);
}

// The route Auto must take, from the rule runtime/ops/Conv2d.h states (written out here so a
// case fails when the op's choice drifts from its documentation).
Conv2dRoute auto_route(const ConvShape& s, MemoryLayout in, bool int8_out, MemoryLayout out) {
  const ops::Conv2dGeometry& g = s.geo;
  const bool pointwise_shape = s.kh == 1 && s.kw == 1 && g.stride_h == 1 && g.stride_w == 1 &&
                               g.pad_top == 0 && g.pad_left == 0 && g.pad_bottom == 0 &&
                               g.pad_right == 0 && g.groups == 1;
  if (pointwise_shape && in == k4W4C && int8_out && out == k4W4C) return Conv2dRoute::Pointwise;
  if (is_depthwise(s)) return Conv2dRoute::Depthwise;
  // Im2col: groups 1, int8 4W4C output, >= 64 products per output (no case here reaches the
  // im2col matrix's size cap).
  if (g.groups == 1 && int8_out && out == k4W4C && s.c_in * s.kh * s.kw >= 64) {
    return Conv2dRoute::Im2col;
  }
  return Conv2dRoute::Direct;
}

struct ConvSetup {
  ConvShape shape;
  MemoryLayout in_layout = k4W4C;
  bool int8_out = true;
  MemoryLayout out_layout = k4W4C;             // int8 output only
  Conv2dRoute route = Conv2dRoute::Auto;       // asked for
  Conv2dRoute expected = Conv2dRoute::Direct;  // the route the op must report
  int32_t depthwise_rows = 0;     // output rows per depthwise invocation asked for (0: the op's)
  int32_t depthwise_tiles_w = 0;  // and output tiles along the row (0: the op's)
  // The depthwise products asked for (Auto: the op's choice).
  ops::Conv2dParams::DepthwiseProducts products = ops::Conv2dParams::DepthwiseProducts::Auto;
  // The linear kernel of the Pointwise and Im2col routes asked for, and SplitK's slices (0: the
  // op's choice).
  ops::LinearRoute gemm = ops::LinearRoute::Auto;
  int32_t gemm_slices = 0;
  int32_t coopmat_tile_n = 0;  // the CoopMat kernel's tile channels (0: the op's choice)
  // The Im2col route's form asked for (Auto: the op's choice); a forced form is also checked
  // in the graph: Implicit = one dispatch of a "_im2col_" linear kernel reading the input,
  // Explicit = q8ta_im2col, then the linear kernel.
  ops::Im2colForm im2col_form = ops::Im2colForm::Auto;
  // ACCU: execute once before the checked execution, which must write the same bytes (the
  // split-K scratch left at zero).
  bool reexecute = false;
  int32_t input_zp = 0;
  OutputQuant out{"none", 0, -128, 127};
  bool bias = true;
  bool accu = true;  // false: a PERF case (no reference)
  uint32_t seed = 0;
  int32_t upscale = 1;  // the int8 output pixel-shuffled by this factor (q8ta_conv2d_ps)
  // The int8 output added to a residual tensor (q8ta_conv2d_add; ACCU only): that tensor's zero
  // point and the sum's quantization.
  std::optional<std::pair<int32_t, OutputQuant>> residual;
  // The int8 output dequantized in the store into a float32 NCHW output (q8ta_conv2d_q_dq;
  // ACCU only).
  bool dequantized = false;
  // The input float32 NCHW, quantized on load with kInputScale, input_zp and this range
  // {quant_min, quant_max} (q8ta_conv2d_fq; ACCU only).
  std::optional<std::pair<int32_t, int32_t>> float_input;
};

// Whether the case's output tensor is int8 (else float32 NCHW).
bool int8_tensor_out(const ConvSetup& s) { return s.int8_out && !s.dequantized; }

// The output as stored: the convolution's, pixel-shuffled by s.upscale.
RefShape stored_shape(const ConvSetup& s) {
  const RefShape o = output_shape(s.shape);
  const int64_t r = s.upscale;
  return {o.n, o.c / (r * r), o.h * r, o.w * r};
}

// The convolution's int8 output (NCHW) as stored: the reference pixel shuffle of it (bytes
// moved), the unfused q8ta_conv2d -> q8ta_pixel_shuffle.
std::vector<int8_t> stored_values(const ConvSetup& s, std::vector<int8_t> q) {
  if (s.upscale == 1) return q;
  const RefShape o = output_shape(s.shape);
  return testing::reference_pixel_shuffle(q, o.n, o.c, o.h, o.w, int64_t(s.upscale));
}

HostConv random_conv_weights(const ConvShape& s, bool with_bias, float typical_acc,
                             std::mt19937& rng) {
  return random_host_conv(s.c_out, s.c_in / s.geo.groups, s.kh, s.kw, with_bias, kInputScale,
                          typical_acc, rng);
}

// Float inputs for a case quantizing on load: random_activations over 1.3x its range (both
// ends saturate; every fourth value a rounding tie), and every ninth value +-1e6, far past
// either end.
std::vector<float> float_input_values(int64_t count, const ConvSetup& s, std::mt19937& rng) {
  std::vector<float> x = random_activations(count, kInputScale, s.input_zp, s.float_input->first,
                                            s.float_input->second, rng);
  for (size_t i = 4; i < x.size(); i += 9) x[i] = (i / 9) % 2 ? -1.0e6f : 1.0e6f;
  return x;
}

// "n 0 c 3 h 2 w 5": element i of an NCHW tensor of shape s.
std::string nchw_position(const RefShape& s, int64_t i) {
  return "n " + std::to_string(i / (s.c * s.h * s.w)) + " c " +
         std::to_string(i / (s.h * s.w) % s.c) + " h " + std::to_string(i / s.w % s.h) + " w " +
         std::to_string(i % s.w);
}

// On CPU devices (lavapipe) PERF skips layers this large, so a local run stays short.
constexpr double kCpuMaxOps = 4e9;

class Q8taConv2dCase : public CaseInstance {
 public:
  explicit Q8taConv2dCase(ConvSetup s) : s_(std::move(s)) {}

  // All data is drawn here, from the case's own seed: the int8 output scale depends on the
  // reference's y range and must be known when the node is added.
  void build(graph::ComputeGraph& g) override {
    const ConvShape& shape = s_.shape;
    VKD_CHECK(s_.accu || !g.profile().is_cpu() || 2.0 * macs(shape) <= kCpuMaxOps,
              ErrorCode::Unsupported, "layer too large for a CPU device");
    const RefShape in = input_shape(shape), out = stored_shape(s_);
    std::mt19937 rng(s_.seed);
    // A float input: q8ta_quantize's int8 values of it (the CPU reference) feed the reference
    // convolution, so the case compares with the unfused q8ta_quantize -> q8ta_conv2d.
    const auto range = s_.float_input.value_or(std::pair<int32_t, int32_t>{-128, 127});
    if (s_.float_input) {
      xf_ = float_input_values(numel(in), s_, rng);
      qx_ = testing::reference_quantize(xf_, kInputScale, s_.input_zp, range.first, range.second);
    } else {
      qx_ = random_int8(numel(in), -128, 127, rng);
    }
    const float typical_acc =
        kTypicalProduct * std::sqrt(float(shape.c_in / shape.geo.groups * shape.kh * shape.kw));
    host_ = random_conv_weights(shape, s_.bias, typical_acc, rng);

    p_.input = {kInputScale, s_.input_zp, range.first, range.second};
    p_.quantize_input = s_.float_input.has_value();
    p_.geometry = shape.geo;
    p_.route = s_.route;
    p_.depthwise_rows = s_.depthwise_rows;
    p_.depthwise_tiles_w = s_.depthwise_tiles_w;
    p_.depthwise_products = s_.products;
    p_.gemm = s_.gemm;
    p_.gemm_slices = s_.gemm_slices;
    p_.coopmat_tile_n = s_.coopmat_tile_n;
    p_.im2col_form = s_.im2col_form;
    if (s_.accu) {
      y_ = testing::reference_q8ta_conv2d(qx_, host_.weight, ref_conv(shape), kInputScale,
                                          s_.input_zp, host_.scales, host_.bias);
    }
    if (s_.int8_out) {
      p_.output = ops::QuantParams{case_output_scale(s_.accu, y_, s_.out.zero_point, typical_acc),
                                   s_.out.zero_point, -128, 127};
      p_.activation_min = s_.out.act_min;
      p_.activation_max = s_.out.act_max;
    }
    p_.upscale = s_.upscale;
    p_.dequantize_output = s_.dequantized;
    if (s_.int8_out && s_.accu) {
      stored_ =
          stored_values(s_, testing::reference_quantize(y_, p_.output->scale, s_.out.zero_point,
                                                        s_.out.act_min, s_.out.act_max));
    }

    const TensorSpec out_spec =
        int8_tensor_out(s_)
            ? TensorSpec{sizes_of(out), DType::Int8x4, StorageType::Buffer, s_.out_layout}
            : TensorSpec{sizes_of(out), DType::Float32, StorageType::Buffer,
                         MemoryLayout::WidthPacked};
    in_bytes_ =
        4.0 * double(s_.float_input ? numel(in) : testing::ref_word_count(s_.in_layout, in));
    out_bytes_ = int8_tensor_out(s_) ? 4.0 * double(testing::ref_word_count(s_.out_layout, out))
                                     : 4.0 * double(numel(out));

    const TensorSpec in_spec =
        s_.float_input ? TensorSpec{sizes_of(in), DType::Float32, StorageType::Buffer,
                                    MemoryLayout::WidthPacked}
                       : TensorSpec{sizes_of(in), DType::Int8x4, StorageType::Buffer, s_.in_layout};
    in_ref_ = g.add_tensor(in_spec, "x");
    out_ref_ = g.add_tensor(out_spec, "y");
    if (s_.residual) {
      residual_.emplace(s_.residual->first, s_.residual->second);
      residual_->draw(stored_, *p_.output, rng);
      p_.residual = residual_->add_input(g, out_spec);
      in_bytes_ += out_bytes_;
    }
    const size_t nodes_before = g.nodes().size();
    const Conv2dRoute taken = ops::add_q8ta_conv2d_node(g, in_ref_, host_.view(), out_ref_, p_);
    // A device with too few storage buffers a stage for the fused add (a device class): the
    // convolution by its own route, then q8ta_add as the last dispatch.
    separate_add_ = s_.residual && ops::residual_add_separately(g.profile());
    if (separate_add_) {
      const std::string last = shaders::shader_info(g.nodes().back().kernel).name;
      VKD_CHECK(last.rfind("q8ta_binary_", 0) == 0 && g.nodes().back().bindings[0] == out_ref_,
                ErrorCode::Internal, "the separate residual add's last dispatch ran ", last);
    } else {
      VKD_CHECK(taken == s_.expected, ErrorCode::Internal, "q8ta_conv2d took route ",
                ops::to_string(taken), ", expected ", ops::to_string(s_.expected));
    }
    check_im2col_form(g, nodes_before);
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937&) override {
    // Words from the test's own packing reference; padding lanes hold the input zero point.
    if (s_.float_input) {
      g.write_float(in_ref_, xf_);
    } else {
      g.write_words(in_ref_,
                    testing::ref_pack(s_.in_layout, input_shape(s_.shape), qx_, s_.input_zp));
    }
    if (residual_) residual_->write(g, s_.out_layout, stored_shape(s_));
    if (s_.reexecute) {
      g.execute();
      first_words_ = g.read_words(out_ref_);
    }
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    // The re-execution's bytes against the first execution's (then both against the reference;
    // the linear kernels write int8 only here).
    if (s_.reexecute) compare_words(g.read_words(out_ref_), first_words_, r);
    const RefShape out = stored_shape(s_);
    if (s_.dequantized) {
      // The unfused q8ta_conv2d -> q8ta_dequantize: the reference's int8 output dequantized
      // with the reference dequantize, compared bit for bit.
      const auto expected =
          testing::reference_dequantize(stored_, p_.output->scale, s_.out.zero_point);
      const auto actual = g.read_float(out_ref_);
      compare_floats(actual, expected, 0.0, r);
      if (r.mismatches)
        report_first_mismatch(actual, expected, 0.0,
                              [&](int64_t i) { return nchw_position(out, i); });
    } else if (s_.int8_out) {
      // The unfused sequence: conv [-> pixel shuffle] [-> add].
      const auto expected = residual_ ? residual_->expected(stored_, *p_.output) : stored_;
      const int32_t zp = residual_ ? residual_->sum_zero_point() : s_.out.zero_point;
      // Every word, padding lanes included (they must hold the output zero point).
      compare_words(g.read_words(out_ref_), testing::ref_pack(s_.out_layout, out, expected, zp), r);
      // (read_int8 unpacks with the runtime's code: used only to name the first difference.)
      if (r.mismatches)
        report_first_mismatch(g.read_int8(out_ref_), expected, 0.0,
                              [&](int64_t i) { return nchw_position(out, i); });
    } else {
      // Same arithmetic in the same order: exact in practice; 1e-5 of the output range allowed.
      const double tolerance = 1e-5 * max_abs(y_);
      const auto actual = g.read_float(out_ref_);
      compare_floats(actual, y_, tolerance, r);
      if (r.mismatches)
        report_first_mismatch(actual, y_, tolerance,
                              [&](int64_t i) { return nchw_position(out, i); });
    }
    return r;
  }
  PerfWork work() const override {
    return {host_.bytes() + in_bytes_ + out_bytes_, 2.0 * macs(s_.shape)};
  }

 private:
  // A forced im2col form as the graph holds it: Implicit one "_im2col_" linear kernel whose
  // binding 1 is the convolution's input, Window one q8ta_conv2d_coopmat kernel reading it too,
  // Explicit q8ta_im2col and then a plain linear kernel.
  void check_im2col_form(const graph::ComputeGraph& g, size_t nodes_before) const {
    if (s_.im2col_form == ops::Im2colForm::Auto) return;
    const size_t added = g.nodes().size() - nodes_before - (separate_add_ ? 1 : 0);
    const std::string first = shaders::shader_info(g.nodes()[nodes_before].kernel).name;
    const bool reads_input = added == 1 && g.nodes()[nodes_before].bindings[1] == in_ref_;
    bool ok = false;
    switch (s_.im2col_form) {
      case ops::Im2colForm::Implicit:
        ok = reads_input && first.find("_im2col_") != std::string::npos;
        break;
      case ops::Im2colForm::Window:
        ok = reads_input && first.rfind("q8ta_conv2d_coopmat_", 0) == 0;
        break;
      default: ok = added == 2 && first.rfind("q8ta_im2col_", 0) == 0;
    }
    VKD_CHECK(ok, ErrorCode::Internal, "the ", ops::to_string(s_.im2col_form), " im2col form took ",
              added, " dispatches, the first ", first);
  }

  ConvSetup s_;
  bool separate_add_ = false;  // the residual added by q8ta_add after the convolution
  double in_bytes_ = 0, out_bytes_ = 0;
  ops::Conv2dParams p_;
  std::vector<int8_t> qx_;
  std::vector<float> xf_;  // float_input: the float32 input qx_ quantizes
  HostConv host_;
  std::vector<float> y_;
  std::vector<int8_t> stored_;        // the expected int8 output of the convolution [shuffled]
  std::vector<int32_t> first_words_;  // reexecute: the output of the first execution
  std::optional<ResidualCase> residual_;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
};

// ---------------------------------------------------------------------------------------
// Names

std::string layout_short(MemoryLayout layout) { return layout == k4W4C ? "4W4C" : "4C1W"; }

// "4W4C->4C1W", "4C1W->float" or "float->4W4C".
std::string layouts_name(const ConvSetup& s) {
  return (s.float_input ? "float" : layout_short(s.in_layout)) + "->" +
         (int8_tensor_out(s) ? layout_short(s.out_layout) : "float");
}

// The harness's layout column: "4W4C -> 4C1W", "4C1W -> buffer/width_packed" or
// "buffer/width_packed -> 4W4C".
std::string layout_column(const ConvSetup& s) {
  return (s.float_input ? "buffer/width_packed" : layout_short(s.in_layout)) + " -> " +
         (int8_tensor_out(s) ? layout_short(s.out_layout) : "buffer/width_packed");
}

// "Direct", or "Auto(Pointwise)": what was asked and, for Auto, what it must resolve to; then
// the linear kernel asked for, "+splitk/S3" (the slices asked for; none = the op's choice).
std::string route_name(const ConvSetup& s) {
  std::string name = ops::to_string(s.route);
  if (s.route == Conv2dRoute::Auto) name += "(" + ops::to_string(s.expected) + ")";
  if (s.gemm != ops::LinearRoute::Auto) name += "+" + ops::to_string(s.gemm);
  if (s.gemm_slices) name += "/S" + std::to_string(s.gemm_slices);
  if (s.coopmat_tile_n) name += "/n" + std::to_string(s.coopmat_tile_n);
  if (s.im2col_form != ops::Im2colForm::Auto) name += "+" + ops::to_string(s.im2col_form);
  return name;
}

// "1x8x9x11->16 k3 s2 p1 d2 g4"; a non-square kernel or stride as "k3x5", asymmetric padding
// as "p0,1,2,0" (top, left, bottom, right); dilation 1 and groups 1 left out.
std::string geometry_name(const ConvShape& s) {
  const ops::Conv2dGeometry& g = s.geo;
  auto pair = [](int64_t a, int64_t b) {
    return a == b ? std::to_string(a) : std::to_string(a) + "x" + std::to_string(b);
  };
  std::string pads = std::to_string(g.pad_top);
  if (!(g.pad_left == g.pad_top && g.pad_bottom == g.pad_top && g.pad_right == g.pad_top)) {
    pads += "," + std::to_string(g.pad_left) + "," + std::to_string(g.pad_bottom) + "," +
            std::to_string(g.pad_right);
  }
  std::string name = shape_string(sizes_of(input_shape(s))) + "->" + std::to_string(s.c_out) +
                     " k" + pair(s.kh, s.kw) + " s" + pair(g.stride_h, g.stride_w) + " p" + pads;
  if (g.dilation_h != 1 || g.dilation_w != 1) name += " d" + pair(g.dilation_h, g.dilation_w);
  if (g.groups != 1) name += " g" + std::to_string(g.groups);
  return name;
}

// " rows2 tw2 rowdots": the depthwise mapping and products asked for ("" when the op chooses).
std::string mapping_name(const ConvSetup& s) {
  using Products = ops::Conv2dParams::DepthwiseProducts;
  return (s.depthwise_rows ? " rows" + std::to_string(s.depthwise_rows) : "") +
         (s.depthwise_tiles_w ? " tw" + std::to_string(s.depthwise_tiles_w) : "") +
         (s.products == Products::LaneMasks ? " masks"
          : s.products == Products::RowDots ? " rowdots"
                                            : "");
}

std::string shape_column(const ConvShape& s) {
  return shape_string(sizes_of(input_shape(s))) + "->" + shape_string(sizes_of(output_shape(s)));
}

// ---------------------------------------------------------------------------------------
// ACCU

// Routes and layouts of one ACCU case: `out` is the int8 output's layout, or float output.
struct Variant {
  Conv2dRoute route;
  MemoryLayout in;
  bool int8_out;
  MemoryLayout out = k4W4C;
  int32_t depthwise_rows = 0;  // 0: the op's choice
  int32_t depthwise_tiles_w = 0;
  ops::LinearRoute gemm = ops::LinearRoute::Auto;       // the linear kernel of Pointwise / Im2col
  int32_t gemm_slices = 0;                              // SplitK's (0: the op's choice)
  ops::Im2colForm im2col_form = ops::Im2colForm::Auto;  // Im2col's (Auto: the op's choice)
  ops::Conv2dParams::DepthwiseProducts products = ops::Conv2dParams::DepthwiseProducts::Auto;
};

// The variant's linear kernel and im2col form into `s`; a split-K ACCU case also runs twice.
void set_gemm(ConvSetup& s, const Variant& v) {
  s.gemm = v.gemm;
  s.gemm_slices = v.gemm_slices;
  s.im2col_form = v.im2col_form;
  s.reexecute = v.gemm == ops::LinearRoute::SplitK;
}

// What the device must offer for a case's forced linear kernel (Case::unavailable): the
// cooperative-matrix kernel, or for the implicit im2col through the GEMM (forced or chosen) a
// GPU GEMM kernel (a CPU device runs its CPU GEMM, which has no implicit form; its GPU-kernel
// passes cover the implicit GEMM through the Auto-form cases).
std::function<std::string(const vk::DeviceProfile&)> case_unavailable(const ConvSetup& s) {
  if (s.gemm == ops::LinearRoute::CoopMat || s.im2col_form == ops::Im2colForm::Window) {
    return ops::linear_coopmat_unavailable;
  }
  if (s.gemm != ops::LinearRoute::SplitK && s.im2col_form == ops::Im2colForm::Implicit) {
    return [](const vk::DeviceProfile& p) {
      return p.cpu_kernels ? std::string("a GPU GEMM kernel (its CPU kernels are on)")
                           : std::string();
    };
  }
  return {};
}

// The four int8 layout pairs, rotated over the shapes so every pair meets every kind of shape.
const std::pair<MemoryLayout, MemoryLayout> kLayoutPairs[] = {
    {k4W4C, k4W4C}, {k4C1W, k4C1W}, {k4W4C, k4C1W}, {k4C1W, k4W4C}};

// General convolutions (Auto takes Direct): kernels 1/3/5/7, strides 1/2, dilation 1/2,
// padding 0/1/2/3 and asymmetric, channel counts on and off multiples of 4, odd spatial sizes,
// grouped (not depthwise) convolutions, batch 2, and the edges (a tap window that fills the
// input exactly; a kernel wider than the unpadded input; a padded 1x1), and non-square
// kernels, strides and dilations.
std::vector<ConvShape> general_shapes() {
  return {
      conv(1, 3, 7, 5, 8, 3, 1, 1),                              // stem-like, C_in 3
      conv(1, 5, 9, 11, 5, 3, 2, 1),                             // C_in == C_out, groups 1
      conv(2, 17, 7, 9, 12, 3, 1, 0, 2),                         // batch 2, dilation 2
      conv(1, 8, 13, 11, 16, 5, 2, 2),                           // k5 s2
      conv(1, 4, 11, 13, 3, 7, 1, 3),                            // k7
      conv(1, 7, 6, 6, 20, 7, 1, 2),                             // k7 wider than the input
      conv(1, 16, 9, 7, 17, 1, 2, 0),                            // 1x1 stride 2
      conv(1, 5, 5, 7, 6, 1, 1, 1),                              // 1x1 padded: bias-only border
      conv(1, 6, 8, 7, 4, 3, 1, 1, 1, 2),                        // groups 2
      conv(1, 10, 7, 9, 15, 3, 2, 1, 1, 5),                      // groups 5, 2 in / 3 out each
      conv(2, 12, 6, 5, 8, 3, 1, 1, 2, 4),                       // groups 4, dilation 2, batch 2
      with_pads(conv(1, 12, 10, 9, 8, 3, 1, 0), 0, 1, 2, 0),     // asymmetric padding
      with_pads(conv(1, 9, 11, 13, 7, 5, 2, 0, 2), 2, 0, 1, 3),  // asymmetric, s2 d2
      conv(2, 3, 5, 7, 5, 5, 1, 2),                              // k5 on 5x7, batch 2
      conv(1, 17, 12, 13, 9, 3, 2, 1, 2),                        // s2 d2
      conv(1, 8, 3, 3, 4, 3, 1, 0),                              // one output pixel
      conv(1, 32, 9, 9, 20, 3, 1, 1),                            // multiples of 4 in, 20 out
      conv(1, 20, 7, 8, 33, 5, 1, 2),                            // 33 outputs
      conv(1, 16, 13, 11, 16, 3, 2, 2),                          // s2 p2
      conv(1, 24, 8, 9, 24, 3, 1, 1, 1, 8),                      // groups 8, 3 per group
      with_pads(rect(1, 6, 9, 11, 10, 3, 5, 1, 2, 2, 1), 2, 2, 2, 2),  // 3x5, s1x2, d2x1
      with_pads(rect(1, 5, 7, 12, 7, 1, 7, 1, 1, 1, 1), 0, 3, 0, 3),   // 1x7 (inception-like)
  };
}

// Depthwise convolutions (groups == C_in == C_out; Auto takes Depthwise).
std::vector<ConvShape> depthwise_shapes() {
  return {
      depthwise(1, 8, 9, 11, 3, 1, 1),
      depthwise(1, 5, 7, 5, 3, 2, 1),
      depthwise(1, 17, 13, 11, 5, 1, 2),
      depthwise(1, 16, 11, 9, 3, 1, 2, 2),
      depthwise(1, 3, 10, 7, 7, 2, 3),
      with_pads(depthwise(1, 12, 8, 9, 3, 1, 0), 0, 1, 2, 0),
      depthwise(2, 4, 6, 7, 3, 1, 0),
      depthwise(1, 1, 7, 7, 3, 1, 1),  // one channel: groups 1 and depthwise
      depthwise(1, 96, 13, 11, 3, 1, 1),
      depthwise(1, 8, 5, 7, 1, 1, 0),  // 1x1 depthwise: not Pointwise (groups 8)
      with_pads(rect(1, 12, 10, 9, 12, 5, 3, 2, 1, 1, 2, 12), 2, 1, 2, 1),  // 5x3, s2x1, d1x2
      // Wide enough for invocations whose window lies inside the image between the border
      // ones, with a partial last tile, and at 2 tiles per invocation a partial last pair (37:
      // 10 tiles; 21 + 2 padding: 6 tiles; 45 at stride 2: 6 tiles).
      depthwise(1, 12, 20, 37, 3, 1, 1),
      depthwise(1, 8, 19, 21, 3, 1, 2),  // padding 2: the output is wider than the input
      depthwise(2, 20, 17, 45, 5, 2, 2),
  };
}

// Whether the depthwise kernel's row dot products fit the shape from a 4W4C input (a kernel row
// of at most 4 widths; Conv2d.cpp: depthwise_row_dots).
bool fits_row_dots(const ConvShape& s) { return (s.kw - 1) * s.geo.dilation_w + 1 <= 4; }

// Depthwise shapes for the row dot products only: a kernel row with gaps (2 taps, dilation 3:
// 4 widths), 4 taps at stride 2, and stride 2 with padding 2 over an odd channel count, each
// wide enough for window tiles of every offset.
std::vector<ConvShape> row_dot_shapes() {
  return {
      with_pads(rect(1, 7, 9, 23, 7, 3, 2, 1, 1, 1, 3, 7), 1, 2, 1, 1),
      with_pads(rect(1, 6, 8, 19, 6, 2, 4, 2, 2, 1, 1, 6), 0, 1, 1, 2),
      depthwise(1, 7, 9, 27, 3, 2, 2),
  };
}

// 1x1 / stride 1 / no padding / groups 1: Auto takes Pointwise for int8 4W4C in and out.
// 1x64x40x40 -> 96 has pixels enough for the GEMM (or cooperative-matrix) kernels on a GPU.
std::vector<ConvShape> pointwise_shapes() {
  return {
      conv(1, 17, 9, 11, 5, 1, 1, 0),   conv(1, 3, 5, 7, 5, 1, 1, 0),
      conv(2, 8, 7, 5, 12, 1, 1, 0),    conv(1, 64, 40, 40, 96, 1, 1, 0),
      conv(2, 33, 20, 17, 70, 1, 1, 0), conv(1, 16, 1, 1, 8, 1, 1, 0),
  };
}

// The im2col route (forced: Auto does not take it), int8 4W4C output only: every groups-1
// general shape, the pointwise shapes, and shapes of its own: wide rows, where the 4W4C
// stride-1 copy of whole input tiles (shaders/q8ta_im2col.glsl) meets every tile offset and
// both borders; at most 4 output pixels, where the GEMM step is the GEMV kernel; more pixels
// than a GEMM workgroup's 128 rows, more channels than its 128, and a deep K.
std::vector<ConvShape> im2col_shapes() {
  std::vector<ConvShape> list;
  for (const ConvShape& s : general_shapes()) {
    if (s.geo.groups == 1) list.push_back(s);
  }
  for (const ConvShape& s : pointwise_shapes()) list.push_back(s);
  for (const ConvShape& s : std::vector<ConvShape>{
           conv(1, 6, 5, 23, 8, 3, 1, 1),                         // wide: tile offsets 3, 0, 1
           conv(1, 5, 7, 21, 9, 3, 1, 2, 2),                      // wide, dilation 2
           with_pads(conv(1, 3, 6, 19, 4, 5, 1, 0), 1, 3, 2, 0),  // wide, asymmetric, k5
           with_pads(rect(1, 7, 11, 9, 5, 1, 3, 2, 1, 1, 2), 0, 2, 1, 1),  // 1x3 s2x1 d1x2
           conv(1, 5, 3, 4, 7, 7, 1, 3),      // k7 p3 on 3x4: mostly pad
           conv(2, 5, 3, 3, 6, 3, 1, 0),      // 2 pixels: GEMV
           conv(1, 17, 4, 4, 9, 3, 2, 1),     // 4 pixels: GEMV
           conv(1, 32, 20, 19, 40, 3, 1, 1),  // 380 pixels: 4 row tiles
           conv(1, 64, 9, 9, 136, 5, 1, 2),   // K 1600, 136 channels
       }) {
    list.push_back(s);
  }
  return list;
}

// One ACCU case. Zero points, output quantization and bias rotate with `index` with coprime
// periods (3, 7, 5), so every route and output type meets each of them; the zero point's
// rotation also advances with the shape, as a shape with three variants would otherwise give
// each variant the same zero point every time.
void add_accu_case(Registry& registry, const ConvShape& shape, const Variant& v, uint32_t index,
                   uint32_t shape_index) {
  ConvSetup s;
  s.shape = shape;
  s.in_layout = v.in;
  s.int8_out = v.int8_out;
  s.out_layout = v.out;
  s.route = v.route;
  s.depthwise_rows = v.depthwise_rows;
  s.depthwise_tiles_w = v.depthwise_tiles_w;
  s.products = v.products;
  set_gemm(s, v);
  s.expected = v.route == Conv2dRoute::Auto ? auto_route(shape, v.in, v.int8_out, v.out) : v.route;
  s.input_zp = kInputZeroPoints[(index + shape_index) % 3];
  s.out = kOutputQuants[index % 7];
  s.bias = (index % 5) % 2 == 0;
  s.seed = 2000 + index;
  std::string name = "q8ta_conv2d " + route_name(s) + " " + geometry_name(shape) + " " +
                     layouts_name(s) + " zpx" + std::to_string(s.input_zp);
  name += s.int8_out ? " zpy" + std::to_string(s.out.zero_point) + " " + s.out.name : "";
  name += s.bias ? " bias" : " nobias";
  name += mapping_name(s);
  // (A forced cooperative-matrix kernel has no fallback path: its fallback pass would lack it.)
  Case c{name,
         "q8ta_conv2d",
         shape_column(shape),
         layout_column(s),
         true,
         false,
         s.gemm != ops::LinearRoute::CoopMat,
         Metric::GOPs,
         [s] { return std::make_unique<Q8taConv2dCase>(s); }};
  c.unavailable = case_unavailable(s);
  registry.add(std::move(c));
}

void register_accu_cases(Registry& registry) {
  uint32_t index = 0;
  uint32_t shape_index = 0;
  // The row dot products (from a 4W4C input), to each output and with each mapping in turn.
  auto add_row_dots_case = [&](const ConvShape& shape, uint32_t k) {
    constexpr int32_t kMappings[][2] = {{1, 1}, {2, 2}, {3, 1}, {1, 2}, {4, 1}};
    Variant v{
        Conv2dRoute::Depthwise, k4W4C, k % 3 != 2, k % 3 == 1 ? k4C1W : k4W4C, kMappings[k % 5][0],
        kMappings[k % 5][1]};
    v.products = ops::Conv2dParams::DepthwiseProducts::RowDots;
    add_accu_case(registry, shape, v, index++, k);
  };
  // Two int8 layout pairs and one float output per shape, all through Auto.
  auto add_rotated = [&](const ConvShape& shape) {
    const auto& [in_a, out_a] = kLayoutPairs[(2 * shape_index) % 4];
    const auto& [in_b, out_b] = kLayoutPairs[(2 * shape_index + 1) % 4];
    add_accu_case(registry, shape, {Conv2dRoute::Auto, in_a, true, out_a}, index++, shape_index);
    add_accu_case(registry, shape, {Conv2dRoute::Auto, in_b, true, out_b}, index++, shape_index);
    add_accu_case(registry, shape, {Conv2dRoute::Auto, shape_index % 2 ? k4C1W : k4W4C, false},
                  index++, shape_index);
  };
  for (const ConvShape& shape : general_shapes()) {
    add_rotated(shape);
    ++shape_index;
  }
  for (const ConvShape& shape : depthwise_shapes()) {
    add_rotated(shape);
    // The general kernel on a depthwise shape.
    const auto& [in, out] = kLayoutPairs[shape_index % 4];
    add_accu_case(registry, shape, {Conv2dRoute::Direct, in, true, out}, index++, shape_index);
    // Several output rows per invocation (each input row loaded once for all of them), with a
    // partial last group where the height is not a multiple, one dot product per tap.
    const int32_t rows = std::array<int32_t, 3>{4, 2, 3}[shape_index % 3];
    Variant rows_variant{Conv2dRoute::Depthwise, in, true, out, rows};
    rows_variant.products = ops::Conv2dParams::DepthwiseProducts::LaneMasks;
    add_accu_case(registry, shape, rows_variant, index++, shape_index);
    if (fits_row_dots(shape)) add_row_dots_case(shape, shape_index);
    // Two tiles along the row per invocation (one or two rows; a partial last pair where the
    // width is not a multiple of 8), from the other layouts, every third shape to a float output.
    // Not for the 7x7 kernel: its fully unrolled 8-width lane-mask body took lavapipe's LLVM
    // over 9 minutes to compile (the fallback path, Mesa's shader cache cold); Auto takes two
    // tiles only from a 4W4C input with at least 2^18 output tiles (Conv2d.cpp:
    // depthwise_mapping).
    const auto& [in2, out2] = kLayoutPairs[(shape_index + 1) % 4];
    if (shape.kh * shape.kw <= 25)
      add_accu_case(registry, shape,
                    {Conv2dRoute::Depthwise, in2, shape_index % 3 != 2, out2,
                     std::array<int32_t, 3>{1, 2, 1}[shape_index % 3], 2},
                    index++, shape_index);
    ++shape_index;
  }
  for (const ConvShape& shape : row_dot_shapes()) {
    add_row_dots_case(shape, shape_index);
    add_row_dots_case(shape, shape_index + 1);
    ++shape_index;
  }
  // A depthwise output of >= 2^20 tiles, where each invocation computes 4 output rows
  // (Conv2d.cpp); 2050 rows leave a partial last group of 2.
  add_accu_case(registry, depthwise(1, 8, 2050, 1025, 3, 1, 1),
                {Conv2dRoute::Auto, k4W4C, true, k4W4C}, index++, shape_index++);
  for (const ConvShape& shape : pointwise_shapes()) {
    // Pointwise twice (other zero points and activations), the same shape through the general
    // kernel (forced, and by Auto for a 4C1W input or a float output).
    add_accu_case(registry, shape, {Conv2dRoute::Auto, k4W4C, true, k4W4C}, index++, shape_index);
    add_accu_case(registry, shape, {Conv2dRoute::Auto, k4W4C, true, k4W4C}, index++, shape_index);
    add_accu_case(registry, shape, {Conv2dRoute::Direct, k4W4C, true, k4W4C}, index++, shape_index);
    add_accu_case(registry, shape, {Conv2dRoute::Auto, k4C1W, true, k4W4C}, index++, shape_index);
    add_accu_case(registry, shape, {Conv2dRoute::Auto, k4W4C, false}, index++, shape_index);
    ++shape_index;
  }
  // Im2col, from either input layout, in the op's form; then each form forced (from the
  // layouts in turn): explicit (q8ta_im2col + the op's linear kernel), implicit through the
  // dot-product GEMM, and on every third shape implicit through cooperative matrices.
  for (const ConvShape& shape : im2col_shapes()) {
    add_accu_case(registry, shape, {Conv2dRoute::Im2col, k4W4C, true, k4W4C}, index++, shape_index);
    add_accu_case(registry, shape, {Conv2dRoute::Im2col, k4C1W, true, k4W4C}, index++, shape_index);
    const MemoryLayout a = shape_index % 2 ? k4C1W : k4W4C, b = shape_index % 2 ? k4W4C : k4C1W;
    Variant v{Conv2dRoute::Im2col, a, true, k4W4C};
    v.im2col_form = ops::Im2colForm::Explicit;
    add_accu_case(registry, shape, v, index++, shape_index);
    v.in = b;
    v.im2col_form = ops::Im2colForm::Implicit;
    v.gemm = ops::LinearRoute::Gemm;
    add_accu_case(registry, shape, v, index++, shape_index);
    if (shape_index % 3 == 0) {
      v.in = a;
      v.gemm = ops::LinearRoute::CoopMat;
      add_accu_case(registry, shape, v, index++, shape_index);
    }
    // The window form (q8ta_conv2d_coopmat) on every shape it fits: a 4W4C input.
    if (shape.geo.stride_w <= 2 && shape.geo.dilation_w <= 2) {
      v.in = k4W4C;
      v.gemm = ops::LinearRoute::CoopMat;
      v.im2col_form = ops::Im2colForm::Window;
      add_accu_case(registry, shape, v, index++, shape_index);
    }
    ++shape_index;
  }
  // The window form where its tiles and chunks repeat: several 64-pixel segments per row (the
  // last one partly past the padded width), two channel chunks of 16 words (the second one
  // short), two 64-channel blocks, stride 2, two tap groups (k5), batch 2.
  for (const ConvShape& shape :
       {conv(1, 72, 6, 70, 70, 3, 1, 1), conv(2, 20, 7, 131, 24, 3, 2, 1),
        conv(1, 40, 5, 67, 68, 5, 1, 2), conv(1, 64, 9, 130, 64, 3, 1, 1, 2)}) {
    Variant v{Conv2dRoute::Im2col, k4W4C, true, k4W4C};
    v.gemm = ops::LinearRoute::CoopMat;
    v.im2col_form = ops::Im2colForm::Window;
    add_accu_case(registry, shape, v, index++, shape_index++);
  }
  // The split-K linear kernel (forced; Auto takes it on GPUs only) under Pointwise (K 300: 10
  // stages of 32) and Im2col (K 288 and 1600: 9 and 50 stages; the op's form, implicit, and the
  // explicit form forced), slices that do and do not divide the stages, and the op's choice (0).
  struct SplitK {
    ConvShape shape;
    Conv2dRoute route;
    MemoryLayout in;
    int32_t slices;
    ops::Im2colForm form = ops::Im2colForm::Auto;
  };
  constexpr auto kExplicit = ops::Im2colForm::Explicit;
  for (const SplitK& k :
       {SplitK{conv(1, 300, 7, 7, 40, 1, 1, 0), Conv2dRoute::Auto, k4W4C, 3},
        SplitK{conv(1, 300, 7, 7, 40, 1, 1, 0), Conv2dRoute::Auto, k4W4C, 10},
        SplitK{conv(1, 32, 7, 7, 40, 3, 1, 1), Conv2dRoute::Im2col, k4C1W, 4},
        SplitK{conv(1, 32, 7, 7, 40, 3, 1, 1), Conv2dRoute::Im2col, k4W4C, 0},
        SplitK{conv(1, 32, 7, 7, 40, 3, 1, 1), Conv2dRoute::Im2col, k4W4C, 4, kExplicit},
        SplitK{conv(1, 64, 9, 9, 136, 5, 1, 2), Conv2dRoute::Im2col, k4W4C, 7},
        SplitK{conv(1, 64, 9, 9, 136, 5, 1, 2), Conv2dRoute::Im2col, k4C1W, 0, kExplicit}}) {
    Variant v{k.route, k.in, true, k4W4C};
    v.gemm = ops::LinearRoute::SplitK;
    v.gemm_slices = k.slices;
    v.im2col_form = k.form;
    add_accu_case(registry, k.shape, v, index++, shape_index++);
  }
}

// ---------------------------------------------------------------------------------------
// PERF

struct PerfShape {
  ConvShape shape;
  const char* model;        // where the layer comes from, appended to the case name
  double reference_us = 0;  // the reference backend's H100 µs (EtvkShapes.h), 0: none
};

// The reference backend's PERF shapes (EtvkShapes.h: its pointwise, general and depthwise
// tests), each with its H100 latency.
std::vector<PerfShape> etvk_shapes() {
  std::vector<PerfShape> list;
  for (const etvk::ConvShape& e : etvk::kConv) {
    list.push_back(
        {conv(1, e.c_in, e.h, e.w, e.c_out, e.k, e.s, e.p, e.d, e.g), "", e.reference_us});
  }
  return list;
}

// MobileNetV2 at 224x224: the stem and the distinct depthwise / pointwise layers of its
// inverted residual blocks (expansion 6; 3x3 depthwise with padding 1).
std::vector<PerfShape> mobilenet_v2_shapes() {
  const char* m = "mobilenet_v2";
  return {
      {conv(1, 3, 224, 224, 32, 3, 2, 1), m},    // stem
      {depthwise(1, 32, 112, 112, 3, 1, 1), m},  // block 1 (expansion 1)
      {conv(1, 32, 112, 112, 16, 1, 1, 0), m},
      {conv(1, 16, 112, 112, 96, 1, 1, 0), m},   // block 2 expands
      {depthwise(1, 96, 112, 112, 3, 2, 1), m},  // ... and strides to 56
      {conv(1, 96, 56, 56, 24, 1, 1, 0), m},
      {conv(1, 24, 56, 56, 144, 1, 1, 0), m},
      {depthwise(1, 144, 56, 56, 3, 1, 1), m},
      {depthwise(1, 192, 28, 28, 3, 2, 1), m},
      {conv(1, 64, 14, 14, 384, 1, 1, 0), m},
      {depthwise(1, 384, 14, 14, 3, 1, 1), m},
      {conv(1, 960, 7, 7, 160, 1, 1, 0), m},
      {conv(1, 320, 7, 7, 1280, 1, 1, 0), m},  // last 1x1
  };
}

// A RefineNet-style head on a 256x144 input: a strided stem, then an inverted residual block.
std::vector<PerfShape> refinenet_shapes() {
  const char* m = "refinenet";
  return {
      {conv(1, 3, 256, 144, 24, 3, 2, 1), m},
      {conv(1, 24, 128, 72, 96, 1, 1, 0), m},
      {depthwise(1, 96, 128, 72, 3, 1, 1), m},
      {conv(1, 96, 128, 72, 24, 1, 1, 0), m},
      // refinenet_lite's strided depthwise layers
      {depthwise(1, 96, 128, 72, 3, 2, 1), m},
      {depthwise(1, 96, 64, 36, 3, 2, 1), m},
      {depthwise(1, 96, 32, 18, 3, 2, 1), m},
  };
}

// ResNet-18's 3x3 stride-1 convolutions of each stage.
std::vector<PerfShape> resnet18_shapes() {
  const char* m = "resnet18";
  return {{conv(1, 64, 56, 56, 64, 3, 1, 1), m},
          {conv(1, 128, 28, 28, 128, 3, 1, 1), m},
          {conv(1, 256, 14, 14, 256, 3, 1, 1), m},
          {conv(1, 512, 7, 7, 512, 3, 1, 1), m}};
}

// The two target shapes.
std::vector<PerfShape> target_shapes() {
  return {{conv(1, 64, 256, 256, 256, 1, 1, 0), "target"},
          {depthwise(1, 96, 1024, 1024, 3, 1, 1), "target"}};
}

// How one PERF case runs its layer: layouts, route, and the depthwise mapping (0: the op's).
struct PerfVariant {
  MemoryLayout in = k4W4C, out = k4W4C;
  Conv2dRoute route = Conv2dRoute::Auto;
  int32_t depthwise_rows = 0, depthwise_tiles_w = 0;
  ops::LinearRoute gemm = ops::LinearRoute::Auto;
  int32_t gemm_slices = 0;
  ops::Im2colForm im2col_form = ops::Im2colForm::Auto;
  int32_t upscale = 1;         // the output pixel-shuffled (q8ta_conv2d_ps)
  bool float_input = false;    // q8ta_conv2d_fq: a float32 NCHW input quantized on load
  int32_t coopmat_tile_n = 0;  // the CoopMat kernel's tile channels (0: the op's choice)
  ops::Conv2dParams::DepthwiseProducts products = ops::Conv2dParams::DepthwiseProducts::Auto;
};

// "perf/q8ta_conv2d <route> <geometry> <layouts>[ rowsR][ twT] <model>", or for the reference
// backend's shapes "etvk/q8ta_conv2d ..." without the model (runs once per name).
void add_perf_case(Registry& registry, std::set<std::string>& names, const PerfShape& p,
                   const PerfVariant& v = {}) {
  ConvSetup s;
  s.depthwise_rows = v.depthwise_rows;
  s.depthwise_tiles_w = v.depthwise_tiles_w;
  s.products = v.products;
  s.gemm = v.gemm;
  s.gemm_slices = v.gemm_slices;
  s.im2col_form = v.im2col_form;
  s.upscale = v.upscale;
  s.coopmat_tile_n = v.coopmat_tile_n;
  s.shape = p.shape;
  s.in_layout = v.in;
  s.out_layout = v.out;
  s.route = v.route;
  s.expected = v.route == Conv2dRoute::Auto ? auto_route(p.shape, v.in, true, v.out) : v.route;
  s.input_zp = -2;
  if (v.float_input) s.float_input = std::pair<int32_t, int32_t>{-128, 127};
  s.out = {"none", -1, -128, 127};
  s.accu = false;
  s.seed = 7;
  const bool etvk = p.reference_us > 0;
  const std::string name = std::string(etvk ? "etvk/" : "perf/") +
                           (s.upscale > 1   ? "q8ta_conv2d_ps r" + std::to_string(s.upscale)
                            : v.float_input ? std::string("q8ta_conv2d_fq")
                                            : std::string("q8ta_conv2d")) +
                           " " + route_name(s) + " " + geometry_name(p.shape) + " " +
                           layouts_name(s) + mapping_name(s);
  if (!names.insert(name).second) return;  // a layer several suites share runs once
  // Depthwise layers do 9-25 multiply-adds per output byte: memory-bound, rated in GB/s.
  const Metric metric = is_depthwise(p.shape) ? Metric::GBps : Metric::GOPs;
  Case c{etvk ? name : name + " " + p.model,
         "q8ta_conv2d",
         shape_column(p.shape),
         layout_column(s),
         false,
         true,
         false,
         metric,
         [s] { return std::make_unique<Q8taConv2dCase>(s); }};
  c.reference_us = p.reference_us;
  c.unavailable = case_unavailable(s);
  registry.add(std::move(c));
}

void register_deconv_perf_cases(Registry& registry, std::set<std::string>& names);

// Depthwise mappings timed on the depthwise shapes: rows, tiles along the row (Auto takes one
// of 1 x 1, 1 x 2, 2 x 2; Conv2d.cpp's depthwise_mapping).
constexpr int32_t kDepthwiseMappings[][2] = {{1, 1}, {2, 1}, {1, 2}, {4, 1}, {2, 2}};
// And each kind of products (Auto takes one of them; Conv2d.cpp's depthwise_row_dots).
constexpr ops::Conv2dParams::DepthwiseProducts kDepthwiseProducts[] = {
    ops::Conv2dParams::DepthwiseProducts::LaneMasks, ops::Conv2dParams::DepthwiseProducts::RowDots};

// The reference backend's shapes: each in 4W4C through Auto (what a model gets), the general
// and depthwise ones also in 4C1W (the reference's direct-conv layout), the general ones with
// groups 1 also through the route Auto does not take (the measurement behind Conv2d.cpp's
// prefer_im2col: "direct" next to "auto(im2col)", or "im2col" next to "auto(direct)"), and the
// depthwise ones with each mapping of rows x tiles per invocation.
void register_etvk_perf_cases(Registry& registry, std::set<std::string>& names) {
  for (const PerfShape& p : etvk_shapes()) {
    add_perf_case(registry, names, p);
    const Conv2dRoute chosen = auto_route(p.shape, k4W4C, true, k4W4C);
    if (chosen != Conv2dRoute::Pointwise) add_perf_case(registry, names, p, {k4C1W, k4C1W});
    if (chosen == Conv2dRoute::Im2col) {
      add_perf_case(registry, names, p, {k4W4C, k4W4C, Conv2dRoute::Direct});
    } else if (chosen == Conv2dRoute::Direct && p.shape.geo.groups == 1) {
      add_perf_case(registry, names, p, {k4W4C, k4W4C, Conv2dRoute::Im2col});
    }
    if (chosen != Conv2dRoute::Depthwise) continue;
    for (const auto& m : kDepthwiseMappings) {
      for (const auto products : kDepthwiseProducts) {
        PerfVariant v{k4W4C, k4W4C, Conv2dRoute::Depthwise, m[0], m[1]};
        v.products = products;
        add_perf_case(registry, names, p, v);
      }
    }
  }
}

// Few output tiles and a long K (the split-K route's shapes, Linear.cpp: use_split_k): the
// reference backend's 3x3 512x7x7 (resnet18's last stage) and 1x1 s2 1024x14x14 -> 2048, and
// mobilenet_v2's last pointwise layers, each through every linear kernel: the dot-product GEMM,
// cooperative matrices, and split-K with the op's slices and 8, 16, 32 (where K has the stages).
void register_split_k_perf_cases(Registry& registry, std::set<std::string>& names) {
  std::vector<PerfShape> shapes;
  for (const PerfShape& p : etvk_shapes()) {
    const ConvShape& c = p.shape;
    if ((c.c_in == 512 && c.h == 7 && c.kh == 3) || (c.c_in == 1024 && c.h == 14 && c.kh == 1)) {
      shapes.push_back(p);
    }
  }
  for (const PerfShape& p : mobilenet_v2_shapes()) {
    if (p.shape.h == 7 && p.shape.kh == 1) shapes.push_back(p);
  }
  for (const PerfShape& p : shapes) {
    const Conv2dRoute route = auto_route(p.shape, k4W4C, true, k4W4C);
    const int64_t k = p.shape.kh * p.shape.kw * 4 * ((p.shape.c_in + 3) / 4);
    PerfVariant v{k4W4C, k4W4C, route};
    for (ops::LinearRoute gemm : {ops::LinearRoute::Gemm, ops::LinearRoute::CoopMat}) {
      v.gemm = gemm;
      add_perf_case(registry, names, p, v);
    }
    v.gemm = ops::LinearRoute::SplitK;
    for (int32_t slices : {0, 8, 16, 32}) {
      v.gemm_slices = slices;
      if (32 * slices <= k) add_perf_case(registry, names, p, v);
    }
  }
}

// The im2col route's two forms on the same shapes (Conv2d.cpp: prefer_implicit_im2col): the
// reference backend's general groups-1 shapes that Auto runs through im2col, ResNet-18's 3x3
// layers and refinenet_lite's two 3x3 upsampling convolutions (pixel-shuffled by 2), each
// explicit (q8ta_im2col + the linear kernel) and implicit (gathered in the kernel's loads),
// through the linear kernel the op chooses, and the window form (q8ta_conv2d_coopmat).
void register_im2col_form_perf_cases(Registry& registry, std::set<std::string>& names) {
  std::vector<std::pair<PerfShape, int32_t>> shapes;  // with the upscale factor
  for (const PerfShape& p : etvk_shapes()) {
    if (auto_route(p.shape, k4W4C, true, k4W4C) == Conv2dRoute::Im2col) shapes.push_back({p, 1});
  }
  for (const PerfShape& p : resnet18_shapes()) shapes.push_back({p, 1});
  for (const ConvShape& c : {conv(1, 24, 16, 9, 96, 3, 1, 1), conv(1, 24, 32, 18, 96, 3, 1, 1)}) {
    shapes.push_back({{c, "refinenet_lite"}, 2});
  }
  for (const auto& [p, upscale] : shapes) {
    for (const ops::Im2colForm form :
         {ops::Im2colForm::Explicit, ops::Im2colForm::Implicit, ops::Im2colForm::Window}) {
      PerfVariant v{k4W4C, k4W4C, Conv2dRoute::Im2col};
      v.im2col_form = form;
      if (form == ops::Im2colForm::Window) v.gemm = ops::LinearRoute::CoopMat;
      v.upscale = upscale;
      add_perf_case(registry, names, p, v);
    }
    // refinenet_lite's small upsampling convolutions also through the direct kernel (one
    // dispatch, no GEMM).
    if (upscale > 1) {
      PerfVariant v{k4W4C, k4W4C, Conv2dRoute::Direct};
      v.upscale = upscale;
      add_perf_case(registry, names, p, v);
    }
  }
}

// refinenet_lite's 1x1 upsampling convolutions (up3, up4: 24 -> 96), pixel-shuffled by 2 as in
// the model and plain, through the op's linear kernel, the cooperative-matrix kernel's two
// tiles and the direct kernel.
void register_pointwise_shuffle_perf_cases(Registry& registry, std::set<std::string>& names) {
  for (const ConvShape& c : {conv(1, 24, 64, 36, 96, 1, 1, 0), conv(1, 24, 128, 72, 96, 1, 1, 0)}) {
    for (const int32_t tile_n : {0, 32, 128}) {
      for (const int32_t upscale : {1, 2}) {
        PerfVariant v{k4W4C, k4W4C, Conv2dRoute::Auto};
        v.upscale = upscale;
        v.coopmat_tile_n = tile_n;
        if (tile_n) v.gemm = ops::LinearRoute::CoopMat;
        add_perf_case(registry, names, {c, "refinenet_lite"}, v);
      }
    }
    // And through the direct kernel (one output tile of 4 widths x 4 channels per invocation).
    for (const int32_t upscale : {1, 2}) {
      PerfVariant v{k4W4C, k4W4C, Conv2dRoute::Direct};
      v.upscale = upscale;
      add_perf_case(registry, names, {c, "refinenet_lite"}, v);
    }
  }
  // 1x1 convolutions of a short K (C_in 8..64), the op's route and the direct kernel.
  for (const ConvShape& c : {conv(1, 8, 56, 56, 48, 1, 1, 0), conv(1, 16, 112, 112, 96, 1, 1, 0),
                             conv(1, 16, 56, 56, 96, 1, 1, 0), conv(1, 24, 56, 56, 144, 1, 1, 0),
                             conv(1, 32, 28, 28, 192, 1, 1, 0), conv(1, 32, 56, 56, 96, 1, 1, 0),
                             conv(1, 48, 56, 56, 96, 1, 1, 0), conv(1, 64, 56, 56, 96, 1, 1, 0),
                             conv(1, 48, 256, 256, 22, 1, 1, 0)}) {
    for (const Conv2dRoute route : {Conv2dRoute::Pointwise, Conv2dRoute::Direct}) {
      add_perf_case(registry, names, {c, "short-K"}, PerfVariant{k4W4C, k4W4C, route});
    }
  }
}

void register_perf_cases(Registry& registry) {
  std::set<std::string> names;
  register_pointwise_shuffle_perf_cases(registry, names);
  register_etvk_perf_cases(registry, names);
  register_split_k_perf_cases(registry, names);
  register_im2col_form_perf_cases(registry, names);
  register_deconv_perf_cases(registry, names);
  // Network layers and pointwise layers in 4W4C in and out: the layout a chain of pointwise
  // (Pointwise route) and depthwise layers keeps without conversions.
  for (const auto& list :
       {mobilenet_v2_shapes(), refinenet_shapes(), resnet18_shapes(), target_shapes()}) {
    for (const PerfShape& p : list) {
      add_perf_case(registry, names, p);
      // Depthwise layers also with each kind of products and the op's mapping.
      if (!is_depthwise(p.shape)) continue;
      for (const auto products : kDepthwiseProducts) {
        PerfVariant v{k4W4C, k4W4C, Conv2dRoute::Depthwise};
        v.products = products;
        add_perf_case(registry, names, p, v);
      }
    }
  }
  // The depthwise target with each output-row count per invocation (Auto's choice is 2 rows x
  // 2 tiles), and in 4C1W.
  for (const int32_t rows : {1, 2, 4}) {
    for (const auto products : kDepthwiseProducts) {
      PerfVariant v{k4W4C, k4W4C, Conv2dRoute::Auto, rows};
      v.products = products;
      add_perf_case(registry, names, target_shapes()[1], v);
    }
  }
  add_perf_case(registry, names, target_shapes()[1], {k4C1W, k4C1W});
  // The stems of refinenet_lite and mobilenet_v2 reading the float input (q8ta_conv2d_fq).
  for (const PerfShape& p : {refinenet_shapes()[0], mobilenet_v2_shapes()[0]}) {
    PerfVariant v;
    v.float_input = true;
    add_perf_case(registry, names, p, v);
  }
  // ResNet-18's layers also through the direct kernel (Auto takes im2col).
  for (const PerfShape& p : resnet18_shapes()) {
    add_perf_case(registry, names, p, {k4W4C, k4W4C, Conv2dRoute::Direct});
  }
}

// ---------------------------------------------------------------------------------------
// q8ta_conv_transpose2d

// One transposed convolution: input sizes, C_out, kernel and geometry.
struct DeconvShape {
  int64_t n, c_in, h, w, c_out, kh, kw;
  ops::ConvTranspose2dGeometry geo;
};

// Square kernel, stride, padding, output padding and dilation.
DeconvShape deconv(int64_t n, int64_t c_in, int64_t h, int64_t w, int64_t c_out, int64_t k,
                   int32_t stride, int32_t pad, int32_t output_pad = 0, int32_t dilation = 1,
                   int32_t groups = 1) {
  ops::ConvTranspose2dGeometry g;
  g.stride_h = g.stride_w = stride;
  g.pad_h = g.pad_w = pad;
  g.output_pad_h = g.output_pad_w = output_pad;
  g.dilation_h = g.dilation_w = dilation;
  g.groups = groups;
  return {n, c_in, h, w, c_out, k, k, g};
}

testing::RefConvTranspose2d ref_deconv(const DeconvShape& s) {
  testing::RefConvTranspose2d c;
  c.n = s.n;
  c.c_in = s.c_in;
  c.h = s.h;
  c.w = s.w;
  c.c_out = s.c_out;
  c.kh = s.kh;
  c.kw = s.kw;
  c.stride_h = s.geo.stride_h;
  c.stride_w = s.geo.stride_w;
  c.pad_h = s.geo.pad_h;
  c.pad_w = s.geo.pad_w;
  c.output_pad_h = s.geo.output_pad_h;
  c.output_pad_w = s.geo.output_pad_w;
  c.dilation_h = s.geo.dilation_h;
  c.dilation_w = s.geo.dilation_w;
  c.groups = s.geo.groups;
  return c;
}

RefShape output_shape(const DeconvShape& s) {
  const testing::RefConvTranspose2d c = ref_deconv(s);
  return {s.n, s.c_out, testing::reference_conv_transpose_out_h(c),
          testing::reference_conv_transpose_out_w(c)};
}

// The convolution whose weights the case draws: same channels, kernel and groups.
ConvShape weight_shape(const DeconvShape& s) {
  return rect(s.n, s.c_in, s.h, s.w, s.c_out, s.kh, s.kw, 1, 1, 1, 1, s.geo.groups);
}

// Multiply-adds: every input pixel times its group's output channels and the kernel taps.
double macs(const DeconvShape& s) {
  return double(s.n * s.c_in * s.h * s.w) * double(s.c_out / s.geo.groups) * double(s.kh * s.kw);
}

// The phase convolution runtime/ops/ConvTranspose2d.h describes (stride 1, T = dilation *
// (K - 1) / stride + 1 taps padded T - 1 before, groups * stride_h * stride_w * (C_out /
// groups rounded up to 4) channels, rows up to the last output's coarse row), so a case can
// name the route q8ta_conv2d's Auto must take on it.
ConvShape phase_conv(const DeconvShape& s) {
  const ops::ConvTranspose2dGeometry& g = s.geo;
  auto taps = [](int64_t k, int64_t st, int64_t d) { return d * (k - 1) / st + 1; };
  auto rows = [](int64_t in, int64_t out, int64_t st, int64_t pad) {
    return std::max(in, (out - 1 + pad) / st + 1);
  };
  const RefShape o = output_shape(s);
  const int64_t th = taps(s.kh, g.stride_h, g.dilation_h),
                tw = taps(s.kw, g.stride_w, g.dilation_w);
  const int64_t channels = g.groups * g.stride_h * g.stride_w * ((s.c_out / g.groups + 3) / 4 * 4);
  ConvShape z = rect(s.n, s.c_in, s.h, s.w, channels, th, tw, 1, 1, 1, 1, g.groups);
  z.geo.pad_top = int32_t(th - 1);
  z.geo.pad_left = int32_t(tw - 1);
  z.geo.pad_bottom = int32_t(rows(s.h, o.h, g.stride_h, g.pad_h) - s.h);
  z.geo.pad_right = int32_t(rows(s.w, o.w, g.stride_w, g.pad_w) - s.w);
  return z;
}

struct DeconvSetup {
  DeconvShape shape;
  MemoryLayout in_layout = k4W4C, out_layout = k4W4C;
  Conv2dRoute route = Conv2dRoute::Auto;  // of the phase convolution, asked for
  Conv2dRoute expected = Conv2dRoute::Direct;
  ops::LinearRoute gemm = ops::LinearRoute::Auto;
  int32_t input_zp = 0;
  OutputQuant out{"none", 0, -128, 127};
  bool bias = true;
  bool accu = true;
  uint32_t seed = 0;
};

class Q8taConvTranspose2dCase : public CaseInstance {
 public:
  explicit Q8taConvTranspose2dCase(DeconvSetup s) : s_(std::move(s)) {}

  void build(graph::ComputeGraph& g) override {
    const DeconvShape& shape = s_.shape;
    VKD_CHECK(s_.accu || !g.profile().is_cpu() || 2.0 * macs(shape) <= kCpuMaxOps,
              ErrorCode::Unsupported, "layer too large for a CPU device");
    const RefShape in{shape.n, shape.c_in, shape.h, shape.w}, out = output_shape(shape);
    std::mt19937 rng(s_.seed);
    qx_ = random_int8(numel(in), -128, 127, rng);
    // An output sums C_in / groups channels of about KH * KW / stride^2 taps.
    const float taps = float(shape.kh * shape.kw) / float(shape.geo.stride_h * shape.geo.stride_w);
    const float typical_acc =
        kTypicalProduct * std::sqrt(std::max(1.0f, float(shape.c_in / shape.geo.groups) * taps));
    host_ = random_conv_weights(weight_shape(shape), s_.bias, typical_acc, rng);

    p_.input = {kInputScale, s_.input_zp, -128, 127};
    p_.geometry = shape.geo;
    p_.route = s_.route;
    p_.gemm = s_.gemm;
    if (s_.accu) {
      y_ = testing::reference_q8ta_conv_transpose2d(
          qx_, host_.weight, ref_deconv(shape), kInputScale, s_.input_zp, host_.scales, host_.bias);
    }
    p_.output = {case_output_scale(s_.accu, y_, s_.out.zero_point, typical_acc), s_.out.zero_point,
                 -128, 127};
    p_.activation_min = s_.out.act_min;
    p_.activation_max = s_.out.act_max;
    in_bytes_ = 4.0 * double(testing::ref_word_count(s_.in_layout, in));
    out_bytes_ = 4.0 * double(testing::ref_word_count(s_.out_layout, out));

    in_ref_ = g.add_tensor({sizes_of(in), DType::Int8x4, StorageType::Buffer, s_.in_layout}, "x");
    out_ref_ =
        g.add_tensor({sizes_of(out), DType::Int8x4, StorageType::Buffer, s_.out_layout}, "y");
    const Conv2dRoute taken =
        ops::add_q8ta_conv_transpose2d_node(g, in_ref_, host_.view(), out_ref_, p_);
    VKD_CHECK(taken == s_.expected, ErrorCode::Internal,
              "q8ta_conv_transpose2d's phase "
              "convolution took route ",
              ops::to_string(taken), ", expected ", ops::to_string(s_.expected));
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937&) override {
    const RefShape in{s_.shape.n, s_.shape.c_in, s_.shape.h, s_.shape.w};
    g.write_words(in_ref_, testing::ref_pack(s_.in_layout, in, qx_, s_.input_zp));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    const RefShape out = output_shape(s_.shape);
    const auto expected = testing::reference_quantize(y_, p_.output.scale, s_.out.zero_point,
                                                      s_.out.act_min, s_.out.act_max);
    // Every word, padding lanes included (they must hold the output zero point).
    compare_words(g.read_words(out_ref_),
                  testing::ref_pack(s_.out_layout, out, expected, s_.out.zero_point), r);
    if (r.mismatches)
      report_first_mismatch(g.read_int8(out_ref_), expected, 0.0,
                            [&](int64_t i) { return nchw_position(out, i); });
    return r;
  }
  PerfWork work() const override {
    return {host_.bytes() + in_bytes_ + out_bytes_, 2.0 * macs(s_.shape)};
  }

 private:
  DeconvSetup s_;
  double in_bytes_ = 0, out_bytes_ = 0;
  ops::ConvTranspose2dParams p_;
  std::vector<int8_t> qx_;
  HostConv host_;
  std::vector<float> y_;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
};

// "1x8x5x7->5 k3 s2 p1 op1 d2 g2" (non-square parts as "AxB").
std::string geometry_name(const DeconvShape& s) {
  const ops::ConvTranspose2dGeometry& g = s.geo;
  auto pair = [](int64_t a, int64_t b) {
    return a == b ? std::to_string(a) : std::to_string(a) + "x" + std::to_string(b);
  };
  std::string name = shape_string({s.n, s.c_in, s.h, s.w}) + "->" + std::to_string(s.c_out) + " k" +
                     pair(s.kh, s.kw) + " s" + pair(g.stride_h, g.stride_w) + " p" +
                     pair(g.pad_h, g.pad_w);
  if (g.output_pad_h || g.output_pad_w) name += " op" + pair(g.output_pad_h, g.output_pad_w);
  if (g.dilation_h != 1 || g.dilation_w != 1) name += " d" + pair(g.dilation_h, g.dilation_w);
  if (g.groups != 1) name += " g" + std::to_string(g.groups);
  return name;
}

void add_deconv_case(Registry& registry, const DeconvSetup& s, const std::string& prefix) {
  std::string name = prefix + "q8ta_conv_transpose2d " +
                     (s.route == Conv2dRoute::Auto ? "auto(" + ops::to_string(s.expected) + ")"
                                                   : ops::to_string(s.route)) +
                     (s.gemm == ops::LinearRoute::Auto ? "" : "+" + ops::to_string(s.gemm)) + " " +
                     geometry_name(s.shape) + " " + layout_short(s.in_layout) + "->" +
                     layout_short(s.out_layout);
  if (s.accu) {
    name += " zpx" + std::to_string(s.input_zp) + " zpy" + std::to_string(s.out.zero_point) + " " +
            s.out.name + (s.bias ? " bias" : " nobias");
  }
  const RefShape o = output_shape(s.shape);
  Case c{name, "q8ta_conv_transpose2d",
         shape_string({s.shape.n, s.shape.c_in, s.shape.h, s.shape.w}) + "->" +
             shape_string(sizes_of(o)),
         layout_short(s.in_layout) + " -> " + layout_short(s.out_layout), s.accu, !s.accu,
         // The fallback run switches subgroup arithmetic off, which the cooperative matrices need.
         s.accu && s.gemm != ops::LinearRoute::CoopMat, Metric::GOPs,
         [s] { return std::make_unique<Q8taConvTranspose2dCase>(s); }};
  if (s.gemm == ops::LinearRoute::CoopMat) {
    c.unavailable = ops::linear_coopmat_unavailable;
    c.peak = "peak/int8_coopmat";
  }
  registry.add(std::move(c));
}

// Kernels 1-4, strides 1-3 and non-square ones, output padding, dilation (with a stride phase
// that no tap reaches), padding beyond the kernel's reach, groups with whole-word and byte-wise
// channel groups, depthwise, odd channel counts, batch 2, and shapes for each route of the phase
// convolution: Pointwise (kernel == stride, no padding), GEMV (at most 4 image rows), Im2col
// (>= 64 products), Direct.
std::vector<DeconvShape> deconv_shapes() {
  DeconvShape rect_shape = deconv(1, 6, 5, 6, 8, 3, 2, 1, 1, 1);
  rect_shape.kw = 2;
  rect_shape.geo.stride_w = 1;
  rect_shape.geo.pad_w = 0;
  rect_shape.geo.output_pad_w = 0;
  rect_shape.geo.dilation_w = 2;
  return {
      deconv(1, 8, 5, 7, 5, 2, 2, 0),            // k2 s2: the phase convolution is 1x1
      deconv(1, 7, 6, 5, 6, 3, 2, 1, 1),         // the U-Net's k3 s2 p1 op1
      deconv(2, 16, 4, 5, 12, 4, 2, 1),          // k4 s2 p1, batch 2
      deconv(1, 5, 7, 6, 9, 3, 1, 1),            // stride 1: a flipped convolution
      deconv(1, 6, 4, 4, 7, 3, 3, 0, 2),         // s3, output padding 2
      rect_shape,                                // 3x2, s2x1, p1x0, op1x0, d1x2
      deconv(1, 8, 5, 5, 6, 3, 2, 1, 1, 1, 2),   // groups 2 of 3 outputs: bytes
      deconv(1, 8, 4, 5, 16, 2, 2, 0, 0, 1, 4),  // groups 4 of 4 outputs: words
      deconv(1, 6, 5, 6, 6, 3, 2, 1, 1, 1, 6),   // depthwise
      deconv(1, 5, 5, 5, 4, 3, 2, 0, 1, 2),      // d2 s2: phase 1 has no tap
      deconv(1, 4, 6, 5, 5, 3, 2, 2),            // padding 2 > the kernel's reach per phase
      deconv(1, 32, 6, 7, 20, 3, 2, 1, 1),       // 128 products: Im2col
      deconv(1, 16, 1, 3, 8, 2, 2, 0),           // one image row: GEMV
      deconv(1, 6, 4, 5, 7, 1, 2, 0, 1),         // 1x1 s2 op1
      deconv(1, 12, 5, 4, 33, 2, 2, 0),          // 33 outputs
  };
}

void register_deconv_accu_cases(Registry& registry) {
  uint32_t index = 0;
  for (const DeconvShape& shape : deconv_shapes()) {
    const ConvShape z = phase_conv(shape);
    const bool groups_1 = shape.geo.groups == 1;
    std::vector<DeconvSetup> setups;
    for (int v = 0; v < 2; ++v) {  // Auto, two rotating layout pairs
      DeconvSetup s;
      std::tie(s.in_layout, s.out_layout) = kLayoutPairs[(2 * index + v) % 4];
      s.expected = auto_route(z, s.in_layout, true, k4W4C);
      setups.push_back(s);
    }
    DeconvSetup direct;
    direct.route = direct.expected = Conv2dRoute::Direct;
    direct.out_layout = k4C1W;
    setups.push_back(direct);
    if (groups_1) {
      DeconvSetup im2col;
      im2col.route = im2col.expected = Conv2dRoute::Im2col;
      im2col.in_layout = k4C1W;
      setups.push_back(im2col);
      im2col.gemm = ops::LinearRoute::CoopMat;  // NOT RUN where the device lacks it
      setups.push_back(im2col);
    }
    for (DeconvSetup& s : setups) {
      s.shape = shape;
      s.input_zp = kInputZeroPoints[index % 3];
      s.out = kOutputQuants[index % 7];
      s.bias = (index % 5) % 2 == 0;
      s.seed = 5000 + index++;
      add_deconv_case(registry, s, "");
    }
  }
}

// U-Net decoder layers, each with its twin q8ta_conv2d of the same multiply-adds: the
// convolution whose transpose it is (input and output swapped, same kernel, stride, padding).
void register_deconv_perf_cases(Registry& registry, std::set<std::string>& names) {
  const std::pair<DeconvShape, ConvShape> pairs[] = {
      {deconv(1, 128, 64, 64, 64, 2, 2, 0), conv(1, 64, 128, 128, 128, 2, 2, 0)},
      {deconv(1, 64, 64, 64, 32, 3, 2, 1, 1), conv(1, 32, 128, 128, 64, 3, 2, 1)},
      {deconv(1, 64, 32, 32, 32, 4, 2, 1), conv(1, 32, 64, 64, 64, 4, 2, 1)},
  };
  for (const auto& [t, c] : pairs) {
    DeconvSetup s;
    s.shape = t;
    s.expected = auto_route(phase_conv(t), k4W4C, true, k4W4C);
    s.input_zp = -2;
    s.out = {"none", -1, -128, 127};
    s.accu = false;
    s.seed = 7;
    add_deconv_case(registry, s, "perf/");
    add_perf_case(registry, names, {c, "deconv twin"});
  }
}

// ---------------------------------------------------------------------------------------
// Fused epilogues: q8ta_conv2d_ps and q8ta_conv2d_add against the unfused q8ta_conv2d ->
// [q8ta_pixel_shuffle ->] [q8ta_add] computed on the CPU (stored_values, ResidualCase), through
// every route that writes int8 (pointwise: GEMV, GEMM or cooperative matrices by the number of
// pixels; im2col; direct, both output layouts; a depthwise shape, which a fused store takes to
// the direct kernel).

// The tensors added to the output rotate over zero points at both ends, zero and off zero.
constexpr int32_t kResidualZeroPoints[] = {-128, 127, 0, -3};

// One fused ACCU case, its quantization rotating with `index` as add_accu_case's; `residual`:
// the output added to a tensor (q8ta_conv2d_add).
void add_fused_accu_case(Registry& registry, const ConvShape& shape, const Variant& v,
                         int32_t upscale, bool residual, uint32_t index) {
  ConvSetup s;
  s.shape = shape;
  s.in_layout = v.in;
  s.out_layout = v.out;
  s.route = v.route;
  set_gemm(s, v);
  s.expected = v.route != Conv2dRoute::Auto ? v.route
               : is_depthwise(shape)        ? Conv2dRoute::Direct
                                            : auto_route(shape, v.in, true, v.out);
  s.upscale = upscale;
  s.input_zp = kInputZeroPoints[index % 3];
  s.out = kOutputQuants[index % 7];
  s.bias = (index % 5) % 2 == 0;
  s.seed = 8000 + index;
  if (residual) s.residual = {kResidualZeroPoints[index % 4], kOutputQuants[(index + 3) % 7]};
  const std::string op = residual ? "q8ta_conv2d_add" : "q8ta_conv2d_ps";
  std::string name = op + (upscale > 1 ? " r" + std::to_string(upscale) : "") + " " +
                     route_name(s) + " " + geometry_name(shape) + " " + layouts_name(s) + " zpx" +
                     std::to_string(s.input_zp) + " zpy" + std::to_string(s.out.zero_point) + " " +
                     s.out.name + (s.bias ? " bias" : " nobias");
  if (residual) {
    name += " + zpb" + std::to_string(s.residual->first) + " -> zps" +
            std::to_string(s.residual->second.zero_point) + " " + s.residual->second.name;
  }
  Case c{name,
         op,
         shape_column(shape),
         layout_column(s),
         true,
         false,
         s.gemm != ops::LinearRoute::CoopMat,
         Metric::GOPs,
         [s] { return std::make_unique<Q8taConv2dCase>(s); }};
  c.unavailable = case_unavailable(s);
  registry.add(std::move(c));
}

void register_fused_accu_cases(Registry& registry) {
  struct Fused {
    ConvShape shape;  // with a shuffle: C_out = C r^2, C a multiple of 4
    int32_t upscale;
    bool residual;
    Variant v;
  };
  const Variant auto_4w4c{Conv2dRoute::Auto, k4W4C, true, k4W4C};
  const Variant auto_4c1w{Conv2dRoute::Auto, k4C1W, true, k4C1W};
  const Variant split_k_im2col{Conv2dRoute::Im2col,      k4W4C, true, k4W4C, 0, 0,
                               ops::LinearRoute::SplitK, 3};
  // The im2col route's forms forced: implicit through each GPU linear kernel (both input
  // layouts), explicit through the op's kernel and split-K.
  constexpr auto kImplicit = ops::Im2colForm::Implicit, kExplicit = ops::Im2colForm::Explicit;
  const Variant gemm_implicit{Conv2dRoute::Im2col,    k4C1W, true,     k4W4C, 0, 0,
                              ops::LinearRoute::Gemm, 0,     kImplicit};
  const Variant coopmat_implicit{Conv2dRoute::Im2col,       k4W4C, true,     k4W4C, 0, 0,
                                 ops::LinearRoute::CoopMat, 0,     kImplicit};
  const Variant coopmat_window{
      Conv2dRoute::Im2col,    k4W4C, true, k4W4C, 0, 0, ops::LinearRoute::CoopMat, 0,
      ops::Im2colForm::Window};
  const Variant split_k_implicit{Conv2dRoute::Im2col,      k4C1W, true,     k4W4C, 0, 0,
                                 ops::LinearRoute::SplitK, 2,     kImplicit};
  const Variant auto_explicit{Conv2dRoute::Im2col,    k4W4C, true,     k4W4C, 0, 0,
                              ops::LinearRoute::Auto, 0,     kExplicit};
  const Variant split_k_explicit{Conv2dRoute::Im2col,      k4W4C, true,     k4W4C, 0, 0,
                                 ops::LinearRoute::SplitK, 3,     kExplicit};
  const Fused cases[] = {
      // Pointwise: widths 9 and 7 leave padding pixels whose shuffled places are the output's
      // padding widths; 16 pixels or more take the GEMM (cooperative matrices on a GPU that
      // has them), 3 pixels GEMV.
      {conv(1, 8, 7, 9, 32, 1, 1, 0), 2, false, auto_4w4c},
      {conv(1, 24, 16, 9, 96, 1, 1, 0), 2, false, auto_4w4c},   // refinenet_lite's up3 / up4
      {conv(2, 12, 3, 7, 16, 1, 1, 0), 2, false, auto_4w4c},    // batch 2, C 4
      {conv(1, 16, 1, 3, 64, 1, 1, 0), 2, false, auto_4w4c},    // 3 pixels: GEMV
      {conv(1, 5, 3, 5, 64, 1, 1, 0), 4, false, auto_4w4c},     // r 4: C 4
      {conv(1, 20, 33, 17, 72, 1, 1, 0), 3, false, auto_4w4c},  // r 3, several GEMM row tiles
      // Im2col (>= 64 products per output).
      {conv(1, 24, 8, 9, 96, 3, 1, 1), 2, false, auto_4w4c},  // refinenet_lite's up1 / up2
      {conv(1, 8, 5, 7, 36, 3, 1, 1), 3, false, auto_4w4c},   // r 3, C 4
      {conv(1, 9, 6, 5, 32, 3, 2, 1), 2, false, {Conv2dRoute::Im2col, k4C1W, true, k4W4C}},
      // Direct: a 4C1W output, the 3-channel stem (27 products), forced on a 4W4C output.
      {conv(1, 6, 7, 5, 32, 3, 2, 1), 2, false, {Conv2dRoute::Auto, k4W4C, true, k4C1W}},
      {conv(2, 3, 5, 7, 16, 3, 1, 1), 2, false, auto_4w4c},
      {conv(1, 8, 5, 3, 36, 3, 1, 1), 3, false, auto_4c1w},
      {conv(1, 24, 8, 9, 96, 3, 1, 1), 2, false, {Conv2dRoute::Direct, k4W4C, true, k4W4C}},
      {conv(1, 16, 5, 6, 32, 1, 1, 0), 2, false, {Conv2dRoute::Direct, k4C1W, true, k4W4C}},
      // A residual add: the same routes, channels off a multiple of 4 (padding lanes hold the
      // sum's zero point), a grouped convolution, a depthwise shape (the direct kernel).
      {conv(1, 24, 16, 9, 24, 1, 1, 0), 1, true, auto_4w4c},  // MobileNet's projection + add
      {conv(2, 13, 3, 5, 7, 1, 1, 0), 1, true, auto_4w4c},    // GEMM, C 7
      {conv(1, 16, 2, 2, 12, 1, 1, 0), 1, true, auto_4w4c},   // 4 pixels: GEMV
      {conv(1, 16, 9, 7, 16, 3, 1, 1), 1, true, auto_4w4c},   // ResNet's 3x3 + add: im2col
      {conv(1, 9, 7, 6, 9, 3, 2, 1), 1, true, {Conv2dRoute::Im2col, k4C1W, true, k4W4C}},
      {conv(1, 6, 7, 5, 10, 3, 1, 1), 1, true, auto_4w4c},  // direct, 54 products
      {conv(1, 6, 7, 5, 10, 3, 1, 1), 1, true, auto_4c1w},  // direct into 4C1W
      {conv(1, 8, 5, 7, 8, 3, 1, 1, 1, 2), 1, true, {Conv2dRoute::Auto, k4C1W, true, k4W4C}},
      {depthwise(1, 12, 7, 9, 3, 1, 1), 1, true, auto_4w4c},  // depthwise shape: direct
      {conv(1, 16, 9, 7, 16, 3, 1, 1), 1, true, {Conv2dRoute::Direct, k4W4C, true, k4W4C}},
      // Shuffled and added: refinenet_lite's upsampling stages through each route.
      {conv(1, 24, 16, 9, 96, 1, 1, 0), 2, true, auto_4w4c},
      {conv(1, 24, 8, 9, 96, 3, 1, 1), 2, true, auto_4w4c},
      {conv(1, 8, 5, 3, 36, 3, 1, 1), 3, true, auto_4c1w},
      {conv(1, 16, 1, 3, 64, 1, 1, 0), 2, true, auto_4w4c},  // GEMV
      // Through the split-K linear kernel (its last slice runs the same epilogue).
      {conv(1, 40, 7, 6, 20, 3, 1, 1), 1, true, split_k_im2col},  // K 360: 12 stages, 3 slices
      {conv(1, 24, 8, 9, 96, 3, 1, 1), 2, true, split_k_im2col},
      // Each im2col form forced, shuffled and / or added (refinenet_lite's up1 / up2 and
      // ResNet's 3x3 + add), the implicit one through every GPU linear kernel.
      {conv(1, 24, 8, 9, 96, 3, 1, 1), 2, true, gemm_implicit},
      {conv(1, 24, 8, 9, 96, 3, 1, 1), 2, true, coopmat_implicit},
      {conv(1, 24, 8, 9, 96, 3, 1, 1), 2, true, split_k_implicit},
      {conv(1, 24, 8, 9, 96, 3, 1, 1), 2, true, auto_explicit},
      {conv(1, 16, 9, 7, 16, 3, 1, 1), 1, true, gemm_implicit},
      {conv(1, 16, 9, 7, 16, 3, 1, 1), 1, true, coopmat_implicit},
      {conv(1, 9, 6, 5, 32, 3, 2, 1), 2, false, gemm_implicit},
      {conv(1, 8, 5, 7, 36, 3, 1, 1), 3, false, coopmat_implicit},
      {conv(1, 24, 8, 9, 96, 3, 1, 1), 2, true, coopmat_window},
      {conv(1, 24, 32, 18, 96, 3, 1, 1), 2, false, coopmat_window},
      {conv(1, 16, 9, 70, 16, 3, 1, 1), 1, true, coopmat_window},
      {conv(1, 8, 5, 7, 36, 3, 1, 1), 3, false, coopmat_window},
      {conv(1, 40, 7, 6, 20, 3, 1, 1), 1, true, split_k_explicit},
  };
  uint32_t index = 0;
  for (const Fused& f : cases) {
    add_fused_accu_case(registry, f.shape, f.v, f.upscale, f.residual, index++);
  }
}

// q8ta_conv2d_q_dq (the graph's last dequantize in the convolution's store) against the
// unfused q8ta_conv2d -> q8ta_dequantize on the CPU: the reference's int8 output dequantized
// with reference_dequantize, compared bit for bit. A float output runs the direct kernel
// whatever the shape (Conv2d.h), so the shapes of every int8 route go through it: pointwise
// (refinenet_lite's head 24 -> 8; C_out off a multiple of 4), im2col-sized, the stem, both
// input layouts, grouped, depthwise; each quantization rotates as add_accu_case's, the
// activation ranges included.
void register_dequantized_accu_cases(Registry& registry) {
  const ConvShape shapes[] = {
      conv(1, 24, 16, 9, 8, 1, 1, 0),       // refinenet_lite's head (pointwise shape)
      conv(2, 13, 3, 5, 7, 1, 1, 0),        // batch 2, C_out 7
      conv(1, 16, 9, 7, 16, 3, 1, 1),       // im2col-sized (144 products)
      conv(1, 3, 9, 11, 24, 3, 2, 1),       // the stem
      conv(1, 8, 5, 7, 10, 3, 1, 1, 1, 2),  // groups 2
      depthwise(1, 12, 7, 9, 3, 1, 1),      // depthwise shape: direct
  };
  uint32_t index = 0;
  for (const ConvShape& shape : shapes) {
    for (const MemoryLayout in : {k4W4C, k4C1W}) {
      ConvSetup s;
      s.shape = shape;
      s.in_layout = in;
      s.dequantized = true;
      s.expected = Conv2dRoute::Direct;
      s.input_zp = kInputZeroPoints[index % 3];
      s.out = kOutputQuants[index % 7];
      s.bias = (index % 5) % 2 == 0;
      s.seed = 9000 + index++;
      const std::string name = "q8ta_conv2d_q_dq " + route_name(s) + " " + geometry_name(shape) +
                               " " + layouts_name(s) + " zpx" + std::to_string(s.input_zp) +
                               " zpy" + std::to_string(s.out.zero_point) + " " + s.out.name +
                               (s.bias ? " bias" : " nobias");
      registry.add({name, "q8ta_conv2d_q_dq", shape_column(shape), layout_column(s), true, false,
                    true, Metric::GOPs, [s] { return std::make_unique<Q8taConv2dCase>(s); }});
    }
  }
}

// q8ta_conv2d_fq (the graph's first quantize in the convolution's load) against the unfused
// q8ta_quantize -> q8ta_conv2d on the CPU: the float input quantized with reference_quantize,
// then reference_q8ta_conv2d, the int8 output compared word for word. The direct kernel runs it
// whatever the shape (Auto resolves to Direct): the refinenet_lite stem's 3x3 stride 2 (C_in 3,
// small), C_in 5 and 8 (a whole channel word and one with padding lanes), batch 2, a pointwise
// shape, groups and depthwise, 37 output channels (10 channel blocks: two chunks of the
// kernel's 8 blocks per invocation, the last block partial) at an odd width; both output
// layouts; input zero points at both ends of the range and in narrowed quant ranges; each
// output quantization rotates as add_accu_case's, the activation ranges included.
void register_float_input_accu_cases(Registry& registry) {
  struct InputQuant {
    int32_t zero_point, quant_min, quant_max;
  };
  const InputQuant input_quants[] = {
      {0, -128, 127}, {-128, -128, 127}, {127, -128, 127}, {5, -127, 127}, {-3, -100, 90}};
  const ConvShape shapes[] = {
      conv(1, 3, 18, 11, 16, 3, 2, 1),     // the stem, small
      conv(1, 5, 9, 7, 6, 3, 1, 1),        // C_in 5, C_out 6
      conv(1, 8, 6, 9, 12, 1, 1, 0),       // pointwise shape: still direct
      conv(2, 3, 7, 10, 8, 3, 2, 1),       // batch 2
      conv(1, 8, 5, 7, 8, 3, 1, 1, 1, 2),  // groups 2
      depthwise(1, 8, 7, 9, 3, 1, 1),      // depthwise shape: direct
      conv(1, 3, 9, 13, 37, 3, 2, 1),      // 10 channel blocks, W_out 7
      // Several 4 x 16-pixel workgroups, the last ones partly outside the output: a stem on a
      // 37x70 image, k5 dilation 2, two input channel words with batch 2, asymmetric padding.
      conv(1, 3, 37, 70, 24, 3, 2, 1),
      conv(1, 2, 20, 41, 8, 5, 1, 2, 2),
      conv(2, 7, 9, 33, 12, 3, 1, 1),
      with_pads(conv(1, 3, 11, 19, 8, 3, 2, 0), 0, 1, 1, 0),
  };
  uint32_t index = 0;
  for (const ConvShape& shape : shapes) {
    for (const MemoryLayout out : {k4W4C, k4C1W}) {
      const InputQuant& iq = input_quants[index % 5];
      ConvSetup s;
      s.shape = shape;
      s.out_layout = out;
      s.float_input = std::pair<int32_t, int32_t>{iq.quant_min, iq.quant_max};
      s.input_zp = iq.zero_point;
      s.route = index % 4 == 3 ? Conv2dRoute::Direct : Conv2dRoute::Auto;
      s.expected = Conv2dRoute::Direct;
      s.out = kOutputQuants[index % 7];
      s.bias = (index % 5) % 2 == 0;
      s.seed = 9500 + index++;
      const std::string name = "q8ta_conv2d_fq " + route_name(s) + " " + geometry_name(shape) +
                               " " + layouts_name(s) + " zpx" + std::to_string(s.input_zp) + " qx" +
                               std::to_string(iq.quant_min) + ".." + std::to_string(iq.quant_max) +
                               " zpy" + std::to_string(s.out.zero_point) + " " + s.out.name +
                               (s.bias ? " bias" : " nobias");
      registry.add({name, "q8ta_conv2d_fq", shape_column(shape), layout_column(s), true, false,
                    true, Metric::GOPs, [s] { return std::make_unique<Q8taConv2dCase>(s); }});
    }
  }
}

}  // namespace

void register_conv_cases(Registry& registry) {
  register_accu_cases(registry);
  register_deconv_accu_cases(registry);
  register_fused_accu_cases(registry);
  register_dequantized_accu_cases(registry);
  register_float_input_accu_cases(registry);
  register_perf_cases(registry);
}

}  // namespace vkd::custom_ops
