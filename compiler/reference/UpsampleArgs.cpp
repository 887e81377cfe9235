// How aten.upsample_nearest2d / aten.upsample_bilinear2d nodes read their arguments
// (UpsampleArgs.h), shared by the shape rules, references and fusion pattern of
// compiler/ops/Upsample.cpp.
#include "compiler/reference/UpsampleArgs.h"

#include <optional>

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

}  // namespace vkd::compiler
