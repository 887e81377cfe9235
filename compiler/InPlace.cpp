#include "compiler/InPlace.h"

#include <set>
#include <string>
#include <vector>

#include "compiler/fusion/CopiesBytes.h"
#include "core/PackedInt8Layout.h"

namespace vkd::compiler {
namespace {

QuantInfo output_quant(const Node& n) {
  return {arg_float(n, "output_scale"), arg_int(n, "output_zero_point"), arg_int(n, "quant_min"),
          arg_int(n, "quant_max")};
}

// The dim of `v`'s 4-D view that node arg `dim` (in `v`'s rank) names.
int dim4_of(const Node& n, const Value& v) {
  return static_cast<int>(arg_int(n, "dim")) + 4 - static_cast<int>(v.shape.size());
}

Dims4 dims_of(const Value& v) {
  return TensorSpec{v.shape.empty() ? std::vector<int64_t>{1} : v.shape, v.dtype}.dims4();
}

int64_t size_along(const Value& v, int dim4) {
  const Dims4 d = dims_of(v);
  const int64_t sizes[4] = {d.n, d.c, d.h, d.w};
  return sizes[dim4];
}

// "dim 1 of [1, 116, 8, 8] in 4W4C": what is not a contiguous part.
std::string strided(const Value& whole, int64_t dim) {
  return "dim " + std::to_string(dim) + " of " + shape_str(whole.shape) + " in " +
         std::string(to_string(*whole.layout)) + " is cut into strided parts";
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}

// Why input k of cat `n` is copied, or "" when its producer writes it in place.
std::string copy_reason(const Graph& g, const Node& n, size_t k, int64_t lo,
                        const std::set<std::string>& viewed) {
  const Value& in = g.value(n.inputs[k]);
  const Value& out = g.value(n.outputs[0]);
  const QuantInfo q{std::get<std::vector<double>>(n.args.at("input_scales"))[k],
                    std::get<std::vector<int64_t>>(n.args.at("input_zero_points"))[k]};
  if (!copies_bytes(q, output_quant(n))) return "requantized";
  if (in.is_constant()) return "a constant";
  if (viewed.count(in.name)) return "already sharing other bytes";
  const int dim4 = dim4_of(n, out);
  if (contiguous_slice_offset(*out.layout, dims_of(out), dim4, lo, size_along(in, dim4)) < 0) {
    return strided(out, arg_int(n, "dim"));
  }
  return "";
}

std::string cat_line(const Graph& g, const Node& n, std::set<std::string>& viewed) {
  std::vector<std::string> in_place, copied;
  std::string why;
  const int dim4 = dim4_of(n, g.value(n.outputs[0]));
  int64_t lo = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const std::string reason = copy_reason(g, n, k, lo, viewed);
    lo += size_along(g.value(n.inputs[k]), dim4);
    if (reason.empty()) {
      in_place.push_back(n.inputs[k]);
      viewed.insert(n.inputs[k]);
    } else {
      copied.push_back(n.inputs[k]);
      if (why.empty()) why = reason;
    }
  }
  const std::string head = "q8ta_cat " + quoted_list(n.outputs) + ": ";
  const std::string layout = std::string(to_string(*g.value(n.outputs[0]).layout));
  if (copied.empty()) {
    return head + "free: every input's producer writes it in place (contiguous parts in " + layout +
           ", where the device's buffer alignment allows)";
  }
  if (in_place.empty()) {
    return head + "copies its " + std::to_string(n.inputs.size()) + " input(s) (" + why + ")";
  }
  return head + quoted_list(in_place) + " written in place by their producers, " +
         quoted_list(copied) + " copied (" + why + ")";
}

std::string slice_line(const Graph& g, const Node& n, std::set<std::string>& viewed) {
  const Value& in = g.value(n.inputs[0]);
  const Value& out = g.value(n.outputs[0]);
  const std::string head = "q8ta_slice " + quoted_list(n.outputs) + ": ";
  const QuantInfo q{arg_float(n, "input_scale"), arg_int(n, "input_zero_point")};
  if (!copies_bytes(q, output_quant(n))) return head + "copies (requantized)";
  const int64_t step = arg_int(n, "step");
  if (step != 1) return head + "copies (step " + std::to_string(step) + ")";
  const int dim4 = dim4_of(n, in);
  const int64_t offset = contiguous_slice_offset(*in.layout, dims_of(in), dim4, arg_int(n, "start"),
                                                 size_along(out, dim4));
  if (offset < 0) return head + "copies (" + strided(in, arg_int(n, "dim")) + ")";
  viewed.insert(out.name);
  return head + "free: a view of '" + in.name + "' from byte " + std::to_string(offset) +
         " (where the device's buffer alignment allows)";
}

}  // namespace

PassReport report_in_place(const Graph& g) {
  PassReport report{"in place", {}};
  std::set<std::string> viewed;  // tensors already sharing another's bytes
  for (const Node& n : g.nodes) {
    if (n.op == "q8ta_cat") report.lines.push_back(cat_line(g, n, viewed));
    if (n.op == "q8ta_slice") report.lines.push_back(slice_line(g, n, viewed));
  }
  return report;
}

}  // namespace vkd::compiler
