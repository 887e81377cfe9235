// CPU reference of the float32 convolution and linear ops (semantics above each function). Built
// with -ffp-contract=off (compiler/CMakeLists.txt), so each float32 product and sum is rounded
// on its own, in the order written here.
#include "compiler/reference/Reference.h"

#include <cstdint>
#include <vector>

#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// The (input, weight, optional bias) operands of a convolution or linear, all float32.
struct WeightedOperands {
  const HostTensor& x;
  const HostTensor& w;
  const HostTensor* b;
};

WeightedOperands float_weighted_operands(const ReferenceContext& c) {
  WeightedOperands o{c.input(0, "input"), c.input(1, "weight"), c.optional_input(2, "bias")};
  c.expect_dtype(o.x, DType::Float32, "input");
  c.expect_dtype(o.w, DType::Float32, "weight");
  if (o.b) c.expect_dtype(*o.b, DType::Float32, "bias");
  return o;
}

}  // namespace

namespace {

// The input index a transposed convolution's output `o` reads through tap `k` (o = i * stride
// - pad + k * dilation), or -1 when no input pixel lands there.
int64_t transposed_source(int64_t o, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                          int64_t in) {
  const int64_t num = o + pad - k * dilation;
  if (num < 0 || num % stride != 0 || num / stride >= in) return -1;
  return num / stride;
}

// aten.convolution with transposed = true (rank-4 NCHW; weight [C_in, C_out / groups, KH, KW]):
//   out[n,co,oy,ox] = sum + bias[co], sum one float32 accumulator from +0.0f adding
//   x[n,ci,iy,ix] * w[ci,co - g*Cout_g,ky,kx] (each product rounded to float32) for ci
//   ascending over group g's input channels, then ky, then kx ascending, over the taps whose
//   input pixel exists (oy = iy * stride_h - pad_h + ky * dilation_h, ox likewise); bias last.
//   H_out = (H - 1) * stride_h - 2 * pad_h + dilation_h * (KH - 1) + output_padding_h + 1.
std::vector<HostTensor> transposed_convolution(const ReferenceContext& c, const HostTensor& x,
                                               const HostTensor& w, const HostTensor* b) {
  const auto [sh, sw] = pair_arg(c, c.ints_arg("stride"), "stride");
  const auto [ph, pw] = pair_arg(c, c.ints_arg("padding"), "padding");
  const auto [dh, dw] = pair_arg(c, c.ints_arg("dilation"), "dilation");
  const auto [oph, opw] = pair_arg(c, c.ints_arg("output_padding"), "output_padding");
  const int64_t groups = c.int_arg("groups", 1);
  c.require(sh > 0 && sw > 0 && dh > 0 && dw > 0 && groups > 0,
            "stride, dilation and groups must be positive");
  c.require(ph >= 0 && pw >= 0 && oph >= 0 && opw >= 0, "padding must be non-negative");
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t COG = w.shape[1], KH = w.shape[2], KW = w.shape[3], CO = COG * groups;
  c.require(w.shape[0] == C && C % groups == 0,
            detail::concat("transposed weight ", shape_str(w.shape), " with groups ", groups,
                           " does not match input channels ", C));
  if (b)
    c.require(b->numel() == CO,
              detail::concat("bias has ", b->numel(), " elements, ", CO, " output channels"));
  const int64_t OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + oph + 1;
  const int64_t OW = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opw + 1;
  c.require(OH > 0 && OW > 0, "the padding leaves an empty output");
  const int64_t CIG = C / groups;
  const std::vector<float> xv = x.to_floats(), wv = w.to_floats();
  const std::vector<float> bv = b ? b->to_floats() : std::vector<float>{};
  std::vector<float> ov(static_cast<size_t>(N * CO * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t co = 0; co < CO; ++co) {
      const int64_t g = co / COG;
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          float acc = 0.0f;
          for (int64_t ci = g * CIG; ci < (g + 1) * CIG; ++ci)
            for (int64_t ky = 0; ky < KH; ++ky) {
              const int64_t iy = transposed_source(oy, ky, sh, ph, dh, H);
              if (iy < 0) continue;
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t ix = transposed_source(ox, kx, sw, pw, dw, W);
                if (ix < 0) continue;
                const float prod =
                    xv[static_cast<size_t>(((n * C + ci) * H + iy) * W + ix)] *
                    wv[static_cast<size_t>(((ci * COG + co - g * COG) * KH + ky) * KW + kx)];
                acc = acc + prod;
              }
            }
          if (b) acc = acc + bv[static_cast<size_t>(co)];
          ov[static_cast<size_t>(((n * CO + co) * OH + oy) * OW + ox)] = acc;
        }
    }
  return {HostTensor::from_floats({N, CO, OH, OW}, ov)};
}

}  // namespace

// aten.convolution (rank-4 NCHW, transposed = false; stride/padding/dilation: 1 or 2 ints):
//   out[n,co,oh,ow] = sum + bias[co], where sum is one float32 accumulator starting at +0.0f
//   that adds x * w (each product rounded to float32) for ci ascending over the group's input
//   channels, then kh ascending, then kw ascending; taps in the zero padding are skipped (they
//   would add +0 or -0, which cannot change a sum that starts at +0). Bias is added last.
std::vector<HostTensor> reference_convolution(const ReferenceContext& c) {
  const auto [x, w, b] = float_weighted_operands(c);
  if (x.shape.size() != 4 || w.shape.size() != 4) {
    c.fail(ErrorCode::Unsupported,
           detail::concat("only 2-D convolution (rank-4 input and weight) "
                          "is supported, got input ",
                          shape_str(x.shape), " and weight ", shape_str(w.shape)));
  }
  if (c.bool_arg("transposed", false)) return transposed_convolution(c, x, w, b);
  const auto [sh, sw] = pair_arg(c, c.ints_arg("stride"), "stride");
  const auto [ph, pw] = pair_arg(c, c.ints_arg("padding"), "padding");
  const auto [dh, dw] = pair_arg(c, c.ints_arg("dilation"), "dilation");
  const int64_t groups = c.int_arg("groups", 1);
  c.require(sh > 0 && sw > 0, "stride must be positive");
  c.require(dh > 0 && dw > 0, "dilation must be positive");
  c.require(ph >= 0 && pw >= 0, "padding must be non-negative");
  c.require(groups > 0, "groups must be positive");
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t CO = w.shape[0], CIG = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  c.require(CIG * groups == C, detail::concat("weight ", shape_str(w.shape), " with groups ",
                                              groups, " does not match input channels ", C));
  c.require(CO % groups == 0,
            detail::concat("output channels ", CO, " are not divisible by groups ", groups));
  if (b)
    c.require(b->numel() == CO,
              detail::concat("bias has ", b->numel(), " elements, ", CO, " output channels"));
  const int64_t eff_h = H + 2 * ph - dh * (KH - 1) - 1;
  const int64_t eff_w = W + 2 * pw - dw * (KW - 1) - 1;
  c.require(eff_h >= 0 && eff_w >= 0 && KH > 0 && KW > 0,
            "kernel (dilated) is larger than the padded input");
  const int64_t OH = eff_h / sh + 1, OW = eff_w / sw + 1;
  const int64_t COG = CO / groups;

  const std::vector<float> xv = x.to_floats(), wv = w.to_floats();
  const std::vector<float> bv = b ? b->to_floats() : std::vector<float>{};
  std::vector<float> ov(static_cast<size_t>(N * CO * OH * OW));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t co = 0; co < CO; ++co) {
      const int64_t g = co / COG;
      const float* wco = wv.data() + co * CIG * KH * KW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          float acc = 0.0f;
          for (int64_t cig = 0; cig < CIG; ++cig) {
            const float* xc = xv.data() + ((n * C) + g * CIG + cig) * H * W;
            const float* wc = wco + cig * KH * KW;
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t ih = oh * sh - ph + kh * dh;
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t iw = ow * sw - pw + kw * dw;
                if (iw < 0 || iw >= W) continue;
                const float prod = xc[ih * W + iw] * wc[kh * KW + kw];
                acc = acc + prod;
              }
            }
          }
          if (b) acc = acc + bv[co];
          ov[((n * CO + co) * OH + oh) * OW + ow] = acc;
        }
      }
    }
  }
  return {HostTensor::from_floats({N, CO, OH, OW}, ov)};
}

// aten.linear: y[..., n] = (sum over k ascending of x[..., k] * w[n, k], float32) + b[n].
std::vector<HostTensor> reference_linear(const ReferenceContext& c) {
  const auto [x, w, b] = float_weighted_operands(c);
  c.require(!x.shape.empty(), "input must have rank >= 1");
  c.require(w.shape.size() == 2, detail::concat("weight must be 2-D, got ", shape_str(w.shape)));
  const int64_t K = x.shape.back(), NO = w.shape[0];
  c.require(w.shape[1] == K, detail::concat("weight ", shape_str(w.shape), " does not match input ",
                                            shape_str(x.shape)));
  if (b)
    c.require(b->numel() == NO,
              detail::concat("bias has ", b->numel(), " elements, ", NO, " outputs"));
  const int64_t rows = element_count({x.shape.begin(), x.shape.end() - 1});
  const std::vector<float> xv = x.to_floats(), wv = w.to_floats();
  const std::vector<float> bv = b ? b->to_floats() : std::vector<float>{};
  std::vector<float> ov(static_cast<size_t>(rows * NO));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < NO; ++o) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        const float prod = xv[r * K + k] * wv[o * K + k];
        acc = acc + prod;
      }
      if (b) acc = acc + bv[o];
      ov[r * NO + o] = acc;
    }
  }
  std::vector<int64_t> shape(x.shape.begin(), x.shape.end() - 1);
  shape.push_back(NO);
  return {HostTensor::from_floats(shape, ov)};
}

}  // namespace vkd::compiler
