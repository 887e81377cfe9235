// The route rules q8ta_conv2d's runtime (runtime/ops/Conv2d.cpp, Auto) and the compiler's
// fusions (compiler/fusion/Epilogue.cpp: whether folding the first quantize keeps the fast
// route; compiler/fusion/DepthwisePointwise.cpp and the shuffled head's join: what the fused
// kernels take) must agree on, so they are written once.
#pragma once

#include <cstdint>

namespace vkd {

// A groups-1 convolution that is not 1x1 runs im2col + GEMM rather than the direct kernel when
// an output sums at least this many products (C_in x KH x KW). Measured on an H100 (GPU us,
// direct vs im2col + cooperative-matrix GEMM; docs/BENCHMARKS.md): ResNet-18's 3x3 layers
// 33.8 / 18.2 at 64x56x56, 65.6 / 24.3 at 128x28x28, 123.5 / 37.4 at 256x14x14, 239.2 / 61.2
// at 512x7x7; 32 -> 64 channels at 64x64 19.8 / 14.7; but the 3-channel stem (27 products)
// 7.3 / 11.0, where the gather and a second dispatch cost more than the tiny GEMM saves.
// On lavapipe (dot-product GEMM) the two were within 15% of each other.
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
