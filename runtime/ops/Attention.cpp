// Op family: attention (q8ta_attention: int8; attention: float32).
// Anatomy: push-constant struct (mirroring the shader), add_q8ta_attention_node, the registry
// entry.
#include "runtime/ops/Attention.h"

#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "core/PackedInt8Layout.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/DeviceProfile.h"
#include "runtime/vk/KernelLimits.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_attention.glsl.
struct AttentionPush {
  int32_t tq, tk, w4, d4;
  int32_t mask_rows, mask_batches;
  int32_t q_zp, k_zp, v_zp, out_zp;
  float qk_scale, v_scale, inv_out_scale;
  int32_t causal;
  int32_t mask_affine;
  float mask_a0, mask_b0, mask_a1, mask_b1;
  int32_t q_w4, kv_w4, q_w0, k_w0, v_w0;
};

// The shader's workgroup (WG), query rows per workgroup (BQ), keys per tile (TK), the largest
// head (MAX_D4 words, float: vec4s) and its shared memory: the block's Q, a tile of K and of V
// (rows padded by an element), the tile's p (likewise) and one float per invocation twice. The
// 4-row form of a small head (tiles of 64 or 128 keys) has twice the invocations.
constexpr uint32_t kWorkgroup = 128;
constexpr int64_t kQueryRows = 8;
// The int8 kernel takes 4 query rows per workgroup (QUERY_ROWS 4: twice the workgroups, each
// half the rows) where 8 make at most this many workgroups, about two per SM of a large GPU.
// H200, the attentions of a whole model (`vkd run --profile`, sum over its layers), 8 / 4 rows:
// ViT-Ti (197 tokens, 3 heads: 75 workgroups) 267 / 203 us, MiniLM at 128 tokens (12 heads:
// 192) 68 / 57, at 512 tokens (768) 352 / 390.
constexpr int64_t kFourRowsMaxGroups = 256;
struct Tiles {
  int64_t keys, max_head_elems, elem_bytes;
  uint32_t shared_bytes() const {
    return static_cast<uint32_t>((kQueryRows + 2 * keys) * (max_head_elems + 1) * elem_bytes +
                                 4 * (kQueryRows * (keys + 1) + 4 * kWorkgroup));
  }
};
// int8, by the head's size (SMALL_HEAD 0, 1, 2): up to 128 (tiles of 32 keys), up to 32 (tiles
// of 128 keys) and up to 64 (tiles of 64 keys); the float op's tiles.
constexpr Tiles kInt8Tiles[] = {{32, 32, 4}, {128, 8, 4}, {64, 16, 4}};
constexpr Tiles kFloatTiles{16, 16, 16};

// The checks of Q, K, V and output: 4H4W int8x4, or float32 width-packed buffers.
void check_operand(const std::string& op, const graph::GpuTensor& t, const char* what,
                   bool float_io) {
  if (float_io) {
    VKD_CHECK(t.spec().dtype == DType::Float32 && t.spec().storage == StorageType::Buffer &&
                  t.spec().layout == MemoryLayout::WidthPacked && t.spec().sizes.size() >= 2,
              ErrorCode::InvalidArgument, op, ": ", what, " ", t.spec().describe(),
              " must be a width-packed float32 buffer of rank 2 to 4 ([B, T, H*D])");
    return;
  }
  check_int8x4_tensor(op, t);
  VKD_CHECK(t.spec().layout == MemoryLayout::PackedInt8_4H4W && t.spec().sizes.size() >= 2,
            ErrorCode::InvalidArgument, op, ": ", what, " ", t.spec().describe(),
            " must be a 4H4W int8x4 buffer of rank 2 to 4 ([B, T, H*D])");
  VKD_CHECK(packed_int8_word_count(t.spec().layout, t.spec().dims4()) < (int64_t(1) << 31),
            ErrorCode::Unsupported, op, ": ", what, "'s words exceed the 2^31 a kernel can index");
}

// K and V as views of one tensor, so a kernel binds them once (SHARED_KV): the tensor they
// already share (Q, K and V the column blocks of q8ta_linear_qkv's output), else one made to
// hold both (their bytes, K's first), no copy. The tensor and the 16-byte chunks K and V start
// at in it; nullopt where they cannot share one (a constant or an image among them, an offset
// the device's buffer alignment refuses).
struct KvBinding {
  graph::ValueRef tensor;
  int64_t key_chunk, value_chunk;
};
std::optional<KvBinding> bind_kv_once(graph::ComputeGraph& graph, graph::ValueRef key,
                                      graph::ValueRef value, graph::ValueRef output) {
  const auto [key_root, key_at] = graph.alias_root(key);
  const auto [value_root, value_at] = graph.alias_root(value);
  uint64_t value_root_at = 0;
  if (key_root != value_root) {
    const auto placed = graph.place_together(
        key_root, value_root, own_tensor_name(graph, output, "attention", ".key_value"));
    if (!placed) return std::nullopt;
    value_root_at = placed->second;
  }
  const uint64_t value_byte = value_root_at + value_at;
  if (key_at % 16 != 0 || value_byte % 16 != 0) return std::nullopt;
  return KvBinding{graph.alias_root(key).first, static_cast<int64_t>(key_at / 16),
                   static_cast<int64_t>(value_byte / 16)};
}

// Both ops: the checks every operand shares, the push constants and the dispatch. `params`'
// quantizations are the int8 op's (the float op: zero points 0, scales 1).
void add_attention(graph::ComputeGraph& graph, const std::string& op, bool float_io,
                   graph::ValueRef query, graph::ValueRef key, graph::ValueRef value,
                   graph::ValueRef mask, graph::ValueRef output, const AttentionParams& params) {
  const auto& q = graph.tensor(query);
  const auto& k = graph.tensor(key);
  const auto& v = graph.tensor(value);
  const auto& m = graph.tensor(mask);
  const auto& out = graph.tensor(output);
  check_operand(op, q, "query", float_io);
  check_operand(op, k, "key", float_io);
  check_operand(op, v, "value", float_io);
  check_operand(op, out, "output", float_io);
  check_same_sizes(op, k, v);
  const Dims4 dq = q.spec().dims4(), dk = k.spec().dims4(), dm = m.spec().dims4();
  const Dims4 dout = out.spec().dims4();
  const int64_t batches = dq.n * dq.c, width = dout.w, heads = params.num_heads;
  const AttentionForm form = !float_io && heads >= 1 && width % heads == 0
                                 ? plan_int8_attention(width / heads, dq.h, heads, dq.n * dq.c,
                                                       graph.profile().max_workgroup_invocations)
                                 : AttentionForm{};
  const Tiles tiles = float_io ? kFloatTiles : kInt8Tiles[form.small_head];
  const AttentionColumns columns = params.columns.value_or(AttentionColumns{});
  if (!params.columns) {
    check_same_sizes(op, q, out);
    VKD_CHECK(dk.n == dq.n && dk.c == dq.c && dk.w == width, ErrorCode::InvalidArgument, op,
              ": key ", k.spec().describe(), " must be [B, Tk, H*D] for the query ",
              q.spec().describe());
  } else {
    const struct {
      const char* what;
      int64_t first, row;
    } ranges[] = {
        {"query", columns.query, dq.w}, {"key", columns.key, dk.w}, {"value", columns.value, dk.w}};
    for (const auto& r : ranges) {
      VKD_CHECK(r.first >= 0 && r.first % 4 == 0 && r.first + width <= r.row,
                ErrorCode::InvalidArgument, op, ": the ", r.what, "'s columns ", r.first, " .. ",
                r.first + width - 1, " must lie in its rows of ", r.row,
                " columns and start at a multiple of 4");
    }
    VKD_CHECK(dq.n == dout.n && dq.c == dout.c && dq.h == dout.h && dk.n == dq.n && dk.c == dq.c,
              ErrorCode::InvalidArgument, op, ": query ", q.spec().describe(), ", key ",
              k.spec().describe(), " and output ", out.spec().describe(),
              " must be [B, Tq, .], [B, Tk, .] and [B, Tq, H*D]");
  }
  VKD_CHECK(heads >= 1 && width % heads == 0 && (width / heads) % 4 == 0 &&
                width / heads <= 4 * tiles.max_head_elems,
            ErrorCode::InvalidArgument, op, ": num_heads ", heads, " must split the ", width,
            " columns into heads of D columns, D a multiple of 4 and at most ",
            4 * tiles.max_head_elems);
  VKD_CHECK(m.spec().dtype == DType::Float32 && m.spec().storage == StorageType::Buffer &&
                m.spec().layout == MemoryLayout::WidthPacked,
            ErrorCode::InvalidArgument, op, ": mask ", m.spec().describe(),
            " must be a width-packed float32 buffer");
  const int64_t mask_batches = dm.n * dm.c;
  VKD_CHECK(
      dm.w == dk.h && (dm.h == 1 || dm.h == dq.h) && (mask_batches == 1 || mask_batches == batches),
      ErrorCode::InvalidArgument, op, ": mask ", m.spec().describe(),
      " must be [1 or B, 1, 1 or Tq, Tk] = [1 or ", batches, ", 1, 1 or ", dq.h, ", ", dk.h, "]");
  VKD_CHECK(std::isfinite(params.scale), ErrorCode::InvalidArgument, op, ": scale ", params.scale,
            " must be finite");
  const vk::DeviceProfile& profile = graph.profile();
  VKD_CHECK(tiles.shared_bytes() <= profile.max_shared_memory_bytes, ErrorCode::Unsupported, op,
            ": the kernel needs ", tiles.shared_bytes(), " bytes of shared memory, the device has ",
            profile.max_shared_memory_bytes);

  const MaskAffine affine = params.mask_affine.value_or(MaskAffine{});
  AttentionPush push{static_cast<int32_t>(dq.h),
                     static_cast<int32_t>(dk.h),
                     static_cast<int32_t>(width / 4),
                     static_cast<int32_t>(width / heads / 4),
                     static_cast<int32_t>(dm.h),
                     static_cast<int32_t>(mask_batches),
                     params.query.zero_point,
                     params.key.zero_point,
                     params.value.zero_point,
                     params.output.zero_point,
                     params.query.scale * params.key.scale * params.scale,
                     params.value.scale,
                     inverse_scale(params.output.scale),
                     params.causal ? 1 : 0,
                     params.mask_affine ? 1 : 0,
                     affine.a[0],
                     affine.b[0],
                     affine.a[1],
                     affine.b[1],
                     static_cast<int32_t>(dq.w / 4),
                     static_cast<int32_t>(dk.w / 4),
                     static_cast<int32_t>(columns.query / 4),
                     static_cast<int32_t>(columns.key / 4),
                     static_cast<int32_t>(columns.value / 4)};
  const bool four_rows = !float_io && form.rows_per_workgroup == 4;
  const auto kernel_of = [&](bool shared_kv) {
    return float_io ? shaders::variants::q8ta_attention_float[0][0][shared_kv ? 1 : 0]
                    : shaders::variants::q8ta_attention[0][profile.int8_dot_product ? 0 : 1]
                                                       [form.small_head][four_rows ? 1 : 0]
                                                       [shared_kv ? 1 : 0];
  };
  // The way down where the kernel's 5 storage buffers exceed a stage (the Android baseline's
  // 4): K and V one binding (SHARED_KV, 4 buffers), the same bits.
  std::optional<KvBinding> kv;
  if (!vk::fits_storage_buffers(profile, kernel_of(false))) {
    kv = bind_kv_once(graph, key, value, output);
    VKD_CHECK(kv.has_value(), ErrorCode::Unsupported, op, " on device '", profile.name,
              "': ", vk::storage_buffers_problem(profile, kernel_of(false)),
              ", and key and value cannot share one buffer (a constant or an image among them)");
    note_way_down(
        graph, op, output,
        "key and value read through one binding ('" + graph.tensor(kv->tensor).name() + "')",
        vk::storage_buffers_problem(profile, kernel_of(false)));
    push.k_w0 += static_cast<int32_t>(kv->key_chunk);
    push.v_w0 += static_cast<int32_t>(kv->value_chunk);
  }
  if (!float_io && form.rows_per_workgroup == kQueryRows &&
      plan_int8_attention(width / heads, dq.h, heads, batches, UINT32_MAX).rows_per_workgroup ==
          4) {
    note_way_down(graph, op, output, "8 query rows a workgroup of 128 invocations",
                  "the 4-row form of a small head runs 256 invocations; device '" + profile.name +
                      "' allows " + std::to_string(profile.max_workgroup_invocations));
  }
  graph::DispatchNode node;
  node.op = op;
  node.kernel = kernel_of(kv.has_value());
  node.bindings = kv ? std::vector<graph::ValueRef>{output, query, kv->tensor, mask}
                     : std::vector<graph::ValueRef>{output, query, key, value, mask};
  node.push_constants = graph::push_constant_bytes(push);
  // One workgroup per (block of 8 or 4 query rows, head, batch); the shader's size is fixed (its
  // invocations split the block's rows and keys), so no chooser picks it. Group counts past the
  // device's limits are reported by ComputeGraph's per-node checks.
  node.plan.local_size = {float_io ? kWorkgroup : form.workgroup, 1, 1};
  node.plan.group_count = {static_cast<uint32_t>(div_up(dq.h, four_rows ? 4 : kQueryRows)),
                           static_cast<uint32_t>(heads), static_cast<uint32_t>(batches)};
  graph.add_node(std::move(node));
}

}  // namespace

AttentionForm plan_int8_attention(int64_t head_columns, int64_t query_rows, int64_t heads,
                                  int64_t batches, uint32_t max_invocations) {
  AttentionForm f;
  f.small_head = head_columns <= 4 * kInt8Tiles[1].max_head_elems   ? 1
                 : head_columns <= 4 * kInt8Tiles[2].max_head_elems ? 2
                                                                    : 0;
  const bool four_rows_fit = f.small_head == 0 || 2 * kWorkgroup <= max_invocations;
  f.rows_per_workgroup =
      four_rows_fit && div_up(query_rows, kQueryRows) * heads * batches <= kFourRowsMaxGroups
          ? 4
          : kQueryRows;
  f.workgroup = f.rows_per_workgroup == 4 && f.small_head != 0 ? 2 * kWorkgroup : kWorkgroup;
  return f;
}

void add_q8ta_attention_node(graph::ComputeGraph& graph, graph::ValueRef query, graph::ValueRef key,
                             graph::ValueRef value, graph::ValueRef mask, graph::ValueRef output,
                             const AttentionParams& params) {
  for (const QuantParams* qp : {&params.query, &params.key, &params.value, &params.output}) {
    check_quant_params("q8ta_attention", *qp);
  }
  const char* op = params.mask_affine ? "q8ta_attention_mask_affine" : "q8ta_attention";
  add_attention(graph, op, false, query, key, value, mask, output, params);
}

void add_attention_node(graph::ComputeGraph& graph, graph::ValueRef query, graph::ValueRef key,
                        graph::ValueRef value, graph::ValueRef mask, graph::ValueRef output,
                        int num_heads, float scale, bool causal) {
  AttentionParams p;  // float: zero points 0, scales 1
  p.num_heads = num_heads;
  p.scale = scale;
  p.causal = causal;
  add_attention(graph, "attention", true, query, key, value, mask, output, p);
}

// --- registry entries ---------------------------------------------------------------

namespace {

// `columns`: the _qkv form, Q, K and V the three column blocks of C (the output's width) of
// tensor `qkv`, which pads with the query's zero point (q8ta_linear_qkv's output does).
void build_q8ta_attention(const OpCall& call, bool mask_affine, bool columns) {
  AttentionParams p;
  p.query = call.quant("query");
  p.key = call.quant("key");
  p.value = call.quant("value");
  p.output = call.quant("output");
  call.set_zero_point("output", p.output.zero_point);
  if (columns) {
    call.set_zero_point("qkv", p.query.zero_point);
  } else {
    for (const char* t : {"query", "key", "value"})
      call.set_zero_point(t, call.quant(t).zero_point);
  }
  p.num_heads = call.int32_arg("num_heads", 1, 1 << 16);
  p.scale = static_cast<float>(call.float_arg("scale"));
  p.causal = call.bool_arg("is_causal");
  if (mask_affine) {
    MaskAffine m;
    for (int step = 0; step < 2; ++step) {
      const std::string n = std::to_string(step);
      m.a[step] = static_cast<float>(call.float_arg("mask_multiplier_" + n));
      m.b[step] = static_cast<float>(call.float_arg("mask_addend_" + n));
    }
    p.mask_affine = m;
  }
  if (columns) {
    const int64_t c = call.graph().tensor(call.tensor("output")).spec().dims4().w;
    p.columns = AttentionColumns{0, c, 2 * c};
    const graph::ValueRef qkv = call.tensor("qkv");
    add_q8ta_attention_node(call.graph(), qkv, qkv, qkv, call.tensor("mask"), call.tensor("output"),
                            p);
    return;
  }
  add_q8ta_attention_node(call.graph(), call.tensor("query"), call.tensor("key"),
                          call.tensor("value"), call.tensor("mask"), call.tensor("output"), p);
}

void build_attention(const OpCall& call) {
  add_attention_node(call.graph(), call.tensor("query"), call.tensor("key"), call.tensor("value"),
                     call.tensor("mask"), call.tensor("output"),
                     call.int32_arg("num_heads", 1, 1 << 16),
                     static_cast<float>(call.float_arg("scale")), call.bool_arg("is_causal"));
}

}  // namespace

void register_attention_ops(OpRegistry& registry) {
  registry.add("q8ta_attention",
               [](const OpCall& call) { build_q8ta_attention(call, false, false); });
  registry.add("q8ta_attention_mask_affine",
               [](const OpCall& call) { build_q8ta_attention(call, true, false); });
  registry.add("q8ta_attention_qkv",
               [](const OpCall& call) { build_q8ta_attention(call, false, true); });
  registry.add("q8ta_attention_mask_affine_qkv",
               [](const OpCall& call) { build_q8ta_attention(call, true, true); });
  registry.add("attention", build_attention);
}

}  // namespace vkd::ops
