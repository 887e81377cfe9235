// Shared pieces of the op argument-check tests (test_*_errors.cpp): each builds one op's nodes
// with one thing wrong and expects the build itself to throw a vkd::Error whose message names
// the op and the problem.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/DType.h"
#include "core/Error.h"
#include "core/TensorSpec.h"
#include "runtime/graph/ComputeGraph.h"
#include "runtime/vk/Context.h"

namespace vkd_test {

// The names every error test spells out.
using vkd::DType;
using vkd::MemoryLayout;
using vkd::StorageType;
using vkd::TensorSpec;
using vkd::graph::ComputeGraph;

// An int8x4 buffer tensor (the quantized ops' usual operand), 4W4C unless told otherwise.
inline vkd::TensorSpec int8_spec(std::vector<int64_t> sizes,
                                 vkd::MemoryLayout layout = vkd::MemoryLayout::PackedInt8_4W4C) {
  return {std::move(sizes), vkd::DType::Int8x4, vkd::StorageType::Buffer, layout};
}

// Runs `add_nodes(g)` on `g` (which keeps what was added, for the test to look at); returns the
// error's code and message, or (-1, "") when it builds.
template <typename F>
std::pair<int, std::string> build_result(vkd::graph::ComputeGraph& g, F&& add_nodes) {
  try {
    add_nodes(g);
  } catch (const vkd::Error& e) {
    return {static_cast<int>(e.code()), e.what()};
  }
  return {-1, ""};
}

// The same into a fresh graph on `ctx`.
template <typename F>
std::pair<int, std::string> build_result(vkd::vk::Context& ctx, F&& add_nodes) {
  vkd::graph::ComputeGraph g(ctx);
  return build_result(g, std::forward<F>(add_nodes));
}

// `setup.build(ctx)` fails with `code`, and its message names `op` and says `says`. Returns the
// message, for a test that checks more of it.
template <typename Setup>
std::string expect_op_error(Setup&& setup, vkd::vk::Context& ctx, const std::string& op,
                            const std::string& says,
                            vkd::ErrorCode code = vkd::ErrorCode::InvalidArgument) {
  const auto [got, message] = setup.build(ctx);
  EXPECT_EQ(got, static_cast<int>(code)) << message;
  EXPECT_NE(message.find(says), std::string::npos) << "message: " << message;
  EXPECT_NE(message.find(op), std::string::npos) << "message: " << message;
  return message;
}

}  // namespace vkd_test
