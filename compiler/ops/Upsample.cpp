// aten.upsample_nearest2d and aten.upsample_bilinear2d, each in both overloads: `.vec`
// (F.interpolate's: output_size or scale_factors) and the default one (output_size with the
// optional scales_h / scales_w, what decompositions write).
#include "compiler/ops/EdgeOp.h"

#include <cmath>
#include <cstring>

#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/ReferenceContext.h"
#include "compiler/reference/UpsampleArgs.h"
#include "partitioner_schema/Interpolation.h"

// CPU references of aten.upsample_nearest2d and aten.upsample_bilinear2d (both overloads; the
// semantics above each function).
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// Element offsets of an NCHW tensor's (plane, row, column).
int64_t offset(int64_t plane, int64_t row, int64_t col, int64_t h, int64_t w) {
  return (plane * h + row) * w + col;
}

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

// dq -> aten.upsample_nearest2d | aten.upsample_bilinear2d (either overload) -> q =>
// q8ta_upsample_nearest2d | q8ta_upsample_bilinear2d. Nearest with the same scale and zero point
// on both sides moves bytes; otherwise the kernel requantizes (bilinear always: its one
// requantization). No activation is fused and there is no float-output variant.
namespace vkd::compiler::fusion {
namespace {

// "" when the anchor `n` (input dq `p`, matched `tail`) fits `backend`; fills the input
// qparams and the geometry.
std::string check_upsample(const Graph& g, const Node& n, int p, const Tail& tail,
                           const std::string& backend, QuantInfo& in_q, UpsampleArgs& a) {
  const std::string why = check_quantized_anchor(g, n, p, tail, backend, in_q);
  if (!why.empty()) return why;
  if (tail.out_q.quant_min != -128 || tail.out_q.quant_max != 127) {
    return "output range " + std::to_string(tail.out_q.quant_min) + ".." +
           std::to_string(tail.out_q.quant_max) + " is not the full int8 range";
  }
  return read_upsample_args(n, g.value(n.inputs[0]).shape, a);
}

}  // namespace

void fuse_upsample(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  const bool bilinear = is_bilinear_upsample(n.op);
  const std::string backend = bilinear ? "q8ta_upsample_bilinear2d" : "q8ta_upsample_nearest2d";
  const std::optional<DqAnchor> m = state.match_dq_anchor(i, backend);
  if (!m) return;
  auto fail = [&](const std::string& why) { state.not_fused(m->chain, m->nodes, backend, why); };

  QuantInfo in_q;
  UpsampleArgs a;
  const std::string why = check_upsample(g, n, m->dq, m->tail, backend, in_q, a);
  if (!why.empty()) return fail(why);
  Fusion f;
  f.nodes = m->nodes;
  if (state.any_claimed(f.nodes)) return fail("overlaps another fused pattern");
  f.dead = {m->x};
  f.dead.insert(f.dead.end(), m->tail.values.begin(), m->tail.values.end());
  Node& out = f.node;
  out.op = backend;
  const std::string x_q = g.nodes[m->dq].inputs[0];
  const std::string output = g.nodes[m->tail.q].outputs[0];
  out.inputs = {x_q};
  out.outputs = {output};
  out.args["input_scale"] = in_q.scale;
  out.args["input_zero_point"] = in_q.zero_point;
  if (bilinear) out.args["align_corners"] = a.align_corners;
  out.args["scales_h"] = a.scale_h;
  out.args["scales_w"] = a.scale_w;
  out.args["output_scale"] = m->tail.out_q.scale;
  out.args["output_zero_point"] = m->tail.out_q.zero_point;
  out.origin = state.fused_origin(i, out.op);
  state.produced[output] = m->tail.out_q;
  state.consume_quant(x_q, m->dq, in_q);
  const bool copies =
      !bilinear && in_q.scale == m->tail.out_q.scale && in_q.zero_point == m->tail.out_q.zero_point;
  state.commit(std::move(f), m->chain, copies ? " (bytes moved)" : " (requantized)");
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

// nearest moves elements (float16 too); bilinear computes in float32.
std::vector<TypedShape> upsample(const ShapeContext& c) {
  const bool bilinear = is_bilinear_upsample(c.node().op);
  const char* input = is_vec_upsample(c.node().op) ? "input" : "self";
  const Value& x = c.in(input);
  if (bilinear || x.dtype != DType::Float16) c.dtype(x, input, DType::Float32);
  c.rank(x, input, 4);
  UpsampleArgs a;
  const std::string why = read_upsample_args(c.node(), x.shape, a);
  if (!why.empty()) c.fail(c.input_field(input), why);
  return {{x.dtype, {x.shape[0], x.shape[1], a.out_h, a.out_w}}};
}

EdgeOp vec_op(const char* name, bool bilinear) {
  std::vector<EdgeArg> args = {optional_arg("output_size", Lit::Ints)};
  if (bilinear) args.push_back(required_arg("align_corners", Lit::Bool));
  args.push_back(optional_arg("scale_factors", Lit::Numbers));
  return EdgeOp{name, {"input"}, 1, args, 1, upsample};
}

EdgeOp default_op(const char* name, bool bilinear) {
  std::vector<EdgeArg> args = {required_arg("output_size", Lit::Ints)};
  if (bilinear) args.push_back(required_arg("align_corners", Lit::Bool));
  args.push_back(optional_arg("scales_h", Lit::Number));
  args.push_back(optional_arg("scales_w", Lit::Number));
  return EdgeOp{name, {"self"}, 1, args, 1, upsample};
}

}  // namespace

std::vector<EdgeOp> upsample_edge_ops() {
  const std::vector<std::string> nearest = {"q8ta_upsample_nearest2d"};
  const std::vector<std::string> bilinear = {"q8ta_upsample_bilinear2d"};
  return {
      vec_op("aten.upsample_nearest2d.vec", false)
          .computed_by(reference_upsample_nearest2d)
          .fused_by(fusion::fuse_upsample, nearest),
      default_op("aten.upsample_nearest2d", false)
          .computed_by(reference_upsample_nearest2d)
          .fused_by(fusion::fuse_upsample, nearest),
      vec_op("aten.upsample_bilinear2d.vec", true)
          .computed_by(reference_upsample_bilinear2d)
          .fused_by(fusion::fuse_upsample, bilinear),
      default_op("aten.upsample_bilinear2d", true)
          .computed_by(reference_upsample_bilinear2d)
          .fused_by(fusion::fuse_upsample, bilinear),
  };
}

}  // namespace vkd::compiler
