// Int8 concatenation and slicing along one dim (shaders/q8ta_cat.glsl): q8ta_cat joins int8x4
// tensors along a dim (aten.cat), q8ta_slice copies a range of one along a dim, with a step
// (what aten.split_with_sizes_copy / split_copy / chunk / slice_copy become, one node per
// output). Inputs and output share one packed layout (any of 4W4C, 4H4W, 4C1W) and every size
// but the dim's.
//
// An input quantized like the output (same scale and zero point, output range the full int8
// range) is copied byte for byte. Any other is requantized per element, each float32 operation
// rounded on its own, as q8ta_clamp computes it:
//   y = float32(q - zp_in) * s_in
//   q_out = clamp(roundEven(y * inv_s_out) + zp_out, quant_min, quant_max),  inv_s_out = 1/s_out
// with inv_s_out rounded to float32 (what dq -> cat -> q computes in the reference interpreter:
// the compiler checks the two agree on all 256 int8 values before it fuses). The output's
// padding holds zp_out.
#pragma once

#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

struct CatParams {
  int32_t dim = 0;                  // in the tensors' own rank, 0 <= dim < rank
  std::vector<QuantParams> inputs;  // one per input (quant_min / quant_max unused)
  QuantParams output;               // quant_min / quant_max: the range outputs are clamped to
};

// output = the inputs joined along `dim` in order (their sizes along it summed). Any number of
// inputs: one dispatch per window of up to 4 of them, each writing the output tiles whose
// elements its inputs hold.
void add_q8ta_cat_node(graph::ComputeGraph& graph, const std::vector<graph::ValueRef>& inputs,
                       graph::ValueRef output, const CatParams& params);

struct SliceParams {
  int32_t dim = 0;    // in the tensors' own rank
  int64_t start = 0;  // output index j along dim reads input index start + j * step
  int64_t step = 1;   // >= 1
  QuantParams input;
  QuantParams output;  // quant_min / quant_max: the range outputs are clamped to
};

// output = input[.., start : start + size * step : step, ..] along `dim`, size the output's.
void add_q8ta_slice_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                         const SliceParams& params);

}  // namespace vkd::ops
