// ACCU and PERF cases for q8ta_upsample_nearest2d and q8ta_upsample_bilinear2d (int8x4 in every
// packed layout, scale factors and output sizes, byte copies and requantization).
// Compiled with -ffp-contract=off (test/CMakeLists.txt), as the reference's float steps must
// round one at a time as the shader's do.
#include "core/Error.h"
#include "runtime/ops/Upsample.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/UpsampleReference.h"

namespace vkd::custom_ops {
namespace {

using ops::UpsampleMode;
using testing::RefShape;
using testing::RefUpsample;

// One upsample: input sizes, output H and W, and the scale factors PyTorch was given (0: the
// output size was).
struct UpShape {
  int64_t n, c, h, w, out_h, out_w;
  double scale_h = 0, scale_w = 0;
};

// An output size given directly.
UpShape sized(int64_t n, int64_t c, int64_t h, int64_t w, int64_t out_h, int64_t out_w) {
  return {n, c, h, w, out_h, out_w};
}

// A scale factor per dim, the output size floor(in * scale) as ATen computes it.
UpShape scaled(int64_t n, int64_t c, int64_t h, int64_t w, double sh, double sw) {
  return {n, c, h, w, int64_t(double(h) * sh), int64_t(double(w) * sw), sh, sw};
}

std::string scale_text(double s) {
  std::string t = std::to_string(s);
  while (t.back() == '0') t.pop_back();
  if (t.back() == '.') t.pop_back();
  return t;
}

std::string shape_name(const UpShape& s) {
  std::string name = shape_string({s.n, s.c, s.h, s.w}) + "->" + std::to_string(s.out_h) + "x" +
                     std::to_string(s.out_w);
  if (s.scale_h > 0) name += " s" + scale_text(s.scale_h) + "," + scale_text(s.scale_w);
  return name;
}

struct UpQuant {
  const char* name;
  ops::QuantParams in, out;
};

const UpQuant kQuants[] = {
    {"same", {0.05f, 3}, {0.05f, 3}},
    {"same_zp-128", {0.02f, -128}, {0.02f, -128}},
    {"requant", {0.05f, -7}, {0.031f, 11}},  // both clamp ends are reached
    {"requant_zp127_-128", {0.04f, 127}, {0.0173f, -128}},
};

struct UpSetup {
  UpShape shape;
  UpsampleMode mode;
  bool align_corners;
  MemoryLayout layout;
  UpQuant quant;
  bool accu = true;
};

class Q8taUpsampleCase : public CaseInstance {
 public:
  explicit Q8taUpsampleCase(UpSetup s) : s_(std::move(s)) {}

  void build(graph::ComputeGraph& g) override {
    const UpShape& u = s_.shape;
    VKD_CHECK(s_.accu || !g.profile().is_cpu() || u.n * u.c * u.out_h * u.out_w <= (32 << 20),
              ErrorCode::Unsupported, "upsample too large for a CPU device");
    in_ref_ =
        g.add_tensor({{u.n, u.c, u.h, u.w}, DType::Int8x4, StorageType::Buffer, s_.layout}, "x");
    out_ref_ = g.add_tensor(
        {{u.n, u.c, u.out_h, u.out_w}, DType::Int8x4, StorageType::Buffer, s_.layout}, "y");
    ops::UpsampleParams p;
    p.mode = s_.mode;
    p.input = s_.quant.in;
    p.output = s_.quant.out;
    p.scale_h = u.scale_h;
    p.scale_w = u.scale_w;
    p.align_corners = s_.align_corners;
    ops::add_q8ta_upsample_node(g, in_ref_, out_ref_, p);
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    x_ = random_int8(g.spec(in_ref_).numel(), -128, 127, rng);
    g.write_words(in_ref_, testing::ref_pack(s_.layout, in_shape(), x_, s_.quant.in.zero_point));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const UpShape& u = s_.shape;
    const RefUpsample r{
        u.n, u.c, u.h, u.w, u.out_h, u.out_w, u.scale_h, u.scale_w, s_.align_corners};
    const UpQuant& q = s_.quant;
    const auto y = s_.mode == UpsampleMode::Nearest
                       ? testing::reference_q8ta_upsample_nearest(
                             x_, r, q.in.scale, q.in.zero_point, q.out.scale, q.out.zero_point)
                       : testing::reference_q8ta_upsample_bilinear(
                             x_, r, q.in.scale, q.in.zero_point, q.out.scale, q.out.zero_point);
    AccuResult result;
    // Every word, padding included (it must hold the output zero point).
    compare_words(g.read_words(out_ref_),
                  testing::ref_pack(s_.layout, out_shape(), y, q.out.zero_point), result);
    return result;
  }
  // Every input and output word once.
  PerfWork work() const override {
    return {4.0 * double(testing::ref_word_count(s_.layout, in_shape()) +
                         testing::ref_word_count(s_.layout, out_shape())),
            0.0};
  }

 private:
  RefShape in_shape() const { return {s_.shape.n, s_.shape.c, s_.shape.h, s_.shape.w}; }
  RefShape out_shape() const { return {s_.shape.n, s_.shape.c, s_.shape.out_h, s_.shape.out_w}; }

  UpSetup s_;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
  std::vector<int8_t> x_;
};

constexpr MemoryLayout kLayouts[] = {MemoryLayout::PackedInt8_4W4C, MemoryLayout::PackedInt8_4H4W,
                                     MemoryLayout::PackedInt8_4C1W};

void add_case(Registry& registry, const std::string& prefix, UpSetup s, bool accu) {
  s.accu = accu;
  const bool nearest = s.mode == UpsampleMode::Nearest;
  const std::string op = nearest ? "q8ta_upsample_nearest2d" : "q8ta_upsample_bilinear2d";
  const std::string layout(to_string(s.layout));
  const std::string variant = layout + " " + s.quant.name +
                              (nearest           ? ""
                               : s.align_corners ? " align"
                                                 : " half_pixel");
  registry.add({prefix + op + "/" + variant + "/" + shape_name(s.shape), op, shape_name(s.shape),
                variant, accu, !accu, false, Metric::GBps,
                [s] { return std::make_unique<Q8taUpsampleCase>(s); }});
}

// Scale factors 2, 3, 4 and non-integer ones (with ATen's floor(in * scale) size), output sizes
// up, down and mixed, a size equal to the input along one dim, odd channel counts (padding
// lanes), odd H / W (4W4C and 4H4W padding), batch 2, a 1x1 input. Scale 2.05 doubles 9 and 19
// rows: nearest halves their indices in 18x17 but not in 38x93 (rows + columns past 128); the
// 93 columns read sources up to 61, where bilinear's float32 source index is coarse.
std::vector<UpShape> accu_shapes() {
  return {
      scaled(1, 3, 5, 7, 2, 2),     scaled(2, 5, 4, 3, 3, 3),       scaled(1, 17, 3, 5, 4, 2),
      scaled(1, 6, 7, 6, 1.5, 2.5), scaled(1, 4, 9, 10, 2.05, 1.7), sized(1, 9, 5, 6, 13, 11),
      sized(2, 3, 8, 9, 5, 20),     sized(1, 2, 6, 7, 6, 15),       sized(1, 5, 1, 1, 3, 5),
      sized(1, 7, 11, 13, 4, 6),    scaled(1, 1, 6, 5, 1.1, 1.0),   scaled(1, 3, 19, 62, 2.05, 1.5),
  };
}

}  // namespace

void register_upsample_cases(Registry& registry) {
  size_t index = 0;
  for (const UpShape& shape : accu_shapes()) {
    for (MemoryLayout layout : kLayouts) {
      // Nearest: a byte-copy and a requantizing parameter set per layout; bilinear: both
      // coordinate rules, parameter sets rotating.
      add_case(registry, "", {shape, UpsampleMode::Nearest, false, layout, kQuants[index % 2]},
               true);
      add_case(registry, "", {shape, UpsampleMode::Nearest, false, layout, kQuants[2 + index % 2]},
               true);
      for (bool align : {false, true}) {
        add_case(
            registry, "",
            {shape, UpsampleMode::Bilinear, align, layout, kQuants[index % std::size(kQuants)]},
            true);
        ++index;
      }
    }
  }
  // PERF: the U-Net decoder's 2x upsample of a 64x256x256 map in every layout, nearest (byte
  // copy and requantized) and bilinear.
  const UpShape big = scaled(1, 64, 256, 256, 2, 2);
  for (MemoryLayout layout : kLayouts) {
    add_case(registry, "perf/", {big, UpsampleMode::Nearest, false, layout, kQuants[0]}, false);
    add_case(registry, "perf/", {big, UpsampleMode::Nearest, false, layout, kQuants[2]}, false);
    add_case(registry, "perf/", {big, UpsampleMode::Bilinear, false, layout, kQuants[0]}, false);
  }
  add_case(registry, "perf/",
           {big, UpsampleMode::Bilinear, true, MemoryLayout::PackedInt8_4W4C, kQuants[2]}, false);
  // 4x the bytes (80 MiB moved), where a launch's fixed cost no longer counts: GPUs only.
  const UpShape bigger = scaled(1, 64, 512, 512, 2, 2);
  for (MemoryLayout layout : {MemoryLayout::PackedInt8_4W4C, MemoryLayout::PackedInt8_4C1W}) {
    add_case(registry, "perf/", {bigger, UpsampleMode::Nearest, false, layout, kQuants[0]}, false);
  }
  add_case(registry, "perf/",
           {bigger, UpsampleMode::Bilinear, false, MemoryLayout::PackedInt8_4W4C, kQuants[0]},
           false);
}

}  // namespace vkd::custom_ops
