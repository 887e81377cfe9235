// ACCU and PERF cases for q8ta_linear (int8 in, int8 or float out; GEMM and GEMV routes),
// q8da_linear (float in, rows quantized at run time, float out) and q8csw_linear (float in/out,
// int8 weights).
// Compiled with -ffp-contract=off (test/CMakeLists.txt): the reference's float epilogue must
// round the product before adding the bias, as the shader does.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "core/Error.h"
#include "runtime/ops/Linear.h"
#include "test/custom_ops/EtvkShapes.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/custom_ops/ResidualCase.h"
#include "test/reference/AffineQuantReference.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/LinearReference.h"
#include "test/reference/QuantReference.h"

namespace vkd::custom_ops {
namespace {

using testing::RefShape;

constexpr MemoryLayout k4H4W = MemoryLayout::PackedInt8_4H4W;
// Output quantizations rotated over the int8-output ACCU cases: zero points at both ends of
// the range, relu (activation_min = zero point) where it clamps nothing (zp -128) and where it
// does (zp 10), and a clamp strictly inside the range.
const OutputQuant kOutputQuants[] = {{"none", -7, -128, 127},
                                     {"relu", -128, -128, 127},
                                     {"relu", 10, 10, 127},
                                     {"clamp", 3, -20, 90},
                                     {"none", 127, -128, 127}};

struct LinearSetup {
  std::vector<int64_t> input_sizes;  // [..., M, K]
  int64_t n = 0;
  ops::LinearRoute route = ops::LinearRoute::Auto;
  int32_t split_k_slices = 0;  // SplitK: the slices asked for (0: the op's choice)
  int32_t coopmat_tile_n = 0;  // CoopMat: the tile's channels asked for (0: the op's choice)
  int32_t coopmat_tile_m = 0;  // CoopMat: the tile's rows asked for (16 / 32: the short tiles)
  // ACCU: execute once before the checked execution, which must write the same bytes (the
  // split-K scratch left at zero).
  bool reexecute = false;
  bool int8_out = true;
  int32_t input_zp = 0;
  OutputQuant out{"none", 0, -128, 127};
  bool bias = true;
  bool accu = true;  // false: a PERF case (no reference)
  // PERF with at most 4 rows: rotate through weight copies so the weights stream from memory
  // (weight_copies); false: one node, its weights cached between repetitions as in the
  // reference backend's method (etvk/ cases).
  bool stream_weights = true;
  uint32_t seed = 0;
  // The int8 output added to a residual tensor (q8ta_linear_add; ACCU only): that tensor's zero
  // point and the sum's quantization.
  std::optional<std::pair<int32_t, OutputQuant>> residual;
  // Float output plus a float32 residual of its sizes (q8ta_linear_dq_add; ACCU only).
  bool float_residual = false;
  // Int8 output of gelu(y) (q8ta_linear_gelu; ACCU only).
  ops::LinearGelu gelu = ops::LinearGelu::None;
  // Int8 output in this many equal column blocks, each with its own output parameters
  // (q8ta_linear_qkv; ACCU only, no activation range): the bytes of one linear per block.
  int32_t column_blocks = 0;
};

// The blocks' output zero points (q8ta_linear_qkv): both ends of the range and between.
constexpr int32_t kBlockZeroPoints[] = {-7, 127, -128, 30};

// Where the GELU epilogue may write 1 off the reference: |t - round(t)| within this of 0.5,
// t = gelu * (1 / s_y). The shader's erf is within 4.5e-7 of erf (shaders/common/gelu.glslh),
// so gelu(y) within 0.5 |y| 4.5e-7 plus a few float32 roundings; t, at most 128 in magnitude
// on a scale fitted to the output range, then moves by < 1e-4.
constexpr double kGeluTieDistance = 2e-4;

int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::vector<int64_t> output_sizes(std::vector<int64_t> sizes, int64_t n) {
  sizes.back() = n;
  return sizes;
}

RefShape ref_shape(const std::vector<int64_t>& sizes) {
  const Dims4 d = TensorSpec{sizes, DType::Int8x4, StorageType::Buffer, k4H4W}.dims4();
  return {d.n, d.c, d.h, d.w};
}

int64_t int8x4_bytes(const std::vector<int64_t>& sizes) {
  return 4 * testing::ref_word_count(k4H4W, ref_shape(sizes));
}

// Host weights of one layer: symmetric int8 weights in [-127, 127], scales ~U(0.001, 0.02),
// and (optionally) a bias of the size of a typical output, `typical_acc * input_scale * s_w[n]`.
struct HostLinear {
  std::vector<int8_t> weight;
  std::vector<float> scales, bias;
  int64_t n = 0, k = 0;

  ops::LinearWeights view() const {
    return {weight.data(), scales.data(), bias.empty() ? nullptr : bias.data(), n, k};
  }
  // What a node reads of them: int8 weights, float scales and bias.
  double bytes() const { return bytes_of(n, k, !bias.empty()); }
  // Those of an N x K layer.
  static double bytes_of(int64_t n, int64_t k, bool with_bias) {
    return double(n) * double(k) + 4.0 * double(n) * (with_bias ? 2.0 : 1.0);
  }
};

HostLinear random_linear(int64_t n, int64_t k, bool with_bias, float input_scale, float typical_acc,
                         std::mt19937& rng) {
  HostLinear h;
  h.n = n;
  h.k = k;
  h.weight = random_int8(n * k, -127, 127, rng);
  ChannelParams c = random_channel_params(n, with_bias, input_scale, typical_acc, rng);
  h.scales = std::move(c.scales);
  h.bias = std::move(c.bias);
  return h;
}

// "row 3 col 5": element i of a row-major matrix with n columns.
std::string matrix_position(int64_t n, int64_t i) {
  return "row " + std::to_string(i / n) + " col " + std::to_string(i % n);
}

// Compares a float32 output matrix of n columns with `expected` within `tolerance` (into `r`),
// reporting the first mismatch by its row and column.
void compare_matrix(const std::vector<float>& actual, const std::vector<float>& expected,
                    double tolerance, int64_t n, AccuResult& r) {
  compare_floats(actual, expected, tolerance, r);
  if (r.mismatches)
    report_first_mismatch(actual, expected, tolerance,
                          [&](int64_t i) { return matrix_position(n, i); });
}

// A float-activation linear's work: its host weights plus float32 input and output rows read
// and written once, 2 K N operations a row.
PerfWork float_linear_work(double weight_bytes, int64_t rows, double k, int64_t n) {
  return {weight_bytes + 4.0 * double(rows) * (k + double(n)), 2.0 * double(rows) * k * double(n)};
}

// Weight copies a memory-bound (M <= 4) PERF case rotates through, one linear node each, so
// the weights streamed per iteration (>= 128 MiB) exceed any L2 (~50 MB). Capped so the graph
// stays under 2 GiB of device memory and a sensible node count (a tiny layer is launch-bound
// anyway); 1 on CPU devices, where a local perf run should stay short.
int64_t weight_copies(const vk::DeviceProfile& profile, int64_t rows, double weight_bytes,
                      double output_bytes, double input_bytes) {
  constexpr double kStream = 128.0 * (1 << 20), kDeviceCap = 2.0 * (1 << 30);
  constexpr int64_t kMaxNodes = 2048;
  if (rows > 4 || profile.is_cpu()) return 1;
  int64_t r = static_cast<int64_t>(std::ceil(kStream / weight_bytes));
  r = std::min(r, kMaxNodes);
  r = std::min(r, static_cast<int64_t>((kDeviceCap - input_bytes) / (weight_bytes + output_bytes)));
  return std::max<int64_t>(r, 1);
}

// On CPU devices (lavapipe) PERF skips layers this large, so a local run stays short.
constexpr double kCpuMaxWeightBytes = 64.0 * (1 << 20);
constexpr double kCpuMaxOps = 4e9;

class Q8taLinearCase : public CaseInstance {
 public:
  explicit Q8taLinearCase(LinearSetup s) : s_(std::move(s)) {}

  // All data is drawn here, from the case's own seed: the int8 output scale depends on the
  // reference's y range and must be known when the node is added.
  void build(graph::ComputeGraph& g) override {
    const int64_t k = s_.input_sizes.back();
    rows_ = numel(s_.input_sizes) / k;
    const double ops = 2.0 * double(rows_) * double(k) * double(s_.n);
    VKD_CHECK(s_.accu || !g.profile().is_cpu() ||
                  (double(s_.n) * double(k) <= kCpuMaxWeightBytes && ops <= kCpuMaxOps),
              ErrorCode::Unsupported, "layer too large for a CPU device");
    std::mt19937 rng(s_.seed);
    qx_ = random_int8(rows_ * k, -128, 127, rng);
    const float typical_acc = kTypicalProduct * std::sqrt(float(k));
    host_ = random_linear(s_.n, k, s_.bias, kInputScale, typical_acc, rng);

    p_.input = {kInputScale, s_.input_zp, -128, 127};
    p_.route = s_.route;
    p_.split_k_slices = s_.split_k_slices;
    p_.coopmat_tile_n = s_.coopmat_tile_n;
    p_.coopmat_tile_m = s_.coopmat_tile_m;
    if (s_.accu) {
      const auto acc =
          testing::reference_linear_acc(qx_, host_.weight, rows_, k, s_.n, s_.input_zp);
      y_ = testing::reference_linear_epilogue(acc, rows_, s_.n, kInputScale, host_.scales,
                                              host_.bias);
    }
    p_.gelu = s_.gelu;
    const bool tanh_form = s_.gelu == ops::LinearGelu::Tanh;
    if (s_.gelu != ops::LinearGelu::None) gelu_ = testing::reference_gelu(y_, tanh_form);
    const std::vector<float>& quantized = s_.gelu != ops::LinearGelu::None ? gelu_ : y_;
    if (s_.int8_out) {
      p_.output =
          ops::QuantParams{case_output_scale(s_.accu, quantized, s_.out.zero_point, typical_acc),
                           s_.out.zero_point, -128, 127};
      p_.activation_min = s_.out.act_min;
      p_.activation_max = s_.out.act_max;
    }
    if (s_.int8_out && s_.accu) {
      expected_ = testing::reference_quantize(quantized, p_.output->scale, s_.out.zero_point,
                                              s_.out.act_min, s_.out.act_max);
    }
    if (s_.column_blocks > 0) draw_column_blocks();

    const auto out_sizes = output_sizes(s_.input_sizes, s_.n);
    const TensorSpec out_spec =
        s_.int8_out
            ? TensorSpec{out_sizes, DType::Int8x4, StorageType::Buffer, k4H4W}
            : TensorSpec{out_sizes, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
    in_bytes_ = double(int8x4_bytes(s_.input_sizes));
    out_bytes_ = s_.int8_out ? double(int8x4_bytes(out_sizes)) : 4.0 * double(numel(out_sizes));
    copies_ = s_.accu || !s_.stream_weights
                  ? 1
                  : weight_copies(g.profile(), rows_, host_.bytes(), out_bytes_, in_bytes_);

    in_ref_ = g.add_tensor({s_.input_sizes, DType::Int8x4, StorageType::Buffer, k4H4W}, "x");
    g.add_input(in_ref_);
    if (s_.residual) {
      residual_.emplace(s_.residual->first, s_.residual->second);
      residual_->draw(expected_, *p_.output, rng);
      p_.residual = residual_->add_input(g, out_spec);
      in_bytes_ += out_bytes_;
    }
    if (s_.float_residual) {
      // Residuals of the outputs' size, both signs, so sums cancel and carry.
      const float range = float(std::max(max_abs(y_), 1e-3f));
      std::uniform_real_distribution<float> value(-range, range);
      float_residual_.resize(y_.size());
      for (float& v : float_residual_) v = value(rng);
      sum_.resize(y_.size());
      for (size_t i = 0; i < y_.size(); ++i) sum_[i] = y_[i] + float_residual_[i];
      p_.float_residual = g.add_tensor(out_spec, "r");
      g.add_input(p_.float_residual);
      in_bytes_ += out_bytes_;
    }
    for (int64_t r = 0; r < copies_; ++r) {
      // One host array serves every copy: each node packs its own device constant from it.
      const graph::ValueRef out = g.add_tensor(out_spec, "y" + std::to_string(r));
      ops::add_q8ta_linear_node(g, in_ref_, host_.view(), out, p_);
      g.add_output(out);
      out_refs_.push_back(out);
    }
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937&) override {
    // Words from the test's own packing reference; padding lanes hold the input zero point.
    g.write_words(in_ref_, testing::ref_pack(k4H4W, ref_shape(s_.input_sizes), qx_, s_.input_zp));
    if (residual_) residual_->write(g, k4H4W, ref_shape(output_sizes(s_.input_sizes, s_.n)));
    if (s_.float_residual) g.write_float(p_.float_residual, float_residual_);
    if (s_.reexecute) {
      g.execute();
      first_words_ = output_bits(g);
    }
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    // The re-execution's bytes against the first execution's (then both against the reference).
    if (s_.reexecute) compare_words(output_bits(g), first_words_, r);
    if (s_.int8_out) {
      // The unfused sequence: linear [-> add].
      auto expected = residual_ ? residual_->expected(expected_, *p_.output) : expected_;
      if (s_.gelu != ops::LinearGelu::None) accept_gelu_ties(g.read_int8(out_refs_[0]), expected);
      const int32_t zp = residual_ ? residual_->sum_zero_point() : s_.out.zero_point;
      const auto out_shape = ref_shape(output_sizes(s_.input_sizes, s_.n));
      compare_words(g.read_words(out_refs_[0]),
                    s_.column_blocks > 0 ? column_block_words(out_shape)
                                         : testing::ref_pack(k4H4W, out_shape, expected, zp),
                    r);
      // (read_int8 unpacks with the runtime's code: used only to name the first difference.)
      if (r.mismatches)
        report_first_mismatch(g.read_int8(out_refs_[0]), expected, 0.0,
                              [&](int64_t i) { return matrix_position(s_.n, i); });
    } else if (s_.float_residual) {
      // q8ta_linear_dq then float_add: the same two float32 roundings, bit for bit.
      std::vector<int32_t> want(sum_.size());
      std::memcpy(want.data(), sum_.data(), sum_.size() * 4);
      compare_words(output_bits(g), want, r);
      if (r.mismatches)
        report_first_mismatch(g.read_float(out_refs_[0]), sum_, 0.0,
                              [&](int64_t i) { return matrix_position(s_.n, i); });
    } else {
      // Same arithmetic in the same order: exact in practice; 1e-5 of the output range allowed.
      const double tolerance = 1e-5 * max_abs(y_);
      compare_matrix(g.read_float(out_refs_[0]), y_, tolerance, s_.n, r);
    }
    return r;
  }
  PerfWork work() const override {
    const double k = double(s_.input_sizes.back());
    return {double(copies_) * (host_.bytes() + in_bytes_ + out_bytes_),
            double(copies_) * 2.0 * double(rows_) * k * double(s_.n)};
  }

 private:
  LinearSetup s_;
  int64_t rows_ = 0, copies_ = 1;
  double in_bytes_ = 0, out_bytes_ = 0;
  ops::LinearParams p_;
  std::vector<int8_t> qx_;
  HostLinear host_;
  std::vector<float> y_;
  std::vector<int8_t> expected_;             // the expected int8 output of the linear
  std::vector<float> gelu_;                  // gelu(y) (the GELU epilogue)
  std::vector<float> float_residual_, sum_;  // the float residual and y + it
  int64_t gelu_ties_ = 0;                    // values 1 off at a rounding tie
  std::optional<ResidualCase> residual_;
  graph::ValueRef in_ref_ = -1;
  std::vector<graph::ValueRef> out_refs_;
  std::vector<int32_t> first_words_;  // reexecute: the output of the first execution

  // The GELU epilogue's int8 values 1 off the reference where gelu * (1 / s_y) lies within
  // kGeluTieDistance of a rounding tie take the kernel's value; everything else stays, so the
  // words (padding included) are then compared exactly.
  void accept_gelu_ties(const std::vector<int8_t>& actual, std::vector<int8_t>& expected) {
    const float inv = testing::reference_inverse_scale(p_.output->scale);
    for (size_t i = 0; i < expected.size() && i < actual.size(); ++i) {
      if (std::abs(int(actual[i]) - int(expected[i])) != 1) continue;
      const double t = double(gelu_[i] * inv);
      // Plus the erf's own error in steps: where y is far below 0, gelu is small and that
      // error, 0.5 |y| 4.5e-7, is most of it (t near a tie then moves by more than 1e-4 on a
      // fine output scale; seen on the H200 with zp_y 127).
      const double erf_steps = 0.5 * std::abs(double(y_[i])) * 4.5e-7 * double(inv);
      if (std::abs(std::abs(t - std::floor(t)) - 0.5) < kGeluTieDistance + erf_steps) {
        expected[i] = actual[i];
        ++gelu_ties_;
      }
    }
  }

  // q8ta_linear_qkv: block b of the columns quantized as its own linear would be, with zero
  // point kBlockZeroPoints[b] and a scale fitted to its own outputs (the blocks' scales differ).
  void draw_column_blocks() {
    const int64_t width = s_.n / s_.column_blocks;
    for (int32_t b = 0; b < s_.column_blocks; ++b) {
      std::vector<float> y;
      for (int64_t m = 0; m < rows_; ++m)
        for (int64_t n = b * width; n < (b + 1) * width; ++n) y.push_back(y_[m * s_.n + n]);
      const int32_t zp = kBlockZeroPoints[b % 4];
      const ops::QuantParams q{output_scale_for(y, zp) * float(b + 1), zp, -128, 127};
      const std::vector<int8_t> block = testing::reference_quantize(y, q.scale, zp, -128, 127);
      for (int64_t m = 0; m < rows_; ++m)
        for (int64_t n = 0; n < width; ++n)
          expected_[m * s_.n + b * width + n] = block[m * width + n];
      p_.output_blocks.push_back(q);
    }
  }
  // The expected words of a column-block output: each 4-channel word (one block's) packed with
  // its block's zero point in the padding, as that block's own linear writes it.
  std::vector<int32_t> column_block_words(const RefShape& shape) const {
    std::vector<std::vector<int32_t>> packed;
    for (const ops::QuantParams& q : p_.output_blocks)
      packed.push_back(testing::ref_pack(k4H4W, shape, expected_, q.zero_point));
    const int64_t n4 = s_.n / 4, width = s_.n / s_.column_blocks;
    std::vector<int32_t> words = packed[0];
    for (size_t w = 0; w < words.size(); ++w)
      words[w] = packed[static_cast<size_t>(4 * ((int64_t(w) / 4) % n4) / width)][w];
    return words;
  }

  // The output's words (int8) or float bits.
  std::vector<int32_t> output_bits(const graph::ComputeGraph& g) const {
    if (s_.int8_out) return g.read_words(out_refs_[0]);
    const std::vector<float> f = g.read_float(out_refs_[0]);
    std::vector<int32_t> bits(f.size());
    std::memcpy(bits.data(), f.data(), f.size() * 4);
    return bits;
  }
};

class Q8cswLinearCase : public CaseInstance {
 public:
  Q8cswLinearCase(std::vector<int64_t> input_sizes, int64_t n, bool bias, uint32_t seed)
      : sizes_(std::move(input_sizes)), n_(n), bias_(bias), seed_(seed) {}

  void build(graph::ComputeGraph& g) override {
    const int64_t k = sizes_.back();
    rows_ = numel(sizes_) / k;
    std::mt19937 rng(seed_);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    x_.resize(static_cast<size_t>(rows_ * k));
    for (auto& v : x_) v = value(rng);
    // x ~ U(-1, 1) has std 0.577.
    host_ = random_linear(n_, k, bias_, 1.0f, 0.577f * 73.0f * std::sqrt(float(k)), rng);
    in_ref_ =
        g.add_tensor({sizes_, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "x");
    out_ref_ = g.add_tensor(
        {output_sizes(sizes_, n_), DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked},
        "y");
    ops::add_q8csw_linear_node(g, in_ref_, host_.view(), out_ref_);
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937&) override { g.write_float(in_ref_, x_); }
  AccuResult check(const graph::ComputeGraph& g) override {
    const auto expected = testing::reference_q8csw_linear(x_, host_.weight, rows_, sizes_.back(),
                                                          n_, host_.scales, host_.bias);
    // The shader sums in float32 (another order than the double reference).
    const double tolerance = 1e-4 * max_abs(expected);
    AccuResult r;
    compare_matrix(g.read_float(out_ref_), expected, tolerance, n_, r);
    return r;
  }
  PerfWork work() const override {
    return float_linear_work(host_.bytes(), rows_, double(sizes_.back()), n_);
  }

 private:
  std::vector<int64_t> sizes_;
  int64_t n_;
  bool bias_;
  uint32_t seed_;
  int64_t rows_ = 0;
  std::vector<float> x_;
  HostLinear host_;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
};

// q8da_linear: float rows ~U(-r, r) with r varying by row (one row all zeros where there are
// more than 2: its scale is eps, its output the bias), quantized per row on the device, then
// the int8 GEMM / GEMV with the per-row epilogue. The reference (test/reference/) runs the same
// steps on the CPU; every step is exact or one rounded float32 operation, so the bytes match.
class Q8daLinearCase : public CaseInstance {
 public:
  Q8daLinearCase(std::vector<int64_t> input_sizes, int64_t n, ops::LinearRoute route, bool bias,
                 bool accu, uint32_t seed)
      : sizes_(std::move(input_sizes)),
        n_(n),
        route_(route),
        bias_(bias),
        accu_(accu),
        seed_(seed) {}

  void build(graph::ComputeGraph& g) override {
    const int64_t k = sizes_.back();
    rows_ = numel(sizes_) / k;
    std::mt19937 rng(seed_);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    x_.resize(static_cast<size_t>(rows_ * k));
    for (int64_t m = 0; m < rows_; ++m) {
      const float range = (m == 1 && rows_ > 2) ? 0.0f : 0.25f + float(m % 5);
      for (int64_t i = 0; i < k; ++i) x_[static_cast<size_t>(m * k + i)] = range * unit(rng);
    }
    host_ = random_linear(n_, k, bias_, 0.02f, 0.577f * 73.0f * std::sqrt(float(k)), rng);
    in_ref_ =
        g.add_tensor({sizes_, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "x");
    out_ref_ = g.add_tensor(
        {output_sizes(sizes_, n_), DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked},
        "y");
    ops::add_q8da_linear_node(g, in_ref_, host_.view(), out_ref_, -128, 127, kEps, route_);
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937&) override { g.write_float(in_ref_, x_); }
  AccuResult check(const graph::ComputeGraph& g) override {
    const int64_t k = sizes_.back();
    const std::vector<int64_t> matrix = {rows_, k}, block = {1, k};
    const auto blocks = testing::ref_block_of_elements(matrix, block);
    const auto q = testing::reference_choose_qparams_affine(
        x_, blocks, rows_, testing::RefMapping::Symmetric, -128, 127, kEps);
    const auto qx =
        testing::reference_quantize_affine(x_, blocks, q.scale, q.zero_point, -128, 127);
    const auto acc = testing::reference_linear_acc(qx, host_.weight, rows_, k, n_, 0);
    const auto expected = testing::reference_linear_row_scaled_epilogue(acc, rows_, n_, q.scale,
                                                                        host_.scales, host_.bias);
    AccuResult r;
    compare_matrix(g.read_float(out_ref_), expected, 0.0, n_, r);  // bit for bit
    return r;
  }
  PerfWork work() const override {
    return float_linear_work(host_.bytes(), rows_, double(sizes_.back()), n_);
  }

 private:
  static constexpr float kEps = 1.1920928955078125e-07f;  // torchao's: float32 epsilon
  std::vector<int64_t> sizes_;
  int64_t n_;
  ops::LinearRoute route_;
  bool bias_, accu_;
  uint32_t seed_;
  int64_t rows_ = 0;
  std::vector<float> x_;
  HostLinear host_;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
};

// "B2x3 M5 K17 N63": leading (batch) dims, then the matrix dims.
std::string dims_name(const std::vector<int64_t>& input, int64_t n) {
  std::string s;
  if (input.size() > 2) {
    s = "B" + shape_string({input.begin(), input.end() - 2}) + " ";
  }
  const int64_t m = input.size() > 1 ? input[input.size() - 2] : 1;
  return s + "M" + std::to_string(m) + " K" + std::to_string(input.back()) + " N" +
         std::to_string(n);
}

std::string layout_name(bool int8_out) {
  return std::string("4H4W -> ") + (int8_out ? "4H4W" : "buffer/width_packed");
}

// ACCU shapes: every M, K, N in {1, 3, 5, 17, 63, 257} at least twice, the GEMV bound M = 4,
// two long reductions (|acc| stays below 2^24, so float(acc) is exact), and batched inputs
// (each 4H4W plane pads its own rows).
struct AccuShape {
  std::vector<int64_t> input;  // [..., M, K]
  int64_t n;
};
const AccuShape kAccuShapes[] = {
    {{1, 1}, 1},    {{1, 3}, 5},      {{1, 17}, 257},  {{1, 257}, 63},  {{1, 63}, 17},
    {{3, 1}, 17},   {{3, 5}, 63},     {{3, 257}, 3},   {{3, 63}, 1},    {{4, 1}, 1},
    {{4, 17}, 5},   {{4, 257}, 257},  {{5, 5}, 5},     {{5, 3}, 1},     {{5, 63}, 3},
    {{5, 257}, 17}, {{17, 17}, 17},   {{17, 1}, 63},   {{17, 5}, 257},  {{17, 257}, 5},
    {{63, 5}, 257}, {{63, 63}, 63},   {{63, 3}, 1},    {{63, 17}, 3},   {{257, 257}, 257},
    {{257, 1}, 5},  {{257, 3}, 17},   {{257, 17}, 1},  {{257, 63}, 63}, {{1, 513}, 13},
    {{2, 509}, 31}, {{2, 5, 17}, 63}, {{2, 2, 17}, 5}, {{3, 1, 63}, 5}, {{2, 3, 5, 17}, 17},
    {{17}, 3},
};

// GEMV on both sides of the per-subgroup form's K bound (K <= 1024: SG_REDUCE 2, ConvPlan.cpp),
// the wide classifier head among them.
const AccuShape kGemvShapes[] = {
    {{1, 512}, 9059}, {{3, 1024}, 21}, {{1, 1028}, 37}, {{4, 2051}, 9}};

// Cooperative-matrix only: hundreds of 128 x 128 tiles (several waves on a large GPU) with
// partial tiles in every dimension and K not a multiple of a 64-K stage.
const AccuShape kCoopMatWideShapes[] = {{{1029, 37}, 6657}, {{2, 515, 70}, 6660}};

// The cooperative-matrix kernel's tile widths forced against the op's choice (32 channels for
// N <= 32 or K <= 1024, else 128): 32 over several channel tiles (partial last one), 128 over
// a few channels, over hundreds of tiles with a short K, and batched planes.
struct CoopMatTileShape {
  AccuShape shape;
  int32_t tile_n;
};
const CoopMatTileShape kCoopMatTileShapes[] = {
    {{{257, 63}, 63}, 32},  {{{63, 257}, 257}, 32}, {{{2, 515, 70}, 6660}, 32},
    {{{257, 17}, 22}, 128}, {{{2, 5, 17}, 9}, 128}, {{{1029, 37}, 6657}, 128},
    {{{257, 63}, 63}, 128}};

// The short tile: MiniLM's projections at 128 tokens (K 384: 6 stages of 64 for 4 subgroups;
// K 1536: 24), batched planes that pad their rows with K's last stage partial and N over
// three channel tiles (the last partial), one stage (three subgroups add nothing), exactly one
// stage per subgroup, and many row tiles with a tiny K; all of them K over 8 subgroups (fewer
// than 64 tiles) but the last, 10 x 19 tiles with partial ones, over 4.
const AccuShape kShortTileShapes[] = {{{128, 384}, 384}, {{1, 128, 1536}, 384}, {{2, 5, 1000}, 70},
                                      {{63, 40}, 36},    {{33, 256}, 130},      {{257, 17}, 9},
                                      {{300, 200}, 600}};

// K below and above the workgroup's 256-value stride (shaders/q8csw_linear.glsl), N off a multiple
// of its 16 channels, batched rows; torchao weight-only shapes of MiniLM and a wide GEMV.
const AccuShape kQ8cswShapes[] = {
    {{1, 17}, 63},    {{4, 64}, 32},    {{5, 257}, 17},      {{63, 3}, 5},
    {{2, 5, 17}, 63}, {{257, 63}, 257}, {{1, 7, 384}, 1536}, {{1, 128, 1536}, 384},
    {{1, 512}, 9059}, {{3, 1000}, 70},
};

// q8da_linear: MiniLM's projections at T = 1, 7, 128 (K 384, N 384 / 1536 and back), a
// vocabulary-wide GEMV, and awkward shapes (K below and above the choose kernel's serial bound
// of 256, batched planes that pad their rows, N off a multiple of 4).
const AccuShape kQ8daShapes[] = {
    {{1, 1, 384}, 384},    {{1, 7, 384}, 1536}, {{1, 7, 1536}, 384},
    {{1, 128, 384}, 1536}, {{1, 512}, 9059},    {{5, 17}, 63},
    {{3, 1, 63}, 5},       {{2, 5, 257}, 17},   {{257, 300}, 130},
};

struct PerfShape {
  int64_t m, k, n;
  bool bias = true;
};

// GEMV (M <= 4) and GEMM shapes of LLM and vision layers (the reference backend's are the
// etvk/ cases, EtvkShapes.h).
std::vector<PerfShape> perf_shapes() {
  std::vector<PerfShape> list;
  for (int64_t m : {1, 4}) {
    list.push_back({m, 2048, 2048});
    list.push_back({m, 4096, 4096});
    list.push_back({m, 4096, 11008});
  }
  for (int64_t m : {64, 512, 4096}) list.push_back({m, 4096, 4096});
  list.push_back({1024, 2048, 2048});
  list.push_back({1, 1280, 1000});  // image classifier head
  // Vocabulary heads, wide N: BERT's 384 -> 30522, GPT-2's 768 -> 50257, an LLM's 4096 -> 32000.
  list.push_back({1, 384, 30522});
  list.push_back({1, 768, 50257});
  list.push_back({1, 4096, 32000});
  return list;
}

// The route (and SplitK's slices) of a case; a split-K ACCU case also runs twice (its
// scratch must be left at zero).
void set_route(LinearSetup& s, ops::LinearRoute route, int32_t slices) {
  s.route = route;
  s.split_k_slices = slices;
  s.reexecute = route == ops::LinearRoute::SplitK;
}

// "splitk/S3" (the slices asked for; "splitk" = the op's choice), "coopmat/n32" (the tile's
// channels asked for), "coopmat/m32" (the short tile), else the route's name.
std::string route_name(const LinearSetup& s) {
  return ops::to_string(s.route) +
         (s.split_k_slices ? "/S" + std::to_string(s.split_k_slices) : "") +
         (s.coopmat_tile_n ? "/n" + std::to_string(s.coopmat_tile_n) : "") +
         (s.coopmat_tile_m ? "/m" + std::to_string(s.coopmat_tile_m) : "");
}

// Split-K (forced; Auto takes it on GPUs only): K of 9 to 38 stages of 32 values split into
// ranges that do and do not divide it, the last stage partial; one and two row tiles, one and
// two channel tiles, batched planes that pad their rows; each with the slices asked for (0: the
// op's choice; 1: one range, still through the scratch).
struct SplitKShape {
  AccuShape shape;
  std::vector<int32_t> slices;
};
const SplitKShape kSplitKShapes[] = {
    {{{5, 257}, 17}, {1, 2, 4, 9}},  // 9 stages: 5 + 4; 3 x 3; one stage each
    {{{63, 1000}, 130}, {0, 3, 7}},  // 32 stages (the last partial): 11 + 11 + 10; 5 x 6 + 2
    {{{130, 300}, 33}, {2, 5}},      // two row tiles; 10 stages
    {{{2, 5, 1210}, 63}, {6}},       // batched; 38 stages: 7 x 5 + 3
};

// The cooperative-matrix tile a case asks for (0: the op's choice): channels 32 / 128, rows
// 16 or 32 (the short tiles) / 128.
struct CoopMatTile {
  int32_t n = 0, m = 0;
};

// An ACCU case's setup: `shape` on `route` (split-K `slices`, the cooperative-matrix `tile`),
// the input zero point rotating with `index`.
LinearSetup accu_setup(const AccuShape& shape, ops::LinearRoute route, int32_t slices,
                       uint32_t index, CoopMatTile tile = {}) {
  LinearSetup s;
  s.input_sizes = shape.input;
  s.n = shape.n;
  s.coopmat_tile_n = tile.n;
  s.coopmat_tile_m = tile.m;
  set_route(s, route, slices);
  s.input_zp = kInputZeroPoints[index % 3];
  return s;
}

// Registers ACCU case `name` of `op` running `s`; a cooperative-matrix case only where the
// device has cooperative matrices.
void add_linear_accu_case(Registry& registry, const LinearSetup& s, std::string name,
                          const std::string& op) {
  const bool coopmat = s.route == ops::LinearRoute::CoopMat;
  Case c{std::move(name),
         op,
         shape_string(s.input_sizes) + "->" + std::to_string(s.n),
         layout_name(s.int8_out),
         true,
         false,
         !coopmat,
         Metric::GOPs,
         [s] { return std::make_unique<Q8taLinearCase>(s); }};
  if (coopmat) c.unavailable = ops::linear_coopmat_unavailable;
  registry.add(std::move(c));
}

// One ACCU case. Zero points, output quantization and bias rotate with `index` with coprime
// periods (3, 5, 7), so every route and output type meets each of them.
void add_accu_case(Registry& registry, const AccuShape& shape, ops::LinearRoute route,
                   bool int8_out, uint32_t index, int32_t slices = 0, CoopMatTile tile = {}) {
  LinearSetup s = accu_setup(shape, route, slices, index, tile);
  s.int8_out = int8_out;
  s.out = kOutputQuants[index % 5];
  s.bias = (index % 7) % 2 == 0;
  s.seed = 1000 + index;
  std::string name = "q8ta_linear " + route_name(s) + " " + dims_name(shape.input, shape.n) +
                     " zpx" + std::to_string(s.input_zp);
  name +=
      int8_out ? " int8out zpy" + std::to_string(s.out.zero_point) + " " + s.out.name : " floatout";
  name += s.bias ? " bias" : " nobias";
  add_linear_accu_case(registry, s, name, "q8ta_linear");
}

// A q8ta_linear_add ACCU case (the output plus a residual tensor, q8ta_add's arithmetic in the
// epilogue) on `route`, its quantization rotating with `index`.
void add_residual_accu_case(Registry& registry, const AccuShape& shape, ops::LinearRoute route,
                            uint32_t index, int32_t slices = 0, CoopMatTile tile = {}) {
  LinearSetup s = accu_setup(shape, route, slices, index, tile);
  s.out = kOutputQuants[index % 5];
  s.bias = (index % 7) % 2 == 0;
  s.seed = 9000 + index;
  constexpr int32_t kOtherZeroPoints[] = {-128, 127, 0, -3};
  s.residual = {kOtherZeroPoints[index % 4], kOutputQuants[(index + 2) % 5]};
  const std::string name =
      "q8ta_linear_add " + route_name(s) + " " + dims_name(shape.input, shape.n) + " zpx" +
      std::to_string(s.input_zp) + " zpy" + std::to_string(s.out.zero_point) + " " + s.out.name +
      (s.bias ? " bias" : " nobias") + " + zpb" + std::to_string(s.residual->first) + " -> zps" +
      std::to_string(s.residual->second.zero_point) + " " + s.residual->second.name;
  add_linear_accu_case(registry, s, name, "q8ta_linear_add");
}

// A q8ta_linear_dq_add (`gelu` None: float output + a float residual) or q8ta_linear_gelu ACCU
// case on `route`, quantization and bias rotating with `index`.
void add_epilogue_accu_case(Registry& registry, const AccuShape& shape, ops::LinearRoute route,
                            ops::LinearGelu gelu, uint32_t index, int32_t slices = 0,
                            CoopMatTile tile = {}) {
  LinearSetup s = accu_setup(shape, route, slices, index, tile);
  s.out = kOutputQuants[index % 5];
  s.bias = (index % 7) % 2 == 0;
  s.seed = 11000 + index;
  s.gelu = gelu;
  s.int8_out = gelu != ops::LinearGelu::None;
  s.float_residual = gelu == ops::LinearGelu::None;
  const std::string op = s.int8_out ? "q8ta_linear_gelu" : "q8ta_linear_dq_add";
  std::string name = op + " " + route_name(s) + " " + dims_name(shape.input, shape.n) + " zpx" +
                     std::to_string(s.input_zp) + (s.bias ? " bias" : " nobias");
  if (s.int8_out) {
    name += std::string(gelu == ops::LinearGelu::Tanh ? " tanh" : " erf") + " zpy" +
            std::to_string(s.out.zero_point) + " " + s.out.name;
  }
  add_linear_accu_case(registry, s, name, op);
}

// A q8ta_linear_qkv ACCU case: N in `blocks` column blocks, each with its own output
// parameters (Q, K and V as one GEMM), on `route`.
void add_column_blocks_accu_case(Registry& registry, const AccuShape& shape, ops::LinearRoute route,
                                 int32_t blocks, uint32_t index, int32_t slices = 0,
                                 CoopMatTile tile = {}) {
  LinearSetup s = accu_setup(shape, route, slices, index, tile);
  s.bias = index % 2 == 0;
  s.seed = 13000 + index;
  s.column_blocks = blocks;
  const std::string name = "q8ta_linear_qkv " + route_name(s) + " " +
                           dims_name(shape.input, shape.n) + " zpx" + std::to_string(s.input_zp) +
                           " blocks" + std::to_string(blocks) + (s.bias ? " bias" : " nobias");
  add_linear_accu_case(registry, s, name, "q8ta_linear_qkv");
}

// q8ta_linear_qkv's shapes: MiniLM's projections at T = 16 (K 384, N 3 x 384), batched planes
// that pad their rows (padding words hold their block's zero point), GEMV rows, blocks of one
// word, a long K for split-K.
const AccuShape kColumnBlockShapes[] = {
    {{1, 16, 384}, 1152}, {{2, 5, 24}, 36}, {{3, 40}, 12}, {{63, 1000}, 96}};

// q8ta_linear_add's shapes: GEMV rows, N off a multiple of 4 (padding lanes hold the sum's
// zero point), batched planes that pad their rows, GEMM row and channel tiles.
const AccuShape kResidualShapes[] = {{{1, 17}, 257},   {{4, 63}, 5},   {{5, 63}, 3},
                                     {{2, 5, 17}, 63}, {{63, 63}, 63}, {{257, 17}, 130}};

// Shapes whose float-output variant is also timed.
bool perf_float_out(const PerfShape& s) {
  return s.k == 4096 && s.n == 4096 && (s.m == 1 || s.m == 512);
}

// The routes a PERF shape is timed on: GEMV and GEMM up to 4 rows, GEMM and cooperative matrix
// above.
std::vector<ops::LinearRoute> perf_routes(const PerfShape& s) {
  if (s.m <= 4) return {ops::LinearRoute::Gemv, ops::LinearRoute::Gemm};
  return {ops::LinearRoute::Gemm, ops::LinearRoute::CoopMat};
}

// "ceiling/copy_gemv M1 K384 N30522": the copy a streamed GEMV of that shape is held to.
std::string copy_ceiling_name(const PerfShape& shape) {
  return "ceiling/copy_gemv " + dims_name({shape.m, shape.k}, shape.n);
}

// "perf/q8ta_linear <route> M.. K.. N.. int8out" (at most 4 rows: through weight copies that
// stream from memory), or with the reference backend's latency for the same shape (EtvkShapes.h)
// "etvk/q8ta_linear ..." (one node, measured as the reference measures).
void add_perf_case(Registry& registry, const PerfShape& shape, ops::LinearRoute route,
                   bool int8_out, double reference_us = 0, CoopMatTile tile = {},
                   int32_t slices = 0) {
  LinearSetup s;
  s.input_sizes = {shape.m, shape.k};
  s.n = shape.n;
  s.route = route;
  s.coopmat_tile_n = tile.n;
  s.coopmat_tile_m = tile.m;
  s.split_k_slices = slices;
  s.int8_out = int8_out;
  s.input_zp = -2;
  s.out = {"none", -1, -128, 127};
  s.bias = shape.bias;
  s.accu = false;
  s.stream_weights = reference_us == 0;
  s.seed = 7;
  const std::string name = std::string(reference_us > 0 ? "etvk/" : "perf/") + "q8ta_linear " +
                           route_name(s) + " " + dims_name(s.input_sizes, s.n) +
                           (int8_out ? " int8out" : " floatout") + (shape.bias ? "" : " nobias");
  Case c{name,
         "q8ta_linear",
         shape_string(s.input_sizes) + "->" + std::to_string(s.n),
         layout_name(int8_out),
         false,
         true,
         false,
         shape.m <= 4 ? Metric::GBps : Metric::GOPs,  // few rows: memory-bound
         [s] { return std::make_unique<Q8taLinearCase>(s); }};
  if (route == ops::LinearRoute::CoopMat) c.peak = "peak/int8_coopmat";
  // A memory-bound case streaming its weights: against a copy of its bytes, node for node.
  if (shape.m <= 4 && s.stream_weights) c.peak = copy_ceiling_name(shape);
  c.reference_us = reference_us;
  registry.add(std::move(c));
}

// The copy a streamed GEMV case is held to (its 100%, add_perf_case): each of its nodes' bytes
// (int8 weights, scales and bias, the input and int8 output words) copied by as many
// independent dispatches as the case has weight copies.
void add_copy_ceiling(Registry& registry, const PerfShape& shape) {
  const double weight_bytes = HostLinear::bytes_of(shape.n, shape.k, shape.bias);
  const double in_bytes = double(int8x4_bytes({shape.m, shape.k}));
  const double out_bytes = double(int8x4_bytes({shape.m, shape.n}));
  const auto node_bytes = static_cast<uint64_t>(weight_bytes + in_bytes + out_bytes);
  const int64_t rows = shape.m;
  registry.add({copy_ceiling_name(shape), "bench_copy", std::to_string(node_bytes) + " B a node",
                "buffer -> buffer", false, true, false, Metric::GBps, [=] {
                  return make_copy_case(node_bytes, [=](const vk::DeviceProfile& profile) {
                    return weight_copies(profile, rows, weight_bytes, out_bytes, in_bytes);
                  });
                }});
}

}  // namespace

void register_linear_cases(Registry& registry) {
  uint32_t index = 0;
  for (const AccuShape& shape : kAccuShapes) {
    const int64_t rows = numel(shape.input) / shape.input.back();
    std::vector<ops::LinearRoute> routes = {ops::LinearRoute::Gemm, ops::LinearRoute::Auto,
                                            ops::LinearRoute::CoopMat};
    if (rows <= 4) routes.push_back(ops::LinearRoute::Gemv);
    for (bool int8_out : {true, false}) {
      for (ops::LinearRoute route : routes)
        add_accu_case(registry, shape, route, int8_out, index++);
    }
  }
  for (const AccuShape& shape : kGemvShapes) {
    for (bool int8_out : {true, false}) {
      add_accu_case(registry, shape, ops::LinearRoute::Gemv, int8_out, index++);
    }
  }
  for (const AccuShape& shape : kCoopMatWideShapes) {
    for (bool int8_out : {true, false}) {
      add_accu_case(registry, shape, ops::LinearRoute::CoopMat, int8_out, index++);
    }
  }
  for (const CoopMatTileShape& t : kCoopMatTileShapes) {
    for (bool int8_out : {true, false}) {
      add_accu_case(registry, t.shape, ops::LinearRoute::CoopMat, int8_out, index++, 0,
                    {t.tile_n, 0});
    }
    add_residual_accu_case(registry, t.shape, ops::LinearRoute::CoopMat, index++, 0, {t.tile_n, 0});
  }
  // The short tiles (16 x 32 and 32 x 32, K's stages split over 4 or 8 subgroups) forced,
  // every epilogue.
  for (const CoopMatTile short_tile : {CoopMatTile{0, 16}, CoopMatTile{0, 32}}) {
    for (const AccuShape& shape : kShortTileShapes) {
      for (bool int8_out : {true, false}) {
        add_accu_case(registry, shape, ops::LinearRoute::CoopMat, int8_out, index++, 0, short_tile);
      }
      add_residual_accu_case(registry, shape, ops::LinearRoute::CoopMat, index++, 0, short_tile);
      add_epilogue_accu_case(registry, shape, ops::LinearRoute::CoopMat, ops::LinearGelu::None,
                             index++, 0, short_tile);
      const ops::LinearGelu gelu = index % 2 ? ops::LinearGelu::Tanh : ops::LinearGelu::Erf;
      add_epilogue_accu_case(registry, shape, ops::LinearRoute::CoopMat, gelu, index++, 0,
                             short_tile);
    }
    for (const AccuShape& shape : {kColumnBlockShapes[0], kColumnBlockShapes[1]}) {
      add_column_blocks_accu_case(registry, shape, ops::LinearRoute::CoopMat, 3, index++, 0,
                                  short_tile);
    }
  }
  for (const AccuShape& shape : kResidualShapes) {
    const int64_t rows = numel(shape.input) / shape.input.back();
    for (ops::LinearRoute route : {ops::LinearRoute::Auto, ops::LinearRoute::Gemm,
                                   ops::LinearRoute::CoopMat, ops::LinearRoute::Gemv}) {
      if (route != ops::LinearRoute::Gemv || rows <= 4) {
        add_residual_accu_case(registry, shape, route, index++);
      }
    }
  }
  // The float residual add and the GELU (erf and tanh in turn) in the epilogue: every route on
  // the residual shapes, split-K on two of its shapes.
  for (const AccuShape& shape : kResidualShapes) {
    const int64_t rows = numel(shape.input) / shape.input.back();
    for (ops::LinearRoute route : {ops::LinearRoute::Auto, ops::LinearRoute::Gemm,
                                   ops::LinearRoute::CoopMat, ops::LinearRoute::Gemv}) {
      if (route == ops::LinearRoute::Gemv && rows > 4) continue;
      add_epilogue_accu_case(registry, shape, route, ops::LinearGelu::None, index++);
      const ops::LinearGelu gelu = (index / 2) % 2 ? ops::LinearGelu::Tanh : ops::LinearGelu::Erf;
      add_epilogue_accu_case(registry, shape, route, gelu, index++);
    }
  }
  for (const SplitKShape& sk : {kSplitKShapes[0], kSplitKShapes[1]}) {
    for (ops::LinearGelu gelu :
         {ops::LinearGelu::None, ops::LinearGelu::Erf, ops::LinearGelu::Tanh}) {
      add_epilogue_accu_case(registry, sk.shape, ops::LinearRoute::SplitK, gelu, index++,
                             sk.slices.back());
    }
  }
  // Column blocks (q8ta_linear_qkv) on every route that runs them: GEMV up to 4 rows, the
  // GEMM (the CPU kernel on CPU devices), the cooperative matrix (both tiles) and split-K.
  for (const AccuShape& shape : kColumnBlockShapes) {
    const int64_t rows = numel(shape.input) / shape.input.back();
    for (ops::LinearRoute route : {ops::LinearRoute::Auto, ops::LinearRoute::Gemm,
                                   ops::LinearRoute::CoopMat, ops::LinearRoute::Gemv}) {
      if (route == ops::LinearRoute::Gemv && rows > 4) continue;
      add_column_blocks_accu_case(registry, shape, route, 3, index++);
    }
  }
  add_column_blocks_accu_case(registry, kColumnBlockShapes[3], ops::LinearRoute::SplitK, 4, index++,
                              5);
  add_column_blocks_accu_case(registry, kColumnBlockShapes[1], ops::LinearRoute::SplitK, 3, index++,
                              0);
  for (const SplitKShape& sk : kSplitKShapes) {
    for (int32_t slices : sk.slices) {
      for (bool int8_out : {true, false}) {
        add_accu_case(registry, sk.shape, ops::LinearRoute::SplitK, int8_out, index++, slices);
      }
      add_residual_accu_case(registry, sk.shape, ops::LinearRoute::SplitK, index++, slices);
    }
  }
  // (with_and_without_int8_dot: on a CPU device also with its CPU kernels off, so both ROWS
  // variants of the kernel run.)
  for (const AccuShape& shape : kQ8cswShapes) {
    const bool bias = index % 2 == 0;
    const uint32_t seed = 1000 + index++;
    registry.add({"q8csw_linear " + dims_name(shape.input, shape.n) + (bias ? " bias" : " nobias"),
                  "q8csw_linear", shape_string(shape.input) + "->" + std::to_string(shape.n),
                  "buffer/width_packed -> buffer/width_packed", true, false, true, Metric::GOPs,
                  [shape, bias, seed] {
                    return std::make_unique<Q8cswLinearCase>(shape.input, shape.n, bias, seed);
                  }});
  }

  for (const AccuShape& shape : kQ8daShapes) {
    const int64_t rows = numel(shape.input) / shape.input.back();
    std::vector<ops::LinearRoute> routes = {ops::LinearRoute::Auto, ops::LinearRoute::Gemm};
    if (rows <= 4) routes.push_back(ops::LinearRoute::Gemv);
    if (rows > 4) routes.push_back(ops::LinearRoute::SplitK);
    routes.push_back(ops::LinearRoute::CoopMat);
    for (ops::LinearRoute route : routes) {
      const bool bias = index % 2 == 0;
      const uint32_t seed = 1000 + index++;
      Case c{"q8da_linear " + ops::to_string(route) + " " + dims_name(shape.input, shape.n) +
                 (bias ? " bias" : " nobias"),
             "q8da_linear",
             shape_string(shape.input) + "->" + std::to_string(shape.n),
             "buffer/width_packed -> buffer/width_packed",
             true,
             false,
             route != ops::LinearRoute::CoopMat,
             Metric::GOPs,
             [shape, route, bias, seed] {
               return std::make_unique<Q8daLinearCase>(shape.input, shape.n, route, bias, true,
                                                       seed);
             }};
      if (route == ops::LinearRoute::CoopMat) c.unavailable = ops::linear_coopmat_unavailable;
      registry.add(std::move(c));
    }
  }
  // q8csw_linear and q8da_linear timed at MiniLM's FFN shapes at sequence length 128 and the
  // wide GEMV (issue 35).
  for (const PerfShape& shape :
       {PerfShape{128, 384, 1536}, PerfShape{128, 1536, 384}, PerfShape{1, 512, 9059}}) {
    registry.add(
        {"perf/q8csw_linear " + dims_name({shape.m, shape.k}, shape.n), "q8csw_linear",
         std::to_string(shape.m) + "x" + std::to_string(shape.k) + "->" + std::to_string(shape.n),
         "buffer/width_packed -> buffer/width_packed", false, true, false,
         shape.m <= 4 ? Metric::GBps : Metric::GOPs, [shape] {
           return std::make_unique<Q8cswLinearCase>(std::vector<int64_t>{shape.m, shape.k}, shape.n,
                                                    true, 7);
         }});
  }
  for (const PerfShape& shape : {PerfShape{128, 384, 1536}, PerfShape{1, 512, 9059}}) {
    registry.add(
        {"perf/q8da_linear " + dims_name({shape.m, shape.k}, shape.n), "q8da_linear",
         std::to_string(shape.m) + "x" + std::to_string(shape.k) + "->" + std::to_string(shape.n),
         "buffer/width_packed -> buffer/width_packed", false, true, false,
         shape.m <= 4 ? Metric::GBps : Metric::GOPs, [shape] {
           return std::make_unique<Q8daLinearCase>(std::vector<int64_t>{shape.m, shape.k}, shape.n,
                                                   ops::LinearRoute::Auto, true, false, 7);
         }});
  }

  for (const PerfShape& shape : perf_shapes()) {
    if (shape.m <= 4) add_copy_ceiling(registry, shape);
    for (bool int8_out : {true, false}) {
      if (!int8_out && !perf_float_out(shape)) continue;
      for (ops::LinearRoute route : perf_routes(shape)) {
        add_perf_case(registry, shape, route, int8_out);
      }
    }
  }
  // The reference backend's shapes on the routes that suit them (GEMV for one row, as the
  // reference's fastest kernel there).
  for (const etvk::LinearShape& e : etvk::kLinear) {
    const PerfShape shape{e.m, e.k, e.n};
    for (ops::LinearRoute route : perf_routes(shape)) {
      if (e.m > 1 || route == ops::LinearRoute::Gemv) {
        add_perf_case(registry, shape, route, true, e.reference_us);
      }
    }
  }
  // Both cooperative-matrix tile widths: the reference backend's pointwise 48 -> 22 over
  // 256 x 256 pixels, the README example's 96 -> 24 over 128 x 72, N 32 / 64, mobilenet_v2's
  // pointwise layers, and large GEMMs (Linear.cpp's kNarrowMaxTiles).
  for (const PerfShape& shape :
       {PerfShape{65536, 48, 22}, PerfShape{9216, 96, 24}, PerfShape{16384, 64, 32},
        PerfShape{16384, 64, 64}, PerfShape{12544, 96, 24}, PerfShape{3136, 144, 24},
        PerfShape{784, 192, 64}, PerfShape{196, 384, 96}, PerfShape{49, 320, 1280},
        PerfShape{3136, 576, 128}, PerfShape{1024, 2048, 2048}, PerfShape{4096, 4096, 4096},
        PerfShape{512, 4096, 4096}}) {
    for (int32_t tile_n : {32, 128}) {
      add_perf_case(registry, shape, ops::LinearRoute::CoopMat, true, 0, {tile_n, 0});
    }
  }
  // Few row tiles with a mid-sized K (mobilenet_v2's pointwise layers at 14 x 14 and 7 x 7):
  // cooperative matrices against split-K with the op's slices and 4 to 72 (Linear.cpp's
  // use_split_k bounds), and resnet18's 3x3 512x7x7 as its GEMM (K 4608).
  for (const PerfShape& shape :
       {PerfShape{196, 384, 96}, PerfShape{196, 576, 96}, PerfShape{49, 576, 160},
        PerfShape{49, 960, 160}, PerfShape{49, 960, 320}, PerfShape{196, 2304, 256},
        PerfShape{49, 4608, 512}}) {
    add_perf_case(registry, shape, ops::LinearRoute::CoopMat, true);
    for (int32_t tile_m : {16, 32}) {
      add_perf_case(registry, shape, ops::LinearRoute::CoopMat, true, 0, {0, tile_m});
    }
    for (int32_t slices : {0, 4, 8, 16, 24, 36, 48, 72}) {
      if (32 * slices <= shape.k) {
        add_perf_case(registry, shape, ops::LinearRoute::SplitK, true, 0, {}, slices);
      }
    }
  }
  // Transformer projections (all-MiniLM-L6-v2 at 128 and 512 tokens: 384 -> 384 / 1152 /
  // 1536, 1536 -> 384; ViT-Ti/16: 197 tokens, 192 -> 192 / 576 / 768, 768 -> 192) on every
  // route, for the route thresholds of docs/BENCHMARKS.md.
  for (const PerfShape& shape :
       {PerfShape{128, 384, 384}, PerfShape{128, 384, 1152}, PerfShape{128, 384, 1536},
        PerfShape{128, 1536, 384}, PerfShape{512, 384, 384}, PerfShape{512, 384, 1536},
        PerfShape{512, 1536, 384}, PerfShape{197, 192, 576}, PerfShape{197, 192, 768},
        PerfShape{197, 768, 192}}) {
    add_perf_case(registry, shape, ops::LinearRoute::Auto, true);
    add_perf_case(registry, shape, ops::LinearRoute::Gemm, true);
    for (int32_t tile_n : {32, 128}) {
      add_perf_case(registry, shape, ops::LinearRoute::CoopMat, true, 0, {tile_n, 0});
    }
    for (int32_t tile_m : {16, 32}) {
      add_perf_case(registry, shape, ops::LinearRoute::CoopMat, true, 0, {0, tile_m});
    }
    for (int32_t slices : {0, 4, 12}) {
      add_perf_case(registry, shape, ops::LinearRoute::SplitK, true, 0, {}, slices);
    }
  }
}

}  // namespace vkd::custom_ops
