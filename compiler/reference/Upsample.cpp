// CPU references of aten.upsample_nearest2d and aten.upsample_bilinear2d (both overloads; the
// semantics above each function) and the argument reader they share with the shape rules and
// the fusion pattern (Upsample.h). Where each output pixel reads is PyTorch 2.14's CPU rule,
// computed by partitioner_schema/Interpolation.h, the same code the q8ta_upsample kernels' tables
// come from.
#include "compiler/reference/Upsample.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "compiler/reference/Reference.h"
#include "compiler/reference/ReferenceContext.h"
#include "partitioner_schema/Interpolation.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// An argument as a list of numbers (ints accepted), nullopt when absent, None or not a list.
std::optional<std::vector<double>> number_list(const Node& n, const char* name) {
  auto it = n.args.find(name);
  if (it == n.args.end()) return std::nullopt;
  if (const auto* d = std::get_if<std::vector<double>>(&it->second)) return *d;
  if (const auto* i = std::get_if<std::vector<int64_t>>(&it->second)) {
    return std::vector<double>(i->begin(), i->end());
  }
  return std::nullopt;
}

// scales_h / scales_w of the default overload: absent or None is 0 (none).
std::string optional_scale(const Node& n, const char* name, double& out) {
  out = 0;
  if (!arg_present(n, name)) return "";
  const ArgValue& v = n.args.at(name);
  if (const auto* d = std::get_if<double>(&v)) {
    out = *d;
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    out = static_cast<double>(*i);
  } else {
    return std::string("argument '") + name + "' must be a number or null";
  }
  return std::isfinite(out) ? "" : std::string("argument '") + name + "' must be finite";
}

// The scale factors: `scale_factors` (.vec) or scales_h / scales_w; `sizes_given` says whether
// output_size is there (then .vec must have no scale_factors).
std::string read_scales(const Node& n, bool vec, bool sizes_given, UpsampleArgs& a) {
  if (!vec) {
    const std::string why = optional_scale(n, "scales_h", a.scale_h);
    return why.empty() ? optional_scale(n, "scales_w", a.scale_w) : why;
  }
  const bool scales_given = arg_present(n, "scale_factors");
  if (sizes_given == scales_given) {
    return "exactly one of 'output_size' and 'scale_factors' must be given";
  }
  if (!scales_given) return "";
  const auto s = number_list(n, "scale_factors");
  if (!s || s->size() != 2) return "argument 'scale_factors' must be a list of 2 numbers";
  for (double v : *s) {
    if (!(std::isfinite(v) && v > 0)) return "argument 'scale_factors' must be finite and > 0";
  }
  a.scale_h = (*s)[0];
  a.scale_w = (*s)[1];
  return "";
}

// Element offsets of an NCHW tensor's (plane, row, column).
int64_t offset(int64_t plane, int64_t row, int64_t col, int64_t h, int64_t w) {
  return (plane * h + row) * w + col;
}

}  // namespace

bool is_bilinear_upsample(const std::string& op) {
  return op.rfind("aten.upsample_bilinear2d", 0) == 0;
}

bool is_vec_upsample(const std::string& op) {
  return op.size() > 4 && op.compare(op.size() - 4, 4, ".vec") == 0;
}

std::string read_upsample_args(const Node& n, const std::vector<int64_t>& in_shape,
                               UpsampleArgs& a) {
  if (in_shape.size() != 4) {
    return "expected a rank-4 input ([N, C, H, W]), got shape " + shape_str(in_shape);
  }
  a = UpsampleArgs{};
  if (is_bilinear_upsample(n.op)) {
    auto it = n.args.find("align_corners");
    const bool* b = it == n.args.end() ? nullptr : std::get_if<bool>(&it->second);
    if (!b) return "argument 'align_corners' must be a bool";
    a.align_corners = *b;
  }
  const bool vec = is_vec_upsample(n.op);
  const bool sizes_given = arg_present(n, "output_size");
  if (!vec && !sizes_given) return "argument 'output_size' is required";
  const std::string why = read_scales(n, vec, sizes_given, a);
  if (!why.empty()) return why;
  if (sizes_given) {
    auto it = n.args.find("output_size");
    const auto* sizes = std::get_if<std::vector<int64_t>>(&it->second);
    if (!sizes || sizes->size() != 2) return "argument 'output_size' must be a list of 2 integers";
    a.out_h = (*sizes)[0];
    a.out_w = (*sizes)[1];
  } else {
    a.out_h = upsample_output_size(in_shape[2], a.scale_h);
    a.out_w = upsample_output_size(in_shape[3], a.scale_w);
  }
  if (a.out_h < 1 || a.out_w < 1 || in_shape[2] < 1 || in_shape[3] < 1) {
    return "output size " + std::to_string(a.out_h) + "x" + std::to_string(a.out_w) + " of input " +
           shape_str(in_shape) + " is empty";
  }
  return "";
}

namespace {

// The node's input tensor (input 0: `input` of .vec, `self` of the default overload) and
// its geometry; InvalidArgument when the arguments do not fit it.
UpsampleArgs checked_args(const ReferenceContext& c, const HostTensor& x) {
  UpsampleArgs a;
  const std::string why = read_upsample_args(c.node(), x.shape, a);
  c.require(why.empty(), why);
  return a;
}

}  // namespace

// aten.upsample_nearest2d (.vec and default, rank 4, any dtype: it moves elements):
// out[n, c, oh, ow] = in[n, c, src_h(oh), src_w(ow)], src(d) = min(floor(float32(d) * step),
// in - 1) with step = float32(1 / scale) or float32(in) / float32(out); but d for a dim with
// out == in and d / 2 for one with out == 2 in when out_h + out_w <= 128: PyTorch 2.14's CPU
// kernels for an NCHW tensor (partitioner_schema/Interpolation.h).
std::vector<HostTensor> reference_upsample_nearest2d(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "input");
  const UpsampleArgs a = checked_args(c, x);
  const int64_t planes = x.shape[0] * x.shape[1], h = x.shape[2], w = x.shape[3];
  const auto [rows, cols] = nearest_sources(h, w, a.out_h, a.out_w, a.scale_h, a.scale_w);
  HostTensor out = make_tensor(x.dtype, {x.shape[0], x.shape[1], a.out_h, a.out_w});
  const size_t es = elem_bytes(x.dtype);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < a.out_h; ++oh)
      for (int64_t ow = 0; ow < a.out_w; ++ow) {
        const int64_t src =
            offset(p, rows[static_cast<size_t>(oh)], cols[static_cast<size_t>(ow)], h, w);
        std::memcpy(out.bytes.data() + offset(p, oh, ow, a.out_h, a.out_w) * es,
                    x.bytes.data() + src * es, es);
      }
  return {out};
}

// aten.upsample_bilinear2d (.vec and default, rank 4, float32), computed with the
// q8ta_upsample_bilinear2d kernel's weights: per dim, taps i0, i1 and w1 = roundEven(lambda1 *
// 2^20) from PyTorch's float32 lambda1 (partitioner_schema/Interpolation.h), w0 = 2^20 - w1; then
//   out = float32(sum over a, b of (double(w_a * w_b) * x[i_a, i_b])  * 2^-40)
// summed in double in the order (0,0), (0,1), (1,0), (1,1) and rounded once. The kernel sums the
// same products of the int8 differences exactly and rounds once too, so on a dequantized input
// the two differ only by the dequantize's and this double sum's rounding (~2^-24 relative), far
// below a quantization step except at exact rounding ties. Against PyTorch's float op: each
// weight within 2^-21 of PyTorch's lambda (lambda0 within 2^-21 + 2^-25), so |out - torch| <=
// 2^-19 * max |x| over the taps, plus PyTorch's own float32 rounding.
std::vector<HostTensor> reference_upsample_bilinear2d(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "input");
  c.expect_dtype(x, DType::Float32, "input");
  const UpsampleArgs a = checked_args(c, x);
  const int64_t planes = x.shape[0] * x.shape[1], h = x.shape[2], w = x.shape[3];
  const std::vector<LinearTap> rows = bilinear_taps(h, a.out_h, a.align_corners, a.scale_h);
  const std::vector<LinearTap> cols = bilinear_taps(w, a.out_w, a.align_corners, a.scale_w);
  const std::vector<float> xv = x.to_floats();
  std::vector<float> ov(static_cast<size_t>(planes * a.out_h * a.out_w));
  const double unit = std::ldexp(1.0, -2 * kBilinearWeightBits);
  size_t i = 0;
  for (int64_t p = 0; p < planes; ++p)
    for (const LinearTap& r : rows)
      for (const LinearTap& s : cols) {
        const int64_t ri[2] = {r.i0, r.i1}, ci[2] = {s.i0, s.i1};
        const int64_t rw[2] = {kBilinearWeightOne - r.w1, r.w1};
        const int64_t cw[2] = {kBilinearWeightOne - s.w1, s.w1};
        double sum = 0;
        for (int ka = 0; ka < 2; ++ka)
          for (int kb = 0; kb < 2; ++kb) {
            const double v = xv[static_cast<size_t>(offset(p, ri[ka], ci[kb], h, w))];
            sum += static_cast<double>(rw[ka] * cw[kb]) * v;
          }
        ov[i++] = static_cast<float>(sum * unit);
      }
  return {HostTensor::from_floats({x.shape[0], x.shape[1], a.out_h, a.out_w}, ov)};
}

}  // namespace vkd::compiler
