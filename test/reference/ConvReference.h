// CPU reference for q8ta_conv2d and q8ta_conv_transpose2d, written for the tests from the
// arithmetic that runtime/ops/Conv2d.h and ConvTranspose2d.h define (it shares no code with the
// shaders or the runtime).
// Activations are NCHW, weights [C_out, C_in / groups, KH, KW] (PyTorch's order).
//   acc[n][co][oy][ox] = sum over the group's input channels ci and the taps (ky, kx) that land
//                        inside the input of (qx[n][ci][iy][ix] - zp_x) * qw[co][ci_g][ky][kx]
//                        iy = oy * stride_h - pad_top + ky * dilation_h (ix likewise)   (int32)
//                        A tap outside the input reads zp_x, i.e. contributes nothing, so it is
//                        skipped. Summed directly as (qx - zp_x) * qw: the runtime's
//                        "sum qx' * qw - zp_x * wsum" rewriting is not repeated here.
//   y                  = q8ta_linear's float32 epilogue (reference_linear_epilogue), applied
//                        with the pixels as rows and the output channels as columns
//   int8 output        = reference_quantize(y, s_y, zp_y, act_min, act_max) from
//                        QuantReference.h (elementwise, so it applies to the NCHW y as is)
// A file that includes this header must be compiled with -ffp-contract=off (see
// LinearReference.h: the product is rounded to float32 before the bias is added).
#pragma once

#include <cstdint>
#include <vector>

#include "test/reference/LinearReference.h"

namespace vkd::testing {

// The shapes and geometry of one convolution. Padding is per side (asymmetric padding is a
// folded pad op).
struct RefConv2d {
  int64_t n = 1, c_in = 1, h = 1, w = 1;  // input [N, C_in, H, W]
  int64_t c_out = 1, kh = 1, kw = 1;      // weights [C_out, C_in / groups, KH, KW]
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
};

// One output dimension: (in + pads - dilation * (kernel - 1) - 1) / stride + 1. Meaningful only
// when the dilated kernel fits the padded input (the numerator is >= 0).
inline int64_t reference_conv_output_size(int64_t in, int64_t kernel, int64_t stride,
                                          int64_t pad_before, int64_t pad_after, int64_t dilation) {
  return (in + pad_before + pad_after - dilation * (kernel - 1) - 1) / stride + 1;
}

inline int64_t reference_conv_out_h(const RefConv2d& c) {
  return reference_conv_output_size(c.h, c.kh, c.stride_h, c.pad_top, c.pad_bottom, c.dilation_h);
}

inline int64_t reference_conv_out_w(const RefConv2d& c) {
  return reference_conv_output_size(c.w, c.kw, c.stride_w, c.pad_left, c.pad_right, c.dilation_w);
}

// acc in pixel-major order, [N * H_out * W_out, C_out] row-major: the [M, N] matrix order of
// reference_linear_epilogue, so the conv takes the linear epilogue unchanged.
inline std::vector<int32_t> reference_conv2d_acc(const std::vector<int8_t>& qx,
                                                 const std::vector<int8_t>& qw, const RefConv2d& c,
                                                 int zp_x) {
  const int64_t out_h = reference_conv_out_h(c), out_w = reference_conv_out_w(c);
  const int64_t cin_g = c.c_in / c.groups, cout_g = c.c_out / c.groups;
  std::vector<int32_t> acc(static_cast<size_t>(c.n * out_h * out_w * c.c_out));
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t oy = 0; oy < out_h; ++oy)
      for (int64_t ox = 0; ox < out_w; ++ox)
        for (int64_t co = 0; co < c.c_out; ++co) {
          const int64_t first_ci = (co / cout_g) * cin_g;  // the group's first input channel
          int32_t sum = 0;
          for (int64_t i = 0; i < cin_g; ++i)
            for (int64_t ky = 0; ky < c.kh; ++ky) {
              const int64_t iy = oy * c.stride_h - c.pad_top + ky * c.dilation_h;
              if (iy < 0 || iy >= c.h) continue;  // padding: qx = zp_x, a zero term
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                const int64_t ix = ox * c.stride_w - c.pad_left + kx * c.dilation_w;
                if (ix < 0 || ix >= c.w) continue;
                const int64_t x_at = ((n * c.c_in + first_ci + i) * c.h + iy) * c.w + ix;
                const int64_t w_at = ((co * cin_g + i) * c.kh + ky) * c.kw + kx;
                sum += (int32_t(qx[static_cast<size_t>(x_at)]) - zp_x) *
                       int32_t(qw[static_cast<size_t>(w_at)]);
              }
            }
          acc[static_cast<size_t>(((n * out_h + oy) * out_w + ox) * c.c_out + co)] = sum;
        }
  return acc;
}

// [N * P, C] pixel-major values (P pixels per image) to NCHW [N, C, P].
template <typename T>
std::vector<T> reference_pixel_major_to_nchw(const std::vector<T>& v, int64_t n, int64_t channels,
                                             int64_t pixels) {
  std::vector<T> out(v.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t ch = 0; ch < channels; ++ch) {
        out[static_cast<size_t>((b * channels + ch) * pixels + p)] =
            v[static_cast<size_t>((b * pixels + p) * channels + ch)];
      }
  return out;
}

// The float32 result y of q8ta_conv2d, NCHW [N, C_out, H_out, W_out]. `bias` empty = no bias.
inline std::vector<float> reference_q8ta_conv2d(const std::vector<int8_t>& qx,
                                                const std::vector<int8_t>& qw, const RefConv2d& c,
                                                float s_x, int zp_x, const std::vector<float>& s_w,
                                                const std::vector<float>& bias) {
  const int64_t pixels = reference_conv_out_h(c) * reference_conv_out_w(c);
  const std::vector<int32_t> acc = reference_conv2d_acc(qx, qw, c, zp_x);
  const std::vector<float> y =
      reference_linear_epilogue(acc, c.n * pixels, c.c_out, s_x, s_w, bias);
  return reference_pixel_major_to_nchw(y, c.n, c.c_out, pixels);
}

// A transposed convolution (q8ta_conv_transpose2d): input [N, C_in, H, W], weights in
// q8ta_conv2d's order [C_out, C_in / groups, KH, KW] (PyTorch's [C_in, C_out / groups, KH, KW]
// with the channel dims swapped per group).
struct RefConvTranspose2d {
  int64_t n = 1, c_in = 1, h = 1, w = 1;
  int64_t c_out = 1, kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t output_pad_h = 0, output_pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
};

// (in - 1) * stride - 2 * pad + dilation * (kernel - 1) + output_padding + 1, PyTorch's size.
inline int64_t reference_conv_transpose_output_size(int64_t in, int64_t kernel, int64_t stride,
                                                    int64_t pad, int64_t output_pad,
                                                    int64_t dilation) {
  return (in - 1) * stride - 2 * pad + dilation * (kernel - 1) + output_pad + 1;
}

inline int64_t reference_conv_transpose_out_h(const RefConvTranspose2d& c) {
  return reference_conv_transpose_output_size(c.h, c.kh, c.stride_h, c.pad_h, c.output_pad_h,
                                              c.dilation_h);
}

inline int64_t reference_conv_transpose_out_w(const RefConvTranspose2d& c) {
  return reference_conv_transpose_output_size(c.w, c.kw, c.stride_w, c.pad_w, c.output_pad_w,
                                              c.dilation_w);
}

// acc in pixel-major order [N * H_out * W_out, C_out], computed as PyTorch defines a transposed
// convolution: every input pixel (iy, ix) scatters (qx - zp_x) * qw into the outputs
// (iy * stride_h - pad_h + ky * dilation_h, ix * stride_w - pad_w + kx * dilation_w) that exist.
inline std::vector<int32_t> reference_conv_transpose2d_acc(const std::vector<int8_t>& qx,
                                                           const std::vector<int8_t>& qw,
                                                           const RefConvTranspose2d& c, int zp_x) {
  const int64_t out_h = reference_conv_transpose_out_h(c);
  const int64_t out_w = reference_conv_transpose_out_w(c);
  const int64_t cin_g = c.c_in / c.groups, cout_g = c.c_out / c.groups;
  std::vector<int32_t> acc(static_cast<size_t>(c.n * out_h * out_w * c.c_out), 0);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t ci = 0; ci < c.c_in; ++ci)
      for (int64_t iy = 0; iy < c.h; ++iy)
        for (int64_t ix = 0; ix < c.w; ++ix) {
          const int64_t x_at = ((n * c.c_in + ci) * c.h + iy) * c.w + ix;
          const int32_t x = int32_t(qx[static_cast<size_t>(x_at)]) - zp_x;
          const int64_t g = ci / cin_g;
          for (int64_t co = g * cout_g; co < (g + 1) * cout_g; ++co)
            for (int64_t ky = 0; ky < c.kh; ++ky) {
              const int64_t oy = iy * c.stride_h - c.pad_h + ky * c.dilation_h;
              if (oy < 0 || oy >= out_h) continue;
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                const int64_t ox = ix * c.stride_w - c.pad_w + kx * c.dilation_w;
                if (ox < 0 || ox >= out_w) continue;
                const int64_t w_at = ((co * cin_g + ci - g * cin_g) * c.kh + ky) * c.kw + kx;
                acc[static_cast<size_t>(((n * out_h + oy) * out_w + ox) * c.c_out + co)] +=
                    x * int32_t(qw[static_cast<size_t>(w_at)]);
              }
            }
        }
  return acc;
}

// The float32 result y of q8ta_conv_transpose2d, NCHW [N, C_out, H_out, W_out] (q8ta_conv2d's
// epilogue). `bias` empty = no bias.
inline std::vector<float> reference_q8ta_conv_transpose2d(const std::vector<int8_t>& qx,
                                                          const std::vector<int8_t>& qw,
                                                          const RefConvTranspose2d& c, float s_x,
                                                          int zp_x, const std::vector<float>& s_w,
                                                          const std::vector<float>& bias) {
  const int64_t pixels = reference_conv_transpose_out_h(c) * reference_conv_transpose_out_w(c);
  const std::vector<int32_t> acc = reference_conv_transpose2d_acc(qx, qw, c, zp_x);
  const std::vector<float> y =
      reference_linear_epilogue(acc, c.n * pixels, c.c_out, s_x, s_w, bias);
  return reference_pixel_major_to_nchw(y, c.n, c.c_out, pixels);
}

}  // namespace vkd::testing
