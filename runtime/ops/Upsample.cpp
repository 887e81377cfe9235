// Op family: int8 upsampling (q8ta_upsample_nearest2d, q8ta_upsample_bilinear2d).
// Anatomy: push-constant struct (mirroring shaders/q8ta_upsample.glsl), the checks, the tap
// tables, add_q8ta_upsample_node, registry entries.
#include "runtime/ops/Upsample.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/Error.h"
#include "core/PackedInt8Layout.h"
#include "partitioner_schema/Interpolation.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_upsample.glsl.
struct UpsamplePush {
  int32_t chunk_count, word_count, batches;
  int32_t in_zp, out_zp;
  float in_scale, inv_out_scale;
  float t_lo, t_hi;
};

std::string op_name(UpsampleMode mode) {
  return mode == UpsampleMode::Nearest ? "q8ta_upsample_nearest2d" : "q8ta_upsample_bilinear2d";
}

// int8x4 tensors of rank 3 or 4 in one layout, the same N and C, below 2^31 elements (the
// kernel indexes with int32; the graph has made sure no size is 0).
void check_tensors(const std::string& op, const graph::GpuTensor& in, const graph::GpuTensor& out) {
  check_int8x4_tensor(op, in);
  check_int8x4_tensor(op, out);
  for (const auto* t : {&in, &out}) {
    const size_t rank = t->spec().sizes.size();
    VKD_CHECK(rank == 3 || rank == 4, ErrorCode::InvalidArgument, op, ": tensor '", t->name(), "' ",
              t->spec().describe(), " must have rank 3 or 4 ([N,] C, H, W)");
  }
  VKD_CHECK(in.spec().layout == out.spec().layout, ErrorCode::InvalidArgument, op,
            ": input and output must share their layout (", to_string(in.spec().layout), ", ",
            to_string(out.spec().layout), ")");
  const Dims4 i = in.spec().dims4(), o = out.spec().dims4();
  VKD_CHECK(in.spec().sizes.size() == out.spec().sizes.size() && i.n == o.n && i.c == o.c,
            ErrorCode::InvalidArgument, op, ": output ", out.spec().describe(),
            " must have the input's rank, batch and channels (input ", in.spec().describe(), ")");
  const int64_t limit = std::numeric_limits<int32_t>::max();
  VKD_CHECK(packed_int8_word_count(out.spec().layout, o) < limit && i.numel() < limit,
            ErrorCode::Unsupported, op, ": tensors of 2^31 or more elements are not supported");
}

void check_params(const std::string& op, const UpsampleParams& p) {
  check_quant_params(op + " input", p.input);
  check_quant_params(op + " output", p.output);
  VKD_CHECK(p.output.quant_min == -128 && p.output.quant_max == 127, ErrorCode::InvalidArgument, op,
            ": the output must use the full int8 range [-128, 127]");
  for (double s : {p.scale_h, p.scale_w}) {
    VKD_CHECK(std::isfinite(s), ErrorCode::InvalidArgument, op, ": scale factor ", s,
              " must be finite (<= 0 for none)");
  }
}

// The tap table of binding 2 (shaders/q8ta_upsample.glsl): output rows, then output columns,
// each list padded with zeros to a multiple of 4 entries. Nearest: the source index of each;
// bilinear: (i0, i1, w1, 0) of each, w1 in units of 2^-weight_bits.
struct TapTable {
  std::vector<int32_t> entries;
  int weight_bits = 0;
};

// The fewest bits that hold every weight exactly: the 20-bit weights of Interpolation.h share
// 20 - weight_bits trailing zero bits (a scale of 2 uses 0.25 and 0.75: 2 bits).
int weight_bits(const std::vector<LinearTap>& rows, const std::vector<LinearTap>& cols) {
  int bits = 0;
  for (const auto* list : {&rows, &cols}) {
    for (const LinearTap& t : *list) {
      int zeros = 0;
      while (zeros < kBilinearWeightBits && t.w1 != 0 && (t.w1 >> zeros) % 2 == 0) ++zeros;
      if (t.w1 != 0) bits = std::max(bits, kBilinearWeightBits - zeros);
    }
  }
  return bits;
}

TapTable tap_table(const Dims4& in, const Dims4& out, const UpsampleParams& p) {
  TapTable table;
  auto pad = [&](int64_t count, int64_t per_entry) {
    table.entries.resize(table.entries.size() + per_entry * (align_up(count, 4) - count), 0);
  };
  if (p.mode == UpsampleMode::Nearest) {
    const NearestSources src = nearest_sources(in.h, in.w, out.h, out.w, p.scale_h, p.scale_w);
    for (const auto* list : {&src.rows, &src.cols}) {
      table.entries.insert(table.entries.end(), list->begin(), list->end());
      pad(static_cast<int64_t>(list->size()), 1);
    }
    return table;
  }
  const auto rows = bilinear_taps(in.h, out.h, p.align_corners, p.scale_h);
  const auto cols = bilinear_taps(in.w, out.w, p.align_corners, p.scale_w);
  table.weight_bits = weight_bits(rows, cols);
  for (const auto* list : {&rows, &cols}) {
    for (const LinearTap& t : *list) {
      table.entries.insert(table.entries.end(),
                           {t.i0, t.i1, t.w1 >> (kBilinearWeightBits - table.weight_bits), 0});
    }
    pad(static_cast<int64_t>(list->size()), 4);
  }
  return table;
}

// Variant index of the kernel: 0 nearest copy, 1 nearest requantized, 2 bilinear.
int kind_index(const UpsampleParams& p) {
  if (p.mode == UpsampleMode::Bilinear) return 2;
  const bool same = p.input.scale == p.output.scale && p.input.zero_point == p.output.zero_point;
  return same ? 0 : 1;
}

}  // namespace

void add_q8ta_upsample_node(graph::ComputeGraph& graph, graph::ValueRef input,
                            graph::ValueRef output, const UpsampleParams& p) {
  const std::string op = op_name(p.mode);
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_tensors(op, in, out);
  check_params(op, p);
  const Dims4 i = in.spec().dims4(), o = out.spec().dims4();

  const TapTable taps_made = tap_table(i, o, p);
  auto table = std::make_shared<const std::vector<int32_t>>(taps_made.entries);
  const uint64_t table_bytes = table->size() * sizeof(int32_t);
  const std::string name = (out.name().empty() ? op : out.name()) + ".taps";
  const graph::ValueRef taps = graph.add_constant(
      {{static_cast<int64_t>(table->size())},
       DType::Int32,
       StorageType::Buffer,
       MemoryLayout::WidthPacked},
      name,
      [table] {
        std::vector<uint8_t> bytes(table->size() * sizeof(int32_t));
        std::memcpy(bytes.data(), table->data(), bytes.size());
        return bytes;
      },
      table_bytes);

  const int kind = kind_index(p);
  // Bilinear: the accumulator carries 2^(2 weight_bits) times the dequantized difference.
  const int shift = 2 * taps_made.weight_bits;
  const float in_scale = kind == 2 ? std::ldexp(p.input.scale, -shift) : p.input.scale;
  VKD_CHECK(in_scale >= std::numeric_limits<float>::min(), ErrorCode::Unsupported, op,
            ": input scale ", p.input.scale, " is too small (scale * 2^-", shift,
            " must be a normal float32)");
  const int64_t words = packed_int8_word_count(out.spec().layout, o);
  const int64_t chunks = div_up(words, 4);
  const UpsamplePush push{int32_t(chunks),
                          int32_t(words),
                          int32_t(o.n),
                          p.input.zero_point,
                          p.output.zero_point,
                          in_scale,
                          inverse_scale(p.output.scale),
                          float(-128 - p.output.zero_point),
                          float(127 - p.output.zero_point)};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::variants::q8ta_upsample[kind][int8_layout_index(out.spec().layout)];
  node.bindings = {output, input, taps};
  node.push_constants = graph::push_constant_bytes(push);
  node.spec_constants = {uint32_t(o.c), uint32_t(o.h), uint32_t(o.w),
                         uint32_t(i.h), uint32_t(i.w), uint32_t(taps_made.weight_bits)};
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(chunks));
  graph.add_node(std::move(node));
}

// --- registry entries -------------------------------------------------------------

namespace {

UpsampleParams blob_params(const OpCall& call, UpsampleMode mode) {
  UpsampleParams p;
  p.mode = mode;
  p.input = call.quant("input");
  p.output = call.quant("output");
  p.scale_h = call.float_arg("scales_h");
  p.scale_w = call.float_arg("scales_w");
  call.set_zero_point("input", p.input.zero_point);
  call.set_zero_point("output", p.output.zero_point);
  return p;
}

void build_q8ta_upsample_nearest2d(const OpCall& call) {
  add_q8ta_upsample_node(call.graph(), call.tensor("input"), call.tensor("output"),
                         blob_params(call, UpsampleMode::Nearest));
}

void build_q8ta_upsample_bilinear2d(const OpCall& call) {
  UpsampleParams p = blob_params(call, UpsampleMode::Bilinear);
  p.align_corners = call.bool_arg("align_corners");
  add_q8ta_upsample_node(call.graph(), call.tensor("input"), call.tensor("output"), p);
}

}  // namespace

void register_upsample_ops(OpRegistry& registry) {
  registry.add("q8ta_upsample_nearest2d", build_q8ta_upsample_nearest2d);
  registry.add("q8ta_upsample_bilinear2d", build_q8ta_upsample_bilinear2d);
}

}  // namespace vkd::ops
