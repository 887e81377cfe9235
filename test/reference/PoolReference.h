// CPU references for q8ta_max_pool2d, q8ta_avg_pool2d, q8ta_adaptive_avg_pool2d and q8ta_mean,
// written for the tests (they share no code with the shaders or the runtime). NCHW int8 vectors.
//   max_pool2d: PyTorch semantics; padding never wins; a window with no input position gives
//               -128 (what -inf quantizes to). With other output parameters, what the edge graph
//               dq -> max_pool2d -> q computes: the inputs dequantized (float32), the float
//               max (-inf for an empty window), quantized to the output's (full int8 range),
//               with QuantReference.h's rounding; not the kernel's requantize-after-max order.
//   avg_pool2d: PyTorch's windows and divisor (below); over the window's input positions
//               acc = sum(q) - count * zp_in;  m = float(double(s_in) / divisor)
//               q = clamp(nearbyint(float(float(acc) * m) * inv_s_out) + zp_out, -128, 127)
//   adaptive:   the same with windows [floor(o * in / out), ceil((o + 1) * in / out)) and
//               divisor = count.
//   mean:       the same with the whole H x W plane as the window (divisor H*W).
//   inv_s_out = float(1/s_out); every product rounded to float32, ties to even.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "test/reference/LayoutReference.h"
#include "test/reference/QuantReference.h"

namespace vkd::testing {

struct RefPool {
  int kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode;
};

// Written from PyTorch's pooling_output_shape: ceil/floor of the window count, and with
// ceil_mode the last window dropped when it would start in the right padding.
inline int64_t ref_pool_out(int64_t in, int k, int p, int s, int d, bool ceil_mode) {
  const int64_t span = in + 2 * p - static_cast<int64_t>(d) * (k - 1) - 1;
  int64_t out =
      static_cast<int64_t>(ceil_mode ? std::ceil(double(span) / s) : std::floor(double(span) / s)) +
      1;
  if (ceil_mode && (out - 1) * s >= in + p) out -= 1;
  return out;
}

// The window maxima of NCHW `x` (int8 or float), `lowest` where a window has no input position.
template <typename T>
std::vector<T> ref_max_windows(const std::vector<T>& x, const RefShape& s, const RefPool& p,
                               T lowest, RefShape& out_shape) {
  const int64_t OH = ref_pool_out(s.h, p.kh, p.ph, p.sh, p.dh, p.ceil_mode);
  const int64_t OW = ref_pool_out(s.w, p.kw, p.pw, p.sw, p.dw, p.ceil_mode);
  out_shape = {s.n, s.c, OH, OW};
  std::vector<T> out(static_cast<size_t>(s.n * s.c * OH * OW));
  size_t o = 0;
  for (int64_t plane = 0; plane < s.n * s.c; ++plane) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow, ++o) {
        T best = lowest;
        for (int i = 0; i < p.kh; ++i) {
          for (int j = 0; j < p.kw; ++j) {
            const int64_t h = oh * p.sh - p.ph + int64_t(i) * p.dh;
            const int64_t w = ow * p.sw - p.pw + int64_t(j) * p.dw;
            if (h < 0 || h >= s.h || w < 0 || w >= s.w) continue;
            best = std::max(best, x[static_cast<size_t>((plane * s.h + h) * s.w + w)]);
          }
        }
        out[o] = best;
      }
    }
  }
  return out;
}

inline std::vector<int8_t> reference_max_pool2d(const std::vector<int8_t>& x, const RefShape& s,
                                                const RefPool& p, RefShape& out_shape) {
  return ref_max_windows<int8_t>(x, s, p, -128, out_shape);
}

// dq (in_scale, in_zp) -> max_pool2d -> q (out_scale, out_zp, -128..127).
inline std::vector<int8_t> reference_max_pool2d(const std::vector<int8_t>& x, const RefShape& s,
                                                const RefPool& p, float in_scale, int in_zp,
                                                float out_scale, int out_zp, RefShape& out_shape) {
  const std::vector<float> pooled =
      ref_max_windows<float>(reference_dequantize(x, in_scale, in_zp), s, p,
                             -std::numeric_limits<float>::infinity(), out_shape);
  return reference_quantize(pooled, out_scale, out_zp, -128, 127);
}

// One requantized average: `sum` of `count` int8 values, divided by `divisor`.
inline int8_t ref_average(int64_t sum, int64_t count, double divisor, float in_scale, int in_zp,
                          float out_scale, int out_zp) {
  const float m = static_cast<float>(static_cast<double>(in_scale) / divisor);
  const float inv = static_cast<float>(1.0 / static_cast<double>(out_scale));
  const float acc = static_cast<float>(sum - count * in_zp);
  const float y = acc * m;
  const float t = y * inv;
  const double q = std::nearbyint(static_cast<double>(t)) + out_zp;
  return static_cast<int8_t>(std::fmin(std::fmax(q, -128.0), 127.0));
}

// PyTorch avg_pool2d's arguments; divisor_override 0 is None.
struct RefAvgPool {
  int kh, kw, sh, sw, ph, pw;
  bool ceil_mode, count_include_pad;
  int divisor_override;
};

// A window along one dim: the input range [lo, hi) it averages and its padded extent.
struct RefWindow {
  int64_t lo, hi, extent;
};

// Written from PyTorch's avg_pool2d CPU kernel: start = o * s - p, end = min(start + k,
// in + p), extent = end - start; then both clipped to the input.
inline RefWindow ref_pool_window(int64_t o, int k, int s, int p, int64_t in) {
  const int64_t start = o * s - p;
  const int64_t end = std::min<int64_t>(start + k, in + p);
  return {std::max<int64_t>(start, 0), std::min<int64_t>(end, in), end - start};
}

// Written from PyTorch's adaptive pooling start_index / end_index.
inline RefWindow ref_adaptive_window(int64_t o, int64_t out, int64_t in) {
  const int64_t start = static_cast<int64_t>(std::floor(double(o * in) / double(out)));
  const int64_t end = static_cast<int64_t>(std::ceil(double((o + 1) * in) / double(out)));
  return {start, end, end - start};
}

// The average of every window of `rows` x `cols` (NCHW planes of `s`) with `divisor_of`
// giving each window's divisor.
template <typename DivisorOf>
std::vector<int8_t> ref_window_averages(const std::vector<int8_t>& x, const RefShape& s,
                                        const std::vector<RefWindow>& rows,
                                        const std::vector<RefWindow>& cols, DivisorOf divisor_of,
                                        float in_scale, int in_zp, float out_scale, int out_zp) {
  std::vector<int8_t> out;
  for (int64_t plane = 0; plane < s.n * s.c; ++plane) {
    for (const RefWindow& r : rows) {
      for (const RefWindow& c : cols) {
        int64_t sum = 0;
        for (int64_t h = r.lo; h < r.hi; ++h) {
          for (int64_t w = c.lo; w < c.hi; ++w)
            sum += x[static_cast<size_t>((plane * s.h + h) * s.w + w)];
        }
        const int64_t count = (r.hi - r.lo) * (c.hi - c.lo);
        out.push_back(
            ref_average(sum, count, divisor_of(r, c, count), in_scale, in_zp, out_scale, out_zp));
      }
    }
  }
  return out;
}

inline std::vector<int8_t> reference_avg_pool2d(const std::vector<int8_t>& x, const RefShape& s,
                                                const RefAvgPool& p, float in_scale, int in_zp,
                                                float out_scale, int out_zp, RefShape& out_shape) {
  const int64_t OH = ref_pool_out(s.h, p.kh, p.ph, p.sh, 1, p.ceil_mode);
  const int64_t OW = ref_pool_out(s.w, p.kw, p.pw, p.sw, 1, p.ceil_mode);
  out_shape = {s.n, s.c, OH, OW};
  std::vector<RefWindow> rows, cols;
  for (int64_t o = 0; o < OH; ++o) rows.push_back(ref_pool_window(o, p.kh, p.sh, p.ph, s.h));
  for (int64_t o = 0; o < OW; ++o) cols.push_back(ref_pool_window(o, p.kw, p.sw, p.pw, s.w));
  auto divisor = [&p](const RefWindow& r, const RefWindow& c, int64_t count) -> double {
    if (p.divisor_override != 0) return p.divisor_override;
    return static_cast<double>(p.count_include_pad ? r.extent * c.extent : count);
  };
  return ref_window_averages(x, s, rows, cols, divisor, in_scale, in_zp, out_scale, out_zp);
}

inline std::vector<int8_t> reference_adaptive_avg_pool2d(const std::vector<int8_t>& x,
                                                         const RefShape& s, int64_t oh, int64_t ow,
                                                         float in_scale, int in_zp, float out_scale,
                                                         int out_zp) {
  std::vector<RefWindow> rows, cols;
  for (int64_t o = 0; o < oh; ++o) rows.push_back(ref_adaptive_window(o, oh, s.h));
  for (int64_t o = 0; o < ow; ++o) cols.push_back(ref_adaptive_window(o, ow, s.w));
  auto divisor = [](const RefWindow&, const RefWindow&, int64_t count) -> double {
    return static_cast<double>(count);
  };
  return ref_window_averages(x, s, rows, cols, divisor, in_scale, in_zp, out_scale, out_zp);
}

inline std::vector<int8_t> reference_mean_hw(const std::vector<int8_t>& x, const RefShape& s,
                                             float in_scale, int in_zp, float out_scale,
                                             int out_zp) {
  const int64_t count = s.h * s.w;
  std::vector<int8_t> out(static_cast<size_t>(s.n * s.c));
  for (int64_t plane = 0; plane < s.n * s.c; ++plane) {
    int64_t sum = 0;
    for (int64_t i = 0; i < count; ++i) sum += x[static_cast<size_t>(plane * count + i)];
    out[static_cast<size_t>(plane)] =
        ref_average(sum, count, static_cast<double>(count), in_scale, in_zp, out_scale, out_zp);
  }
  return out;
}

}  // namespace vkd::testing
