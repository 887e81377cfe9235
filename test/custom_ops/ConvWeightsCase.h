// Host weights of one convolution layer in a case (q8ta_conv2d, q8ta_conv2d_dw_pw): symmetric
// int8 weights in [-127, 127], per-output-channel scales ~U(0.001, 0.02) and (optionally) a bias
// of the size of a typical output, `typical_acc * input_scale * s_w[co]`.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "runtime/ops/Conv2d.h"
#include "test/custom_ops/QuantCaseUtils.h"

namespace vkd::custom_ops {

struct HostConv {
  std::vector<int8_t> weight;  // [C_out, C_in / groups, KH, KW]
  std::vector<float> scales, bias;
  int64_t c_out = 0, in_per_group = 0, kh = 0, kw = 0;

  ops::Conv2dWeights view() const {
    return {weight.data(),
            scales.data(),
            bias.empty() ? nullptr : bias.data(),
            c_out,
            in_per_group,
            kh,
            kw};
  }
  // What a node reads of them: int8 weights, float scales and bias.
  double bytes() const { return double(weight.size()) + 4.0 * (scales.size() + bias.size()); }
};

inline HostConv random_host_conv(int64_t c_out, int64_t in_per_group, int64_t kh, int64_t kw,
                                 bool with_bias, float input_scale, float typical_acc,
                                 std::mt19937& rng) {
  HostConv h;
  h.c_out = c_out;
  h.in_per_group = in_per_group;
  h.kh = kh;
  h.kw = kw;
  h.weight = random_int8(c_out * in_per_group * kh * kw, -127, 127, rng);
  ChannelParams c = random_channel_params(c_out, with_bias, input_scale, typical_acc, rng);
  h.scales = std::move(c.scales);
  h.bias = std::move(c.bias);
  return h;
}

}  // namespace vkd::custom_ops
