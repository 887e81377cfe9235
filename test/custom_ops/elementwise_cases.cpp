// ACCU and PERF cases for q8ta_add and q8ta_mul: same shapes in every packed layout,
// [1, C, 1, 1], [N, C, 1, 1] and [1, 1, 1, 1] operands in either position (mul's [N, C, H, W] x
// [N, C, 1, 1] is the squeeze-excite scale), fused relu / clamp, zero points at both ends, exact
// ties; for q8ta_clamp and q8ta_mul_scalar: every layout, awkward shapes, relu / clamp
// ranges, exact ties, negative and zero scalars; for q8ta_batch_norm: every layout, awkward
// 4-D shapes, per-channel scales of both signs and 0, relu / clamp, exact ties, and channels
// where the fused multiply-add and a multiply then an add round to different int8 values.
#include <cmath>

#include "runtime/ops/Elementwise.h"
#include "test/custom_ops/Harness.h"
#include "test/reference/ElementwiseReference.h"
#include "test/reference/LayoutReference.h"

namespace vkd::custom_ops {
namespace {

using testing::RefShape;

// (a, b, output) parameters rotated over the cases. The second makes y * inv_s_out a multiple
// of 1/2 (exact ties for round-half-to-even); the others put zero points at both ends.
struct AddQuant {
  ops::QuantParams a, b, out;
};
const AddQuant kQuants[] = {
    {{0.05f, 3}, {0.031f, -7}, {0.07f, 1}},
    {{0.25f, 0}, {0.25f, 5}, {0.5f, -2}},
    {{0.013f, -128}, {0.2f, 127}, {0.11f, -128}},
    {{0.2f, 127}, {0.02f, -128}, {0.09f, 127}},
};
// The same for mul, with output scales that keep most products in range. The first is exact
// throughout: y = qa * qb / 16 and y * inv_s_out = qa * qb / 128, a tie whenever qa * qb is 64
// modulo 128; the last is squeeze-excite's: a hardsigmoid output (scale 1/256, [0, 1)) times x.
const AddQuant kMulQuants[] = {
    {{0.5f, 0}, {0.125f, 0}, {8.0f, 0}},
    {{0.05f, 3}, {0.031f, -7}, {0.2f, 1}},
    {{0.013f, -128}, {0.2f, 127}, {0.7f, 127}},
    {{0.2f, 127}, {0.02f, -128}, {1.0f, 127}},
    {{1.0f / 256, -128}, {0.05f, -10}, {0.05f, -10}},
};

using testing::RefBinaryOp;
const char* op_name(RefBinaryOp op) { return op == RefBinaryOp::Add ? "q8ta_add" : "q8ta_mul"; }

enum class Act { None, Relu, Clamp };
const char* act_name(Act a) { return a == Act::None ? "none" : a == Act::Relu ? "relu" : "clamp"; }

// Which operand is broadcast and how.
// *Channel: [1, C, 1, 1]; *Batch: [N, C, 1, 1]; *Scalar: [1, 1, 1, 1].
enum class Bcast { None, BChannel, BScalar, AChannel, AScalar, BBatch, ABatch };
const char* bcast_name(Bcast b) {
  switch (b) {
    case Bcast::None: return "same";
    case Bcast::BChannel: return "b_1C11";
    case Bcast::BScalar: return "b_1111";
    case Bcast::AChannel: return "a_1C11";
    case Bcast::BBatch: return "b_NC11";
    case Bcast::ABatch: return "a_NC11";
    default: return "a_1111";
  }
}

RefShape ref_shape(const TensorSpec& spec) {
  const Dims4 d = spec.dims4();
  return {d.n, d.c, d.h, d.w};
}

// One int8x4 tensor walked chunk by chunk (q8ta_clamp's kernel and its variants).
// Random int8 values for every element of `in`, in NCHW order.
std::vector<int8_t> random_int8(const graph::ComputeGraph& g, graph::ValueRef in,
                                std::mt19937& rng) {
  std::uniform_int_distribution<int> value(-128, 127);
  std::vector<int8_t> x(static_cast<size_t>(g.spec(in).numel()));
  for (auto& v : x) v = static_cast<int8_t>(value(rng));
  return x;
}

// The output's words against `expected` (NCHW) packed the output's way.
AccuResult compare_output(const graph::ComputeGraph& g, graph::ValueRef out, MemoryLayout layout,
                          const std::vector<int8_t>& expected, int32_t zero_point) {
  AccuResult r;
  compare_words(g.read_words(out),
                testing::ref_pack(layout, ref_shape(g.spec(out)), expected, zero_point), r);
  return r;
}

// Each word read once and written once.
PerfWork chunk_walk_work(const std::vector<int64_t>& sizes, MemoryLayout layout) {
  const TensorSpec s{sizes, DType::Int8x4, StorageType::Buffer, layout};
  return {8.0 * testing::ref_word_count(layout, ref_shape(s)), 0.0};
}

class BinaryCase : public CaseInstance {
 public:
  BinaryCase(RefBinaryOp op, std::vector<int64_t> sizes, MemoryLayout layout, Bcast bcast,
             AddQuant q, Act act)
      : op_(op), sizes_(std::move(sizes)), layout_(layout), bcast_(bcast), q_(q) {
    act_min_ = -128;
    act_max_ = 127;
    if (act == Act::Relu) act_min_ = q_.out.zero_point;
    // A clamp whose range excludes the zero point: output padding must still hold it.
    if (act == Act::Clamp) act_min_ = std::min(q_.out.zero_point + 9, 120), act_max_ = 125;
  }

  void build(graph::ComputeGraph& g) override {
    const int64_t channels = sizes_.size() >= 3 ? sizes_[sizes_.size() - 3] : 1;
    const std::vector<int64_t> channel_vec = {1, channels, 1, 1}, scalar = {1, 1, 1, 1};
    const std::vector<int64_t> batch_vec = {sizes_[0], channels, 1, 1};
    std::vector<int64_t> sa = sizes_, sb = sizes_;
    if (bcast_ == Bcast::BChannel) sb = channel_vec;
    if (bcast_ == Bcast::BScalar) sb = scalar;
    if (bcast_ == Bcast::AChannel) sa = channel_vec;
    if (bcast_ == Bcast::AScalar) sa = scalar;
    if (bcast_ == Bcast::BBatch) sb = batch_vec;
    if (bcast_ == Bcast::ABatch) sa = batch_vec;
    a_ = g.add_tensor({sa, DType::Int8x4, StorageType::Buffer, layout_}, "a");
    b_ = g.add_tensor({sb, DType::Int8x4, StorageType::Buffer, layout_}, "b");
    out_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "out");
    const ops::BinaryParams p{q_.a, q_.b, q_.out, act_min_, act_max_};
    if (op_ == RefBinaryOp::Add) {
      ops::add_q8ta_add_node(g, a_, b_, out_, p);
    } else {
      ops::add_q8ta_mul_node(g, a_, b_, out_, p);
    }
    g.add_input(a_);
    g.add_input(b_);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    std::uniform_int_distribution<int> value(-128, 127);
    auto fill = [&](graph::ValueRef t, std::vector<int8_t>& v, int zp) {
      v.resize(static_cast<size_t>(g.spec(t).numel()));
      for (auto& x : v) x = static_cast<int8_t>(value(rng));
      g.write_words(t, testing::ref_pack(layout_, ref_shape(g.spec(t)), v, zp));
    };
    fill(a_, qa_, q_.a.zero_point);
    fill(b_, qb_, q_.b.zero_point);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const testing::RefQuant ra{q_.a.scale, q_.a.zero_point}, rb{q_.b.scale, q_.b.zero_point},
        ro{q_.out.scale, q_.out.zero_point};
    const RefShape so = ref_shape(g.spec(out_));
    // The reference broadcasts its second operand: put the full-size one first (the sum and
    // the product are commutative in float32).
    const bool a_small =
        bcast_ == Bcast::AChannel || bcast_ == Bcast::AScalar || bcast_ == Bcast::ABatch;
    const auto expected_q =
        a_small ? testing::reference_binary(op_, qb_, so, qa_, ref_shape(g.spec(a_)), rb, ra, ro,
                                            act_min_, act_max_)
                : testing::reference_binary(op_, qa_, so, qb_, ref_shape(g.spec(b_)), ra, rb, ro,
                                            act_min_, act_max_);
    AccuResult r;
    compare_words(g.read_words(out_), testing::ref_pack(layout_, so, expected_q, q_.out.zero_point),
                  r);
    return r;
  }
  PerfWork work() const override {
    // Each tensor's words once (a broadcast operand is negligible).
    const TensorSpec s{sizes_, DType::Int8x4, StorageType::Buffer, layout_};
    const double bytes = 4.0 * testing::ref_word_count(layout_, ref_shape(s));
    return {bcast_ == Bcast::None ? 3.0 * bytes : 2.0 * bytes, 0.0};
  }

 private:
  RefBinaryOp op_;
  std::vector<int64_t> sizes_;
  MemoryLayout layout_;
  Bcast bcast_;
  AddQuant q_;
  int act_min_ = -128, act_max_ = 127;
  graph::ValueRef a_ = -1, b_ = -1, out_ = -1;
  std::vector<int8_t> qa_, qb_;
};

void add_case(Registry& registry, RefBinaryOp op, const std::string& prefix,
              const std::vector<int64_t>& sizes, MemoryLayout layout, Bcast bcast, AddQuant q,
              Act act, bool accu, const std::string& tag = "") {
  const std::string shape = shape_string(sizes);
  const std::string lname(to_string(layout));
  registry.add({prefix + op_name(op) + "/" + lname + "/" + bcast_name(bcast) + "/" + act_name(act) +
                    tag + "/" + shape,
                op_name(op), shape, lname + " " + bcast_name(bcast), accu, !accu, false,
                Metric::GBps,
                [=] { return std::make_unique<BinaryCase>(op, sizes, layout, bcast, q, act); }});
}

// q8ta_clamp / q8ta_mul_scalar: (input, output) parameters, the scalar (1 for the clamp) and
// the activation range in output units.
struct ClampQuant {
  ops::QuantParams in, out;
  float scalar;
  int act_min, act_max;
  const char* tag;
};
// "ties": (q - zp) * 0.5 * 1 is a multiple of 1/2, so round-half-to-even decides; "relu6" is a
// relu6 requantized to a finer scale; the others put zero points at both ends and a range that
// excludes the output zero point (padding must still hold it).
const ClampQuant kClampQuants[] = {
    {{0.5f, 0}, {1.0f, -3}, 1.0f, -3, 127, "ties"},
    {{0.05f, -128}, {0.025f, -128}, 1.0f, -128, 112, "relu6"},
    {{0.013f, 127}, {0.2f, -128}, 1.0f, -120, -100, "narrow"},
    {{0.2f, -5}, {0.07f, 127}, 1.0f, -128, 127, "none"},
};
// Scalars: "ties" has y * inv_s_out = (q - 3) / 4 exactly (a tie at every q - 3 = 2 mod 4);
// negative, large and zero scalars (0: every output is the zero point); a relu after a
// negative scale, so the kept range is the inputs below the zero point.
const ClampQuant kMulScalarQuants[] = {
    {{0.5f, 3}, {1.0f, -3}, 0.5f, -128, 127, "ties"},
    {{0.05f, -128}, {0.05f, 20}, -0.75f, -128, 127, "negative"},
    {{0.013f, 127}, {0.2f, 127}, 12.5f, -128, 127, "large"},
    {{0.2f, -5}, {0.07f, 127}, 0.0f, -128, 127, "zero"},
    {{0.1f, 7}, {0.25f, -100}, -2.0f, -100, 127, "neg_relu"},
};

class ClampCase : public CaseInstance {
 public:
  ClampCase(std::vector<int64_t> sizes, MemoryLayout layout, ClampQuant q)
      : sizes_(std::move(sizes)), layout_(layout), q_(q) {}

  void build(graph::ComputeGraph& g) override {
    in_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "x");
    out_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "y");
    if (q_.scalar == 1.0f) {
      ops::add_q8ta_clamp_node(g, in_, out_, {q_.in, q_.out, q_.act_min, q_.act_max});
    } else {
      ops::add_q8ta_mul_scalar_node(g, in_, out_,
                                    {q_.in, q_.out, q_.scalar, q_.act_min, q_.act_max});
    }
    g.add_input(in_);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    x_ = random_int8(g, in_, rng);
    g.write_words(in_, testing::ref_pack(layout_, ref_shape(g.spec(in_)), x_, q_.in.zero_point));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const auto expected =
        testing::reference_requantize(x_, {q_.in.scale, q_.in.zero_point}, q_.scalar,
                                      {q_.out.scale, q_.out.zero_point}, q_.act_min, q_.act_max);
    return compare_output(g, out_, layout_, expected, q_.out.zero_point);
  }
  PerfWork work() const override { return chunk_walk_work(sizes_, layout_); }

 private:
  std::vector<int64_t> sizes_;
  MemoryLayout layout_;
  ClampQuant q_;
  graph::ValueRef in_ = -1, out_ = -1;
  std::vector<int8_t> x_;
};

// A q8ta_clamp case, or a q8ta_mul_scalar case when `q` scales.
void add_clamp_case(Registry& registry, const std::string& prefix,
                    const std::vector<int64_t>& sizes, MemoryLayout layout, ClampQuant q,
                    bool accu) {
  const std::string shape = shape_string(sizes), lname(to_string(layout));
  const std::string op = q.scalar == 1.0f ? "q8ta_clamp" : "q8ta_mul_scalar";
  registry.add({prefix + op + "/" + lname + "/" + q.tag + "/" + shape, op, shape,
                lname + " " + q.tag, accu, !accu, false, Metric::GBps,
                [=] { return std::make_unique<ClampCase>(sizes, layout, q); }});
}

// `quants` rotated over the awkward shapes, then each of them on one odd shape, per layout.
template <size_t N>
void register_requantize_cases(Registry& registry, const ClampQuant (&quants)[N]) {
  size_t index = 0;
  for (MemoryLayout layout : kAllPackedInt8Layouts) {
    for (const auto& sizes : awkward_shapes()) {
      add_clamp_case(registry, "", sizes, layout, quants[index++ % N], true);
    }
    for (const ClampQuant& q : quants) add_clamp_case(registry, "", {2, 17, 5, 6}, layout, q, true);
    add_clamp_case(registry, "perf/", {1, 64, 256, 256}, layout, quants[1], false);
  }
}

// q8ta_batch_norm: the in / out parameters, the activation range and how the per-channel scale
// and shift are made (BatchNormCase::make_channels).
enum class BnKind { Random, Ties, FmaRounding, ZeroScale };
struct BnQuant {
  ops::QuantParams in, out;
  int act_min, act_max;
  BnKind kind;
  const char* tag;
};
// "relu" keeps [zp_out, 127]; "clamp" a relu6-like window; "ties": x = (q - zp) / 2, scale
// +-0.75, shift a multiple of 1/8 and s_out 1/4 make y * inv_s_out a multiple of 1/8, often a
// tie; "fma": s_out = 2^-20 and each channel's shift put so that, for one input q0, a multiply
// then an add lands exactly on a tie while the fused multiply-add (the op's arithmetic) does not;
// "zero": every other channel's scale is 0 (the output is the quantized shift).
const BnQuant kBnQuants[] = {
    {{0.05f, 3}, {0.04f, -7}, -128, 127, BnKind::Random, "random"},
    {{0.031f, -128}, {0.05f, -128}, -128, 127, BnKind::Random, "relu"},
    {{0.02f, 127}, {0.03f, 10}, 10, 110, BnKind::Random, "clamp"},
    {{0.5f, 0}, {0.25f, 1}, -128, 127, BnKind::Ties, "ties"},
    {{0.01f, 0}, {1.0f / (1 << 20), 0}, -128, 127, BnKind::FmaRounding, "fma"},
    {{0.07f, -20}, {0.06f, 30}, -128, 127, BnKind::ZeroScale, "zero"},
};

class BatchNormCase : public CaseInstance {
 public:
  BatchNormCase(std::vector<int64_t> sizes, MemoryLayout layout, BnQuant q)
      : sizes_(std::move(sizes)), layout_(layout), q_(q) {
    make_channels();
  }

  void build(graph::ComputeGraph& g) override {
    in_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "x");
    out_ = g.add_tensor({sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "y");
    ops::add_q8ta_batch_norm_node(g, in_, out_,
                                  {q_.in, q_.out, scale_, shift_, q_.act_min, q_.act_max});
    g.add_input(in_);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    x_ = random_int8(g, in_, rng);
    if (q_.kind == BnKind::FmaRounding) {  // every channel's q0 appears
      const RefShape s = ref_shape(g.spec(in_));
      for (int64_t n = 0; n < s.n; ++n) {
        for (int64_t c = 0; c < s.c; ++c) {
          x_[static_cast<size_t>((n * s.c + c) * s.h * s.w)] = q0_[static_cast<size_t>(c)];
        }
      }
    }
    g.write_words(in_, testing::ref_pack(layout_, ref_shape(g.spec(in_)), x_, q_.in.zero_point));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const auto expected = testing::reference_batch_norm(
        x_, ref_shape(g.spec(in_)), {q_.in.scale, q_.in.zero_point}, scale_, shift_,
        {q_.out.scale, q_.out.zero_point}, q_.act_min, q_.act_max);
    return compare_output(g, out_, layout_, expected, q_.out.zero_point);
  }
  PerfWork work() const override { return chunk_walk_work(sizes_, layout_); }

 private:
  // The per-channel scale and shift of the case's kind (seeded by the channel count).
  void make_channels() {
    const size_t channels = static_cast<size_t>(sizes_[1]);
    std::mt19937 rng(static_cast<uint32_t>(channels * 7919 + static_cast<size_t>(q_.kind)));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> q_value(-100, 100);
    for (size_t c = 0; c < channels; ++c) {
      float scale = 1.0f + 0.5f * normal(rng), shift = 2.0f * normal(rng);
      switch (q_.kind) {
        case BnKind::Random: break;
        case BnKind::Ties:
          scale = c % 2 ? -0.75f : 0.75f;
          shift = static_cast<float>(q_value(rng)) / 8.0f;
          break;
        case BnKind::ZeroScale:
          if (c % 2 == 0) scale = 0.0f;
          break;
        case BnKind::FmaRounding: {
          // x0 * scale rounds (an odd 24-bit significand times a non-power of two); shift =
          // 2^-21 - float(x0 * scale), so a multiply then an add gives y = 2^-21 exactly, a
          // tie at s_out = 2^-20, while the fused result is off it by the product's rounding
          // error, whose sign decides the int8 value.
          const int8_t q0 = static_cast<int8_t>(q_value(rng) | 1);
          const float x0 = static_cast<float>(q0 - q_.in.zero_point) * q_.in.scale;
          scale = 0.5f + std::abs(normal(rng)) / 8.0f + 1e-3f * static_cast<float>(c);
          const float product = x0 * scale;
          shift = std::ldexp(1.0f, -21) - product;
          q0_.push_back(q0);
          break;
        }
      }
      scale_.push_back(scale);
      shift_.push_back(shift);
    }
  }

  std::vector<int64_t> sizes_;
  MemoryLayout layout_;
  BnQuant q_;
  std::vector<float> scale_, shift_;
  std::vector<int8_t> q0_;
  graph::ValueRef in_ = -1, out_ = -1;
  std::vector<int8_t> x_;
};

void add_batch_norm_case(Registry& registry, const std::string& prefix,
                         const std::vector<int64_t>& sizes, MemoryLayout layout, BnQuant q,
                         bool accu) {
  const std::string shape = shape_string(sizes), lname(to_string(layout));
  registry.add({prefix + "q8ta_batch_norm/" + lname + "/" + q.tag + "/" + shape, "q8ta_batch_norm",
                shape, lname + " " + q.tag, accu, !accu, false, Metric::GBps,
                [=] { return std::make_unique<BatchNormCase>(sizes, layout, q); }});
}

// Every parameter set rotated over the 4-D awkward shapes, then each on one odd shape, per
// layout; PERF at 1x64x256x256.
void register_batch_norm_cases(Registry& registry) {
  constexpr size_t n = std::size(kBnQuants);
  size_t index = 0;
  for (MemoryLayout layout : kAllPackedInt8Layouts) {
    for (const auto& sizes : awkward_shapes()) {
      if (sizes.size() == 4)
        add_batch_norm_case(registry, "", sizes, layout, kBnQuants[index++ % n], true);
    }
    for (const BnQuant& q : kBnQuants) {
      add_batch_norm_case(registry, "", {2, 17, 5, 6}, layout, q, true);
    }
    add_batch_norm_case(registry, "perf/", {1, 64, 256, 256}, layout, kBnQuants[1], false);
  }
}

// q8ta_add or q8ta_mul cases with `quants`: awkward shapes, broadcast operands in both
// positions, every parameter set; PERF at 1x64x256x256 and 1x256x56x56.
template <size_t N>
void register_binary_cases(Registry& registry, RefBinaryOp op, const AddQuant (&quants)[N]) {
  size_t index = 0;
  const Act acts[] = {Act::None, Act::Relu, Act::Clamp};
  for (MemoryLayout layout : kAllPackedInt8Layouts) {
    for (const auto& sizes : awkward_shapes()) {
      const Act act = acts[index % std::size(acts)];
      add_case(registry, op, "", sizes, layout, Bcast::None, quants[index++ % N], act, true);
    }
    // Broadcast operands in both positions, odd channel counts, batch 2.
    const std::vector<std::vector<int64_t>> bshapes = {
        {1, 3, 5, 7}, {2, 5, 6, 9}, {2, 17, 4, 3}, {1, 8, 3, 4}, {1, 1, 2, 3}};
    for (const auto& sizes : bshapes) {
      for (Bcast b : {Bcast::BChannel, Bcast::BScalar, Bcast::AChannel, Bcast::AScalar,
                      Bcast::BBatch, Bcast::ABatch}) {
        if ((b == Bcast::BBatch || b == Bcast::ABatch) && sizes[0] == 1) continue;
        const Act act = acts[index % std::size(acts)];
        add_case(registry, op, "", sizes, layout, b, quants[index++ % N], act, true);
      }
    }
    for (size_t qi = 0; qi < N; ++qi) {  // every parameter set, relu and none
      for (Act act : {Act::None, Act::Relu}) {
        add_case(registry, op, "", {2, 17, 9, 6}, layout, Bcast::None, quants[qi], act, true,
                 "/q" + std::to_string(qi));
      }
    }
  }
  for (const auto& sizes : std::vector<std::vector<int64_t>>{{1, 64, 256, 256}, {1, 256, 56, 56}}) {
    for (MemoryLayout layout : kAllPackedInt8Layouts) {
      add_case(registry, op, "perf/", sizes, layout, Bcast::None, quants[1], Act::Relu, false);
    }
    // Squeeze-excite: the per-channel scale is the first operand of PyTorch's mul.
    add_case(registry, op, "perf/", sizes, MemoryLayout::PackedInt8_4W4C,
             op == RefBinaryOp::Add ? Bcast::BChannel : Bcast::AChannel, quants[1], Act::None,
             false);
  }
}

}  // namespace

void register_elementwise_cases(Registry& registry) {
  register_requantize_cases(registry, kClampQuants);
  register_binary_cases(registry, RefBinaryOp::Add, kQuants);
  register_requantize_cases(registry, kMulScalarQuants);
  register_binary_cases(registry, RefBinaryOp::Mul, kMulQuants);
  register_batch_norm_cases(registry);
}

}  // namespace vkd::custom_ops
