#include "test/unit/GpuTest.h"
#include <random>

#include <cstdio>
#include <cstring>
#include <sstream>

namespace vkd_test {
namespace {

std::unique_ptr<vkd::vk::Context>& shared_slot() {
  static std::unique_ptr<vkd::vk::Context> slot;
  return slot;
}

std::unique_ptr<vkd::vk::Context>& no_dot_slot() {
  static std::unique_ptr<vkd::vk::Context> slot;
  return slot;
}

// Destroys the shared contexts after the last test, before static destruction (the Vulkan
// loader and layers must still be alive when the device and instance go away).
class ContextEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    no_dot_slot().reset();
    shared_slot().reset();
  }
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ContextEnvironment);

}  // namespace

vkd::vk::ContextOptions test_context_options() { return vkd::vk::ContextOptions::from_env(); }

vkd::vk::Context& shared_context() {
  auto& slot = shared_slot();
  if (!slot) slot = std::make_unique<vkd::vk::Context>(test_context_options());
  return *slot;
}

vkd::vk::Context& no_int8_dot_context() {
  auto& slot = no_dot_slot();
  if (!slot) {
    vkd::vk::ContextOptions options = test_context_options();
    options.overrides.disable_int8_dot = true;
    slot = std::make_unique<vkd::vk::Context>(options);
  }
  return *slot;
}

ValidationWatch::ValidationWatch(const vkd::vk::Context& context, bool fresh)
    : log_(&context.instance().validation_log()) {
  if (!fresh) {
    errors_ = log_->error_count();
    warnings_ = log_->warning_count();
    messages_ = log_->messages().size();
  }
}

bool ValidationWatch::check(const std::string& what) const {
  const uint32_t errors = log_->error_count(), warnings = log_->warning_count();
  if (errors == errors_ && warnings == warnings_) return true;
  const auto messages = log_->messages();
  std::ostringstream os;
  os << what << ": the validation layer reported " << (errors - errors_) << " new error(s) and "
     << (warnings - warnings_) << " new warning(s):";
  for (size_t i = messages_; i < messages.size(); ++i) os << "\n  [" << i << "] " << messages[i];
  ADD_FAILURE() << os.str();
  return false;
}

void GpuTest::SetUp() {
  const bool fresh = !shared_slot();
  watch_ = std::make_unique<ValidationWatch>(shared_context(), fresh);
  if (no_dot_slot()) no_dot_watch_ = std::make_unique<ValidationWatch>(*no_dot_slot());
}

void GpuTest::TearDown() {
  if (watch_) watch_->check("shared context");
  if (no_dot_watch_) no_dot_watch_->check("no-int8-dot context");
  watch_.reset();
  no_dot_watch_.reset();
}

vkd::vk::Context& GpuTest::no_dot_ctx() {
  const bool fresh = !no_dot_slot();
  vkd::vk::Context& context = no_int8_dot_context();
  if (!no_dot_watch_) no_dot_watch_ = std::make_unique<ValidationWatch>(context, fresh);
  return context;
}

// ---- helpers ----------------------------------------------------------------------------

vkd::testing::RefShape ref_shape(const std::vector<int64_t>& sizes) {
  int64_t d[4] = {1, 1, 1, 1};
  const size_t offset = 4 - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) d[offset + i] = sizes[i];
  return {d[0], d[1], d[2], d[3]};
}

std::vector<float> ref_float_device(const vkd::TensorSpec& spec, const std::vector<float>& nchw) {
  using vkd::MemoryLayout;
  const auto s = ref_shape(spec.sizes);
  const int64_t N = s.n, C = s.c, H = s.h, W = s.w;
  const auto up4 = [](int64_t v) { return (v + 3) / 4; };
  std::vector<float> out;
  if (spec.storage == vkd::StorageType::Buffer) {
    out.assign(static_cast<size_t>(N * C * H * W), 0.0f);
  } else {
    int64_t texels = 0;
    switch (spec.layout) {
      case MemoryLayout::WidthPacked: texels = up4(W) * H * N * C; break;
      case MemoryLayout::HeightPacked: texels = W * up4(H) * N * C; break;
      default: texels = W * H * N * up4(C); break;
    }
    out.assign(static_cast<size_t>(texels * 4), 0.0f);
  }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          int64_t index = 0;
          if (spec.storage == vkd::StorageType::Buffer) {
            switch (spec.layout) {
              case MemoryLayout::WidthPacked: index = ((n * C + c) * H + h) * W + w; break;
              case MemoryLayout::HeightPacked: index = ((n * C + c) * W + w) * H + h; break;
              default: index = ((n * H + h) * W + w) * C + c; break;
            }
          } else {
            int64_t x = 0, y = 0, z = 0, comp = 0, X = 0, Y = 0;
            switch (spec.layout) {
              case MemoryLayout::WidthPacked:
                x = w / 4, y = h, z = n * C + c, comp = w % 4, X = up4(W), Y = H;
                break;
              case MemoryLayout::HeightPacked:
                x = w, y = h / 4, z = n * C + c, comp = h % 4, X = W, Y = up4(H);
                break;
              default: x = w, y = h, z = n * up4(C) + c / 4, comp = c % 4, X = W, Y = H; break;
            }
            index = ((z * Y + y) * X + x) * 4 + comp;
          }
          out[static_cast<size_t>(index)] =
              nchw[static_cast<size_t>(((n * C + c) * H + h) * W + w)];
        }
  return out;
}

std::vector<int32_t> float_bits(const std::vector<float>& values) {
  std::vector<int32_t> bits(values.size());
  if (!values.empty()) std::memcpy(bits.data(), values.data(), values.size() * sizeof(float));
  return bits;
}

::testing::AssertionResult words_equal(const std::vector<int32_t>& expected,
                                       const std::vector<int32_t>& actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure()
           << "word count: expected " << expected.size() << ", got " << actual.size();
  }
  size_t mismatches = 0;
  std::ostringstream first;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == actual[i]) continue;
    if (++mismatches <= 4) {
      char line[96];
      std::snprintf(line, sizeof(line), "\n  word %zu: expected 0x%08x, got 0x%08x", i,
                    static_cast<uint32_t>(expected[i]), static_cast<uint32_t>(actual[i]));
      first << line;
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << mismatches << " of " << expected.size() << " words differ; first:" << first.str();
}

::testing::AssertionResult floats_equal(const std::vector<float>& expected,
                                        const std::vector<float>& actual) {
  auto r = words_equal(float_bits(expected), float_bits(actual));
  if (r) return r;
  // Add the first differing values as numbers.
  for (size_t i = 0; i < expected.size() && i < actual.size(); ++i) {
    if (std::memcmp(&expected[i], &actual[i], sizeof(float)) != 0) {
      r << "\n  first differing value at " << i << ": expected " << expected[i] << ", got "
        << actual[i];
      break;
    }
  }
  return r;
}

std::string short_name(vkd::StorageType storage) {
  return storage == vkd::StorageType::Buffer ? "buf" : "tex";
}

std::string short_name(vkd::MemoryLayout layout) {
  switch (layout) {
    case vkd::MemoryLayout::WidthPacked: return "W";
    case vkd::MemoryLayout::HeightPacked: return "H";
    case vkd::MemoryLayout::ChannelsPacked: return "C";
    case vkd::MemoryLayout::PackedInt8_4W4C: return "4W4C";
    case vkd::MemoryLayout::PackedInt8_4H4W: return "4H4W";
    case vkd::MemoryLayout::PackedInt8_4C1W: return "4C1W";
  }
  return "unknown";
}

std::string shape_name(const std::vector<int64_t>& sizes) {
  std::string s;
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? "x" : "") + std::to_string(sizes[i]);
  return s;
}

std::vector<int8_t> random_int8(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-128, 127);
  std::vector<int8_t> v(count);
  for (auto& x : v) x = static_cast<int8_t>(dist(rng));
  return v;
}

std::vector<float> random_floats(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1000.0f, 1000.0f);
  std::vector<float> v(count);
  for (auto& x : v) x = dist(rng);
  if (count > 1) v[1] = -0.0f;  // the sign of zero must survive a copy
  return v;
}

}  // namespace vkd_test
