// The geometry of aten.upsample_nearest2d / aten.upsample_bilinear2d nodes, read the same way by
// their shape rules, references and fusion pattern (compiler/ops/Upsample.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"

namespace vkd::compiler {

struct UpsampleArgs {
  int64_t out_h = 0, out_w = 0;
  double scale_h = 0, scale_w = 0;  // ATen's scale factors; 0: none (the step is in / out)
  bool align_corners = false;       // bilinear only
};

// Whether `op` is one of the bilinear ops (else nearest).
bool is_bilinear_upsample(const std::string& op);
// Whether `op` is a `.vec` overload (output_size or scale_factors, tensor input "input"; the
// default overload names it "self").
bool is_vec_upsample(const std::string& op);

// "" when node `n` (either overload: `.vec` with output_size or scale_factors, exactly one of
// them; the default overload with output_size and the optional scales_h / scales_w) fits a
// rank-4 input of `in_shape`, filling `a`; else what is wrong, naming the argument. As ATen
// computes it, a scale factor s gives the output size floor(double(in) * s) and is passed on
// to the kernel; a given output size passes no scale.
std::string read_upsample_args(const Node& n, const std::vector<int64_t>& in_shape,
                               UpsampleArgs& a);

}  // namespace vkd::compiler
