#include "compiler/fusion/LowerAffine.h"

#include <algorithm>
#include <limits>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Match.h"

namespace vkd::compiler {
namespace {

using fusion::kChooseQparamsAffine;
using fusion::kDequantizeAffine;
using fusion::kQuantizeAffine;
using fusion::quoted;

// A string arg without torchao's enum prefix ("MappingType.ASYMMETRIC" -> "ASYMMETRIC"), or ""
// when absent or None.
std::string enum_arg(const Node& n, const std::string& name, const std::string& prefix) {
  if (!arg_present(n, name)) return "";
  const auto* s = std::get_if<std::string>(&n.args.at(name));
  if (s == nullptr) return "?";
  return s->rfind(prefix, 0) == 0 ? s->substr(prefix.size()) : *s;
}

// quant_min / quant_max, None meaning the int8 range (the only target dtype the parser accepts).
int64_t range_arg(const Node& n, const std::string& name, int64_t fallback) {
  return arg_present(n, name) ? arg_int(n, name) : fallback;
}

// The number of blocks of `shape` for `block_size` (shape inference has checked that every entry
// divides its dim).
int64_t block_count(const std::vector<int64_t>& shape, const std::vector<int64_t>& block_size) {
  int64_t blocks = 1;
  for (size_t d = 0; d < shape.size() && d < block_size.size(); ++d) {
    if (block_size[d] > 0) blocks *= shape[d] / block_size[d];
  }
  return blocks;
}

// An int32 constant of `blocks` zeros (a zero point made here for an earlier node, or the same
// numbers given in the graph).
bool is_int32_zeros(const Value& v, int64_t blocks) {
  if (!v.is_constant() || v.dtype != DType::Int32 || element_count(v.shape) != blocks) return false;
  return std::all_of(v.data->begin(), v.data->end(), [](uint8_t b) { return b == 0; });
}

// What every torchao affine op may ask for that the backend ops do not implement; "" if nothing.
std::string unsupported_domain(const Node& n) {
  const std::string domain = enum_arg(n, "zero_point_domain", "ZeroPointDomain.");
  if (!domain.empty() && domain != "INT") {
    return "zero_point_domain " + domain + " is not supported (only INT: integer zero points)";
  }
  return "";
}

// choose_qparams_affine (input) -> (scale, zero_point): only mapping type and eps need reading.
std::string lower_choose_qparams(Node& n, const std::string& backend,
                                 const std::vector<int64_t>& block_size, int64_t qmin,
                                 int64_t qmax) {
  if (arg_present(n, "preserve_zero") && !arg_bool(n, "preserve_zero")) {
    return "preserve_zero = false is not supported (zero must stay exactly representable)";
  }
  const std::string mapping = enum_arg(n, "mapping_type", "MappingType.");
  int64_t m = -1;
  if (mapping == "SYMMETRIC") m = 0;
  if (mapping == "SYMMETRIC_NO_CLIPPING_ERR") m = 1;
  if (mapping == "ASYMMETRIC") m = 2;
  if (m < 0) return "mapping_type " + quoted(mapping) + " is not supported";
  // torchao's default eps; the kernel divides by max(scale, eps), so it must be > 0 as float32.
  const double eps =
      arg_present(n, "eps") ? arg_float(n, "eps") : double{std::numeric_limits<float>::epsilon()};
  if (!(static_cast<float>(eps) > 0.0f)) {
    return "eps " + std::to_string(eps) +
           " is not supported (the backend needs eps > 0 in float32)";
  }
  n.op = backend;
  n.inputs.resize(1);
  n.args = {{"mapping_type", m},
            {"block_size", block_size},
            {"quant_min", qmin},
            {"quant_max", qmax},
            {"eps", eps}};
  return "";
}

}  // namespace

std::string affine_backend_op(const std::string& op) {
  if (op == kQuantizeAffine) return "q8ta_quantize_affine";
  if (op == kDequantizeAffine) return "q8ta_dequantize_affine";
  if (op == kChooseQparamsAffine) return "choose_qparams_affine";
  return "";
}

std::string lower_affine_node(Graph& g, Node& n) {
  const std::string backend = affine_backend_op(n.op);
  if (backend.empty() || n.inputs.empty() || n.inputs[0].empty()) return "not an affine op";
  std::string why = unsupported_domain(n);
  if (!why.empty()) return why;
  const Value& in = g.value(n.inputs[0]);
  const std::vector<int64_t> block_size = arg_ints(n, "block_size");
  const int64_t qmin = range_arg(n, "quant_min", -128);
  const int64_t qmax = range_arg(n, "quant_max", 127);

  if (n.op == kChooseQparamsAffine) {
    return lower_choose_qparams(n, backend, block_size, qmin, qmax);
  }

  // quantize / dequantize: (input, scale, zero_point)
  if (n.op == kDequantizeAffine && in.is_constant()) {
    return "input " + quoted(in.name) +
           " is an int8 constant (the backend op dequantizes int8x4 "
           "activations only)";
  }
  const std::string scale = n.inputs.size() > 1 ? n.inputs[1] : "";
  if (scale.empty()) return "no scale";
  std::string zero_point = n.inputs.size() > 2 ? n.inputs[2] : "";
  if (!zero_point.empty() && element_count(g.value(zero_point).shape) == 0) zero_point.clear();
  if (zero_point.empty()) {
    // torchao treats an absent (or empty) zero point as 0 everywhere; the backend ops always
    // read one int32 per block, laid out like the scale. One zeros constant per scale: a
    // quantize / dequantize pair sharing a scale shares it too.
    const int64_t blocks = block_count(in.shape, block_size);
    const std::string name = scale + "_zero_point";
    if (g.has_value(name) && is_int32_zeros(g.value(name), blocks)) {
      zero_point = name;
    } else {
      Value z;
      z.name = g.unique_name(name);
      z.dtype = DType::Int32;
      z.shape = g.value(scale).shape;
      if (element_count(z.shape) != blocks) z.shape = {blocks};
      z.data = std::vector<uint8_t>(static_cast<size_t>(blocks) * sizeof(int32_t), 0);
      zero_point = g.add_value(std::move(z)).name;
    }
  }
  n.op = backend;
  n.inputs = {n.inputs[0], scale, zero_point};
  n.args = {{"block_size", block_size}, {"quant_min", qmin}, {"quant_max", qmax}};
  return "";
}

}  // namespace vkd::compiler
