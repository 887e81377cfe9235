// The convolution plan and the linear kernel choice (ConvPlan.h): the tuning tables, then
// plan_linear_kernel, then plan_conv2d. Every threshold's measurements: docs/BENCHMARKS.md,
// "Convolution plan thresholds".
#include "runtime/ops/ConvPlan.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "core/Error.h"
#include "partitioner_schema/ConvRoutes.h"

namespace vkd::ops {
namespace {

// Desktop GPUs: the thresholds as measured on the H100 (docs/BENCHMARKS.md, "Convolution plan
// thresholds").
constexpr ConvTuning kGpuTuning = [] {
  ConvTuning t;
  t.im2col_min_products = kIm2colMinProducts;
  t.im2col_max_bytes = uint64_t(256) << 20;
  t.pointwise_direct = true;
  t.pointwise_direct_max_c_in = 16;
  t.pointwise_direct_shuffled_max_c_in = 24;
  t.pointwise_direct_few_out_max_c_out = 24;
  t.pointwise_direct_few_out_max_c_in = 48;
  t.implicit_im2col_narrow_coopmat = false;
  t.window_min_groups = 100;
  t.window_max_chunks = 8;
  t.depthwise_row_dots = true;
  t.depthwise_min_invocations_log2 = 17;
  t.depthwise_row_dots_min_invocations_log2 = 16;
  t.depthwise_4c1w_min_invocations_log2 = 18;
  t.fq_channel_blocks = 1;
  t.split_k = true;
  t.split_k_max_tiles = 32;
  t.split_k_min_k = 1024;
  t.split_k_groups = 128;
  t.split_k_min_stages = 2;
  t.narrow_max_n4 = 8;
  t.narrow_max_k = 1024;
  t.narrow_max_wide_tiles = 64;
  t.short_max_narrow_tiles = 64;
  t.short_split8_max_tiles = 64;
  t.short16_max_rows = 256;
  t.dw_pw_fused = true;
  t.dw_pw_max_fused_out = 32;
  t.dw_pw_max_expansion_products = 32 * 192;
  t.shuffled_head_fused = true;
  return t;
}();

// CPU devices (lavapipe): the GPU table with what measured no faster there switched off
// (pointwise on the direct kernel, row dot products, split-K, the fused forms, whose first
// dispatch compiles their unrolled kernels) and 2 channel blocks per fq invocation.
constexpr ConvTuning kCpuTuning = [] {
  ConvTuning t = kGpuTuning;
  t.pointwise_direct = false;
  t.depthwise_row_dots = false;
  t.fq_channel_blocks = 2;
  t.split_k = false;
  t.dw_pw_fused = false;
  t.shuffled_head_fused = false;
  return t;
}();

}  // namespace

TuningClass tuning_class(const vk::DeviceProfile& profile) {
  return profile.cpu_kernels ? TuningClass::CpuKernels : TuningClass::Gpu;
}

const ConvTuning& conv_tuning(TuningClass device) {
  return device == TuningClass::CpuKernels ? kCpuTuning : kGpuTuning;
}

// --- the linear kernels ------------------------------------------------------------

namespace {

constexpr int64_t kStageK4 = 8;  // the GEMM's BK4
// The short tile over 8 subgroups (q8ta_linear_coopmat.glsl's TILE 3 and 5): per subgroup a
// stage buffer of the tile's rows and one of its 32 channels, each row of 20 words.
constexpr uint32_t short_split8_shared_bytes(int64_t rows) {
  return static_cast<uint32_t>(8 * (rows + 32) * 20 * 4);
}

// "" when the device can run the split-K kernel, else what it lacks.
std::string split_k_unavailable(const vk::DeviceProfile& profile) {
  if (profile.max_workgroup_invocations < 256) return "256-invocation workgroups";
  if (!profile.device_scope_atomics()) return "Device-scope atomics under the memory model";
  return "";
}

// Auto's split-K (shaders/q8ta_linear_gemm.glsl, SPLIT_K): few 128 x 128 tiles and a long K,
// where every slice adds its tile's sums to the scratch with atomics.
bool use_split_k(const vk::DeviceProfile& profile, const ConvTuning& t, int64_t tiles, int64_t k4) {
  return t.split_k && tiles < t.split_k_max_tiles && 4 * k4 >= t.split_k_min_k &&
         split_k_unavailable(profile).empty();
}

// The slices of K's `stages`: `requested` (0 = split_k_groups / tiles, at least
// split_k_min_stages stages each), as equal ranges of whole stages: ceil(stages / ceil(stages /
// wanted)) of them, none empty (the last may be shorter). The shader derives the same ranges
// from the count.
int64_t split_k_slices(const ConvTuning& t, int64_t tiles, int64_t stages, int32_t requested) {
  const int64_t wanted = requested > 0
                             ? requested
                             : std::max<int64_t>(1, std::min(div_up(t.split_k_groups, tiles),
                                                             stages / t.split_k_min_stages));
  return div_up(stages, div_up(stages, wanted));
}

// The GEMV kernel's WG and NG (shaders/q8ta_linear_gemv.glsl).
constexpr int64_t kGemvInvocations = 128, kGemvGroups = 2;
// Up to this many K words (K <= 4096), the GEMV gives each subgroup its own channel groups
// (SG_REDUCE 2) instead of reducing every K across the workgroup: at a short K the workgroup
// reduction (subgroupAdd of 8 words, shared memory, a barrier) outweighs the products (the
// 1 x 512 -> 9059 head: one K word per invocation, 1133 workgroups of 8 channels; per subgroup,
// 284 workgroups of 32, 4 K words per lane), and at K = 4096 the streaming GEMVs still gain
// (H200, GB/s, workgroup / per subgroup: 4096 -> 4096 2647 / 3277, 4096 -> 11008 2758 / 3191,
// 4096 -> 32000 3019 / 3728: docs/BENCHMARKS.md). Longer K is not measured.
constexpr int64_t kGemvPerSubgroupMaxK4 = 1024;
// On a GPU, only where the per-subgroup grid keeps this many workgroups (a small N, 1 x 384 ->
// 384, would otherwise run on a tenth of an H200's SMs); CPU devices (lavapipe: 16 subgroups of
// 8 per workgroup, 1 x 512 -> 9059 15.8 -> 2.1 ms) want fewer, larger workgroups anyway.
constexpr int64_t kGemvPerSubgroupMinWorkgroups = 128;

// Whether the GEMV runs SG_REDUCE 2 on `profile` for K4 = `k4`, N4 = `n4` over `row_blocks`:
// subgroup shuffles, a subgroup of at least 4 NG lanes dividing the workgroup, a short K,
// enough workgroups on a GPU.
bool gemv_per_subgroup(const vk::DeviceProfile& profile, int64_t k4, int64_t n4,
                       int64_t row_blocks) {
  const int64_t sg = profile.subgroup_size;
  if (!profile.subgroup_shuffle || sg < 4 * kGemvGroups || sg > kGemvInvocations ||
      kGemvInvocations % sg != 0 || k4 > kGemvPerSubgroupMaxK4) {
    return false;
  }
  const int64_t workgroups = row_blocks * div_up(n4, kGemvGroups * (kGemvInvocations / sg));
  return profile.cpu_kernels || workgroups >= kGemvPerSubgroupMinWorkgroups;
}

}  // namespace

// GEMM and cooperative matrix: 128 rows x 128 channels per workgroup of 256 invocations
// (shaders/q8ta_linear_gemm.glsl, q8ta_linear_coopmat.glsl; the latter 128 x 32 of 128
// invocations, the narrow tile, for small N or a short K). GEMV: 128 invocations, one row block
// x 8 channels; also where the device cannot run a 256-invocation workgroup. SplitK: the GEMM's
// tiles with the grid's z = K slices. `im2col`: the "_im2col" variant of the chosen kernel,
// whose load_input gathers from a convolution's input (int8 outputs only).
LinearKernel plan_linear_kernel(const std::string& op, const LinearProblem& lp,
                                const vk::DeviceProfile& profile) {
  const ConvTuning& t = conv_tuning(profile);
  const int64_t n4 = lp.n4, k4 = lp.k4, out = lp.out_form;
  const int64_t row_blocks = lp.groups * div_up(lp.rows, 4);
  const Im2colInput* im2col = lp.im2col ? &*lp.im2col : nullptr;
  LinearRoute route = lp.route;
  const std::string no_coopmat = linear_coopmat_unavailable(profile);
  // Every tiled kernel takes 128 rows per workgroup; the wide tiles 32 channel words.
  const int64_t row_tiles = div_up(row_blocks * 4, 128), wide_n4_tiles = div_up(n4, 32);
  const int64_t tiles = wide_n4_tiles * row_tiles;
  // The cooperative-matrix short tile's case (few narrow tiles, no tile asked for), where it
  // beats split-K too.
  const int64_t narrow_tiles = div_up(n4, 8) * row_tiles;
  const bool short_fits = !im2col && lp.coopmat_tile_m == 0 && lp.coopmat_tile_n == 0 &&
                          narrow_tiles < t.short_max_narrow_tiles;
  if (route == LinearRoute::Auto) {
    route = lp.groups * lp.rows <= 4             ? LinearRoute::Gemv
            : no_coopmat.empty() && short_fits   ? LinearRoute::CoopMat
            : use_split_k(profile, t, tiles, k4) ? LinearRoute::SplitK
            : no_coopmat.empty()                 ? LinearRoute::CoopMat
                                                 : LinearRoute::Gemm;
  }
  VKD_CHECK(route != LinearRoute::CoopMat || no_coopmat.empty(), ErrorCode::Unsupported, op,
            ": the cooperative-matrix route needs ", no_coopmat, ", which device '", profile.name,
            "' does not offer (or it was switched off)");
  VKD_CHECK(lp.coopmat_tile_n == 0 || lp.coopmat_tile_n == 32 || lp.coopmat_tile_n == 128,
            ErrorCode::InvalidArgument, op, ": cooperative-matrix tile width ", lp.coopmat_tile_n,
            " asked for (0 = chosen, 32 or 128)");
  VKD_CHECK(lp.coopmat_tile_m == 0 || lp.coopmat_tile_m == 128 ||
                ((lp.coopmat_tile_m == 32 || lp.coopmat_tile_m == 16) && lp.coopmat_tile_n != 128 &&
                 !im2col),
            ErrorCode::InvalidArgument, op, ": cooperative-matrix tile height ", lp.coopmat_tile_m,
            " asked for (0 = chosen, 128, or 32 or 16 with 32 channels and no im2col input)");
  const int64_t stages = div_up(k4, kStageK4);
  if (route == LinearRoute::SplitK) {
    const std::string no_split = split_k_unavailable(profile);
    VKD_CHECK(no_split.empty(), ErrorCode::Unsupported, op, ": the split-K route needs ", no_split,
              ", which device '", profile.name, "' does not offer");
    VKD_CHECK(lp.split_k_slices >= 0 && lp.split_k_slices <= stages, ErrorCode::InvalidArgument, op,
              ": ", lp.split_k_slices, " split-K slices asked for, but K = ", 4 * k4, " has ",
              stages, " stages of 32 values (0 = chosen, else 1..", stages, ")");
  }
  const bool register_tiled = profile.cpu_kernels || profile.register_tiled_gemm;
  if (route == LinearRoute::Gemm && !register_tiled && profile.max_workgroup_invocations < 256)
    route = LinearRoute::Gemv;
  const int dot = profile.int8_dot_product ? 0 : 1;
  LinearKernel k;
  k.route = route;
  VKD_CHECK(!im2col || (linear_gathers_im2col(profile, route) && out != 1), ErrorCode::Internal, op,
            ": the ", to_string(route), " kernel has no implicit im2col form");
  if (im2col && im2col->window) {
    const std::string unfit = conv_window_unfit(profile, route, im2col->in_4w4c, im2col->geometry);
    VKD_CHECK(unfit.empty(), ErrorCode::Internal, op, ": the window form does not fit: ", unfit);
  }
  // The im2col variants' axes (shaders/q8ta_im2col.variants.json): the input's layout, OUT_DTYPE
  // int8 / int8_add.
  const int gather_in = im2col && im2col->in_4w4c ? 0 : 1, gather_out = out == 2 ? 1 : 0;
  if (route == LinearRoute::Gemm && register_tiled) {
    // The register-tiled GEMM (shaders/q8ta_linear_cpu.glsl): an invocation = one row block x
    // the workgroup's 32 channels (16 where N <= 16). CPU devices: a workgroup = one subgroup
    // of 8 row blocks sharing the weights by broadcast (on lavapipe at resnet18's shapes 16, 32
    // and 64 invocations were no faster, and fewer workgroups spread worse over the cores in
    // the small late layers). GPUs without a fast shared memory: 64 row blocks, each loading
    // its own weights (64 invocations: ARM's advised workgroup size).
    const int64_t tile_n4 = n4 <= 4 ? 4 : 8;
    const uint32_t local = profile.cpu_kernels ? 8u : std::min(64u, profile.max_workgroup_size[0]);
    k.kernel =
        shaders::variants::q8ta_linear_cpu[out][tile_n4 == 4 ? 0 : 1][profile.cpu_kernels ? 1 : 0];
    k.plan.local_size = {local, 1, 1};
    k.plan.group_count = {static_cast<uint32_t>(div_up(row_blocks, int64_t(local))),
                          static_cast<uint32_t>(div_up(n4, tile_n4)), 1};
  } else if (route == LinearRoute::CoopMat && im2col && im2col->window) {
    // q8ta_conv2d_coopmat.glsl: two segments of 64 pixels of an image row x 64 channels per
    // workgroup of 128 invocations.
    const ConvWindowGrid grid = conv_window_grid(im2col->geometry, lp.groups, 4 * n4, k4);
    k.kernel = shaders::variants::q8ta_conv2d_coopmat[0][gather_out];
    k.plan.local_size = {128, 1, 1};
    k.plan.group_count = {static_cast<uint32_t>(grid.groups_x),
                          static_cast<uint32_t>(grid.groups_y), 1};
  } else if (route == LinearRoute::CoopMat) {
    VKD_CHECK(out != 8, ErrorCode::Unsupported, op,
              ": the cooperative-matrix route has no form reading the row scales after the rows "
              "(device '",
              profile.name, "' binds 4 storage buffers a stage)");
    // 128 rows x 128 channels per workgroup of 256 invocations, or 128 x 32 of 128 (TILE 1)
    // for few channels or a short K, or the short tile (16 x 32 of 128 invocations, TILE 4;
    // 32 x 32 when asked for, TILE 2) where even the narrow grid is small (few rows).
    const bool short_tile = lp.coopmat_tile_m == 32 || lp.coopmat_tile_m == 16 || short_fits;
    // The short tile's rows: 16 or 32 as asked for, else 16 for few rows.
    const bool rows16 = lp.coopmat_tile_m == 16 ||
                        (lp.coopmat_tile_m != 32 && 4 * row_blocks <= t.short16_max_rows);
    const bool narrow =
        !short_tile &&
        (lp.coopmat_tile_n == 32 ||
         (lp.coopmat_tile_n == 0 && (n4 <= t.narrow_max_n4 || (4 * k4 <= t.narrow_max_k &&
                                                               tiles < t.narrow_max_wide_tiles))));
    // The short tile's K over 8 subgroups where its grid is small (its 4 subgroups then leave
    // most SMs idle while each walks a quarter of K); the grid counted in 32 x 32 tiles, as
    // short_split8_max_tiles was measured.
    const int64_t short_tiles = div_up(n4, 8) * div_up(row_blocks, 8);
    const bool split8 =
        short_tile && short_tiles < t.short_split8_max_tiles &&
        profile.max_shared_memory_bytes >= short_split8_shared_bytes(rows16 ? 16 : 32);
    k.tile = split8       ? (rows16 ? LinearTile::Short16Split8 : LinearTile::ShortSplit8)
             : short_tile ? (rows16 ? LinearTile::Short16 : LinearTile::Short)
             : narrow     ? LinearTile::Narrow
                          : LinearTile::Wide;
    const int tile = static_cast<int>(k.tile);
    k.kernel = im2col ? shaders::variants::q8ta_linear_coopmat_im2col[gather_in][gather_out][tile]
                      : shaders::variants::q8ta_linear_coopmat[out][tile];
    const bool wide = k.tile == LinearTile::Wide;
    k.plan.local_size = {wide || split8 ? 256u : 128u, 1, 1};
    const int64_t short_row_tiles = div_up(row_blocks, rows16 ? 4 : 8);
    k.plan.group_count = {static_cast<uint32_t>(div_up(n4, wide ? 32 : 8)),
                          static_cast<uint32_t>(short_tile ? short_row_tiles : row_tiles), 1};
  } else if (route == LinearRoute::Gemm || route == LinearRoute::SplitK) {
    // 128 rows x 128 channels per workgroup of 256 invocations.
    const bool split = route == LinearRoute::SplitK;
    k.kernel =
        im2col
            ? shaders::variants::q8ta_linear_gemm_im2col[gather_in][gather_out][dot][split ? 1 : 0]
            : shaders::variants::q8ta_linear_gemm[out][dot][split ? 1 : 0];
    k.compact_constant = true;
    // SplitK: the grid's z is K's slices.
    const int64_t slices = split ? split_k_slices(t, tiles, stages, lp.split_k_slices) : 1;
    k.plan.local_size = {16, 16, 1};
    k.plan.group_count = {static_cast<uint32_t>(wide_n4_tiles), static_cast<uint32_t>(row_tiles),
                          static_cast<uint32_t>(slices)};
  } else {
    // 128 invocations, 2 channel groups (shaders/q8ta_linear_gemv.glsl has the sweep); with a
    // short K, 2 channel groups per subgroup (SG_REDUCE 2).
    const bool per_subgroup = gemv_per_subgroup(profile, k4, n4, row_blocks);
    const int reduce = per_subgroup ? 2 : profile.subgroup_arithmetic ? 1 : 0;
    const int64_t groups_per_workgroup =
        per_subgroup ? kGemvGroups * (kGemvInvocations / profile.subgroup_size) : kGemvGroups;
    k.kernel = shaders::variants::q8ta_linear_gemv[out][dot][reduce];
    k.plan.local_size = {uint32_t(kGemvInvocations), 1, 1};
    k.plan.group_count = {static_cast<uint32_t>(div_up(n4, groups_per_workgroup)),
                          static_cast<uint32_t>(row_blocks), 1};
  }
  return k;
}

// --- the convolution ---------------------------------------------------------------

namespace {

// q8ta_conv2d_fq: the taps x input channel words its loops unroll (its KH, KW and C4_in are
// specialization constants); the compiler fuses a quantize into a convolution of fewer than 64
// products per output only, which stays below.
constexpr int64_t kFqMaxTapWords = 64;

// The bytes of q8ta_conv2d_fq's shared input window: the input words kFqTileH x kFqTileW output
// pixels read.
int64_t fq_window_bytes(const ConvProblem& c) {
  const Conv2dGeometry& g = c.geometry;
  const int64_t rows = (kFqTileH - 1) * g.stride_h + (c.kh - 1) * g.dilation_h + 1;
  const int64_t cols = (kFqTileW - 1) * g.stride_w + (c.kw - 1) * g.dilation_w + 1;
  return 4 * div_up(c.in.c, int64_t(4)) * rows * cols;
}

// Bytes of the im2col matrix: N * H_out * W4_out row blocks of K / 4 16-byte blocks.
uint64_t im2col_bytes(const ConvProblem& c) {
  return static_cast<uint64_t>(c.out.n * c.out.h * div_up(c.out.w, 4)) *
         static_cast<uint64_t>(im2col_k(c) / 4) * 16;
}

// "" when the im2col route fits, else what it needs. The GEMM writes only the 4W4C block
// structure (int8), and its weights are one [C_out, K] matrix (no groups). The matrix lives only
// between its two dispatches, but at its peak it is all device memory one transient claims: past
// the table's cap (and the device's maxStorageBufferRange, one binding) the direct kernel, which
// needs none, runs instead.
std::string im2col_unfit(const ConvProblem& c, const vk::DeviceProfile& profile,
                         const ConvTuning& t) {
  if (c.geometry.groups != 1) {
    return "groups 1 (groups = " + std::to_string(c.geometry.groups) + ")";
  }
  if (!c.int8_output || c.dequantize_output || c.out_layout != MemoryLayout::PackedInt8_4W4C) {
    return std::string("an int8 4W4C output (the GEMM writes no ") +
           (c.int8_output && !c.dequantize_output ? "4C1W" : "float") + " output)";
  }
  const uint64_t bytes = im2col_bytes(c);
  const uint64_t cap = std::min(t.im2col_max_bytes, profile.max_storage_buffer_range_bytes);
  if (bytes > cap) {
    return "an im2col matrix of at most " + std::to_string(cap) + " bytes (the lower of its " +
           std::to_string(t.im2col_max_bytes >> 20) +
           " MiB cap and the device's maxStorageBufferRange); this convolution's takes " +
           std::to_string(bytes) + " bytes";
  }
  return "";
}

bool fits_pointwise(const ConvProblem& c) {
  const Conv2dGeometry& g = c.geometry;
  return c.kh == 1 && c.kw == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_left == 0 && g.pad_bottom == 0 && g.pad_right == 0 && g.groups == 1 &&
         c.int8_output && c.in_layout == MemoryLayout::PackedInt8_4W4C &&
         c.out_layout == MemoryLayout::PackedInt8_4W4C;
}

// Whether the int8 output is written pixel-shuffled, added to a residual tensor or dequantized
// (shaders/common/conv_common.glslh, linear_common.glslh): the depthwise kernel's store does
// none of these (no variant; a depthwise q8ta_conv2d_q_dq runs the direct kernel).
bool fused_store(const ConvProblem& c) {
  return c.upscale > 1 || c.residual || c.dequantize_output;
}

bool fits_depthwise(const ConvProblem& c) {
  return c.geometry.groups == c.in.c && c.out_channels == c.in.c && !fused_store(c);
}

// The route of a float input quantized on load: the direct kernel's only, with its checks.
Conv2dRoute quantizing_route(const ConvProblem& c, const vk::DeviceProfile& profile) {
  const std::string& op = c.op;
  // Only the direct kernel has the quantizing load (shaders/common/conv_common.glslh).
  VKD_CHECK(c.route == Conv2dRoute::Auto || c.route == Conv2dRoute::Direct,
            ErrorCode::InvalidArgument, op, ": the ", to_string(c.route),
            " route reads an int8 input; a float input is quantized on load by the direct "
            "route only");
  const int64_t words = c.kh * c.kw * div_up(c.in.c, 4);
  VKD_CHECK(words <= kFqMaxTapWords, ErrorCode::InvalidArgument, op, ": a ", c.kh, "x", c.kw,
            " kernel over ", c.in.c, " float input channels is ", words,
            " taps x channel words; the quantizing load unrolls at most ", kFqMaxTapWords,
            " (the compiler fuses the quantize only below 64 products per output)");
  const int64_t bytes = fq_window_bytes(c);
  VKD_CHECK(bytes <= profile.max_shared_memory_bytes, ErrorCode::Unsupported, op,
            ": the quantized input window of a workgroup (", kFqTileH, "x", kFqTileW,
            " output pixels at stride ", c.geometry.stride_h, "x", c.geometry.stride_w,
            ", dilation ", c.geometry.dilation_h, "x", c.geometry.dilation_w, ") needs ", bytes,
            " bytes of shared memory; device '", profile.name, "' has ",
            profile.max_shared_memory_bytes);
  return Conv2dRoute::Direct;
}

// Auto: Pointwise where it fits, then Depthwise, then Im2col where it fits and an output sums
// at least im2col_min_products products, else Direct. A route asked for is checked.
Conv2dRoute choose_route(const ConvProblem& c, const vk::DeviceProfile& profile,
                         const ConvTuning& t) {
  if (c.quantize_input) return quantizing_route(c, profile);
  const std::string& op = c.op;
  const bool pointwise = fits_pointwise(c);
  const bool depthwise = fits_depthwise(c);
  switch (c.route) {
    case Conv2dRoute::Auto:
      if (pointwise) return Conv2dRoute::Pointwise;
      if (depthwise) return Conv2dRoute::Depthwise;
      if (im2col_unfit(c, profile, t).empty() &&
          c.in_per_group * c.kh * c.kw >= t.im2col_min_products) {
        return Conv2dRoute::Im2col;
      }
      return Conv2dRoute::Direct;
    case Conv2dRoute::Im2col: {
      const std::string unfit = im2col_unfit(c, profile, t);
      VKD_CHECK(unfit.empty(), ErrorCode::InvalidArgument, op, ": the im2col route needs ", unfit);
      break;
    }
    case Conv2dRoute::Pointwise:
      VKD_CHECK(pointwise, ErrorCode::InvalidArgument, op,
                ": the pointwise route needs a 1x1 kernel, stride 1, no padding, groups 1 and "
                "int8 4W4C input and output");
      break;
    case Conv2dRoute::Depthwise:
      VKD_CHECK(depthwise, ErrorCode::InvalidArgument, op,
                ": the depthwise route needs groups == C_in == C_out and an output that is neither "
                "pixel-shuffled nor added to, nor dequantized");
      break;
    case Conv2dRoute::Direct: break;
  }
  return c.route;
}

// Whether the Pointwise route runs the direct kernel (one 4-width x 4-channel output tile per
// invocation) instead of a linear kernel: where the table says so, with the linear kernel not
// asked for, and K short (few output channels: the GEMM tiles are mostly empty; a pixel-shuffled
// output: the direct kernel writes a tile's 4 words from one invocation).
bool pointwise_runs_direct(const ConvProblem& c, const ConvTuning& t) {
  if (!t.pointwise_direct || c.gemm != LinearRoute::Auto) return false;
  return c.in.c <= t.pointwise_direct_max_c_in ||
         (c.upscale > 1 && c.in.c <= t.pointwise_direct_shuffled_max_c_in) ||
         (c.out.c <= t.pointwise_direct_few_out_max_c_out &&
          c.in.c <= t.pointwise_direct_few_out_max_c_in);
}

// Whether Auto takes the implicit im2col where the linear kernel has it: the split-K and
// dot-product GEMM kernels and the cooperative-matrix kernel's wide tile; its narrow tile (small
// grids with every stage's latency exposed) only where the table says so.
bool prefer_implicit_im2col(const LinearKernel& gemm, const ConvTuning& t) {
  return !(gemm.route == LinearRoute::CoopMat && gemm.tile == LinearTile::Narrow &&
           !t.implicit_im2col_narrow_coopmat);
}

// Whether Auto takes the window form (q8ta_conv2d_coopmat) where it fits: a grid of at least
// window_min_groups workgroups (two 64-pixel segments of an image row x 64 channels each) and K
// at most window_max_chunks chunks (kernel row x 32 input channels x 3 taps: each chunk's loads
// are a step of latency the short multiply hides only in part).
bool prefer_window(const ConvWindowGrid& grid, const ConvTuning& t) {
  return grid.workgroups() >= t.window_min_groups && grid.chunks <= t.window_max_chunks;
}

// The Im2col route's form for the linear kernel `gemm` (Im2colForm's rule, never Auto);
// InvalidArgument where a form is asked for that the kernel or the convolution does not have.
Im2colForm im2col_form(const ConvProblem& c, const vk::DeviceProfile& profile, const ConvTuning& t,
                       const LinearKernel& gemm, const Im2colGeometry& g) {
  const std::string& op = c.op;
  const LinearRoute route = gemm.route;
  const bool can = linear_gathers_im2col(profile, route);
  const bool in_4w4c = c.in_layout == MemoryLayout::PackedInt8_4W4C;
  const std::string no_window = conv_window_unfit(profile, route, in_4w4c, g);
  switch (c.im2col_form) {
    case Im2colForm::Explicit: return c.im2col_form;
    case Im2colForm::Implicit:
      // Unsupported: which kernel runs the GEMM is the device's (and its class's) choice.
      VKD_CHECK(can, ErrorCode::Unsupported, op,
                ": the implicit im2col needs the cooperative-matrix, GEMM or split-K kernel; this "
                "convolution's GEMM runs the ",
                to_string(route), " kernel", profile.cpu_kernels ? " of a CPU device" : "");
      return c.im2col_form;
    case Im2colForm::Window:
      VKD_CHECK(no_window.empty(), ErrorCode::InvalidArgument, op,
                ": the window form (q8ta_conv2d_coopmat) needs ", no_window,
                "; this convolution's GEMM runs the ", to_string(route), " kernel");
      return c.im2col_form;
    case Im2colForm::Auto: break;
  }
  const bool window_faster =
      prefer_window(conv_window_grid(g, c.out.n * c.out.h, c.out_channels, im2col_k(c) / 4), t);
  if (no_window.empty() && window_faster) return Im2colForm::Window;
  return can && prefer_implicit_im2col(gemm, t) ? Im2colForm::Implicit : Im2colForm::Explicit;
}

// Whether the depthwise kernel takes one int8 dot product per kernel row and channel instead of
// one per tap and channel (ROW_DOTS, shaders/q8ta_conv2d_dw.glsl): as asked (InvalidArgument
// where the kernel row does not fit one word of a 4W4C input), else wherever it fits and the
// table says so.
bool depthwise_row_dots(const ConvProblem& c, const ConvTuning& t) {
  using Products = Conv2dParams::DepthwiseProducts;
  const int64_t span = (c.kw - 1) * int64_t(c.geometry.dilation_w) + 1;
  const bool fits = c.in_layout == MemoryLayout::PackedInt8_4W4C && span <= 4;
  switch (c.depthwise_products) {
    case Products::LaneMasks: return false;
    case Products::RowDots:
      VKD_CHECK(fits, ErrorCode::InvalidArgument, c.op,
                ": depthwise row dot products need a 4W4C input and a kernel row of at most 4 "
                "widths ((KW - 1) * dilation_w + 1 = ",
                span, ")");
      return true;
    case Products::Auto: break;
  }
  return fits && t.depthwise_row_dots;
}

// What one depthwise invocation computes: `rows` output rows of `tiles_w` tiles (4 widths x 4
// channels each) along the row (shaders/q8ta_conv2d_dw.glsl, ROWS and TW). The requested
// mapping, else for a 4W4C input the most tiles per invocation of 4 (2 rows x 2 tiles), 2 (1 row
// x 2 tiles) and 1 that still leaves the table's floor of invocations (lower with the row dot
// products, whose windows and transposes are shared by more products per invocation); a 4C1W
// input keeps one tile (rows 4, 2, 1 down to its floor): its neighbouring invocations take
// neighbouring widths. Beyond 4 tiles the driver stops unrolling the kernel.
std::pair<int64_t, int64_t> depthwise_mapping(const ConvProblem& c, const ConvTuning& t,
                                              int64_t tiles, bool row_dots) {
  if (c.depthwise_rows > 0 || c.depthwise_tiles_w > 0) {
    return {std::max<int64_t>(c.depthwise_rows, 1), std::max<int64_t>(c.depthwise_tiles_w, 1)};
  }
  if (c.in_layout == MemoryLayout::PackedInt8_4C1W) {
    int64_t rows = 4;
    while (rows > 1 && tiles / rows < (int64_t(1) << t.depthwise_4c1w_min_invocations_log2)) {
      rows /= 2;
    }
    return {rows, 1};
  }
  const int64_t min_invocations = int64_t(1)
                                  << (row_dots ? t.depthwise_row_dots_min_invocations_log2
                                               : t.depthwise_min_invocations_log2);
  if (tiles / 4 >= min_invocations) return {2, 2};
  if (tiles / 2 >= min_invocations) return {1, 2};
  return {1, 1};
}

// The Pointwise and Im2col routes: the linear kernels.
void plan_linear_conv(const ConvProblem& c, const vk::DeviceProfile& profile, const ConvTuning& t,
                      ConvPlan& plan) {
  plan.linear = true;
  LinearProblem lp;
  lp.route = c.gemm;
  lp.split_k_slices = c.gemm_slices;
  lp.coopmat_tile_n = c.coopmat_tile_n;
  lp.out_form = !c.int8_output ? 1 : c.residual ? 2 : 0;
  lp.n4 = div_up(c.out_channels, 4);
  if (plan.route == Conv2dRoute::Pointwise) {
    // 4W4C blocks are (4 pixels of one image row) x (4 channels): the linear kernels' rows x K.
    lp.groups = c.in.n * c.in.h;
    lp.rows = c.in.w;
    lp.k4 = div_up(c.in_per_group, 4);
    plan.gemm = plan_linear_kernel(c.op, lp, profile);
    return;
  }
  // Im2col: the rows are the output pixels, K the matrix's. Not the short tile, which has no
  // gathering form: its explicit matrix (a dispatch more) is not measured against the implicit
  // split-K and narrow forms.
  const int64_t k = im2col_k(c);
  lp.groups = c.out.n * c.out.h;
  lp.rows = c.out.w;
  lp.k4 = k / 4;
  lp.coopmat_tile_m = 128;
  plan.im2col_geometry = im2col_geometry(c);
  const LinearKernel gemm = plan_linear_kernel(c.op, lp, profile);
  plan.im2col_form = im2col_form(c, profile, t, gemm, plan.im2col_geometry);
  if (plan.im2col_form == Im2colForm::Explicit) {
    // q8ta_im2col writes the matrix first; the plain kernel reads it.
    const bool in_4w4c = c.in_layout == MemoryLayout::PackedInt8_4W4C;
    plan.gemm = gemm;
    plan.im2col_kernel = shaders::variants::q8ta_im2col[in_4w4c ? 0 : 1];
    plan.im2col_dispatch = vk::plan_linear(
        profile, static_cast<uint64_t>(c.out.n * c.out.h * div_up(c.out.w, 4) * (k / 4)));
    return;
  }
  lp.im2col = Im2colInput{c.in_layout == MemoryLayout::PackedInt8_4W4C, plan.im2col_geometry,
                          plan.im2col_form == Im2colForm::Window};
  plan.gemm = plan_linear_kernel(c.op, lp, profile);
}

}  // namespace

int64_t im2col_k(const ConvProblem& c) { return c.kh * c.kw * div_up(c.in.c, 4) * 4; }

Im2colGeometry im2col_geometry(const ConvProblem& c) {
  const Conv2dGeometry& g = c.geometry;
  return {int32_t(div_up(c.in.c, 4)),
          int32_t(c.in.h),
          int32_t(c.in.w),
          int32_t(c.out.h),
          int32_t(c.out.w),
          int32_t(c.kw),
          g.stride_h,
          g.stride_w,
          g.pad_top,
          g.pad_left,
          g.dilation_h,
          g.dilation_w};
}

ConvProblem conv_problem(const std::string& op, const TensorSpec& in, const TensorSpec& out,
                         const Dims4& conv_out, const Conv2dWeights& w, const Conv2dParams& p) {
  ConvProblem c;
  c.op = op;
  c.in = in.dims4();
  c.out = conv_out;
  c.in_layout = in.layout;
  c.out_layout = out.layout;
  c.out_channels = w.out_channels;
  c.in_per_group = w.in_per_group;
  c.kh = w.kh;
  c.kw = w.kw;
  c.geometry = p.geometry;
  c.quantize_input = p.quantize_input;
  c.int8_output = p.output.has_value();
  c.dequantize_output = p.dequantize_output;
  c.residual = p.residual.has_value();
  c.upscale = p.upscale;
  c.route = p.route;
  c.gemm = p.gemm;
  c.gemm_slices = p.gemm_slices;
  c.coopmat_tile_n = p.coopmat_tile_n;
  c.im2col_form = p.im2col_form;
  c.depthwise_rows = p.depthwise_rows;
  c.depthwise_tiles_w = p.depthwise_tiles_w;
  c.depthwise_products = p.depthwise_products;
  return c;
}

ConvPlan plan_conv2d(const ConvProblem& c, const vk::DeviceProfile& profile) {
  const ConvTuning& t = conv_tuning(profile);
  ConvPlan plan;
  plan.route = choose_route(c, profile, t);
  if ((plan.route == Conv2dRoute::Pointwise && !pointwise_runs_direct(c, t)) ||
      plan.route == Conv2dRoute::Im2col) {
    plan_linear_conv(c, profile, t, plan);
    return plan;
  }
  // The direct family: the direct kernel (also the Pointwise route's short K), the depthwise
  // kernel or the quantizing-load direct kernel.
  const bool depthwise = plan.route == Conv2dRoute::Depthwise;
  const int64_t c4_out = div_up(c.out.c, 4);
  const int in_layout = c.in_layout == MemoryLayout::PackedInt8_4W4C ? 0 : 1;  // int8
  // OUTPUT (conv_common.glslh): int8 4W4C / 4C1W, float, int8 4W4C / 4C1W + residual, float
  // of the requantized int8.
  const int out_form =
      !c.int8_output ? 2
      : c.dequantize_output
          ? 5
          : (c.out_layout == MemoryLayout::PackedInt8_4W4C ? 0 : 1) + (c.residual ? 3 : 0);
  const int dot = profile.int8_dot_product ? 0 : 1;
  plan.kernel = depthwise          ? shaders::variants::q8ta_conv2d_dw[in_layout][out_form][dot]
                : c.quantize_input ? shaders::variants::q8ta_conv2d_fq[0][out_form][dot]
                                   : shaders::variants::q8ta_conv2d[in_layout][out_form][dot];
  if (c.quantize_input) {
    // A workgroup of 64 = kFqTileH x kFqTileW output pixels x CO4 channel blocks, its input
    // window quantized once into shared memory (shaders/q8ta_conv2d.glsl).
    plan.fq_channel_blocks = std::min<int64_t>(c4_out, t.fq_channel_blocks);
    const int64_t widths =
        c.out_layout == MemoryLayout::PackedInt8_4W4C ? 4 * div_up(c.out.w, 4) : c.out.w;
    plan.dispatch.local_size = {uint32_t(kFqTileH * kFqTileW), 1, 1};
    plan.dispatch.group_count = {
        uint32_t(div_up(widths, kFqTileW) * div_up(c4_out, plan.fq_channel_blocks)),
        uint32_t(div_up(c.out.h, kFqTileH) * c.out.n), 1};
    return plan;
  }
  if (depthwise) {
    // An invocation computes ROWS output rows of TW tiles, each input row loaded once for all
    // of them (shaders/q8ta_conv2d_dw.glsl).
    const int64_t tiles = c.out.n * c.out.h * div_up(c.out.w, 4) * c4_out;
    plan.depthwise_row_dots = depthwise_row_dots(c, t);
    std::tie(plan.depthwise_rows, plan.depthwise_tiles_w) =
        depthwise_mapping(c, t, tiles, plan.depthwise_row_dots);
  }
  plan.dispatch = vk::plan_linear(
      profile, static_cast<uint64_t>(c.out.n * div_up(c.out.h, plan.depthwise_rows) *
                                     div_up(c.out.w, 4 * plan.depthwise_tiles_w) * c4_out));
  return plan;
}

}  // namespace vkd::ops
