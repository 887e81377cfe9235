// What every CPU reference op (compiler/ops/<Family>.cpp) works with:
// the per-node context it reads its inputs and arguments from (its errors name the node), and
// the element helpers that more than one op family uses, defined here once.
//
// The context is part of every reference op's signature, so it lives in vkd::compiler next to
// HostTensor; the helpers have short names and live in vkd::compiler::reference.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/GraphIR.h"
#include "compiler/reference/HostTensor.h"
#include "core/DType.h"
#include "core/Error.h"

namespace vkd::compiler::reference {

// ---------------------------------------------------------------------------------------------
// Bytes <-> elements (explicitly little-endian, whatever the host).

inline uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

inline void store_u32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}

inline float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint32_t float_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// Bytes per element of the dtypes the interpreter holds (0 for any other). float16 is only
// moved (copies, views, pixel shuffle: byte-exact); every arithmetic op checks for float32.
size_t elem_bytes(DType dtype);

// ---------------------------------------------------------------------------------------------
// Typed scratch tensors used while computing. Element accessors take a flat C-order index
// that the caller keeps in range.

// A zero-filled tensor of `dtype` and `shape`.
HostTensor make_tensor(DType dtype, std::vector<int64_t> shape);

inline float get_f32(const HostTensor& t, int64_t i) {
  return bits_to_float(load_u32(t.bytes.data() + 4 * i));
}
inline void set_f32(HostTensor& t, int64_t i, float v) {
  store_u32(t.bytes.data() + 4 * i, float_to_bits(v));
}
inline int32_t get_i32(const HostTensor& t, int64_t i) {
  return static_cast<int32_t>(load_u32(t.bytes.data() + 4 * i));
}
inline void set_i32(HostTensor& t, int64_t i, int32_t v) {
  store_u32(t.bytes.data() + 4 * i, static_cast<uint32_t>(v));
}
inline int8_t get_i8(const HostTensor& t, int64_t i) { return static_cast<int8_t>(t.bytes[i]); }
inline void set_i8(HostTensor& t, int64_t i, int8_t v) { t.bytes[i] = static_cast<uint8_t>(v); }

// Any integer tensor element as int64 (int8 / int32).
inline int64_t get_int(const HostTensor& t, int64_t i) {
  return t.dtype == DType::Int8 ? get_i8(t, i) : get_i32(t, i);
}

// Stores an integer element, the value already clamped to the dtype's range.
void set_int(HostTensor& t, int64_t i, int64_t v);

// Saturating float -> integer conversion of an integer-valued number; NaN gives 0 (PyTorch's
// cast of NaN is platform-defined; this only has to be defined).
int64_t to_int_saturating(double v, int64_t lo, int64_t hi);

// Throws InvalidArgument, `what` naming the tensor, when a dimension of `shape` is negative.
void check_shape_valid(const std::vector<int64_t>& shape, const std::string& what);

// The range of an integer dtype: int8, else int32.
int64_t dtype_min(DType d);
int64_t dtype_max(DType d);

}  // namespace vkd::compiler::reference

namespace vkd::compiler {

// ---------------------------------------------------------------------------------------------
// Per-node context: inputs, args, errors naming the node (its origin, else its index and op).

class ReferenceContext {
 public:
  // `values` holds every tensor computed so far; the context reads the node's inputs from it.
  ReferenceContext(const Graph& g, const Node& node, size_t index,
                   const std::map<std::string, HostTensor>& values);

  const Node& node() const { return node_; }
  const std::string& label() const { return label_; }

  bool has_input(size_t i) const { return i < node_.inputs.size() && !node_.inputs[i].empty(); }

  // Tensor input `i` (InvalidArgument when absent or not computed yet); `what` names it.
  const HostTensor& input(size_t i, const char* what) const;
  const HostTensor* optional_input(size_t i, const char* what) const {
    return has_input(i) ? &input(i, what) : nullptr;
  }

  // Declared dtype of output `i` (nullopt when the graph does not declare the value).
  std::optional<DType> declared_dtype(size_t i) const;
  // Declared shape of output `i` (nullopt when the graph does not declare the value).
  std::optional<std::vector<int64_t>> declared_shape(size_t i) const;

  [[noreturn]] void fail(ErrorCode code, const std::string& message) const {
    throw Error(code, label_ + ": " + message);
  }
  void require(bool cond, const std::string& message) const {
    if (!cond) fail(ErrorCode::InvalidArgument, message);
  }
  void expect_dtype(const HostTensor& t, DType dtype, const char* what) const;

  bool present(const std::string& name) const { return arg_present(node_, name); }
  int64_t int_arg(const std::string& name) const { return arg_int(node_, name); }
  int64_t int_arg(const std::string& name, int64_t def) const {
    return present(name) ? arg_int(node_, name) : def;
  }
  double float_arg(const std::string& name) const { return arg_float(node_, name); }
  // A bool argument; an int is read as a bool (0 = false). Absent: `def`.
  bool bool_arg(const std::string& name, bool def) const;
  std::vector<int64_t> ints_arg(const std::string& name) const { return arg_ints(node_, name); }
  std::string string_arg(const std::string& name) const;
  // A dtype argument ("int8", "torch.int8"); absent or None: the declared dtype of output 0.
  DType dtype_arg(const std::string& name) const;

 private:
  const Graph& g_;
  const Node& node_;
  const std::map<std::string, HostTensor>& values_;
  std::string label_;
};

}  // namespace vkd::compiler

namespace vkd::compiler::reference {

// ---------------------------------------------------------------------------------------------
// Arguments and index loops shared by several families.

// Normalizes a possibly negative dim for a tensor of rank `rank`.
int64_t norm_dim(const ReferenceContext& c, int64_t dim, size_t rank);

// One or two ints -> (h, w).
std::pair<int64_t, int64_t> pair_arg(const ReferenceContext& c, const std::vector<int64_t>& v,
                                     const char* name);

// An element-wise op on one float32 tensor 'self' (input 0): `f` applied to every element.
std::vector<HostTensor> unary_float(const ReferenceContext& c,
                                    const std::function<float(float)>& f);

// Visits every element of `shape` in row-major order, with the matching offset into each
// operand whose (broadcast) strides are given (stride 0 repeats an element).
void strided_loop(const std::vector<int64_t>& shape,
                  const std::vector<std::vector<int64_t>>& strides,
                  const std::function<void(int64_t, const std::vector<int64_t>&)>& f);

// ---------------------------------------------------------------------------------------------
// Quantization arithmetic shared by the quantized_decomposed ops
// (compiler/ops/QuantizeDequantize.cpp) and the torchao ops (compiler/ops/AffineQuant.cpp).

// InvalidArgument unless quant_min <= quant_max, both within `dtype`'s range.
void check_qrange(const ReferenceContext& c, int64_t qmin, int64_t qmax, DType dtype);

// The project's quantize rounding (and torchao's INT-domain quantize): one float32 product by
// the float32 reciprocal, ties-to-even rounding, zero point added, clamped in double.
int64_t quantize_one(float x, float inv_scale, double zero_point, int64_t qmin, int64_t qmax);

// A zero-point element as int64 (int tensors) or truncated float (float tensors).
int64_t zp_int(const HostTensor& zp, int64_t i);

// PyTorch's clamp (aten.clamp, aten.hardtanh; relu is clamp_float(x, 0, none)): NaN
// propagates, an absent bound is not applied, lo > hi gives hi.
float clamp_float(float x, std::optional<float> lo, std::optional<float> hi);

}  // namespace vkd::compiler::reference
