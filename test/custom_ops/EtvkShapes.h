// The reference backend's PERF shapes and its own latency for each, so that every `etvk/` PERF
// case measures the same problem and prints the ratio. Figures copied from
// shared/reference/etvk-perf-shapes-h100.md (beside this checkout: ExecuTorch Vulkan at commit
// cff6f4dd, its custom-op binaries on an NVIDIA H100 80GB HBM3, driver 580.159.04, 2026-11-24;
// per shape the fastest of its kernel variants, µs per invocation with the op chained N times
// in one execute and GPU timestamps; its empty-work floor in that method is about 5.2 µs).
// The one table of those figures: the cases in conv_cases.cpp, linear_cases.cpp and
// pixel_shuffle_cases.cpp read them from here.
#pragma once

#include <cstdint>

namespace vkd::custom_ops::etvk {

// q8ta_linear: input [M, K] x weight [N, K], int8 in and out.
struct LinearShape {
  int64_t m, k, n;
  double reference_us;
};
inline constexpr LinearShape kLinear[] = {
    {1, 512, 512, 5.6},       {1, 2048, 2048, 6.7},     {1, 512, 9059, 6.6},
    {256, 2048, 2048, 141.8}, {512, 2048, 2048, 177.1}, {1024, 2048, 2048, 330.3},
};

// q8ta_conv2d / _pw / _dw: input [1, C_in, H, W], C_out output channels, square kernel k,
// stride s, padding p, dilation d, groups g.
struct ConvShape {
  const char* test;  // the reference's test: "pw", "conv" or "dw"
  int64_t c_in, h, w, c_out, k;
  int32_t s, p, d, g;
  double reference_us;
};
inline constexpr ConvShape kConv[] = {
    {"pw", 480, 8, 8, 160, 1, 1, 0, 1, 1, 24.9},
    {"pw", 48, 256, 256, 22, 1, 1, 0, 1, 1, 13.8},
    {"pw", 48, 128, 128, 48, 1, 1, 0, 1, 1, 9.2},
    {"pw", 128, 128, 128, 128, 1, 1, 0, 1, 1, 26.2},
    {"pw", 576, 128, 128, 64, 1, 1, 0, 1, 1, 56.7},
    {"conv", 3, 256, 256, 32, 3, 1, 0, 1, 1, 14.5},
    {"conv", 32, 128, 128, 64, 3, 1, 1, 1, 1, 38.8},
    {"conv", 64, 128, 128, 64, 3, 1, 1, 1, 1, 65.2},
    {"conv", 64, 128, 128, 64, 3, 1, 1, 1, 2, 40.0},
    {"conv", 96, 128, 128, 96, 3, 2, 1, 1, 3, 26.5},
    {"conv", 128, 128, 128, 128, 5, 2, 2, 1, 4, 67.9},
    {"conv", 128, 256, 256, 128, 5, 2, 2, 1, 4, 176.0},
    {"conv", 64, 256, 256, 64, 3, 1, 1, 1, 2, 127.4},
    {"conv", 512, 7, 7, 512, 3, 1, 1, 1, 1, 203.5},
    {"conv", 1024, 14, 14, 2048, 1, 2, 0, 1, 1, 54.0},
    {"dw", 128, 128, 128, 128, 3, 1, 1, 1, 128, 12.7},
    {"dw", 64, 256, 256, 64, 3, 1, 1, 1, 64, 19.9},
    {"dw", 288, 16, 16, 288, 3, 1, 1, 1, 288, 7.1},
    {"dw", 32, 128, 128, 32, 3, 1, 2, 1, 32, 7.4},
};

// q8ta_pixel_shuffle, r = 2, same input and output quantization: input [1, C, H, W].
struct PixelShuffleShape {
  int64_t c, h, w;
  double reference_us;
};
inline constexpr PixelShuffleShape kPixelShuffle[] = {
    {96, 16, 9, 5.2}, {96, 32, 18, 5.1}, {96, 64, 36, 5.5}, {96, 128, 72, 7.5}};

}  // namespace vkd::custom_ops::etvk
