// ACCU and PERF cases for the torchao affine ops: q8ta_quantize_affine,
// q8ta_dequantize_affine, choose_qparams_affine, and the dynamic-quantization chain
// choose_qparams_affine -> q8ta_quantize_affine. Every result is compared exactly (bits) with
// test/reference/AffineQuantReference.h.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/ops/AffineQuant.h"
#include "runtime/ops/QuantizeDequantize.h"
#include "test/custom_ops/Harness.h"
#include "test/reference/AffineQuantReference.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/QuantReference.h"

namespace vkd::custom_ops {
namespace {

using testing::RefShape;

// Every float placement, in the order the cases rotate through them.
const FloatPlacement kFloatPlacements[] = {
    {StorageType::Buffer, MemoryLayout::WidthPacked},
    {StorageType::Texture3D, MemoryLayout::ChannelsPacked},
    {StorageType::Buffer, MemoryLayout::ChannelsPacked},
    {StorageType::Texture3D, MemoryLayout::WidthPacked},
    {StorageType::Buffer, MemoryLayout::HeightPacked},
    {StorageType::Texture3D, MemoryLayout::HeightPacked},
};

struct QRange {
  int qmin, qmax;
};
// int8, int8 restricted (symmetric), int4, uint4 held in int8.
const QRange kRanges[] = {{-128, 127}, {-127, 127}, {-8, 7}, {0, 15}};

struct AffineConfig {
  std::vector<int64_t> sizes, block_size;
  QRange range;
  FloatPlacement fp;
  MemoryLayout int8_layout;
};

std::string list_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}
RefShape ref_shape(const std::vector<int64_t>& sizes) {
  const TensorSpec spec{sizes, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  const Dims4 d = spec.dims4();
  return {d.n, d.c, d.h, d.w};
}
TensorSpec param_spec(int64_t blocks, DType dtype) {
  return {{blocks}, dtype, StorageType::Buffer, MemoryLayout::WidthPacked};
}

// Bitwise float comparison (NaN equals NaN; -0 differs from +0).
void compare_float_bits(const std::vector<float>& actual, const std::vector<float>& expected,
                        AccuResult& r) {
  if (actual.size() != expected.size()) {
    r.mismatches += static_cast<int64_t>(std::max(actual.size(), expected.size()));
    return;
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    const bool both_nan = std::isnan(actual[i]) && std::isnan(expected[i]);
    const bool same = both_nan || std::memcmp(&actual[i], &expected[i], sizeof(float)) == 0;
    const double err = std::fabs(double(actual[i]) - double(expected[i]));
    if (!same) r.max_abs_error = std::max(r.max_abs_error, std::isnan(err) ? INFINITY : err);
    r.mismatches += !same;
    ++r.checked;
  }
}
void compare_ints(const std::vector<int32_t>& actual, const std::vector<int32_t>& expected,
                  AccuResult& r) {
  if (actual.size() != expected.size()) {
    r.mismatches += static_cast<int64_t>(std::max(actual.size(), expected.size()));
    return;
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    r.max_abs_error = std::max(r.max_abs_error, std::fabs(double(actual[i]) - expected[i]));
    r.mismatches += actual[i] != expected[i];
    ++r.checked;
  }
}

// Per-block scales: every third block a power of two (so x * (1 / scale) is exact and the
// constructed ties below are exact ties), the others random in [1e-3, 0.5).
std::vector<float> random_scales(int64_t blocks, std::mt19937& rng) {
  std::uniform_real_distribution<float> value(1e-3f, 0.5f);
  std::uniform_int_distribution<int> exponent(-10, 1);
  std::vector<float> s(static_cast<size_t>(blocks));
  for (size_t b = 0; b < s.size(); ++b) {
    s[b] = b % 3 == 0 ? std::ldexp(1.0f, exponent(rng)) : value(rng);
  }
  return s;
}
std::vector<int32_t> random_zero_points(int64_t blocks, const QRange& q, std::mt19937& rng) {
  std::uniform_int_distribution<int> value(q.qmin, q.qmax);
  std::vector<int32_t> z(static_cast<size_t>(blocks));
  for (auto& v : z) v = value(rng);
  return z;
}

// Values spanning 1.3x each block's representable range (both ends saturate); every fourth an
// exact tie (k + 0.5) * scale, which rounds half to even.
std::vector<float> random_inputs(const std::vector<int64_t>& blocks, const std::vector<float>& s,
                                 const std::vector<int32_t>& z, const QRange& q,
                                 std::mt19937& rng) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> tie(-20, 20);
  std::vector<float> x(blocks.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t b = static_cast<size_t>(blocks[i]);
    const float centre = (0.5f * (q.qmin + q.qmax) - z[b]) * s[b];
    const float reach = 1.3f * 0.5f * (q.qmax - q.qmin) * s[b];
    x[i] = i % 4 == 3 ? (static_cast<float>(tie(rng)) + 0.5f) * s[b] : centre + reach * unit(rng);
  }
  return x;
}

// What the affine cases share: the config, the block of each element, and the graph's float
// tensor x, int8x4 tensor xq and per-block scale / zero-point buffers.
class AffineCase : public CaseInstance {
 protected:
  explicit AffineCase(AffineConfig c) : c_(std::move(c)) {}

  // Adds x / xq (the caller orders them: the op's input first, as the graph's inputs are).
  void add_float_tensor(graph::ComputeGraph& g) {
    x_ref_ = g.add_tensor({c_.sizes, DType::Float32, c_.fp.storage, c_.fp.layout}, "x");
  }
  void add_int8_tensor(graph::ComputeGraph& g) {
    q_ref_ = g.add_tensor({c_.sizes, DType::Int8x4, StorageType::Buffer, c_.int8_layout}, "xq");
  }
  // Finds the block grid and adds one scale and one zero point per block.
  void add_block_params(graph::ComputeGraph& g) {
    blocks_ = testing::ref_block_of_elements(c_.sizes, c_.block_size);
    nb_ = testing::ref_block_count(c_.sizes, c_.block_size);
    s_ref_ = g.add_tensor(param_spec(nb_, DType::Float32), "scale");
    z_ref_ = g.add_tensor(param_spec(nb_, DType::Int32), "zero_point");
  }
  void add_quantize_node(graph::ComputeGraph& g) const {
    ops::add_quantize_affine_node(g, x_ref_, s_ref_, z_ref_, c_.block_size, c_.range.qmin,
                                  c_.range.qmax, q_ref_);
  }
  // xq's words for `codes`, padding lanes as the kernels write them.
  std::vector<int32_t> packed(const std::vector<int8_t>& codes) const {
    return testing::ref_pack(c_.int8_layout, ref_shape(c_.sizes), codes,
                             ops::affine_pad_value(c_.range.qmin, c_.range.qmax));
  }
  // Compares xq with the reference quantization of x_ by (scale, zero_point).
  void compare_quantized(const graph::ComputeGraph& g, const std::vector<float>& scale,
                         const std::vector<int32_t>& zero_point, AccuResult& r) const {
    compare_words(g.read_words(q_ref_),
                  packed(testing::reference_quantize_affine(x_, blocks_, scale, zero_point,
                                                            c_.range.qmin, c_.range.qmax)),
                  r);
  }
  // One pass over the float tensor plus one over xq's words.
  double float_and_int8_bytes() const {
    const TensorSpec s{c_.sizes, DType::Int8x4, StorageType::Buffer, c_.int8_layout};
    return 4.0 * s.numel() + 4.0 * testing::ref_word_count(c_.int8_layout, ref_shape(c_.sizes));
  }

  void write_block_params(graph::ComputeGraph& g) const {
    g.write_float(s_ref_, s_);
    g.write_int32(z_ref_, z_);
  }

  AffineConfig c_;
  int64_t nb_ = 0;
  graph::ValueRef x_ref_ = -1, s_ref_ = -1, z_ref_ = -1, q_ref_ = -1;
  std::vector<int64_t> blocks_;
  std::vector<float> x_, s_;  // x_: the float values; s_, z_: the ops' scales / zero points
  std::vector<int32_t> z_;    // (choose_qparams_affine finds them instead)
};

class QuantizeAffineCase : public AffineCase {
 public:
  QuantizeAffineCase(AffineConfig c, bool specials)
      : AffineCase(std::move(c)), specials_(specials) {}
  void build(graph::ComputeGraph& g) override {
    add_float_tensor(g);
    add_block_params(g);
    add_int8_tensor(g);
    add_quantize_node(g);
    for (auto r : {x_ref_, s_ref_, z_ref_}) g.add_input(r);
    g.add_output(q_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    s_ = random_scales(nb_, rng);
    z_ = random_zero_points(nb_, c_.range, rng);
    x_ = random_inputs(blocks_, s_, z_, c_.range, rng);
    if (specials_) {  // infinities, NaN (-> quant_min), signed zeros, huge values
      const float specials[] = {INFINITY, -INFINITY, NAN, -0.0f, 0.0f, 3e38f, -3e38f, 1e-30f};
      for (size_t i = 0; i < x_.size(); i += 3) x_[i] = specials[(i / 3) % std::size(specials)];
    }
    g.write_float(x_ref_, x_);
    write_block_params(g);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    compare_quantized(g, s_, z_, r);
    return r;
  }
  PerfWork work() const override { return {float_and_int8_bytes() + 8.0 * nb_, 0.0}; }

 private:
  bool specials_;
};

class DequantizeAffineCase : public AffineCase {
 public:
  explicit DequantizeAffineCase(AffineConfig c) : AffineCase(std::move(c)) {}
  void build(graph::ComputeGraph& g) override {
    add_int8_tensor(g);
    add_block_params(g);
    add_float_tensor(g);
    ops::add_dequantize_affine_node(g, q_ref_, s_ref_, z_ref_, c_.block_size, c_.range.qmin,
                                    c_.range.qmax, x_ref_);
    for (auto r : {q_ref_, s_ref_, z_ref_}) g.add_input(r);
    g.add_output(x_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    s_ = random_scales(nb_, rng);
    // Zero points beyond the code range too: the subtraction is int32.
    std::uniform_int_distribution<int> zp(-300, 300), code(c_.range.qmin, c_.range.qmax);
    z_.resize(static_cast<size_t>(nb_));
    for (auto& v : z_) v = zp(rng);
    q_.resize(blocks_.size());
    for (auto& v : q_) v = static_cast<int8_t>(code(rng));
    g.write_words(q_ref_, packed(q_));
    write_block_params(g);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    compare_float_bits(g.read_float(x_ref_),
                       testing::reference_dequantize_affine(q_, blocks_, s_, z_), r);
    return r;
  }
  PerfWork work() const override { return {float_and_int8_bytes(), 0.0}; }

 private:
  std::vector<int8_t> q_;
};

// choose_qparams_affine alone (`quantize` false) or followed by q8ta_quantize_affine on its
// results (dynamic quantization; the quantized output is checked too).
class ChooseQparamsCase : public AffineCase {
 public:
  ChooseQparamsCase(AffineConfig c, ops::AffineMapping m, bool quantize, float eps)
      : AffineCase(std::move(c)), m_(m), quantize_(quantize), eps_(eps) {}
  void build(graph::ComputeGraph& g) override {
    add_float_tensor(g);
    add_block_params(g);
    ops::add_choose_qparams_affine_node(g, x_ref_, m_, c_.block_size, c_.range.qmin, c_.range.qmax,
                                        eps_, s_ref_, z_ref_);
    g.add_input(x_ref_);
    g.add_output(s_ref_);
    g.add_output(z_ref_);
    if (quantize_) {
      add_int8_tensor(g);
      add_quantize_node(g);
      g.add_output(q_ref_);
    }
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    // Per block a pattern: mixed signs, all positive (min_neg = 0), all negative (max_pos = 0),
    // all equal (zero range -> the eps path), all zero, or random magnitudes.
    std::vector<int> pattern(static_cast<size_t>(nb_));
    std::vector<float> level(static_cast<size_t>(nb_));
    std::uniform_int_distribution<int> pick(0, 5);
    std::uniform_real_distribution<float> mag(-8.0f, 3.0f), unit(-1.0f, 1.0f);
    for (size_t b = 0; b < pattern.size(); ++b) {
      pattern[b] = pick(rng);
      level[b] = std::exp2(mag(rng));
    }
    x_.resize(blocks_.size());
    for (size_t i = 0; i < x_.size(); ++i) {
      const size_t b = static_cast<size_t>(blocks_[i]);
      const float u = unit(rng) * level[b];
      switch (pattern[b]) {
        case 0: x_[i] = u; break;
        case 1: x_[i] = std::fabs(u); break;
        case 2: x_[i] = -std::fabs(u); break;
        case 3: x_[i] = level[b] * 0.75f; break;  // zero range, positive
        case 4: x_[i] = 0.0f; break;
        default: x_[i] = u * 1e3f; break;
      }
    }
    g.write_float(x_ref_, x_);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const auto ref = testing::reference_choose_qparams_affine(
        x_, blocks_, nb_, static_cast<testing::RefMapping>(m_), c_.range.qmin, c_.range.qmax, eps_);
    AccuResult r;
    compare_float_bits(g.read_float(s_ref_), ref.scale, r);
    compare_ints(g.read_int32(z_ref_), ref.zero_point, r);
    if (quantize_) compare_quantized(g, ref.scale, ref.zero_point, r);
    return r;
  }
  PerfWork work() const override {
    const TensorSpec s{c_.sizes, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
    return {4.0 * s.numel() + 8.0 * nb_, 0.0};
  }

 private:
  ops::AffineMapping m_;
  bool quantize_;
  float eps_;
};

// PERF anchor: the per-tensor q8ta_quantize on the same shape and layouts as the affine PERF
// cases, so their figures can be read against the kernel they extend.
class PerTensorQuantizeCase : public CaseInstance {
 public:
  PerTensorQuantizeCase(std::vector<int64_t> sizes, MemoryLayout layout)
      : sizes_(std::move(sizes)), layout_(layout) {}
  void build(graph::ComputeGraph& g) override {
    x_ref_ = g.add_tensor({sizes_, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked});
    q_ref_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, layout_});
    ops::add_q8ta_quantize_node(g, x_ref_, q_ref_, q_);
    g.add_input(x_ref_);
    g.add_output(q_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    std::uniform_real_distribution<float> value(-8.0f, 8.0f);
    x_.resize(static_cast<size_t>(g.spec(x_ref_).numel()));
    for (auto& v : x_) v = value(rng);
    g.write_float(x_ref_, x_);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    compare_words(g.read_words(q_ref_),
                  testing::ref_pack(layout_, ref_shape(sizes_),
                                    testing::reference_quantize(x_, q_.scale, q_.zero_point,
                                                                q_.quant_min, q_.quant_max),
                                    q_.zero_point),
                  r);
    return r;
  }
  PerfWork work() const override {
    return {4.0 * double(x_.size()) + 4.0 * testing::ref_word_count(layout_, ref_shape(sizes_)),
            0.0};
  }

 private:
  std::vector<int64_t> sizes_;
  MemoryLayout layout_;
  ops::QuantParams q_{0.05f, 0, -128, 127};
  graph::ValueRef x_ref_ = -1, q_ref_ = -1;
  std::vector<float> x_;
};

// Block sizes torchao accepts for `sizes`: per tensor, per channel (dim 0 and the first dim of
// size > 1), per token, per group along the last dim (32, 64 and a small odd divisor), and a
// mixed grid of partial blocks along every dim that allows one.
std::vector<std::vector<int64_t>> block_sizes_for(const std::vector<int64_t>& sizes) {
  const size_t r = sizes.size();
  std::vector<std::vector<int64_t>> out;
  out.push_back(std::vector<int64_t>(r, -1));  // per tensor
  out.push_back(sizes);                        // per tensor, spelled as the sizes
  auto per_dim = sizes;
  per_dim[0] = 1;
  out.push_back(per_dim);  // per channel along dim 0
  if (r >= 2) {
    auto per_c = sizes;
    per_c[1] = 1;
    out.push_back(per_c);  // per channel along dim 1 (NCHW channels)
  }
  std::vector<int64_t> token(r, 1);
  token[r - 1] = -1;
  out.push_back(token);  // per token
  const int64_t last = sizes[r - 1];
  for (int64_t g : {int64_t(32), int64_t(64), int64_t(3), int64_t(5)}) {
    if (last % g == 0 && g < last) {
      std::vector<int64_t> group(r, 1);
      group[r - 1] = g;
      out.push_back(group);  // per group along the last dim
    }
  }
  std::vector<int64_t> mixed(r);
  for (size_t d = 0; d < r; ++d) {
    mixed[d] = sizes[d] % 2 == 0 && sizes[d] > 2 ? 2 : sizes[d] % 3 == 0 && sizes[d] > 3 ? 3 : -1;
  }
  out.push_back(mixed);
  std::vector<int64_t> all_ones(r, 1);
  out.push_back(all_ones);  // one block per element
  // Drop repeats (small shapes make several of these the same), keeping the first.
  std::vector<std::vector<int64_t>> unique;
  for (const auto& b : out) {
    if (std::find(unique.begin(), unique.end(), b) == unique.end()) unique.push_back(b);
  }
  return unique;
}

const std::vector<std::vector<int64_t>>& affine_shapes() {
  static const std::vector<std::vector<int64_t>> shapes = {
      {1, 1, 1, 1}, {1, 3, 5, 7}, {2, 17, 9, 6},  {7},       {5, 9},       {3, 6, 10},
      {4, 96},      {2, 3, 64},   {1, 2, 5, 128}, {13, 192}, {3, 5, 7, 66}};
  return shapes;
}

}  // namespace

void register_affine_quant_cases(Registry& registry) {
  size_t index = 0;
  const ops::AffineMapping mappings[] = {ops::AffineMapping::Symmetric,
                                         ops::AffineMapping::SymmetricNoClippingErr,
                                         ops::AffineMapping::Asymmetric};
  const char* mapping_names[] = {"sym", "sym_noclip", "asym"};
  for (const auto& sizes : affine_shapes()) {
    for (const auto& bs : block_sizes_for(sizes)) {
      const size_t k = index++;
      const AffineConfig c{sizes, bs, kRanges[k % std::size(kRanges)],
                           kFloatPlacements[k % std::size(kFloatPlacements)],
                           kAllPackedInt8Layouts[k % 3]};
      const std::string shape = shape_string(sizes);
      const std::string what = shape + "/bs" + list_string(bs) + "/q[" +
                               std::to_string(c.range.qmin) + "," + std::to_string(c.range.qmax) +
                               "]";
      const std::string fp = placement_name(c.fp), lname(to_string(c.int8_layout));
      registry.add({"q8ta_quantize_affine/" + fp + "->" + lname + "/" + what,
                    "q8ta_quantize_affine", shape, fp + " -> " + lname, true, false, false,
                    Metric::GBps,
                    [=] { return std::make_unique<QuantizeAffineCase>(c, k % 5 == 0); }});
      registry.add({"q8ta_dequantize_affine/" + lname + "->" + fp + "/" + what,
                    "q8ta_dequantize_affine", shape, lname + " -> " + fp, true, false, false,
                    Metric::GBps, [=] { return std::make_unique<DequantizeAffineCase>(c); }});
      const size_t mi = k % 3;
      // eps: torchao's default (float32 eps) or a larger one, as torchao's callers pass.
      const float eps = k % 2 ? 1.1920928955078125e-07f : 1e-5f;
      registry.add(
          {std::string("choose_qparams_affine/") + mapping_names[mi] + "/" + fp + "/" + what,
           "choose_qparams_affine", shape, fp, true, false, false, Metric::GBps,
           [=] { return std::make_unique<ChooseQparamsCase>(c, mappings[mi], false, eps); }});
      registry.add({std::string("dynamic_quant_affine/") + mapping_names[(mi + 1) % 3] + "/" + fp +
                        "->" + lname + "/" + what,
                    "choose_qparams_affine+q8ta_quantize_affine", shape, fp + " -> " + lname, true,
                    false, false, Metric::GBps, [=] {
                      return std::make_unique<ChooseQparamsCase>(c, mappings[(mi + 1) % 3], true,
                                                                 eps);
                    }});
    }
  }

  registry.add({"perf/q8ta_quantize_affine/anchor_q8ta_quantize/1x4096x4096", "q8ta_quantize",
                "1x4096x4096", "buffer/width_packed -> 4H4W per-tensor q8ta_quantize", false, true,
                false, Metric::GBps, [] {
                  return std::make_unique<PerTensorQuantizeCase>(
                      std::vector<int64_t>{1, 4096, 4096}, MemoryLayout::PackedInt8_4H4W);
                }});
  // PERF: a 4096 x 4096 activation per token and per group of 32 (float32 buffer -> 4H4W).
  const std::vector<int64_t> big = {1, 4096, 4096};
  const FloatPlacement buf{StorageType::Buffer, MemoryLayout::WidthPacked};
  for (const auto& [name, bs] :
       {std::pair<std::string, std::vector<int64_t>>{"per_token", {1, 1, -1}},
        {"per_group32", {1, 1, 32}},
        {"per_tensor", {-1, -1, -1}}}) {
    const AffineConfig c{big, bs, {-128, 127}, buf, MemoryLayout::PackedInt8_4H4W};
    const std::string shape = shape_string(big);
    registry.add({"perf/q8ta_quantize_affine/" + name + "/" + shape, "q8ta_quantize_affine", shape,
                  "buffer/width_packed -> 4H4W " + name, false, true, false, Metric::GBps,
                  [=] { return std::make_unique<QuantizeAffineCase>(c, false); }});
    registry.add({"perf/q8ta_dequantize_affine/" + name + "/" + shape, "q8ta_dequantize_affine",
                  shape, "4H4W -> buffer/width_packed " + name, false, true, false, Metric::GBps,
                  [=] { return std::make_unique<DequantizeAffineCase>(c); }});
    if (name == "per_tensor") continue;  // q8ta_quantize's comparison only (one block)
    registry.add({"perf/choose_qparams_affine/" + name + "/" + shape, "choose_qparams_affine",
                  shape, "buffer/width_packed " + name, false, true, false, Metric::GBps, [=] {
                    return std::make_unique<ChooseQparamsCase>(c, ops::AffineMapping::Asymmetric,
                                                               false, 1.1920928955078125e-07f);
                  }});
  }
}

}  // namespace vkd::custom_ops
