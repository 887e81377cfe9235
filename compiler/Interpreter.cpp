// CPU reference interpreter for edge-dialect graphs. The semantics of every op are documented
// in Interpreter.h; this file is compiled with -ffp-contract=off (compiler/CMakeLists.txt)
// so each float32 product and sum is rounded on its own, in the order written here.
#include "compiler/Interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>

#include "runtime/core/Error.h"

namespace vkd::compiler {

namespace {

// ---------------------------------------------------------------------------------------------
// Bytes <-> elements (explicitly little-endian, whatever the host).

uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

void store_u32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}

float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t float_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// Bytes per element of the dtypes the interpreter holds (0 for any other). float16 is only
// moved (copies, views, pixel shuffle: byte-exact); every arithmetic op checks for float32.
size_t elem_bytes(DType dtype) {
  switch (dtype) {
    case DType::Float32:
    case DType::Int32:
      return 4;
    case DType::Float16:
      return 2;
    case DType::Int8:
      return 1;
    default:
      return 0;
  }
}

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void check_shape_valid(const std::vector<int64_t>& shape, const std::string& what) {
  for (int64_t d : shape) {
    VKD_CHECK(d >= 0, ErrorCode::InvalidArgument, what, ": negative dimension in shape ",
              shape_str(shape));
  }
}

// ---------------------------------------------------------------------------------------------
// Typed scratch tensors used while computing.

HostTensor make_tensor(DType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.assign(static_cast<size_t>(numel_of(t.shape)) * elem_bytes(dtype), 0);
  return t;
}

float get_f32(const HostTensor& t, int64_t i) {
  return bits_to_float(load_u32(t.bytes.data() + 4 * i));
}
void set_f32(HostTensor& t, int64_t i, float v) { store_u32(t.bytes.data() + 4 * i, float_to_bits(v)); }
int32_t get_i32(const HostTensor& t, int64_t i) {
  return static_cast<int32_t>(load_u32(t.bytes.data() + 4 * i));
}
void set_i32(HostTensor& t, int64_t i, int32_t v) {
  store_u32(t.bytes.data() + 4 * i, static_cast<uint32_t>(v));
}
int8_t get_i8(const HostTensor& t, int64_t i) { return static_cast<int8_t>(t.bytes[i]); }
void set_i8(HostTensor& t, int64_t i, int8_t v) { t.bytes[i] = static_cast<uint8_t>(v); }

// Any integer tensor element as int64 (int8 / int32).
int64_t get_int(const HostTensor& t, int64_t i) {
  return t.dtype == DType::Int8 ? get_i8(t, i) : get_i32(t, i);
}

// Saturating float -> integer conversion of an integer-valued number; NaN gives 0 (PyTorch's
// cast of NaN is platform-defined; this only has to be defined).
int64_t to_int_saturating(double v, int64_t lo, int64_t hi) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(lo)) return lo;
  if (v >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(v);
}

int64_t dtype_min(DType d) { return d == DType::Int8 ? -128 : std::numeric_limits<int32_t>::min(); }
int64_t dtype_max(DType d) { return d == DType::Int8 ? 127 : std::numeric_limits<int32_t>::max(); }

// Stores an integer element, the value already clamped to the dtype's range.
void set_int(HostTensor& t, int64_t i, int64_t v) {
  if (t.dtype == DType::Int8) {
    set_i8(t, i, static_cast<int8_t>(v));
  } else {
    set_i32(t, i, static_cast<int32_t>(v));
  }
}

// ---------------------------------------------------------------------------------------------
// Per-node context: inputs, args, errors naming the node.

class NodeCtx {
 public:
  NodeCtx(const Graph& g, const Node& node, size_t index,
          const std::map<std::string, HostTensor>& values)
      : g_(g), node_(node), values_(values) {
    label_ = node.origin.empty() ? detail::concat("node ", index, " (", node.op, ")") : node.origin;
  }

  const Node& node() const { return node_; }
  const std::string& label() const { return label_; }

  bool has_input(size_t i) const { return i < node_.inputs.size() && !node_.inputs[i].empty(); }

  const HostTensor& input(size_t i, const char* what) const {
    VKD_CHECK(has_input(i), ErrorCode::InvalidArgument, label_, ": missing tensor input ", i,
              " (", what, ")");
    auto it = values_.find(node_.inputs[i]);
    VKD_CHECK(it != values_.end(), ErrorCode::InvalidArgument, label_, ": input '",
              node_.inputs[i], "' (", what, ") is not computed before this node");
    return it->second;
  }
  const HostTensor* optional_input(size_t i, const char* what) const {
    return has_input(i) ? &input(i, what) : nullptr;
  }

  // Declared dtype of output `i` (nullopt when the graph does not declare the value).
  std::optional<DType> declared_dtype(size_t i) const {
    if (i < node_.outputs.size() && g_.has_value(node_.outputs[i])) {
      return g_.value(node_.outputs[i]).dtype;
    }
    return std::nullopt;
  }

  // Declared shape of output `i` (nullopt when the graph does not declare the value).
  std::optional<std::vector<int64_t>> declared_shape(size_t i) const {
    if (i < node_.outputs.size() && g_.has_value(node_.outputs[i])) {
      return g_.value(node_.outputs[i]).shape;
    }
    return std::nullopt;
  }

  [[noreturn]] void fail(ErrorCode code, const std::string& message) const {
    throw Error(code, label_ + ": " + message);
  }
  void require(bool cond, const std::string& message) const {
    if (!cond) fail(ErrorCode::InvalidArgument, message);
  }
  void expect_dtype(const HostTensor& t, DType dtype, const char* what) const {
    if (t.dtype != dtype) {
      fail(ErrorCode::Unsupported, detail::concat(what, " has dtype ", to_string(t.dtype),
                                                  ", only ", to_string(dtype), " is supported"));
    }
  }

  bool present(const std::string& name) const { return arg_present(node_, name); }
  int64_t int_arg(const std::string& name) const { return arg_int(node_, name); }
  int64_t int_arg(const std::string& name, int64_t def) const {
    return present(name) ? arg_int(node_, name) : def;
  }
  double float_arg(const std::string& name) const { return arg_float(node_, name); }
  bool bool_arg(const std::string& name, bool def) const {
    if (!present(name)) return def;
    const ArgValue& v = node_.args.at(name);
    if (const auto* i = std::get_if<int64_t>(&v)) return *i != 0;
    return arg_bool(node_, name);
  }
  std::vector<int64_t> ints_arg(const std::string& name) const { return arg_ints(node_, name); }
  std::string string_arg(const std::string& name) const {
    auto it = node_.args.find(name);
    require(it != node_.args.end(), detail::concat("missing argument '", name, "'"));
    const auto* s = std::get_if<std::string>(&it->second);
    require(s != nullptr, detail::concat("argument '", name, "' must be a string"));
    return *s;
  }
  // A dtype argument ("int8", "torch.int8"); absent or None: the declared dtype of output 0.
  DType dtype_arg(const std::string& name) const {
    if (!present(name)) {
      auto d = declared_dtype(0);
      require(d.has_value(), detail::concat("missing argument '", name, "'"));
      return *d;
    }
    std::string s = string_arg(name);
    if (s.rfind("torch.", 0) == 0) s = s.substr(6);
    auto d = parse_dtype(s);
    if (!d || elem_bytes(*d) == 0 || *d == DType::Float16) {
      fail(ErrorCode::Unsupported, detail::concat("argument '", name, "' = '", s,
                                                  "': only float32, int8 and int32 are supported"));
    }
    return *d;
  }

 private:
  const Graph& g_;
  const Node& node_;
  const std::map<std::string, HostTensor>& values_;
  std::string label_;
};

using Outputs = std::vector<HostTensor>;

// Normalizes a possibly negative dim for a tensor of rank `rank`.
int64_t norm_dim(const NodeCtx& c, int64_t dim, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  const int64_t d = dim < 0 ? dim + r : dim;
  c.require(d >= 0 && d < std::max<int64_t>(r, 1),
            detail::concat("dim ", dim, " is out of range for rank ", rank));
  return d;
}

// One or two ints -> (h, w).
std::pair<int64_t, int64_t> pair_arg(const NodeCtx& c, const std::vector<int64_t>& v,
                                     const char* name) {
  c.require(v.size() == 1 || v.size() == 2,
            detail::concat("argument '", name, "' must have 1 or 2 entries"));
  return v.size() == 1 ? std::make_pair(v[0], v[0]) : std::make_pair(v[0], v[1]);
}

// ---------------------------------------------------------------------------------------------
// Quantization ops.

void check_qrange(const NodeCtx& c, int64_t qmin, int64_t qmax, DType dtype) {
  c.require(qmin <= qmax, detail::concat("quant_min ", qmin, " > quant_max ", qmax));
  c.require(qmin >= dtype_min(dtype) && qmax <= dtype_max(dtype),
            detail::concat("quant range [", qmin, ", ", qmax, "] exceeds ", to_string(dtype)));
}

// The project's quantize rounding (and torchao's INT-domain quantize): one float32 product by
// the float32 reciprocal, ties-to-even rounding, zero point added, clamped in double.
int64_t quantize_one(float x, float inv_scale, double zero_point, int64_t qmin, int64_t qmax) {
  const float product = x * inv_scale;
  double q = std::nearbyint(static_cast<double>(product)) + zero_point;
  q = std::fmin(std::fmax(q, static_cast<double>(qmin)), static_cast<double>(qmax));
  return static_cast<int64_t>(q);  // NaN became qmin in fmax
}

float inverse_scale(float scale) { return static_cast<float>(1.0 / static_cast<double>(scale)); }

Outputs op_quantize_per_tensor(const NodeCtx& c) {
  const HostTensor& x = c.input(0, "input");
  c.expect_dtype(x, DType::Float32, "input");
  const DType out_dtype = c.dtype_arg("dtype");
  c.require(out_dtype != DType::Float32, "dtype must be an integer type");
  const float scale = static_cast<float>(c.float_arg("scale"));
  const int64_t zp = c.int_arg("zero_point");
  const int64_t qmin = c.int_arg("quant_min"), qmax = c.int_arg("quant_max");
  check_qrange(c, qmin, qmax, out_dtype);
  const float inv = inverse_scale(scale);
  HostTensor out = make_tensor(out_dtype, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    set_int(out, i, quantize_one(get_f32(x, i), inv, static_cast<double>(zp), qmin, qmax));
  }
  return {out};
}

Outputs op_dequantize_per_tensor(const NodeCtx& c) {
  const HostTensor& q = c.input(0, "input");
  c.require(q.dtype == DType::Int8 || q.dtype == DType::Int32, "input must be int8 or int32");
  if (c.present("dtype")) {
    c.require(c.dtype_arg("dtype") == q.dtype, "argument 'dtype' differs from the input's dtype");
  }
  if (c.present("out_dtype")) {
    c.require(c.dtype_arg("out_dtype") == DType::Float32, "out_dtype must be float32");
  }
  const float scale = static_cast<float>(c.float_arg("scale"));
  const int64_t zp = c.int_arg("zero_point");
  HostTensor out = make_tensor(DType::Float32, q.shape);
  for (int64_t i = 0; i < q.numel(); ++i) {
    set_f32(out, i, static_cast<float>(get_int(q, i) - zp) * scale);
  }
  return {out};
}

// A zero-point element as int64 (int tensors) or truncated float (float tensors).
int64_t zp_int(const HostTensor& zp, int64_t i) {
  if (zp.dtype == DType::Float32) {
    return to_int_saturating(std::trunc(get_f32(zp, i)), std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max());
  }
  return get_int(zp, i);
}

Outputs op_dequantize_per_channel(const NodeCtx& c) {
  const HostTensor& q = c.input(0, "input");
  const HostTensor& scales = c.input(1, "scales");
  const HostTensor* zps = c.optional_input(2, "zero_points");
  c.require(q.dtype == DType::Int8 || q.dtype == DType::Int32, "input must be int8 or int32");
  c.expect_dtype(scales, DType::Float32, "scales");
  if (c.present("out_dtype")) {
    c.require(c.dtype_arg("out_dtype") == DType::Float32, "out_dtype must be float32");
  }
  c.require(!q.shape.empty(), "input must have rank >= 1");
  const int64_t axis = norm_dim(c, c.int_arg("axis"), q.shape.size());
  const int64_t channels = q.shape[axis];
  c.require(scales.numel() == channels,
            detail::concat("scales has ", scales.numel(), " elements, the axis has ", channels));
  if (zps) {
    c.require(zps->numel() == channels, detail::concat("zero_points has ", zps->numel(),
                                                       " elements, the axis has ", channels));
  }
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < q.shape.size(); ++d) inner *= q.shape[d];
  HostTensor out = make_tensor(DType::Float32, q.shape);
  for (int64_t i = 0; i < q.numel(); ++i) {
    const int64_t ch = (i / inner) % channels;
    const int64_t zp = zps ? zp_int(*zps, ch) : 0;
    set_f32(out, i, static_cast<float>(get_int(q, i) - zp) * get_f32(scales, ch));
  }
  return {out};
}

// ---------------------------------------------------------------------------------------------
// Convolution and linear.

// The (input, weight, optional bias) operands of a convolution or linear, all float32.
struct WeightedOperands {
  const HostTensor& x;
  const HostTensor& w;
  const HostTensor* b;
};

WeightedOperands float_weighted_operands(const NodeCtx& c) {
  WeightedOperands o{c.input(0, "input"), c.input(1, "weight"), c.optional_input(2, "bias")};
  c.expect_dtype(o.x, DType::Float32, "input");
  c.expect_dtype(o.w, DType::Float32, "weight");
  if (o.b) c.expect_dtype(*o.b, DType::Float32, "bias");
  return o;
}

Outputs op_convolution(const NodeCtx& c) {
  const auto [x, w, b] = float_weighted_operands(c);
  if (c.bool_arg("transposed", false)) c.fail(ErrorCode::Unsupported, "transposed convolution");
  if (x.shape.size() != 4 || w.shape.size() != 4) {
    c.fail(ErrorCode::Unsupported, detail::concat("only 2-D convolution (rank-4 input and weight) "
                                                  "is supported, got input ",
                                                  shape_str(x.shape), " and weight ",
                                                  shape_str(w.shape)));
  }
  const auto [sh, sw] = pair_arg(c, c.ints_arg("stride"), "stride");
  const auto [ph, pw] = pair_arg(c, c.ints_arg("padding"), "padding");
  const auto [dh, dw] = pair_arg(c, c.ints_arg("dilation"), "dilation");
  const int64_t groups = c.int_arg("groups", 1);
  c.require(sh > 0 && sw > 0, "stride must be positive");
  c.require(dh > 0 && dw > 0, "dilation must be positive");
  c.require(ph >= 0 && pw >= 0, "padding must be non-negative");
  c.require(groups > 0, "groups must be positive");
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t CO = w.shape[0], CIG = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  c.require(CIG * groups == C, detail::concat("weight ", shape_str(w.shape), " with groups ",
                                              groups, " does not match input channels ", C));
  c.require(CO % groups == 0, detail::concat("output channels ", CO,
                                             " are not divisible by groups ", groups));
  if (b) c.require(b->numel() == CO, detail::concat("bias has ", b->numel(), " elements, ", CO,
                                                    " output channels"));
  const int64_t eff_h = H + 2 * ph - dh * (KH - 1) - 1;
  const int64_t eff_w = W + 2 * pw - dw * (KW - 1) - 1;
  c.require(eff_h >= 0 && eff_w >= 0 && KH > 0 && KW > 0,
            "kernel (dilated) is larger than the padded input");
  const int64_t OH = eff_h / sh + 1, OW = eff_w / sw + 1;
  const int64_t COG = CO / groups;

  const std::vector<float> xv = x.to_floats(), wv = w.to_floats();
  const std::vector<float> bv = b ? b->to_floats() : std::vector<float>{};
  std::vector<float> ov(static_cast<size_t>(N * CO * OH * OW));
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t co = 0; co < CO; ++co) {
      const int64_t g = co / COG;
      const float* wco = wv.data() + co * CIG * KH * KW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          float acc = 0.0f;
          for (int64_t cig = 0; cig < CIG; ++cig) {
            const float* xc = xv.data() + ((n * C) + g * CIG + cig) * H * W;
            const float* wc = wco + cig * KH * KW;
            for (int64_t kh = 0; kh < KH; ++kh) {
              const int64_t ih = oh * sh - ph + kh * dh;
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t iw = ow * sw - pw + kw * dw;
                if (iw < 0 || iw >= W) continue;
                const float prod = xc[ih * W + iw] * wc[kh * KW + kw];
                acc = acc + prod;
              }
            }
          }
          if (b) acc = acc + bv[co];
          ov[((n * CO + co) * OH + oh) * OW + ow] = acc;
        }
      }
    }
  }
  return {HostTensor::from_floats({N, CO, OH, OW}, ov)};
}

Outputs op_linear(const NodeCtx& c) {
  const auto [x, w, b] = float_weighted_operands(c);
  c.require(!x.shape.empty(), "input must have rank >= 1");
  c.require(w.shape.size() == 2, detail::concat("weight must be 2-D, got ", shape_str(w.shape)));
  const int64_t K = x.shape.back(), NO = w.shape[0];
  c.require(w.shape[1] == K, detail::concat("weight ", shape_str(w.shape),
                                            " does not match input ", shape_str(x.shape)));
  if (b) c.require(b->numel() == NO, detail::concat("bias has ", b->numel(), " elements, ", NO,
                                                    " outputs"));
  const int64_t rows = numel_of({x.shape.begin(), x.shape.end() - 1});
  const std::vector<float> xv = x.to_floats(), wv = w.to_floats();
  const std::vector<float> bv = b ? b->to_floats() : std::vector<float>{};
  std::vector<float> ov(static_cast<size_t>(rows * NO));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < NO; ++o) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        const float prod = xv[r * K + k] * wv[o * K + k];
        acc = acc + prod;
      }
      if (b) acc = acc + bv[o];
      ov[r * NO + o] = acc;
    }
  }
  std::vector<int64_t> shape(x.shape.begin(), x.shape.end() - 1);
  shape.push_back(NO);
  return {HostTensor::from_floats(shape, ov)};
}

// ---------------------------------------------------------------------------------------------
// Element-wise ops.

// Visits every element of `shape` in row-major order, with the matching offset into each
// operand whose (broadcast) strides are given (stride 0 repeats an element).
void strided_loop(const std::vector<int64_t>& shape,
                  const std::vector<std::vector<int64_t>>& strides,
                  const std::function<void(int64_t, const std::vector<int64_t>&)>& f) {
  const size_t rank = shape.size();
  const int64_t n = numel_of(shape);
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

// Strides of `in_shape` (C order) seen through `out_shape` (numpy broadcasting, right-aligned).
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in_shape,
                                       const std::vector<int64_t>& out_shape) {
  std::vector<int64_t> strides(out_shape.size(), 0);
  int64_t s = 1;
  for (size_t k = 0; k < in_shape.size(); ++k) {
    const size_t din = in_shape.size() - 1 - k, dout = out_shape.size() - 1 - k;
    strides[dout] = in_shape[din] == 1 ? 0 : s;
    s *= in_shape[din];
  }
  return strides;
}

Outputs op_add(const NodeCtx& c) {
  const HostTensor& a = c.input(0, "self");
  const HostTensor& b = c.input(1, "other");
  c.require(a.dtype == b.dtype, detail::concat("self is ", to_string(a.dtype), ", other is ",
                                               to_string(b.dtype)));
  if (a.dtype != DType::Float32 && a.dtype != DType::Int32) {
    c.fail(ErrorCode::Unsupported, detail::concat("add of ", to_string(a.dtype)));
  }
  // numpy broadcasting
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  std::vector<int64_t> shape(rank);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t da = k < a.shape.size() ? a.shape[a.shape.size() - 1 - k] : 1;
    const int64_t db = k < b.shape.size() ? b.shape[b.shape.size() - 1 - k] : 1;
    c.require(da == db || da == 1 || db == 1,
              detail::concat("shapes ", shape_str(a.shape), " and ", shape_str(b.shape),
                             " do not broadcast"));
    shape[rank - 1 - k] = da == 1 ? db : da;
  }
  HostTensor out = make_tensor(a.dtype, shape);
  const std::vector<std::vector<int64_t>> strides = {broadcast_strides(a.shape, shape),
                                                     broadcast_strides(b.shape, shape)};
  if (a.dtype == DType::Float32) {
    const double alpha_d = c.present("alpha") ? c.float_arg("alpha") : 1.0;
    const float alpha = static_cast<float>(alpha_d);
    const bool unit = alpha_d == 1.0;
    strided_loop(shape, strides, [&](int64_t i, const std::vector<int64_t>& off) {
      const float va = get_f32(a, off[0]), vb = get_f32(b, off[1]);
      if (unit) {
        set_f32(out, i, va + vb);
      } else {
        const float scaled = alpha * vb;
        set_f32(out, i, va + scaled);
      }
    });
  } else {
    const int64_t alpha = c.int_arg("alpha", 1);
    strided_loop(shape, strides, [&](int64_t i, const std::vector<int64_t>& off) {
      const uint32_t sum = static_cast<uint32_t>(get_i32(a, off[0])) +
                           static_cast<uint32_t>(alpha) * static_cast<uint32_t>(get_i32(b, off[1]));
      set_i32(out, i, static_cast<int32_t>(sum));  // wraps like PyTorch's int32 add
    });
  }
  return {out};
}

Outputs unary_float(const NodeCtx& c, const std::function<float(float)>& f) {
  const HostTensor& x = c.input(0, "self");
  c.expect_dtype(x, DType::Float32, "self");
  HostTensor out = make_tensor(DType::Float32, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) set_f32(out, i, f(get_f32(x, i)));
  return {out};
}

// PyTorch's clamp: NaN propagates, an absent bound is not applied, lo > hi gives hi.
float clamp_float(float x, std::optional<float> lo, std::optional<float> hi) {
  if (std::isnan(x)) return x;
  if (lo && x < *lo) x = *lo;
  if (hi && x > *hi) x = *hi;
  return x;
}

Outputs op_relu(const NodeCtx& c) {
  return unary_float(c, [](float x) { return x < 0.0f ? 0.0f : x; });
}

Outputs op_hardtanh(const NodeCtx& c) {
  const float lo = static_cast<float>(c.present("min_val") ? c.float_arg("min_val") : -1.0);
  const float hi = static_cast<float>(c.present("max_val") ? c.float_arg("max_val") : 1.0);
  return unary_float(c, [lo, hi](float x) { return clamp_float(x, lo, hi); });
}

Outputs op_clamp(const NodeCtx& c) {
  std::optional<float> lo, hi;
  if (c.present("min")) lo = static_cast<float>(c.float_arg("min"));
  if (c.present("max")) hi = static_cast<float>(c.float_arg("max"));
  c.require(lo || hi, "clamp needs at least one of min and max");
  return unary_float(c, [lo, hi](float x) { return clamp_float(x, lo, hi); });
}

// ---------------------------------------------------------------------------------------------
// Data movement.

Outputs op_copy(const NodeCtx& c) {
  const HostTensor& x = c.input(0, "self");
  return {x};
}

Outputs op_view_copy(const NodeCtx& c) {
  const HostTensor& x = c.input(0, "self");
  std::vector<int64_t> size = c.ints_arg("size");
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == -1) {
      c.require(infer < 0, "size has more than one -1");
      infer = static_cast<int>(i);
    } else {
      c.require(size[i] >= 0, detail::concat("invalid size ", shape_str(size)));
      known *= size[i];
    }
  }
  if (infer >= 0) {
    c.require(known != 0 && x.numel() % known == 0,
              detail::concat("size ", shape_str(size), " is invalid for ", x.numel(), " elements"));
    size[static_cast<size_t>(infer)] = x.numel() / known;
  }
  c.require(numel_of(size) == x.numel(), detail::concat("size ", shape_str(size), " is invalid for ",
                                                         x.numel(), " elements"));
  HostTensor out = x;
  out.shape = size;
  return {out};
}

Outputs op_pixel_shuffle(const NodeCtx& c) {
  const HostTensor& x = c.input(0, "self");
  const int64_t r = c.int_arg("upscale_factor");
  c.require(r > 0, "upscale_factor must be positive");
  c.require(x.shape.size() >= 3, "input must have rank >= 3");
  const size_t rank = x.shape.size();
  const int64_t C = x.shape[rank - 3], H = x.shape[rank - 2], W = x.shape[rank - 1];
  c.require(C % (r * r) == 0, detail::concat("channels ", C, " are not divisible by ", r * r));
  const int64_t OC = C / (r * r), OH = H * r, OW = W * r;
  const int64_t batch = numel_of({x.shape.begin(), x.shape.end() - 3});
  std::vector<int64_t> shape(x.shape.begin(), x.shape.end() - 3);
  shape.insert(shape.end(), {OC, OH, OW});
  HostTensor out = make_tensor(x.dtype, shape);
  const size_t es = elem_bytes(x.dtype);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < OC; ++oc) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t ic = oc * r * r + (oh % r) * r + (ow % r);
          const int64_t src = ((n * C + ic) * H + oh / r) * W + ow / r;
          const int64_t dst = ((n * OC + oc) * OH + oh) * OW + ow;
          std::memcpy(out.bytes.data() + dst * es, x.bytes.data() + src * es, es);
        }
      }
    }
  }
  return {out};
}

// ---------------------------------------------------------------------------------------------
// Pooling and reductions.

// PyTorch's pooling_output_shape (floor division rounding toward -inf).
int64_t pool_output_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil,
                         bool ceil_mode) {
  const int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

Outputs op_max_pool2d(const NodeCtx& c) {
  const HostTensor& x = c.input(0, "self");
  if (x.dtype != DType::Float32 && x.dtype != DType::Int8) {
    c.fail(ErrorCode::Unsupported, detail::concat("max_pool2d of ", to_string(x.dtype)));
  }
  c.require(x.shape.size() == 3 || x.shape.size() == 4, "input must have rank 3 or 4");
  const auto [kh, kw] = pair_arg(c, c.ints_arg("kernel_size"), "kernel_size");
  std::vector<int64_t> stride_v = c.present("stride") ? c.ints_arg("stride") : std::vector<int64_t>{};
  const auto [sh, sw] = stride_v.empty() ? std::make_pair(kh, kw) : pair_arg(c, stride_v, "stride");
  const auto [ph, pw] = c.present("padding") ? pair_arg(c, c.ints_arg("padding"), "padding")
                                             : std::make_pair<int64_t, int64_t>(0, 0);
  const auto [dh, dw] = c.present("dilation") ? pair_arg(c, c.ints_arg("dilation"), "dilation")
                                              : std::make_pair<int64_t, int64_t>(1, 1);
  const bool ceil_mode = c.bool_arg("ceil_mode", false);
  c.require(kh > 0 && kw > 0, "kernel_size must be positive");
  c.require(sh > 0 && sw > 0, "stride must be positive");
  c.require(dh > 0 && dw > 0, "dilation must be positive");
  c.require(ph >= 0 && pw >= 0 && ph <= kh / 2 && pw <= kw / 2,
            "padding must be non-negative and at most half of the kernel size");
  const size_t rank = x.shape.size();
  const int64_t H = x.shape[rank - 2], W = x.shape[rank - 1];
  const int64_t planes = numel_of({x.shape.begin(), x.shape.end() - 2});
  const int64_t OH = pool_output_size(H, kh, ph, sh, dh, ceil_mode);
  const int64_t OW = pool_output_size(W, kw, pw, sw, dw, ceil_mode);
  c.require(OH >= 1 && OW >= 1, detail::concat("output size ", OH, "x", OW, " is too small"));
  std::vector<int64_t> shape(x.shape.begin(), x.shape.end() - 2);
  shape.insert(shape.end(), {OH, OW});
  HostTensor out = make_tensor(x.dtype, shape);
  const bool is_float = x.dtype == DType::Float32;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        float fmax = -std::numeric_limits<float>::infinity();
        int64_t imax = -128;
        for (int64_t i = 0; i < kh; ++i) {
          const int64_t ih = oh * sh - ph + i * dh;
          if (ih < 0 || ih >= H) continue;
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t iw = ow * sw - pw + j * dw;
            if (iw < 0 || iw >= W) continue;
            const int64_t src = (p * H + ih) * W + iw;
            if (is_float) {
              const float v = get_f32(x, src);
              if (v > fmax || std::isnan(v)) fmax = v;  // NaN wins, as in PyTorch
            } else {
              imax = std::max<int64_t>(imax, get_i8(x, src));
            }
          }
        }
        const int64_t dst = (p * OH + oh) * OW + ow;
        if (is_float) {
          set_f32(out, dst, fmax);
        } else {
          set_i8(out, dst, static_cast<int8_t>(imax));
        }
      }
    }
  }
  return {out};
}

// Mean over `dims` (normalized, distinct): one float32 accumulator per output element, adding
// the input elements in row-major input order, then divided by the count.
HostTensor mean_over(const NodeCtx& c, const HostTensor& x, std::vector<int64_t> dims,
                     bool keepdim) {
  c.expect_dtype(x, DType::Float32, "self");
  const size_t rank = x.shape.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t d : dims) {
    const int64_t nd = norm_dim(c, d, rank);
    if (rank == 0) continue;
    c.require(!reduced[static_cast<size_t>(nd)], detail::concat("dim ", d, " appears twice"));
    reduced[static_cast<size_t>(nd)] = true;
  }
  if (dims.empty()) std::fill(reduced.begin(), reduced.end(), true);
  std::vector<int64_t> kept_shape(rank), out_shape;
  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    kept_shape[d] = reduced[d] ? 1 : x.shape[d];
    if (reduced[d]) count *= x.shape[d];
    if (!reduced[d] || keepdim) out_shape.push_back(kept_shape[d]);
  }
  // Strides of the output (in its keepdim form) seen from the input: 0 along reduced dims.
  std::vector<int64_t> ostrides(rank, 0);
  int64_t s = 1;
  for (size_t d = rank; d-- > 0;) {
    ostrides[d] = reduced[d] ? 0 : s;
    s *= kept_shape[d];
  }
  std::vector<float> acc(static_cast<size_t>(numel_of(kept_shape)), 0.0f);
  strided_loop(x.shape, {ostrides}, [&](int64_t i, const std::vector<int64_t>& off) {
    acc[static_cast<size_t>(off[0])] = acc[static_cast<size_t>(off[0])] + get_f32(x, i);
  });
  const float n = static_cast<float>(count);
  for (float& v : acc) v = v / n;  // count 0 gives NaN, as in PyTorch
  return HostTensor::from_floats(out_shape, acc);
}

Outputs op_mean_dim(const NodeCtx& c) {
  const HostTensor& x = c.input(0, "self");
  if (c.present("dtype")) c.require(c.dtype_arg("dtype") == DType::Float32, "dtype must be float32");
  const std::vector<int64_t> dims = c.present("dim") ? c.ints_arg("dim") : std::vector<int64_t>{};
  return {mean_over(c, x, dims, c.bool_arg("keepdim", false))};
}

Outputs op_adaptive_avg_pool2d(const NodeCtx& c) {
  const HostTensor& x = c.input(0, "self");
  const auto [oh, ow] = pair_arg(c, c.ints_arg("output_size"), "output_size");
  if (oh != 1 || ow != 1) {
    c.fail(ErrorCode::Unsupported, detail::concat("adaptive_avg_pool2d to ", oh, "x", ow,
                                                  " (only 1x1 is supported)"));
  }
  c.require(x.shape.size() == 3 || x.shape.size() == 4, "input must have rank 3 or 4");
  return {mean_over(c, x, {-2, -1}, true)};
}

// ---------------------------------------------------------------------------------------------
// torchao affine quantization (block-wise).

// torchao's _get_reduction_params, as a block grid: the extent of a block along each dim, the
// number of blocks along it, and the shape torchao gives the chosen qparams (the non-reduced
// entries of its shape_for_reduction).
struct BlockGrid {
  std::vector<int64_t> extent, count, qparam_shape;
  int64_t blocks = 1;
};

BlockGrid block_grid(const NodeCtx& c, const std::vector<int64_t>& shape) {
  std::vector<int64_t> bs = c.ints_arg("block_size");
  if (bs.size() == 1 && bs[0] == -1 && shape.size() != 1) bs.assign(shape.size(), -1);
  c.require(bs.size() == shape.size(), detail::concat("block_size ", shape_str(bs), " does not "
                                                      "match the input's rank ", shape.size()));
  BlockGrid g;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t b = bs[d], n = shape[d];
    c.require(b == -1 || b > 0, detail::concat("block_size ", shape_str(bs), " has an invalid entry"));
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
  std::vector<int64_t> out(static_cast<size_t>(numel_of(shape)));
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

void check_zero_point_domain(const NodeCtx& c) {
  if (c.present("zero_point_domain")) {
    std::string dom = c.string_arg("zero_point_domain");
    if (dom.rfind("ZeroPointDomain.", 0) == 0) dom = dom.substr(16);
    if (dom != "INT") {
      c.fail(ErrorCode::Unsupported, "zero_point_domain '" + dom + "' (only INT is supported)");
    }
  }
}

// A zero point as a float (torchao adds the zero-point tensor to the rounded float32 value).
double zp_value(const HostTensor& zp, int64_t i) {
  return zp.dtype == DType::Float32 ? static_cast<double>(get_f32(zp, i))
                                    : static_cast<double>(get_int(zp, i));
}

Outputs op_quantize_affine(const NodeCtx& c) {
  const HostTensor& x = c.input(0, "input");
  const HostTensor& scale = c.input(1, "scale");
  const HostTensor* zp = c.optional_input(2, "zero_point");
  c.expect_dtype(x, DType::Float32, "input");
  c.expect_dtype(scale, DType::Float32, "scale");
  check_zero_point_domain(c);
  const DType out_dtype = c.dtype_arg("output_dtype");
  c.require(out_dtype != DType::Float32, "output_dtype must be an integer type");
  const int64_t qmin = c.int_arg("quant_min", dtype_min(out_dtype));
  const int64_t qmax = c.int_arg("quant_max", dtype_max(out_dtype));
  check_qrange(c, qmin, qmax, out_dtype);
  const BlockGrid g = block_grid(c, x.shape);
  c.require(scale.numel() == g.blocks, detail::concat("scale has ", scale.numel(),
                                                      " elements, block_size gives ", g.blocks,
                                                      " blocks"));
  if (zp && zp->numel() == 0) zp = nullptr;  // torchao treats an empty zero point as none
  if (zp) {
    c.require(zp->numel() == g.blocks, detail::concat("zero_point has ", zp->numel(),
                                                      " elements, block_size gives ", g.blocks,
                                                      " blocks"));
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

Outputs op_dequantize_affine(const NodeCtx& c) {
  const HostTensor& q = c.input(0, "input");
  const HostTensor& scale = c.input(1, "scale");
  const HostTensor* zp = c.optional_input(2, "zero_point");
  c.require(q.dtype == DType::Int8 || q.dtype == DType::Int32, "input must be int8 or int32");
  c.expect_dtype(scale, DType::Float32, "scale");
  check_zero_point_domain(c);
  if (c.present("input_dtype")) {
    c.require(c.dtype_arg("input_dtype") == q.dtype, "input_dtype differs from the input's dtype");
  }
  if (c.present("output_dtype")) {
    c.require(c.dtype_arg("output_dtype") == DType::Float32, "output_dtype must be float32");
  }
  const BlockGrid g = block_grid(c, q.shape);
  c.require(scale.numel() == g.blocks, detail::concat("scale has ", scale.numel(),
                                                      " elements, block_size gives ", g.blocks,
                                                      " blocks"));
  if (zp && zp->numel() == 0) zp = nullptr;
  if (zp) {
    c.require(zp->numel() == g.blocks, detail::concat("zero_point has ", zp->numel(),
                                                      " elements, block_size gives ", g.blocks,
                                                      " blocks"));
  }
  const std::vector<int64_t> blk = block_of_elements(q.shape, g);
  HostTensor out = make_tensor(DType::Float32, q.shape);
  for (int64_t i = 0; i < q.numel(); ++i) {
    const int64_t b = blk[static_cast<size_t>(i)];
    const int32_t diff = static_cast<int32_t>(get_int(q, i)) -
                         static_cast<int32_t>(zp ? zp_int(*zp, b) : 0);
    set_f32(out, i, static_cast<float>(diff) * get_f32(scale, b));
  }
  return {out};
}

Outputs op_choose_qparams_affine(const NodeCtx& c) {
  const HostTensor& x = c.input(0, "input");
  c.expect_dtype(x, DType::Float32, "input");
  c.require(c.node().outputs.size() == 2, "needs two outputs (scale, zero_point)");
  check_zero_point_domain(c);
  if (!c.bool_arg("preserve_zero", true)) {
    c.fail(ErrorCode::Unsupported, "preserve_zero = false");
  }
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
  std::vector<float> mins(static_cast<size_t>(g.blocks), inf), maxs(static_cast<size_t>(g.blocks), -inf);
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
    return d && numel_of(*d) == g.blocks ? *d : g.qparam_shape;
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
      zero_point = std::isnan(zpf) ? zpf
                                   : std::fmin(std::fmax(static_cast<double>(zpf), double(qmin)),
                                               double(qmax));
    } else {
      if (m == Mapping::Symmetric) {
        const float neg = -min_neg;
        const float amax = (std::isnan(neg) || std::isnan(max_pos)) ? neg + max_pos
                                                                      : std::max(neg, max_pos);
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

// ---------------------------------------------------------------------------------------------

using OpFn = Outputs (*)(const NodeCtx&);

const std::map<std::string, OpFn>& op_table() {
  static const std::map<std::string, OpFn> table = {
      {"quantized_decomposed.quantize_per_tensor", op_quantize_per_tensor},
      {"quantized_decomposed.dequantize_per_tensor", op_dequantize_per_tensor},
      {"quantized_decomposed.dequantize_per_channel", op_dequantize_per_channel},
      {"aten.convolution", op_convolution},
      {"aten.linear", op_linear},
      {"aten.add.Tensor", op_add},
      {"aten.relu", op_relu},
      {"aten.hardtanh", op_hardtanh},
      {"aten.clamp", op_clamp},
      {"aten.pixel_shuffle", op_pixel_shuffle},
      {"aten.max_pool2d", op_max_pool2d},
      {"aten.mean.dim", op_mean_dim},
      {"aten.adaptive_avg_pool2d", op_adaptive_avg_pool2d},
      {"aten.view_copy", op_view_copy},
      {"aten.clone", op_copy},
      {"aten.alias_copy", op_copy},
      {"aten._clone_dim_order", op_copy},
      {"torchao.quantize_affine", op_quantize_affine},
      {"torchao.dequantize_affine", op_dequantize_affine},
      {"torchao.choose_qparams_affine", op_choose_qparams_affine},
  };
  return table;
}

OpFn find_op(const std::string& op) {
  const auto& table = op_table();
  auto it = table.find(op);
  if (it == table.end()) {
    const std::string suffix = ".default";
    if (op.size() > suffix.size() &&
        op.compare(op.size() - suffix.size(), suffix.size(), suffix) == 0) {
      it = table.find(op.substr(0, op.size() - suffix.size()));
    }
  }
  return it == table.end() ? nullptr : it->second;
}

// Checks that `t` agrees with the declared value `v`; `what` names it in the message.
void check_against(const Value& v, const HostTensor& t, const std::string& what) {
  VKD_CHECK(t.dtype == v.dtype, ErrorCode::InvalidArgument, what, " has dtype ",
            to_string(t.dtype), ", the graph declares ", to_string(v.dtype));
  VKD_CHECK(t.shape == v.shape, ErrorCode::InvalidArgument, what, " has shape ",
            shape_str(t.shape), ", the graph declares ", shape_str(v.shape));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// HostTensor

int64_t HostTensor::numel() const { return numel_of(shape); }

namespace {

// One from_* body for every element type: shape check, then the element setter.
template <typename T, typename Setter>
HostTensor tensor_from(const char* what, DType dtype, std::vector<int64_t> shape,
                       const std::vector<T>& values, Setter set) {
  check_shape_valid(shape, what);
  VKD_CHECK(numel_of(shape) == static_cast<int64_t>(values.size()), ErrorCode::InvalidArgument,
            what, ": ", values.size(), " values for shape ", shape_str(shape));
  HostTensor t = make_tensor(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) set(t, static_cast<int64_t>(i), values[i]);
  return t;
}

}  // namespace

HostTensor HostTensor::from_floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  return tensor_from("HostTensor::from_floats", DType::Float32, std::move(shape), values, set_f32);
}

HostTensor HostTensor::from_int8(std::vector<int64_t> shape, const std::vector<int8_t>& values) {
  return tensor_from("HostTensor::from_int8", DType::Int8, std::move(shape), values, set_i8);
}

HostTensor HostTensor::from_int32(std::vector<int64_t> shape, const std::vector<int32_t>& values) {
  return tensor_from("HostTensor::from_int32", DType::Int32, std::move(shape), values, set_i32);
}

namespace {
void check_readable(const HostTensor& t, DType want, const char* fn) {
  VKD_CHECK(t.dtype == want, ErrorCode::InvalidArgument, "HostTensor::", fn, ": tensor is ",
            to_string(t.dtype), ", not ", to_string(want));
  VKD_CHECK(t.bytes.size() == static_cast<size_t>(t.numel()) * elem_bytes(want),
            ErrorCode::InvalidArgument, "HostTensor::", fn, ": ", t.bytes.size(),
            " bytes for shape ", shape_str(t.shape));
}
}  // namespace

std::vector<float> HostTensor::to_floats() const {
  check_readable(*this, DType::Float32, "to_floats");
  std::vector<float> v(static_cast<size_t>(numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = get_f32(*this, static_cast<int64_t>(i));
  return v;
}

std::vector<int8_t> HostTensor::to_int8() const {
  check_readable(*this, DType::Int8, "to_int8");
  std::vector<int8_t> v(static_cast<size_t>(numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = get_i8(*this, static_cast<int64_t>(i));
  return v;
}

std::vector<int32_t> HostTensor::to_int32() const {
  check_readable(*this, DType::Int32, "to_int32");
  std::vector<int32_t> v(static_cast<size_t>(numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = get_i32(*this, static_cast<int64_t>(i));
  return v;
}

// ---------------------------------------------------------------------------------------------
// interpret

std::map<std::string, HostTensor> interpret(const Graph& g,
                                            const std::map<std::string, HostTensor>& inputs) {
  std::map<std::string, HostTensor> values;

  // Inputs: exactly the graph's, with the declared dtype, shape and byte count.
  for (const auto& [name, t] : inputs) {
    VKD_CHECK(std::find(g.inputs.begin(), g.inputs.end(), name) != g.inputs.end(),
              ErrorCode::InvalidArgument, "input '", name, "' is not an input of the graph");
  }
  for (const std::string& name : g.inputs) {
    auto it = inputs.find(name);
    VKD_CHECK(it != inputs.end(), ErrorCode::InvalidArgument, "input '", name, "' is missing");
    const HostTensor& t = it->second;
    const Value& v = g.value(name);
    check_against(v, t, "input '" + name + "'");
    VKD_CHECK(elem_bytes(t.dtype) != 0, ErrorCode::Unsupported, "input '", name, "': dtype ",
              to_string(t.dtype), " is not supported by the interpreter");
    VKD_CHECK(t.bytes.size() == static_cast<size_t>(t.numel()) * elem_bytes(t.dtype),
              ErrorCode::InvalidArgument, "input '", name, "' holds ", t.bytes.size(),
              " bytes, its shape ", shape_str(t.shape), " and dtype need ",
              t.numel() * static_cast<int64_t>(elem_bytes(t.dtype)));
    values[name] = t;
  }

  // Constants.
  for (const std::string& name : g.value_names()) {
    const Value& v = g.value(name);
    if (!v.is_constant() || values.count(name)) continue;
    VKD_CHECK(elem_bytes(v.dtype) != 0, ErrorCode::Unsupported, "constant '", name, "': dtype ",
              to_string(v.dtype), " is not supported by the interpreter");
    check_shape_valid(v.shape, "constant '" + name + "'");
    const size_t need = static_cast<size_t>(numel_of(v.shape)) * elem_bytes(v.dtype);
    VKD_CHECK(v.data->size() == need, ErrorCode::InvalidArgument, "constant '", name, "' holds ",
              v.data->size(), " bytes, its shape ", shape_str(v.shape), " and dtype need ", need);
    values[name] = HostTensor{v.dtype, v.shape, *v.data};
  }

  // Nodes, in execution order.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    NodeCtx ctx(g, node, i, values);
    const OpFn fn = find_op(node.op);
    if (fn == nullptr) {
      ctx.fail(ErrorCode::Unsupported,
               "op '" + node.op + "' is not an edge op the interpreter knows");
    }
    Outputs outs = fn(ctx);
    ctx.require(node.outputs.size() == outs.size(),
                detail::concat("has ", node.outputs.size(), " outputs, the op produces ",
                               outs.size()));
    for (size_t k = 0; k < outs.size(); ++k) {
      const std::string& name = node.outputs[k];
      ctx.require(!name.empty(), detail::concat("output ", k, " has no name"));
      ctx.require(values.count(name) == 0,
                  "output '" + name + "' is already defined (input, constant or earlier node)");
      if (g.has_value(name)) {
        check_against(g.value(name), outs[k], ctx.label() + ": output '" + name + "'");
      }
      values[name] = std::move(outs[k]);
    }
  }
  return values;
}

}  // namespace vkd::compiler
