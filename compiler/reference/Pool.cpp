// CPU reference of the pooling and reduction ops: max_pool2d, avg_pool2d, mean.dim,
// adaptive_avg_pool2d (semantics above each function). Built with -ffp-contract=off
// (compiler/CMakeLists.txt), so each float32 sum is rounded on its own, in the order written here.
#include "compiler/reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// PyTorch's pooling_output_shape (floor division rounding toward -inf).
int64_t pool_output_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil,
                         bool ceil_mode) {
  const int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Mean over `dims` (normalized, distinct): one float32 accumulator per output element, adding
// the input elements in row-major input order, then divided by the count.
HostTensor mean_over(const ReferenceContext& c, const HostTensor& x, std::vector<int64_t> dims,
                     bool keepdim) {
  c.expect_dtype(x, DType::Float32, "self");
  const size_t rank = x.shape.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t d : dims) {
    const int64_t nd = norm_dim(c, d, rank);
    if (rank == 0) continue;
    c.require(!reduced[static_cast<size_t>(nd)], detail::concat("dim ", d, " appears twice"));
    reduced[static_cast<size_t>(nd)] = true;
  }
  if (dims.empty()) std::fill(reduced.begin(), reduced.end(), true);
  std::vector<int64_t> kept_shape(rank), out_shape;
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    kept_shape[d] = reduced[d] ? 1 : x.shape[d];
    if (reduced[d]) count *= x.shape[d];
    if (!reduced[d] || keepdim) out_shape.push_back(kept_shape[d]);
  }
  // Strides of the output (in its keepdim form) seen from the input: 0 along reduced dims.
  std::vector<int64_t> ostrides(rank, 0);
  int64_t s = 1;
  for (size_t d = rank; d-- > 0;) {
    ostrides[d] = reduced[d] ? 0 : s;
    s *= kept_shape[d];
  }
  std::vector<float> acc(static_cast<size_t>(element_count(kept_shape)), 0.0f);
  strided_loop(x.shape, {ostrides}, [&](int64_t i, const std::vector<int64_t>& off) {
    acc[static_cast<size_t>(off[0])] = acc[static_cast<size_t>(off[0])] + get_f32(x, i);
  });
  const float n = static_cast<float>(count);
  for (float& v : acc) v = v / n;  // count 0 gives NaN, as in PyTorch
  return HostTensor::from_floats(out_shape, acc);
}

// The window arguments of max_pool2d / avg_pool2d, (h, w) each: an absent or empty stride is
// the kernel size, absent padding 0, absent dilation 1.
struct PoolArgs {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode;
};

PoolArgs read_pool_args(const ReferenceContext& c) {
  PoolArgs a{};
  std::tie(a.kh, a.kw) = pair_arg(c, c.ints_arg("kernel_size"), "kernel_size");
  const std::vector<int64_t> stride_v =
      c.present("stride") ? c.ints_arg("stride") : std::vector<int64_t>{};
  std::tie(a.sh, a.sw) =
      stride_v.empty() ? std::make_pair(a.kh, a.kw) : pair_arg(c, stride_v, "stride");
  std::tie(a.ph, a.pw) = c.present("padding") ? pair_arg(c, c.ints_arg("padding"), "padding")
                                              : std::make_pair<int64_t, int64_t>(0, 0);
  std::tie(a.dh, a.dw) = c.present("dilation") ? pair_arg(c, c.ints_arg("dilation"), "dilation")
                                               : std::make_pair<int64_t, int64_t>(1, 1);
  a.ceil_mode = c.bool_arg("ceil_mode", false);
  c.require(a.kh > 0 && a.kw > 0, "kernel_size must be positive");
  c.require(a.sh > 0 && a.sw > 0, "stride must be positive");
  c.require(a.dh > 0 && a.dw > 0, "dilation must be positive");
  c.require(a.ph >= 0 && a.pw >= 0 && a.ph <= a.kh / 2 && a.pw <= a.kw / 2,
            "padding must be non-negative and at most half of the kernel size");
  return a;
}

// The output of a 2-d window op on `x` (rank 3 or 4) with output size OH x OW: the leading
// dims kept.
HostTensor pool_output(const ReferenceContext& c, const HostTensor& x, int64_t OH, int64_t OW) {
  c.require(OH >= 1 && OW >= 1, detail::concat("output size ", OH, "x", OW, " is too small"));
  std::vector<int64_t> shape(x.shape.begin(), x.shape.end() - 2);
  shape.insert(shape.end(), {OH, OW});
  return make_tensor(x.dtype, shape);
}

// The float32 sum of plane `p` of `x` (H x W planes) over rows [h0, h1) and columns [w0, w1),
// added in row-major order as PyTorch's CPU pooling kernels add them.
float window_sum(const HostTensor& x, int64_t p, int64_t H, int64_t W, int64_t h0, int64_t h1,
                 int64_t w0, int64_t w1) {
  float sum = 0.0f;
  for (int64_t ih = h0; ih < h1; ++ih) {
    for (int64_t iw = w0; iw < w1; ++iw) sum += get_f32(x, (p * H + ih) * W + iw);
  }
  return sum;
}

}  // namespace

// aten.max_pool2d: PyTorch's output size (pooling_output_shape: with ceil_mode the last window
//   is dropped when it would start in the right padding), padding acts as -inf, taps are at
//   start + k * dilation, NaN wins; padding must be <= kernel / 2 as PyTorch requires.
std::vector<HostTensor> reference_max_pool2d(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  if (x.dtype != DType::Float32 && x.dtype != DType::Int8) {
    c.fail(ErrorCode::Unsupported, detail::concat("max_pool2d of ", to_string(x.dtype)));
  }
  c.require(x.shape.size() == 3 || x.shape.size() == 4, "input must have rank 3 or 4");
  const auto [kh, kw, sh, sw, ph, pw, dh, dw, ceil_mode] = read_pool_args(c);
  const size_t rank = x.shape.size();
  const int64_t H = x.shape[rank - 2], W = x.shape[rank - 1];
  const int64_t planes = element_count({x.shape.begin(), x.shape.end() - 2});
  const int64_t OH = pool_output_size(H, kh, ph, sh, dh, ceil_mode);
  const int64_t OW = pool_output_size(W, kw, pw, sw, dw, ceil_mode);
  HostTensor out = pool_output(c, x, OH, OW);
  const bool is_float = x.dtype == DType::Float32;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        float fmax = -std::numeric_limits<float>::infinity();
        int64_t imax = -128;
        for (int64_t i = 0; i < kh; ++i) {
          const int64_t ih = oh * sh - ph + i * dh;
          if (ih < 0 || ih >= H) continue;
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t iw = ow * sw - pw + j * dw;
            if (iw < 0 || iw >= W) continue;
            const int64_t src = (p * H + ih) * W + iw;
            if (is_float) {
              const float v = get_f32(x, src);
              if (v > fmax || std::isnan(v)) fmax = v;  // NaN wins, as in PyTorch
            } else {
              imax = std::max<int64_t>(imax, get_i8(x, src));
            }
          }
        }
        const int64_t dst = (p * OH + oh) * OW + ow;
        if (is_float) {
          set_f32(out, dst, fmax);
        } else {
          set_i8(out, dst, static_cast<int8_t>(imax));
        }
      }
    }
  }
  return {out};
}

// aten.avg_pool2d: PyTorch's output size (as max_pool2d's, dilation 1) and CPU kernel: along
//   each dim a window starts at o * stride - padding and ends at min(start + kernel, size +
//   padding); pool_size = the product of the two (end - start); both then clipped to the input.
//   The float32 sum of the window's input elements (row-major order) is divided by
//   float32(divisor): divisor_override if given, else pool_size (count_include_pad) or the
//   number of input elements in the window. Padding must be <= kernel / 2, divisor_override != 0.
std::vector<HostTensor> reference_avg_pool2d(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  c.expect_dtype(x, DType::Float32, "self");
  c.require(x.shape.size() == 3 || x.shape.size() == 4, "input must have rank 3 or 4");
  const PoolArgs a = read_pool_args(c);
  const bool include_pad = c.bool_arg("count_include_pad", true);
  const int64_t divisor_override =
      c.present("divisor_override") ? c.int_arg("divisor_override") : 0;
  c.require(!c.present("divisor_override") || divisor_override != 0,
            "divisor_override must not be 0");
  const size_t rank = x.shape.size();
  const int64_t H = x.shape[rank - 2], W = x.shape[rank - 1];
  const int64_t planes = element_count({x.shape.begin(), x.shape.end() - 2});
  const int64_t OH = pool_output_size(H, a.kh, a.ph, a.sh, 1, a.ceil_mode);
  const int64_t OW = pool_output_size(W, a.kw, a.pw, a.sw, 1, a.ceil_mode);
  HostTensor out = pool_output(c, x, OH, OW);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t h0 = oh * a.sh - a.ph, h1 = std::min(h0 + a.kh, H + a.ph);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t w0 = ow * a.sw - a.pw, w1 = std::min(w0 + a.kw, W + a.pw);
        const int64_t pool_size = (h1 - h0) * (w1 - w0);
        const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h1, H);
        const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w1, W);
        const int64_t divisor = divisor_override != 0 ? divisor_override
                                : include_pad         ? pool_size
                                                      : (he - hs) * (we - ws);
        const float sum = window_sum(x, p, H, W, hs, he, ws, we);
        set_f32(out, (p * OH + oh) * OW + ow, sum / static_cast<float>(divisor));
      }
    }
  }
  return {out};
}

// aten.mean.dim (any dims; empty list = all dims) and aten.adaptive_avg_pool2d to 1x1 (PyTorch
//   itself computes that as a mean over (-1, -2)): for each output element one float32
//   accumulator sums the reduced elements in row-major order of the input, then divides by the
//   element count (as a float32). PyTorch sums in a different (vectorized, cascaded) order, so
//   means agree with it to rounding, not bit for bit.
// aten.adaptive_avg_pool2d to another size: PyTorch's CPU kernel: output o of a dim averages
//   input [floor(o * in / out), ceil((o + 1) * in / out)); the float32 sum (row-major order) is
//   divided by float32(kh), then by float32(kw) (kh, kw the window's sizes), as PyTorch does.
std::vector<HostTensor> reference_mean_dim(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  if (c.present("dtype")) {
    c.require(c.dtype_arg("dtype") == DType::Float32, "dtype must be float32");
  }
  const std::vector<int64_t> dims = c.present("dim") ? c.ints_arg("dim") : std::vector<int64_t>{};
  return {mean_over(c, x, dims, c.bool_arg("keepdim", false))};
}

std::vector<HostTensor> reference_adaptive_avg_pool2d(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  const auto [OH, OW] = pair_arg(c, c.ints_arg("output_size"), "output_size");
  c.require(x.shape.size() == 3 || x.shape.size() == 4, "input must have rank 3 or 4");
  if (OH == 1 && OW == 1) return {mean_over(c, x, {-2, -1}, true)};
  c.expect_dtype(x, DType::Float32, "self");
  const size_t rank = x.shape.size();
  const int64_t H = x.shape[rank - 2], W = x.shape[rank - 1];
  const int64_t planes = element_count({x.shape.begin(), x.shape.end() - 2});
  HostTensor out = pool_output(c, x, OH, OW);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
        const float sum = window_sum(x, p, H, W, h0, h1, w0, w1);
        const float by_rows = sum / static_cast<float>(h1 - h0);
        set_f32(out, (p * OH + oh) * OW + ow, by_rows / static_cast<float>(w1 - w0));
      }
    }
  }
  return {out};
}

}  // namespace vkd::compiler
