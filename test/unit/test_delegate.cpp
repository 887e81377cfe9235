// The delegate end to end: blobs written with the serializer, loaded through vkd::Delegate (or
// the graph loader, for tests that need a device with lowered limits), outputs compared with
// the CPU references in test/reference/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/delegate/GraphLoader.h"
#include "runtime/vk/Context.h"
#include "serialization/Serializer.h"
#include "test/reference/QuantReference.h"
#include "test/unit/GpuTest.h"
#include "vkdelegate/Delegate.hpp"
#include "vkdelegate/vkd_delegate.h"

namespace {

using vkd::DType;
using vkd::MemoryLayout;
using vkd::StorageType;
using vkd::TensorSpec;
using vkd::serialization::GraphBuilder;
using vkd::serialization::ValueId;

constexpr float kScale = 0.0375f;
constexpr int kZeroPoint = -7;

TensorSpec float_spec(std::vector<int64_t> sizes, StorageType storage = StorageType::Buffer,
                      MemoryLayout layout = MemoryLayout::WidthPacked) {
  return {std::move(sizes), DType::Float32, storage, layout};
}

TensorSpec int8_spec(std::vector<int64_t> sizes, MemoryLayout layout) {
  return {std::move(sizes), DType::Int8x4, StorageType::Buffer, layout};
}

// Writes q8ta_quantize / q8ta_convert / q8ta_dequantize calls with the registry's argument order.
struct QuantGraph {
  GraphBuilder b;
  void quantize(ValueId in, ValueId out, int zp = kZeroPoint) {
    b.add_op("q8ta_quantize",
             {in, b.add_float(kScale), b.add_int(zp), b.add_int(-128), b.add_int(127), out});
  }
  void dequantize(ValueId in, ValueId out, int zp = kZeroPoint) {
    b.add_op("q8ta_dequantize",
             {in, b.add_float(kScale), b.add_int(zp), b.add_int(-128), b.add_int(127), out});
  }
  void convert(ValueId in, ValueId out, int zp = kZeroPoint) {
    b.add_op("q8ta_convert", {in, b.add_int(zp), out});
  }
};

std::vector<float> random_input(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = dist(rng);
  // Exact ties and out-of-range values, so rounding and clamping are exercised.
  if (n > 4) {
    x[0] = 2.5f * kScale;
    x[1] = -3.5f * kScale;
    x[2] = 1000.0f;
    x[3] = -1000.0f;
  }
  return x;
}

std::vector<float> quant_roundtrip_reference(const std::vector<float>& x) {
  return vkd::testing::reference_dequantize(
      vkd::testing::reference_quantize(x, kScale, kZeroPoint, -128, 127), kScale, kZeroPoint);
}

std::unique_ptr<vkd::Delegate> load(const std::vector<uint8_t>& blob,
                                    vkd::DelegateOptions options = {}) {
  std::unique_ptr<vkd::Delegate> d;
  std::string error;
  const vkd::Status st = vkd::Delegate::create(blob.data(), blob.size(), options, &d, &error);
  EXPECT_EQ(st, vkd::Status::Ok) << error;
  return d;
}

vkd::Status run_float(vkd::Delegate& d, const std::vector<float>& x, std::vector<float>& y) {
  const auto in = d.input(0), out = d.output(0);
  y.assign(out.numel(), 0.0f);
  return d.execute({{x.data(), x.size() * 4, vkd::HostDType::Float32, in.sizes}},
                   {{y.data(), y.size() * 4, vkd::HostDType::Float32, out.sizes}});
}

// x -> quantize (4W4C) -> convert x `hops` through the other layouts -> dequantize -> y.
std::vector<uint8_t> chain_blob(const std::vector<int64_t>& sizes, int hops) {
  QuantGraph g;
  const ValueId x = g.b.add_tensor(float_spec(sizes), "x");
  const MemoryLayout cycle[3] = {MemoryLayout::PackedInt8_4W4C, MemoryLayout::PackedInt8_4C1W,
                                 MemoryLayout::PackedInt8_4H4W};
  ValueId q = g.b.add_tensor(int8_spec(sizes, cycle[0]), "q0");
  g.quantize(x, q);
  for (int h = 1; h <= hops; ++h) {
    const ValueId next = g.b.add_tensor(int8_spec(sizes, cycle[h % 3]), "q" + std::to_string(h));
    g.convert(q, next);
    q = next;
  }
  const ValueId y = g.b.add_tensor(float_spec(sizes), "y");
  g.dequantize(q, y);
  g.b.set_inputs({x}, {"x"});
  g.b.set_outputs({y}, {"y"});
  return g.b.finish();
}

TEST(Delegate, QuantizeConvertDequantizeMatchesReference) {
  const std::vector<int64_t> sizes = {1, 5, 7, 9};
  auto d = load(chain_blob(sizes, 1));
  ASSERT_TRUE(d);
  ASSERT_EQ(d->input_count(), 1u);
  EXPECT_EQ(d->input(0).name, "x");
  EXPECT_TRUE(d->input(0).named);
  EXPECT_EQ(d->output(0).sizes, sizes);
  const auto x = random_input(5 * 7 * 9, 1);
  std::vector<float> y;
  ASSERT_EQ(run_float(*d, x, y), vkd::Status::Ok) << d->last_error();
  EXPECT_TRUE(vkd_test::floats_equal(quant_roundtrip_reference(x), y));
  // Per-node profile: one entry per dispatch, in graph order.
  const auto profile = d->last_profile();
  ASSERT_EQ(profile.size(), 3u);
  EXPECT_EQ(profile[0].op, "q8ta_quantize");
  EXPECT_EQ(profile[1].op, "q8ta_convert");
  EXPECT_NE(profile[1].tensors.find("4C1W"), std::string::npos) << profile[1].tensors;
  // Re-running with other data reuses the recorded command buffer.
  const auto x2 = random_input(5 * 7 * 9, 2);
  ASSERT_EQ(run_float(*d, x2, y), vkd::Status::Ok);
  EXPECT_TRUE(vkd_test::floats_equal(quant_roundtrip_reference(x2), y));
  EXPECT_EQ(d->validation_message_count(), 0u);
}

// The invariants of ExecuteProfile that hold with and without timestamps: every host phase
// measured, one after the other inside the host wall.
void expect_host_phases_consistent(const vkd::ExecuteProfile& p) {
  EXPECT_GT(p.host_wall_us, 0.0);
  EXPECT_GE(p.input_copy_us, 0.0);
  EXPECT_GT(p.submit_wait_us, 0.0);  // a fence wait never takes no time
  EXPECT_GE(p.output_copy_us, 0.0);
  EXPECT_LE(p.input_copy_us + p.submit_wait_us + p.output_copy_us, p.host_wall_us);
}

TEST(Delegate, ExecuteProfileSplitsTheHostWallAndSpansTheDispatches) {
  const std::vector<int64_t> sizes = {1, 8, 16, 16};
  auto d = load(chain_blob(sizes, 3));  // profiling is on by default
  ASSERT_TRUE(d);
  const vkd::ExecuteProfile before = d->last_execute_profile();
  EXPECT_EQ(before.host_wall_us, 0.0);
  EXPECT_EQ(before.gpu_span_us, 0.0);
  const auto x = random_input(8 * 16 * 16, 4);
  std::vector<float> y;
  for (int run = 0; run < 2; ++run) {
    ASSERT_EQ(run_float(*d, x, y), vkd::Status::Ok) << d->last_error();
    EXPECT_TRUE(vkd_test::floats_equal(quant_roundtrip_reference(x), y));
    const vkd::ExecuteProfile p = d->last_execute_profile();
    const auto nodes = d->last_profile();
    ASSERT_EQ(nodes.size(), 5u);  // quantize, 3 conversions, dequantize
    expect_host_phases_consistent(p);
    double longest = 0.0, total = 0.0;
    for (const auto& n : nodes) {
      longest = std::max(longest, n.gpu_us);
      total += n.gpu_us;
    }
    EXPECT_GT(p.gpu_span_us, 0.0);
    // The span holds every dispatch and happens while the host waits for the fence.
    EXPECT_GE(p.gpu_span_us, longest);
    EXPECT_LE(p.gpu_span_us, p.host_wall_us);
    EXPECT_DOUBLE_EQ(p.gpu_total_us, total);
    // The staging copies are timed apart from the dispatches, inside the fence wait.
    EXPECT_GT(p.gpu_input_copy_us, 0.0);
    EXPECT_GT(p.gpu_output_copy_us, 0.0);
    EXPECT_LE(p.gpu_input_copy_us + p.gpu_span_us + p.gpu_output_copy_us, p.host_wall_us);
  }
  // A failed call leaves no stale times behind.
  std::vector<float> wrong(3, 0.0f);
  EXPECT_NE(d->execute({}, {{wrong.data(), 12, vkd::HostDType::Float32, {3}}}), vkd::Status::Ok);
  EXPECT_EQ(d->last_execute_profile().host_wall_us, 0.0);
  EXPECT_EQ(d->last_execute_profile().gpu_span_us, 0.0);
  EXPECT_EQ(d->validation_message_count(), 0u);
}

TEST(Delegate, WithoutProfilingExecuteRecordsNoTimestampsButTimesTheHostPhases) {
  const std::vector<int64_t> sizes = {1, 8, 16, 16};
  vkd::DelegateOptions options;
  options.profiling = false;
  auto d = load(chain_blob(sizes, 3), options);
  ASSERT_TRUE(d);
  const auto x = random_input(8 * 16 * 16, 5);
  std::vector<float> y;
  ASSERT_EQ(run_float(*d, x, y), vkd::Status::Ok) << d->last_error();
  EXPECT_TRUE(vkd_test::floats_equal(quant_roundtrip_reference(x), y));
  EXPECT_TRUE(d->last_profile().empty());
  const vkd::ExecuteProfile p = d->last_execute_profile();
  expect_host_phases_consistent(p);
  EXPECT_EQ(p.gpu_span_us, 0.0);
  EXPECT_EQ(p.gpu_total_us, 0.0);
  EXPECT_EQ(d->validation_message_count(), 0u);
}

TEST(Delegate, SetProfilingSwitchesTheTimestampsOfLaterRunsOffAndOn) {
  const std::vector<int64_t> sizes = {1, 8, 16, 16};
  auto d = load(chain_blob(sizes, 3));  // profiling on
  ASSERT_TRUE(d);
  std::vector<float> y;
  for (int round = 0; round < 2; ++round) {
    const auto x = random_input(8 * 16 * 16, 10 + round);
    ASSERT_EQ(d->set_profiling(false), vkd::Status::Ok) << d->last_error();
    ASSERT_EQ(run_float(*d, x, y), vkd::Status::Ok) << d->last_error();
    EXPECT_TRUE(vkd_test::floats_equal(quant_roundtrip_reference(x), y));
    EXPECT_TRUE(d->last_profile().empty());
    const vkd::ExecuteProfile off = d->last_execute_profile();
    expect_host_phases_consistent(off);
    EXPECT_EQ(off.gpu_span_us, 0.0);
    EXPECT_EQ(off.gpu_input_copy_us, 0.0);
    ASSERT_EQ(d->set_profiling(true), vkd::Status::Ok) << d->last_error();
    ASSERT_EQ(run_float(*d, x, y), vkd::Status::Ok) << d->last_error();
    EXPECT_TRUE(vkd_test::floats_equal(quant_roundtrip_reference(x), y));
    EXPECT_EQ(d->last_profile().size(), 5u);
    const vkd::ExecuteProfile nodes = d->last_execute_profile();
    EXPECT_GT(nodes.gpu_span_us, 0.0);
    EXPECT_GT(nodes.gpu_total_us, 0.0);
    // Span only: the span and the copies, no per-node times.
    ASSERT_EQ(d->set_profiling(vkd::Delegate::Profiling::Span), vkd::Status::Ok) << d->last_error();
    ASSERT_EQ(run_float(*d, x, y), vkd::Status::Ok) << d->last_error();
    EXPECT_TRUE(vkd_test::floats_equal(quant_roundtrip_reference(x), y));
    EXPECT_TRUE(d->last_profile().empty());
    const vkd::ExecuteProfile span = d->last_execute_profile();
    expect_host_phases_consistent(span);
    EXPECT_GT(span.gpu_span_us, 0.0);
    EXPECT_LE(span.gpu_span_us, span.submit_wait_us);
    EXPECT_EQ(span.gpu_total_us, 0.0);
    EXPECT_GT(span.gpu_input_copy_us, 0.0);
    EXPECT_GT(span.gpu_output_copy_us, 0.0);
    ASSERT_EQ(d->set_profiling(true), vkd::Status::Ok) << d->last_error();
  }
  // Without profiling at creation there are no timestamps to switch on.
  vkd::DelegateOptions options;
  options.profiling = false;
  auto plain = load(chain_blob(sizes, 3), options);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->set_profiling(true), vkd::Status::InvalidArgument);
  EXPECT_NE(plain->last_error().find("created with options.profiling off"), std::string::npos)
      << plain->last_error();
  EXPECT_EQ(plain->set_profiling(vkd::Delegate::Profiling::Span), vkd::Status::InvalidArgument);
  EXPECT_NE(plain->last_error().find("set_profiling(Span)"), std::string::npos)
      << plain->last_error();
  EXPECT_EQ(plain->set_profiling(false), vkd::Status::Ok);
  EXPECT_EQ(d->validation_message_count(), 0u);
  EXPECT_EQ(plain->validation_message_count(), 0u);
}

TEST(Delegate, ChainOfIntermediatesSharesMemoryAndStaysCorrect) {
  // Six int8 intermediates (quantize + 5 conversions); at most two are alive at once.
  const std::vector<int64_t> sizes = {2, 13, 24, 31};
  auto d = load(chain_blob(sizes, 5));
  ASSERT_TRUE(d);
  const auto m = d->memory();
  std::printf("memory plan, 6 intermediates of [2,13,24,31] int8x4: planned %llu B, naive %llu B\n",
              static_cast<unsigned long long>(m.intermediate_planned_bytes),
              static_cast<unsigned long long>(m.intermediate_naive_bytes));
  EXPECT_LE(m.intermediate_planned_bytes * 2, m.intermediate_naive_bytes);
  const auto x = random_input(2 * 13 * 24 * 31, 3);
  std::vector<float> y;
  ASSERT_EQ(run_float(*d, x, y), vkd::Status::Ok) << d->last_error();
  EXPECT_TRUE(vkd_test::floats_equal(quant_roundtrip_reference(x), y));
  EXPECT_NE(d->describe().find("intermediates planned"), std::string::npos);
}

TEST(Delegate, ConstantsUploadInSmallBatches) {
  // A constant int8 tensor dequantized, and a float texture constant quantized: with a 64-byte
  // staging bound both go up in many chunks/batches and must arrive intact.
  const std::vector<int64_t> sizes = {1, 6, 5, 11};
  const size_t n = 6 * 5 * 11;
  std::vector<int8_t> q(n);
  for (size_t i = 0; i < n; ++i) q[i] = static_cast<int8_t>((i * 37) % 256 - 128);
  const auto xf = random_input(n, 4);
  std::vector<uint8_t> q_bytes(q.begin(), q.end());
  std::vector<uint8_t> f_bytes(n * 4);
  std::memcpy(f_bytes.data(), xf.data(), f_bytes.size());

  QuantGraph g;
  const ValueId dummy_in = g.b.add_tensor(float_spec({1, 1, 1, 4}), "unused_input");
  const ValueId wq = g.b.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4C1W), "w", q_bytes);
  const ValueId y1 = g.b.add_tensor(float_spec(sizes), "y1");
  g.dequantize(wq, y1);
  const ValueId wf = g.b.add_tensor(
      float_spec(sizes, StorageType::Texture3D, MemoryLayout::ChannelsPacked), "wf", f_bytes);
  const ValueId t = g.b.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4W4C), "t");
  g.quantize(wf, t);
  const ValueId y2 = g.b.add_tensor(float_spec(sizes), "y2");
  g.dequantize(t, y2);
  g.b.set_inputs({dummy_in}, {"unused"});
  g.b.set_outputs({y1, y2}, {"y1", "y2"});

  vkd::DelegateOptions options;
  options.constant_batch_bytes = 64;
  auto d = load(g.b.finish(), options);
  ASSERT_TRUE(d);
  std::vector<float> in(4, 0.0f), out1(n), out2(n);
  ASSERT_EQ(d->execute({{in.data(), 16, vkd::HostDType::Float32, {1, 1, 1, 4}}},
                       {{out1.data(), n * 4, vkd::HostDType::Float32, sizes},
                        {out2.data(), n * 4, vkd::HostDType::Float32, sizes}}),
            vkd::Status::Ok)
      << d->last_error();
  EXPECT_TRUE(
      vkd_test::floats_equal(vkd::testing::reference_dequantize(q, kScale, kZeroPoint), out1));
  EXPECT_TRUE(vkd_test::floats_equal(quant_roundtrip_reference(xf), out2));
  const auto m = d->memory();
  EXPECT_EQ(m.constant_bytes, n + n * 4);
  // Load peak: the device memory, the staging kept for execute, one batch and the largest
  // packed constant (the texture is staged whole), nothing more.
  EXPECT_GT(m.load_peak_bytes, m.device_bytes);
  EXPECT_LE(m.load_peak_bytes, m.device_bytes + m.staging_bytes + 2 * m.constant_device_bytes);
  EXPECT_EQ(d->validation_message_count(), 0u);
}

TEST(Delegate, Int8InputsAndOutputs) {
  // int8x4 graph input and output: host int8 in NCHW, packed with the declared zero point.
  const std::vector<int64_t> sizes = {1, 3, 4, 5};
  QuantGraph g;
  const ValueId a = g.b.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4W4C), "a");
  const ValueId b = g.b.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4H4W), "b");
  g.convert(a, b);
  g.b.set_inputs({a});
  g.b.set_outputs({b});
  auto d = load(g.b.finish());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->input(0).host_dtype, vkd::HostDType::Int8);
  EXPECT_FALSE(d->input(0).named);
  std::vector<int8_t> in(60), out(60);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int8_t>(i * 5 - 100);
  ASSERT_EQ(d->execute({{in.data(), 60, vkd::HostDType::Int8, sizes}},
                       {{out.data(), 60, vkd::HostDType::Int8, sizes}}),
            vkd::Status::Ok)
      << d->last_error();
  EXPECT_EQ(in, out);
}

TEST(Delegate, StagingViewsRunWithoutHostCopiesAndGiveTheSameOutputs) {
  const std::vector<int64_t> sizes = {1, 8, 16, 16};
  auto d = load(chain_blob(sizes, 3));
  ASSERT_TRUE(d);
  vkd::TensorView in, out;
  ASSERT_EQ(d->staging_input(0, &in), vkd::Status::Ok) << d->last_error();
  ASSERT_EQ(d->staging_output(0, &out), vkd::Status::Ok) << d->last_error();
  ASSERT_NE(in.data, nullptr);
  EXPECT_EQ(in.bytes, 8u * 16 * 16 * 4);
  EXPECT_EQ(in.sizes, sizes);
  EXPECT_EQ(out.dtype, vkd::HostDType::Float32);
  for (int round = 0; round < 2; ++round) {
    const auto x = random_input(8 * 16 * 16, 20 + round);
    std::memcpy(in.data, x.data(), in.bytes);
    ASSERT_EQ(d->execute({{in.data, in.bytes, in.dtype, in.sizes}}, {out}), vkd::Status::Ok)
        << d->last_error();
    std::vector<float> y(x.size());
    std::memcpy(y.data(), out.data, out.bytes);
    EXPECT_TRUE(vkd_test::floats_equal(quant_roundtrip_reference(x), y));
    // Mixed: caller memory in, the staging view out (and the copied path agrees).
    std::vector<float> copied;
    ASSERT_EQ(run_float(*d, x, copied), vkd::Status::Ok) << d->last_error();
    EXPECT_EQ(copied, y);
  }
  // Errors name the problem and change nothing.
  vkd::TensorView none;
  EXPECT_EQ(d->staging_input(1, &none), vkd::Status::InvalidArgument);
  EXPECT_NE(d->last_error().find("out of range"), std::string::npos) << d->last_error();
  EXPECT_EQ(none.data, nullptr);
  EXPECT_EQ(d->staging_output(0, nullptr), vkd::Status::InvalidArgument);
  EXPECT_EQ(d->validation_message_count(), 0u);
}

TEST(Delegate, StagingViewsAreRefusedWhereTheDeviceFormIsPacked) {
  const std::vector<int64_t> sizes = {1, 3, 4, 5};
  QuantGraph g;
  const ValueId a = g.b.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4W4C), "a");
  const ValueId b = g.b.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4H4W), "b");
  g.convert(a, b);
  g.b.set_inputs({a});
  g.b.set_outputs({b});
  auto d = load(g.b.finish());
  ASSERT_TRUE(d);
  vkd::TensorView view;
  EXPECT_EQ(d->staging_input(0, &view), vkd::Status::Unsupported);
  EXPECT_NE(d->last_error().find("not contiguous NCHW"), std::string::npos) << d->last_error();
  EXPECT_EQ(d->staging_output(0, &view), vkd::Status::Unsupported);
  EXPECT_EQ(view.data, nullptr);
}

TEST(Delegate, WrongInputsGiveClearErrors) {
  const std::vector<int64_t> sizes = {1, 5, 7, 9};
  auto d = load(chain_blob(sizes, 1));
  ASSERT_TRUE(d);
  std::vector<float> x(315), y(315), small(5 * 7 * 8);
  const vkd::TensorView out{y.data(), y.size() * 4, vkd::HostDType::Float32, sizes};
  // Other shape: the graph's kernels take fixed shapes, so this is an error (no resize).
  EXPECT_EQ(
      d->execute({{small.data(), small.size() * 4, vkd::HostDType::Float32, {1, 5, 7, 8}}}, {out}),
      vkd::Status::InvalidArgument);
  EXPECT_NE(d->last_error().find("has shape [1,5,7,8], the model was compiled for [1,5,7,9]; "
                                 "resizing is not supported by q8ta_quantize"),
            std::string::npos)
      << d->last_error();
  EXPECT_EQ(d->execute({{x.data(), x.size(), vkd::HostDType::Int8, sizes}}, {out}),
            vkd::Status::InvalidArgument);
  EXPECT_NE(d->last_error().find("input 0 'x' is float32, got int8"), std::string::npos)
      << d->last_error();
  EXPECT_EQ(d->execute({}, {out}), vkd::Status::InvalidArgument);
  EXPECT_NE(d->last_error().find("takes 1 inputs, got 0"), std::string::npos);
  EXPECT_EQ(d->execute({{x.data(), 100, vkd::HostDType::Float32, sizes}}, {out}),
            vkd::Status::InvalidArgument);
  EXPECT_NE(d->last_error().find("needs 1260 bytes, got 100"), std::string::npos);
  // A failed call leaves the delegate usable.
  std::vector<float> yy;
  EXPECT_EQ(run_float(*d, x, yy), vkd::Status::Ok);
  EXPECT_EQ(d->last_error(), "");
}

// Blobs that deserialize but describe an impossible data flow or an unsupported op.
TEST(Delegate, BadGraphsFailAtLoadWithTheirOwnMessage) {
  auto expect_load_error = [](const std::vector<uint8_t>& blob, vkd::Status status,
                              const std::string& needle) {
    std::unique_ptr<vkd::Delegate> d;
    std::string error;
    EXPECT_EQ(vkd::Delegate::create(blob.data(), blob.size(), {}, &d, &error), status) << error;
    EXPECT_FALSE(d);
    EXPECT_NE(error.find(needle), std::string::npos) << error;
  };
  const std::vector<int64_t> sizes = {1, 2, 3, 4};
  {  // reads a tensor no op wrote
    QuantGraph g;
    const ValueId x = g.b.add_tensor(float_spec(sizes), "x");
    const ValueId q = g.b.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4W4C), "q");
    const ValueId y = g.b.add_tensor(float_spec(sizes), "y");
    g.dequantize(q, y);
    g.b.set_inputs({x});
    g.b.set_outputs({y});
    expect_load_error(g.b.finish(), vkd::Status::InvalidArgument,
                      "op 0 'q8ta_dequantize': argument 'input' reads tensor 'q' (value 1) "
                      "before any op writes it");
  }
  {  // writes a graph input
    QuantGraph g;
    const ValueId x = g.b.add_tensor(float_spec(sizes), "x");
    const ValueId q = g.b.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4W4C), "q");
    g.quantize(x, q);
    g.b.add_op("float_convert", {x, x});
    g.b.set_inputs({x});
    g.b.set_outputs({q});
    expect_load_error(g.b.finish(), vkd::Status::InvalidArgument,
                      "op 1 'float_convert': output 'output' is tensor 'x' (value 0), which is a "
                      "graph input");
  }
  {  // an output nothing writes
    QuantGraph g;
    const ValueId x = g.b.add_tensor(float_spec(sizes), "x");
    const ValueId y = g.b.add_tensor(float_spec(sizes), "y");
    g.b.set_inputs({x});
    g.b.set_outputs({y});
    expect_load_error(g.b.finish(), vkd::Status::InvalidArgument,
                      "graph output 'y' (value 1) is never written by an op");
  }
  {  // an op this runtime does not have
    QuantGraph g;
    const ValueId x = g.b.add_tensor(float_spec(sizes), "x");
    const ValueId y = g.b.add_tensor(float_spec(sizes), "y");
    g.b.add_op("aten.fancy_op", {x, y});
    g.b.set_inputs({x});
    g.b.set_outputs({y});
    expect_load_error(g.b.finish(), vkd::Status::InvalidArgument, "'aten.fancy_op'");
  }
  {  // an int8x4 tensor used with two zero points
    QuantGraph g;
    const ValueId x = g.b.add_tensor(float_spec(sizes), "x");
    const ValueId q = g.b.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4W4C), "q");
    const ValueId y = g.b.add_tensor(float_spec(sizes), "y");
    g.quantize(x, q, 3);
    g.dequantize(q, y, 5);
    g.b.set_inputs({x});
    g.b.set_outputs({y});
    expect_load_error(g.b.finish(), vkd::Status::InvalidArgument,
                      "op 1 'q8ta_dequantize': tensor 'q' is used with zero point 5 but an "
                      "earlier op declared 3");
  }
  {  // a zero point outside int8
    QuantGraph g;
    const ValueId x = g.b.add_tensor(float_spec(sizes), "x");
    const ValueId q = g.b.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4W4C), "q");
    g.quantize(x, q, 300);
    g.b.set_inputs({x});
    g.b.set_outputs({q});
    expect_load_error(g.b.finish(), vkd::Status::InvalidArgument,
                      "op 0 'q8ta_quantize': argument 'zero_point' is 300, outside [-128, 127]");
  }
}

// A constant of a blob: sizes, dtype and its host bytes.
struct HostConstant {
  std::vector<int64_t> sizes;
  DType dtype;
  std::vector<uint8_t> bytes;
};

// `sizes` of `dtype`, every byte `fill`: exactly the byte count the dtype needs.
HostConstant filled(std::vector<int64_t> sizes, DType dtype, uint8_t fill) {
  const TensorSpec spec{sizes, dtype, StorageType::Buffer, MemoryLayout::WidthPacked};
  return {std::move(sizes), dtype,
          std::vector<uint8_t>(static_cast<size_t>(spec.numel()) * vkd::host_element_size(dtype),
                               fill)};
}

// x [1, 1, 5, 8] -> quantize (4H4W) -> q8ta_linear_dq (N = 6) -> y [1, 1, 5, 6]: the linear
// builder reads the weight, weight_scales and bias constants on the host.
std::vector<uint8_t> linear_dq_blob(const HostConstant& weight, const HostConstant& scales,
                                    const HostConstant& bias) {
  QuantGraph g;
  const ValueId x = g.b.add_tensor(float_spec({1, 1, 5, 8}), "x");
  const ValueId q = g.b.add_tensor(int8_spec({1, 1, 5, 8}, MemoryLayout::PackedInt8_4H4W), "q");
  g.quantize(x, q);
  auto constant = [&](const HostConstant& c, const char* name) {
    return g.b.add_tensor({c.sizes, c.dtype, StorageType::Buffer, MemoryLayout::WidthPacked}, name,
                          c.bytes);
  };
  const ValueId w = constant(weight, "w"), s = constant(scales, "w_scales"),
                b = constant(bias, "b");
  const ValueId y = g.b.add_tensor(float_spec({1, 1, 5, 6}), "y");
  g.b.add_op("q8ta_linear_dq", {q, g.b.add_float(kScale), g.b.add_int(kZeroPoint), w, s, b, y});
  g.b.set_inputs({x}, {"x"});
  g.b.set_outputs({y}, {"y"});
  return g.b.finish();
}

// linear_dq_blob with non-trivial weights, scales and bias.
std::vector<uint8_t> linear_blob() {
  HostConstant w = filled({6, 8}, DType::Int8, 0);
  HostConstant scales = filled({6}, DType::Float32, 0), bias = filled({6}, DType::Float32, 0);
  for (size_t i = 0; i < w.bytes.size(); ++i) w.bytes[i] = static_cast<uint8_t>((i * 29) % 255);
  for (size_t n = 0; n < 6; ++n) {
    const float s = 0.01f * static_cast<float>(n + 1), b = 0.5f - static_cast<float>(n);
    std::memcpy(&scales.bytes[n * 4], &s, 4);
    std::memcpy(&bias.bytes[n * 4], &b, 4);
  }
  return linear_dq_blob(w, scales, bias);
}

// A blob may sit at any address (an app's mmap plus an offset, a byte vector inside a bigger
// file): constants are copied out, never read in place as floats (UBSan reported
// "load of misaligned address ... for type 'const float'" in Linear.cpp). Same results either way.
TEST(Delegate, BlobAtAnOddAddressLoadsAndRunsTheSame) {
  const auto blob = linear_blob();
  std::vector<uint8_t> storage(blob.size() + 3);
  for (size_t offset : {size_t{1}, size_t{3}}) {
    uint8_t* odd = storage.data() + offset;
    std::memcpy(odd, blob.data(), blob.size());
    std::unique_ptr<vkd::Delegate> aligned, misaligned;
    std::string error;
    ASSERT_EQ(vkd::Delegate::create(blob.data(), blob.size(), {}, &aligned, &error),
              vkd::Status::Ok)
        << error;
    ASSERT_EQ(vkd::Delegate::create(odd, blob.size(), {}, &misaligned, &error), vkd::Status::Ok)
        << error;
    const auto x = random_input(40, 7);
    std::vector<float> y_aligned, y_misaligned;
    ASSERT_EQ(run_float(*aligned, x, y_aligned), vkd::Status::Ok) << aligned->last_error();
    ASSERT_EQ(run_float(*misaligned, x, y_misaligned), vkd::Status::Ok);
    EXPECT_TRUE(vkd_test::floats_equal(y_aligned, y_misaligned)) << "offset " << offset;
    EXPECT_NE(y_aligned, std::vector<float>(30, 0.0f)) << "the bias alone is not zero";
  }
}

std::string load_error_message(const std::vector<uint8_t>& blob, vkd::Status expected) {
  std::unique_ptr<vkd::Delegate> d;
  std::string error;
  EXPECT_EQ(vkd::Delegate::create(blob.data(), blob.size(), {}, &d, &error), expected) << error;
  return error;
}

// Each per-channel constant of q8ta_linear_dq swapped to every other dtype, its byte size kept
// consistent with the new dtype: the loader refuses it by name before the builder reads a byte
// (it used to read 2-4x the constant's size past its end in pack_channels).
TEST(Delegate, ConstantOfTheWrongDtypeIsRefusedBeforeAnyRead) {
  const char* names[3] = {"weight", "weight_scales", "bias"};
  const HostConstant right[3] = {filled({6, 8}, DType::Int8, 1), filled({6}, DType::Float32, 1),
                                 filled({6}, DType::Float32, 1)};
  for (size_t c = 0; c < 3; ++c) {
    for (DType dtype : {DType::Float32, DType::Float16, DType::Int32, DType::Int8}) {
      if (dtype == right[c].dtype) continue;
      HostConstant args[3] = {right[0], right[1], right[2]};
      args[c] = filled(right[c].sizes, dtype, 1);
      const std::string error = load_error_message(linear_dq_blob(args[0], args[1], args[2]),
                                                   vkd::Status::InvalidArgument);
      EXPECT_NE(error.find(std::string("op 1 'q8ta_linear_dq': argument '") + names[c] + "'"),
                std::string::npos)
          << error;
      EXPECT_NE(error.find(std::string(" is ") + std::string(to_string(dtype)) + ", expected " +
                           std::string(to_string(right[c].dtype))),
                std::string::npos)
          << error;
    }
  }
}

// Scales and bias hold one value per output channel, the weight has the op's rank.
TEST(Delegate, ConstantOfTheWrongShapeIsRefusedBeforeAnyRead) {
  const auto i8 = DType::Int8, f32 = DType::Float32;
  EXPECT_NE(load_error_message(
                linear_dq_blob(filled({6, 8}, i8, 0), filled({5}, f32, 0), filled({6}, f32, 0)),
                vkd::Status::InvalidArgument)
                .find("argument 'weight_scales' (tensor 'w_scales') holds 5 values, expected one "
                      "per output channel (dim 0 of 'weight'"),
            std::string::npos);
  EXPECT_NE(load_error_message(
                linear_dq_blob(filled({6, 8}, i8, 0), filled({6}, f32, 0), filled({2, 6}, f32, 0)),
                vkd::Status::InvalidArgument)
                .find("argument 'bias' (tensor 'b') holds 12 values"),
            std::string::npos);
  EXPECT_NE(load_error_message(
                linear_dq_blob(filled({1, 6, 8}, i8, 0), filled({6}, f32, 0), filled({6}, f32, 0)),
                vkd::Status::InvalidArgument)
                .find("argument 'weight' (tensor 'w') is [1,6,8] int8 buffer "),
            std::string::npos);
}

TEST(Delegate, ZeroGpuTimeoutIsRefused) {
  vkd::DelegateOptions options;
  options.gpu_timeout_ms = 0;
  const auto blob = chain_blob({1, 2, 3, 4}, 1);
  std::unique_ptr<vkd::Delegate> d;
  std::string error;
  EXPECT_EQ(vkd::Delegate::create(blob.data(), blob.size(), options, &d, &error),
            vkd::Status::InvalidArgument);
  EXPECT_NE(error.find("gpu_timeout_ms is 0"), std::string::npos) << error;
}

// A run longer than gpu_timeout_ms: its own status (not DEVICE_LOST), the handle poisoned for
// later runs, and destroy safe (it used to free the fence and command buffer of the pending
// submission, then crash in the driver's queue thread). 16 Mi elements through a chain of
// layout conversions, longer chains until one outlasts 1 ms on this device (the first does on
// lavapipe). No constants: loading submits nothing. Validation as the environment says.
TEST(Delegate, GpuTimeoutIsItsOwnStatusAndPoisonsTheHandle) {
  const std::vector<int64_t> sizes = {1, 16, 1024, 1024};
  const std::vector<float> x(16u << 20, 0.25f);
  std::vector<float> y(x.size());
  const vkd_tensor in{
      const_cast<float*>(x.data()), x.size() * 4, VKD_FLOAT32, 4, {1, 16, 1024, 1024}};
  vkd_tensor out{y.data(), y.size() * 4, VKD_FLOAT32, 4, {1, 16, 1024, 1024}};
  vkd_options options;
  vkd_options_init(&options);
  options.gpu_timeout_ms = 1;
  for (int hops : {1, 32, 512}) {
    const auto blob = chain_blob(sizes, hops);
    vkd_delegate* handle = nullptr;
    ASSERT_EQ(vkd_delegate_init(blob.data(), blob.size(), &options, &handle), VKD_OK)
        << vkd_init_error();
    const vkd_status first = vkd_delegate_execute(handle, &in, 1, &out, 1);
    if (first == VKD_OK) {  // this device ran the whole chain within 1 ms: a longer one
      vkd_delegate_destroy(handle);
      continue;
    }
    EXPECT_EQ(first, VKD_ERROR_TIMEOUT) << vkd_delegate_last_error(handle);
    EXPECT_NE(std::string(vkd_delegate_last_error(handle)).find("did not finish within 1 ms"),
              std::string::npos)
        << vkd_delegate_last_error(handle);
    EXPECT_EQ(vkd_delegate_execute(handle, &in, 1, &out, 1), VKD_ERROR_TIMEOUT);
    EXPECT_NE(
        std::string(vkd_delegate_last_error(handle)).find("an earlier execute did not finish"),
        std::string::npos)
        << vkd_delegate_last_error(handle);
    EXPECT_EQ(vkd_delegate_validation_message_count(handle), 0u);
    EXPECT_STREQ(vkd_status_name(VKD_ERROR_TIMEOUT), "VKD_ERROR_TIMEOUT");
    vkd_delegate_destroy(handle);  // waits for the running work, then frees it
    return;
  }
  FAIL() << "even 512 conversions of 16 Mi elements finished within 1 ms";
}

TEST(Delegate, DistinctHandlesRunConcurrentlyAndOneHandleIsSerialized) {
  const std::vector<int64_t> sizes = {1, 5, 7, 9};
  const auto blob = chain_blob(sizes, 2);
  auto a = load(blob), b = load(blob);
  ASSERT_TRUE(a && b);
  auto worker = [&](vkd::Delegate* d, uint32_t seed, int* failures) {
    for (int r = 0; r < 10; ++r) {
      const auto x = random_input(315, seed + r);
      std::vector<float> y;
      if (run_float(*d, x, y) != vkd::Status::Ok || y != quant_roundtrip_reference(x)) {
        ++*failures;
      }
    }
  };
  int f[4] = {0, 0, 0, 0};
  std::thread t0(worker, a.get(), 10, &f[0]), t1(worker, b.get(), 20, &f[1]);
  std::thread t2(worker, a.get(), 30, &f[2]), t3(worker, a.get(), 40, &f[3]);
  t0.join();
  t1.join();
  t2.join();
  t3.join();
  EXPECT_EQ(f[0] + f[1] + f[2] + f[3], 0);
}

// ---- the C API: strings handed out to threads sharing a handle, enum fields from C callers ----

// A C tensor over `data`, shaped as the chain blobs' float input / output.
vkd_tensor c_float_tensor(float* data, const std::vector<int64_t>& sizes) {
  vkd_tensor t{};
  t.data = data;
  t.bytes = 4;
  for (int64_t size : sizes) t.bytes *= static_cast<size_t>(size);
  t.dtype = VKD_FLOAT32;
  t.rank = static_cast<uint32_t>(sizes.size());
  std::copy(sizes.begin(), sizes.end(), t.sizes);
  return t;
}

// One vkd_node_profile as handed out, and copies of its strings taken at once.
struct HeldProfileEntry {
  const char* op;
  const char* kernel;
  const char* tensors;
  std::string op_text, kernel_text, tensors_text;
};

// One handle shared by threads (allowed; its calls are serialized): the profile strings one
// thread holds stay valid while the others execute, until destroy (vkd_delegate.h). A node's
// strings never change after init, so every execute hands out the same pointers. Each thread
// runs, holds every entry of its first run, keeps running, and checks the held pointers against
// the copies and the later entries; when an execute freed them (the old per-execute copy), the
// pointers differ and ASan reports the reads as a use-after-free.
TEST(DelegateCApi, SharedHandleKeepsProfileStringsOtherThreadsHoldUntilDestroy) {
  const std::vector<int64_t> sizes = {1, 5, 7, 9};
  const auto blob = chain_blob(sizes, 2);  // quantize, 2 conversions, dequantize
  vkd_options options;
  vkd_options_init(&options);
  vkd_delegate* handle = nullptr;
  ASSERT_EQ(vkd_delegate_init(blob.data(), blob.size(), &options, &handle), VKD_OK)
      << vkd_init_error();
  // Runs once on `seed`'s input; false unless the output is the reference's and every profile
  // entry could be read (into `entries`).
  auto run = [&](uint32_t seed, std::vector<HeldProfileEntry>* entries) {
    std::vector<float> x = random_input(315, seed), y(315);
    const vkd_tensor in = c_float_tensor(x.data(), sizes);
    vkd_tensor out = c_float_tensor(y.data(), sizes);
    if (vkd_delegate_execute(handle, &in, 1, &out, 1) != VKD_OK) return false;
    entries->clear();
    for (size_t i = 0; i < vkd_delegate_profile_count(handle); ++i) {
      vkd_node_profile e{};
      e.struct_size = sizeof(e);
      if (vkd_delegate_profile_entry(handle, i, &e) != VKD_OK) return false;
      entries->push_back({e.op, e.kernel, e.tensors, e.op, e.kernel, e.tensors});
    }
    return entries->size() == 4 && y == quant_roundtrip_reference(x);
  };
  // The strings at the held pointers still read as when they were handed out, and a later
  // execute hands out the same pointers.
  auto still_valid = [](const std::vector<HeldProfileEntry>& held,
                        const std::vector<HeldProfileEntry>& later) {
    for (size_t i = 0; i < held.size(); ++i) {
      const HeldProfileEntry& h = held[i];
      if (h.op_text != h.op || h.kernel_text != h.kernel || h.tensors_text != h.tensors) {
        return false;
      }
      if (i >= later.size() || later[i].op != h.op || later[i].kernel != h.kernel ||
          later[i].tensors != h.tensors) {
        return false;
      }
    }
    return true;
  };
  constexpr int kThreads = 3, kRuns = 6;
  std::vector<std::vector<HeldProfileEntry>> held(kThreads);
  std::vector<int> failures(kThreads, 0), stale(kThreads, 0);
  auto worker = [&](int t) {
    if (!run(100 * t, &held[t])) ++failures[t];
    std::vector<HeldProfileEntry> later;
    for (int r = 1; r < kRuns; ++r) {
      if (!run(100 * t + r, &later)) ++failures[t];
      if (!still_valid(held[t], later)) ++stale[t];
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& thread : threads) thread.join();
  std::vector<HeldProfileEntry> last;
  ASSERT_TRUE(run(7, &last)) << vkd_delegate_last_error(handle);
  for (int t = 0; t < kThreads; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    EXPECT_EQ(failures[t], 0);
    EXPECT_EQ(stale[t], 0) << "runs after which the first run's profile strings had changed";
    ASSERT_EQ(held[t].size(), 4u);
    EXPECT_STREQ(held[t][0].op, "q8ta_quantize");
    EXPECT_TRUE(still_valid(held[t], last)) << "after every thread's runs and one more";
  }
  EXPECT_EQ(vkd_delegate_validation_message_count(handle), 0u);
  vkd_delegate_destroy(handle);
}

}  // namespace

// test/unit/c_callers.c: a C app may pass any int where the C API takes an enum (C++ code cannot
// hold an enum value outside its range without undefined behaviour).
extern "C" const char* vkd_test_status_name_of_int(int value);
extern "C" void vkd_test_set_dtype(vkd_tensor* tensor, int value);

namespace {

// The C API reads enum fields from C callers as integers (reading one as an out-of-range enum
// is undefined behaviour in C++: UBSan's -fsanitize=enum) and refuses the values none of its
// enumerators has, naming the field and the value.
TEST(DelegateCApi, UndefinedEnumValuesFromCCallersAreRefusedByName) {
  EXPECT_STREQ(vkd_test_status_name_of_int(99), "VKD_ERROR_UNKNOWN_STATUS");
  EXPECT_STREQ(vkd_test_status_name_of_int(-1), "VKD_ERROR_UNKNOWN_STATUS");
  EXPECT_STREQ(vkd_test_status_name_of_int(7), "VKD_ERROR_TIMEOUT");
  const std::vector<int64_t> sizes = {1, 5, 7, 9};
  const auto blob = chain_blob(sizes, 1);
  vkd_options options;
  vkd_options_init(&options);
  vkd_delegate* handle = nullptr;
  ASSERT_EQ(vkd_delegate_init(blob.data(), blob.size(), &options, &handle), VKD_OK)
      << vkd_init_error();
  std::vector<float> x = random_input(315, 3), y(315);
  vkd_tensor in = c_float_tensor(x.data(), sizes);
  vkd_tensor out = c_float_tensor(y.data(), sizes);
  const std::string allowed = ", none of VKD_FLOAT32 (0), VKD_INT32 (1), VKD_INT8 (2)";
  vkd_test_set_dtype(&in, 77);
  EXPECT_EQ(vkd_delegate_execute(handle, &in, 1, &out, 1), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(vkd_delegate_last_error(handle)),
            "vkd_delegate_execute: inputs[0].dtype is 77" + allowed);
  vkd_test_set_dtype(&in, VKD_FLOAT32);
  vkd_test_set_dtype(&out, -3);
  EXPECT_EQ(vkd_delegate_execute(handle, &in, 1, &out, 1), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(vkd_delegate_last_error(handle)),
            "vkd_delegate_execute: outputs[0].dtype is -3" + allowed);
  // The handle stays usable.
  vkd_test_set_dtype(&out, VKD_FLOAT32);
  ASSERT_EQ(vkd_delegate_execute(handle, &in, 1, &out, 1), VKD_OK)
      << vkd_delegate_last_error(handle);
  EXPECT_EQ(y, quant_roundtrip_reference(x));
  EXPECT_EQ(vkd_delegate_validation_message_count(handle), 0u);
  vkd_delegate_destroy(handle);
}

// The C++ API's HostDType is an int32 enum: any value is defined, and one none of its
// enumerators has is refused by name as well.
TEST(Delegate, UndefinedHostDTypeIsRefusedByName) {
  const std::vector<int64_t> sizes = {1, 5, 7, 9};
  auto d = load(chain_blob(sizes, 1));
  ASSERT_TRUE(d);
  std::vector<float> x(315, 0.5f), y(315);
  EXPECT_EQ(d->execute({{x.data(), x.size() * 4, static_cast<vkd::HostDType>(77), sizes}},
                       {{y.data(), y.size() * 4, vkd::HostDType::Float32, sizes}}),
            vkd::Status::InvalidArgument);
  EXPECT_EQ(d->last_error(),
            "input 0 'x' has dtype 77, none of HostDType's (Float32 0, Int32 1, Int8 2)");
}

// Device limits are checked at graph build with explicit units; a device with lowered limits
// (ProfileOverrides::limits) stands in for a small GPU.
class DeviceLimits : public ::testing::Test {
 protected:
  std::string load_error(const std::vector<uint8_t>& blob,
                         const vkd::vk::ProfileOverrides::Limits& limits,
                         vkd::ErrorCode code = vkd::ErrorCode::Unsupported) {
    auto options = vkd_test::test_context_options();
    options.overrides.limits = limits;
    vkd::vk::Context context(options);
    vkd_test::ValidationWatch watch(context, true);
    try {
      vkd::delegate::load_graph(context, blob.data(), blob.size(), 1 << 20);
    } catch (const vkd::Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      watch.check("load_graph with lowered limits");
      return e.what();
    }
    ADD_FAILURE() << "load_graph succeeded";
    return "";
  }
};

TEST_F(DeviceLimits, StorageBufferRangeInBytes) {
  vkd::vk::ProfileOverrides::Limits limits;
  limits.max_storage_buffer_range_bytes = 1024;
  const std::string e = load_error(chain_blob({1, 5, 7, 9}, 1), limits);
  EXPECT_NE(e.find("tensor 'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("maxStorageBufferRange is 1.0 KiB (1024 bytes)"), std::string::npos) << e;
}

TEST_F(DeviceLimits, PushConstantBytes) {
  vkd::vk::ProfileOverrides::Limits limits;
  limits.max_push_constant_bytes = 16;
  const std::string e = load_error(chain_blob({1, 5, 7, 9}, 1), limits);
  EXPECT_NE(e.find("op 0 'q8ta_quantize'"), std::string::npos) << e;
  EXPECT_NE(e.find("push-constant bytes; the device's maxPushConstantsSize is 16 bytes"),
            std::string::npos)
      << e;
}

TEST_F(DeviceLimits, WorkgroupCount) {
  vkd::vk::ProfileOverrides::Limits limits;
  limits.max_workgroup_count = 1;
  const std::string e = load_error(chain_blob({4, 64, 64, 64}, 1), limits);
  EXPECT_NE(e.find("op 0 'q8ta_quantize'"), std::string::npos) << e;
  EXPECT_NE(e.find("exceeds the device's workgroup-count limits (1 x 1 x 1 groups"),
            std::string::npos)
      << e;
}

TEST_F(DeviceLimits, DescriptorCount) {
  vkd::vk::ProfileOverrides::Limits limits;
  limits.max_per_stage_storage_buffers = 1;
  const std::string e = load_error(chain_blob({1, 5, 7, 9}, 1), limits);
  EXPECT_NE(e.find("op 0 'q8ta_quantize'"), std::string::npos) << e;
  EXPECT_NE(e.find("maxPerStageDescriptorStorageBuffers is 1"), std::string::npos) << e;
}

// Planned device memory is checked against the heap before the first allocation (2.25 GiB of
// constants used to load on lavapipe's 2048 MiB heap).
TEST_F(DeviceLimits, ModelLargerThanTheHeapInMiB) {
  vkd::vk::ProfileOverrides::Limits limits;
  limits.device_local_heap_bytes = 1u << 20;
  // 1x64x128x128: 4 MiB float input and output, bound in host-visible memory (direct I/O:
  // not on the device heap), and two 1 MiB int8 intermediates.
  const std::string e =
      load_error(chain_blob({1, 64, 128, 128}, 1), limits, vkd::ErrorCode::OutOfMemory);
  EXPECT_NE(e.find("the model needs 2 MiB of device memory (constants, inputs and outputs 0 MiB, "
                   "intermediates 2 MiB, textures 0 MiB)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("has a 1 MiB device-local heap"), std::string::npos) << e;
}

TEST_F(DeviceLimits, TextureExtentInTexels) {
  QuantGraph g;
  const std::vector<int64_t> sizes = {1, 4, 8, 40};
  const ValueId x = g.b.add_tensor(
      float_spec(sizes, StorageType::Texture3D, MemoryLayout::ChannelsPacked), "x_tex");
  const ValueId q = g.b.add_tensor(int8_spec(sizes, MemoryLayout::PackedInt8_4W4C), "q");
  g.quantize(x, q);
  g.b.set_inputs({x});
  g.b.set_outputs({q});
  vkd::vk::ProfileOverrides::Limits limits;
  limits.max_image_dimension_3d = 32;
  const std::string e = load_error(g.b.finish(), limits);
  EXPECT_NE(e.find("tensor 'x_tex'"), std::string::npos) << e;
  EXPECT_NE(e.find("maxImageDimension3D is 32 texels"), std::string::npos) << e;
}

}  // namespace
