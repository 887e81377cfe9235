// ACCU and PERF cases for float_sum / float_vector_norm (runtime/ops/Reduce.h): every dim of
// awkward ranks 1 to 4, keepdim or not, outputs in every float buffer layout; sums through +-0,
// +-inf and NaN; norms of values spread over 2^-20 .. 2^20 (4096 square roots of two-term sums,
// against std::sqrt's correctly rounded ones). Every output is compared bit for bit with
// test/reference/FloatElementwiseReference.h (two NaNs match). PERF: MiniLM's pooling at
// T = 128: the sum over tokens of [1, 128, 384], the norm of [1, 384].
// float_masked_mean / q8ta_masked_mean [_normalize] (the whole pooling in one dispatch): float32
// hidden states and int8 ones in each packed layout, masks [B, T] and [B, T, 1] of 0/1 (rows
// with no token: the count clamped) or any values, C past the workgroup (several channels per
// invocation) and below it, against test/reference/MaskedMeanReference.h bit for bit; on a CPU
// device also with its CPU kernels off (the GPUs' staged kernel: chunks of tokens, the last one
// partial, T not a multiple of 4, several channel blocks, the last one partial, C = 4096 where
// the last blocks stage one token a chunk, T = 1, T = 3000 over 5 channels). PERF: MiniLM's
// pooling at T = 128 from its last layer norm's int8 output.
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "runtime/ops/Reduce.h"
#include "test/custom_ops/Harness.h"
#include "test/reference/FloatElementwiseReference.h"
#include "test/reference/MaskedMeanReference.h"

namespace vkd::custom_ops {
namespace {

struct Setup {
  std::vector<int64_t> shape;
  size_t dim = 0;
  bool keepdim = false, norm = false, specials = false;
  MemoryLayout out_layout = MemoryLayout::WidthPacked;

  std::vector<int64_t> out_shape() const {
    std::vector<int64_t> out = shape;
    if (keepdim) {
      out[dim] = 1;
    } else {
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(dim));
    }
    return out;
  }
};

// Bit-for-bit comparison of two float vectors (two NaNs match).
AccuResult compare_bits(const std::vector<float>& got, const std::vector<float>& want) {
  AccuResult r;
  if (got.size() != want.size()) {
    r.mismatches = static_cast<int64_t>(std::max(got.size(), want.size()));
    return r;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t gb = 0, wb = 0;
    std::memcpy(&gb, &got[i], 4);
    std::memcpy(&wb, &want[i], 4);
    if (gb != wb && !(std::isnan(got[i]) && std::isnan(want[i]))) {
      ++r.mismatches;
      const double err = std::fabs(double(got[i]) - double(want[i]));
      r.max_abs_error = std::max(r.max_abs_error, std::isnan(err) ? INFINITY : err);
    }
    ++r.checked;
  }
  return r;
}

class ReduceCase : public CaseInstance {
 public:
  explicit ReduceCase(Setup s) : s_(std::move(s)) {}

  void build(graph::ComputeGraph& g) override {
    in_ = g.add_tensor({s_.shape, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked},
                       "x");
    out_ = g.add_tensor({s_.out_shape(), DType::Float32, StorageType::Buffer, s_.out_layout}, "y");
    ops::add_float_reduce_node(g, in_, out_, static_cast<int64_t>(s_.dim), s_.norm);
    g.add_input(in_);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    const float inf = std::numeric_limits<float>::infinity();
    const float specials[] = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN()};
    std::uniform_real_distribution<float> value(-4.0f, 4.0f);
    std::uniform_int_distribution<int> exponent(-20, 20), pick(0, 40);
    x_.resize(static_cast<size_t>(testing::ref_numel(s_.shape)));
    for (float& x : x_) {
      const int k = pick(rng);
      x = s_.specials && k < 5 ? specials[k] : std::ldexp(value(rng), exponent(rng));
    }
    g.write_float(in_, x_);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    return compare_bits(g.read_float(out_),
                        testing::ref_float_reduce(x_, s_.shape, s_.dim, s_.norm));
  }
  PerfWork work() const override {
    const double in = static_cast<double>(testing::ref_numel(s_.shape));
    return {4.0 * (in + static_cast<double>(testing::ref_numel(s_.out_shape()))),
            s_.norm ? 2.0 * in : in};
  }

 private:
  Setup s_;
  graph::ValueRef in_ = -1, out_ = -1;
  std::vector<float> x_;
};

void add_case(Registry& registry, const std::string& prefix, const Setup& s, bool accu) {
  const std::string op = s.norm ? "float_vector_norm" : "float_sum";
  const std::string shape = shape_string(s.shape) + "/dim" + std::to_string(s.dim) +
                            (s.keepdim ? "_keepdim" : "") + (s.specials ? "/specials" : "");
  const std::string layout = s.out_layout == MemoryLayout::WidthPacked ? "buffer/width_packed"
                             : s.out_layout == MemoryLayout::HeightPacked
                                 ? "buffer/height_packed"
                                 : "buffer/channels_packed";
  registry.add({prefix + op + "/" + shape + "/" + layout, op, shape, layout, accu, !accu, false,
                Metric::GBps, [=] { return std::make_unique<ReduceCase>(s); }});
}

struct MaskedMeanSetup {
  int64_t B = 1, T = 1, C = 1;
  std::optional<MemoryLayout> int8;  // the input's packed layout, else float32
  bool normalize = false, column_mask = false, binary_mask = true;
  float mask_min = 1e-9f, eps = 1e-12f;
};

class MaskedMeanCase : public CaseInstance {
 public:
  explicit MaskedMeanCase(MaskedMeanSetup s) : s_(s) {}

  void build(graph::ComputeGraph& g) override {
    const std::vector<int64_t> x = {s_.B, s_.T, s_.C};
    in_ = s_.int8 ? g.add_tensor({x, DType::Int8x4, StorageType::Buffer, *s_.int8}, "x")
                  : g.add_tensor(
                        {x, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "x");
    const std::vector<int64_t> m =
        s_.column_mask ? std::vector<int64_t>{s_.B, s_.T, 1} : std::vector<int64_t>{s_.B, s_.T};
    mask_ = g.add_tensor({m, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "m");
    out_ = g.add_tensor(
        {{s_.B, s_.C}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "y");
    ops::MaskedMeanParams p;
    p.mask_min = s_.mask_min;
    if (s_.normalize) p.eps = s_.eps;
    if (s_.int8) p.input = ops::QuantParams{kScale, kZeroPoint};
    ops::add_masked_mean_node(g, in_, mask_, out_, p);
    g.add_input(in_);
    g.add_input(mask_);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    const size_t n = static_cast<size_t>(s_.B * s_.T * s_.C);
    x_.resize(n);
    if (s_.int8) {
      std::uniform_int_distribution<int> byte(-128, 127);
      std::vector<int8_t> q(n);
      for (size_t i = 0; i < n; ++i) {
        q[i] = static_cast<int8_t>(byte(rng));
        x_[i] = static_cast<float>(q[i] - kZeroPoint) * kScale;  // what the reference reads
      }
      g.write_int8(in_, q, static_cast<int8_t>(kZeroPoint));
    } else {
      std::uniform_real_distribution<float> value(-4.0f, 4.0f);
      std::uniform_int_distribution<int> exponent(-8, 8);
      for (float& v : x_) v = std::ldexp(value(rng), exponent(rng));
      g.write_float(in_, x_);
    }
    // 0/1 masks: a prefix of tokens kept per row (row 1 of several none: the clamped count);
    // otherwise any values, some negative.
    m_.assign(static_cast<size_t>(s_.B * s_.T), 0.0f);
    std::uniform_int_distribution<int64_t> kept(1, s_.T);
    std::uniform_real_distribution<float> any(-0.5f, 2.0f);
    for (int64_t b = 0; b < s_.B; ++b) {
      const int64_t k = b == 1 ? 0 : kept(rng);
      for (int64_t t = 0; t < s_.T; ++t) {
        m_[static_cast<size_t>(b * s_.T + t)] = s_.binary_mask ? (t < k ? 1.0f : 0.0f) : any(rng);
      }
    }
    g.write_float(mask_, m_);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const std::optional<float> eps = s_.normalize ? std::optional<float>(s_.eps) : std::nullopt;
    return compare_bits(g.read_float(out_),
                        testing::ref_masked_mean(x_, m_, s_.B, s_.T, s_.C, s_.mask_min, eps));
  }
  PerfWork work() const override {
    const double x = static_cast<double>(s_.B * s_.T * s_.C);
    return {(s_.int8 ? 1.0 : 4.0) * x + 4.0 * static_cast<double>(s_.B * (s_.T + s_.C)), 2.0 * x};
  }

 private:
  static constexpr float kScale = 0.03125f;
  static constexpr int32_t kZeroPoint = 6;
  MaskedMeanSetup s_;
  graph::ValueRef in_ = -1, mask_ = -1, out_ = -1;
  std::vector<float> x_, m_;
};

std::string layout_name(const std::optional<MemoryLayout>& l) {
  if (!l) return "buffer/width_packed";
  return *l == MemoryLayout::PackedInt8_4W4C   ? "4W4C"
         : *l == MemoryLayout::PackedInt8_4H4W ? "4H4W"
                                               : "4C1W";
}

void add_masked_mean_case(Registry& registry, const std::string& prefix, const MaskedMeanSetup& s,
                          bool accu) {
  const std::string op =
      std::string(s.int8 ? "q8ta" : "float") + "_masked_mean" + (s.normalize ? "_normalize" : "");
  const std::string shape = std::to_string(s.B) + "x" + std::to_string(s.T) + "x" +
                            std::to_string(s.C) + (s.column_mask ? "/mask_BxTx1" : "") +
                            (s.binary_mask ? "" : "/any_mask");
  const std::string layout = layout_name(s.int8);
  // with_and_without_int8_dot: on a CPU device also its GPU kernel (STAGED 1).
  registry.add({prefix + op + "/" + shape + "/" + layout, op, shape, layout, accu, !accu, accu,
                Metric::GBps, [=] { return std::make_unique<MaskedMeanCase>(s); }});
}

}  // namespace

void register_reduce_cases(Registry& registry) {
  for (bool normalize : {false, true}) {
    std::vector<std::optional<MemoryLayout>> inputs = {std::nullopt};
    for (MemoryLayout l : kAllPackedInt8Layouts) inputs.push_back(l);
    for (const auto& input : inputs) {
      // The staged kernel on a 512-invocation workgroup (normalize: blocks of 512 channels,
      // chunks of 4096 / C tokens; means: blocks of 128 channels, chunks of 32 tokens):
      // [1, 128, 384] 13 chunks, the last of 8 tokens; [3, 37, 700] two blocks, the second of
      // 188 channels; [2, 1, 700] one token.
      for (const auto& [B, T, C] : std::vector<std::array<int64_t, 3>>{{1, 1, 1},
                                                                       {3, 7, 10},
                                                                       {2, 33, 384},
                                                                       {1, 5, 515},
                                                                       {1, 128, 384},
                                                                       {3, 37, 700},
                                                                       {2, 1, 700}}) {
        add_masked_mean_case(registry, "", {B, T, C, input, normalize}, true);
      }
    }
    // The widest pooled (the last normalize blocks stage one token a chunk); many tokens over
    // few channels (chunks of 819 tokens).
    add_masked_mean_case(registry, "", {2, 3, 4096, std::nullopt, normalize}, true);
    add_masked_mean_case(registry, "", {1, 3, 4096, MemoryLayout::PackedInt8_4H4W, normalize},
                         true);
    add_masked_mean_case(registry, "", {2, 3000, 5, std::nullopt, normalize}, true);
    add_masked_mean_case(registry, "", {2, 9, 6, std::nullopt, normalize, true}, true);
    add_masked_mean_case(registry, "", {3, 9, 70, std::nullopt, normalize, false, false}, true);
  }
  // MiniLM's pooling at T = 128 from the last layer norm's int8 output (4H4W).
  add_masked_mean_case(registry, "perf/", {1, 128, 384, MemoryLayout::PackedInt8_4H4W, true},
                       false);

  for (bool norm : {false, true}) {
    for (const auto& shape : awkward_shapes()) {
      for (size_t dim = 0; dim < shape.size(); ++dim) {
        // Without keepdim a rank-1 input would give a rank-0 output, which no device tensor is.
        for (bool keepdim : {false, true}) {
          if (keepdim || shape.size() > 1) {
            add_case(registry, "", {shape, dim, keepdim, norm, false}, true);
          }
        }
      }
    }
    add_case(registry, "", {{1, 7, 10}, 1, false, norm, true}, true);
    add_case(registry, "", {{4096, 2}, 1, false, norm, false}, true);
    for (MemoryLayout l : {MemoryLayout::HeightPacked, MemoryLayout::ChannelsPacked}) {
      add_case(registry, "", {{2, 5, 3, 6}, 2, true, norm, false, l}, true);
    }
  }
  // MiniLM at T = 128: the masked sum over tokens, the sentence embedding's norm.
  add_case(registry, "perf/", {{1, 128, 384}, 1, false, false, false}, false);
  add_case(registry, "perf/", {{1, 384}, 1, true, true, false}, false);
}

}  // namespace vkd::custom_ops
