// The pieces of `vkd run --check` that need no device: which part of the original graph
// recomputes a device tensor from the device's own values (so a difference is blamed on the op
// that made it, not inherited from an earlier one), and how a device tensor is compared with
// its reference (exact ties in the final rounding, and results of ties inside a fused op's
// region, counted apart from real differences).
// No Vulkan and no delegate: the CLI tests link it on their own.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"
#include "compiler/Interpreter.h"

namespace vkd::cli {

// Float tensors agree within 1e-5 relative (plus 1e-6 absolute for values near zero); integer
// tensors must be equal, except that an int8 result 1 off where the reference rounded a value
// within kTieTolerance (in units of the last place) of halfway is a rounding tie, not a real
// difference: float arithmetic in another order (a fused kernel's epilogue) may land on the
// other side of a tie the reference met exactly.
constexpr double kRelTol = 1e-5, kAbsTol = 1e-6;
constexpr double kTieTolerance = 1e-3;

struct Comparison {
  bool comparable = true;
  std::string problem;    // when not comparable: why
  double max_abs = 0;     // over every element, ties included
  size_t mismatches = 0;  // real differences
  size_t ties = 0;        // 1-off int8 results at a rounding tie
  size_t fused_ties = 0;  // results of a tie inside the region (see tie_alternatives)
  size_t total = 0;
  size_t first_index = 0;  // the first real difference
  double first_device = 0, first_ref = 0;
  bool differs() const { return !comparable || mismatches > 0; }
};

// Compares `device` (float16 tensors come as float32) with `ref`. `pre_rounding` holds, per
// element, the value the reference rounded to make `ref` (empty: unknown, every difference is
// real). `alternatives` (tie_alternatives) are references recomputed with a tie inside the
// region rounded the other way: an element equal to one of them, or an integer between `ref`'s
// and one of them where they differ, is counted in fused_ties, not as a difference.
Comparison compare_tensors(const compiler::HostTensor& device, const compiler::HostTensor& ref,
                           const std::vector<double>& pre_rounding,
                           const std::vector<compiler::HostTensor>& alternatives = {});

// Whether `v` lies within kTieTolerance of a halfway point k + 0.5.
bool is_rounding_tie(double v);

// The values `node` rounded to make its output, when it is a quantize whose rounding the check
// can redo (quantized_decomposed.quantize_per_tensor: float(x * float(1 / scale)), as the
// reference computes it); empty otherwise. `values` holds the node's inputs.
std::vector<double> pre_rounding_values(const compiler::Node& node,
                                        const std::map<std::string, compiler::HostTensor>& values);
// The same for value `name` written by a quantize of `g`, looking through a requantize that
// cannot change the value: when the quantize's input is dequantize (same scale and zero point)
// -> views / clones of an earlier quantize's output, that earlier quantize did the rounding
// (a fused global pool -> flatten: its tie is the pool's). Views keep the element order.
std::vector<double> rounding_of(const compiler::Graph& g, const std::string& name,
                                const std::map<std::string, compiler::HostTensor>& values);

// The nodes of `g` that recompute value `target` from `sources` (the values the device exposes
// with the graph's dtype and shape): from target's producer back through every input that is
// neither a source, a constant nor a graph input. One node when the device exposes the op's
// inputs; the whole pattern when the compiler fused it (dq -> conv -> q).
struct Region {
  std::vector<int> nodes;           // in node order
  std::vector<std::string> inputs;  // the non-constant values it reads from outside, in order
};
Region region_of(const compiler::Graph& g, const std::string& target,
                 const std::set<std::string>& sources);

// The region as a graph of its own: its inputs as graph inputs, constants copied, `target` its
// output. What the interpreter runs on the device's values.
compiler::Graph region_graph(const compiler::Graph& g, const Region& region,
                             const std::string& target);

// The int8 output of quantize `node` (in `values`, with its input) with the elements the
// reference rounded within kTieTolerance of halfway rounded to the other neighbour (clamped to
// the node's range): the ties k (counted in element order) with k % groups == group, every tie
// by default; nullopt when no element changes.
std::optional<compiler::HostTensor> rounded_the_other_way(
    const compiler::Node& node, const std::map<std::string, compiler::HostTensor>& values,
    size_t group = 0, size_t groups = 1);

// How many elements of quantize `node`'s output the reference rounded within kTieTolerance of
// halfway.
size_t rounding_ties(const compiler::Node& node,
                     const std::map<std::string, compiler::HostTensor>& values);

// The ties of one hidden quantize are also flipped in up to this many interleaved groups
// (tie_alternatives' max_groups), each a recomputation of the rest of the region.
constexpr size_t kMaxTieGroups = 16;

// The region graph `sub` (region_graph) of `target`, run by the interpreter into `values`, may
// hold quantizes whose int8 output the device does not expose (what a fused op keeps to itself:
// the depthwise output inside q8ta_conv2d_dw_pw, the expansion's and the depthwise's inside
// q8ta_conv2d_pw_dw_pw, the shuffled 1x1's output and the head's requantized value inside
// q8ta_conv2d_ps_pw_q_dq, the conv value inside q8ta_conv2d_add). The device may round such a
// value on the other side of a tie, and the difference then reaches `target` through the rest
// of the region (later hidden values recomputed), where it is no tie. References of `target`
// per such quantize with ties, recomputed from there: all its ties rounded the other way
// (rounded_the_other_way), then its ties in min(ties, max_groups) interleaved groups, each
// group alone: the device rounds only a few of the reference's near-halfway values the other
// way (a real model's expansion has ~1000 within 1e-3 of halfway, the device differs at one or
// two), so an output whose inputs hold one such tie and others matches neither the reference
// nor the all-flipped one, but the group of its one tie (the groups interleave, so an output's
// few ties fall in different groups). None for target's own quantize, whose ties
// compare_tensors sees.
// Each such reference is searched again in the same way (`depth` levels of hidden values):
// a later hidden value may hold a tie only where an earlier one was rounded the other way.
std::vector<compiler::HostTensor> tie_alternatives(
    const compiler::Graph& sub, const std::string& target,
    const std::map<std::string, compiler::HostTensor>& values, size_t max_groups = kMaxTieGroups,
    int depth = 2);

}  // namespace vkd::cli
