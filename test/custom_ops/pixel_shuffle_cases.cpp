// ACCU and PERF cases for q8ta_pixel_shuffle (int8x4, byte shuffle and requantize) and
// pixel_shuffle (float32 / float16, every storage and float layout).
#include <cmath>

#include "runtime/ops/PixelShuffle.h"
#include "test/custom_ops/EtvkShapes.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/PixelShuffleReference.h"

namespace vkd::custom_ops {
namespace {

using testing::RefShape;

// (N, C_out, H, W, r): the input is (N, C_out * r^2, H, W).
struct ShuffleShape {
  int64_t n, c_out, h, w, r;
  std::vector<int64_t> in_sizes() const { return {n, c_out * r * r, h, w}; }
  std::vector<int64_t> out_sizes() const { return {n, c_out, h * r, w * r}; }
};

std::string shape_name(const ShuffleShape& s) {
  return shape_string(s.in_sizes()) + "_r" + std::to_string(s.r);
}

RefShape ref_shape(const std::vector<int64_t>& s) { return {s[0], s[1], s[2], s[3]}; }

// Input and output quantization of one case.
struct ShuffleQuant {
  const char* name;
  ops::QuantParams in, out;
};

const ShuffleQuant kQuants[] = {
    {"same", {0.05f, 3}, {0.05f, 3}},  // byte shuffle
    {"same_zp-128", {0.02f, -128}, {0.02f, -128}},
    {"requant", {0.05f, -7}, {0.031f, 11}},  // both clamp ends are reached
    {"requant_zp-128_127", {0.011f, -128}, {0.013f, 127}},
    {"requant_zp127_-128", {0.04f, 127}, {0.0173f, -128}},
};

class Q8taPixelShuffleCase : public CaseInstance {
 public:
  Q8taPixelShuffleCase(ShuffleShape s, MemoryLayout in, MemoryLayout out, ShuffleQuant q)
      : s_(s), in_layout_(in), out_layout_(out), q_(q) {}

  void build(graph::ComputeGraph& g) override {
    in_ref_ = g.add_tensor({s_.in_sizes(), DType::Int8x4, StorageType::Buffer, in_layout_}, "x");
    out_ref_ = g.add_tensor({s_.out_sizes(), DType::Int8x4, StorageType::Buffer, out_layout_}, "y");
    ops::add_q8ta_pixel_shuffle_node(g, in_ref_, q_.in, s_.r, out_ref_, q_.out);
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    x_ = random_int8(g.spec(in_ref_).numel(), -128, 127, rng);
    // Padding lanes = the input zero point (the test's own packing).
    g.write_words(in_ref_,
                  testing::ref_pack(in_layout_, ref_shape(s_.in_sizes()), x_, q_.in.zero_point));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const auto y = testing::reference_q8ta_pixel_shuffle(x_, s_.n, s_.c_out * s_.r * s_.r, s_.h,
                                                         s_.w, s_.r, q_.in.scale, q_.in.zero_point,
                                                         q_.out.scale, q_.out.zero_point);
    AccuResult r;
    compare_words(g.read_words(out_ref_),
                  testing::ref_pack(out_layout_, ref_shape(s_.out_sizes()), y, q_.out.zero_point),
                  r);
    return r;
  }
  // Every input and output word once.
  PerfWork work() const override {
    return {4.0 * double(testing::ref_word_count(in_layout_, ref_shape(s_.in_sizes())) +
                         testing::ref_word_count(out_layout_, ref_shape(s_.out_sizes()))),
            0.0};
  }

 private:
  ShuffleShape s_;
  MemoryLayout in_layout_, out_layout_;
  ShuffleQuant q_;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
  std::vector<int8_t> x_;
};

class FloatPixelShuffleCase : public CaseInstance {
 public:
  FloatPixelShuffleCase(ShuffleShape s, FloatPlacement in, FloatPlacement out, DType dtype)
      : s_(s), in_(in), out_(out), dtype_(dtype) {}

  void build(graph::ComputeGraph& g) override {
    in_ref_ = g.add_tensor({s_.in_sizes(), dtype_, in_.storage, in_.layout}, "x");
    out_ref_ = g.add_tensor({s_.out_sizes(), dtype_, out_.storage, out_.layout}, "y");
    ops::add_pixel_shuffle_node(g, in_ref_, s_.r, out_ref_);
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    // Multiples of 1/64 in [-16, 16): exact in float16 too (11 significant bits), so the
    // comparison is exact.
    std::uniform_int_distribution<int> v(-1024, 1023);
    x_.resize(static_cast<size_t>(g.spec(in_ref_).numel()));
    for (auto& x : x_) x = static_cast<float>(v(rng)) / 64.0f;
    g.write_float(in_ref_, x_);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    compare_floats(
        g.read_float(out_ref_),
        testing::reference_pixel_shuffle(x_, s_.n, s_.c_out * s_.r * s_.r, s_.h, s_.w, s_.r), 0.0,
        r);
    return r;
  }
  PerfWork work() const override {
    return {
        2.0 * double(element_size(dtype_)) * double(s_.n * s_.c_out * s_.r * s_.r * s_.h * s_.w),
        0.0};
  }

 private:
  ShuffleShape s_;
  FloatPlacement in_, out_;
  DType dtype_;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
  std::vector<float> x_;
};

// float16 buffers need 16-bit storage (the float16 texture variants do not).
std::string float16_buffer_unavailable(const vk::DeviceProfile& p) {
  return p.storage_16bit ? "" : "16-bit storage (float16 buffers)";
}

const MemoryLayout kChannelsPacked[] = {MemoryLayout::PackedInt8_4W4C,
                                        MemoryLayout::PackedInt8_4C1W};

std::string lname(MemoryLayout l) { return std::string(to_string(l)); }

// `reference_us`: the reference backend's latency for the same problem (etvk/ cases).
void add_int8_case(Registry& registry, const std::string& prefix, const ShuffleShape& s,
                   MemoryLayout in, MemoryLayout out, const ShuffleQuant& q, bool accu,
                   double reference_us = 0) {
  const std::string layouts = lname(in) + "->" + lname(out);
  Case c{prefix + "q8ta_pixel_shuffle/" + layouts + "/" + q.name + "/" + shape_name(s),
         "q8ta_pixel_shuffle",
         shape_name(s),
         layouts + " " + q.name,
         accu,
         !accu,
         false,
         Metric::GBps,
         [=] { return std::make_unique<Q8taPixelShuffleCase>(s, in, out, q); }};
  c.reference_us = reference_us;
  registry.add(std::move(c));
}

void add_float_case(Registry& registry, const std::string& prefix, const ShuffleShape& s,
                    FloatPlacement in, FloatPlacement out, DType dtype, bool accu) {
  const std::string layouts = placement_name(in) + "->" + placement_name(out);
  const std::string dt(to_string(dtype));
  Case c{prefix + "pixel_shuffle/" + dt + "/" + layouts + "/" + shape_name(s),
         "pixel_shuffle",
         shape_name(s),
         dt + " " + layouts,
         accu,
         !accu,
         false,
         Metric::GBps,
         [=] { return std::make_unique<FloatPixelShuffleCase>(s, in, out, dtype); }};
  if (dtype == DType::Float16 &&
      (in.storage == StorageType::Buffer || out.storage == StorageType::Buffer)) {
    c.unavailable = float16_buffer_unavailable;
  }
  registry.add(std::move(c));
}

}  // namespace

void register_pixel_shuffle_cases(Registry& registry) {
  // C_out not a multiple of 4 (padding lanes), odd H/W (4W4C padding widths), batch 2, r = 1..3.
  const ShuffleShape shapes[] = {
      {1, 1, 1, 1, 2}, {1, 3, 5, 7, 2},  {2, 4, 3, 3, 2}, {1, 5, 4, 9, 3},
      {2, 8, 7, 5, 2}, {1, 17, 3, 2, 3}, {2, 3, 6, 1, 3}, {1, 6, 3, 5, 1},
  };
  size_t index = 0;
  for (const auto& s : shapes) {
    for (MemoryLayout in : kChannelsPacked) {
      for (MemoryLayout out : kChannelsPacked) {
        // Same-layout pairs get every parameter set; mixed pairs a rotating one.
        if (in == out) {
          for (const auto& q : kQuants) add_int8_case(registry, "", s, in, out, q, true);
        } else {
          add_int8_case(registry, "", s, in, out, kQuants[index++ % std::size(kQuants)], true);
        }
      }
    }
  }
  // The float op: every placement to itself (what the compiler ties), plus mixed pairs.
  const ShuffleShape float_shapes[] = {{1, 3, 5, 7, 2}, {2, 5, 3, 2, 3}, {1, 4, 4, 4, 2}};
  for (const auto& s : float_shapes) {
    for (size_t i = 0; i < std::size(kAllFloatPlacements); ++i) {
      for (DType dt : {DType::Float32, DType::Float16}) {
        add_float_case(registry, "", s, kAllFloatPlacements[i], kAllFloatPlacements[i], dt, true);
        add_float_case(registry, "", s, kAllFloatPlacements[i],
                       kAllFloatPlacements[(i + 2) % std::size(kAllFloatPlacements)], dt, true);
      }
    }
  }

  // PERF: the large shape and the model's size (both paths, both layouts); the reference
  // backend's shapes (the same qparams, as it measured them).
  for (MemoryLayout l : kChannelsPacked) {
    for (const ShuffleShape& s :
         {ShuffleShape{1, 24, 1024, 1024, 2}, ShuffleShape{1, 24, 128, 72, 2}}) {
      add_int8_case(registry, "perf/", s, l, l, kQuants[0], false);
      add_int8_case(registry, "perf/", s, l, l, kQuants[2], false);
    }
    for (const etvk::PixelShuffleShape& e : etvk::kPixelShuffle) {
      add_int8_case(registry, "etvk/", ShuffleShape{1, e.c / 4, e.h, e.w, 2}, l, l, kQuants[0],
                    false, e.reference_us);
    }
  }
  const ShuffleShape mid{1, 16, 256, 256, 2};
  for (const auto& p : {kAllFloatPlacements[0], kAllFloatPlacements[2], kAllFloatPlacements[5]}) {
    add_float_case(registry, "perf/", mid, p, p, DType::Float32, false);
  }
}

}  // namespace vkd::custom_ops
