// Op family: quantized linear (q8ta_linear, q8ta_linear_dq, q8ta_linear_add,
// q8ta_linear_dq_add, q8ta_linear_gelu, q8ta_linear_qkv, q8da_linear, q8csw_linear).
// Anatomy: push-constant structs (mirroring the shaders), weight/channel prepacking, add_*_node
// running the kernel, tile and grid plan_linear_kernel decides (runtime/ops/ConvPlan.h),
// registry entries.
#include "runtime/ops/Linear.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>

#include "core/Error.h"
#include "runtime/ops/ConvPlan.h"
#include "runtime/ops/Elementwise.h"
#include "runtime/ops/FloatElementwise.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/KernelLimits.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/common/linear_common.glslh.
struct LinearPush {
  int32_t row_blocks, h, h4, k4, n, n4, n_pad;
  int32_t in_zp, out_zp;
  float inv_out_scale;
  int32_t act_min, act_max;
};
// The same with the fused residual add's member (OUT_DTYPE 2).
struct LinearAddPush {
  LinearPush linear;
  BinaryQuantPush add;
};
struct LinearScalesAtPush {
  LinearPush linear;
  int32_t scales_at;
};

// Mirrors `Params` in shaders/q8da_quantize_rows.glsl.
struct QuantizeRowsPush {
  int32_t k, k4, h, h4, padded_rows, quant_min, quant_max;
  float eps;
};
constexpr uint32_t kQuantizeRowsWorkgroup = 64;  // WG in q8da_quantize_rows.glsl

// Mirrors `Params` in shaders/q8csw_linear.glsl.
struct Q8cswPush {
  int32_t rows, k, k4, n, n4, n_pad;
};
constexpr uint32_t kQ8cswWorkgroup = 64;  // WG in q8csw_linear.glsl
constexpr int64_t kQ8cswGroups = 4;       // NG: channel groups of 4 per workgroup
constexpr int64_t kQ8cswRows = 4;         // ROWS of the r4 variant: rows per workgroup

// The bound that keeps int32 accumulation exact: |sum| <= K * 128 * 128 plus the zero-point
// term of the same size.
constexpr int64_t kMaxK = 65536;

void check_weights(const std::string& op, const LinearWeights& w) {
  VKD_CHECK(w.weight != nullptr && w.scales != nullptr, ErrorCode::InvalidArgument, op,
            ": weights and weight scales are required");
  VKD_CHECK(w.n >= 1 && w.k >= 1, ErrorCode::InvalidArgument, op, ": weight shape [", w.n, ", ",
            w.k, "] must be positive");
  VKD_CHECK(w.k <= kMaxK, ErrorCode::Unsupported, op, ": K = ", w.k, " exceeds ", kMaxK,
            " (int32 accumulation could overflow)");
}

// Rows of a [..., M, K] tensor as the 4H4W layout pads them.
struct RowShape {
  int64_t batches = 1, h = 1, h4 = 1;
  int64_t row_blocks() const { return batches * h4; }
};

RowShape row_shape(const TensorSpec& spec) {
  const Dims4 d = spec.dims4();
  return {d.n * d.c, d.h, div_up(d.h, 4)};
}

// Weights as the kernels read them: the 16-byte block (n4, k4) holds component j = the 4 K
// values 4 k4 .. 4 k4 + 3 of channel 4 n4 + j (lane i = K value 4 k4 + i), at block index
// ((k4 / 8) * N4 + n4) * 8 + k4 % 8 (shaders/common/linear_weights.glslh: K stages of 8 words,
// every channel group of a stage contiguous). Zero past N and K, so padded K lanes add nothing
// whatever the input holds there.
int64_t packed_weight_blocks(const LinearWeights& w) {
  return div_up(w.n, 4) * 8 * div_up(div_up(w.k, 4), 8);
}

// channel_major (the GEMV route): block (n4, k4) at n4 * K4 + k4 instead, every K block of a
// channel group contiguous (linear_weights.glslh's weight_block_channel_major).
std::vector<uint8_t> pack_weights(const LinearWeights& w, bool channel_major) {
  const int64_t n4 = div_up(w.n, 4), k4_count = div_up(w.k, 4);
  std::vector<uint8_t> out(static_cast<size_t>(packed_weight_blocks(w) * 16), 0);
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t k = 0; k < w.k; ++k) {
      const int64_t k4 = k / 4;
      const int64_t block =
          channel_major ? (n / 4) * k4_count + k4 : ((k4 / 8) * n4 + n / 4) * 8 + k4 % 8;
      out[static_cast<size_t>(block * 16 + (n % 4) * 4 + k % 4)] =
          static_cast<uint8_t>(w.weight[n * w.k + k]);
    }
  }
  return out;
}

// Per channel, padded to 4 N4: weight sums (for the input zero point), the float32 product of
// the input scale and the channel's weight scale, the bias; with output blocks, each channel's
// block's float32(1 / s_y) and zero point.
std::vector<uint8_t> pack_channels(const LinearWeights& w, float input_scale,
                                   const std::vector<QuantParams>& blocks) {
  const int64_t n_pad = 4 * div_up(w.n, 4);
  std::vector<int32_t> words(static_cast<size_t>((blocks.empty() ? 3 : 5) * n_pad), 0);
  for (int64_t n = 0; !blocks.empty() && n < w.n; ++n) {
    const QuantParams& q = blocks[static_cast<size_t>(n * int64_t(blocks.size()) / w.n)];
    const float inv = inverse_scale(q.scale);
    std::memcpy(&words[static_cast<size_t>(3 * n_pad + n)], &inv, 4);
    words[static_cast<size_t>(4 * n_pad + n)] = q.zero_point;
  }
  for (int64_t n = 0; n < w.n; ++n) {
    int32_t sum = 0;
    for (int64_t k = 0; k < w.k; ++k) sum += w.weight[n * w.k + k];
    const float scale = input_scale * w.scales[n];
    const float bias = w.bias ? w.bias[n] : 0.0f;
    words[static_cast<size_t>(n)] = sum;
    std::memcpy(&words[static_cast<size_t>(n_pad + n)], &scale, 4);
    std::memcpy(&words[static_cast<size_t>(2 * n_pad + n)], &bias, 4);
  }
  std::vector<uint8_t> out(words.size() * 4);
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

// Adds the prepacked weights (pack_weights' layout) and channel data as constants (packed
// during prepare()).
std::pair<graph::ValueRef, graph::ValueRef> add_linear_constants(
    graph::ComputeGraph& graph, const LinearWeights& w, float input_scale, const std::string& name,
    bool channel_major, const std::vector<QuantParams>& blocks) {
  const TensorSpec wspec{
      {packed_weight_blocks(w), 4}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked};
  const LinearWeights copy = w;
  const auto weights = graph.add_constant(
      wspec, name + ".weight_packed",
      [copy, channel_major] { return pack_weights(copy, channel_major); },
      static_cast<uint64_t>(w.n * w.k));
  return {weights, add_channel_constants(graph, w, input_scale, name, blocks)};
}

// q8ta_conv2d_coopmat.glsl's tile (Im2colInput::window): two segments of kWindowSegment output
// pixels x kWindowChannels channels per workgroup, kWindowChunkWords channel words per chunk
// (each pixel kWindowChunkWords + 4 words of shared memory), at most kWindowTaps taps staged,
// two chunks' buffers.
constexpr int64_t kWindowSegment = 64;
constexpr int64_t kWindowChannels = 64;
constexpr int64_t kWindowChunkWords = 8;
constexpr int64_t kWindowTaps = 3;

// The window kernel's specialization constants 7-9: stride_w, dilation_w, taps per group.
std::array<uint32_t, 3> window_constants(const Im2colGeometry& g) {
  return {uint32_t(g.stride_w), uint32_t(g.dilation_w),
          uint32_t(std::min<int64_t>(g.kw, kWindowTaps))};
}

// Specialization constants 4-6 of the int8-output kernels (linear_common.glslh): the upscale
// factor, the output channels N / r^2 and the image rows; the defaults (1, 4, 1) when the store
// is not shuffled, so every such node shares one pipeline. The image rows only split the row
// groups into images (image = group / rows, its row = group % rows), so with compact kernels a
// single image (`groups` == image rows) gets kAnyImageRows instead: every single-image shuffle
// of one factor and channel count then shares a pipeline. lavapipe compiles each pipeline at
// its first dispatch (0.26-0.44 s for a shuffled CPU GEMM); refinenet_lite's three upsampling
// stages with a residual add were three pipelines.
constexpr uint32_t kAnyImageRows = 1u << 16;
std::array<uint32_t, 3> shuffle_constants(const vk::DeviceProfile& profile, const RowsShuffle& s,
                                          int64_t n, int64_t groups) {
  if (s.upscale <= 1) return {1, 4, 1};
  const bool any_rows =
      profile.compact_kernels && groups == s.image_rows && groups <= int64_t(kAnyImageRows);
  return {uint32_t(s.upscale), uint32_t(n / (int64_t(s.upscale) * s.upscale)),
          any_rows ? kAnyImageRows : uint32_t(s.image_rows)};
}

void check_4h4w_buffer(const std::string& op, const char* what, const graph::GpuTensor& t) {
  check_int8x4_tensor(op, t);
  VKD_CHECK(
      t.spec().layout == MemoryLayout::PackedInt8_4H4W && t.spec().storage == StorageType::Buffer,
      ErrorCode::InvalidArgument, op, ": ", what, " ", t.spec().describe(),
      " must be an int8x4 buffer in 4H4W");
}

void check_linear_shapes(const std::string& op, const TensorSpec& in, const TensorSpec& out,
                         const LinearWeights& w) {
  VKD_CHECK(in.sizes.back() == w.k, ErrorCode::InvalidArgument, op, ": input ", in.describe(),
            " has K = ", in.sizes.back(), ", the weights [", w.n, ", ", w.k, "] K = ", w.k);
  std::vector<int64_t> want = in.sizes;
  want.back() = w.n;
  VKD_CHECK(out.sizes == want, ErrorCode::InvalidArgument, op, ": output ", out.describe(),
            " must have sizes of the input with the last dim = N = ", w.n);
}

// A float-activation linear (q8da_linear, q8csw_linear): float32 buffers in and out, the
// weights and the shapes they imply.
void check_float_linear(const std::string& op, const graph::GpuTensor& in,
                        const graph::GpuTensor& out, const LinearWeights& w) {
  check_float_buffer(op, in);
  check_float_buffer(op, out);
  check_weights(op, w);
  check_linear_shapes(op, in.spec(), out.spec(), w);
}

// q8ta_linear_qkv's column blocks: an int8 output without another epilogue or activation
// range, N split into equal blocks of a multiple of 4 channels (an output word is then one
// block's), each block's parameters valid.
void check_output_blocks(const std::string& op, const LinearParams& p, int64_t n) {
  const auto count = static_cast<int64_t>(p.output_blocks.size());
  VKD_CHECK(p.output && !p.residual && p.gelu == LinearGelu::None, ErrorCode::InvalidArgument, op,
            ": column blocks need a plain int8 output");
  VKD_CHECK(p.activation_min == -128 && p.activation_max == 127, ErrorCode::InvalidArgument, op,
            ": column blocks take no activation range (got [", p.activation_min, ", ",
            p.activation_max, "])");
  VKD_CHECK(n % count == 0 && (n / count) % 4 == 0, ErrorCode::InvalidArgument, op, ": N = ", n,
            " does not split into ", count, " column blocks of a multiple of 4 channels");
  for (const QuantParams& q : p.output_blocks) check_requantized_output(op, q, -128, 127);
}

// OUT_DTYPE of shaders/common/linear_common.glslh for `p`.
int linear_out_form(const LinearParams& p) {
  if (p.row_scales >= 0) return p.row_scales_after_rows ? 8 : 3;
  if (!p.output) return p.float_residual >= 0 ? 4 : 1;
  if (p.residual) return 2;
  if (!p.output_blocks.empty()) return 7;
  return p.gelu == LinearGelu::Erf ? 5 : p.gelu == LinearGelu::Tanh ? 6 : 0;
}

}  // namespace

graph::ValueRef add_channel_constants(graph::ComputeGraph& graph, const LinearWeights& w,
                                      float input_scale, const std::string& name,
                                      const std::vector<QuantParams>& output_blocks) {
  const TensorSpec spec{{output_blocks.empty() ? 3 : 5, 4 * div_up(w.n, 4)},
                        DType::Int32,
                        StorageType::Buffer,
                        MemoryLayout::WidthPacked};
  const LinearWeights copy = w;
  return graph.add_constant(
      spec, name + ".channels",
      [copy, input_scale, output_blocks] {
        return pack_channels(copy, input_scale, output_blocks);
      },
      static_cast<uint64_t>(w.n * 8));
}

bool linear_gathers_im2col(const vk::DeviceProfile& profile, LinearRoute route) {
  return route == LinearRoute::CoopMat || route == LinearRoute::SplitK ||
         (route == LinearRoute::Gemm && !profile.cpu_kernels && !profile.register_tiled_gemm &&
          profile.max_workgroup_invocations >= 256);
}

std::string conv_window_unfit(const vk::DeviceProfile& profile, LinearRoute route, bool in_4w4c,
                              const Im2colGeometry& g) {
  if (route != LinearRoute::CoopMat) return "the cooperative-matrix route";
  if (!in_4w4c) return "a 4W4C input";
  if (g.stride_w > 2 || g.dilation_w > 2) return "stride and dilation along the width at most 2";
  const int64_t taps = std::min<int64_t>(g.kw, kWindowTaps), pixel_words = kWindowChunkWords + 4;
  const int64_t window = (kWindowSegment - 1) * g.stride_w + (taps - 1) * g.dilation_w + 1;
  const int64_t bytes = 2 * 4 * pixel_words * (2 * window + taps * kWindowChannels);
  if (bytes > profile.max_shared_memory_bytes) {
    return std::to_string(bytes) + " bytes of shared memory (the device has " +
           std::to_string(profile.max_shared_memory_bytes) + ")";
  }
  return "";
}

ConvWindowGrid conv_window_grid(const Im2colGeometry& g, int64_t image_rows, int64_t n,
                                int64_t k4) {
  const int64_t segments = image_rows * div_up(4 * div_up(int64_t(g.w_out), 4), kWindowSegment);
  const int64_t kh = k4 / (int64_t(g.kw) * g.c4_in);
  // Chunks: (kernel row, kWindowChunkWords channel words, up to kWindowTaps taps), as the
  // shader's main loop walks them.
  return {div_up(n, kWindowChannels), div_up(segments, int64_t(2)),
          kh * div_up(int64_t(g.c4_in), kWindowChunkWords) * div_up(int64_t(g.kw), kWindowTaps)};
}

uint32_t epilogue_acc_below_2_22(const vk::DeviceProfile& profile, int64_t products_per_output) {
  if (profile.compact_kernels) return 0;
  return products_per_output * 128 * 255 < (int64_t(1) << 22) ? 1 : 0;
}

std::string linear_coopmat_unavailable(const vk::DeviceProfile& profile) {
  if (!profile.has_int8_cooperative_matrix_nv(16, 16, 32)) {
    return "int8 16x16x32 cooperative matrices through VK_NV_cooperative_matrix (with int8 "
           "arithmetic and the Vulkan memory model)";
  }
  if (profile.subgroup_size != 32 || !profile.subgroup_arithmetic) {
    return "32-wide subgroups (with subgroup operations in compute shaders)";
  }
  if (profile.max_workgroup_invocations < 256) return "256-invocation workgroups";
  return "";
}

std::string to_string(LinearRoute route) {
  switch (route) {
    case LinearRoute::Auto: return "auto";
    case LinearRoute::Gemm: return "gemm";
    case LinearRoute::Gemv: return "gemv";
    case LinearRoute::CoopMat: return "coopmat";
    case LinearRoute::SplitK: return "splitk";
  }
  return "?";
}

void check_residual_add(const std::string& op, const graph::ComputeGraph& graph,
                        graph::ValueRef output, const ResidualAdd& r) {
  const auto& other = graph.tensor(r.other);
  const TensorSpec& out = graph.spec(output);
  check_int8x4_tensor(op, other);
  VKD_CHECK(other.spec().sizes == out.sizes && other.spec().layout == out.layout &&
                other.spec().storage == out.storage,
            ErrorCode::InvalidArgument, op, ": the added tensor ", other.spec().describe(),
            " must have the output's sizes and layout (", out.describe(), ")");
  check_quant_params(op, r.other_quant);
  check_requantized_output(op, r.output, r.activation_min, r.activation_max);
}

bool residual_add_separately(const vk::DeviceProfile& profile) {
  return profile.max_per_stage_storage_buffers < kResidualKernelBuffers;
}

graph::ValueRef add_before_residual_tensor(graph::ComputeGraph& graph, const std::string& op,
                                           graph::ValueRef output) {
  const std::string before = own_tensor_name(graph, output, op, ".before_add");
  note_way_down(
      graph, op, output, "the output into '" + before + "', then the add on its own",
      vk::storage_buffers_problem(graph.profile(), "the fused kernel", kResidualKernelBuffers));
  return graph.add_tensor(graph.spec(output), before);
}

void add_separate_residual_add(graph::ComputeGraph& graph, graph::ValueRef before_add,
                               const QuantParams& quant, const ResidualAdd& r,
                               graph::ValueRef output) {
  AddParams add;
  add.a = quant;
  add.b = r.other_quant;
  add.output = r.output;
  add.activation_min = r.activation_min;
  add.activation_max = r.activation_max;
  add_q8ta_add_node(graph, before_add, r.other, output, add);
}

void add_q8ta_linear_node(graph::ComputeGraph& graph, graph::ValueRef input,
                          const LinearWeights& weights, graph::ValueRef output,
                          const LinearParams& p) {
  const std::string op = !p.output
                             ? (p.float_residual >= 0 ? "q8ta_linear_dq_add" : "q8ta_linear_dq")
                         : p.residual                 ? "q8ta_linear_add"
                         : p.gelu != LinearGelu::None ? "q8ta_linear_gelu"
                         : !p.output_blocks.empty()   ? "q8ta_linear_qkv"
                                                      : "q8ta_linear";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_4h4w_buffer(op, "input", in);
  if (p.output) {
    check_4h4w_buffer(op, "output", out);
    check_requantized_output(op, *p.output, p.activation_min, p.activation_max);
  } else {
    check_float_buffer(op, out);
    VKD_CHECK(!p.residual, ErrorCode::InvalidArgument, op, ": a residual add needs an int8 output");
    VKD_CHECK(p.gelu == LinearGelu::None, ErrorCode::InvalidArgument, op,
              ": a GELU epilogue needs an int8 output");
  }
  VKD_CHECK(p.float_residual < 0 || !p.output, ErrorCode::InvalidArgument, op,
            ": a float residual add needs a float output");
  VKD_CHECK(p.gelu == LinearGelu::None || !p.residual, ErrorCode::InvalidArgument, op,
            ": a GELU epilogue and a residual add together are not supported");
  if (p.float_residual >= 0) {
    const auto& r = graph.tensor(p.float_residual);
    check_float_buffer(op, r);
    VKD_CHECK(r.spec().sizes == out.spec().sizes, ErrorCode::InvalidArgument, op,
              ": the added tensor ", r.spec().describe(), " must have the output's sizes (",
              out.spec().describe(), ")");
  }
  if (!p.output_blocks.empty()) check_output_blocks(op, p, weights.n);
  if (p.residual) check_residual_add(op, graph, output, *p.residual);
  check_quant_params(op, p.input);
  check_weights(op, weights);
  check_linear_shapes(op, in.spec(), out.spec(), weights);
  // The residual adds' ways down (residual_add_separately), once the op is checked: the float
  // residual (q8ta_linear_dq_add) by float_add, whose a + 1 * b is the epilogue's one rounded
  // add; the int8 one (q8ta_linear_add) by q8ta_add.
  if (p.float_residual >= 0 && residual_add_separately(graph.profile())) {
    const graph::ValueRef before_add = add_before_residual_tensor(graph, op, output);
    LinearParams plain = p;
    plain.float_residual = -1;
    add_q8ta_linear_node(graph, input, weights, before_add, plain);
    add_float_binary_node(graph, FloatBinaryOp::Add, before_add, p.float_residual, output);
    return;
  }
  if (p.residual && residual_add_separately(graph.profile())) {
    const graph::ValueRef before_add = add_before_residual_tensor(graph, op, output);
    LinearParams plain = p;
    plain.residual.reset();
    add_q8ta_linear_node(graph, input, weights, before_add, plain);
    add_separate_residual_add(graph, before_add, *p.output, *p.residual, output);
    return;
  }
  const RowShape rows = row_shape(in.spec());
  add_q8ta_linear_rows_node(graph, op, input, rows.batches, rows.h, weights, output, p);
}

LinearRoute add_q8ta_linear_rows_node(graph::ComputeGraph& graph, const std::string& op,
                                      graph::ValueRef input, int64_t groups, int64_t row_count,
                                      const LinearWeights& weights, graph::ValueRef output,
                                      const LinearParams& p, const RowsShuffle& shuffle,
                                      const std::optional<Im2colInput>& im2col) {
  LinearProblem problem;
  problem.groups = groups;
  problem.rows = row_count;
  problem.n4 = div_up(weights.n, 4);
  problem.k4 = div_up(weights.k, 4);
  problem.out_form = linear_out_form(p);
  problem.route = p.route;
  problem.split_k_slices = p.split_k_slices;
  problem.coopmat_tile_n = p.coopmat_tile_n;
  problem.coopmat_tile_m = p.coopmat_tile_m;
  problem.im2col = im2col;
  const LinearKernel k = plan_linear_kernel(op, problem, graph.profile());
  return add_q8ta_linear_rows_node(graph, op, input, groups, row_count, weights, output, p, k,
                                   shuffle, im2col);
}

LinearRoute add_q8ta_linear_rows_node(graph::ComputeGraph& graph, const std::string& op,
                                      graph::ValueRef input, int64_t groups, int64_t row_count,
                                      const LinearWeights& weights, graph::ValueRef output,
                                      const LinearParams& p, const LinearKernel& k,
                                      const RowsShuffle& shuffle,
                                      const std::optional<Im2colInput>& im2col) {
  const auto& out = graph.tensor(output);
  const RowShape rows{groups, row_count, div_up(row_count, 4)};
  const int64_t n4 = div_up(weights.n, 4), k4 = div_up(weights.k, 4);
  const auto [packed, channels] =
      add_linear_constants(graph, weights, p.input.scale, out.name().empty() ? op : out.name(),
                           k.route == LinearRoute::Gemv, p.output_blocks);
  const QuantParams q = p.output.value_or(QuantParams{});
  const LinearPush push{int32_t(rows.row_blocks()),
                        int32_t(rows.h),
                        int32_t(rows.h4),
                        int32_t(k4),
                        int32_t(weights.n),
                        int32_t(n4),
                        int32_t(4 * n4),
                        p.input.zero_point,
                        q.zero_point,
                        inverse_scale(q.scale),
                        p.activation_min,
                        p.activation_max};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = k.kernel;
  node.bindings = {output, input, packed, channels};
  node.push_constants = graph::push_constant_bytes(push);
  if (p.residual) {
    const ResidualAdd& r = *p.residual;
    node.bindings.push_back(r.other);
    node.push_constants = graph::push_constant_bytes(LinearAddPush{
        push, binary_quant_push(q, r.other_quant, r.output, r.activation_min, r.activation_max)});
  }
  if (p.row_scales >= 0 && p.row_scales_after_rows) {  // binding 1 holds both (OUT_DTYPE 8)
    const auto [root, rows_at] = graph.alias_root(input);
    const auto [scales_root, scales_at] = graph.alias_root(p.row_scales);
    VKD_CHECK(root == scales_root && rows_at == 0 && scales_at % 16 == 0 &&
                  scales_at / 16 < (uint64_t(1) << 31),
              ErrorCode::Internal, op, ": the row scales are not after the rows in one tensor");
    node.bindings[1] = root;
    node.push_constants =
        graph::push_constant_bytes(LinearScalesAtPush{push, static_cast<int32_t>(scales_at / 16)});
  } else if (p.row_scales >= 0) {
    node.bindings.push_back(p.row_scales);  // binding 4 (OUT_DTYPE 3)
  }
  if (p.float_residual >= 0) node.bindings.push_back(p.float_residual);  // binding 4 (4)
  if (im2col) {
    // The convolution's geometry after the other members (linear_common.glslh's p.conv).
    const auto geometry = graph::push_constant_bytes(im2col->geometry);
    node.push_constants.insert(node.push_constants.end(), geometry.begin(), geometry.end());
  }
  if (k.route == LinearRoute::SplitK) {
    // The scratch of the slices' sums and the tiles' arrival counters (q8ta_linear_gemm.glsl's
    // Partial), zero when the graph is loaded; each execution leaves them at zero.
    const int64_t words =
        4 * rows.row_blocks() * 4 * n4 + int64_t(k.plan.group_count[0]) * k.plan.group_count[1];
    const auto bytes = static_cast<size_t>(words * 4);
    node.bindings.push_back(graph.add_constant(
        {{words}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked},
        (out.name().empty() ? op : out.name()) + ".split_k",
        [bytes] { return std::vector<uint8_t>(bytes, 0); }, bytes));
  }
  node.spec_constants = {epilogue_acc_below_2_22(graph.profile(), weights.k)};
  if (p.output) {
    const std::array<uint32_t, 3> store =
        shuffle_constants(graph.profile(), shuffle, weights.n, rows.batches);
    node.spec_constants.insert(node.spec_constants.end(), store.begin(), store.end());
  }
  if (im2col && im2col->window) {
    const std::array<uint32_t, 3> window = window_constants(im2col->geometry);
    node.spec_constants.insert(node.spec_constants.end(), window.begin(), window.end());
  }
  // The GEMM's COMPACT (specialization constant 7, shaders/q8ta_linear_gemm.glsl).
  if (k.compact_constant) {
    node.spec_constants.push_back(graph.profile().compact_kernels ? 1 : 0);
  }
  node.plan = k.plan;
  graph.add_node(std::move(node));
  return k.route;
}

void add_q8da_linear_node(graph::ComputeGraph& graph, graph::ValueRef input,
                          const LinearWeights& weights, graph::ValueRef output, int32_t quant_min,
                          int32_t quant_max, float eps, LinearRoute route) {
  const std::string op = "q8da_linear";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_float_linear(op, in, out, weights);
  // torchao's symmetric zero point, int((quant_max + quant_min + 1) / 2), must be 0: the
  // epilogue has no per-row zero-point correction.
  VKD_CHECK(-128 <= quant_min && quant_min < quant_max && quant_max <= 127 &&
                (quant_min + quant_max + 1) / 2 == 0,
            ErrorCode::InvalidArgument, op, ": activation range [", quant_min, ", ", quant_max,
            "] must be a symmetric int8 range (zero point 0), e.g. [-128, 127] or [-127, 127]");

  // Scratch tensors: one scale per row, the rows as int8x4 4H4W.
  const std::string name = out.name().empty() ? op : out.name();
  const TensorSpec& x = in.spec();
  const int64_t rows = x.numel() / weights.k;
  const graph::ValueRef scales =
      graph.add_tensor({{rows}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked},
                       name + ".act_scale");
  const graph::ValueRef quantized =
      graph.add_tensor({x.sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4H4W},
                       name + ".act_q");
  // The way down where the linear's row-scale kernels (5 storage buffers) exceed a stage (the
  // Android baseline's 4): the rows and then the scales in one tensor, read through one binding.
  const shaders::Kernel rows_kernel = shaders::variants::q8ta_linear_gemv[3][0][0];
  const bool after_rows = !vk::fits_storage_buffers(graph.profile(), rows_kernel);
  if (after_rows) {
    // Two fresh tensors: they always can be placed together.
    VKD_CHECK(graph.place_together(quantized, scales, name + ".act").has_value(),
              ErrorCode::Internal, op, ": its rows and row scales cannot share one buffer");
    note_way_down(graph, op, output,
                  "the row scales after the rows in '" + name + ".act', one binding",
                  vk::storage_buffers_problem(graph.profile(), rows_kernel));
  }
  const RowShape shape = row_shape(x);
  VKD_CHECK(std::isfinite(eps) && eps > 0.0f, ErrorCode::InvalidArgument, op,
            ": eps must be finite and > 0, got ", eps);
  const QuantizeRowsPush rows_push{int32_t(weights.k),
                                   int32_t(div_up(weights.k, 4)),
                                   int32_t(shape.h),
                                   int32_t(shape.h4),
                                   int32_t(shape.row_blocks() * 4),
                                   quant_min,
                                   quant_max,
                                   eps};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::Kernel::q8da_quantize_rows;
  node.bindings = {quantized, scales, input};
  node.push_constants = graph::push_constant_bytes(rows_push);
  // One workgroup per padded row; past the x limit the rows continue along y (the shader
  // flattens).
  const uint64_t groups = static_cast<uint64_t>(shape.row_blocks() * 4);
  const uint64_t gx = std::min<uint64_t>(groups, graph.profile().max_workgroup_count[0]);
  const uint64_t gy = (groups + gx - 1) / gx;
  VKD_CHECK(gy <= graph.profile().max_workgroup_count[1], ErrorCode::Unsupported, op, ": ", groups,
            " rows exceed the device's workgroup grid");
  node.plan.local_size = {kQuantizeRowsWorkgroup, 1, 1};
  node.plan.group_count = {static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1};
  graph.add_node(std::move(node));

  LinearParams p;
  p.input = QuantParams{1.0f, 0};  // the channel constants then hold s_w[n] alone
  p.row_scales = scales;
  p.row_scales_after_rows = after_rows;
  p.route = route;
  add_q8ta_linear_rows_node(graph, op, quantized, shape.batches, shape.h, weights, output, p);
}

void add_q8csw_linear_node(graph::ComputeGraph& graph, graph::ValueRef input,
                           const LinearWeights& weights, graph::ValueRef output) {
  const std::string op = "q8csw_linear";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_float_linear(op, in, out, weights);

  const int64_t rows = in.spec().numel() / weights.k;
  const int64_t n4 = div_up(weights.n, 4);
  const auto [packed, channels] =
      add_linear_constants(graph, weights, 1.0f, out.name().empty() ? op : out.name(), false, {});
  const Q8cswPush push{int32_t(rows),      int32_t(weights.k), int32_t(div_up(weights.k, 4)),
                       int32_t(weights.n), int32_t(n4),        int32_t(4 * n4)};
  graph::DispatchNode node;
  node.op = op;
  // Four rows a workgroup only on CPU devices: lavapipe, 128x384 -> 1536 97 -> 40 ms (a quarter
  // of the workgroups, each a coroutine with 7 barriers); on the H200 it was slower (44.3 ->
  // 64.2 us: 16 vec4 accumulators and 16 KiB of shared memory a workgroup).
  const bool four_rows = graph.profile().cpu_kernels && rows >= kQ8cswRows;
  node.kernel = shaders::variants::q8csw_linear[four_rows ? 1 : 0];
  node.bindings = {output, input, packed, channels};
  node.push_constants = graph::push_constant_bytes(push);
  // One workgroup per kQ8cswRows rows (one row below that many) and kQ8cswGroups channel groups
  // (shaders/q8csw_linear.glsl).
  const int64_t row_groups = four_rows ? div_up(rows, kQ8cswRows) : rows;
  VKD_CHECK(row_groups <= int64_t(graph.profile().max_workgroup_count[1]), ErrorCode::Unsupported,
            op, ": ", rows, " rows exceed the device's workgroup grid");
  node.plan.local_size = {kQ8cswWorkgroup, 1, 1};
  node.plan.group_count = {static_cast<uint32_t>(div_up(n4, kQ8cswGroups)),
                           static_cast<uint32_t>(row_groups), 1};
  graph.add_node(std::move(node));
}

// --- registry entries -------------------------------------------------------------

ResidualAdd residual_add(const OpCall& call) {
  ResidualAdd r;
  r.other = call.tensor("other");
  r.other_quant = call.quant("other");
  r.output = call.quant("output");
  r.activation_min = call.int32_arg("activation_min", -128, 127);
  r.activation_max = call.int32_arg("activation_max", -128, 127);
  call.set_zero_point("other", r.other_quant.zero_point);
  call.set_zero_point("output", r.output.zero_point);
  return r;
}

namespace {

// The blob's constants stay valid until prepare() (the loader keeps the blob while it builds).
// The loader checked them against the schema: weight int8 [N, K], scales and bias float32 [N].
LinearWeights blob_weights(const OpCall& call) {
  const auto& w = call.constant("weight");
  LinearWeights lw;
  lw.n = w.spec.sizes[0];
  lw.k = w.spec.sizes[1];
  const auto channels = call.channel_floats("weight_scales", "bias");
  lw.weight = reinterpret_cast<const int8_t*>(w.constant->data);
  lw.scales = channels->scales.data();
  lw.bias = channels->bias.data();
  lw.owner = channels;
  return lw;
}

// Every q8ta_linear form: an int8 input (its zero point set on the tensor) and blob weights.
LinearParams int8_input_params(const OpCall& call) {
  LinearParams p;
  p.input = call.quant("input");
  call.set_zero_point("input", p.input.zero_point);
  return p;
}

// An int8 output `name` with the activation range `<prefix>activation_min` / `_max`.
void set_int8_output(const OpCall& call, LinearParams& p, std::string_view name,
                     const std::string& prefix) {
  p.output = call.quant(name);
  p.activation_min = call.int32_arg(prefix + "activation_min", -128, 127);
  p.activation_max = call.int32_arg(prefix + "activation_max", -128, 127);
}

void add_linear_node(const OpCall& call, const LinearParams& p) {
  add_q8ta_linear_node(call.graph(), call.tensor("input"), blob_weights(call),
                       call.tensor("output"), p);
}

void build_q8ta_linear(const OpCall& call) {
  LinearParams p = int8_input_params(call);
  set_int8_output(call, p, "output", "");
  call.set_zero_point("output", p.output->zero_point);
  add_linear_node(call, p);
}

// The linear's own int8 output ("linear_") is the add's a.
void build_q8ta_linear_add(const OpCall& call) {
  LinearParams p = int8_input_params(call);
  set_int8_output(call, p, "linear", "linear_");
  p.residual = residual_add(call);
  add_linear_node(call, p);
}

void build_q8ta_linear_dq(const OpCall& call) { add_linear_node(call, int8_input_params(call)); }

// q8ta_linear_dq + float_add (alpha 1) with `other` in one dispatch.
void build_q8ta_linear_dq_add(const OpCall& call) {
  LinearParams p = int8_input_params(call);
  p.float_residual = call.tensor("other");
  add_linear_node(call, p);
}

// q8ta_linear with gelu (approximate 0 = erf, 1 = tanh) before the output quantize.
void build_q8ta_linear_gelu(const OpCall& call) {
  LinearParams p = int8_input_params(call);
  set_int8_output(call, p, "output", "");
  p.gelu = call.int32_arg("approximate", 0, 1) == 0 ? LinearGelu::Erf : LinearGelu::Tanh;
  call.set_zero_point("output", p.output->zero_point);
  add_linear_node(call, p);
}

// Q, K and V as one GEMM: the output's three column blocks with q's, k's and v's parameters.
void build_q8ta_linear_qkv(const OpCall& call) {
  LinearParams p = int8_input_params(call);
  p.output_blocks = {call.quant("q"), call.quant("k"), call.quant("v")};
  p.output = p.output_blocks[0];
  add_linear_node(call, p);
}

void build_q8da_linear(const OpCall& call) {
  add_q8da_linear_node(call.graph(), call.tensor("input"), blob_weights(call),
                       call.tensor("output"), call.int32_arg("quant_min", -128, 127),
                       call.int32_arg("quant_max", -128, 127),
                       static_cast<float>(call.float_arg("eps")));
}

void build_q8csw_linear(const OpCall& call) {
  add_q8csw_linear_node(call.graph(), call.tensor("input"), blob_weights(call),
                        call.tensor("output"));
}

}  // namespace

void register_linear_ops(OpRegistry& registry) {
  registry.add("q8ta_linear", build_q8ta_linear);
  registry.add("q8ta_linear_dq", build_q8ta_linear_dq);
  registry.add("q8ta_linear_add", build_q8ta_linear_add);
  registry.add("q8ta_linear_dq_add", build_q8ta_linear_dq_add);
  registry.add("q8ta_linear_gelu", build_q8ta_linear_gelu);
  registry.add("q8ta_linear_qkv", build_q8ta_linear_qkv);
  registry.add("q8da_linear", build_q8da_linear);
  registry.add("q8csw_linear", build_q8csw_linear);
}

}  // namespace vkd::ops
