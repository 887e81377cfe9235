// Op family: int8 concatenation and slicing (q8ta_cat, q8ta_slice), one kernel for both.
#include "runtime/ops/Concat.h"

#include <algorithm>
#include <array>
#include <string>

#include "core/Error.h"
#include "core/PackedInt8Layout.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/KernelLimits.h"

namespace vkd::ops {
namespace {

// Inputs one dispatch of shaders/q8ta_cat.glsl binds.
// Inputs a dispatch binds (the shader's WINDOW): 4, or 2 where the 4-input kernel's storage
// buffers (the inputs and the output) exceed a stage's (the Android baseline's 4).
constexpr size_t kMaxInputs = 4;
size_t window_inputs(const vk::DeviceProfile& profile) {
  return vk::fits_storage_buffers(profile, shaders::variants::q8ta_cat[0][0]) ? kMaxInputs : 2;
}

// Mirrors `Params` in shaders/q8ta_cat.glsl.
struct CatPush {
  std::array<int32_t, 4> out_sizes, in_extent, in_lo, in_zp;
  std::array<float, 4> in_scale;
  int32_t count, own_lo, own_hi, src_start, src_step, tile_count, requant, out_zp;
  float inv_out_scale, t_min, t_max;
};

// One input of a dispatch: its tensor, where it starts along the dim in the output, its size
// along the dim, its quantization, and whether its producer writes it in place (a view of its
// part of the output: nothing to copy).
struct CatInput {
  graph::ValueRef tensor;
  int64_t lo, extent;
  QuantParams quant;
  bool in_place = false;
};

// The geometry every dispatch shares.
struct CatGeometry {
  Dims4 out;
  int dim4;  // the dim in the 4-D view (0 N .. 3 W)
  int64_t src_start = 0, src_step = 1;
  QuantParams output;
};

int64_t dim4_size(const Dims4& d, int dim4) {
  const std::array<int64_t, 4> s = {d.n, d.c, d.h, d.w};
  return s[static_cast<size_t>(dim4)];
}

// Sizes of the 4-D view with the size along `dim4` replaced.
Dims4 with_dim4(Dims4 d, int dim4, int64_t size) {
  int64_t* s[4] = {&d.n, &d.c, &d.h, &d.w};
  *s[dim4] = size;
  return d;
}

// Copied byte for byte: the requantization would give every int8 value back.
bool copies_bytes(const QuantParams& in, const QuantParams& out) {
  return in.scale == out.scale && in.zero_point == out.zero_point && out.quant_min == -128 &&
         out.quant_max == 127;
}

// Inputs, output and dim checked: every tensor int8x4 in the output's layout and rank, sizes
// equal but along `dim`. Returns the dim in the 4-D view.
int check_tensors(const std::string& op, const graph::ComputeGraph& graph,
                  const std::vector<graph::ValueRef>& inputs, graph::ValueRef output, int32_t dim) {
  const graph::GpuTensor& out = graph.tensor(output);
  check_int8x4_tensor(op, out);
  const size_t rank = out.spec().sizes.size();
  VKD_CHECK(dim >= 0 && static_cast<size_t>(dim) < rank, ErrorCode::InvalidArgument, op, ": dim ",
            dim, " is outside [0, ", rank, ") for output '", out.name(), "' ",
            out.spec().describe());
  const int dim4 = dim + 4 - static_cast<int>(rank);
  for (graph::ValueRef ref : inputs) {
    const graph::GpuTensor& in = graph.tensor(ref);
    check_int8x4_tensor(op, in);
    VKD_CHECK(in.spec().layout == out.spec().layout && in.spec().sizes.size() == rank,
              ErrorCode::InvalidArgument, op, ": input '", in.name(), "' ", in.spec().describe(),
              " must share the output's layout and rank (", out.spec().describe(), ")");
    const Dims4 d = in.spec().dims4();
    VKD_CHECK(with_dim4(d, dim4, 1) == with_dim4(out.spec().dims4(), dim4, 1),
              ErrorCode::InvalidArgument, op, ": input '", in.name(), "' ", in.spec().describe(),
              " differs from output ", out.spec().describe(), " in a size other than dim ", dim);
    VKD_CHECK(packed_int8_word_count(in.spec().layout, d) < (int64_t(1) << 31),
              ErrorCode::Unsupported, op, ": input '", in.name(),
              "' exceeds the 2^31 words a "
              "kernel can index");
  }
  VKD_CHECK(packed_int8_word_count(out.spec().layout, out.spec().dims4()) < (int64_t(1) << 31),
            ErrorCode::Unsupported, op, ": output '", out.name(),
            "' exceeds the 2^31 words a "
            "kernel can index");
  return dim4;
}

// One dispatch over inputs `window` (at most window_inputs), writing the output tiles that
// start along the dim in [own_lo, own_hi).
void add_dispatch(graph::ComputeGraph& graph, const std::string& op, graph::ValueRef output,
                  const CatGeometry& geo, const std::vector<CatInput>& window, int64_t own_lo,
                  int64_t own_hi) {
  const TensorSpec& so = graph.spec(output);
  const TileWalk walk = choose_tile_walk(geo.out, so, so);
  const QuantParams& q = geo.output;
  CatPush push{};
  push.out_sizes = nchw_sizes(geo.out);
  std::vector<graph::ValueRef> bindings = {output};
  const size_t slots = window_inputs(graph.profile());
  for (size_t k = 0; k < kMaxInputs; ++k) {
    const CatInput& in = window[std::min(k, window.size() - 1)];
    if (k < slots) bindings.push_back(in.tensor);  // unused slots repeat the last input
    push.in_extent[k] = static_cast<int32_t>(in.extent);
    push.in_lo[k] = static_cast<int32_t>(in.lo);
    push.in_zp[k] = in.quant.zero_point;
    push.in_scale[k] = in.quant.scale;
    if (k < window.size() && !copies_bytes(in.quant, q)) push.requant |= 1 << k;
  }
  push.count = static_cast<int32_t>(window.size());
  push.own_lo = static_cast<int32_t>(own_lo);
  push.own_hi = static_cast<int32_t>(own_hi);
  push.src_start = static_cast<int32_t>(geo.src_start);
  push.src_step = static_cast<int32_t>(geo.src_step);
  push.tile_count = static_cast<int32_t>(walk.items);
  push.out_zp = q.zero_point;
  push.inv_out_scale = inverse_scale(q.scale);
  push.t_min = static_cast<float>(q.quant_min - q.zero_point);
  push.t_max = static_cast<float>(q.quant_max - q.zero_point);
  add_tile_node(
      graph, op,
      shaders::variants::q8ta_cat[int8_layout_index(so.layout)][slots == kMaxInputs ? 0 : 1],
      std::move(bindings), graph::push_constant_bytes(push), walk,
      {static_cast<uint32_t>(geo.dim4)});
}

// The output ranges along the dim (tile-aligned, merged) holding an element of an input that
// is not written in place: what the kernel still has to write. A tile straddling an input
// written in place rewrites that input's bytes with themselves (it reads them to assemble the
// tile), which is harmless.
std::vector<std::pair<int64_t, int64_t>> copied_ranges(const std::vector<CatInput>& inputs,
                                                       int64_t span, int64_t total) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const CatInput& in : inputs) {
    if (in.in_place) continue;
    const int64_t a = in.lo / span * span;
    const int64_t b = std::min(total, div_up(in.lo + in.extent, span) * span);
    if (!ranges.empty() && ranges.back().second >= a) {
      ranges.back().second = std::max(ranges.back().second, b);
    } else {
      ranges.emplace_back(a, b);
    }
  }
  return ranges;
}

// The dispatches of a cat of `inputs` (in order along the dim): windows of up to
// window_inputs consecutive inputs. A tile (`span` elements along the dim: 1 for N, else 4)
// holds elements of up to 4 inputs, so a window owns the tiles starting from where the previous
// one stopped up to the last tile that needs no input after the window; a window of 4 always
// owns at least one, as its first input holds the first owned tile's start and each input is
// at least one element long. A window of 2 owns none where a tile holds elements of 3 inputs
// (inputs of 1-2 channels): such a cat is refused on those devices.
// A window dispatches over the parts of its tiles that copied_ranges leaves (none when all its
// inputs are written in place).
void add_cat_dispatches(graph::ComputeGraph& graph, const std::string& op, graph::ValueRef output,
                        const CatGeometry& geo, const std::vector<CatInput>& inputs) {
  const int64_t total = dim4_size(geo.out, geo.dim4);
  const int64_t span = geo.dim4 == 0 ? 1 : 4;
  const auto copied = copied_ranges(inputs, span, total);
  int64_t own_lo = 0;
  while (own_lo < total) {
    size_t first = 0;
    while (first + 1 < inputs.size() && inputs[first + 1].lo <= own_lo) ++first;
    const size_t end = std::min(first + window_inputs(graph.profile()), inputs.size());
    const int64_t own_hi = end == inputs.size() ? total : inputs[end].lo / span * span;
    VKD_CHECK(own_hi > own_lo, ErrorCode::Unsupported, op, ": a tile of the output at index ",
              own_lo, " holds elements of more than ", end - first,
              " inputs, the most a dispatch binds on device '", graph.profile().name,
              "' (maxPerStageDescriptorStorageBuffers ",
              graph.profile().max_per_stage_storage_buffers, ")");
    const std::vector<CatInput> window(inputs.begin() + static_cast<long>(first),
                                       inputs.begin() + static_cast<long>(end));
    for (const auto& [a, b] : copied) {
      const int64_t lo = std::max(own_lo, a), hi = std::min(own_hi, b);
      if (lo < hi) add_dispatch(graph, op, output, geo, window, lo, hi);
    }
    own_lo = own_hi;
  }
}

// Whether a tile (`span` elements along the dim) holds elements of 3 or more of `inputs`: no
// window of 2 inputs can write it.
bool tile_holds_three(const std::vector<CatInput>& inputs, int64_t span) {
  for (size_t i = 2; i < inputs.size(); ++i) {
    const CatInput& first = inputs[i - 2];
    if ((first.lo + first.extent - 1) / span == inputs[i].lo / span) return true;
  }
  return false;
}

// Input `in` of a cat into `output` written in place by its producer: its part of the output
// is one contiguous byte range (PackedInt8Layout.h) and it is quantized like the output.
bool write_in_place(graph::ComputeGraph& graph, graph::ValueRef output, const CatGeometry& geo,
                    const CatInput& in) {
  if (!copies_bytes(in.quant, geo.output)) return false;
  const TensorSpec& s = graph.spec(output);
  const int64_t offset = contiguous_slice_offset(s.layout, geo.out, geo.dim4, in.lo, in.extent);
  return offset >= 0 && graph.alias(in.tensor, output, static_cast<uint64_t>(offset));
}

}  // namespace

void add_q8ta_cat_node(graph::ComputeGraph& graph, const std::vector<graph::ValueRef>& inputs,
                       graph::ValueRef output, const CatParams& params) {
  const std::string op = "q8ta_cat";
  VKD_CHECK(!inputs.empty(), ErrorCode::InvalidArgument, op, ": needs at least one input");
  VKD_CHECK(params.inputs.size() == inputs.size(), ErrorCode::InvalidArgument, op, ": ",
            params.inputs.size(), " input quantizations for ", inputs.size(), " inputs");
  CatGeometry geo;
  geo.dim4 = check_tensors(op, graph, inputs, output, params.dim);
  geo.out = graph.spec(output).dims4();
  geo.output = params.output;
  check_quant_params(op, params.output);
  std::vector<CatInput> list;
  int64_t lo = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_quant_params(op, params.inputs[i]);
    const int64_t extent = dim4_size(graph.spec(inputs[i]).dims4(), geo.dim4);
    list.push_back({inputs[i], lo, extent, params.inputs[i]});
    lo += extent;
  }
  VKD_CHECK(lo == dim4_size(geo.out, geo.dim4), ErrorCode::InvalidArgument, op,
            ": the inputs' sizes along dim ", params.dim, " add up to ", lo, ", the output '",
            graph.tensor(output).name(), "' ", graph.spec(output).describe(), " has ",
            dim4_size(geo.out, geo.dim4));
  if (list.size() > 2 && window_inputs(graph.profile()) < kMaxInputs) {
    const std::string problem =
        vk::storage_buffers_problem(graph.profile(), shaders::variants::q8ta_cat[0][0]);
    if (tile_holds_three(list, geo.dim4 == 0 ? 1 : 4)) {
      // Where a tile holds 3 or more inputs (inputs of 1-2 channels): cats of 2 inputs in a
      // chain, each into the output's quantization, so the later steps copy what the earlier
      // ones wrote byte for byte (an int8 value requantized to its own scale and zero point is
      // itself): the same bits, the output's prefix copied once more per step.
      note_way_down(graph, op, output, "a chain of 2-input cats", problem);
      graph::ValueRef joined = inputs[0];
      QuantParams joined_quant = params.inputs[0];
      for (size_t i = 1; i < inputs.size(); ++i) {
        TensorSpec spec = graph.spec(output);
        spec.sizes[static_cast<size_t>(params.dim)] = list[i].lo + list[i].extent;
        const graph::ValueRef next =
            i + 1 == inputs.size()
                ? output
                : graph.add_tensor(spec,
                                   own_tensor_name(graph, output, op, ".cat" + std::to_string(i)));
        CatParams pair{params.dim, {joined_quant, params.inputs[i]}, params.output};
        add_q8ta_cat_node(graph, {joined, inputs[i]}, next, pair);
        joined = next;
        joined_quant = params.output;
      }
      return;
    }
    note_way_down(graph, op, output, "windows of 2 inputs, a dispatch each (WINDOW 2)", problem);
  }
  for (CatInput& in : list) in.in_place = write_in_place(graph, output, geo, in);
  add_cat_dispatches(graph, op, output, geo, list);
}

void add_q8ta_slice_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                         const SliceParams& params) {
  const std::string op = "q8ta_slice";
  CatGeometry geo;
  geo.dim4 = check_tensors(op, graph, {input}, output, params.dim);
  geo.out = graph.spec(output).dims4();
  geo.output = params.output;
  check_quant_params(op, params.input);
  check_quant_params(op, params.output);
  const int64_t in_size = dim4_size(graph.spec(input).dims4(), geo.dim4);
  const int64_t out_size = dim4_size(geo.out, geo.dim4);
  geo.src_start = params.start;
  geo.src_step = out_size == 1 ? 1 : params.step;  // one element: the step is never used
  VKD_CHECK(params.step >= 1 && params.start >= 0 &&
                params.start + (out_size - 1) * params.step < in_size,
            ErrorCode::InvalidArgument, op, ": start ", params.start, " and step ", params.step,
            " take ", out_size, " elements along dim ", params.dim, " from input '",
            graph.tensor(input).name(), "' ", graph.spec(input).describe(), ", which has ", in_size,
            " (need start >= 0, step >= 1, start + (", out_size, " - 1) * step < ", in_size, ")");
  // Quantized like its input and one contiguous byte range of it: a view, no kernel.
  if (copies_bytes(params.input, params.output) && geo.src_step == 1) {
    const int64_t offset = contiguous_slice_offset(
        graph.spec(input).layout, graph.spec(input).dims4(), geo.dim4, geo.src_start, out_size);
    if (offset >= 0 && graph.alias(output, input, static_cast<uint64_t>(offset))) return;
  }
  add_dispatch(graph, op, output, geo, {{input, 0, in_size, params.input}}, 0, out_size);
}

// --- registry entries -------------------------------------------------------------

namespace {

// The output quantization: scale, zero point and the range outputs are clamped to.
QuantParams output_quant(const OpCall& call) {
  QuantParams q = call.quant("output");
  q.quant_min = call.int32_arg("quant_min", -128, 127);
  q.quant_max = call.int32_arg("quant_max", -128, 127);
  call.set_zero_point("output", q.zero_point);
  return q;
}

void build_cat(const OpCall& call) {
  CatParams p;
  p.dim = call.int32_arg("dim", 0, 3);
  const std::vector<graph::ValueRef> inputs = call.tensor_list("inputs");
  const std::vector<double> scales = call.float_list("input_scales");
  const std::vector<int64_t> zero_points = call.int_list("input_zero_points");
  VKD_CHECK(scales.size() == inputs.size() && zero_points.size() == inputs.size(),
            ErrorCode::InvalidArgument, call.label(), ": ", inputs.size(), " inputs, ",
            scales.size(), " input_scales and ", zero_points.size(),
            " input_zero_points (one of each per input)");
  for (size_t i = 0; i < inputs.size(); ++i) {
    VKD_CHECK(zero_points[i] >= -128 && zero_points[i] <= 127, ErrorCode::InvalidArgument,
              call.label(), ": input_zero_points[", i, "] is ", zero_points[i],
              ", outside [-128, 127]");
    p.inputs.push_back({static_cast<float>(scales[i]), static_cast<int32_t>(zero_points[i])});
    call.graph().set_zero_point(inputs[i], p.inputs.back().zero_point);
  }
  p.output = output_quant(call);
  add_q8ta_cat_node(call.graph(), inputs, call.tensor("output"), p);
}

void build_slice(const OpCall& call) {
  SliceParams p;
  p.dim = call.int32_arg("dim", 0, 3);
  p.start = call.int_arg("start");
  p.step = call.int_arg("step");
  p.input = call.quant("input");
  call.set_zero_point("input", p.input.zero_point);
  p.output = output_quant(call);
  add_q8ta_slice_node(call.graph(), call.tensor("input"), call.tensor("output"), p);
}

}  // namespace

void register_concat_ops(OpRegistry& registry) {
  registry.add("q8ta_cat", build_cat);
  registry.add("q8ta_slice", build_slice);
}

}  // namespace vkd::ops
