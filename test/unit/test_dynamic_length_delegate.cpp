// A blob with a dynamic length (serialization/DynamicLength.h) through vkd::Delegate and the C
// API: x [1, T, 8] -> quantize -> dequantize -> + a position table [1, T, 8] (a constant cut to
// the length) -> y, compiled at T = 16, run at shorter lengths against the CPU reference; what a
// wrong shape gives.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "serialization/Serializer.h"
#include "test/reference/QuantReference.h"
#include "test/unit/GpuTest.h"
#include "vkdelegate/Delegate.hpp"
#include "vkdelegate/vkd_delegate.h"

namespace {

using vkd::DType;
using vkd::HostDType;
using vkd::MemoryLayout;
using vkd::StorageType;
using vkd::serialization::DynamicLength;
using vkd::serialization::GraphBuilder;
using vkd::serialization::ValueId;

constexpr float kScale = 0.05f;
constexpr int kZeroPoint = 3;
constexpr int64_t kMax = 16, kWidth = 8;

float position(int64_t t, int64_t c) { return 0.25f * static_cast<float>(t) - 0.125f * c; }

// With `bias`, y + a [1, 1, 8] constant, the same at every length.
float bias_at(int64_t c) { return 0.5f - 0.0625f * static_cast<float>(c); }

std::vector<uint8_t> dynamic_blob(bool bias = false) {
  GraphBuilder b;
  const vkd::TensorSpec f{
      {1, kMax, kWidth}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  const vkd::TensorSpec q{
      {1, kMax, kWidth}, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C};
  std::vector<float> table;
  for (int64_t t = 0; t < kMax; ++t) {
    for (int64_t c = 0; c < kWidth; ++c) table.push_back(position(t, c));
  }
  std::vector<uint8_t> bytes(table.size() * 4);
  std::memcpy(bytes.data(), table.data(), bytes.size());
  const ValueId x = b.add_tensor(f, "x");
  const ValueId xq = b.add_tensor(q, "xq");
  const ValueId xd = b.add_tensor(f, "xd");
  const ValueId pos = b.add_tensor(f, "pos", bytes);
  const ValueId y = b.add_tensor(f, "y");
  b.add_op("q8ta_quantize",
           {x, b.add_float(kScale), b.add_int(kZeroPoint), b.add_int(-128), b.add_int(127), xq});
  b.add_op("q8ta_dequantize",
           {xq, b.add_float(kScale), b.add_int(kZeroPoint), b.add_int(-128), b.add_int(127), xd});
  ValueId sum = y, bias_value = 0;
  if (bias) {
    std::vector<float> bias_values;
    for (int64_t c = 0; c < kWidth; ++c) bias_values.push_back(bias_at(c));
    std::vector<uint8_t> bias_bytes(bias_values.size() * 4);
    std::memcpy(bias_bytes.data(), bias_values.data(), bias_bytes.size());
    sum = b.add_tensor(f, "sum");
    bias_value = b.add_tensor(
        {{1, 1, kWidth}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "bias",
        bias_bytes);
  }
  b.add_op("float_add", {xd, pos, b.add_float(1.0), sum});
  if (bias) b.add_op("float_add", {sum, bias_value, b.add_float(1.0), y});
  b.set_inputs({x}, {"x"});
  b.set_outputs({y}, {"y"});
  DynamicLength d{"T", 2, kMax, {}};
  std::vector<ValueId> following{x, xq, xd, pos, y};  // sorted by value, as entries must be
  if (bias) following.push_back(sum);                 // made after y
  for (const ValueId v : following) d.entries.push_back({v, 1, 1, 0});
  b.set_dynamic_length(d);
  return b.finish();
}

// The CPU reference of the graph at x's length.
std::vector<float> reference(const std::vector<float>& x, bool bias = false) {
  std::vector<float> y = vkd::testing::reference_dequantize(
      vkd::testing::reference_quantize(x, kScale, kZeroPoint, -128, 127), kScale, kZeroPoint);
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] += position(static_cast<int64_t>(i) / kWidth, static_cast<int64_t>(i) % kWidth);
    if (bias) y[i] += bias_at(static_cast<int64_t>(i) % kWidth);
  }
  return y;
}

std::vector<float> input(int64_t length) {
  std::vector<float> x(static_cast<size_t>(length * kWidth));
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.37f * static_cast<float>(i % 23) - 3.0f;
  return x;
}

// Executes `d` on input(length) [1, length, kWidth]; the output (-1 where nothing was written).
std::vector<float> execute_at(vkd::Delegate& d, int64_t length) {
  const std::vector<int64_t> sizes{1, length, kWidth};
  const std::vector<float> x = input(length);
  std::vector<float> y(x.size(), -1.0f);
  EXPECT_EQ(d.execute({{x.data(), x.size() * 4, HostDType::Float32, sizes}},
                      {{y.data(), y.size() * 4, HostDType::Float32, sizes}}),
            vkd::Status::Ok)
      << d.last_error();
  return y;
}

TEST(DynamicLengthDelegate, RunsEveryLengthUpToTheMaximum) {
  const std::vector<uint8_t> blob = dynamic_blob();
  std::unique_ptr<vkd::Delegate> d;
  std::string error;
  ASSERT_EQ(vkd::Delegate::create(blob.data(), blob.size(), {}, &d, &error), vkd::Status::Ok)
      << error;
  const auto range = d->length_range();
  EXPECT_EQ(range.name, "T");
  EXPECT_EQ(range.min, 2);
  EXPECT_EQ(range.max, kMax);
  EXPECT_EQ(d->input(0).sizes, (std::vector<int64_t>{1, kMax, kWidth}));
  // Lengths in any order, again after others: each graph built once, kept or rebuilt.
  for (const int64_t length : {int64_t{16}, int64_t{5}, int64_t{2}, int64_t{11}, int64_t{5},
                               int64_t{7}, int64_t{9}, int64_t{13}, int64_t{2}, int64_t{16}}) {
    SCOPED_TRACE(length);
    const std::vector<int64_t> sizes{1, length, kWidth};
    int64_t found = 0;
    ASSERT_EQ(d->length_of_inputs({sizes}, &found), vkd::Status::Ok) << d->last_error();
    EXPECT_EQ(found, length);
    std::vector<vkd::TensorInfo> ins, outs;
    ASSERT_EQ(d->infos_at_length(length, &ins, &outs), vkd::Status::Ok) << d->last_error();
    EXPECT_EQ(outs.at(0).sizes, sizes);
    EXPECT_EQ(execute_at(*d, length), reference(input(length)));
  }
  EXPECT_EQ(d->validation_message_count(), 0u);
}

// The graphs of the shorter lengths upload no constant: the bias is the maximum's bytes, the
// position table their first rows; their intermediates fit the maximum's blocks. What they
// allocate themselves is their inputs and outputs only.
TEST(DynamicLengthDelegate, EveryLengthSharesTheMaximumsConstantsAndIntermediates) {
  const std::vector<uint8_t> blob = dynamic_blob(true);
  std::unique_ptr<vkd::Delegate> d;
  std::string error;
  ASSERT_EQ(vkd::Delegate::create(blob.data(), blob.size(), {}, &d, &error), vkd::Status::Ok)
      << error;
  const vkd::MemoryReport one = d->memory();
  // Both constants (bias, position table) and the intermediates (xq, xd, sum) on the device.
  EXPECT_GE(one.constant_device_bytes, uint64_t(4 * (kMax + 1) * kWidth));
  EXPECT_GT(one.intermediate_planned_bytes, 0u);
  for (const int64_t length : {int64_t{5}, int64_t{9}, int64_t{2}, int64_t{16}}) {
    SCOPED_TRACE(length);
    EXPECT_EQ(execute_at(*d, length), reference(input(length), true));
  }
  const vkd::MemoryReport four = d->memory();
  EXPECT_GT(four.staging_bytes, one.staging_bytes);  // the three shorter graphs are counted
  EXPECT_EQ(four.constant_device_bytes, one.constant_device_bytes);
  EXPECT_EQ(four.device_bytes - four.io_device_bytes, one.device_bytes - one.io_device_bytes);
  EXPECT_EQ(d->validation_message_count(), 0u);
}

TEST(DynamicLengthDelegate, WrongShapesNameTheInputTheDimAndTheLimit) {
  const std::vector<uint8_t> blob = dynamic_blob();
  std::unique_ptr<vkd::Delegate> d;
  ASSERT_EQ(vkd::Delegate::create(blob.data(), blob.size(), {}, &d), vkd::Status::Ok);
  auto error_of = [&](std::vector<int64_t> in_sizes, std::vector<int64_t> out_sizes) {
    const std::vector<float> x(static_cast<size_t>(in_sizes[0] * in_sizes[1] * in_sizes[2]));
    std::vector<float> y(static_cast<size_t>(out_sizes[0] * out_sizes[1] * out_sizes[2]));
    const vkd::Status st = d->execute({{x.data(), x.size() * 4, HostDType::Float32, in_sizes}},
                                      {{y.data(), y.size() * 4, HostDType::Float32, out_sizes}});
    EXPECT_EQ(st, vkd::Status::InvalidArgument);
    return d->last_error();
  };
  EXPECT_EQ(error_of({1, 17, 8}, {1, 17, 8}),
            "input 0 'x' has shape [1,17,8]: dim 1 is 1*T for the length T from 2 to 16 (2 to "
            "16), got 17 (longer than the maximum the model was compiled for)");
  EXPECT_EQ(error_of({1, 1, 8}, {1, 1, 8}),
            "input 0 'x' has shape [1,1,8]: dim 1 is 1*T for the length T from 2 to 16 (2 to "
            "16), got 1");
  EXPECT_EQ(error_of({1, 7, 4}, {1, 7, 8}), "input 0 'x' has shape [1,7,4]: dim 2 must be 8");
  EXPECT_EQ(error_of({1, 7, 8}, {1, 16, 8}),
            "output 0 'y' has shape [1,16,8]; at the inputs' length T = 7 the model gives "
            "[1,7,8]");
  std::vector<vkd::TensorInfo> ins, outs;
  EXPECT_EQ(d->infos_at_length(17, &ins, &outs), vkd::Status::InvalidArgument);
  EXPECT_EQ(d->last_error(), "length T = 17 is outside [2, 16], the lengths this model takes");
}

TEST(DynamicLengthDelegate, CApiGivesTheRangeAndTheInfosAtALength) {
  const std::vector<uint8_t> blob = dynamic_blob();
  vkd_delegate* h = nullptr;
  ASSERT_EQ(vkd_delegate_init(blob.data(), blob.size(), nullptr, &h), VKD_OK) << vkd_init_error();
  int64_t min = 0, max = 0;
  ASSERT_EQ(vkd_delegate_length_range(h, &min, &max), VKD_OK);
  EXPECT_EQ(min, 2);
  EXPECT_EQ(max, kMax);
  vkd_tensor_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(vkd_delegate_output_info_at_length(h, 6, 0, &info), VKD_OK)
      << vkd_delegate_last_error(h);
  EXPECT_EQ(std::string(info.name), "y");
  EXPECT_EQ(info.rank, 3u);
  EXPECT_EQ(info.sizes[1], 6);
  EXPECT_EQ(info.bytes, 6u * kWidth * 4);
  const std::vector<float> x = input(6);
  std::vector<float> y(x.size());
  vkd_tensor in{const_cast<float*>(x.data()), x.size() * 4, VKD_FLOAT32, 3, {1, 6, kWidth, 0}};
  vkd_tensor out{y.data(), y.size() * 4, VKD_FLOAT32, 3, {1, 6, kWidth, 0}};
  ASSERT_EQ(vkd_delegate_execute(h, &in, 1, &out, 1), VKD_OK) << vkd_delegate_last_error(h);
  EXPECT_EQ(y, reference(x));
  EXPECT_EQ(vkd_delegate_input_info_at_length(h, 40, 0, &info), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(vkd_delegate_last_error(h)),
            "vkd_delegate_input_info_at_length: length T = 40 is outside [2, 16], the lengths "
            "this model takes");
  EXPECT_EQ(vkd_delegate_validation_message_count(h), 0u);
  vkd_delegate_destroy(h);
}

}  // namespace
