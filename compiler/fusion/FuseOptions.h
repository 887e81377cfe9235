// What a caller of fuse_and_lower (compiler/Fuse.h) chooses; the patterns read it from their
// FuseState.
#pragma once

namespace vkd::compiler {

struct FuseOptions {
  // Fuse and lower only into backend ops the runtime has a kernel for; everything else stays
  // an edge op (what `vkd compile --partition` leaves to the host, in the form it was given).
  bool runnable_only = false;
  // Run a byte-moving pixel shuffle, a residual add or the last dequantize in the epilogue of
  // the convolution / linear before it, the first quantize in the load of the convolution
  // after it (fusion/Epilogue.cpp), a depthwise convolution with the 1x1 reading its output
  // (fusion/DepthwisePointwise.cpp), a pixel-shuffled 1x1 with the dequantizing 1x1 head
  // reading it (fusion/ShuffledHead.cpp), and an attention's Q, K, V linears as one
  // (fusion/QkvLinear.cpp); false: each its own op (`vkd compile --no-fuse-epilogue`).
  bool fuse_epilogues = true;
};

}  // namespace vkd::compiler
