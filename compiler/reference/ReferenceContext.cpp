// The per-node context of the reference ops and their shared element helpers
// (ReferenceContext.h). Built with -ffp-contract=off, like every file of compiler/reference/.
#include "compiler/reference/ReferenceContext.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace vkd::compiler::reference {

size_t elem_bytes(DType dtype) {
  switch (dtype) {
    case DType::Float32:
    case DType::Int32: return 4;
    case DType::Float16: return 2;
    case DType::Int8: return 1;
    default: return 0;
  }
}

HostTensor make_tensor(DType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.assign(static_cast<size_t>(element_count(t.shape)) * elem_bytes(dtype), 0);
  return t;
}

int64_t to_int_saturating(double v, int64_t lo, int64_t hi) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(lo)) return lo;
  if (v >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(v);
}

void check_shape_valid(const std::vector<int64_t>& shape, const std::string& what) {
  for (int64_t d : shape) {
    VKD_CHECK(d >= 0, ErrorCode::InvalidArgument, what, ": negative dimension in shape ",
              shape_str(shape));
  }
}

int64_t dtype_min(DType d) { return d == DType::Int8 ? -128 : std::numeric_limits<int32_t>::min(); }
int64_t dtype_max(DType d) { return d == DType::Int8 ? 127 : std::numeric_limits<int32_t>::max(); }

void set_int(HostTensor& t, int64_t i, int64_t v) {
  if (t.dtype == DType::Int8) {
    set_i8(t, i, static_cast<int8_t>(v));
  } else {
    set_i32(t, i, static_cast<int32_t>(v));
  }
}

}  // namespace vkd::compiler::reference

namespace vkd::compiler {

ReferenceContext::ReferenceContext(const Graph& g, const Node& node, size_t index,
                                   const std::map<std::string, HostTensor>& values)
    : g_(g), node_(node), values_(values) {
  label_ = node.origin.empty() ? detail::concat("node ", index, " (", node.op, ")") : node.origin;
}

const HostTensor& ReferenceContext::input(size_t i, const char* what) const {
  VKD_CHECK(has_input(i), ErrorCode::InvalidArgument, label_, ": missing tensor input ", i, " (",
            what, ")");
  auto it = values_.find(node_.inputs[i]);
  VKD_CHECK(it != values_.end(), ErrorCode::InvalidArgument, label_, ": input '", node_.inputs[i],
            "' (", what, ") is not computed before this node");
  return it->second;
}

std::optional<DType> ReferenceContext::declared_dtype(size_t i) const {
  if (i < node_.outputs.size() && g_.has_value(node_.outputs[i])) {
    return g_.value(node_.outputs[i]).dtype;
  }
  return std::nullopt;
}

std::optional<std::vector<int64_t>> ReferenceContext::declared_shape(size_t i) const {
  if (i < node_.outputs.size() && g_.has_value(node_.outputs[i])) {
    return g_.value(node_.outputs[i]).shape;
  }
  return std::nullopt;
}

void ReferenceContext::expect_dtype(const HostTensor& t, DType dtype, const char* what) const {
  if (t.dtype != dtype) {
    fail(ErrorCode::Unsupported, detail::concat(what, " has dtype ", to_string(t.dtype), ", only ",
                                                to_string(dtype), " is supported"));
  }
}

bool ReferenceContext::bool_arg(const std::string& name, bool def) const {
  if (!present(name)) return def;
  const ArgValue& v = node_.args.at(name);
  if (const auto* i = std::get_if<int64_t>(&v)) return *i != 0;
  return arg_bool(node_, name);
}

std::string ReferenceContext::string_arg(const std::string& name) const {
  auto it = node_.args.find(name);
  require(it != node_.args.end(), detail::concat("missing argument '", name, "'"));
  const auto* s = std::get_if<std::string>(&it->second);
  require(s != nullptr, detail::concat("argument '", name, "' must be a string"));
  return *s;
}

DType ReferenceContext::dtype_arg(const std::string& name) const {
  if (!present(name)) {
    auto d = declared_dtype(0);
    require(d.has_value(), detail::concat("missing argument '", name, "'"));
    return *d;
  }
  std::string s = string_arg(name);
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  auto d = parse_dtype(s);
  if (!d || reference::elem_bytes(*d) == 0 || *d == DType::Float16) {
    fail(ErrorCode::Unsupported, detail::concat("argument '", name, "' = '", s,
                                                "': only float32, int8 and int32 are supported"));
  }
  return *d;
}

}  // namespace vkd::compiler

namespace vkd::compiler::reference {

int64_t norm_dim(const ReferenceContext& c, int64_t dim, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  const int64_t d = dim < 0 ? dim + r : dim;
  c.require(d >= 0 && d < std::max<int64_t>(r, 1),
            detail::concat("dim ", dim, " is out of range for rank ", rank));
  return d;
}

std::pair<int64_t, int64_t> pair_arg(const ReferenceContext& c, const std::vector<int64_t>& v,
                                     const char* name) {
  c.require(v.size() == 1 || v.size() == 2,
            detail::concat("argument '", name, "' must have 1 or 2 entries"));
  return v.size() == 1 ? std::make_pair(v[0], v[0]) : std::make_pair(v[0], v[1]);
}

void strided_loop(const std::vector<int64_t>& shape,
                  const std::vector<std::vector<int64_t>>& strides,
                  const std::function<void(int64_t, const std::vector<int64_t>&)>& f) {
  const size_t rank = shape.size();
  const int64_t n = element_count(shape);
  std::vector<int64_t> idx(rank, 0), off(strides.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < shape[d]) {
        for (size_t k = 0; k < strides.size(); ++k) off[k] += strides[k][d];
        break;
      }
      for (size_t k = 0; k < strides.size(); ++k) off[k] -= strides[k][d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

void check_qrange(const ReferenceContext& c, int64_t qmin, int64_t qmax, DType dtype) {
  c.require(qmin <= qmax, detail::concat("quant_min ", qmin, " > quant_max ", qmax));
  c.require(qmin >= dtype_min(dtype) && qmax <= dtype_max(dtype),
            detail::concat("quant range [", qmin, ", ", qmax, "] exceeds ", to_string(dtype)));
}

int64_t quantize_one(float x, float inv_scale, double zero_point, int64_t qmin, int64_t qmax) {
  const float product = x * inv_scale;
  double q = std::nearbyint(static_cast<double>(product)) + zero_point;
  q = std::fmin(std::fmax(q, static_cast<double>(qmin)), static_cast<double>(qmax));
  return static_cast<int64_t>(q);  // NaN became qmin in fmax
}

std::vector<HostTensor> unary_float(const ReferenceContext& c,
                                    const std::function<float(float)>& f) {
  const HostTensor& x = c.input(0, "self");
  c.expect_dtype(x, DType::Float32, "self");
  HostTensor out = make_tensor(DType::Float32, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) set_f32(out, i, f(get_f32(x, i)));
  return {out};
}

float clamp_float(float x, std::optional<float> lo, std::optional<float> hi) {
  if (std::isnan(x)) return x;
  if (lo && x < *lo) x = *lo;
  if (hi && x > *hi) x = *hi;
  return x;
}

int64_t zp_int(const HostTensor& zp, int64_t i) {
  if (zp.dtype == DType::Float32) {
    return to_int_saturating(std::trunc(get_f32(zp, i)), std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max());
  }
  return get_int(zp, i);
}

}  // namespace vkd::compiler::reference
