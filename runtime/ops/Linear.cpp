// Op family: quantized linear (q8ta_linear, q8ta_linear_dq, q8csw_linear).
// Anatomy: push-constant structs (mirroring the shaders), weight/channel prepacking, the
// kernel choice (the one place tiles and workgroups are decided), add_*_node, registry entries.
#include "runtime/ops/Linear.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "core/Error.h"
#include "runtime/ops/OpRegistry.h"
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

// Mirrors `Params` in shaders/q8csw_linear.glsl.
struct Q8cswPush {
  int32_t rows, k, k4, n, n4, n_pad;
};

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
// the input scale and the channel's weight scale, the bias.
std::vector<uint8_t> pack_channels(const LinearWeights& w, float input_scale) {
  const int64_t n_pad = 4 * div_up(w.n, 4);
  std::vector<int32_t> words(static_cast<size_t>(3 * n_pad), 0);
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
std::pair<graph::ValueRef, graph::ValueRef> add_linear_constants(graph::ComputeGraph& graph,
                                                                 const LinearWeights& w,
                                                                 float input_scale,
                                                                 const std::string& name,
                                                                 bool channel_major) {
  const TensorSpec wspec{
      {packed_weight_blocks(w), 4}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked};
  const LinearWeights copy = w;
  const auto weights = graph.add_constant(
      wspec, name + ".weight_packed",
      [copy, channel_major] { return pack_weights(copy, channel_major); },
      static_cast<uint64_t>(w.n * w.k));
  return {weights, add_channel_constants(graph, w, input_scale, name)};
}

struct LinearKernel {
  LinearRoute route;
  shaders::Kernel kernel;
  vk::DispatchPlan plan;
  bool compact_constant = false;  // the kernel has COMPACT (q8ta_linear_gemm.glsl's constant 7)
  bool narrow = false;            // CoopMat: the 128 x 32 tile (NARROW_N)
};

// The split-K route (shaders/q8ta_linear_gemm.glsl, SPLIT_K). Auto takes it on a GPU where the
// GEMM has fewer 128 x 128 tiles than kSplitKMaxTiles (a large GPU has over 100 SMs) and K is at
// least kSplitKMinK; it then aims at kSplitKGroups workgroups (tiles x slices), each slice at
// least kSplitKMinStages stages of 32 K values (every slice adds its tile's sums to the scratch
// with atomics: too short a slice spends more on them than on its products).
// H100, us of the cooperative-matrix kernel vs split-K with the slices chosen here
// (vkd_custom_ops perf/q8ta_linear): M49 K4608 N512 (resnet18's 3x3 512x7x7) 58.5 vs 17.4
// (the best of 4..72 slices; 24: 19.0, 48: 18.9), M196 K2304 N256 33.1 vs 20.6; from K 1024
// down the cooperative-matrix kernel's narrow tile wins (M49 K960 N160 11.9 vs 12.9, N320 12.0
// vs 12.8, M196 K576 N96 9.6 vs 18.5).
constexpr int64_t kSplitKMaxTiles = 32;
constexpr int64_t kSplitKMinK = 1024;
constexpr int64_t kSplitKGroups = 128;
constexpr int64_t kSplitKMinStages = 2;
constexpr int64_t kStageK4 = 8;  // the GEMM's BK4

// "" when the device can run the split-K kernel, else what it lacks.
std::string split_k_unavailable(const vk::DeviceProfile& profile) {
  if (profile.max_workgroup_invocations < 256) return "256-invocation workgroups";
  if (!profile.device_scope_atomics()) return "Device-scope atomics under the memory model";
  return "";
}

bool use_split_k(const vk::DeviceProfile& profile, int64_t tiles, int64_t k4) {
  return !profile.cpu_kernels && tiles < kSplitKMaxTiles && 4 * k4 >= kSplitKMinK &&
         split_k_unavailable(profile).empty();
}

// The slices of K's `stages`: `requested` (0 = kSplitKGroups / tiles, at least kSplitKMinStages
// stages each), as equal ranges of whole stages: ceil(stages / ceil(stages / wanted)) of them,
// none empty (the last may be shorter). The shader derives the same ranges from the count.
int64_t split_k_slices(int64_t tiles, int64_t stages, int32_t requested) {
  const int64_t wanted =
      requested > 0
          ? requested
          : std::max<int64_t>(1, std::min(div_up(kSplitKGroups, tiles), stages / kSplitKMinStages));
  return div_up(stages, div_up(stages, wanted));
}

// The cooperative-matrix kernel's narrow tile (128 rows x 32 channels) where N has at most
// kNarrowMaxN4 words, or K at most kNarrowMaxK values and the wide tiles are fewer than
// kNarrowMaxWideTiles: it gives the scheduler 4x the workgroups and each a quarter of the
// epilogue, which wins where the grid is small or the epilogue long, and loses where the wide
// grid already fills the GPU or a large GEMM is bound by its operand traffic (the narrow tile
// reads each input row once per 32 channels). H100, us narrow vs wide (perf/q8ta_linear
// coopmat/n32, /n128, and the etvk/ pointwise cases): M65536 K48 N22 12.9 vs 20.5, M9216 K96
// N24 6.3 vs 8.9, M3136 K576 N128 (25 wide tiles) 9.5 vs 13.9, M196 K384 N96 8.0 vs 11.2,
// M49 K320 N1280 7.9 vs 10.9, M16384 K64 N64 a tie; but M16384 K128 N128 (128 wide tiles)
// 15.0 vs 9.7, M16384 K576 N64 15.9 vs 14.3, M1024 K2048 N2048 69 vs 31, M512 K4096 N4096
// 127 vs 55. Whole models (GPU total): refinenet_lite 203 -> 176 us, mobilenet_v2
// 541 -> 448, resnet18 518 -> 487 (narrow at every N with K <= 1024).
constexpr int64_t kNarrowMaxN4 = 8;
constexpr int64_t kNarrowMaxK = 1024;
constexpr int64_t kNarrowMaxWideTiles = 64;

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

// The one place the linear tiles and workgroups are chosen. GEMM and cooperative matrix: 128
// rows x 128 channels per workgroup of 256 invocations (shaders/q8ta_linear_gemm.glsl,
// q8ta_linear_coopmat.glsl; the latter 128 x 32 of 128 invocations for small N). GEMV: 128
// invocations, one row block x 8 channels. GEMV also where the device cannot run a 256-invocation
// workgroup. `out`: the OUT_DTYPE variant (linear_common.glslh): 0 int8, 1 float, 2 int8 + residual
// add. SplitK: the GEMM's tiles with the grid's z = K slices. `im2col`: the "_im2col" variant of
// the chosen kernel, whose load_input gathers from a convolution's input (int8 outputs only).
LinearKernel choose_linear_kernel(const vk::DeviceProfile& profile, const std::string& op,
                                  const RowShape& rows, int64_t n4, int64_t k4, int out,
                                  const LinearParams& p, const Im2colInput* im2col = nullptr) {
  LinearRoute route = p.route;
  const std::string no_coopmat = linear_coopmat_unavailable(profile);
  // Every tiled kernel takes 128 rows per workgroup; the wide tiles 32 channel words.
  const int64_t row_tiles = div_up(rows.row_blocks() * 4, 128), wide_n4_tiles = div_up(n4, 32);
  const int64_t tiles = wide_n4_tiles * row_tiles;
  if (route == LinearRoute::Auto) {
    route = rows.batches * rows.h <= 4        ? LinearRoute::Gemv
            : use_split_k(profile, tiles, k4) ? LinearRoute::SplitK
            : no_coopmat.empty()              ? LinearRoute::CoopMat
                                              : LinearRoute::Gemm;
  }
  VKD_CHECK(route != LinearRoute::CoopMat || no_coopmat.empty(), ErrorCode::Unsupported, op,
            ": the cooperative-matrix route needs ", no_coopmat, ", which device '", profile.name,
            "' does not offer (or it was switched off)");
  VKD_CHECK(p.coopmat_tile_n == 0 || p.coopmat_tile_n == 32 || p.coopmat_tile_n == 128,
            ErrorCode::InvalidArgument, op, ": cooperative-matrix tile width ", p.coopmat_tile_n,
            " asked for (0 = chosen, 32 or 128)");
  const int64_t stages = div_up(k4, kStageK4);
  if (route == LinearRoute::SplitK) {
    const std::string no_split = split_k_unavailable(profile);
    VKD_CHECK(no_split.empty(), ErrorCode::Unsupported, op, ": the split-K route needs ", no_split,
              ", which device '", profile.name, "' does not offer");
    VKD_CHECK(p.split_k_slices >= 0 && p.split_k_slices <= stages, ErrorCode::InvalidArgument, op,
              ": ", p.split_k_slices, " split-K slices asked for, but K = ", 4 * k4, " has ",
              stages, " stages of 32 values (0 = chosen, else 1..", stages, ")");
  }
  if (route == LinearRoute::Gemm && profile.max_workgroup_invocations < 256)
    route = LinearRoute::Gemv;
  const int dot = profile.int8_dot_product ? 0 : 1;
  LinearKernel k{route, {}, {}};
  VKD_CHECK(!im2col || (linear_gathers_im2col(profile, route) && out != 1), ErrorCode::Internal, op,
            ": the ", to_string(route), " kernel has no implicit im2col form");
  if (im2col && im2col->window) {
    const std::string unfit = conv_window_unfit(profile, route, im2col->in_4w4c, im2col->geometry);
    VKD_CHECK(unfit.empty(), ErrorCode::Internal, op, ": the window form does not fit: ", unfit);
  }
  // The im2col variants' axes (variants.json): the input's layout, OUT_DTYPE int8 / int8_add.
  const int gather_in = im2col && im2col->in_4w4c ? 0 : 1, gather_out = out == 2 ? 1 : 0;
  if (route == LinearRoute::Gemm && profile.cpu_kernels) {
    // CPU devices (shaders/q8ta_linear_cpu.glsl): an invocation = one row block x the
    // workgroup's 32 channels (16 where N <= 16), a workgroup = one subgroup of 8 row blocks
    // (on lavapipe at resnet18's shapes 16, 32 and 64 invocations were no faster, and fewer
    // workgroups spread worse over the cores in the small late layers).
    const int64_t tile_n4 = n4 <= 4 ? 4 : 8;
    k.kernel = shaders::variants::q8ta_linear_cpu[out][tile_n4 == 4 ? 0 : 1];
    k.plan.local_size = {8, 1, 1};
    k.plan.group_count = {static_cast<uint32_t>(div_up(rows.row_blocks(), 8)),
                          static_cast<uint32_t>(div_up(n4, tile_n4)), 1};
  } else if (route == LinearRoute::CoopMat && im2col && im2col->window) {
    // q8ta_conv2d_coopmat.glsl: two segments of kWindowSegment pixels of an image row x 64
    // channels per workgroup of 128 invocations.
    const ConvWindowGrid grid = conv_window_grid(im2col->geometry, rows.batches, 4 * n4, k4);
    k.kernel = shaders::variants::q8ta_conv2d_coopmat[0][gather_out];
    k.plan.local_size = {128, 1, 1};
    k.plan.group_count = {static_cast<uint32_t>(grid.groups_x),
                          static_cast<uint32_t>(grid.groups_y), 1};
  } else if (route == LinearRoute::CoopMat) {
    // 128 rows x 128 channels per workgroup of 256 invocations, or 128 x 32 of 128 (NARROW_N)
    // for few channels or a short K.
    const bool narrow =
        p.coopmat_tile_n == 32 ||
        (p.coopmat_tile_n == 0 &&
         (n4 <= kNarrowMaxN4 || (4 * k4 <= kNarrowMaxK && tiles < kNarrowMaxWideTiles)));
    k.kernel =
        im2col
            ? shaders::variants::q8ta_linear_coopmat_im2col[gather_in][gather_out][narrow ? 1 : 0]
            : shaders::variants::q8ta_linear_coopmat[out][narrow ? 1 : 0];
    k.narrow = narrow;
    k.plan.local_size = {narrow ? 128u : 256u, 1, 1};
    k.plan.group_count = {static_cast<uint32_t>(div_up(n4, narrow ? 8 : 32)),
                          static_cast<uint32_t>(row_tiles), 1};
  } else if (route == LinearRoute::Gemm || route == LinearRoute::SplitK) {
    // 128 rows x 128 channels per workgroup of 256 invocations.
    const bool split = route == LinearRoute::SplitK;
    k.kernel =
        im2col
            ? shaders::variants::q8ta_linear_gemm_im2col[gather_in][gather_out][dot][split ? 1 : 0]
            : shaders::variants::q8ta_linear_gemm[out][dot][split ? 1 : 0];
    k.compact_constant = true;
    // SplitK: the grid's z is K's slices.
    const int64_t slices = split ? split_k_slices(tiles, stages, p.split_k_slices) : 1;
    k.plan.local_size = {16, 16, 1};
    k.plan.group_count = {static_cast<uint32_t>(wide_n4_tiles), static_cast<uint32_t>(row_tiles),
                          static_cast<uint32_t>(slices)};
  } else {
    // 128 invocations, 2 channel groups (shaders/q8ta_linear_gemv.glsl has the sweep).
    k.kernel = shaders::variants::q8ta_linear_gemv[out][dot][profile.subgroup_arithmetic ? 1 : 0];
    k.plan.local_size = {128, 1, 1};
    k.plan.group_count = {static_cast<uint32_t>(div_up(n4, 2)),
                          static_cast<uint32_t>(rows.row_blocks()), 1};
  }
  return k;
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

}  // namespace

graph::ValueRef add_channel_constants(graph::ComputeGraph& graph, const LinearWeights& w,
                                      float input_scale, const std::string& name) {
  const TensorSpec spec{
      {3, 4 * div_up(w.n, 4)}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked};
  const LinearWeights copy = w;
  return graph.add_constant(
      spec, name + ".channels", [copy, input_scale] { return pack_channels(copy, input_scale); },
      static_cast<uint64_t>(w.n * 8));
}

bool linear_gathers_im2col(const vk::DeviceProfile& profile, LinearRoute route) {
  return route == LinearRoute::CoopMat || route == LinearRoute::SplitK ||
         (route == LinearRoute::Gemm && !profile.cpu_kernels &&
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

LinearChoice chosen_linear_kernel(const vk::DeviceProfile& profile, const std::string& op,
                                  int64_t groups, int64_t rows, int64_t n, int64_t k,
                                  const LinearParams& p) {
  const RowShape shape{groups, rows, div_up(rows, 4)};
  const LinearKernel kernel =
      choose_linear_kernel(profile, op, shape, div_up(n, 4), div_up(k, 4), p.output ? 0 : 1, p);
  return {kernel.route, kernel.narrow};
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

void add_q8ta_linear_node(graph::ComputeGraph& graph, graph::ValueRef input,
                          const LinearWeights& weights, graph::ValueRef output,
                          const LinearParams& p) {
  const std::string op = !p.output    ? "q8ta_linear_dq"
                         : p.residual ? "q8ta_linear_add"
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
  }
  if (p.residual) check_residual_add(op, graph, output, *p.residual);
  check_quant_params(op, p.input);
  check_weights(op, weights);
  check_linear_shapes(op, in.spec(), out.spec(), weights);
  const RowShape rows = row_shape(in.spec());
  add_q8ta_linear_rows_node(graph, op, input, rows.batches, rows.h, weights, output, p);
}

LinearRoute add_q8ta_linear_rows_node(graph::ComputeGraph& graph, const std::string& op,
                                      graph::ValueRef input, int64_t groups, int64_t row_count,
                                      const LinearWeights& weights, graph::ValueRef output,
                                      const LinearParams& p, const RowsShuffle& shuffle,
                                      const std::optional<Im2colInput>& im2col) {
  const auto& out = graph.tensor(output);
  const RowShape rows{groups, row_count, div_up(row_count, 4)};
  const int64_t n4 = div_up(weights.n, 4), k4 = div_up(weights.k, 4);
  const int out_form = !p.output ? 1 : p.residual ? 2 : 0;
  const LinearKernel k = choose_linear_kernel(graph.profile(), op, rows, n4, k4, out_form, p,
                                              im2col ? &*im2col : nullptr);
  const auto [packed, channels] =
      add_linear_constants(graph, weights, p.input.scale, out.name().empty() ? op : out.name(),
                           k.route == LinearRoute::Gemv);
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

void add_q8csw_linear_node(graph::ComputeGraph& graph, graph::ValueRef input,
                           const LinearWeights& weights, graph::ValueRef output) {
  const std::string op = "q8csw_linear";
  const auto& in = graph.tensor(input);
  const auto& out = graph.tensor(output);
  check_float_buffer(op, in);
  check_float_buffer(op, out);
  check_weights(op, weights);
  check_linear_shapes(op, in.spec(), out.spec(), weights);

  const int64_t rows = in.spec().numel() / weights.k;
  const int64_t n4 = div_up(weights.n, 4);
  const auto [packed, channels] =
      add_linear_constants(graph, weights, 1.0f, out.name().empty() ? op : out.name(), false);
  const Q8cswPush push{int32_t(rows),      int32_t(weights.k), int32_t(div_up(weights.k, 4)),
                       int32_t(weights.n), int32_t(n4),        int32_t(4 * n4)};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = shaders::Kernel::q8csw_linear;
  node.bindings = {output, input, packed, channels};
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(rows * n4));
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

void build_q8ta_linear(const OpCall& call) {
  LinearParams p;
  p.input = call.quant("input");
  p.output = call.quant("output");
  p.activation_min = call.int32_arg("activation_min", -128, 127);
  p.activation_max = call.int32_arg("activation_max", -128, 127);
  call.set_zero_point("input", p.input.zero_point);
  call.set_zero_point("output", p.output->zero_point);
  add_q8ta_linear_node(call.graph(), call.tensor("input"), blob_weights(call),
                       call.tensor("output"), p);
}

// The linear's own int8 output ("linear_") is the add's a.
void build_q8ta_linear_add(const OpCall& call) {
  LinearParams p;
  p.input = call.quant("input");
  p.output = call.quant("linear");
  p.activation_min = call.int32_arg("linear_activation_min", -128, 127);
  p.activation_max = call.int32_arg("linear_activation_max", -128, 127);
  p.residual = residual_add(call);
  call.set_zero_point("input", p.input.zero_point);
  add_q8ta_linear_node(call.graph(), call.tensor("input"), blob_weights(call),
                       call.tensor("output"), p);
}

void build_q8ta_linear_dq(const OpCall& call) {
  LinearParams p;
  p.input = call.quant("input");
  call.set_zero_point("input", p.input.zero_point);
  add_q8ta_linear_node(call.graph(), call.tensor("input"), blob_weights(call),
                       call.tensor("output"), p);
}

}  // namespace

void register_linear_ops(OpRegistry& registry) {
  registry.add("q8ta_linear", build_q8ta_linear);
  registry.add("q8ta_linear_dq", build_q8ta_linear_dq);
  registry.add("q8ta_linear_add", build_q8ta_linear_add);
}

}  // namespace vkd::ops
