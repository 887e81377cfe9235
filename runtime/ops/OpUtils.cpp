#include "runtime/ops/OpUtils.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/Env.h"
#include "core/Error.h"
#include "core/FloatLayout.h"
#include "core/PackedInt8Layout.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {

void check_quant_params(const std::string& op, const QuantParams& q) {
  VKD_CHECK(std::isfinite(q.scale) && q.scale > 0.0f, ErrorCode::InvalidArgument, op,
            ": scale must be finite and > 0, got ", q.scale);
  VKD_CHECK(-128 <= q.quant_min && q.quant_min <= q.quant_max && q.quant_max <= 127,
            ErrorCode::InvalidArgument, op, ": need -128 <= quant_min <= quant_max <= 127, got [",
            q.quant_min, ", ", q.quant_max, "]");
  VKD_CHECK(q.quant_min <= q.zero_point && q.zero_point <= q.quant_max, ErrorCode::InvalidArgument,
            op, ": zero_point ", q.zero_point, " outside [quant_min, quant_max] = [", q.quant_min,
            ", ", q.quant_max, "]");
  VKD_CHECK(std::isfinite(inverse_scale(q.scale)), ErrorCode::InvalidArgument, op, ": scale ",
            q.scale, " is too small (1/scale overflows float32)");
}

float inverse_scale(float scale) { return static_cast<float>(1.0 / static_cast<double>(scale)); }

void check_float_tensor(const std::string& op, const graph::GpuTensor& t) {
  VKD_CHECK(t.spec().dtype == DType::Float32, ErrorCode::InvalidArgument, op, ": tensor '",
            t.name(), "' ", t.spec().describe(), " must be float32");
}

void check_int8x4_tensor(const std::string& op, const graph::GpuTensor& t) {
  VKD_CHECK(t.spec().dtype == DType::Int8x4 && is_packed_int8(t.spec().layout),
            ErrorCode::InvalidArgument, op, ": tensor '", t.name(), "' ", t.spec().describe(),
            " must be int8x4 in a packed int8 layout");
}

bool is_channels_packed_int8(const TensorSpec& s) {
  return s.dtype == DType::Int8x4 && s.storage == StorageType::Buffer &&
         (s.layout == MemoryLayout::PackedInt8_4W4C || s.layout == MemoryLayout::PackedInt8_4C1W);
}

void check_float_buffer(const std::string& op, const graph::GpuTensor& t) {
  check_float_tensor(op, t);
  VKD_CHECK(t.spec().storage == StorageType::Buffer && t.spec().layout == MemoryLayout::WidthPacked,
            ErrorCode::InvalidArgument, op, ": tensor '", t.name(), "' ", t.spec().describe(),
            " must be a width-packed float32 buffer");
}

void check_float_operand(const std::string& op, const graph::GpuTensor& t, const char* what) {
  check_float_tensor(op, t);
  VKD_CHECK(t.spec().storage == StorageType::Buffer, ErrorCode::InvalidArgument, op, ": ", what,
            " ", t.spec().describe(), " must be a float32 buffer");
  VKD_CHECK(t.spec().numel() <= std::numeric_limits<int32_t>::max(), ErrorCode::Unsupported, op,
            ": ", what, " ", t.spec().describe(), " has more than 2^31 - 1 elements");
}

std::string own_tensor_name(const graph::ComputeGraph& graph, graph::ValueRef output,
                            const std::string& op, const std::string& suffix) {
  const std::string& name = graph.tensor(output).name();
  return (name.empty() ? op : name) + suffix;
}

void note_way_down(graph::ComputeGraph& graph, const std::string& op, graph::ValueRef output,
                   const std::string& instead, const std::string& why) {
  graph.add_way_down(op + " '" + graph.tensor(output).name() + "': " + instead + " (" + why + ")");
}

void check_requantized_output(const std::string& op, const QuantParams& q, int32_t act_min,
                              int32_t act_max) {
  check_quant_params(op, q);
  VKD_CHECK(-128 <= act_min && act_min <= act_max && act_max <= 127, ErrorCode::InvalidArgument, op,
            ": activation range [", act_min, ", ", act_max,
            "] must lie in [-128, 127] and not be empty");
}

int64_t check_elementwise_int8x4(const std::string& op, const graph::GpuTensor& input,
                                 const graph::GpuTensor& output) {
  check_int8x4_tensor(op, input);
  check_int8x4_tensor(op, output);
  check_same_sizes(op, input, output);
  const TensorSpec& si = input.spec();
  const TensorSpec& so = output.spec();
  VKD_CHECK(si.layout == so.layout, ErrorCode::InvalidArgument, op,
            ": input and output must share one packed layout (", to_string(si.layout), ", ",
            to_string(so.layout), ")");
  const int64_t words = packed_int8_word_count(so.layout, so.dims4());
  VKD_CHECK(words < (int64_t(1) << 31), ErrorCode::Unsupported, op, ": ", words,
            " words exceed the 2^31 a kernel can index");
  return words;
}

void check_same_sizes(const std::string& op, const graph::GpuTensor& a, const graph::GpuTensor& b) {
  VKD_CHECK(a.spec().dims4() == b.spec().dims4(), ErrorCode::InvalidArgument, op,
            ": sizes differ between '", a.name(), "' ", a.spec().describe(), " and '", b.name(),
            "' ", b.spec().describe());
}

bool check_moved_quant(const std::string& op, const QuantParams& in_q, const QuantParams& out_q) {
  check_quant_params(op + " input", in_q);
  check_quant_params(op + " output", out_q);
  VKD_CHECK(out_q.quant_min == -128 && out_q.quant_max == 127, ErrorCode::InvalidArgument, op,
            ": the output must use the full int8 range [-128, 127], got [", out_q.quant_min, ", ",
            out_q.quant_max, "]");
  return in_q.scale != out_q.scale || in_q.zero_point != out_q.zero_point;
}

MovedRequantPush moved_requant_push(const QuantParams& in_q, const QuantParams& out_q) {
  return {in_q.zero_point,
          out_q.zero_point,
          in_q.scale,
          inverse_scale(out_q.scale),
          float(-128 - out_q.zero_point),
          float(127 - out_q.zero_point)};
}

BinaryQuantPush binary_quant_push(const QuantParams& a, const QuantParams& b,
                                  const QuantParams& out, int32_t act_min, int32_t act_max) {
  return {a.zero_point,
          b.zero_point,
          out.zero_point,
          a.scale,
          b.scale,
          inverse_scale(out.scale),
          float(act_min - out.zero_point),
          float(act_max - out.zero_point)};
}

int64_t tile_count(const Dims4& d) {
  return d.n * div_up(d.c, 4) * div_up(d.h, 4) * div_up(d.w, 4);
}

int fastest_dim(const TensorSpec& s) {
  switch (s.layout) {
    case MemoryLayout::PackedInt8_4W4C: return 1;  // channel blocks
    case MemoryLayout::PackedInt8_4C1W: return 3;  // widths
    case MemoryLayout::PackedInt8_4H4W: return 3;  // width blocks
    default: return s.storage == StorageType::Texture3D ? 3 : packed_dim_nchw(s.layout);
  }
}

namespace {

TileOrder natural_order(const TensorSpec& s) {
  if (s.layout == MemoryLayout::PackedInt8_4W4C) return TileOrder::CWHN;
  if (s.layout == MemoryLayout::PackedInt8_4C1W) return TileOrder::WCHN;
  return fastest_dim(s) == 1 ? TileOrder::CWHN : TileOrder::WHCN;
}

}  // namespace

TileWalk choose_tile_walk(const Dims4& d, const TensorSpec& out, const TensorSpec& in) {
  TileOrder order = fastest_dim(out) == fastest_dim(in) ? natural_order(out) : TileOrder::Patch;
  if (const auto forced = env_uint("VKD_TILE_ORDER", 0, 3)) {
    order = static_cast<TileOrder>(*forced);
  }
  int64_t items = tile_count(d);
  if (order == TileOrder::Patch) {
    items = d.n * div_up(d.h, 4) * align_up(div_up(d.c, 4), 4) * align_up(div_up(d.w, 4), 8);
  }
  return {static_cast<uint32_t>(order), items};
}

void add_tile_node(graph::ComputeGraph& graph, const std::string& op, shaders::Kernel kernel,
                   std::vector<graph::ValueRef> bindings, std::vector<uint8_t> push,
                   const TileWalk& walk, const std::vector<uint32_t>& op_constants) {
  VKD_CHECK(walk.items < (int64_t(1) << 31), ErrorCode::Unsupported, op, ": ", walk.items,
            " tiles exceed the 2^31 invocations a tile kernel can index");
  graph::DispatchNode node;
  node.op = op;
  node.kernel = kernel;
  node.bindings = std::move(bindings);
  node.push_constants = std::move(push);
  node.spec_constants = {walk.order};
  node.spec_constants.insert(node.spec_constants.end(), op_constants.begin(), op_constants.end());
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(walk.items));
  graph.add_node(std::move(node));
}

std::array<int32_t, 4> nchw_sizes(const Dims4& d) {
  return {static_cast<int32_t>(d.n), static_cast<int32_t>(d.c), static_cast<int32_t>(d.h),
          static_cast<int32_t>(d.w)};
}

std::array<int32_t, 4> float_tile_meta(const TensorSpec& spec) {
  if (spec.storage == StorageType::Texture3D) {
    return {packed_dim_nchw(spec.layout), 0, 0, 0};
  }
  const auto s = buffer_strides(spec.layout, spec.dims4());
  return {static_cast<int32_t>(s[0]), static_cast<int32_t>(s[1]), static_cast<int32_t>(s[2]),
          static_cast<int32_t>(s[3])};
}

int32_t float_tile_vector_dim(const TensorSpec& spec) {
  if (spec.storage != StorageType::Buffer) return -1;
  const auto m = float_tile_meta(spec);
  const Dims4 d = spec.dims4();
  // vector_dim of float_tile.glslh, whose per-tile bound then holds for every tile; the dims
  // in NCHW numbering (DIM_W 3, DIM_C 1).
  if (m[3] == 1 && m[0] % 4 == 0 && m[1] % 4 == 0 && m[2] % 4 == 0 && d.w % 4 == 0) return 3;
  if (m[1] == 1 && m[0] % 4 == 0 && m[2] % 4 == 0 && m[3] % 4 == 0 && d.c % 4 == 0) return 1;
  return -1;
}

int int8_layout_index(MemoryLayout layout) {
  switch (layout) {
    case MemoryLayout::PackedInt8_4W4C: return 0;
    case MemoryLayout::PackedInt8_4H4W: return 1;
    case MemoryLayout::PackedInt8_4C1W: return 2;
    default: break;
  }
  VKD_THROW(ErrorCode::Internal, "layout ", to_string(layout), " is not a packed int8 layout");
}

int storage_index(StorageType storage) { return storage == StorageType::Buffer ? 0 : 1; }

std::string to_string(FusionForm form) {
  switch (form) {
    case FusionForm::Auto: return "auto";
    case FusionForm::Fused: return "fused";
    case FusionForm::Split: return "split";
  }
  return "?";
}

}  // namespace vkd::ops
