// The matchers and checks the fusion patterns and direct lowerings share. None of them throws:
// each returns "" when the graph fits and otherwise why not, in words the pass reports
// ("not fused: ... : <why>").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"

namespace vkd::compiler {
struct FloatClamp;  // compiler/reference/QuantChain.h
}  // namespace vkd::compiler

namespace vkd::compiler::fusion {

// ---- formatting -----------------------------------------------------------------------------

std::string fmt(double v);                    // shortest stream form: "0.5", "1e-05"
std::string quoted(const std::string& name);  // "'name'"
std::string node_list(std::vector<int> idx);  // "node 3", "node 3..6", "nodes 1, 3..5"
std::string label(const Node& n);             // "q", "dq" or the op itself
std::string describe_quant(const QuantInfo& q);
bool same_quant(const QuantInfo& a, const QuantInfo& b);
bool same_scale_and_zero_point(const QuantInfo& a, const QuantInfo& b);  // ranges may differ
// Whether `node` (an index, -1 for none) exists and is an `op` node.
bool node_is(const Graph& g, int node, const char* op);
// Equal after dropping leading 1s: the packed dims (W, H, C) agree, so a view between the two
// shapes moves no byte (identity).
bool same_packed_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// ---- argument readers: nullopt when absent, None or of another kind -------------------------

std::optional<double> opt_float(const Node& n, const std::string& name);  // ints accepted
std::optional<int64_t> opt_int(const Node& n, const std::string& name);
std::optional<std::vector<int64_t>> opt_ints(const Node& n, const std::string& name);
std::optional<std::string> opt_string(const Node& n, const std::string& name);

// ---- q / dq checks --------------------------------------------------------------------------

// "" when `n` carries per-tensor int8 qparams (fills `q`); else why not.
std::string read_qparams(const Node& n, QuantInfo& q);
// "" when `n` (a dequantize_per_tensor, node `at` in messages) turns an int8 activation into
// float32 (fills `q`).
std::string check_activation_dq(const Graph& g, const Node& n, int at, QuantInfo& q);
// The int8 constant dq node `p` dequantizes per tensor (position embeddings, a class token),
// or "" when it dequantizes none: an operand a kernel reads like an activation, packed into the
// activation's layout when the blob is loaded (int8x4_constant, Lowering.h).
std::string constant_operand(const Graph& g, int p);
// check_activation_dq of dq node `p`, or its qparams alone when it dequantizes an int8
// constant (`constant`: constant_operand is not "").
std::string check_operand_dq(const Graph& g, int p, bool constant, QuantInfo& q);
// "" when `n` (a quantize_per_tensor, node `at` in messages) turns float32 into int8.
std::string check_q(const Graph& g, const Node& n, int at, QuantInfo& q);
// "" when dequantizing with `in` and quantizing with `out` gives back every int8 value (the
// same scale and zero point, and a range that keeps all 256; checked against the reference
// arithmetic).
std::string check_round_trip(const QuantInfo& in, const QuantInfo& out);
// "" when a kernel that requantizes each int8 value it moves or selects (requantize_moved:
// the data-movement ops, q8ta_max_pool2d) computes what dequantizing with `in` and quantizing
// with `out` computes, for all 256 int8 values: `out` over the full int8 range (what those
// kernels clamp to) and every result equal (checked against the reference arithmetic).
std::string check_moved_requantization(const QuantInfo& in, const QuantInfo& out);
// "" when q8ta_clamp, clamping to the quantize's range, computes what dequantizing with `in`
// and quantizing with `out` computes, for all 256 int8 values (checked against the reference
// arithmetic): a requantization on its own, after a view that moves the int8 values.
std::string check_clamp_requantization(const QuantInfo& in, const QuantInfo& out);
// "" when a kernel that moves or selects int8 values (q8ta_pixel_shuffle, q8ta_max_pool2d; the
// runtime's check_moved_quant) computes dq with `in` -> q with `out`: bytes as they are where the
// two round-trip (check_round_trip), else each value requantized (check_moved_requantization).
// The reason names both quantizations.
std::string check_bytes_or_requantization(const QuantInfo& in, const QuantInfo& out);
// "" when `v` has exactly one consumer and is not a graph output.
std::string single_use(const Graph& g, const std::string& v);
// Who reads `v`, for a pattern whose quantize_per_tensor is missing.
std::string describe_consumers(const Graph& g, const std::string& v);

// ---- activations ----------------------------------------------------------------------------

// The int8 code float `v` quantizes to, as q8ta_quantize computes it: float32 math,
// inv_scale = 1/scale rounded to float32, round half to even, clamped to the range.
int64_t quantize_bound(double v, const QuantInfo& q);

struct Activation {
  std::string label = "none";  // "relu", "hardtanh(0, 6)", "clamp(0, none)"
  int64_t min = -128, max = 127;
};

// Float bounds of hardtanh / clamp (±inf when absent); "" or why they cannot be read.
std::string activation_bounds(const Node& n, double& lo, double& hi);
// The float32 clamps of activation nodes `acts` (relu / hardtanh / clamp) in order, as the
// reference applies them; "" or why a bound cannot be read.
std::string activation_clamps(const Graph& g, const std::vector<int>& acts,
                              std::vector<FloatClamp>& out);
// The int8 clamp range of node `act` (or none when -1) followed by quantization with `out`.
std::string activation_range(const Graph& g, int act, const QuantInfo& out, Activation& a);

// ---- the quantized tail of a pattern: [act] -> q --------------------------------------------

struct Tail {
  enum Kind { None, Half, Ok } kind = None;
  std::string why;                  // Half: why the tail was not taken
  std::vector<int> nodes;           // act and q, as far as they matched
  std::vector<std::string> values;  // intermediates: the anchor output, the act output
  int act = -1, q = -1;
  QuantInfo out_q;
  Activation activation;
};

// Follows the anchor's float output `y` into an optional activation and a quantize_per_tensor.
Tail match_tail(const Graph& g, const std::string& y);

// "" when anchor `n` of a pattern whose backend op fuses no activation and has no float-output
// variant fits it: its first input the output of dq node `p` (an int8 activation that `n` alone
// reads) and `tail` exactly a quantize_per_tensor. Fills the input qparams.
std::string check_quantized_anchor(const Graph& g, const Node& n, int p, const Tail& tail,
                                   const std::string& backend, QuantInfo& in_q);

// ---- weights --------------------------------------------------------------------------------

struct WeightFold {
  int dq = -1;         // the weight's dequantize node
  std::string weight;  // the int8 constant
  std::vector<float> scales;
};

// "" when float weight `w` is a symmetric dequantization (per tensor, or per channel along
// `channel_axis`: 0, or 1 for a transposed convolution's [C_in, C_out / groups, KH, KW]) of an
// int8 constant; fills `out` with one scale per index along that axis.
std::string fold_weight(const Graph& g, const std::string& w, WeightFold& out,
                        int64_t channel_axis = 0);

}  // namespace vkd::compiler::fusion
