// Tests of the Vulkan runtime on the default device: staging round trips through buffers and
// textures, the pipeline cache (in memory and on disk), error paths and the workgroup chooser.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <memory>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "core/Env.h"
#include "core/Error.h"
#include "core/TensorSpec.h"
#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/LayoutConvert.h"
#include "runtime/ops/OpUtils.h"
#include "runtime/ops/QuantizeDequantize.h"
#include "runtime/vk/CopyWorkers.h"
#include "runtime/vk/PipelineCache.h"
#include "runtime/vk/WorkgroupChooser.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/QuantReference.h"
#include "test/unit/GpuTest.h"

namespace vkd_test {
namespace {

// Specialization constant 3 of the tile kernels: the walk order (TILE_ORDER_WHCN).
constexpr uint32_t kWalkWHCN = 2;

using vkd::DType;
using vkd::ErrorCode;
using vkd::MemoryLayout;
using vkd::StorageType;
using vkd::TensorSpec;
using vkd::graph::ComputeGraph;
using vkd::graph::ValueRef;
namespace shaders = vkd::shaders;
namespace vk = vkd::vk;

// Sets an environment variable for the scope, restoring the previous state afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_old_ = true;
      old_ = old;
    }
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_old_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_old_ = false;
  std::string old_;
};

using RuntimeTest = GpuTest;

// ---- the validation fixture itself ---------------------------------------------------------

TEST_F(RuntimeTest, ValidationLayerFollowsTheEnvironment) {
  EXPECT_EQ(ctx().instance().validation_enabled(), vkd::env_flag("VKD_VALIDATION"))
      << "CTest runs every test with VKD_VALIDATION=1; the shared context must honour it";
}

// An invalid Vulkan call on a private validated context is counted by the log and reported by
// ValidationWatch (the same check every GpuTest runs on the shared context).
TEST_F(RuntimeTest, ValidationWatchReportsNewMessages) {
  vk::ContextOptions options = test_context_options();
  options.validation = true;
  // The layer is a dependency third-party/install_deps.sh installs; its absence is a failure.
  std::unique_ptr<vk::Context> context;
  try {
    context = std::make_unique<vk::Context>(options);
  } catch (const vkd::Error& e) {
    FAIL() << "cannot create a validated context (vulkan-validationlayers): " << e.what();
  }
  ValidationWatch watch(*context, true);
  EXPECT_TRUE(watch.check("fresh context"));
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = 0;  // VUID-VkBufferCreateInfo-size-00912
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  const VkResult r = vkCreateBuffer(context->device(), &info, nullptr, &buffer);
  if (r == VK_SUCCESS && buffer != VK_NULL_HANDLE)
    vkDestroyBuffer(context->device(), buffer, nullptr);
  EXPECT_GT(context->instance().validation_log().error_count(), 0u);
  EXPECT_NONFATAL_FAILURE(watch.check("private context"), "VUID-VkBufferCreateInfo-size");
}

// ---- staging round trips --------------------------------------------------------------------

// A tensor that is both a graph input and a graph output, with no nodes: host staging -> GPU
// copy into the device tensor -> GPU copy out -> host.
TEST_F(RuntimeTest, BufferRoundTripFloat32EveryLayout) {
  const std::vector<int64_t> sizes = {2, 3, 6, 5};
  for (MemoryLayout layout : vkd::kAllFloatLayouts) {
    SCOPED_TRACE(short_name(layout));
    ComputeGraph g(ctx());
    const TensorSpec spec{sizes, DType::Float32, StorageType::Buffer, layout};
    const ValueRef t = g.add_tensor(spec, "roundtrip");
    g.add_input(t);
    g.add_output(t);
    g.prepare();
    const auto values = random_floats(static_cast<size_t>(spec.numel()), 11);
    g.write_float(t, values);
    g.execute();
    EXPECT_TRUE(floats_equal(values, g.read_float(t)));
    // The raw device order is the layout's element order.
    EXPECT_TRUE(words_equal(float_bits(ref_float_device(spec, values)), g.read_words(t)));
  }
}

TEST_F(RuntimeTest, BufferRoundTripInt8x4Words) {
  for (MemoryLayout layout : vkd::kAllPackedInt8Layouts) {
    SCOPED_TRACE(short_name(layout));
    const std::vector<int64_t> sizes = {1, 5, 3, 7};
    ComputeGraph g(ctx());
    const ValueRef t = g.add_tensor({sizes, DType::Int8x4, StorageType::Buffer, layout});
    g.add_input(t);
    g.add_output(t);
    g.prepare();
    const auto values = random_int8(5 * 3 * 7, 12);
    g.write_int8(t, values, -7);
    g.execute();
    EXPECT_TRUE(
        words_equal(vkd::testing::ref_pack(layout, ref_shape(sizes), values, -7), g.read_words(t)));
    EXPECT_EQ(values, g.read_int8(t));
  }
}

struct TextureCase {
  std::vector<int64_t> sizes;
  MemoryLayout layout;
};

void PrintTo(const TextureCase& c, std::ostream* os) {
  *os << shape_name(c.sizes) << " " << short_name(c.layout);
}

class TextureRoundTrip : public GpuTestWithParam<TextureCase> {};

TEST_P(TextureRoundTrip, Float32) {
  const TextureCase& p = GetParam();
  ComputeGraph g(ctx());
  const TensorSpec spec{p.sizes, DType::Float32, StorageType::Texture3D, p.layout};
  const ValueRef t = g.add_tensor(spec, "texture");
  g.add_input(t);
  g.add_output(t);
  g.prepare();
  const auto values = random_floats(static_cast<size_t>(spec.numel()), 13);
  g.write_float(t, values);
  g.execute();
  EXPECT_TRUE(floats_equal(values, g.read_float(t)));
  // Texel order and zero padding, checked against an independent formula.
  EXPECT_TRUE(words_equal(float_bits(ref_float_device(spec, values)), g.read_words(t)));
}

std::vector<TextureCase> texture_cases() {
  std::vector<TextureCase> cases;
  for (const auto& sizes : std::vector<std::vector<int64_t>>{{1, 5, 3, 7}, {2, 3, 6, 5}}) {
    for (MemoryLayout layout : vkd::kAllFloatLayouts) cases.push_back({sizes, layout});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Runtime, TextureRoundTrip, ::testing::ValuesIn(texture_cases()),
                         [](const ::testing::TestParamInfo<TextureCase>& info) {
                           return shape_name(info.param.sizes) + "_" +
                                  short_name(info.param.layout);
                         });

// ---- pipeline cache ---------------------------------------------------------------------------

TEST_F(RuntimeTest, PipelineCacheReusesPipelines) {
  // A private cache on the shared device, so its counters start at zero whatever ran before.
  vk::PipelineCache cache(ctx().device(), ctx().profile(), {});
  EXPECT_EQ(cache.created_count(), 0u);
  EXPECT_FALSE(cache.loaded_from_file());
  const vk::PipelineKey key{shaders::Kernel::q8ta_convert_4w4c_4c1w, {64, 1, 1}, {kWalkWHCN}};
  const VkPipeline first = cache.get(key).pipeline;
  EXPECT_NE(first, VK_NULL_HANDLE);
  EXPECT_EQ(cache.created_count(), 1u);

  // Same key: the cached pipeline, nothing created.
  EXPECT_EQ(cache.get(key).pipeline, first);
  EXPECT_EQ(cache.created_count(), 1u);
  EXPECT_EQ(cache.pipeline_count(), 1u);

  // Another local size: another pipeline. Another kernel: another pipeline.
  const vk::PipelineKey other_local{
      shaders::Kernel::q8ta_convert_4w4c_4c1w, {32, 1, 1}, {kWalkWHCN}};
  const VkPipeline second = cache.get(other_local).pipeline;
  EXPECT_NE(second, first);
  EXPECT_EQ(cache.created_count(), 2u);
  const vk::PipelineKey other_kernel{
      shaders::Kernel::q8ta_convert_4c1w_4w4c, {64, 1, 1}, {kWalkWHCN}};
  EXPECT_NE(cache.get(other_kernel).pipeline, first);
  EXPECT_EQ(cache.created_count(), 3u);
  EXPECT_EQ(cache.get(other_local).pipeline, second);
  EXPECT_EQ(cache.get(key).pipeline, first);
  EXPECT_EQ(cache.created_count(), 3u);
  EXPECT_EQ(cache.pipeline_count(), 3u);

  // Two graphs with the same op and sizes share their pipeline.
  auto run_graph = [&] {
    ComputeGraph g(ctx());
    const ValueRef in = g.add_tensor(
        {{1, 4, 4, 4}, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C});
    const ValueRef out = g.add_tensor(
        {{1, 4, 4, 4}, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4H4W});
    vkd::ops::add_q8ta_convert_node(g, in, out, 0);
    g.prepare();
  };
  run_graph();
  const size_t after_first_graph = ctx().pipelines().created_count();
  run_graph();
  EXPECT_EQ(ctx().pipelines().created_count(), after_first_graph);
}

// get_all: one pipeline per distinct key whatever the order and repetition of the keys, equal
// keys get the same pipeline, and a second call builds nothing.
TEST_F(RuntimeTest, PipelineCacheGetAllBuildsEachDistinctKeyOnce) {
  vk::PipelineCache cache(ctx().device(), ctx().profile(), {}, false, 4);
  EXPECT_EQ(cache.build_threads(), 4u);
  const vk::PipelineKey a{shaders::Kernel::q8ta_convert_4w4c_4c1w, {64, 1, 1}, {kWalkWHCN}};
  const vk::PipelineKey b{shaders::Kernel::q8ta_convert_4c1w_4w4c, {64, 1, 1}, {kWalkWHCN}};
  const vk::PipelineKey c{shaders::Kernel::q8ta_convert_4h4w_4c1w, {64, 1, 1}, {kWalkWHCN}};
  const vk::PipelineKey a_other_spec{shaders::Kernel::q8ta_convert_4w4c_4c1w, {64, 1, 1}, {0}};
  const std::vector<vk::PipelineKey> keys = {a, b, a, c, b, a_other_spec, a};
  const auto pipelines = cache.get_all(keys);
  ASSERT_EQ(pipelines.size(), keys.size());
  EXPECT_EQ(cache.created_count(), 4u) << "a, b, c and a with other specialization constants";
  EXPECT_EQ(cache.pipeline_count(), 4u);
  for (size_t i = 0; i < keys.size(); ++i) {
    for (size_t j = 0; j < keys.size(); ++j) {
      const bool same_key = !(keys[i] < keys[j]) && !(keys[j] < keys[i]);
      EXPECT_EQ(pipelines[i]->pipeline == pipelines[j]->pipeline, same_key) << i << " vs " << j;
    }
    EXPECT_NE(pipelines[i]->pipeline, VK_NULL_HANDLE);
    EXPECT_EQ(pipelines[i]->info, &shaders::shader_info(keys[i].kernel));
  }
  EXPECT_EQ(cache.get_all(keys), pipelines);
  EXPECT_EQ(cache.created_count(), 4u);
}

// A graph creates exactly one pipeline per distinct kernel (with its local size and
// specialization constants) its nodes use: three identical conversions share one.
TEST_F(RuntimeTest, GraphCreatesOnePipelinePerDistinctKernel) {
  vk::ContextOptions options = test_context_options();
  options.pipeline_cache_file = vk::kPipelineCacheOff;
  vk::Context context(options);  // its own, so its pipeline store starts empty
  ValidationWatch watch(context, true);
  {
    ComputeGraph g(context);
    const std::vector<int64_t> sizes = {1, 8, 5, 6};
    auto int8 = [&](MemoryLayout layout) {
      return g.add_tensor({sizes, DType::Int8x4, StorageType::Buffer, layout});
    };
    const ValueRef x = int8(MemoryLayout::PackedInt8_4W4C);
    const ValueRef y = int8(MemoryLayout::PackedInt8_4H4W);
    for (int i = 0; i < 3; ++i) {
      vkd::ops::add_q8ta_convert_node(g, x, int8(MemoryLayout::PackedInt8_4C1W), 0);
    }
    vkd::ops::add_q8ta_convert_node(g, x, y, 0);
    g.add_input(x);
    g.add_output(y);
    ASSERT_EQ(g.nodes().size(), 4u);
    g.prepare();
    EXPECT_EQ(context.pipelines().created_count(), 2u);
    EXPECT_EQ(context.pipelines().pipeline_count(), 2u);
  }
  watch.check("a graph's pipelines");
}

// Pipelines created on one thread or on four give the same results: a quantize -> two layout
// conversions -> dequantize graph (four distinct kernels) run on a context of each, its output
// equal to the CPU reference's round trip and between the two, bit for bit.
TEST(PipelineThreads, ParallelCreationGivesTheSerialResults) {
  const std::vector<int64_t> sizes = {2, 7, 9, 6};
  const size_t count = 2 * 7 * 9 * 6;
  const std::vector<float> x = random_floats(count, 20);
  const vkd::ops::QuantParams q{8.0f, -3, -128, 127};
  auto run = [&](uint32_t threads) {
    vk::ContextOptions options = test_context_options();
    options.pipeline_cache_file = vk::kPipelineCacheOff;
    options.pipeline_threads = threads;
    vk::Context context(options);
    ValidationWatch watch(context, true);
    EXPECT_EQ(context.pipelines().build_threads(), threads);
    std::vector<float> out;
    {
      ComputeGraph g(context);
      auto int8 = [&](MemoryLayout layout) {
        return g.add_tensor({sizes, DType::Int8x4, StorageType::Buffer, layout});
      };
      const ValueRef in = g.add_tensor(
          {sizes, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "x");
      const ValueRef a = int8(MemoryLayout::PackedInt8_4W4C);
      const ValueRef b = int8(MemoryLayout::PackedInt8_4C1W);
      const ValueRef c = int8(MemoryLayout::PackedInt8_4H4W);
      const ValueRef y = g.add_tensor(
          {sizes, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "y");
      vkd::ops::add_q8ta_quantize_node(g, in, a, q);
      vkd::ops::add_q8ta_convert_node(g, a, b, q.zero_point);
      vkd::ops::add_q8ta_convert_node(g, b, c, q.zero_point);
      vkd::ops::add_q8ta_dequantize_node(g, c, y, q);
      g.add_input(in);
      g.add_output(y);
      g.prepare();
      EXPECT_EQ(context.pipelines().created_count(), 4u);
      g.write_float(in, x.data(), x.size());
      g.execute();
      out = g.read_float(y);
    }
    watch.check(std::to_string(threads) + " pipeline threads");
    return out;
  };
  std::vector<float> expected(count);
  for (size_t i = 0; i < count; ++i) {
    expected[i] = vkd::testing::reference_dequantize(
        vkd::testing::reference_quantize(x[i], q.scale, q.zero_point, q.quant_min, q.quant_max),
        q.scale, q.zero_point);
  }
  const std::vector<float> serial = run(1);
  EXPECT_TRUE(floats_equal(expected, serial));
  EXPECT_TRUE(floats_equal(serial, run(4)));
}

// A float input and output large enough for the host copy threads (CopyWorkers) to share
// them: the values through quantize -> dequantize equal the reference's with 1 thread and with
// 4, and equal each other, for the host-form (width-packed buffer) tensors that take the
// shared copy and for a channels-packed output that is unpacked element by element.
TEST(HostCopyThreads, SharedCopiesGiveTheSingleThreadResults) {
  const std::vector<int64_t> sizes = {1, 5, 96, 160};  // 307 200 bytes of float32
  const size_t count = 5 * 96 * 160;
  ASSERT_GE(count * sizeof(float), vkd::CopyWorkers::kMinParallelBytes);
  const std::vector<float> x = random_floats(count, 21);
  const vkd::ops::QuantParams q{8.0f, 5, -128, 127};
  auto run = [&](uint32_t threads) {
    vk::ContextOptions options = test_context_options();
    options.host_copy_threads = threads;
    vk::Context context(options);
    ValidationWatch watch(context, true);
    EXPECT_EQ(context.host_copies().threads(), threads);
    std::vector<float> y_out, z_out;
    {
      ComputeGraph g(context);
      const TensorSpec host_form{sizes, DType::Float32, StorageType::Buffer,
                                 MemoryLayout::WidthPacked};
      const ValueRef in = g.add_tensor(host_form, "x");
      const ValueRef a =
          g.add_tensor({sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C});
      const ValueRef y = g.add_tensor(host_form, "y");
      const ValueRef z = g.add_tensor(
          {sizes, DType::Float32, StorageType::Buffer, MemoryLayout::ChannelsPacked}, "z");
      vkd::ops::add_q8ta_quantize_node(g, in, a, q);
      vkd::ops::add_q8ta_dequantize_node(g, a, y, q);
      vkd::ops::add_q8ta_dequantize_node(g, a, z, q);
      g.add_input(in);
      g.add_output(y);
      g.add_output(z);
      g.prepare();
      EXPECT_TRUE(g.staging_is_host_form(in) && g.staging_is_host_form(y));
      EXPECT_FALSE(g.staging_is_host_form(z));
      g.write_float(in, x.data(), x.size());
      g.execute();
      y_out = g.read_float(y);
      z_out = g.read_float(z);
    }
    watch.check(std::to_string(threads) + " host copy threads");
    return std::make_pair(y_out, z_out);
  };
  std::vector<float> expected(count);
  for (size_t i = 0; i < count; ++i) {
    expected[i] = vkd::testing::reference_dequantize(
        vkd::testing::reference_quantize(x[i], q.scale, q.zero_point, q.quant_min, q.quant_max),
        q.scale, q.zero_point);
  }
  const auto single = run(1);
  EXPECT_TRUE(floats_equal(expected, single.first));
  EXPECT_TRUE(floats_equal(expected, single.second));
  const auto shared = run(4);
  EXPECT_TRUE(floats_equal(single.first, shared.first));
  EXPECT_TRUE(floats_equal(single.second, shared.second));
}

// A key that cannot be built fails in its worker; the error reaches the caller as the usual
// vkd::Error naming the kernel (the first failing key's, in key order), after every worker has
// finished; the keys that could be built are cached and not built again.
TEST_F(RuntimeTest, PipelineBuildErrorInAWorkerReachesTheCaller) {
  // The int8 dot product is off on this context: its kernels are Unsupported.
  vk::PipelineCache cache(no_dot_ctx().device(), no_dot_ctx().profile(), {}, false, 4);
  const vk::PipelineKey a{shaders::Kernel::q8ta_convert_4w4c_4c1w, {64, 1, 1}, {kWalkWHCN}};
  const vk::PipelineKey b{shaders::Kernel::q8ta_convert_4c1w_4w4c, {64, 1, 1}, {kWalkWHCN}};
  const vk::PipelineKey c{shaders::Kernel::q8ta_convert_4h4w_4c1w, {64, 1, 1}, {kWalkWHCN}};
  const auto gemm = shaders::Kernel::q8ta_linear_gemm_int8_sdot_whole;
  const vk::PipelineKey needs_dot{
      gemm, {16, 16, 1}, std::vector<uint32_t>(shaders::shader_info(gemm).spec_constant_count, 0)};
  const vk::PipelineKey wrong_spec{shaders::Kernel::q8ta_convert_4h4w_4w4c, {64, 1, 1}, {}};
  EXPECT_TRUE(throws_error([&] { cache.get_all({a, needs_dot, b, wrong_spec, c}); },
                           ErrorCode::Unsupported,
                           {"kernel q8ta_linear_gemm_int8_sdot_whole", "the int8 dot product"}));
  EXPECT_EQ(cache.created_count(), 3u) << "a, b and c are built and kept";
  EXPECT_TRUE(throws_error(
      [&] { cache.get_all({wrong_spec, a}); }, ErrorCode::Internal,
      {"kernel q8ta_convert_4h4w_4w4c", "declares 1 specialization constants", "passed 0"}));
  EXPECT_NE(cache.get(c).pipeline, VK_NULL_HANDLE);
  EXPECT_EQ(cache.created_count(), 3u);
}

// A pipeline of the buffer quantize kernel, whose specialization constants are the walk order
// and the float input's access path (-1: each tile's own, float_tile.glslh).
vk::PipelineKey quantize_key() {
  return {shaders::Kernel::q8ta_quantize_buffer_4h4w,
          {64, 1, 1},
          {kWalkWHCN, static_cast<uint32_t>(-1)}};
}

std::string temp_path(const std::string& stem) {
  return ::testing::TempDir() + stem + "_" + std::to_string(::getpid()) + ".bin";
}

TEST_F(RuntimeTest, PipelineCacheSavedAndLoadedFromFile) {
  const std::string path = temp_path("vkd_pipeline_cache");
  std::remove(path.c_str());
  vk::ContextOptions options = test_context_options();
  options.pipeline_cache_file = path;
  const vk::PipelineKey key = quantize_key();
  {
    vk::Context first(options);
    ValidationWatch watch(first, true);
    EXPECT_FALSE(first.pipelines().loaded_from_file()) << "no cache file exists yet";
    first.pipelines().get(key);
    EXPECT_EQ(first.pipelines().created_count(), 1u);
    watch.check("first context");
  }  // the destructor saves the cache
  std::ifstream saved(path, std::ios::binary);
  ASSERT_TRUE(saved.good()) << "Context did not write " << path;
  const std::vector<char> bytes((std::istreambuf_iterator<char>(saved)), {});
  EXPECT_GE(bytes.size(), 32u) << "a pipeline cache starts with a 32-byte header";
  {
    vk::Context second(options);
    ValidationWatch watch(second, true);
    EXPECT_TRUE(second.pipelines().loaded_from_file());
    EXPECT_NE(second.pipelines().get(key).pipeline, VK_NULL_HANDLE);
    watch.check("second context");
  }
  std::remove(path.c_str());
  std::remove((path + ".tmp").c_str());
}

// The cache file is the user's: a file that is not a pipeline cache is neither read as one nor
// overwritten when the context saves its cache; a directory or device file is refused by name.
TEST_F(RuntimeTest, NonCachePipelineCacheFileIsRefusedAndKept) {
  const std::string path = temp_path("vkd_garbage_cache");
  const std::string text =
      "this is not a Vulkan pipeline cache, just some text long enough to look like one";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
  }
  vk::ContextOptions options = test_context_options();
  options.pipeline_cache_file = path;
  EXPECT_TRUE(throws_error([&] { vk::Context context(options); }, vkd::ErrorCode::InvalidArgument,
                           {"'" + path + "'", "VKD_PIPELINE_CACHE",
                            "is not a Vulkan pipeline cache; refusing to overwrite it"}));
  std::ifstream in(path, std::ios::binary);
  const std::string kept((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(kept, text) << "the user's file was changed";
  std::remove(path.c_str());
  for (const char* not_regular : {"/tmp", "/dev/zero"}) {
    options.pipeline_cache_file = not_regular;
    EXPECT_TRUE(throws_error([&] { vk::Context context(options); }, vkd::ErrorCode::InvalidArgument,
                             {std::string("'") + not_regular + "'", "is not a regular file"}));
  }
}

// ---- the per-user default pipeline cache -------------------------------------------------------

// A fresh directory of this test's own under the test temp dir, so tests running in parallel
// never share a cache home; removed with everything in it afterwards.
class TempCacheHome {
 public:
  explicit TempCacheHome(const std::string& stem)
      : path_(::testing::TempDir() + stem + "_" + std::to_string(::getpid())) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempCacheHome() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// The first 32 bytes are a VkPipelineCacheHeaderVersionOne of `profile`'s device.
bool has_header_of(const std::string& bytes, const vkd::vk::DeviceProfile& profile) {
  if (bytes.size() < 32) return false;
  uint32_t words[4];
  std::memcpy(words, bytes.data(), sizeof(words));
  return words[0] >= 32 && words[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         words[2] == profile.vendor_id && words[3] == profile.device_id &&
         std::memcmp(bytes.data() + 16, profile.pipeline_cache_uuid.data(), VK_UUID_SIZE) == 0;
}

std::string hex_of(uint64_t value, int digits) {
  std::ostringstream os;
  os << std::hex << std::setfill('0') << std::setw(digits) << value;
  return os.str();
}

// Neither the option nor VKD_PIPELINE_CACHE names a file: the cache lives in
// $XDG_CACHE_HOME/vkdelegate (0700), in a file named after the device, driver and shader set,
// written when the context is destroyed and loaded by the next one.
TEST_F(RuntimeTest, DefaultPipelineCacheIsPerUserAndKeyedByDevice) {
  const TempCacheHome home("vkd_cache_home");
  const ScopedEnv xdg("XDG_CACHE_HOME", home.path().c_str());
  vk::ContextOptions options = test_context_options();
  options.pipeline_cache_file = "";
  const vk::PipelineKey key = quantize_key();
  const std::string dir = home.path() + "/vkdelegate";
  std::string path;
  {
    vk::Context first(options);
    ValidationWatch watch(first, true);
    path = first.pipelines().cache_file();
    EXPECT_EQ(path.rfind(dir + "/pipelines-", 0), 0u) << path;
    EXPECT_FALSE(first.pipelines().loaded_from_file());
    first.pipelines().get(key);
    watch.check("first context");
    EXPECT_TRUE(files_in(dir).empty()) << "the cache is written when the context is destroyed";
  }
  const auto perms = std::filesystem::status(dir).permissions();
  EXPECT_EQ(perms & std::filesystem::perms::all, std::filesystem::perms::owner_all)
      << "the cache directory is private (0700)";
  const vkd::vk::DeviceProfile& profile = ctx().profile();
  std::string uuid;
  for (uint8_t byte : profile.pipeline_cache_uuid) uuid += hex_of(byte, 2);
  const std::string key_text = hex_of(profile.vendor_id, 4) + "-" + hex_of(profile.device_id, 4) +
                               "-" + hex_of(profile.driver_version, 8) + "-" + uuid + "-" +
                               hex_of(vk::embedded_spirv_hash(), 16);
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"pipelines-" + key_text + ".vkpc"})
      << "one file, no temporary left behind";
  EXPECT_TRUE(has_header_of(read_bytes(path), profile));
  {
    vk::Context second(options);
    ValidationWatch watch(second, true);
    EXPECT_EQ(second.pipelines().cache_file(), path);
    EXPECT_TRUE(second.pipelines().loaded_from_file());
    EXPECT_NE(second.pipelines().get(key).pipeline, VK_NULL_HANDLE);
    watch.check("second context");
  }

  // Without XDG_CACHE_HOME (or with a relative one, which the XDG rule ignores): $HOME/.cache.
  const ScopedEnv relative_xdg("XDG_CACHE_HOME", "relative/cache");
  const ScopedEnv user_home("HOME", home.path().c_str());
  {
    vk::Context context(options);
    EXPECT_EQ(context.pipelines().cache_file(),
              home.path() + "/.cache/vkdelegate/pipelines-" + key_text + ".vkpc");
  }
  EXPECT_EQ(files_in(home.path() + "/.cache/vkdelegate").size(), 1u);
}

// The hash changes with any byte of the embedded SPIR-V: computed here independently.
TEST(PipelineCacheKey, SpirvHashCoversEveryKernel) {
  uint64_t h = 14695981039346656037ull;
  for (size_t k = 0; k < shaders::kKernelCount; ++k) {
    const auto& info = shaders::shader_info(static_cast<shaders::Kernel>(k));
    const uint64_t words = info.spirv_words;
    const auto* bytes = reinterpret_cast<const uint8_t*>(&words);
    for (size_t i = 0; i < sizeof(words); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    bytes = reinterpret_cast<const uint8_t*>(info.spirv);
    for (size_t i = 0; i < info.spirv_words * 4; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  }
  EXPECT_EQ(vk::embedded_spirv_hash(), h);
}

// VKD_PIPELINE_CACHE=off (or the option "off"): no cache file, no directory.
TEST_F(RuntimeTest, DefaultPipelineCacheOffWritesNothing) {
  const TempCacheHome home("vkd_cache_off");
  const ScopedEnv xdg("XDG_CACHE_HOME", home.path().c_str());
  {
    const ScopedEnv off("VKD_PIPELINE_CACHE", "off");
    vk::ContextOptions options = test_context_options();
    EXPECT_EQ(options.pipeline_cache_file, "off");
    vk::Context context(options);
    EXPECT_EQ(context.pipelines().cache_file(), "");
    context.pipelines().get(quantize_key());
  }
  // (Mesa keeps its own shader cache under $XDG_CACHE_HOME too: only ours must be absent.)
  EXPECT_FALSE(std::filesystem::exists(home.path() + "/vkdelegate"))
      << "VKD_PIPELINE_CACHE=off wrote a cache";
}

// Whatever sits at the default path and is not this device's cache (text, a truncated header,
// another device's cache) is ignored, never an error, and replaced by this device's cache; a
// directory there is left alone.
TEST_F(RuntimeTest, DefaultPipelineCacheIgnoresAndReplacesWhatIsNotOurs) {
  const TempCacheHome home("vkd_cache_bad");
  const ScopedEnv xdg("XDG_CACHE_HOME", home.path().c_str());
  vk::ContextOptions options = test_context_options();
  options.pipeline_cache_file = "";
  std::string path;
  {
    vk::Context context(options);
    path = context.pipelines().cache_file();
  }
  const std::string ours = read_bytes(path);
  ASSERT_TRUE(has_header_of(ours, ctx().profile()));
  std::string foreign = ours;
  foreign[8] ^= 0x5a;  // another vendor id
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"text", "this is not a Vulkan pipeline cache, just some text long enough to look like one"},
      {"truncated header", ours.substr(0, 20)},
      {"another device's cache", foreign},
      {"empty", ""},
  };
  for (const auto& [what, bytes] : cases) {
    SCOPED_TRACE(what);
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << bytes;
    }
    {
      vk::Context context(options);
      ValidationWatch watch(context, true);
      EXPECT_FALSE(context.pipelines().loaded_from_file());
      context.pipelines().get(quantize_key());
      watch.check("context over a bad cache file");
    }
    EXPECT_TRUE(has_header_of(read_bytes(path), ctx().profile())) << "not replaced";
  }
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);
  {
    vk::Context context(options);
    EXPECT_FALSE(context.pipelines().loaded_from_file());
  }
  EXPECT_TRUE(std::filesystem::is_directory(path)) << "a directory at the cache path was replaced";
}

// A context with the default pipeline cache where no cache file can be used: it still builds
// pipelines (kept in memory). Returns what it printed on stderr.
std::string stderr_of_a_context_without_cache_file() {
  vk::ContextOptions options = test_context_options();
  options.pipeline_cache_file = "";
  ::testing::internal::CaptureStderr();
  {
    vk::Context context(options);
    EXPECT_EQ(context.pipelines().cache_file(), "");
    EXPECT_NE(context.pipelines().get(quantize_key()).pipeline, VK_NULL_HANDLE);
  }
  return ::testing::internal::GetCapturedStderr();
}

// No usable cache directory: one warning on stderr, pipelines kept in memory, no error.
TEST_F(RuntimeTest, DefaultPipelineCacheWithoutUsableDirectoryOnlyWarns) {
  const TempCacheHome home("vkd_cache_blocked");
  const std::string blocker = home.path() + "/not_a_directory";
  {
    std::ofstream(blocker) << "a file where the cache home should be";
  }
  const ScopedEnv xdg("XDG_CACHE_HOME", blocker.c_str());
  const std::string err = stderr_of_a_context_without_cache_file();
  EXPECT_NE(err.find("vkd: warning: no pipeline cache directory: cannot create '" + blocker +
                     "/vkdelegate'"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("warning"), err.rfind("warning")) << "more than one warning: " << err;
  EXPECT_EQ(read_bytes(blocker), "a file where the cache home should be");
}

// The cache is saved through a temporary file created exclusively (mkstemp: O_CREAT | O_EXCL,
// mode 0600, a name nobody can predict): symlinks planted at the names temporaries used to get
// (PATH.tmp.<pid>.<n>) are neither followed nor replaced, and the file they point at keeps its
// bytes; the saved cache is private too (0600).
TEST_F(RuntimeTest, PipelineCacheSaveFollowsNoSymlinkPlantedAtATemporaryName) {
  const TempCacheHome home("vkd_cache_symlink");
  const std::string path = home.path() + "/cache.vkpc";
  const std::string victim = home.path() + "/victim.txt";
  {
    std::ofstream(victim) << "a file of the user's that a symlink points at";
  }
  std::vector<std::string> planted;
  for (int n = 0; n < 64; ++n) {
    planted.push_back(path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(n));
    std::filesystem::create_symlink(victim, planted.back());
  }
  vk::ContextOptions options = test_context_options();
  options.pipeline_cache_file = path;
  {
    vk::Context context(options);
    ValidationWatch watch(context, true);
    context.pipelines().get(quantize_key());
    watch.check("context saving next to planted symlinks");
  }  // the destructor saves the cache
  EXPECT_EQ(read_bytes(victim), "a file of the user's that a symlink points at");
  for (const std::string& link : planted) {
    EXPECT_TRUE(std::filesystem::is_symlink(link)) << link << " was replaced";
  }
  EXPECT_TRUE(has_header_of(read_bytes(path), ctx().profile())) << "the cache was not saved";
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(files_in(home.path()).size(), planted.size() + 2) << "a temporary was left behind";
}

// An existing per-user cache directory that others may write into (they could plant files or
// symlinks in it, or swap the cache for their own code) is tightened to 0700 before use.
TEST_F(RuntimeTest, DefaultPipelineCacheTightensADirectoryOthersMayWrite) {
  const TempCacheHome home("vkd_cache_open");
  const ScopedEnv xdg("XDG_CACHE_HOME", home.path().c_str());
  const std::string dir = home.path() + "/vkdelegate";
  vk::ContextOptions options = test_context_options();
  options.pipeline_cache_file = "";
  namespace fs = std::filesystem;
  for (const fs::perms open : {fs::perms::all, fs::perms::owner_all | fs::perms::group_all,
                               fs::perms::owner_all | fs::perms::others_write}) {
    SCOPED_TRACE(static_cast<int>(open));
    fs::create_directories(dir);
    fs::permissions(dir, open);
    ASSERT_EQ(fs::status(dir).permissions() & fs::perms::all, open);
    {
      vk::Context context(options);
      EXPECT_EQ(context.pipelines().cache_file().rfind(dir + "/pipelines-", 0), 0u)
          << context.pipelines().cache_file();
      context.pipelines().get(quantize_key());
    }
    EXPECT_EQ(fs::status(dir).permissions() & fs::perms::all, fs::perms::owner_all);
    EXPECT_EQ(files_in(dir).size(), 1u);
  }
}

// A cache directory that belongs to another user is not used (it could hold anyone's code):
// one warning, pipelines in memory only, nothing written there, its mode unchanged. As root the
// test gives a directory away; any other user reaches root's "/" through a link at the cache
// directory's path.
TEST_F(RuntimeTest, DefaultPipelineCacheRefusesADirectoryOfAnotherUser) {
  namespace fs = std::filesystem;
  const TempCacheHome home("vkd_cache_foreign");
  const ScopedEnv xdg("XDG_CACHE_HOME", home.path().c_str());
  const std::string dir = home.path() + "/vkdelegate";
  uid_t owner = 0;
  if (::geteuid() == 0) {
    owner = 54321;
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_all);
    ASSERT_EQ(::chown(dir.c_str(), owner, static_cast<gid_t>(-1)), 0) << std::strerror(errno);
  } else {
    fs::create_directory_symlink("/", dir);
  }
  const fs::perms mode = fs::status(dir).permissions();
  const std::vector<std::string> before = files_in(dir);
  const std::string err = stderr_of_a_context_without_cache_file();
  EXPECT_NE(err.find("vkd: warning: no pipeline cache directory: '" + dir + "' belongs to uid " +
                     std::to_string(owner) + ", not to this user (uid " +
                     std::to_string(::geteuid()) + ")"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("warning"), err.rfind("warning")) << "more than one warning: " << err;
  EXPECT_EQ(files_in(dir), before) << "a file was written into another user's directory";
  EXPECT_EQ(fs::status(dir).permissions(), mode) << "another user's directory was changed";
}

// A GPU that does not finish in time: ErrorCode::Timeout (not DeviceLost), the context refuses
// further submissions, and destroying the graph and context waits for the running work instead
// of freeing objects it uses (the validation layer would report VUID-vkDestroyFence-fence-01120,
// VUID-vkFreeCommandBuffers-pCommandBuffers-00047, VUID-vkDestroyBuffer-buffer-00922).
// Without and with fence polling (the GPUs' default; lavapipe's is none): polling longer than
// the timeout still stops at the timeout.
class GpuTimeoutWait : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(GpuTimeout, GpuTimeoutWait, ::testing::Values(0u, 10000000u),
                         [](const auto& info) {
                           return info.param == 0 ? std::string("Sleeping")
                                                  : std::string("Polling10s");
                         });

TEST_P(GpuTimeoutWait, ExecuteTimeoutKeepsEverythingAliveUntilIdle) {
  vk::ContextOptions options = test_context_options();
  options.fence_spin_us = GetParam();
  vk::Context context(options);
  ValidationWatch watch(context, true);
  {
    ComputeGraph g(context);
    const std::vector<int64_t> sizes = {1, 16, 1024, 1024};  // 64 MB in: far beyond 1 ms
    const ValueRef in =
        g.add_tensor({sizes, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "x");
    const ValueRef out = g.add_tensor(
        {sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C}, "q");
    vkd::ops::add_q8ta_quantize_node(g, in, out, {0.5f, 3, -128, 127});
    g.add_input(in);
    g.add_output(out);
    g.prepare();
    g.write_float(in, std::vector<float>(16u << 20, 1.0f));
    // Within the 120 s default timeout, and with polling, the result is right.
    g.execute();
    const auto q = g.read_int8(out);
    EXPECT_TRUE(std::all_of(q.begin(), q.end(), [](int8_t v) { return v == 5; }));  // 1/0.5 + 3
    context.set_gpu_timeout(std::chrono::milliseconds(1));
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(throws_error([&] { g.execute(); }, vkd::ErrorCode::Timeout,
                             {"graph execution", "did not finish within 1 ms"}));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    EXPECT_TRUE(context.timed_out());
    EXPECT_TRUE(throws_error([&] { g.execute(); }, vkd::ErrorCode::Timeout,
                             {"refused", "'graph execution' did not finish"}));
  }  // ~ComputeGraph waits for the device before freeing what the submission uses
  watch.check("destroying a graph whose execution timed out");
}

TEST(GpuTimeout, ConstantUploadTimeoutDuringLoad) {
  vk::Context context(test_context_options());
  ValidationWatch watch(context, true);
  context.set_gpu_timeout(std::chrono::milliseconds(1));
  {
    ComputeGraph g(context);
    const std::vector<int64_t> sizes = {1, 16, 1024, 1024};  // a 64 MB constant, one batch
    const vkd::TensorSpec spec{sizes, DType::Float32, StorageType::Buffer,
                               MemoryLayout::WidthPacked};
    std::vector<uint8_t> bytes(static_cast<size_t>(spec.numel()) * 4, 0);
    const ValueRef w = g.add_constant(
        spec, "w", vkd::graph::nchw_constant_packer(spec, bytes.data(), bytes.size(), 0),
        bytes.size());
    const ValueRef out = g.add_tensor(
        {sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C}, "q");
    vkd::ops::add_q8ta_quantize_node(g, w, out, {0.5f, 3, -128, 127});
    g.add_output(out);
    g.set_constant_batch_bytes(uint64_t{1} << 30);
    // The staging buffer and command buffer are prepare()'s locals: the context keeps them.
    EXPECT_TRUE(throws_error([&] { g.prepare(); }, vkd::ErrorCode::Timeout,
                             {"constant upload", "did not finish within 1 ms"}));
  }
  watch.check("destroying a graph whose constant upload timed out");
}

// ---- constant upload -----------------------------------------------------------------------

// One constant of a ConstantUploadCase: its spec and the device bytes it must occupy.
struct StagedConstant {
  TensorSpec spec;
  uint64_t bytes;
};

struct ConstantUploadCase {
  const char* what;
  uint64_t batch_bytes;  // ComputeGraph::set_constant_batch_bytes
  std::vector<StagedConstant> constants;
};

// Constants of sizes that are not multiples of 16 (a float16 texel is 8 bytes, an int32 element
// 4) share the staging buffer: every byte must land in its own tensor, and every staging range
// the copies use must lie inside the staging buffer with each image at a multiple of its texel
// size (the fixture fails the test on any validation message).
TEST_F(RuntimeTest, ConstantUploadOfOddSizedTexturesAndBuffers) {
  const StagedConstant f16_tex1{
      {{1, 1, 1, 4}, DType::Float16, StorageType::Texture3D, MemoryLayout::WidthPacked}, 8};
  const StagedConstant f16_tex3{
      {{1, 1, 3, 4}, DType::Float16, StorageType::Texture3D, MemoryLayout::WidthPacked}, 24};
  const StagedConstant f32_tex1{
      {{1, 1, 1, 4}, DType::Float32, StorageType::Texture3D, MemoryLayout::WidthPacked}, 16};
  auto i32_buf = [](int64_t n) {
    return StagedConstant{
        {{1, 1, 1, n}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked},
        4 * static_cast<uint64_t>(n)};
  };
  const std::vector<ConstantUploadCase> cases = {
      // 12 bytes in all, staged as 8 + padding to 16 + 4: more than 12.
      {"texture 8 B then buffer 4 B", 16u << 20, {f16_tex1, i32_buf(1)}},
      // The texture right after 4 buffer bytes.
      {"buffer 4 B then texture 8 B", 16u << 20, {i32_buf(1), f16_tex1}},
      // Several batches of 32 bytes, buffers split across them.
      {"32-byte batches",
       32,
       {f16_tex3, i32_buf(5), f16_tex1, i32_buf(3), f32_tex1, i32_buf(13), f16_tex1}},
      // A batch limit that is not a multiple of 16.
      {"20-byte batches", 20, {f16_tex1, i32_buf(3), f16_tex1, i32_buf(7)}},
  };
  uint32_t seed = 1;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    ComputeGraph g(ctx());
    g.set_constant_batch_bytes(c.batch_bytes);
    std::vector<ValueRef> refs;
    std::vector<std::vector<uint8_t>> expected;
    for (const auto& k : c.constants) {
      std::mt19937 rng(seed++);
      std::vector<uint8_t> bytes(k.bytes);
      for (auto& b : bytes) b = static_cast<uint8_t>(rng());
      refs.push_back(g.add_constant(
          k.spec, "c" + std::to_string(refs.size()), [bytes] { return bytes; }, bytes.size()));
      ASSERT_EQ(g.tensor(refs.back()).bytes(), k.bytes) << k.spec.describe();
      g.add_output(refs.back());
      expected.push_back(std::move(bytes));
    }
    g.prepare();
    g.execute();
    for (size_t i = 0; i < refs.size(); ++i) {
      std::vector<int32_t> words(expected[i].size() / 4);
      std::memcpy(words.data(), expected[i].data(), expected[i].size());
      EXPECT_TRUE(words_equal(words, g.read_words(refs[i]))) << "constant " << i;
    }
  }
}

// ---- kernel statistics (VK_KHR_pipeline_executable_properties) ------------------------------

// Builds a one-node graph (int8 4W4C -> 4H4W) in `g`, prepares and runs it once.
void build_and_run_convert(ComputeGraph& g) {
  const std::vector<int64_t> sizes = {1, 6, 5, 7};
  const ValueRef in =
      g.add_tensor({sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C});
  const ValueRef out =
      g.add_tensor({sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4H4W});
  vkd::ops::add_q8ta_convert_node(g, in, out, 0);
  g.add_input(in);
  g.add_output(out);
  g.prepare();
  const auto values = random_int8(6 * 5 * 7, 21);
  g.write_int8(in, values, 0);
  g.execute();
  EXPECT_EQ(values, g.read_int8(out)) << "pipelines built with statistics capture run as usual";
}

// With capture asked for, a device offering the extension reports statistics for every node;
// a device without it (lavapipe up to at least Mesa 22.3) reports none and runs as usual. The
// documented behaviour is checked either way, never skipped.
TEST_F(RuntimeTest, KernelStatisticsWhereTheDeviceOffersThem) {
  vk::ContextOptions options = test_context_options();
  options.capture_kernel_statistics = true;
  vk::Context context(options);
  ValidationWatch watch(context, true);
  const bool offered = context.profile().pipeline_executable_info;
  EXPECT_EQ(context.captures_kernel_statistics(), offered);
  {
    ComputeGraph g(context);
    EXPECT_TRUE(
        throws_error([&] { g.kernel_statistics(); }, ErrorCode::Internal, {"before prepare()"}));
    build_and_run_convert(g);
    const auto nodes = g.kernel_statistics();
    if (offered) {
      ASSERT_EQ(nodes.size(), 1u);
      EXPECT_EQ(nodes[0].kernel, shaders::shader_info(g.nodes()[0].kernel).name);
      ASSERT_FALSE(nodes[0].executables.empty()) << "the driver reported no executable";
      const auto& exe = nodes[0].executables[0];
      EXPECT_FALSE(exe.name.empty());
      ASSERT_FALSE(exe.statistics.empty()) << "executable '" << exe.name << "' has no statistics";
      for (const auto& stat : exe.statistics) {
        EXPECT_FALSE(stat.name.empty());
        EXPECT_FALSE(stat.value.empty()) << stat.name;
      }
    } else {
      EXPECT_TRUE(nodes.empty()) << "device '" << context.profile().name
                                 << "' lacks the extension, yet statistics came back";
    }
  }
  watch.check("context capturing kernel statistics");
}

// Without the option (the default) nothing is captured, whatever the device offers.
TEST_F(RuntimeTest, KernelStatisticsEmptyWithoutTheOption) {
  EXPECT_FALSE(ctx().captures_kernel_statistics());
  ComputeGraph g(ctx());
  build_and_run_convert(g);
  EXPECT_TRUE(g.kernel_statistics().empty());
}

// ---- error paths ---------------------------------------------------------------------------

TEST_F(RuntimeTest, SelectingAnUnknownDeviceNamesIt) {
  const std::string name = "no-such-gpu-xyzzy";
  EXPECT_TRUE(
      throws_error([&] { ctx().instance().select(name); }, ErrorCode::InvalidArgument, {name}));
  EXPECT_TRUE(throws_error([&] { ctx().instance().select("4096"); }, ErrorCode::InvalidArgument,
                           {"4096", "out of range"}));
  // The device this context runs on can be selected by (part of) its name.
  EXPECT_EQ(ctx().instance().select(ctx().profile().name).name, ctx().profile().name);
}

TEST_F(RuntimeTest, TensorLargerThanMaxStorageBufferRange) {
  const uint64_t range = ctx().profile().max_storage_buffer_range_bytes;
  ASSERT_GT(range, 0u);
  // Float32 width-packed buffer of range/4 + 64 elements: just above the limit.
  const int64_t elements = static_cast<int64_t>(range / 4) + 64;
  ComputeGraph g(ctx());
  EXPECT_TRUE(throws_error(
      [&] {
        g.add_tensor({{1, 1, 64, elements / 64},
                      DType::Float32,
                      StorageType::Buffer,
                      MemoryLayout::WidthPacked},
                     "huge");
      },
      ErrorCode::Unsupported, {"maxStorageBufferRange", "huge"}));
  // Same for a packed int8 tensor (4C1W of C=1: one word per element).
  EXPECT_TRUE(throws_error(
      [&] {
        g.add_tensor({{1, 1, 64, elements / 64},
                      DType::Int8x4,
                      StorageType::Buffer,
                      MemoryLayout::PackedInt8_4C1W},
                     "huge_int8");
      },
      ErrorCode::Unsupported, {"maxStorageBufferRange", "huge_int8"}));
  EXPECT_EQ(g.tensor_count(), 0u);
}

TEST_F(RuntimeTest, OpsRejectMismatchedSizesAndWrongDtypes) {
  ComputeGraph g(ctx());
  const auto f32 = [&](std::vector<int64_t> sizes, StorageType st = StorageType::Buffer) {
    return g.add_tensor({std::move(sizes), DType::Float32, st, MemoryLayout::WidthPacked});
  };
  const auto i8 = [&](std::vector<int64_t> sizes,
                      MemoryLayout layout = MemoryLayout::PackedInt8_4W4C) {
    return g.add_tensor({std::move(sizes), DType::Int8x4, StorageType::Buffer, layout});
  };
  const ValueRef f = f32({1, 3, 5, 7});
  const ValueRef f_other = f32({1, 3, 5, 8});
  const ValueRef f_tex = f32({1, 3, 5, 7}, StorageType::Texture3D);
  const ValueRef q = i8({1, 3, 5, 7});
  const ValueRef q_other = i8({1, 3, 7, 5}, MemoryLayout::PackedInt8_4C1W);
  const ValueRef i32 =
      g.add_tensor({{1, 3, 5, 7}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked});
  const vkd::ops::QuantParams qp{0.1f, 0, -128, 127};
  using namespace vkd::ops;

  EXPECT_TRUE(throws_error([&] { add_q8ta_quantize_node(g, f_other, q, qp); },
                           ErrorCode::InvalidArgument, {"q8ta_quantize", "sizes"}));
  EXPECT_TRUE(throws_error([&] { add_q8ta_quantize_node(g, q, q, qp); }, ErrorCode::InvalidArgument,
                           {"q8ta_quantize", "float32"}));
  EXPECT_TRUE(throws_error([&] { add_q8ta_quantize_node(g, f, f_tex, qp); },
                           ErrorCode::InvalidArgument, {"q8ta_quantize", "int8x4"}));
  EXPECT_TRUE(throws_error([&] { add_q8ta_quantize_node(g, i32, q, qp); },
                           ErrorCode::InvalidArgument, {"q8ta_quantize"}));
  EXPECT_TRUE(throws_error([&] { add_q8ta_quantize_node(g, f, q, {0.1f, 100, -8, 7}); },
                           ErrorCode::InvalidArgument, {"q8ta_quantize", "zero_point"}));
  EXPECT_TRUE(throws_error([&] { add_q8ta_quantize_node(g, f, q, {0.0f, 0, -128, 127}); },
                           ErrorCode::InvalidArgument, {"q8ta_quantize", "scale"}));

  EXPECT_TRUE(throws_error([&] { add_q8ta_dequantize_node(g, q_other, f, qp); },
                           ErrorCode::InvalidArgument, {"q8ta_dequantize", "sizes"}));
  EXPECT_TRUE(throws_error([&] { add_q8ta_dequantize_node(g, f, f_tex, qp); },
                           ErrorCode::InvalidArgument, {"q8ta_dequantize", "int8x4"}));
  EXPECT_TRUE(throws_error([&] { add_q8ta_dequantize_node(g, q, i32, qp); },
                           ErrorCode::InvalidArgument, {"q8ta_dequantize", "float32"}));

  EXPECT_TRUE(throws_error([&] { add_q8ta_convert_node(g, q, q_other, 0); },
                           ErrorCode::InvalidArgument, {"q8ta_convert", "sizes"}));
  EXPECT_TRUE(throws_error([&] { add_q8ta_convert_node(g, f, q, 0); }, ErrorCode::InvalidArgument,
                           {"q8ta_convert", "int8x4"}));
  EXPECT_TRUE(throws_error([&] { add_q8ta_convert_node(g, q, q, 200); }, ErrorCode::InvalidArgument,
                           {"q8ta_convert", "zero_point"}));

  EXPECT_TRUE(throws_error([&] { add_float_convert_node(g, f, f_other); },
                           ErrorCode::InvalidArgument, {"float_convert", "sizes"}));
  EXPECT_TRUE(throws_error([&] { add_float_convert_node(g, q, f_tex); }, ErrorCode::InvalidArgument,
                           {"float_convert", "float32"}));
  EXPECT_TRUE(throws_error([&] { add_float_convert_node(g, f, i32); }, ErrorCode::InvalidArgument,
                           {"float_convert", "float32"}));
  EXPECT_TRUE(g.nodes().empty()) << "a rejected node must not be added";
}

TEST_F(RuntimeTest, WriteFloatWithWrongElementCount) {
  ComputeGraph g(ctx());
  const ValueRef t = g.add_tensor(
      {{1, 3, 5, 7}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "x");
  const ValueRef q = g.add_tensor(
      {{1, 3, 5, 7}, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C}, "q");
  const ValueRef not_input = g.add_tensor(
      {{2, 2}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "internal");
  g.add_input(t);
  g.add_input(q);
  g.prepare();
  EXPECT_TRUE(throws_error([&] { g.write_float(t, std::vector<float>(104)); },
                           ErrorCode::InvalidArgument, {"'x'", "105", "104"}));
  EXPECT_TRUE(throws_error([&] { g.write_float(t, std::vector<float>(106)); },
                           ErrorCode::InvalidArgument, {"'x'", "105", "106"}));
  EXPECT_TRUE(throws_error([&] { g.write_float(q, std::vector<float>(105)); },
                           ErrorCode::InvalidArgument, {"'q'", "not a float tensor"}));
  EXPECT_TRUE(throws_error([&] { g.write_int8(q, std::vector<int8_t>(100), 0); },
                           ErrorCode::InvalidArgument, {"'q'", "100"}));
  EXPECT_TRUE(throws_error([&] { g.write_words(q, std::vector<int32_t>(3)); },
                           ErrorCode::InvalidArgument, {"'q'", "40 words", "got 3"}));
  EXPECT_TRUE(throws_error([&] { g.write_float(not_input, std::vector<float>(4)); },
                           ErrorCode::InvalidArgument, {"'internal'", "input"}));
}

// ---- int8 dot product switched off -------------------------------------------------------------

TEST_F(RuntimeTest, DisabledInt8DotProductRejectsDotKernels) {
  vk::Context& no_dot = no_dot_ctx();
  EXPECT_FALSE(no_dot.profile().int8_dot_product);
  EXPECT_FALSE(no_dot.profile().int8_dot_product_accelerated);
  EXPECT_TRUE(throws_error(
      [&] { no_dot.pipelines().get({shaders::Kernel::bench_int8_dot_sdot, {64, 1, 1}, {}}); },
      ErrorCode::Unsupported, {"bench_int8_dot_sdot", "int8 dot product"}));
  // The fallback kernel needs nothing special.
  EXPECT_NE(
      no_dot.pipelines().get({shaders::Kernel::bench_int8_dot_fallback, {64, 1, 1}, {}}).pipeline,
      VK_NULL_HANDLE);
  if (ctx().profile().int8_dot_product) {
    bool listed = false;
    for (const auto& d : no_dot.profile().disabled)
      listed |= d.find("int8 dot") != std::string::npos;
    EXPECT_TRUE(listed) << "profile().disabled does not list the switched-off int8 dot product";
    EXPECT_NE(
        ctx().pipelines().get({shaders::Kernel::bench_int8_dot_sdot, {64, 1, 1}, {}}).pipeline,
        VK_NULL_HANDLE);
  }
}

// ---- workgroup chooser --------------------------------------------------------------------------

vk::DeviceProfile small_profile() {
  vk::DeviceProfile p;
  p.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  p.subgroup_size = 8;
  p.max_workgroup_size = {64, 64, 64};
  p.max_workgroup_invocations = 64;
  p.max_workgroup_count = {4, 4, 4};
  return p;
}

// The linear index the shaders recover (linear_invocation_id in shaders/common/common.glslh)
// of the last invocation of a plan.
uint64_t last_linear_id(const vk::DispatchPlan& plan) {
  const uint64_t row = uint64_t(plan.group_count[0]) * plan.local_size[0];
  const uint64_t gx = row - 1;
  const uint64_t gy = uint64_t(plan.group_count[1]) * plan.local_size[1] - 1;
  const uint64_t gz = uint64_t(plan.group_count[2]) * plan.local_size[2] - 1;
  return gx + row * (gy + uint64_t(plan.group_count[1]) * gz);
}

TEST(WorkgroupChooser, SplitsAcrossYAndZ) {
  const vk::DeviceProfile p = small_profile();
  struct Case {
    uint64_t items;
    std::array<uint32_t, 3> groups;
  };
  // local size 8, at most 4 groups per axis: 32 items per x row of groups.
  const Case cases[] = {
      {1, {1, 1, 1}},  {8, {1, 1, 1}},   {9, {2, 1, 1}},   {32, {4, 1, 1}},
      {33, {4, 2, 1}}, {128, {4, 4, 1}}, {129, {4, 4, 2}}, {512, {4, 4, 4}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.items);
    const vk::DispatchPlan plan = vk::plan_linear(p, c.items, 8);
    EXPECT_EQ(plan.local_size, (std::array<uint32_t, 3>{8, 1, 1}));
    EXPECT_EQ(plan.group_count, c.groups);
    EXPECT_GE(plan.invocations(), c.items);
    EXPECT_GE(last_linear_id(plan) + 1, c.items) << "the recovered linear ids do not reach items";
    EXPECT_EQ(last_linear_id(plan) + 1, plan.invocations()) << "linear ids are not a bijection";
    for (int a = 0; a < 3; ++a) EXPECT_LE(plan.group_count[a], p.max_workgroup_count[a]);
  }
  // Beyond 8 * 4 * 4 * 4 invocations the dispatch cannot be expressed.
  EXPECT_TRUE(throws_error([&] { vk::plan_linear(p, 513, 8); }, ErrorCode::Unsupported,
                           {"513", "workgroup-count"}));
  EXPECT_TRUE(
      throws_error([&] { vk::plan_linear(p, 1u << 20, 8); }, ErrorCode::Unsupported, {"exceeds"}));
}

TEST(WorkgroupChooser, LocalSizeClampedToDeviceLimits) {
  vk::DeviceProfile p = small_profile();
  EXPECT_EQ(vk::plan_linear(p, 1000, 512).local_size[0], 64u);
  EXPECT_EQ(vk::default_linear_local_size(p), 64u);  // 128 wanted, 64 allowed
  p.max_workgroup_size = {1024, 1024, 64};
  p.max_workgroup_invocations = 1024;
  p.max_workgroup_count = {65535, 65535, 65535};
  EXPECT_EQ(vk::default_linear_local_size(p), 128u);
  p.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  EXPECT_EQ(vk::default_linear_local_size(p), 64u);
  const vk::DispatchPlan plan = vk::plan_linear(p, 1000);
  EXPECT_EQ(plan.local_size[0], 64u);
  EXPECT_EQ(plan.group_count, (std::array<uint32_t, 3>{16, 1, 1}));
  EXPECT_EQ(vk::plan_linear(p, 0).group_count[0], 1u);
}

TEST(WorkgroupChooser, EnvironmentOverridesLocalSize) {
  vk::DeviceProfile p = small_profile();
  p.max_workgroup_count = {65535, 65535, 65535};
  {
    ScopedEnv env("VKD_WORKGROUP_SIZE", "16");
    const vk::DispatchPlan plan = vk::plan_linear(p, 1000, 32);
    EXPECT_EQ(plan.local_size[0], 16u);
    EXPECT_EQ(plan.group_count[0], 63u);
  }
  {
    ScopedEnv env("VKD_WORKGROUP_SIZE", "4096");  // clamped to the device limit
    EXPECT_EQ(vk::plan_linear(p, 1000).local_size[0], 64u);
  }
  EXPECT_EQ(vk::plan_linear(p, 1000, 32).local_size[0], 32u) << "override not removed";
}

// Bad settings name the variable instead of surfacing as internal errors (std::stoul).
TEST(Environment, MalformedNumbersNameTheVariable) {
  for (const char* bad : {"abc", "12abc", "-3", "0", "99999999999", " 8"}) {
    ScopedEnv env("VKD_WORKGROUP_SIZE", bad);
    EXPECT_TRUE(throws_error([] { vk::plan_linear(small_profile(), 100); },
                             vkd::ErrorCode::InvalidArgument,
                             {std::string("VKD_WORKGROUP_SIZE='") + bad + "'", "whole number"}))
        << bad;
  }
  ScopedEnv env("VKD_TILE_ORDER", "7");
  const vkd::TensorSpec spec{
      {1, 4, 4, 4}, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C};
  EXPECT_TRUE(throws_error([&] { vkd::ops::choose_tile_walk(spec.dims4(), spec, spec); },
                           vkd::ErrorCode::InvalidArgument, {"VKD_TILE_ORDER='7'", "[0, 3]"}));
}

// The override reaches real dispatches: an odd local size still gives exact results.
TEST_F(RuntimeTest, WorkgroupSizeOverrideOnTheGpu) {
  const std::vector<int64_t> sizes = {2, 17, 9, 6};
  const auto s = ref_shape(sizes);
  const auto values = random_int8(static_cast<size_t>(2 * 17 * 9 * 6), 21);
  for (const char* local : {"7", "1"}) {
    SCOPED_TRACE(local);
    ScopedEnv env("VKD_WORKGROUP_SIZE", local);
    ComputeGraph g(ctx());
    const ValueRef in =
        g.add_tensor({sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4C1W});
    const ValueRef out =
        g.add_tensor({sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4H4W});
    vkd::ops::add_q8ta_convert_node(g, in, out, 3);
    ASSERT_EQ(g.nodes().size(), 1u);
    EXPECT_EQ(g.nodes()[0].plan.local_size[0], static_cast<uint32_t>(std::atoi(local)));
    g.add_input(in);
    g.add_output(out);
    g.prepare();
    g.write_int8(in, values, 3);
    g.execute();
    EXPECT_TRUE(words_equal(vkd::testing::ref_pack(MemoryLayout::PackedInt8_4H4W, s, values, 3),
                            g.read_words(out)));
  }
}

// A dispatch split across y and z (as plan_linear does on a device with small group-count
// limits) on the real device: the shader must recover the linear index from all three axes.
TEST_F(RuntimeTest, SplitDispatchRecoversLinearIndex) {
  const std::vector<int64_t> sizes = {2, 17, 9, 6};  // 2 * 5 * 3 * 2 = 60 tiles
  const auto s = ref_shape(sizes);
  vk::DeviceProfile limited = ctx().profile();
  limited.max_workgroup_count = {4, 4, 4};
  const int32_t zp = -5;
  const auto values = random_int8(static_cast<size_t>(2 * 17 * 9 * 6), 22);
  for (uint32_t local : {4u, 1u}) {
    SCOPED_TRACE(local);
    const vk::DispatchPlan plan = vk::plan_linear(limited, 60, local);
    const std::array<uint32_t, 3> groups =
        local == 4 ? std::array<uint32_t, 3>{4, 4, 1} : std::array<uint32_t, 3>{4, 4, 4};
    EXPECT_EQ(plan.group_count, groups);

    ComputeGraph g(ctx());
    const ValueRef in =
        g.add_tensor({sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C});
    const ValueRef out =
        g.add_tensor({sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4C1W});
    // Mirrors `Params` of shaders/q8ta_convert.glsl.
    struct Push {
      int32_t sizes[4];
      int32_t tile_count;
      int32_t zero_point;
    } push{{2, 17, 9, 6}, 60, zp};
    vkd::graph::DispatchNode node;
    node.op = "split_q8ta_convert";
    node.kernel = shaders::Kernel::q8ta_convert_4w4c_4c1w;
    node.bindings = {out, in};
    node.push_constants = vkd::graph::push_constant_bytes(push);
    node.spec_constants = {kWalkWHCN};
    node.plan = plan;
    g.add_node(node);
    g.add_input(in);
    g.add_input(out);  // pre-filled so unwritten words show up
    g.add_output(out);
    g.prepare();
    g.write_int8(in, values, static_cast<int8_t>(zp));
    const auto expected = vkd::testing::ref_pack(MemoryLayout::PackedInt8_4C1W, s, values, zp);
    g.write_words(out, std::vector<int32_t>(expected.size(), 0x5A5A5A5A));
    g.execute();
    EXPECT_TRUE(words_equal(expected, g.read_words(out)));
  }
}

TEST_F(RuntimeTest, AddNodeRejectsDispatchBeyondDeviceLimits) {
  ComputeGraph g(ctx());
  const std::vector<int64_t> sizes = {1, 4, 4, 4};
  const ValueRef in =
      g.add_tensor({sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C});
  const ValueRef out =
      g.add_tensor({sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C});
  struct Push {
    int32_t sizes[4];
    int32_t tile_count;
    int32_t zero_point;
  } push{{1, 4, 4, 4}, 1, 0};
  vkd::graph::DispatchNode node;
  node.op = "too_big";
  node.kernel = shaders::Kernel::q8ta_convert_4w4c_4w4c;
  node.bindings = {out, in};
  node.push_constants = vkd::graph::push_constant_bytes(push);
  node.spec_constants = {kWalkWHCN};
  node.plan.group_count = {1, ctx().profile().max_workgroup_count[1] + 1, 1};
  EXPECT_TRUE(
      throws_error([&] { g.add_node(node); }, ErrorCode::Unsupported, {"too_big", "axis 1"}));
  // Wrong push-constant size and wrong binding kind are caught before recording.
  node.plan = vk::DispatchPlan{};
  node.push_constants.pop_back();
  EXPECT_TRUE(
      throws_error([&] { g.add_node(node); }, ErrorCode::Internal, {"too_big", "push-constant"}));
  EXPECT_TRUE(g.nodes().empty());
}

}  // namespace
}  // namespace vkd_test
