#include "compiler/ops/ShapeContext.h"

#include <cmath>

namespace vkd::compiler {

void ShapeContext::max_inputs() const {
  if (!op_.tensor_list && node_.inputs.size() > op_.inputs.size()) {
    fail("inputs", "expected at most ", op_.inputs.size(), " tensor inputs, got ",
         node_.inputs.size());
  }
}

size_t ShapeContext::index_of(const char* name) const {
  const int i = op_.input_index(name);
  VKD_CHECK(i >= 0, ErrorCode::Internal, node_.origin, ": the shape rule of ", op_.name,
            " reads input '", name, "', which its signature does not have");
  return static_cast<size_t>(i);
}

std::string ShapeContext::input_field(const char* name) const {
  const size_t i = index_of(name);
  std::string f = std::string("input '") + name + "'";
  if (i < node_.inputs.size() && !node_.inputs[i].empty()) {
    f += " (value '" + node_.inputs[i] + "')";
  }
  return f;
}

const Value& ShapeContext::in(const char* name) const {
  const size_t i = index_of(name);
  if (i >= node_.inputs.size() || node_.inputs[i].empty()) {
    fail(input_field(name), "required input is absent");
  }
  return defined(i, name);
}

const Value* ShapeContext::opt_in(const char* name) const {
  const size_t i = index_of(name);
  if (i >= node_.inputs.size() || node_.inputs[i].empty()) return nullptr;
  return &defined(i, name);
}

std::vector<const Value*> ShapeContext::list(const char* name) const {
  VKD_CHECK(op_.tensor_list && index_of(name) + 1 == op_.inputs.size(), ErrorCode::Internal,
            node_.origin, ": the shape rule of ", op_.name, " reads input '", name,
            "' as a tensor list, which its signature does not make it");
  std::vector<const Value*> values;
  for (size_t i = index_of(name); i < node_.inputs.size(); ++i) values.push_back(&defined(i, name));
  if (values.empty()) fail(input_field(name), "the tensor list is empty");
  return values;
}

const Value& ShapeContext::defined(size_t i, const char* name) const {
  const std::string& v = node_.inputs[i];
  if (!graph_.has_value(v)) fail(input_field(name), "value '", v, "' is not defined");
  return graph_.value(v);
}

void ShapeContext::dtype(const Value& v, const char* name, DType want) const {
  if (v.dtype != want) {
    fail(input_field(name), "expected dtype ", to_string(want), ", got ", to_string(v.dtype),
         " (shape ", shape_str(v.shape), ")");
  }
}

void ShapeContext::rank(const Value& v, const char* name, size_t want) const {
  if (v.shape.size() != want) {
    fail(input_field(name), "expected rank ", want, ", got shape ", shape_str(v.shape));
  }
}

void ShapeContext::shape(const Value& v, const char* name, const std::vector<int64_t>& want,
                         const char* why) const {
  if (v.shape != want) {
    fail(input_field(name), "expected shape ", shape_str(want), " (", why, "), got ",
         shape_str(v.shape));
  }
}

std::optional<double> ShapeContext::opt_f64(const std::string& name) const {
  if (!arg_present(node_, name)) return std::nullopt;
  return arg_float(node_, name);
}

bool ShapeContext::flag_or(const std::string& name, bool def) const {
  return arg_present(node_, name) ? arg_bool(node_, name) : def;
}

std::optional<std::string> ShapeContext::opt_str(const std::string& name) const {
  if (!arg_present(node_, name)) return std::nullopt;
  const ArgValue& v = node_.args.at(name);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  fail(arg_field(name), "must be a string");
}

std::string ShapeContext::str(const std::string& name) const {
  if (node_.args.count(name) == 0) fail(arg_field(name), "missing argument");
  std::optional<std::string> s = opt_str(name);
  if (!s) fail(arg_field(name), "must be a string, got None");
  return *s;
}

void ShapeContext::str_in(const std::string& name, std::initializer_list<const char*> allowed,
                          bool none_ok) const {
  std::optional<std::string> s = none_ok ? opt_str(name) : std::optional<std::string>(str(name));
  if (!s) return;
  std::string list;
  for (const char* a : allowed) {
    if (*s == a) return;
    list += list.empty() ? "" : ", ";
    list += std::string("\"") + a + "\"";
  }
  fail(arg_field(name), "expected ", list, none_ok ? " or None" : "", ", got \"", *s, "\"");
}

int64_t ShapeContext::dim_arg(const std::string& name, size_t rank) const {
  const int64_t dim = i64(name), r = static_cast<int64_t>(rank);
  if (dim < -r || dim >= r) {
    fail(arg_field(name), "dim ", dim, " is out of range for rank ", rank, " (expected ", -r, "..",
         r - 1, ")");
  }
  return dim < 0 ? dim + r : dim;
}

std::vector<int64_t> ShapeContext::pair(const std::string& name, int64_t min) const {
  return checked_pair(name, ints(name), min);
}

std::vector<int64_t> ShapeContext::checked_pair(const std::string& name, std::vector<int64_t> v,
                                                int64_t min) const {
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) fail(arg_field(name), "expected 1 or 2 integers, got ", shape_str(v));
  for (int64_t x : v) {
    if (x < min) fail(arg_field(name), "each value must be >= ", min, ", got ", shape_str(v));
  }
  return v;
}

void ShapeContext::int8_range(const std::string& qmin_name, const std::string& qmax_name,
                              bool none_ok) const {
  std::optional<int64_t> qmin, qmax;
  if (!none_ok || arg_present(node_, qmin_name)) qmin = i64(qmin_name);
  if (!none_ok || arg_present(node_, qmax_name)) qmax = i64(qmax_name);
  if (qmin && (*qmin < -128 || *qmin > 127)) {
    fail(arg_field(qmin_name), "expected a value in [-128, 127] for int8, got ", *qmin);
  }
  if (qmax && (*qmax < -128 || *qmax > 127)) {
    fail(arg_field(qmax_name), "expected a value in [-128, 127] for int8, got ", *qmax);
  }
  if (qmin && qmax && *qmin > *qmax) {
    fail(arg_field(qmin_name), "quant_min ", *qmin, " is greater than quant_max ", *qmax);
  }
}

void ShapeContext::positive_scale(const std::string& name) const {
  const double s = f64(name);
  if (!(std::isfinite(s) && s > 0)) fail(arg_field(name), "expected a finite value > 0, got ", s);
}

void ShapeContext::int8_zero_point(const std::string& name) const {
  const int64_t zp = i64(name);
  if (zp < -128 || zp > 127) fail(arg_field(name), "expected a value in [-128, 127], got ", zp);
}

std::vector<TypedShape> unary_float_shape(const ShapeContext& c) {
  const Value& x = c.in("self");
  c.dtype(x, "self", DType::Float32);
  return {{DType::Float32, x.shape}};
}

}  // namespace vkd::compiler
