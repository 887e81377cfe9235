// ACCU and PERF cases for float_sum / float_vector_norm (runtime/ops/Reduce.h): every dim of
// awkward ranks 1 to 4, keepdim or not, outputs in every float buffer layout; sums through +-0,
// +-inf and NaN; norms of values spread over 2^-20 .. 2^20 (4096 square roots of two-term sums,
// against std::sqrt's correctly rounded ones). Every output is compared bit for bit with
// test/reference/FloatElementwiseReference.h (two NaNs match). PERF: MiniLM's pooling at
// T = 128: the sum over tokens of [1, 128, 384], the norm of [1, 384].
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/ops/Reduce.h"
#include "test/custom_ops/Harness.h"
#include "test/reference/FloatElementwiseReference.h"

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
    AccuResult r;
    const std::vector<float> got = g.read_float(out_);
    const std::vector<float> want = testing::ref_float_reduce(x_, s_.shape, s_.dim, s_.norm);
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

}  // namespace

void register_reduce_cases(Registry& registry) {
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
