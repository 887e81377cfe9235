// The residual add of a fused epilogue (q8ta_conv2d_add, q8ta_linear_add) in an ACCU case: the
// tensor added to the op's int8 output (random int8 with its own quantization), the sum's
// quantization and activation range, and the expected output: the CPU reference of q8ta_add
// (test/reference/ElementwiseReference.h) applied to the op's own expected int8 output, i.e.
// the unfused sequence op -> q8ta_add.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "runtime/ops/Linear.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/reference/ElementwiseReference.h"
#include "test/reference/LayoutReference.h"

namespace vkd::custom_ops {

class ResidualCase {
 public:
  ResidualCase(int32_t other_zero_point, OutputQuant sum)
      : other_zp_(other_zero_point), sum_(sum) {}

  // Draws the added tensor for an op whose expected int8 output is `a` (any element order: the
  // add is element-wise), quantized with `a_q`: its scale 1.7 times a's (so the two operands
  // weigh differently), and the sum's scale from the float sums (output_scale_for: both clamp
  // ends exercised).
  void draw(const std::vector<int8_t>& a, const ops::QuantParams& a_q, std::mt19937& rng) {
    other_ = random_int8(static_cast<int64_t>(a.size()), -128, 127, rng);
    other_scale_ = 1.7f * a_q.scale;
    std::vector<float> sums(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      sums[i] = static_cast<float>(a[i] - a_q.zero_point) * a_q.scale +
                static_cast<float>(other_[i] - other_zp_) * other_scale_;
    }
    sum_scale_ = output_scale_for(sums, sum_.zero_point);
  }

  // Adds the added tensor to `g` as a graph input of `spec` (the op output's) and returns the
  // op's fused add reading it.
  ops::ResidualAdd add_input(graph::ComputeGraph& g, const TensorSpec& spec) {
    ref_ = g.add_tensor(spec, "other");
    g.add_input(ref_);
    return {ref_,
            {other_scale_, other_zp_, -128, 127},
            {sum_scale_, sum_.zero_point, -128, 127},
            sum_.act_min,
            sum_.act_max};
  }

  // Writes the added tensor packed as the op's output: `layout`, `shape`, padding lanes at its
  // zero point.
  void write(graph::ComputeGraph& g, MemoryLayout layout, const testing::RefShape& shape) const {
    g.write_words(ref_, testing::ref_pack(layout, shape, other_, other_zp_));
  }

  // q8ta_add of `a` (quantized with `a_q`) and the added tensor, element by element.
  std::vector<int8_t> expected(const std::vector<int8_t>& a, const ops::QuantParams& a_q) const {
    std::vector<int8_t> out(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      out[i] = testing::reference_binary(testing::RefBinaryOp::Add, a[i], other_[i],
                                         {a_q.scale, a_q.zero_point}, {other_scale_, other_zp_},
                                         {sum_scale_, sum_.zero_point}, sum_.act_min, sum_.act_max);
    }
    return out;
  }

  int32_t sum_zero_point() const { return sum_.zero_point; }

 private:
  int32_t other_zp_;
  OutputQuant sum_;
  graph::ValueRef ref_ = -1;  // add_input's tensor
  std::vector<int8_t> other_;
  float other_scale_ = 1.0f, sum_scale_ = 1.0f;
};

}  // namespace vkd::custom_ops
