// Shared GPU fixture for the unit tests.
//
// One vk::Context per test binary (created lazily from ContextOptions::from_env(), so CTest's
// VKD_VALIDATION=1 turns the Khronos validation layer on), destroyed by a gtest environment
// before static destruction. Every GpuTest checks after the test body that the validation
// log of each shared context gained no error and no warning, and prints the new messages if it
// did. Tests that build their own Context check it with ValidationWatch before destroying it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/DType.h"
#include "core/Error.h"
#include "core/TensorSpec.h"
#include "runtime/vk/Context.h"
#include "test/reference/LayoutReference.h"

namespace vkd_test {

// The binary's shared context (default options from the environment).
vkd::vk::Context& shared_context();
// A second shared context whose profile has the int8 dot product switched off
// (options.overrides.disable_int8_dot = true).
vkd::vk::Context& no_int8_dot_context();
// Options for any extra context a test builds (validation as the environment says).
vkd::vk::ContextOptions test_context_options();

// Remembers a validation log's counters; check() fails the current test if they grew.
class ValidationWatch {
 public:
  // `fresh`: the context was just created by the caller, count its creation messages too.
  explicit ValidationWatch(const vkd::vk::Context& context, bool fresh = false);
  // Adds a gtest failure listing every new message. Returns true when the log is clean.
  bool check(const std::string& what) const;

 private:
  const vkd::vk::ValidationLog* log_;
  uint32_t errors_ = 0, warnings_ = 0;
  size_t messages_ = 0;
};

// Fixture: gives ctx() and checks the shared contexts' validation logs after every test.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  vkd::vk::Context& ctx() { return shared_context(); }
  // The no-int8-dot context; its log is checked too once a test has used it.
  vkd::vk::Context& no_dot_ctx();

 private:
  std::unique_ptr<ValidationWatch> watch_, no_dot_watch_;
};

template <typename Param>
class GpuTestWithParam : public GpuTest, public ::testing::WithParamInterface<Param> {};

// ---- helpers shared by the GPU tests ------------------------------------------------------

// [N, C, H, W] of `sizes` (rank < 4 is 1-prefixed), for the LayoutReference functions.
vkd::testing::RefShape ref_shape(const std::vector<int64_t>& sizes);

// Expected device contents of a float tensor (what read_words returns, as floats), written from
// the closed forms in core/FloatLayout.h's header comment, independently of
// HostPacking: buffers in their layout's element order, textures texel by texel (x fastest,
// 4 components) with 0 in components past the end of the packed dim.
std::vector<float> ref_float_device(const vkd::TensorSpec& spec, const std::vector<float>& nchw);

// Bit patterns of floats, for exact comparison with read_words.
std::vector<int32_t> float_bits(const std::vector<float>& values);

// Exact word-by-word comparison: on mismatch reports the count and the first few indices
// with expected and actual values in hex.
::testing::AssertionResult words_equal(const std::vector<int32_t>& expected,
                                       const std::vector<int32_t>& actual);
// Exact float comparison (bitwise; -0.0 != 0.0 and NaNs compare by payload).
::testing::AssertionResult floats_equal(const std::vector<float>& expected,
                                        const std::vector<float>& actual);

// Short names for parameterized-test names: "buf", "tex", "W", "H", "C", "4W4C", ...
std::string short_name(vkd::StorageType storage);
std::string short_name(vkd::MemoryLayout layout);
std::string shape_name(const std::vector<int64_t>& sizes);  // "2x17x9x6"

// Runs `fn`; succeeds when it throws vkd::Error with `code` and a message containing every one
// of `needles`.
template <typename Fn>
::testing::AssertionResult throws_error(Fn&& fn, vkd::ErrorCode code,
                                        const std::vector<std::string>& needles) {
  try {
    fn();
  } catch (const vkd::Error& e) {
    const std::string message = e.what();
    if (e.code() != code) {
      return ::testing::AssertionFailure() << "threw " << vkd::to_string(e.code()) << " ("
                                           << message << "), expected " << vkd::to_string(code);
    }
    for (const auto& needle : needles) {
      if (message.find(needle) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "message \"" << message << "\" does not mention \"" << needle << "\"";
      }
    }
    return ::testing::AssertionSuccess() << message;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-vkd exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// Deterministic random test data.
std::vector<int8_t> random_int8(size_t count, uint32_t seed);
std::vector<float> random_floats(size_t count, uint32_t seed);  // [-1000, 1000), v[1] = -0

}  // namespace vkd_test
