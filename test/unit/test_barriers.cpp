// Barriers between dispatches: the hazard rule on plain memory ranges (HazardTracker, no GPU),
// the writable bits the shader generator reflects, and graphs on the device that must get a
// barrier exactly where one dispatch depends on another's memory (aliased intermediates too).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/TensorSpec.h"
#include "runtime/graph/ComputeGraph.h"
#include "runtime/graph/HazardTracker.h"
#include "runtime/ops/LayoutConvert.h"
#include "runtime/ops/QuantizeDequantize.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/QuantReference.h"
#include "test/unit/GpuTest.h"

namespace vkd_test {
namespace {

using vkd::DType;
using vkd::MemoryLayout;
using vkd::StorageType;
using vkd::TensorSpec;
using vkd::graph::ComputeGraph;
using vkd::graph::MemoryRange;
using vkd::graph::NodeAccess;
using vkd::graph::plan_barriers;
using vkd::graph::ValueRef;
using vkd::ops::QuantParams;
using vkd::testing::ref_pack;
using vkd::testing::reference_dequantize;
using vkd::testing::reference_quantize;
namespace shaders = vkd::shaders;

// ---- the rule, on plain ranges -------------------------------------------------------------

// Four disjoint 256-byte tensors in block 0.
const MemoryRange kX{0, 0, 256}, kA{0, 256, 256}, kB{0, 512, 256}, kC{0, 768, 256};

TEST(HazardTracker, ReadAfterWriteChainNeedsABarrierBeforeEachConsumer) {
  const std::vector<NodeAccess> nodes = {{{kX}, {kA}}, {{kA}, {kB}}, {{kB}, {kC}}};
  EXPECT_EQ(plan_barriers(nodes), (std::vector<bool>{false, true, true}));
}

TEST(HazardTracker, ReadersOfOneInputWritingDisjointOutputsNeedNone) {
  const std::vector<NodeAccess> nodes = {{{kX}, {kA}}, {{kX}, {kB}}, {{kX}, {kC}}};
  EXPECT_EQ(plan_barriers(nodes), (std::vector<bool>{false, false, false}));
}

TEST(HazardTracker, WriteAfterReadNeedsOne) {
  // Node 1 overwrites what node 0 reads.
  const std::vector<NodeAccess> nodes = {{{kA}, {kB}}, {{kX}, {kA}}};
  EXPECT_EQ(plan_barriers(nodes), (std::vector<bool>{false, true}));
}

TEST(HazardTracker, WriteAfterWriteNeedsOne) {
  const std::vector<NodeAccess> nodes = {{{kX}, {kA}}, {{kX}, {kA}}};
  EXPECT_EQ(plan_barriers(nodes), (std::vector<bool>{false, true}));
}

TEST(HazardTracker, PartialOverlapInOneBlockCounts) {
  const MemoryRange written{0, 0, 100};
  // Bytes 96..111 share 96..99 with the write; 100..115 only touch its end.
  EXPECT_EQ(plan_barriers({{{}, {written}}, {{MemoryRange{0, 96, 16}}, {kC}}}),
            (std::vector<bool>{false, true}));
  EXPECT_EQ(plan_barriers({{{}, {written}}, {{MemoryRange{0, 100, 16}}, {kC}}}),
            (std::vector<bool>{false, false}));
  // A write that starts inside an earlier read (write after read).
  EXPECT_EQ(plan_barriers({{{written}, {kC}}, {{kX}, {MemoryRange{0, 50, 200}}}}),
            (std::vector<bool>{false, true}));
}

TEST(HazardTracker, SameOffsetsInDifferentMemoryDoNotOverlap) {
  const MemoryRange block0{0, 0, 64}, block1{1, 0, 64}, image{2, 0, 64};
  EXPECT_FALSE(block0.overlaps(block1));
  EXPECT_EQ(plan_barriers({{{}, {block0}}, {{block1}, {kC}}}), (std::vector<bool>{false, false}));
  EXPECT_EQ(plan_barriers({{{}, {block0}}, {{image}, {block1}}}),
            (std::vector<bool>{false, false}));
}

TEST(HazardTracker, EmptyRangesOverlapNothing) {
  EXPECT_FALSE((MemoryRange{0, 10, 0}).overlaps(MemoryRange{0, 0, 64}));
  EXPECT_FALSE((MemoryRange{0, 0, 64}).overlaps(MemoryRange{0, 10, 0}));
}

TEST(HazardTracker, ABarrierEmptiesThePendingAccesses) {
  const std::vector<NodeAccess> nodes = {
      {{kX}, {kA}},  // 0
      {{kA}, {kB}},  // 1: reads A written by 0: barrier
      {{kX}, {kC}},  // 2: independent of 1
      {{kA}, {}},    // 3: A was written before the last barrier: none
      {{kX}, {kA}},  // 4: overwrites A, read by 1 and 3 since the barrier: barrier
      {{kB}, {}},    // 5: B was written before the last barrier (node 1): none
  };
  EXPECT_EQ(plan_barriers(nodes), (std::vector<bool>{false, true, false, false, true, false}));
}

// ---- what the shader generator reflects ----------------------------------------------------

TEST(ShaderReflection, OutputsAreWritableReadonlyInputsAreNot) {
  for (int s = 0; s < 2; ++s) {
    for (int l = 0; l < 3; ++l) {
      const auto& info = shaders::shader_info(shaders::variants::q8ta_quantize[s][l]);
      SCOPED_TRACE(info.name);
      ASSERT_EQ(info.binding_count, 2u);
      EXPECT_TRUE(shaders::writes_binding(info, 0));   // out: written
      EXPECT_FALSE(shaders::writes_binding(info, 1));  // in: `readonly` buffer or image3D
      EXPECT_FALSE(shaders::writes_binding(info, 2));  // past the last binding
    }
  }
  // Binding 0 is the output of every kernel (the generator's convention).
  for (size_t k = 0; k < shaders::kKernelCount; ++k) {
    const auto& info = shaders::shader_info(static_cast<shaders::Kernel>(k));
    if (info.binding_count > 0) {
      EXPECT_TRUE(shaders::writes_binding(info, 0)) << info.name;
    }
  }
}

// ---- graphs on the device ------------------------------------------------------------------

class GraphBarriers : public GpuTest {
 protected:
  const std::vector<int64_t> sizes_ = {1, 6, 5, 9};
  const QuantParams p1_{8.0f, 3, -128, 127};
  const QuantParams p2_{16.0f, -7, -100, 100};

  TensorSpec float_spec() const {
    return {sizes_, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  }
  TensorSpec int8_spec(MemoryLayout layout) const {
    return {sizes_, DType::Int8x4, StorageType::Buffer, layout};
  }
  std::vector<float> input() const { return random_floats(6 * 5 * 9, 41); }
  static std::vector<int8_t> quantized(const std::vector<float>& x, const QuantParams& q) {
    return reference_quantize(x, q.scale, q.zero_point, q.quant_min, q.quant_max);
  }
  static std::vector<float> round_trip(const std::vector<float>& x, const QuantParams& q) {
    return reference_dequantize(quantized(x, q), q.scale, q.zero_point);
  }
};

// Two quantizations of one input into two outputs: nothing to order between them.
TEST_F(GraphBarriers, IndependentDispatchesRunWithoutABarrier) {
  ComputeGraph g(ctx());
  const ValueRef x = g.add_tensor(float_spec(), "x");
  const ValueRef q1 = g.add_tensor(int8_spec(MemoryLayout::PackedInt8_4W4C), "q1");
  const ValueRef q2 = g.add_tensor(int8_spec(MemoryLayout::PackedInt8_4C1W), "q2");
  g.add_input(x);
  g.add_output(q1);
  g.add_output(q2);
  vkd::ops::add_q8ta_quantize_node(g, x, q1, p1_);
  vkd::ops::add_q8ta_quantize_node(g, x, q2, p2_);
  g.prepare();
  EXPECT_EQ(g.barrier_count(), 0u);
  EXPECT_FALSE(g.barrier_before(1));

  const auto values = input();
  const auto s = ref_shape(sizes_);
  auto check = [&] {
    EXPECT_TRUE(words_equal(
        ref_pack(MemoryLayout::PackedInt8_4W4C, s, quantized(values, p1_), p1_.zero_point),
        g.read_words(q1)));
    EXPECT_TRUE(words_equal(
        ref_pack(MemoryLayout::PackedInt8_4C1W, s, quantized(values, p2_), p2_.zero_point),
        g.read_words(q2)));
  };
  g.write_float(x, values);
  g.execute();
  check();
  // The benchmark records the same dispatches repeatedly, with a barrier between repetitions.
  if (ctx().profile().timestamps) {
    g.benchmark(1, 2);
    g.execute();
    check();
  }
}

// The float input and output of quantize -> dequantize bound in their host-visible staging
// (direct I/O, the default where that memory is device-local, e.g. lavapipe) or device-local
// with staging copies: the same floats either way,
// three executions in a row (the input rewritten in place between them), and the int8 output
// (not in its host form) always copied.
TEST_F(GraphBarriers, DirectInputsAndOutputsGiveWhatStagingCopiesGive) {
  for (const bool direct : {true, false}) {
    SCOPED_TRACE(direct ? "direct I/O" : "staging copies");
    ComputeGraph g(ctx());
    const ValueRef x = g.add_tensor(float_spec(), "x");
    const ValueRef q = g.add_tensor(int8_spec(MemoryLayout::PackedInt8_4W4C), "q");
    const ValueRef y = g.add_tensor(float_spec(), "y");
    g.add_input(x);
    g.add_output(q);
    g.add_output(y);
    vkd::ops::add_q8ta_quantize_node(g, x, q, p1_);
    vkd::ops::add_q8ta_dequantize_node(g, q, y, p1_);
    g.set_direct_io(direct);
    g.prepare();
    // Direct only where the staging memory is device-local (an output's host-cached too), or
    // for y (1080 bytes, bound by its writer alone) where the readback memory is host-cached.
    const auto flags = [&](vkd::vk::MemoryUse use) {
      return ctx().memory().memory_flags(use, ~0u);
    };
    const bool uma_in = flags(vkd::vk::MemoryUse::HostUpload) & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    const VkMemoryPropertyFlags out = flags(vkd::vk::MemoryUse::HostReadback);
    const bool cached_out = out & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    EXPECT_EQ(g.direct_io(x), direct && uma_in);
    EXPECT_EQ(g.direct_io(y), direct && cached_out);
    EXPECT_FALSE(g.direct_io(q));
    for (uint32_t run = 0; run < 3; ++run) {
      const auto values = random_floats(6 * 5 * 9, 50 + run);
      g.write_float(x, values);
      g.execute();
      EXPECT_TRUE(floats_equal(round_trip(values, p1_), g.read_float(y)));
      EXPECT_TRUE(words_equal(ref_pack(MemoryLayout::PackedInt8_4W4C, ref_shape(sizes_),
                                       quantized(values, p1_), p1_.zero_point),
                              g.read_words(q)));
    }
  }
}

// quantize -> convert -> dequantize: each consumes the previous output.
TEST_F(GraphBarriers, ChainOfThreeNeedsTwoBarriers) {
  ComputeGraph g(ctx());
  const ValueRef x = g.add_tensor(float_spec(), "x");
  const ValueRef a = g.add_tensor(int8_spec(MemoryLayout::PackedInt8_4W4C), "a");
  const ValueRef b = g.add_tensor(int8_spec(MemoryLayout::PackedInt8_4H4W), "b");
  const ValueRef y = g.add_tensor(float_spec(), "y");
  g.add_input(x);
  g.add_output(y);
  vkd::ops::add_q8ta_quantize_node(g, x, a, p1_);
  vkd::ops::add_q8ta_convert_node(g, a, b, p1_.zero_point);
  vkd::ops::add_q8ta_dequantize_node(g, b, y, p1_);
  g.prepare();
  EXPECT_EQ(g.barrier_count(), 2u);
  EXPECT_TRUE(g.barrier_before(1));
  EXPECT_TRUE(g.barrier_before(2));

  const auto values = input();
  g.write_float(x, values);
  g.execute();
  EXPECT_TRUE(floats_equal(round_trip(values, p1_), g.read_float(y)));
}

// a = quantize(x); y1 = dequantize(a); b = quantize(x); y2 = dequantize(b). As tensors, b's
// producer depends on nothing; but `a` is dead after node 1, so the planner puts `b` in a's
// bytes and node 2 overwrites what node 1 reads: the barrier before node 2 exists only because
// of the shared memory. With `b` a graph output (own memory) it is not needed.
TEST_F(GraphBarriers, AliasedIntermediatesGetTheWriteAfterReadBarrier) {
  for (bool b_is_output : {false, true}) {
    SCOPED_TRACE(b_is_output ? "b in its own memory" : "b shares a's memory");
    ComputeGraph g(ctx());
    const ValueRef x = g.add_tensor(float_spec(), "x");
    const ValueRef a = g.add_tensor(int8_spec(MemoryLayout::PackedInt8_4W4C), "a");
    const ValueRef y1 = g.add_tensor(float_spec(), "y1");
    const ValueRef b = g.add_tensor(int8_spec(MemoryLayout::PackedInt8_4W4C), "b");
    const ValueRef y2 = g.add_tensor(float_spec(), "y2");
    g.add_input(x);
    g.add_output(y1);
    g.add_output(y2);
    if (b_is_output) g.add_output(b);
    vkd::ops::add_q8ta_quantize_node(g, x, a, p1_);
    vkd::ops::add_q8ta_dequantize_node(g, a, y1, p1_);
    vkd::ops::add_q8ta_quantize_node(g, x, b, p2_);
    vkd::ops::add_q8ta_dequantize_node(g, b, y2, p2_);
    g.prepare();
    ASSERT_EQ(g.memory_range(a).overlaps(g.memory_range(b)), !b_is_output)
        << "the memory planner no longer shares a's bytes with b: the test needs another graph";
    if (!b_is_output) {
      EXPECT_LT(g.memory_stats().intermediate_planned_bytes,
                g.memory_stats().intermediate_naive_bytes);
    }
    EXPECT_TRUE(g.barrier_before(1));
    EXPECT_EQ(g.barrier_before(2), !b_is_output);
    EXPECT_TRUE(g.barrier_before(3));
    EXPECT_EQ(g.barrier_count(), b_is_output ? 2u : 3u);

    const auto values = input();
    g.write_float(x, values);
    g.execute();
    EXPECT_TRUE(floats_equal(round_trip(values, p1_), g.read_float(y1)));
    EXPECT_TRUE(floats_equal(round_trip(values, p2_), g.read_float(y2)));
  }
}

}  // namespace
}  // namespace vkd_test
