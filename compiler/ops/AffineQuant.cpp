// torchao quantize_affine, dequantize_affine and choose_qparams_affine (block-wise).
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/LowerAffine.h"
#include "compiler/fusion/Lowering.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/ReferenceContext.h"
#include "core/Error.h"

// CPU reference of torchao's block-wise affine quantization ops: quantize_affine,
// dequantize_affine, choose_qparams_affine (semantics above each function). Built with
// -ffp-contract=off (compiler/CMakeLists.txt), so each float32 operation is rounded on its own.
//
// torchao.quantize_affine / dequantize_affine / choose_qparams_affine, zero_point_domain INT:
//   block_size has one entry per input dim (-1 = the whole dim; [-1] alone = per tensor); each
//   dim must be divisible by its block size; the scale (and zero point) tensors hold one value
//   per block, blocks in row-major order of the block grid (their shape is not checked beyond
//   their element count, as torchao views them).
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

// What these references do not implement, read from the arguments alone: a zero_point_domain
// other than INT, preserve_zero = false. The descriptors' refused_on_host_when (so `vkd compile
// --partition` refuses such a host step) and each reference's first check.
std::optional<std::string> affine_host_refusal(const Node& node) {
  const auto dom = node.args.find("zero_point_domain");
  if (dom != node.args.end()) {
    if (const auto* s = std::get_if<std::string>(&dom->second)) {
      const std::string name = s->rfind("ZeroPointDomain.", 0) == 0 ? s->substr(16) : *s;
      if (name != "INT") return "zero_point_domain '" + name + "' (only INT is supported)";
    }
  }
  const auto keep = node.args.find("preserve_zero");
  if (keep != node.args.end()) {
    const auto* b = std::get_if<bool>(&keep->second);
    const auto* i = std::get_if<int64_t>(&keep->second);
    if ((b != nullptr && !*b) || (i != nullptr && *i == 0)) return "preserve_zero = false";
  }
  return std::nullopt;
}

namespace {

// torchao's _get_reduction_params, as a block grid: the extent of a block along each dim, the
// number of blocks along it, and the shape torchao gives the chosen qparams (the non-reduced
// entries of its shape_for_reduction).
struct BlockGrid {
  std::vector<int64_t> extent, count, qparam_shape;
  int64_t blocks = 1;
};

BlockGrid block_grid(const ReferenceContext& c, const std::vector<int64_t>& shape) {
  std::vector<int64_t> bs = c.ints_arg("block_size");
  if (bs.size() == 1 && bs[0] == -1 && shape.size() != 1) bs.assign(shape.size(), -1);
  c.require(bs.size() == shape.size(), detail::concat("block_size ", shape_str(bs),
                                                      " does not "
                                                      "match the input's rank ",
                                                      shape.size()));
  BlockGrid g;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t b = bs[d], n = shape[d];
    c.require(b == -1 || b > 0,
              detail::concat("block_size ", shape_str(bs), " has an invalid entry"));
    if (b != n && b > 1) {
      c.require(n % b == 0, detail::concat("input size ", n, " at dim ", d,
                                           " is not divisible by block size ", b));
      g.extent.push_back(b);
      g.count.push_back(n / b);
      g.qparam_shape.push_back(n / b);
    } else if (b == 1) {
      g.extent.push_back(1);
      g.count.push_back(n);
      g.qparam_shape.push_back(n);
    } else {  // whole dim (b == n or b == -1): reduced away
      g.extent.push_back(std::max<int64_t>(n, 1));
      g.count.push_back(n == 0 ? 0 : 1);
    }
    g.blocks *= g.count.back();
  }
  return g;
}

// Block index (row-major over the grid) of every element of `shape`, in C order.
std::vector<int64_t> block_of_elements(const std::vector<int64_t>& shape, const BlockGrid& g) {
  const size_t rank = shape.size();
  std::vector<int64_t> gstride(rank, 1);
  for (size_t d = rank; d-- > 1;) gstride[d - 1] = gstride[d] * g.count[d];
  std::vector<int64_t> out(static_cast<size_t>(element_count(shape)));
  std::vector<int64_t> idx(rank, 0);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t blk = 0;
    for (size_t d = 0; d < rank; ++d) blk += (idx[d] / g.extent[d]) * gstride[d];
    out[i] = blk;
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

void check_implemented(const ReferenceContext& c) {
  if (const auto why = affine_host_refusal(c.node())) c.fail(ErrorCode::Unsupported, *why);
}

// A zero point as a float (torchao adds the zero-point tensor to the rounded float32 value).
double zp_value(const HostTensor& zp, int64_t i) {
  return zp.dtype == DType::Float32 ? static_cast<double>(get_f32(zp, i))
                                    : static_cast<double>(get_int(zp, i));
}

}  // namespace

// quantize_affine:   q = clamp(round_half_even(float(x * float(1 / s))) + zp, qmin, qmax).
//   torchao's source (quant_primitives.py, _quantize_affine_no_dtype_cast) computes
//   `torch.round(input * (1.0 / scale)) + zero_point`, i.e. it MULTIPLIES by the float32
//   reciprocal of the float32 scale tensor (its docstrings say "float_val / scale"). This is
//   what is implemented, and it equals the project's quantize rounding above.
std::vector<HostTensor> reference_quantize_affine(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "input");
  const HostTensor& scale = c.input(1, "scale");
  const HostTensor* zp = c.optional_input(2, "zero_point");
  c.expect_dtype(x, DType::Float32, "input");
  c.expect_dtype(scale, DType::Float32, "scale");
  check_implemented(c);
  const DType out_dtype = c.dtype_arg("output_dtype");
  c.require(out_dtype != DType::Float32, "output_dtype must be an integer type");
  const int64_t qmin = c.int_arg("quant_min", dtype_min(out_dtype));
  const int64_t qmax = c.int_arg("quant_max", dtype_max(out_dtype));
  check_qrange(c, qmin, qmax, out_dtype);
  const BlockGrid g = block_grid(c, x.shape);
  c.require(scale.numel() == g.blocks,
            detail::concat("scale has ", scale.numel(), " elements, block_size gives ", g.blocks,
                           " blocks"));
  if (zp && zp->numel() == 0) zp = nullptr;  // torchao treats an empty zero point as none
  if (zp) {
    c.require(zp->numel() == g.blocks,
              detail::concat("zero_point has ", zp->numel(), " elements, block_size gives ",
                             g.blocks, " blocks"));
  }
  const std::vector<int64_t> blk = block_of_elements(x.shape, g);
  HostTensor out = make_tensor(out_dtype, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t b = blk[static_cast<size_t>(i)];
    const float inv = 1.0f / get_f32(scale, b);  // torch: `1.0 / scale`, a float32 reciprocal
    set_int(out, i, quantize_one(get_f32(x, i), inv, zp ? zp_value(*zp, b) : 0.0, qmin, qmax));
  }
  return {out};
}

// dequantize_affine: x = float(int32(q) - int32(zp)) * s.
std::vector<HostTensor> reference_dequantize_affine(const ReferenceContext& c) {
  const HostTensor& q = c.input(0, "input");
  const HostTensor& scale = c.input(1, "scale");
  const HostTensor* zp = c.optional_input(2, "zero_point");
  c.require(q.dtype == DType::Int8 || q.dtype == DType::Int32, "input must be int8 or int32");
  c.expect_dtype(scale, DType::Float32, "scale");
  check_implemented(c);
  if (c.present("input_dtype")) {
    c.require(c.dtype_arg("input_dtype") == q.dtype, "input_dtype differs from the input's dtype");
  }
  if (c.present("output_dtype")) {
    c.require(c.dtype_arg("output_dtype") == DType::Float32, "output_dtype must be float32");
  }
  const BlockGrid g = block_grid(c, q.shape);
  c.require(scale.numel() == g.blocks,
            detail::concat("scale has ", scale.numel(), " elements, block_size gives ", g.blocks,
                           " blocks"));
  if (zp && zp->numel() == 0) zp = nullptr;
  if (zp) {
    c.require(zp->numel() == g.blocks,
              detail::concat("zero_point has ", zp->numel(), " elements, block_size gives ",
                             g.blocks, " blocks"));
  }
  const std::vector<int64_t> blk = block_of_elements(q.shape, g);
  HostTensor out = make_tensor(DType::Float32, q.shape);
  for (int64_t i = 0; i < q.numel(); ++i) {
    const int64_t b = blk[static_cast<size_t>(i)];
    const int32_t diff =
        static_cast<int32_t>(get_int(q, i)) - static_cast<int32_t>(zp ? zp_int(*zp, b) : 0);
    set_f32(out, i, static_cast<float>(diff) * get_f32(scale, b));
  }
  return {out};
}

// choose_qparams_affine (preserve_zero = true), per block:
//   min_neg = min(min(x), 0), max_pos = max(max(x), 0)    (float32)
//   SYMMETRIC: scale = max(-min_neg, max_pos) / float((qmax - qmin) / 2)
//              zero_point = int((qmax + qmin + 1) / 2)  (Python true division, truncated:
//              0 for int8 [-128, 127] and [-127, 127], 128 for [0, 255])
//              scale = max(scale, eps)
//   SYMMETRIC_NO_CLIPPING_ERR: smin = min_neg / float(qmin), smax = max_pos / float(qmax),
//              scale = smin > smax ? smin : smax, then as SYMMETRIC.
//   ASYMMETRIC: scale = (max_pos - min_neg) / float(qmax - qmin); scale = max(scale, eps);
//              zero_point = clamp(qmin - round_half_even(min_neg / scale), qmin, qmax)
//   eps absent/None: float32 epsilon (2^-23). The eps clamp comes BEFORE the asymmetric zero
//   point, as in current torchao; older torchao releases clamped after it, which made the
//   zero point of an all-zero block 0/0 = NaN. These follow torchao's definitions as best
//   known from its source; the min/max reductions are exact, every division is one float32
//   division. Outputs: scale (float32) and zero_point (the declared output's dtype: int32,
//   int8 or float32; an int64 zero_point_dtype is narrowed to int32), shaped as torchao
//   returns them (reduced dims dropped: [2, 8] with block_size [1, 8] gives [2]) unless the
//   graph declares another shape with the same element count (e.g. [2, 1]), which is kept.
std::vector<HostTensor> reference_choose_qparams_affine(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "input");
  c.expect_dtype(x, DType::Float32, "input");
  c.require(c.node().outputs.size() == 2, "needs two outputs (scale, zero_point)");
  check_implemented(c);
  std::string mapping = c.string_arg("mapping_type");
  if (mapping.rfind("MappingType.", 0) == 0) mapping = mapping.substr(12);
  enum class Mapping { Symmetric, SymmetricNoClip, Asymmetric } m;
  if (mapping == "SYMMETRIC") {
    m = Mapping::Symmetric;
  } else if (mapping == "SYMMETRIC_NO_CLIPPING_ERR") {
    m = Mapping::SymmetricNoClip;
  } else if (mapping == "ASYMMETRIC") {
    m = Mapping::Asymmetric;
  } else {
    c.fail(ErrorCode::Unsupported, "mapping_type '" + mapping + "'");
  }
  const DType target = c.dtype_arg("target_dtype");
  c.require(target != DType::Float32, "target_dtype must be an integer type");
  const int64_t qmin = c.int_arg("quant_min", dtype_min(target));
  const int64_t qmax = c.int_arg("quant_max", dtype_max(target));
  check_qrange(c, qmin, qmax, target);
  const float eps = c.present("eps") ? static_cast<float>(c.float_arg("eps"))
                                     : std::numeric_limits<float>::epsilon();
  if (c.present("scale_dtype")) {
    c.require(c.dtype_arg("scale_dtype") == DType::Float32, "scale_dtype must be float32");
  }
  // The zero point takes the declared output's dtype (the graph IR narrows an int64
  // zero_point_dtype to int32); undeclared: zero_point_dtype, int64 read as int32.
  DType zp_dtype = DType::Int32;
  if (auto d = c.declared_dtype(1)) {
    zp_dtype = *d;
  } else if (c.present("zero_point_dtype")) {
    std::string name = c.string_arg("zero_point_dtype");
    if (name.rfind("torch.", 0) == 0) name = name.substr(6);
    zp_dtype = name == "int64" ? DType::Int32 : c.dtype_arg("zero_point_dtype");
  }
  c.require(zp_dtype == DType::Int32 || zp_dtype == DType::Int8 || zp_dtype == DType::Float32,
            "unsupported zero point dtype");

  const BlockGrid g = block_grid(c, x.shape);
  const std::vector<int64_t> blk = block_of_elements(x.shape, g);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> mins(static_cast<size_t>(g.blocks), inf),
      maxs(static_cast<size_t>(g.blocks), -inf);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t b = static_cast<size_t>(blk[static_cast<size_t>(i)]);
    const float v = get_f32(x, i);
    // torch.amin / torch.amax: a NaN anywhere in the block makes the result NaN.
    if (std::isnan(mins[b])) continue;
    if (std::isnan(v)) {
      mins[b] = maxs[b] = v;
      continue;
    }
    mins[b] = std::min(mins[b], v);
    maxs[b] = std::max(maxs[b], v);
  }
  // torchao returns the qparams with the reduced dims dropped (g.qparam_shape); a graph may
  // declare them with those dims kept as 1 (input shape / block size). Both hold the blocks in
  // row-major grid order, so a declared shape with the same element count is taken as is.
  const auto qshape = [&](size_t k) {
    auto d = c.declared_shape(k);
    return d && element_count(*d) == g.blocks ? *d : g.qparam_shape;
  };
  HostTensor scale_out = make_tensor(DType::Float32, qshape(0));
  HostTensor zp_out = make_tensor(zp_dtype, qshape(1));
  for (int64_t b = 0; b < g.blocks; ++b) {
    // torch.min / torch.max with zeros: NaN propagates.
    const float mn = mins[static_cast<size_t>(b)], mx = maxs[static_cast<size_t>(b)];
    const float min_neg = std::isnan(mn) ? mn : std::min(mn, 0.0f);
    const float max_pos = std::isnan(mx) ? mx : std::max(mx, 0.0f);
    float scale;
    double zero_point;
    if (m == Mapping::Asymmetric) {
      const float range = max_pos - min_neg;
      scale = range / static_cast<float>(qmax - qmin);
      scale = std::isnan(scale) ? scale : std::max(scale, eps);
      const float ratio = min_neg / scale;
      const float rounded = std::nearbyint(ratio);
      const float zpf = static_cast<float>(qmin) - rounded;
      zero_point = std::isnan(zpf)
                       ? zpf
                       : std::fmin(std::fmax(static_cast<double>(zpf), double(qmin)), double(qmax));
    } else {
      if (m == Mapping::Symmetric) {
        const float neg = -min_neg;
        const float amax =
            (std::isnan(neg) || std::isnan(max_pos)) ? neg + max_pos : std::max(neg, max_pos);
        scale = amax / static_cast<float>(static_cast<double>(qmax - qmin) / 2.0);
      } else {
        const float smin = min_neg / static_cast<float>(qmin);
        const float smax = max_pos / static_cast<float>(qmax);
        scale = smin > smax ? smin : smax;
      }
      // int((quant_max + quant_min + 1) / 2): Python true division, truncated toward zero.
      zero_point = std::trunc(static_cast<double>(qmax + qmin + 1) / 2.0);
      scale = std::isnan(scale) ? scale : std::max(scale, eps);
    }
    set_f32(scale_out, b, scale);
    if (zp_dtype == DType::Float32) {
      set_f32(zp_out, b, static_cast<float>(zero_point));
    } else {
      set_int(zp_out, b, to_int_saturating(zero_point, dtype_min(zp_dtype), dtype_max(zp_dtype)));
    }
  }
  return {scale_out, zp_out};
}

}  // namespace vkd::compiler

// The direct lowerings of what fusion leaves (Patterns.h's DirectLowering).
namespace vkd::compiler::fusion {

// What the backend ops cannot express is an error naming the node, except under runnable_only,
// where the node stays an edge op for the host.
std::string lower_affine(FuseState& state, Node& node, int where) {
  const std::string at = origin_of(node, where);
  const std::string backend = affine_backend_op(node.op);
  const std::string why =
      state.may_target(backend) ? lower_affine_node(state.graph, node) : "it has no kernel yet";
  if (!why.empty()) {
    VKD_CHECK(state.options.runnable_only, ErrorCode::Unsupported, at, ": cannot lower to ",
              backend, ": ", why);
    state.note("not lowered: " + at + " as " + backend + ": " + why);
    return "";
  }
  if (node.origin.empty()) node.origin = at;
  for (const auto* list : {&node.inputs, &node.outputs}) {
    for (const auto& v : *list) {
      if (state.graph.value(v).dtype == DType::Int8) state.affine_int8.insert(v);
    }
  }
  return backend;
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

std::optional<std::string> affine_host_refusal(const Node& node);

namespace {

// block_size checks shared by the torchao affine ops; returns shape / block_size.
std::vector<int64_t> affine_blocks(const ShapeContext& c, const Value& x) {
  const std::vector<int64_t> block = c.ints("block_size");
  if (block.size() != x.shape.size()) {
    c.fail(c.arg_field("block_size"), "expected ", x.shape.size(),
           " entries (the input rank, input shape ", shape_str(x.shape), "), got ",
           shape_str(block));
  }
  std::vector<int64_t> out(block.size());
  for (size_t i = 0; i < block.size(); ++i) {
    if (block[i] < 1 || x.shape[i] % block[i] != 0) {
      c.fail(c.arg_field("block_size"), shape_str(block), " does not divide input shape ",
             shape_str(x.shape), " (dim ", i, ")");
    }
    out[i] = x.shape[i] / block[i];
  }
  return out;
}

// A scale or zero point of an affine op: shape / block_size, or that with its size-1 dims
// dropped (torchao squeezes them).
void affine_param(const ShapeContext& c, const Value& v, const char* name, DType dtype,
                  const std::vector<int64_t>& blocks) {
  c.dtype(v, name, dtype);
  if (v.shape == blocks) return;
  auto squeeze = [](const std::vector<int64_t>& s) {
    std::vector<int64_t> out;
    for (int64_t d : s) {
      if (d != 1) out.push_back(d);
    }
    return out;
  };
  if (squeeze(v.shape) != squeeze(blocks)) {
    c.fail(c.input_field(name), "expected shape ", shape_str(blocks),
           " (input shape / block_size), got ", shape_str(v.shape));
  }
}

std::vector<TypedShape> quantize_affine(const ShapeContext& c) {
  const Value& x = c.in("input");
  c.dtype(x, "input", DType::Float32);
  const std::vector<int64_t> blocks = affine_blocks(c, x);
  affine_param(c, c.in("scale"), "scale", DType::Float32, blocks);
  if (const Value* zp = c.opt_in("zero_point")) {
    affine_param(c, *zp, "zero_point", DType::Int32, blocks);
  }
  c.str_in("output_dtype", {"int8"}, false);
  c.int8_range("quant_min", "quant_max", true);
  return {{DType::Int8, x.shape}};
}

std::vector<TypedShape> dequantize_affine(const ShapeContext& c) {
  const Value& x = c.in("input");
  c.str_in("input_dtype", {"int8"}, false);
  c.dtype(x, "input", DType::Int8);
  const std::vector<int64_t> blocks = affine_blocks(c, x);
  affine_param(c, c.in("scale"), "scale", DType::Float32, blocks);
  if (const Value* zp = c.opt_in("zero_point")) {
    affine_param(c, *zp, "zero_point", DType::Int32, blocks);
  }
  c.int8_range("quant_min", "quant_max", true);
  c.str_in("output_dtype", {"float32"}, true);
  return {{DType::Float32, x.shape}};
}

std::vector<TypedShape> choose_qparams_affine(const ShapeContext& c) {
  const Value& x = c.in("input");
  c.dtype(x, "input", DType::Float32);
  c.str_in("mapping_type", {"SYMMETRIC", "ASYMMETRIC", "SYMMETRIC_NO_CLIPPING_ERR"}, false);
  const std::vector<int64_t> blocks = affine_blocks(c, x);
  c.str_in("target_dtype", {"int8"}, false);
  c.int8_range("quant_min", "quant_max", true);
  if (std::optional<double> eps = c.opt_f64("eps")) {
    if (!(std::isfinite(*eps) && *eps >= 0)) {
      c.fail(c.arg_field("eps"), "expected a finite value >= 0, got ", *eps);
    }
  }
  c.str_in("scale_dtype", {"float32"}, true);
  // The zero point is stored as int32 whatever integer type was asked for.
  c.str_in("zero_point_dtype", {"int32", "int64", "int8"}, true);
  // keepdim = False (torchao >= 0.18's argument; older releases always reduce): the dims each
  // block covers whole are dropped, as torchao's reduction drops them.
  if (c.node().args.count("keepdim") != 0 && !c.flag_or("keepdim", true)) {
    std::vector<int64_t> kept;
    const std::vector<int64_t> block = c.ints("block_size");
    for (size_t d = 0; d < blocks.size(); ++d) {
      if (block[d] == 1 || block[d] != x.shape[d]) kept.push_back(blocks[d]);
    }
    return {{DType::Float32, kept}, {DType::Int32, kept}};
  }
  return {{DType::Float32, blocks}, {DType::Int32, blocks}};
}

}  // namespace

std::vector<EdgeOp> affine_quant_edge_ops() {
  return {
      EdgeOp{"torchao.quantize_affine",
             {"input", "scale", "zero_point"},
             2,
             {required_arg("block_size", Lit::Ints), required_arg("output_dtype", Lit::String),
              required_arg("quant_min", Lit::Int, true), required_arg("quant_max", Lit::Int, true),
              optional_arg("zero_point_domain", Lit::String)},
             1,
             quantize_affine}
          .computed_by(reference_quantize_affine)
          .refused_on_host_when(affine_host_refusal)
          .lowered_by(fusion::lower_affine, {"q8ta_quantize_affine"}),
      EdgeOp{"torchao.dequantize_affine",
             {"input", "scale", "zero_point"},
             2,
             {required_arg("block_size", Lit::Ints), required_arg("input_dtype", Lit::String),
              required_arg("quant_min", Lit::Int, true), required_arg("quant_max", Lit::Int, true),
              optional_arg("output_dtype", Lit::String),
              optional_arg("zero_point_domain", Lit::String)},
             1,
             dequantize_affine}
          .computed_by(reference_dequantize_affine)
          .refused_on_host_when(affine_host_refusal)
          .lowered_by(fusion::lower_affine, {"q8ta_dequantize_affine"}),
      EdgeOp{
          "torchao.choose_qparams_affine",
          {"input"},
          1,
          {required_arg("mapping_type", Lit::String), required_arg("block_size", Lit::Ints),
           required_arg("target_dtype", Lit::String), required_arg("quant_min", Lit::Int, true),
           required_arg("quant_max", Lit::Int, true), required_arg("eps", Lit::Number, true),
           optional_arg("scale_dtype", Lit::String), optional_arg("zero_point_dtype", Lit::String),
           optional_arg("preserve_zero", Lit::Bool, ArgValue(true), false),
           optional_arg("zero_point_domain", Lit::String), optional_arg("keepdim", Lit::Bool)},
          2,
          choose_qparams_affine}
          .computed_by(reference_choose_qparams_affine)
          .refused_on_host_when(affine_host_refusal)
          .lowered_by(fusion::lower_affine, {"choose_qparams_affine"}),
  };
}

}  // namespace vkd::compiler
