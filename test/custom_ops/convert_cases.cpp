// ACCU and PERF cases for q8ta_convert (every int8x4 layout pair), q8ta_view (reshapes, every
// layout pair) and float_convert.
#include "runtime/ops/LayoutConvert.h"
#include "test/custom_ops/Harness.h"
#include "test/reference/LayoutReference.h"

namespace vkd::custom_ops {
namespace {

using testing::RefShape;

RefShape ref_shape(const std::vector<int64_t>& sizes) {
  const Dims4 d =
      TensorSpec{sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C}.dims4();
  return {d.n, d.c, d.h, d.w};
}

// q8ta_convert (same sizes, another layout) and q8ta_view (a reshape): both keep the NCHW
// order, so the reference is the same values packed under the output's sizes and layout.
enum class Repack { Convert, View };

class Int8RepackCase : public CaseInstance {
 public:
  Int8RepackCase(Repack op, std::vector<int64_t> in_sizes, std::vector<int64_t> out_sizes,
                 MemoryLayout in, MemoryLayout out, int zp)
      : op_(op),
        in_sizes_(std::move(in_sizes)),
        out_sizes_(std::move(out_sizes)),
        in_(in),
        out_(out),
        zp_(zp) {}

  void build(graph::ComputeGraph& g) override {
    in_ref_ = g.add_tensor({in_sizes_, DType::Int8x4, StorageType::Buffer, in_}, "a");
    out_ref_ = g.add_tensor({out_sizes_, DType::Int8x4, StorageType::Buffer, out_}, "b");
    if (op_ == Repack::View) {
      ops::add_q8ta_view_node(g, in_ref_, out_ref_, zp_);
    } else {
      ops::add_q8ta_convert_node(g, in_ref_, out_ref_, zp_);
    }
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    std::uniform_int_distribution<int> value(-128, 127);
    values_.resize(static_cast<size_t>(g.spec(in_ref_).numel()));
    for (auto& v : values_) v = static_cast<int8_t>(value(rng));
    g.write_words(in_ref_, testing::ref_pack(in_, ref_shape(in_sizes_), values_, zp_));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    compare_words(g.read_words(out_ref_),
                  testing::ref_pack(out_, ref_shape(out_sizes_), values_, zp_), r);
    return r;
  }
  PerfWork work() const override {
    return {4.0 * (testing::ref_word_count(in_, ref_shape(in_sizes_)) +
                   testing::ref_word_count(out_, ref_shape(out_sizes_))),
            0.0};
  }

 private:
  Repack op_;
  std::vector<int64_t> in_sizes_, out_sizes_;
  MemoryLayout in_, out_;
  int zp_;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
  std::vector<int8_t> values_;
};

// Reshapes as flatten / view / squeeze / unsqueeze make them, with partial 4-blocks on both
// sides, in every layout pair.
void register_view_cases(Registry& registry) {
  using Sizes = std::vector<int64_t>;
  const std::pair<Sizes, Sizes> views[] = {{{2, 8, 1, 1}, {2, 8}},       {{1, 5, 7, 9}, {1, 35, 9}},
                                           {{2, 3, 5, 6}, {2, 90}},      {{3, 10}, {3, 10, 1, 1}},
                                           {{1, 17, 3, 3}, {17, 9}},     {{1, 6, 4, 4}, {1, 6, 16}},
                                           {{2, 1280, 1, 1}, {2, 1280}}, {{5, 7}, {7, 5}}};
  const int zero_points[] = {0, -128, 127, 5};
  size_t index = 0;
  for (const auto& [in_sizes, out_sizes] : views) {
    const std::string shape = shape_string(in_sizes) + "->" + shape_string(out_sizes);
    for (MemoryLayout in : kAllPackedInt8Layouts) {
      for (MemoryLayout out : kAllPackedInt8Layouts) {
        const int zp = zero_points[index++ % std::size(zero_points)];
        const std::string pair = std::string(to_string(in)) + "->" + std::string(to_string(out));
        registry.add({"q8ta_view/" + pair + "/" + shape, "q8ta_view", shape, pair, true, false,
                      false, Metric::GBps, [=] {
                        return std::make_unique<Int8RepackCase>(Repack::View, in_sizes, out_sizes,
                                                                in, out, zp);
                      }});
      }
    }
  }
}

class FloatConvertCase : public CaseInstance {
 public:
  FloatConvertCase(std::vector<int64_t> sizes, FloatPlacement in, FloatPlacement out)
      : sizes_(std::move(sizes)), in_(in), out_(out) {}

  void build(graph::ComputeGraph& g) override {
    in_ref_ = g.add_tensor({sizes_, DType::Float32, in_.storage, in_.layout}, "a");
    out_ref_ = g.add_tensor({sizes_, DType::Float32, out_.storage, out_.layout}, "b");
    ops::add_float_convert_node(g, in_ref_, out_ref_);
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    std::uniform_real_distribution<float> value(-100.0f, 100.0f);
    values_.resize(static_cast<size_t>(g.spec(in_ref_).numel()));
    for (auto& v : values_) v = value(rng);
    g.write_float(in_ref_, values_);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    compare_floats(g.read_float(out_ref_), values_, 0.0, r);
    return r;
  }
  PerfWork work() const override {
    int64_t numel = 1;
    for (auto s : sizes_) numel *= s;
    return {8.0 * numel, 0.0};
  }

 private:
  std::vector<int64_t> sizes_;
  FloatPlacement in_, out_;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
  std::vector<float> values_;
};

}  // namespace

void register_convert_cases(Registry& registry) {
  register_view_cases(registry);
  const int zero_points[] = {0, -128, 127, 5};
  size_t index = 0;
  for (const auto& sizes : awkward_shapes()) {
    const std::string shape = shape_string(sizes);
    for (MemoryLayout in : kAllPackedInt8Layouts) {
      for (MemoryLayout out : kAllPackedInt8Layouts) {
        const int zp = zero_points[index++ % std::size(zero_points)];
        const std::string pair = std::string(to_string(in)) + "->" + std::string(to_string(out));
        registry.add({"q8ta_convert/" + pair + "/" + shape, "q8ta_convert", shape, pair, true,
                      false, false, Metric::GBps, [=] {
                        return std::make_unique<Int8RepackCase>(Repack::Convert, sizes, sizes, in,
                                                                out, zp);
                      }});
      }
    }
    for (StorageType si : {StorageType::Buffer, StorageType::Texture3D}) {
      for (StorageType so : {StorageType::Buffer, StorageType::Texture3D}) {
        for (MemoryLayout li : kAllFloatLayouts) {
          const MemoryLayout lo = kAllFloatLayouts[(index++) % 3];
          const FloatPlacement a{si, li}, b{so, lo};
          const std::string pair = placement_name(a) + "->" + placement_name(b);
          registry.add({"float_convert/" + pair + "/" + shape, "float_convert", shape, pair, true,
                        false, false, Metric::GBps,
                        [=] { return std::make_unique<FloatConvertCase>(sizes, a, b); }});
        }
      }
    }
  }
  for (const std::vector<int64_t>& sizes :
       {std::vector<int64_t>{1, 64, 1024, 1024}, std::vector<int64_t>{1, 96, 128, 72}}) {
    const std::string shape = shape_string(sizes);
    for (MemoryLayout in : kAllPackedInt8Layouts) {
      for (MemoryLayout out : kAllPackedInt8Layouts) {
        const std::string pair = std::string(to_string(in)) + "->" + std::string(to_string(out));
        registry.add({"perf/q8ta_convert/" + pair + "/" + shape, "q8ta_convert", shape, pair, false,
                      true, false, Metric::GBps, [=] {
                        return std::make_unique<Int8RepackCase>(Repack::Convert, sizes, sizes, in,
                                                                out, 0);
                      }});
      }
    }
  }
  const std::vector<int64_t> sizes = {1, 64, 256, 256};
  const FloatPlacement nchw{StorageType::Buffer, MemoryLayout::WidthPacked};
  const FloatPlacement tex{StorageType::Texture3D, MemoryLayout::ChannelsPacked};
  registry.add({"perf/float_convert/buffer->texture/1x64x256x256", "float_convert", "1x64x256x256",
                placement_name(nchw) + " -> " + placement_name(tex), false, true, false,
                Metric::GBps,
                [=] { return std::make_unique<FloatConvertCase>(sizes, nchw, tex); }});
}

}  // namespace vkd::custom_ops
