#include "compiler/ShapeInference.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "runtime/core/Error.h"

namespace vkd::compiler {

namespace {

struct Typed {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
};

std::string typed_str(DType dtype, const std::vector<int64_t>& shape) {
  return std::string(to_string(dtype)) + " " + shape_str(shape);
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Floor division (rounds toward negative infinity), as PyTorch's div_rtn.
int64_t div_floor(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// One node being inferred: accessors whose errors name the node and the field.
class NodeCtx {
 public:
  NodeCtx(const Graph& graph, const Node& node) : graph_(graph), node_(node) {}

  const Node& node() const { return node_; }

  template <typename... A>
  [[noreturn]] void fail(const std::string& field, const A&... parts) const {
    VKD_THROW(ErrorCode::InvalidArgument, node_.origin, ": ", field, ": ", parts...);
  }

  // At most `max` tensor inputs.
  void max_inputs(size_t max) const {
    if (node_.inputs.size() > max) {
      fail("inputs", "expected at most ", max, " tensor inputs, got ", node_.inputs.size());
    }
  }

  std::string input_field(size_t i, const char* name) const {
    // "input 'weight' (value 'w')": the schema's input name, then the graph value given for it.
    std::string f = std::string("input '") + name + "'";
    if (i < node_.inputs.size() && !node_.inputs[i].empty()) {
      f += " (value '" + node_.inputs[i] + "')";
    }
    return f;
  }

  const Value& in(size_t i, const char* name) const {
    if (i >= node_.inputs.size() || node_.inputs[i].empty()) {
      fail(input_field(i, name), "required input is absent");
    }
    return defined(i, name);
  }

  const Value* opt_in(size_t i, const char* name) const {
    if (i >= node_.inputs.size() || node_.inputs[i].empty()) return nullptr;
    return &defined(i, name);
  }

  void dtype(const Value& v, const char* name, size_t i, DType want) const {
    if (v.dtype != want) {
      fail(input_field(i, name), "expected dtype ", to_string(want), ", got ", to_string(v.dtype),
           " (shape ", shape_str(v.shape), ")");
    }
  }

  void rank(const Value& v, const char* name, size_t i, size_t want) const {
    if (v.shape.size() != want) {
      fail(input_field(i, name), "expected rank ", want, ", got shape ", shape_str(v.shape));
    }
  }

  void shape(const Value& v, const char* name, size_t i, const std::vector<int64_t>& want,
             const char* why) const {
    if (v.shape != want) {
      fail(input_field(i, name), "expected shape ", shape_str(want), " (", why, "), got ",
           shape_str(v.shape));
    }
  }

  static std::string arg_field(const std::string& name) { return "argument '" + name + "'"; }

  int64_t i64(const std::string& name) const { return arg_int(node_, name); }
  int64_t i64_or(const std::string& name, int64_t def) const {
    return arg_present(node_, name) ? arg_int(node_, name) : def;
  }
  double f64(const std::string& name) const { return arg_float(node_, name); }
  std::optional<double> opt_f64(const std::string& name) const {
    if (!arg_present(node_, name)) return std::nullopt;
    return arg_float(node_, name);
  }
  bool flag_or(const std::string& name, bool def) const {
    return arg_present(node_, name) ? arg_bool(node_, name) : def;
  }
  std::vector<int64_t> ints(const std::string& name) const { return arg_ints(node_, name); }

  std::optional<std::string> opt_str(const std::string& name) const {
    if (!arg_present(node_, name)) return std::nullopt;
    const ArgValue& v = node_.args.at(name);
    if (const auto* s = std::get_if<std::string>(&v)) return *s;
    fail(arg_field(name), "must be a string");
  }
  std::string str(const std::string& name) const {
    if (node_.args.count(name) == 0) fail(arg_field(name), "missing argument");
    std::optional<std::string> s = opt_str(name);
    if (!s) fail(arg_field(name), "must be a string, got None");
    return *s;
  }

  // A string arg that must be one of `allowed` (None allowed when `none_ok`).
  void str_in(const std::string& name, std::initializer_list<const char*> allowed,
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

  // An int[2] arg given as 1 or 2 ints, each >= `min`.
  std::vector<int64_t> pair(const std::string& name, int64_t min) const {
    std::vector<int64_t> v = ints(name);
    return checked_pair(name, v, min);
  }
  std::vector<int64_t> checked_pair(const std::string& name, std::vector<int64_t> v,
                                    int64_t min) const {
    if (v.size() == 1) v.push_back(v[0]);
    if (v.size() != 2) fail(arg_field(name), "expected 1 or 2 integers, got ", shape_str(v));
    for (int64_t x : v) {
      if (x < min) fail(arg_field(name), "each value must be >= ", min, ", got ", shape_str(v));
    }
    return v;
  }

  // int8 quantization range args.
  void int8_range(const std::string& qmin_name, const std::string& qmax_name,
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

  void positive_scale(const std::string& name) const {
    const double s = f64(name);
    if (!(std::isfinite(s) && s > 0)) fail(arg_field(name), "expected a finite value > 0, got ", s);
  }

  void int8_zero_point(const std::string& name) const {
    const int64_t zp = i64(name);
    if (zp < -128 || zp > 127) fail(arg_field(name), "expected a value in [-128, 127], got ", zp);
  }

 private:
  const Value& defined(size_t i, const char* name) const {
    const std::string& v = node_.inputs[i];
    if (!graph_.has_value(v)) fail(input_field(i, name), "value '", v, "' is not defined");
    return graph_.value(v);
  }

  const Graph& graph_;
  const Node& node_;
};

using Rule = std::function<std::vector<Typed>(const NodeCtx&)>;

// ---- quantization ------------------------------------------------------------------------

// quantize_per_tensor / dequantize_per_tensor: one tensor of dtype `in`, per-tensor int8
// parameters.
const Value& per_tensor_quant_input(const NodeCtx& c, DType in) {
  c.max_inputs(1);
  const Value& x = c.in(0, "input");
  c.str_in("dtype", {"int8"}, false);
  c.dtype(x, "input", 0, in);
  c.positive_scale("scale");
  c.int8_zero_point("zero_point");
  c.int8_range("quant_min", "quant_max", false);
  return x;
}

std::vector<Typed> quantize_per_tensor(const NodeCtx& c) {
  return {{DType::Int8, per_tensor_quant_input(c, DType::Float32).shape}};
}

std::vector<Typed> dequantize_per_tensor(const NodeCtx& c) {
  const Value& x = per_tensor_quant_input(c, DType::Int8);
  c.str_in("out_dtype", {"float32"}, true);
  return {{DType::Float32, x.shape}};
}

std::vector<Typed> dequantize_per_channel(const NodeCtx& c) {
  c.max_inputs(3);
  const Value& x = c.in(0, "input");
  c.str_in("dtype", {"int8"}, false);
  c.dtype(x, "input", 0, DType::Int8);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) c.fail(c.input_field(0, "input"), "expected rank >= 1, got a scalar");
  int64_t axis = c.i64("axis");
  if (axis < -rank || axis >= rank) {
    c.fail(NodeCtx::arg_field("axis"), "expected a value in [", -rank, ", ", rank - 1,
           "] for input shape ", shape_str(x.shape), ", got ", axis);
  }
  if (axis < 0) axis += rank;
  const std::vector<int64_t> per_channel = {x.shape[static_cast<size_t>(axis)]};
  const Value& scales = c.in(1, "scales");
  c.dtype(scales, "scales", 1, DType::Float32);
  c.shape(scales, "scales", 1, per_channel, "one per channel along axis");
  if (const Value* zp = c.opt_in(2, "zero_points")) {
    c.dtype(*zp, "zero_points", 2, DType::Int32);
    c.shape(*zp, "zero_points", 2, per_channel, "one per channel along axis");
  }
  c.int8_range("quant_min", "quant_max", false);
  c.str_in("out_dtype", {"float32"}, true);
  return {{DType::Float32, x.shape}};
}

// block_size checks shared by the torchao affine ops; returns shape / block_size.
std::vector<int64_t> affine_blocks(const NodeCtx& c, const Value& x) {
  const std::vector<int64_t> block = c.ints("block_size");
  if (block.size() != x.shape.size()) {
    c.fail(NodeCtx::arg_field("block_size"), "expected ", x.shape.size(),
           " entries (the input rank, input shape ", shape_str(x.shape), "), got ",
           shape_str(block));
  }
  std::vector<int64_t> out(block.size());
  for (size_t i = 0; i < block.size(); ++i) {
    if (block[i] < 1 || x.shape[i] % block[i] != 0) {
      c.fail(NodeCtx::arg_field("block_size"), shape_str(block), " does not divide input shape ",
             shape_str(x.shape), " (dim ", i, ")");
    }
    out[i] = x.shape[i] / block[i];
  }
  return out;
}

// A scale or zero point of an affine op: shape / block_size, or that with its size-1 dims
// dropped (torchao squeezes them).
void affine_param(const NodeCtx& c, const Value& v, const char* name, size_t i, DType dtype,
                  const std::vector<int64_t>& blocks) {
  c.dtype(v, name, i, dtype);
  if (v.shape == blocks) return;
  auto squeeze = [](const std::vector<int64_t>& s) {
    std::vector<int64_t> out;
    for (int64_t d : s) {
      if (d != 1) out.push_back(d);
    }
    return out;
  };
  if (squeeze(v.shape) != squeeze(blocks)) {
    c.fail(c.input_field(i, name), "expected shape ", shape_str(blocks),
           " (input shape / block_size), got ", shape_str(v.shape));
  }
}

std::vector<Typed> quantize_affine(const NodeCtx& c) {
  c.max_inputs(3);
  const Value& x = c.in(0, "input");
  c.dtype(x, "input", 0, DType::Float32);
  const std::vector<int64_t> blocks = affine_blocks(c, x);
  affine_param(c, c.in(1, "scale"), "scale", 1, DType::Float32, blocks);
  if (const Value* zp = c.opt_in(2, "zero_point")) {
    affine_param(c, *zp, "zero_point", 2, DType::Int32, blocks);
  }
  c.str_in("output_dtype", {"int8"}, false);
  c.int8_range("quant_min", "quant_max", true);
  return {{DType::Int8, x.shape}};
}

std::vector<Typed> dequantize_affine(const NodeCtx& c) {
  c.max_inputs(3);
  const Value& x = c.in(0, "input");
  c.str_in("input_dtype", {"int8"}, false);
  c.dtype(x, "input", 0, DType::Int8);
  const std::vector<int64_t> blocks = affine_blocks(c, x);
  affine_param(c, c.in(1, "scale"), "scale", 1, DType::Float32, blocks);
  if (const Value* zp = c.opt_in(2, "zero_point")) {
    affine_param(c, *zp, "zero_point", 2, DType::Int32, blocks);
  }
  c.int8_range("quant_min", "quant_max", true);
  c.str_in("output_dtype", {"float32"}, true);
  return {{DType::Float32, x.shape}};
}

std::vector<Typed> choose_qparams_affine(const NodeCtx& c) {
  c.max_inputs(1);
  const Value& x = c.in(0, "input");
  c.dtype(x, "input", 0, DType::Float32);
  c.str_in("mapping_type", {"SYMMETRIC", "ASYMMETRIC", "SYMMETRIC_NO_CLIPPING_ERR"}, false);
  const std::vector<int64_t> blocks = affine_blocks(c, x);
  c.str_in("target_dtype", {"int8"}, false);
  c.int8_range("quant_min", "quant_max", true);
  if (std::optional<double> eps = c.opt_f64("eps")) {
    if (!(std::isfinite(*eps) && *eps >= 0)) {
      c.fail(NodeCtx::arg_field("eps"), "expected a finite value >= 0, got ", *eps);
    }
  }
  c.str_in("scale_dtype", {"float32"}, true);
  // The zero point is stored as int32 whatever integer type was asked for.
  c.str_in("zero_point_dtype", {"int32", "int64", "int8"}, true);
  return {{DType::Float32, blocks}, {DType::Int32, blocks}};
}

// ---- compute ops ---------------------------------------------------------------------------

std::vector<Typed> convolution(const NodeCtx& c) {
  c.max_inputs(3);
  const Value& x = c.in(0, "input");
  const Value& w = c.in(1, "weight");
  c.dtype(x, "input", 0, DType::Float32);
  c.rank(x, "input", 0, 4);
  c.dtype(w, "weight", 1, DType::Float32);
  c.rank(w, "weight", 1, 4);
  if (c.flag_or("transposed", false)) {
    c.fail(NodeCtx::arg_field("transposed"),
           "transposed convolution is not supported (expected false, got true)");
  }
  const std::vector<int64_t> stride = c.pair("stride", 1);
  const std::vector<int64_t> padding = c.pair("padding", 0);
  const std::vector<int64_t> dilation = c.pair("dilation", 1);
  if (c.node().args.count("output_padding") != 0) (void)c.ints("output_padding");
  const int64_t groups = c.i64("groups");
  if (groups < 1) c.fail(NodeCtx::arg_field("groups"), "expected a value >= 1, got ", groups);

  const int64_t n = x.shape[0], ch = x.shape[1], h = x.shape[2], wd = x.shape[3];
  const int64_t oc = w.shape[0];
  if (ch % groups != 0) {
    c.fail(c.input_field(0, "input"), "input channels ", ch, " are not divisible by groups ",
           groups);
  }
  if (oc % groups != 0) {
    c.fail(c.input_field(1, "weight"), "output channels ", oc, " are not divisible by groups ",
           groups);
  }
  if (w.shape[1] != ch / groups) {
    c.fail(c.input_field(1, "weight"), "expected ", ch / groups,
           " input channels per group (input channels ", ch, " / groups ", groups, "), got ",
           w.shape[1], " (weight shape ", shape_str(w.shape), ")");
  }
  if (const Value* b = c.opt_in(2, "bias")) {
    c.dtype(*b, "bias", 2, DType::Float32);
    c.shape(*b, "bias", 2, {oc}, "one per output channel");
  }
  const int64_t oh = conv_output_size(h, w.shape[2], stride[0], padding[0], dilation[0]);
  const int64_t ow = conv_output_size(wd, w.shape[3], stride[1], padding[1], dilation[1]);
  if (oh < 1 || ow < 1) {
    c.fail(c.input_field(0, "input"), "spatial size ", h, "x", wd, " (padding ",
           shape_str(padding), ") is too small for kernel ", w.shape[2], "x", w.shape[3],
           " with dilation ", shape_str(dilation), ": output would be ", oh, "x", ow);
  }
  return {{DType::Float32, {n, oc, oh, ow}}};
}

std::vector<Typed> linear(const NodeCtx& c) {
  c.max_inputs(3);
  const Value& x = c.in(0, "input");
  const Value& w = c.in(1, "weight");
  c.dtype(x, "input", 0, DType::Float32);
  c.dtype(w, "weight", 1, DType::Float32);
  if (x.shape.empty()) c.fail(c.input_field(0, "input"), "expected rank >= 1, got a scalar");
  c.rank(w, "weight", 1, 2);
  const int64_t k = x.shape.back();
  if (w.shape[1] != k) {
    c.fail(c.input_field(1, "weight"), "expected [N, ", k, "] (input features ", k,
           "), got ", shape_str(w.shape));
  }
  const int64_t out_features = w.shape[0];
  if (const Value* b = c.opt_in(2, "bias")) {
    c.dtype(*b, "bias", 2, DType::Float32);
    c.shape(*b, "bias", 2, {out_features}, "one per output feature");
  }
  std::vector<int64_t> out = x.shape;
  out.back() = out_features;
  return {{DType::Float32, out}};
}

std::vector<Typed> add(const NodeCtx& c) {
  c.max_inputs(2);
  const Value& a = c.in(0, "self");
  const Value& b = c.in(1, "other");
  c.dtype(a, "self", 0, DType::Float32);
  c.dtype(b, "other", 1, DType::Float32);
  if (c.node().args.count("alpha") != 0) (void)c.f64("alpha");
  std::vector<int64_t> out;
  if (!broadcast_shapes(a.shape, b.shape, &out)) {
    c.fail(c.input_field(1, "other"), "shape ", shape_str(b.shape),
           " does not broadcast with self shape ", shape_str(a.shape));
  }
  return {{DType::Float32, out}};
}

std::vector<Typed> unary_float(const NodeCtx& c) {
  c.max_inputs(1);
  const Value& x = c.in(0, "self");
  c.dtype(x, "self", 0, DType::Float32);
  return {{DType::Float32, x.shape}};
}

std::vector<Typed> hardtanh(const NodeCtx& c) {
  std::vector<Typed> out = unary_float(c);
  const double lo = c.opt_f64("min_val").value_or(-1.0);
  const double hi = c.opt_f64("max_val").value_or(1.0);
  if (!(lo <= hi)) {
    c.fail(NodeCtx::arg_field("min_val"), "min_val ", lo, " is greater than max_val ", hi);
  }
  return out;
}

std::vector<Typed> clamp(const NodeCtx& c) {
  std::vector<Typed> out = unary_float(c);
  const std::optional<double> lo = c.opt_f64("min");
  const std::optional<double> hi = c.opt_f64("max");
  if (!lo && !hi) c.fail("arguments 'min'/'max'", "at least one of min and max must not be None");
  return out;
}

std::vector<Typed> pixel_shuffle(const NodeCtx& c) {
  c.max_inputs(1);
  const Value& x = c.in(0, "self");
  const size_t rank = x.shape.size();
  if (rank < 3) {
    c.fail(c.input_field(0, "self"), "expected rank >= 3 ([.., C, H, W]), got shape ",
           shape_str(x.shape));
  }
  const int64_t r = c.i64("upscale_factor");
  if (r < 1) c.fail(NodeCtx::arg_field("upscale_factor"), "expected a value >= 1, got ", r);
  std::vector<int64_t> out = x.shape;
  const int64_t ch = out[rank - 3];
  if (ch % (r * r) != 0) {
    c.fail(c.input_field(0, "self"), "channels ", ch, " are not divisible by upscale_factor^2 = ",
           r * r, " (shape ", shape_str(x.shape), ")");
  }
  out[rank - 3] = ch / (r * r);
  out[rank - 2] *= r;
  out[rank - 1] *= r;
  return {{x.dtype, out}};
}

std::vector<Typed> max_pool2d(const NodeCtx& c) {
  c.max_inputs(1);
  const Value& x = c.in(0, "self");
  c.dtype(x, "self", 0, DType::Float32);
  const size_t rank = x.shape.size();
  if (rank != 3 && rank != 4) {
    c.fail(c.input_field(0, "self"), "expected rank 3 or 4, got shape ", shape_str(x.shape));
  }
  const std::vector<int64_t> kernel = c.pair("kernel_size", 1);
  std::vector<int64_t> stride = kernel;
  if (arg_present(c.node(), "stride")) {
    std::vector<int64_t> s = c.ints("stride");
    if (!s.empty()) stride = c.checked_pair("stride", s, 1);
  }
  const std::vector<int64_t> padding =
      arg_present(c.node(), "padding") ? c.pair("padding", 0) : std::vector<int64_t>{0, 0};
  const std::vector<int64_t> dilation =
      arg_present(c.node(), "dilation") ? c.pair("dilation", 1) : std::vector<int64_t>{1, 1};
  const bool ceil_mode = c.flag_or("ceil_mode", false);
  for (size_t i = 0; i < 2; ++i) {
    if (padding[i] > kernel[i] / 2) {
      c.fail(NodeCtx::arg_field("padding"), "must be at most half of kernel_size ",
             shape_str(kernel), ", got ", shape_str(padding));
    }
  }
  std::vector<int64_t> out = x.shape;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t in = x.shape[rank - 2 + i];
    const int64_t o = pool_output_size(in, kernel[i], stride[i], padding[i], dilation[i], ceil_mode);
    if (o < 1) {
      c.fail(c.input_field(0, "self"), "spatial size ", x.shape[rank - 2], "x", x.shape[rank - 1],
             " is too small for kernel_size ", shape_str(kernel), " with padding ",
             shape_str(padding), " and dilation ", shape_str(dilation));
    }
    out[rank - 2 + i] = o;
  }
  return {{DType::Float32, out}};
}

std::vector<Typed> mean_dim(const NodeCtx& c) {
  c.max_inputs(1);
  const Value& x = c.in(0, "self");
  c.dtype(x, "self", 0, DType::Float32);
  c.rank(x, "self", 0, 4);
  const std::vector<int64_t> dims = c.ints("dim");
  std::set<int64_t> norm;
  for (int64_t d : dims) norm.insert(d < 0 ? d + 4 : d);
  if (dims.size() != 2 || norm != std::set<int64_t>{2, 3}) {
    c.fail(NodeCtx::arg_field("dim"), "only the spatial dims [-1, -2] / [2, 3] are supported, got ",
           shape_str(dims));
  }
  const bool keepdim = c.flag_or("keepdim", false);
  std::vector<int64_t> out = {x.shape[0], x.shape[1]};
  if (keepdim) {
    out.push_back(1);
    out.push_back(1);
  }
  return {{DType::Float32, out}};
}

std::vector<Typed> adaptive_avg_pool2d(const NodeCtx& c) {
  c.max_inputs(1);
  const Value& x = c.in(0, "self");
  c.dtype(x, "self", 0, DType::Float32);
  const size_t rank = x.shape.size();
  if (rank != 3 && rank != 4) {
    c.fail(c.input_field(0, "self"), "expected rank 3 or 4, got shape ", shape_str(x.shape));
  }
  const std::vector<int64_t> size = c.ints("output_size");
  if (!(size == std::vector<int64_t>{1, 1} || size == std::vector<int64_t>{1})) {
    c.fail(NodeCtx::arg_field("output_size"), "only [1, 1] is supported, got ", shape_str(size));
  }
  std::vector<int64_t> out = x.shape;
  out[rank - 2] = 1;
  out[rank - 1] = 1;
  return {{DType::Float32, out}};
}

// ---- data movement -------------------------------------------------------------------------

std::vector<Typed> view_copy(const NodeCtx& c) {
  c.max_inputs(1);
  const Value& x = c.in(0, "self");
  std::vector<int64_t> size = c.ints("size");
  if (size.size() > 4) {
    c.fail(NodeCtx::arg_field("size"), "rank ", size.size(), " is above the supported 4: ",
           shape_str(size));
  }
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == -1) {
      if (infer >= 0) c.fail(NodeCtx::arg_field("size"), "-1 appears more than once in ", shape_str(size));
      infer = static_cast<int>(i);
    } else if (size[i] < 0) {
      c.fail(NodeCtx::arg_field("size"), "invalid dimension ", size[i], " in ", shape_str(size));
    } else {
      known *= size[i];
    }
  }
  const int64_t total = numel(x.shape);
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      c.fail(NodeCtx::arg_field("size"), shape_str(size), " is invalid for input of shape ",
             shape_str(x.shape), " (", total, " elements)");
    }
    size[static_cast<size_t>(infer)] = total / known;
  } else if (known != total) {
    c.fail(NodeCtx::arg_field("size"), shape_str(size), " has ", known,
           " elements, but the input shape ", shape_str(x.shape), " has ", total);
  }
  return {{x.dtype, size}};
}

std::vector<Typed> clone_like(const NodeCtx& c) {
  c.max_inputs(1);
  const Value& x = c.in(0, "self");
  if (c.node().args.count("memory_format") != 0) (void)c.opt_str("memory_format");
  return {{x.dtype, x.shape}};
}

std::vector<Typed> clone_dim_order(const NodeCtx& c) {
  c.max_inputs(1);
  const Value& x = c.in(0, "self");
  (void)c.flag_or("non_blocking", false);
  if (arg_present(c.node(), "dim_order")) {
    std::vector<int64_t> order = c.ints("dim_order");
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    bool ok = order.size() == x.shape.size();
    for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int64_t>(i);
    if (!ok) {
      c.fail(NodeCtx::arg_field("dim_order"), "expected a permutation of the ", x.shape.size(),
             " dims of shape ", shape_str(x.shape), ", got ", shape_str(order));
    }
  }
  return {{x.dtype, x.shape}};
}

const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> kRules = {
      {"quantized_decomposed.quantize_per_tensor", quantize_per_tensor},
      {"quantized_decomposed.dequantize_per_tensor", dequantize_per_tensor},
      {"quantized_decomposed.dequantize_per_channel", dequantize_per_channel},
      {"aten.convolution", convolution},
      {"aten.linear", linear},
      {"aten.add.Tensor", add},
      {"aten.relu", unary_float},
      {"aten.hardtanh", hardtanh},
      {"aten.clamp", clamp},
      {"aten.pixel_shuffle", pixel_shuffle},
      {"aten.max_pool2d", max_pool2d},
      {"aten.mean.dim", mean_dim},
      {"aten.adaptive_avg_pool2d", adaptive_avg_pool2d},
      {"aten.view_copy", view_copy},
      {"aten.clone", clone_like},
      {"aten.alias_copy", clone_like},
      {"aten._clone_dim_order", clone_dim_order},
      {"torchao.quantize_affine", quantize_affine},
      {"torchao.dequantize_affine", dequantize_affine},
      {"torchao.choose_qparams_affine", choose_qparams_affine},
  };
  return kRules;
}

}  // namespace

int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                         int64_t dilation) {
  return div_floor(in + 2 * pad - dilation * (kernel - 1) - 1, stride) + 1;
}

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                         int64_t dilation, bool ceil_mode) {
  int64_t out =
      div_floor(in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0),
                stride) +
      1;
  // With ceil_mode the last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

bool broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                      std::vector<int64_t>* out) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      result[i] = da;
    } else if (da == 1) {
      result[i] = db;
    } else {
      return false;
    }
  }
  *out = std::move(result);
  return true;
}

void infer_shapes(Graph& graph) {
  for (size_t index = 0; index < graph.nodes.size(); ++index) infer_node_shapes(graph, index);
}

void infer_node_shapes(Graph& graph, size_t index) {
  VKD_CHECK(index < graph.nodes.size(), ErrorCode::Internal, "infer_node_shapes: node ", index,
            " out of range (", graph.nodes.size(), " nodes)");
  Node node = graph.nodes[index];  // a copy: add_value below may not disturb it
  if (node.origin.empty()) node.origin = "node " + std::to_string(index) + " (" + node.op + ")";
  auto rule = rules().find(node.op);
  VKD_CHECK(rule != rules().end(), ErrorCode::InvalidArgument, node.origin,
            ": op: unknown op '", node.op, "' for shape inference");
  const NodeCtx ctx(graph, node);
  const std::vector<Typed> inferred = rule->second(ctx);
  if (node.outputs.size() != inferred.size()) {
    ctx.fail("outputs", "expected ", inferred.size(), " output(s), got ", node.outputs.size());
  }
  for (size_t k = 0; k < inferred.size(); ++k) {
    const std::string& name = node.outputs[k];
    const Typed& t = inferred[k];
    if (name.empty()) ctx.fail("outputs", "output ", k, " has an empty name");
    if (t.shape.size() > 4) {
      ctx.fail("output '" + name + "'", "inferred rank ", t.shape.size(),
               " is above the supported 4: ", shape_str(t.shape));
    }
    if (!graph.has_value(name)) {
      Value v;
      v.name = name;
      v.dtype = t.dtype;
      v.shape = t.shape;
      graph.add_value(std::move(v));
      continue;
    }
    const Value& existing = graph.value(name);
    const bool is_input =
        std::find(graph.inputs.begin(), graph.inputs.end(), name) != graph.inputs.end();
    if (existing.is_constant() || is_input) {
      ctx.fail("output '" + name + "'", "is already defined as a ",
               is_input ? "graph input" : "constant");
    }
    if (existing.dtype != t.dtype || existing.shape != t.shape) {
      ctx.fail("output '" + name + "'", "declared ", typed_str(existing.dtype, existing.shape),
               ", inferred ", typed_str(t.dtype, t.shape));
    }
  }
}

}  // namespace vkd::compiler
