// A 1x1 convolution writing its int8 output pixel-shuffled and the 1x1 head that alone reads it,
// dequantizing to float32, as one op (a segmentation head after its last upsampling stage):
//   committed q8ta_conv2d_ps match S, a 1x1 (stride 1, padding 0, dilation 1, groups 1, weight
//   [C r^2, C_in, 1, 1], upscale_factor r >= 2) writing "mid" [N, C, H r, W r], and committed
//   q8ta_conv2d_q_dq match H (the graph's last dequantize in its store), a 1x1 (weight
//   [N_out, C, 1, 1]) reading mid through a dequantize with the scale and zero point mid was
//   written with, and nothing else reading mid
//   => q8ta_conv2d_ps_pw_q_dq: one dispatch computes each output pixel's C shuffled channels
//   and runs the head on them, so mid (r^2 times the input's pixels) is never written.
// Run once every pattern was matched, after the depthwise joins (Fuse.cpp). r = 1 would be two
// plain 1x1s, not this op. The compiler checks exactly what the runtime requires
// (runtime/ops/ShuffledHead.*): r at most 16, C a multiple of 4, C_in and C at most
// kMaxShuffledHeadChannels (past it the runtime would split the op into the two again; N_out
// has no limit, the kernel loops over it); anything else keeps the two ops apart, with the
// reason in the report. Every convolution reading a pixel-shuffled convolution's output gets a
// line (an upsampling stage feeding the next one says why it is no head).
#include <string>
#include <vector>

#include "compiler/fusion/Join.h"
#include "compiler/fusion/Patterns.h"
#include "partitioner_schema/ConvRoutes.h"

namespace vkd::compiler::fusion {
namespace {

// The largest upscale_factor the runtime's op takes (runtime/ops/ShuffledHead.cpp checks it as
// it loads the blob).
constexpr int64_t kMaxShuffledHeadUpscale = 16;

const char* const kTarget = "q8ta_conv2d_ps_pw_q_dq";

// A convolution writing its int8 output pixel-shuffled: q8ta_conv2d_ps, or q8ta_conv2d_add with
// a shuffle (reported: its store adds a residual tensor). An add of upscale_factor 1 is a plain
// convolution's residual, not this pattern.
bool is_shuffled(const Graph&, const Fusion& s) {
  return s.node.op == "q8ta_conv2d_ps" ||
         (s.node.op == "q8ta_conv2d_add" && arg_int(s.node, "upscale_factor") > 1);
}

std::string shuffled_head_target(const Fusion&) { return kTarget; }

// "" when `count` channels (`what`) fit the fused kernel, whose invocation keeps a pixel's words
// of its input and of mid in registers, every loop unrolled.
std::string check_registers(int64_t count, const std::string& what) {
  if (count <= kMaxShuffledHeadChannels) return "";
  return std::to_string(count) + " " + what + ": the fused kernel keeps a pixel's words of " +
         "them in registers, at most " + std::to_string(kMaxShuffledHeadChannels);
}

std::string check_shuffled_head(const FuseState& state, const Fusion& s, const Fusion& h) {
  const Graph& g = state.graph;
  // The reader first: most convolutions after a shuffled one are the next upsampling stage.
  std::string why = check_conv_op(h, "head", "q8ta_conv2d_q_dq",
                                  "q8ta_conv2d_q_dq (requantized, then dequantized to float32)");
  if (why.empty()) {
    why = check_conv_op(s, "pixel-shuffled convolution", "q8ta_conv2d_ps",
                        "q8ta_conv2d_ps (its shuffled int8 output, no residual add)");
  }
  if (why.empty()) why = check_pointwise_geometry(g, s, "pixel-shuffled convolution");
  if (why.empty()) why = check_pointwise_geometry(g, h, "head");
  if (!why.empty()) return why;
  const int64_t r = arg_int(s.node, "upscale_factor");
  if (r < 2) {
    return "upscale_factor " + std::to_string(r) + ": nothing is shuffled (two plain 1x1 " +
           "convolutions are no " + kTarget + ")";
  }
  if (r > kMaxShuffledHeadUpscale) {
    return "upscale_factor " + std::to_string(r) + ": the fused op shuffles by at most " +
           std::to_string(kMaxShuffledHeadUpscale);
  }
  const int64_t inputs = weight_shape(g, s).at(1);
  const int64_t channels = weight_shape(g, s).at(0) / (r * r);
  if (channels % 4 != 0) {
    return std::to_string(channels) + " channels after the shuffle, not a multiple of 4: the " +
           "fused kernel reads them in packed words of 4";
  }
  why = check_registers(inputs, "input channels");
  if (why.empty()) why = check_registers(channels, "channels after the shuffle");
  return why.empty() ? check_hidden(state, s, h, kTarget) : why;
}

// H's node: S's head (Join.h) with mid's parameters as mid_*, S's upscale_factor, then H's
// weights and output (both geometries are the 1x1's, implied).
void merge_shuffled_head(const Fusion& s, Fusion& h) {
  merge_writer_head(s, h, "mid_");
  h.node.args["upscale_factor"] = s.node.args.at("upscale_factor");
  for (const char* name : {"stride", "padding", "dilation", "groups"}) h.node.args.erase(name);
}

}  // namespace

void join_shuffled_head(FuseState& state) {
  run_join(state, {"pixel-shuffled", is_one_conv, is_shuffled, check_shuffled_head,
                   shuffled_head_target, merge_shuffled_head});
}

}  // namespace vkd::compiler::fusion
