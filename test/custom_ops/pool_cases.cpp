// ACCU and PERF cases for q8ta_max_pool2d, q8ta_avg_pool2d, q8ta_adaptive_avg_pool2d and
// q8ta_mean (channels-packed int8x4 layouts).
#include <array>
#include <utility>

#include "runtime/ops/Pool.h"
#include "test/custom_ops/Harness.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/PoolReference.h"

namespace vkd::custom_ops {
namespace {

using testing::RefShape;

const MemoryLayout kChwLayouts[] = {MemoryLayout::PackedInt8_4W4C, MemoryLayout::PackedInt8_4C1W};

RefShape ref_shape(const TensorSpec& spec) {
  const Dims4 d = spec.dims4();
  return {d.n, d.c, d.h, d.w};
}

std::vector<int8_t> random_int8(int64_t count, std::mt19937& rng) {
  std::uniform_int_distribution<int> value(-128, 127);
  std::vector<int8_t> v(static_cast<size_t>(count));
  for (auto& x : v) x = static_cast<int8_t>(value(rng));
  return v;
}

// Compares pooled output `out` (sizes `out_sizes`) with the reference's `expected` of output
// shape `os`; the reference's own output size must agree with the runtime's.
AccuResult compare_pooled(const graph::ComputeGraph& g, graph::ValueRef out, MemoryLayout layout,
                          const std::vector<int64_t>& out_sizes, const RefShape& os,
                          const std::vector<int8_t>& expected, int32_t zero_point) {
  AccuResult r;
  if (os.h != out_sizes[2] || os.w != out_sizes[3]) {
    r.mismatches = 1;
    r.checked = 1;
    return r;
  }
  compare_words(g.read_words(out), testing::ref_pack(layout, os, expected, zero_point), r);
  return r;
}

double int8x4_bytes(const std::vector<int64_t>& sizes, MemoryLayout layout) {
  const TensorSpec s{sizes, DType::Int8x4, StorageType::Buffer, layout};
  return 4.0 * testing::ref_word_count(layout, ref_shape(s));
}

// q8ta_max_pool2d: the byte variant where `in_q` and `out_q` share scale and zero point
// (checked against the int8 max), else the requantizing one (checked against dq -> max -> q).
class MaxPoolCase : public CaseInstance {
 public:
  MaxPoolCase(std::vector<int64_t> sizes, MemoryLayout layout, testing::RefPool pool,
              ops::QuantParams in_q, ops::QuantParams out_q)
      : sizes_(std::move(sizes)), layout_(layout), pool_(pool), in_q_(in_q), out_q_(out_q) {}

  void build(graph::ComputeGraph& g) override {
    const int64_t H = sizes_[2], W = sizes_[3];
    const int64_t oh =
        ops::max_pool_output_size(H, pool_.kh, pool_.ph, pool_.sh, pool_.dh, pool_.ceil_mode);
    const int64_t ow =
        ops::max_pool_output_size(W, pool_.kw, pool_.pw, pool_.sw, pool_.dw, pool_.ceil_mode);
    out_sizes_ = {sizes_[0], sizes_[1], oh, ow};
    in_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "x");
    out_ = g.add_tensor({out_sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "y");
    ops::MaxPool2dParams p;
    p.kernel = {pool_.kh, pool_.kw};
    p.stride = {pool_.sh, pool_.sw};
    p.padding = {pool_.ph, pool_.pw};
    p.dilation = {pool_.dh, pool_.dw};
    p.ceil_mode = pool_.ceil_mode;
    p.input = in_q_;
    p.output = out_q_;
    ops::add_q8ta_max_pool2d_node(g, in_, out_, p);
    g.add_input(in_);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    x_ = random_int8(g.spec(in_).numel(), rng);
    g.write_words(in_, testing::ref_pack(layout_, ref_shape(g.spec(in_)), x_, in_q_.zero_point));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    RefShape os{};
    const RefShape s = ref_shape(g.spec(in_));
    const auto expected =
        requantizes() ? testing::reference_max_pool2d(x_, s, pool_, in_q_.scale, in_q_.zero_point,
                                                      out_q_.scale, out_q_.zero_point, os)
                      : testing::reference_max_pool2d(x_, s, pool_, os);
    return compare_pooled(g, out_, layout_, out_sizes_, os, expected, out_q_.zero_point);
  }
  PerfWork work() const override {
    return {int8x4_bytes(sizes_, layout_) + int8x4_bytes(out_sizes_, layout_), 0.0};
  }

 private:
  bool requantizes() const {
    return in_q_.scale != out_q_.scale || in_q_.zero_point != out_q_.zero_point;
  }

  std::vector<int64_t> sizes_, out_sizes_;
  MemoryLayout layout_;
  testing::RefPool pool_;
  ops::QuantParams in_q_, out_q_;
  graph::ValueRef in_ = -1, out_ = -1;
  std::vector<int8_t> x_;
};

// q8ta_avg_pool2d (`pool`), or q8ta_adaptive_avg_pool2d to `adaptive` (OH, OW) when it is set.
class AvgPoolCase : public CaseInstance {
 public:
  AvgPoolCase(std::vector<int64_t> sizes, MemoryLayout layout, testing::RefAvgPool pool,
              std::array<int64_t, 2> adaptive, ops::QuantParams in_q, ops::QuantParams out_q)
      : sizes_(std::move(sizes)),
        layout_(layout),
        pool_(pool),
        adaptive_(adaptive),
        in_q_(in_q),
        out_q_(out_q) {}

  void build(graph::ComputeGraph& g) override {
    in_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "x");
    if (is_adaptive()) {
      out_sizes_ = {sizes_[0], sizes_[1], adaptive_[0], adaptive_[1]};
      out_ = g.add_tensor({out_sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "y");
      ops::add_q8ta_adaptive_avg_pool2d_node(g, in_, out_, in_q_, out_q_);
    } else {
      ops::AvgPool2dParams p;
      p.kernel = {pool_.kh, pool_.kw};
      p.stride = {pool_.sh, pool_.sw};
      p.padding = {pool_.ph, pool_.pw};
      p.ceil_mode = pool_.ceil_mode;
      p.count_include_pad = pool_.count_include_pad;
      p.divisor_override = pool_.divisor_override;
      p.input = in_q_;
      p.output = out_q_;
      out_sizes_ = {sizes_[0], sizes_[1],
                    ops::max_pool_output_size(sizes_[2], p.kernel[0], p.padding[0], p.stride[0], 1,
                                              p.ceil_mode),
                    ops::max_pool_output_size(sizes_[3], p.kernel[1], p.padding[1], p.stride[1], 1,
                                              p.ceil_mode)};
      out_ = g.add_tensor({out_sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "y");
      ops::add_q8ta_avg_pool2d_node(g, in_, out_, p);
    }
    g.add_input(in_);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    x_ = random_int8(g.spec(in_).numel(), rng);
    g.write_words(in_, testing::ref_pack(layout_, ref_shape(g.spec(in_)), x_, in_q_.zero_point));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const RefShape s = ref_shape(g.spec(in_));
    RefShape os{s.n, s.c, adaptive_[0], adaptive_[1]};
    const auto expected =
        is_adaptive()
            ? testing::reference_adaptive_avg_pool2d(
                  x_, s, os.h, os.w, in_q_.scale, in_q_.zero_point, out_q_.scale, out_q_.zero_point)
            : testing::reference_avg_pool2d(x_, s, pool_, in_q_.scale, in_q_.zero_point,
                                            out_q_.scale, out_q_.zero_point, os);
    return compare_pooled(g, out_, layout_, out_sizes_, os, expected, out_q_.zero_point);
  }
  PerfWork work() const override {
    return {int8x4_bytes(sizes_, layout_) + int8x4_bytes(out_sizes_, layout_), 0.0};
  }

 private:
  bool is_adaptive() const { return adaptive_[0] > 0; }

  std::vector<int64_t> sizes_, out_sizes_;
  MemoryLayout layout_;
  testing::RefAvgPool pool_;
  std::array<int64_t, 2> adaptive_;
  ops::QuantParams in_q_, out_q_;
  graph::ValueRef in_ = -1, out_ = -1;
  std::vector<int8_t> x_;
};

// Output [N, C, 1, 1] in the input's layout, or with `rows` [N, C] in 4H4W (q8ta_mean_flat).
class MeanCase : public CaseInstance {
 public:
  MeanCase(std::vector<int64_t> sizes, MemoryLayout layout, ops::QuantParams in_q,
           ops::QuantParams out_q, bool rows = false)
      : sizes_(std::move(sizes)), layout_(layout), in_q_(in_q), out_q_(out_q), rows_(rows) {}

  void build(graph::ComputeGraph& g) override {
    in_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "x");
    out_ = g.add_tensor({out_sizes(), DType::Int8x4, StorageType::Buffer, out_layout()}, "y");
    ops::add_q8ta_mean_node(g, in_, out_, in_q_, out_q_);
    g.add_input(in_);
    g.add_output(out_);
  }
  // Runs the graph once on other random inputs first: the checked execution is a second one,
  // so a large plane's accumulator (runtime/ops/Pool.cpp) must have been left at zero.
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    auto upload = [&] {
      x_ = random_int8(g.spec(in_).numel(), rng);
      g.write_words(in_, testing::ref_pack(layout_, ref_shape(g.spec(in_)), x_, in_q_.zero_point));
    };
    upload();
    g.execute();
    upload();
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const auto expected = testing::reference_mean_hw(
        x_, ref_shape(g.spec(in_)), in_q_.scale, in_q_.zero_point, out_q_.scale, out_q_.zero_point);
    AccuResult r;
    compare_words(
        g.read_words(out_),
        testing::ref_pack(out_layout(), ref_shape(g.spec(out_)), expected, out_q_.zero_point), r);
    return r;
  }
  PerfWork work() const override {
    return {int8x4_bytes(sizes_, layout_) + int8x4_bytes(out_sizes(), out_layout()), 0.0};
  }

 private:
  std::vector<int64_t> out_sizes() const {
    return rows_ ? std::vector<int64_t>{sizes_[0], sizes_[1]}
                 : std::vector<int64_t>{sizes_[0], sizes_[1], 1, 1};
  }
  MemoryLayout out_layout() const { return rows_ ? MemoryLayout::PackedInt8_4H4W : layout_; }

  std::vector<int64_t> sizes_;
  MemoryLayout layout_;
  ops::QuantParams in_q_, out_q_;
  bool rows_;
  graph::ValueRef in_ = -1, out_ = -1;
  std::vector<int8_t> x_;
};

std::string pool_name(const testing::RefPool& p) {
  auto pair = [](int a, int b) { return std::to_string(a) + "x" + std::to_string(b); };
  return "k" + pair(p.kh, p.kw) + "_s" + pair(p.sh, p.sw) + "_p" + pair(p.ph, p.pw) + "_d" +
         pair(p.dh, p.dw) + (p.ceil_mode ? "_ceil" : "_floor");
}

// (input, output) parameters of a max pool; `tag` names the case.
struct MaxPoolQuant {
  ops::QuantParams in, out;
  std::string tag;
};

// Input and output quantized alike (the byte variant), zero point `zp`.
MaxPoolQuant shared_quant(int zp) {
  const ops::QuantParams q{0.05f, zp, -128, 127};
  return {q, q, "zp" + std::to_string(zp)};
}

void add_max_pool(Registry& registry, const std::string& prefix, std::vector<int64_t> sizes,
                  MemoryLayout layout, testing::RefPool p, const MaxPoolQuant& q, bool accu) {
  const std::string shape = shape_string(sizes), lname(to_string(layout));
  registry.add(
      {prefix + "q8ta_max_pool2d/" + lname + "/" + pool_name(p) + "/" + q.tag + "/" + shape,
       "q8ta_max_pool2d", shape, lname + " " + pool_name(p), accu, !accu, false, Metric::GBps,
       [=] { return std::make_unique<MaxPoolCase>(sizes, layout, p, q.in, q.out); }});
}

std::string avg_pool_name(const testing::RefAvgPool& p) {
  auto pair = [](int a, int b) { return std::to_string(a) + "x" + std::to_string(b); };
  return "k" + pair(p.kh, p.kw) + "_s" + pair(p.sh, p.sw) + "_p" + pair(p.ph, p.pw) +
         (p.ceil_mode ? "_ceil" : "_floor") + (p.count_include_pad ? "_withpad" : "_nopad") +
         (p.divisor_override != 0 ? "_div" + std::to_string(p.divisor_override) : "");
}

// The (input, output) parameters of the average cases. "ties": y * inv_s_out = acc / divisor
// exactly for divisors 1, 2, 4, 8 (a tie at every odd multiple of divisor / 2); the others put
// zero points at both ends.
struct AvgQuant {
  ops::QuantParams in, out;
  const char* tag;
};
const AvgQuant kAvgQuants[] = {
    {{0.05f, 3}, {0.02f, -4}, "q0"},
    {{0.5f, 0}, {0.5f, 0}, "ties"},
    {{0.013f, -128}, {0.011f, 127}, "q2"},
    {{0.2f, 127}, {0.09f, -128}, "q3"},
};

void add_avg_pool(Registry& registry, const std::string& prefix, std::vector<int64_t> sizes,
                  MemoryLayout layout, testing::RefAvgPool p, const AvgQuant& q, bool accu) {
  const std::string shape = shape_string(sizes), lname(to_string(layout));
  registry.add(
      {prefix + "q8ta_avg_pool2d/" + lname + "/" + avg_pool_name(p) + "/" + q.tag + "/" + shape,
       "q8ta_avg_pool2d", shape, lname + " " + avg_pool_name(p), accu, !accu, false, Metric::GBps,
       [=] {
         return std::make_unique<AvgPoolCase>(sizes, layout, p, std::array<int64_t, 2>{0, 0}, q.in,
                                              q.out);
       }});
}

void add_adaptive_pool(Registry& registry, const std::string& prefix, std::vector<int64_t> sizes,
                       MemoryLayout layout, std::array<int64_t, 2> out, const AvgQuant& q,
                       bool accu) {
  const std::string shape = shape_string(sizes), lname(to_string(layout));
  const std::string to = std::to_string(out[0]) + "x" + std::to_string(out[1]);
  registry.add({prefix + "q8ta_adaptive_avg_pool2d/" + lname + "/" + to + "/" + q.tag + "/" + shape,
                "q8ta_adaptive_avg_pool2d", shape, lname + " -> " + to, accu, !accu, false,
                Metric::GBps, [=] {
                  return std::make_unique<AvgPoolCase>(sizes, layout, testing::RefAvgPool{}, out,
                                                       q.in, q.out);
                }});
}

// avg_pool2d: every argument with ceil_mode's dropped windows and the border divisors;
// adaptive pooling to sizes that divide the input, do not, and exceed it.
void register_avg_pool_cases(Registry& registry) {
  // kernel h/w, stride h/w, padding h/w, ceil_mode, count_include_pad, divisor_override.
  const testing::RefAvgPool pools[] = {
      {2, 2, 2, 2, 0, 0, false, true, 0},  {3, 3, 2, 2, 1, 1, false, true, 0},
      {3, 3, 2, 2, 1, 1, true, true, 0},   {3, 3, 2, 2, 1, 1, true, false, 0},
      {3, 3, 1, 1, 1, 1, false, false, 0}, {2, 2, 2, 2, 1, 1, true, true, 0},  // dropped window
      {3, 2, 2, 1, 1, 0, true, false, 0},  {2, 2, 2, 2, 0, 0, false, true, 3},
      {5, 3, 3, 2, 2, 1, true, true, 0},   {3, 3, 2, 2, 1, 1, true, false, -7},
      {7, 7, 1, 1, 3, 3, false, false, 0}, {1, 1, 2, 2, 0, 0, true, true, 0},
  };
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 3, 7, 9}, {2, 5, 8, 8}, {1, 17, 11, 6}, {1, 4, 5, 5}, {2, 16, 14, 15}};
  size_t index = 0;
  for (MemoryLayout layout : kChwLayouts) {
    for (const auto& p : pools) {
      for (const auto& sizes : shapes) {
        add_avg_pool(registry, "", sizes, layout, p, kAvgQuants[index++ % std::size(kAvgQuants)],
                     true);
      }
    }
    // Adaptive: (input, output) sizes.
    const std::pair<std::vector<int64_t>, std::array<int64_t, 2>> adaptive[] = {
        {{1, 3, 7, 9}, {3, 2}},   {{2, 5, 8, 8}, {3, 3}},    {{1, 17, 11, 6}, {4, 6}},
        {{1, 4, 5, 5}, {7, 6}},   {{2, 16, 14, 15}, {7, 5}}, {{1, 6, 9, 4}, {1, 1}},
        {{1, 8, 12, 12}, {4, 4}},
    };
    for (const auto& [sizes, out] : adaptive) {
      for (const AvgQuant& q : {kAvgQuants[0], kAvgQuants[2]}) {
        add_adaptive_pool(registry, "", sizes, layout, out, q, true);
      }
    }
    add_adaptive_pool(registry, "", {1, 8, 6, 6}, layout, {3, 3}, kAvgQuants[1], true);  // /4
  }
  for (MemoryLayout layout : kChwLayouts) {
    for (const testing::RefAvgPool& p : {pools[0], pools[1], pools[4]}) {
      add_avg_pool(registry, "perf/", {1, 64, 256, 256}, layout, p, kAvgQuants[0], false);
    }
    add_adaptive_pool(registry, "perf/", {1, 256, 56, 56}, layout, {7, 7}, kAvgQuants[0], false);
  }
}

void add_mean(Registry& registry, const std::string& prefix, std::vector<int64_t> sizes,
              MemoryLayout layout, ops::QuantParams in_q, ops::QuantParams out_q,
              const std::string& tag, bool accu) {
  const std::string shape = shape_string(sizes), lname(to_string(layout));
  registry.add({prefix + "q8ta_mean/" + lname + "/" + tag + "/" + shape, "q8ta_mean", shape, lname,
                accu, !accu, false, Metric::GBps,
                [=] { return std::make_unique<MeanCase>(sizes, layout, in_q, out_q); }});
}

// q8ta_mean_flat: the [N, C] rows in 4H4W (keepdim = False, a classifier's pooled features).
void add_mean_rows(Registry& registry, std::vector<int64_t> sizes, MemoryLayout layout,
                   ops::QuantParams in_q, ops::QuantParams out_q, const std::string& tag) {
  const std::string shape = shape_string(sizes), lname(to_string(layout));
  registry.add({"q8ta_mean_flat/" + lname + "->4H4W/" + tag + "/" + shape, "q8ta_mean_flat", shape,
                lname + " -> 4H4W rows", true, false, false, Metric::GBps,
                [=] { return std::make_unique<MeanCase>(sizes, layout, in_q, out_q, true); }});
}

// kernel h/w, stride h/w, padding h/w, dilation h/w, ceil_mode.
const testing::RefPool kMaxPools[] = {
    {2, 2, 2, 2, 0, 0, 1, 1, false}, {2, 2, 2, 2, 0, 0, 1, 1, true},
    {3, 3, 2, 2, 1, 1, 1, 1, false}, {3, 3, 2, 2, 1, 1, 1, 1, true},
    {3, 3, 1, 1, 1, 1, 1, 1, false}, {2, 2, 1, 1, 0, 0, 1, 1, false},
    {3, 3, 2, 2, 0, 0, 2, 2, false}, {3, 3, 2, 2, 1, 1, 2, 2, true},
    {3, 2, 2, 1, 1, 0, 1, 1, true},  {2, 2, 2, 2, 1, 1, 1, 1, true},  // last: dropped window
};

// Output parameters other than the input's: the max requantized. "ties": y * inv_s_out =
// (q - 3) / 2, a rounding tie at every even q; the others widen (saturating at both ends),
// narrow, and move the zero point across the range.
const MaxPoolQuant kRequantMaxPool[] = {
    {{0.05f, 3, -128, 127}, {0.02f, -4, -128, 127}, "requant_q0"},
    {{0.5f, 3, -128, 127}, {1.0f, -2, -128, 127}, "requant_ties"},
    {{0.013f, -128, -128, 127}, {0.031f, -100, -128, 127}, "requant_q2"},
    {{0.2f, 100, -128, 127}, {0.5f, -20, -128, 127}, "requant_q3"},
};

// Requantizing max pools (both layouts, odd channels, padding, ceil_mode, dilation) and,
// for both variants, windows with no input position (H = 3, kernel 2, padding 1, dilation 4:
// the one output row's taps are rows -1 and 3), which give -128, not the requantized -128.
void register_requantizing_max_pool_cases(Registry& registry) {
  const std::vector<std::vector<int64_t>> shapes = {{1, 3, 7, 9}, {2, 5, 8, 8}, {1, 17, 11, 6}};
  const testing::RefPool empty = {2, 2, 1, 1, 1, 1, 4, 1, false};
  size_t index = 0;
  for (MemoryLayout layout : kChwLayouts) {
    for (const testing::RefPool& p :
         {kMaxPools[0], kMaxPools[3], kMaxPools[6], kMaxPools[7], kMaxPools[8]}) {
      for (const auto& sizes : shapes) {
        add_max_pool(registry, "", sizes, layout, p,
                     kRequantMaxPool[index++ % std::size(kRequantMaxPool)], true);
      }
    }
    add_max_pool(registry, "", {1, 5, 3, 6}, layout, empty, kRequantMaxPool[3], true);
    add_max_pool(registry, "", {1, 5, 3, 6}, layout, empty, shared_quant(-5), true);
  }
}

}  // namespace

void register_pool_cases(Registry& registry) {
  register_avg_pool_cases(registry);
  const auto& pools = kMaxPools;
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 3, 7, 9}, {2, 5, 8, 8}, {1, 17, 11, 6}, {1, 4, 5, 5}, {2, 16, 14, 15}};
  const int zps[] = {0, -128, 127, -5};
  size_t index = 0;
  for (MemoryLayout layout : kChwLayouts) {
    for (const auto& p : pools) {
      for (const auto& sizes : shapes) {
        add_max_pool(registry, "", sizes, layout, p, shared_quant(zps[index++ % std::size(zps)]),
                     true);
      }
    }
  }
  register_requantizing_max_pool_cases(registry);

  // Mean: (input, output) parameters; the second gives exact ties on a 2x2 plane
  // (y * inv_s_out = acc / 4), the others zero points at both ends.
  struct MeanQuant {
    ops::QuantParams in, out;
    const char* tag;
  };
  const MeanQuant quants[] = {
      {{0.05f, 3}, {0.02f, -4}, "q0"},
      {{0.5f, 0}, {0.5f, 0}, "ties"},
      {{0.013f, -128}, {0.011f, 127}, "q2"},
      {{0.2f, 127}, {0.09f, -128}, "q3"},
  };
  const std::vector<std::vector<int64_t>>
      mean_shapes = {{1, 3, 1, 1},   {1, 5, 2, 2},     {2, 17, 7, 7},     {1, 1280, 7, 7},
                     {2, 5, 13, 11}, {1, 3, 112, 112}, {1, 17, 112, 112}, {2, 4, 3, 1},
                     {1, 6, 100, 83}};  // planes of 2048+ positions are summed in ranges, then
                                        // added
  for (MemoryLayout layout : kChwLayouts) {
    for (const auto& sizes : mean_shapes) {
      for (const auto& q : quants) add_mean(registry, "", sizes, layout, q.in, q.out, q.tag, true);
    }
  }
  // Rows: batches of 1, 2, 3 (a partial block of 4 rows), 5 and 4.
  const std::vector<std::vector<int64_t>> rows_shapes = {
      {1, 3, 2, 2}, {2, 17, 7, 7}, {3, 5, 3, 1}, {5, 8, 2, 3}, {4, 1280, 7, 7}, {3, 5, 64, 48}};
  for (MemoryLayout layout : kChwLayouts) {
    for (const auto& sizes : rows_shapes) {
      for (const auto& q : {quants[0], quants[3]}) {
        add_mean_rows(registry, sizes, layout, q.in, q.out, q.tag);
      }
    }
  }

  for (MemoryLayout layout : kChwLayouts) {
    add_max_pool(registry, "perf/", {1, 64, 112, 112}, layout, pools[3], shared_quant(0), false);
    add_max_pool(registry, "perf/", {1, 64, 112, 112}, layout, pools[3], kRequantMaxPool[0], false);
    for (const auto& sizes : std::vector<std::vector<int64_t>>{
             {1, 512, 7, 7}, {1, 1280, 7, 7}, {1, 64, 112, 112}, {1, 64, 256, 256}}) {
      add_mean(registry, "perf/", sizes, layout, quants[0].in, quants[0].out, "q0", false);
    }
  }
}

}  // namespace vkd::custom_ops
