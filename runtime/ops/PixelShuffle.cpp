// Op family: pixel shuffle, float (pixel_shuffle) and packed int8x4 (q8ta_pixel_shuffle).
// Anatomy: push-constant structs (mirroring the shaders), the shared shape check, then
// add_*_node: validate, pick the variant, add the node; the registry entries at the end.
#include "runtime/ops/PixelShuffle.h"

#include <limits>

#include "core/Error.h"
#include "core/FloatLayout.h"
#include "core/PackedInt8Layout.h"
#include "runtime/ops/OpRegistry.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_pixel_shuffle.glsl.
struct Int8ShufflePush {
  int32_t item_count;
  MovedRequantPush requant;
};

// Mirrors `Params` in shaders/pixel_shuffle.glsl.
struct FloatShufflePush {
  std::array<int32_t, 4> out_sizes;
  std::array<int32_t, 4> out_meta;
  std::array<int32_t, 4> in_meta;
  int32_t group_count;
  int32_t in_c;
  int32_t out_pd;
};

// Rank 3 or 4, input channels divisible by r^2 and output sizes (N, C / r^2, H r, W r), all
// within int32 (the shaders index with 32-bit integers).
void check_shuffle_shapes(const std::string& op, const graph::GpuTensor& in,
                          const graph::GpuTensor& out, int64_t r) {
  VKD_CHECK(r >= 1, ErrorCode::InvalidArgument, op, ": upscale_factor must be >= 1, got ", r);
  const auto& is = in.spec().sizes;
  const auto& os = out.spec().sizes;
  VKD_CHECK(is.size() >= 3 && is.size() == os.size(), ErrorCode::InvalidArgument, op, ": input '",
            in.name(), "' ", in.spec().describe(), " and output '", out.name(), "' ",
            out.spec().describe(), " must both have rank 3 or 4");
  VKD_CHECK(r <= 1024, ErrorCode::InvalidArgument, op, ": upscale_factor ", r, " is too large");
  const Dims4 d = in.spec().dims4();
  VKD_CHECK(d.c % (r * r) == 0, ErrorCode::InvalidArgument, op, ": input '", in.name(), "' has ",
            d.c, " channels, not divisible by upscale_factor^2 = ", r * r);
  const Dims4 want{d.n, d.c / (r * r), d.h * r, d.w * r};
  VKD_CHECK(out.spec().dims4() == want, ErrorCode::InvalidArgument, op, ": output '", out.name(),
            "' ", out.spec().describe(), " must have sizes [", want.n, ",", want.c, ",", want.h,
            ",", want.w, "] for input ", in.spec().describe(), " and upscale_factor ", r);
  const int64_t limit = std::numeric_limits<int32_t>::max();
  VKD_CHECK(out.spec().numel() < limit && in.spec().numel() < limit, ErrorCode::Unsupported, op,
            ": tensors of 2^31 or more elements are not supported");
}

}  // namespace

void add_q8ta_pixel_shuffle_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                 const QuantParams& in_q, int64_t upscale_factor,
                                 graph::ValueRef output, const QuantParams& out_q) {
  const std::string op = "q8ta_pixel_shuffle";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_int8x4_tensor(op, in);
  check_int8x4_tensor(op, out);
  for (const auto* t : {&in, &out}) {
    VKD_CHECK(is_channels_packed_int8(t->spec()), ErrorCode::InvalidArgument, op, ": tensor '",
              t->name(), "' ", t->spec().describe(),
              " must be in a channels-packed int8 layout (4W4C or 4C1W)");
  }
  check_shuffle_shapes(op, in, out, upscale_factor);
  const bool requant = check_moved_quant(op, in_q, out_q);

  const Dims4 o = out.spec().dims4();
  const Dims4 i = in.spec().dims4();
  const int64_t words = packed_int8_word_count(out.spec().layout, o);
  VKD_CHECK(words < (int64_t(1) << 31), ErrorCode::Unsupported, op, ": ", words,
            " output words exceed the 2^31 the kernel can index");
  // r = 2: one invocation per input position and output channel block (2 x 2 output words; a
  // 4W4C output pads the input width to even, the padding pair included); else one per word.
  const int64_t c4 = div_up(o.c, 4);
  const int64_t items = upscale_factor != 2 ? words
                        : out.spec().layout == MemoryLayout::PackedInt8_4C1W
                            ? i.n * i.h * c4 * i.w
                            : i.n * i.h * c4 * align_up(i.w, 2);
  // Same parameters (requant false): the byte-shuffle variant, no arithmetic.
  const Int8ShufflePush push{int32_t(items), moved_requant_push(in_q, out_q)};
  const auto index = [](MemoryLayout l) { return l == MemoryLayout::PackedInt8_4W4C ? 0 : 1; };
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::q8ta_pixel_shuffle[index(in.spec().layout)]
                                                     [index(out.spec().layout)][requant ? 1 : 0];
  node.bindings = {output, input};
  node.push_constants = graph::push_constant_bytes(push);
  // r and the geometry: every division in the kernel is by a constant.
  node.spec_constants = {uint32_t(upscale_factor),
                         uint32_t(o.c),
                         uint32_t(o.h),
                         uint32_t(o.w),
                         uint32_t(i.h),
                         uint32_t(i.w)};
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(items));
  graph.add_node(std::move(node));
}

void add_pixel_shuffle_node(graph::ComputeGraph& graph, graph::ValueRef input,
                            int64_t upscale_factor, graph::ValueRef output) {
  const std::string op = "pixel_shuffle";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  for (const auto* t : {&in, &out}) {
    const DType dt = t->spec().dtype;
    VKD_CHECK((dt == DType::Float32 || dt == DType::Float16) && !is_packed_int8(t->spec().layout),
              ErrorCode::InvalidArgument, op, ": tensor '", t->name(), "' ", t->spec().describe(),
              " must be float32 or float16 in a float layout");
  }
  VKD_CHECK(in.spec().dtype == out.spec().dtype, ErrorCode::InvalidArgument, op,
            ": input and output dtypes differ (", in.spec().describe(), " vs ",
            out.spec().describe(), ")");
  check_shuffle_shapes(op, in, out, upscale_factor);

  const Dims4 o = out.spec().dims4();
  const int pd = packed_dim_nchw(out.spec().layout);
  // One invocation per 4 output elements along the packed dim (a texel).
  const int64_t packed = std::array<int64_t, 4>{o.n, o.c, o.h, o.w}[pd];
  const int64_t groups = o.numel() / packed * div_up(packed, 4);
  const FloatShufflePush push{
      nchw_sizes(o),   float_tile_meta(out.spec()),  float_tile_meta(in.spec()),
      int32_t(groups), int32_t(in.spec().dims4().c), pd};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::pixel_shuffle[storage_index(in.spec().storage)][storage_index(
      out.spec().storage)][in.spec().dtype == DType::Float16 ? 1 : 0];
  node.bindings = {output, input};
  node.push_constants = graph::push_constant_bytes(push);
  node.spec_constants = {uint32_t(upscale_factor)};
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(groups));
  graph.add_node(std::move(node));
}

// --- registry entries -------------------------------------------------------------

namespace {

void build_q8ta_pixel_shuffle(const OpCall& call) {
  const QuantParams in_q = call.quant("input");
  const QuantParams out_q = call.quant("output");
  call.set_zero_point("input", in_q.zero_point);
  call.set_zero_point("output", out_q.zero_point);
  add_q8ta_pixel_shuffle_node(call.graph(), call.tensor("input"), in_q,
                              call.int_arg("upscale_factor"), call.tensor("output"), out_q);
}

void build_pixel_shuffle(const OpCall& call) {
  add_pixel_shuffle_node(call.graph(), call.tensor("input"), call.int_arg("upscale_factor"),
                         call.tensor("output"));
}

}  // namespace

void register_pixel_shuffle_ops(OpRegistry& registry) {
  registry.add("q8ta_pixel_shuffle", build_q8ta_pixel_shuffle);
  registry.add("pixel_shuffle", build_pixel_shuffle);
}

}  // namespace vkd::ops
