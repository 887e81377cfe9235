// The route rules q8ta_conv2d's runtime (runtime/ops/ConvPlan.cpp, Auto) and the compiler's
// fusions (compiler/fusion/Epilogue.cpp: whether folding the first quantize keeps the fast
// route; compiler/fusion/DepthwisePointwise.cpp and the shuffled head's join: what the fused
// kernels take) must agree on, so they are written once.
#pragma once

#include <cstdint>

namespace vkd {

// A groups-1 convolution that is not 1x1 runs im2col + GEMM rather than the direct kernel when
// an output sums at least this many products (C_in x KH x KW): the runtime's tuning tables
// (runtime/ops/ConvPlan.cpp) take it as im2col_min_products; measured: docs/BENCHMARKS.md,
// "Convolution plan thresholds".
constexpr int64_t kIm2colMinProducts = 64;

// The most depthwise channels q8ta_conv2d_dw_pw's fused kernel holds per output tile in shared
// memory (16 bytes per 4 channels and tile): the runtime refuses a wider layer
// (runtime/ops/DepthwisePointwise.h), the compiler fuses none.
constexpr int64_t kMaxDepthwisePointwiseChannels = 1024;

// The most input channels and mid channels (each) of q8ta_conv2d_ps_pw_q_dq's kernel, which
// keeps an invocation's input words and mid words in registers with every loop unrolled
// (runtime/ops/ShuffledHead.h): the runtime runs a wider pair as two ops, the compiler fuses
// none.
constexpr int64_t kMaxShuffledHeadChannels = 256;

}  // namespace vkd
