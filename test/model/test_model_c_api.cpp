// The C API over vkd::Model (vkd_model.h): a partitioned model loaded, described and run
// through vkd_model_*, its output equal to the C++ API's and to the reference interpreter's;
// errors as statuses with messages (load, info, execute), NULL handles refused; the timings and
// GPU profile of the last execute, the device name and validation count as the C++ API gives them.
#include <gtest/gtest.h>

#include <cstring>

#include "test/model/ModelFixture.h"
#include "vkdelegate/vkd_model.h"

namespace vkd_test {
namespace {

vkd_tensor c_tensor(void* data, size_t bytes, vkd_dtype dtype, const std::vector<int64_t>& s) {
  vkd_tensor t{};
  t.data = data;
  t.bytes = bytes;
  t.dtype = dtype;
  t.rank = static_cast<uint32_t>(s.size());
  for (size_t i = 0; i < s.size(); ++i) t.sizes[i] = s[i];
  return t;
}

TEST_F(ModelTest, CApiRoundTrip) {
  const std::string graph = kCompilerGraphs + "/qdq_maxpool.json";
  const std::string plan = compile_partitioned(graph, "", "m");
  vkd_options options;
  vkd_options_init(&options);
  vkd_model* model = nullptr;
  ASSERT_EQ(vkd_model_load(plan.c_str(), nullptr, &options, &model), VKD_OK)
      << vkd_model_load_error();
  ASSERT_NE(model, nullptr);
  EXPECT_STREQ(vkd_model_load_error(), "");

  ASSERT_EQ(vkd_model_input_count(model), 1u);
  ASSERT_EQ(vkd_model_output_count(model), 1u);
  vkd_tensor_info in_info{}, out_info{};
  in_info.struct_size = out_info.struct_size = sizeof(vkd_tensor_info);
  ASSERT_EQ(vkd_model_input_info(model, 0, &in_info), VKD_OK);
  ASSERT_EQ(vkd_model_output_info(model, 0, &out_info), VKD_OK);
  EXPECT_STREQ(in_info.name, "x");
  EXPECT_EQ(in_info.dtype, VKD_FLOAT32);
  EXPECT_EQ(in_info.rank, 4u);
  EXPECT_EQ(in_info.bytes, 960u);
  EXPECT_STREQ(out_info.name, "y");
  EXPECT_EQ(out_info.bytes, 240u);
  EXPECT_EQ(vkd_model_input_info(model, 1, &in_info), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(vkd_model_last_error(model),
               "vkd_model_input_info: index 1 out of range (the model has 1 inputs)");

  const HostTensor x = random_input({1, 4, 6, 10}, 6);
  std::vector<uint8_t> y(240);
  vkd_tensor in =
      c_tensor(const_cast<uint8_t*>(x.bytes.data()), x.bytes.size(), VKD_FLOAT32, {1, 4, 6, 10});
  vkd_tensor out = c_tensor(y.data(), y.size(), VKD_FLOAT32, {1, 4, 3, 5});
  ASSERT_EQ(vkd_model_execute(model, &in, 1, &out, 1), VKD_OK) << vkd_model_last_error(model);
  EXPECT_STREQ(vkd_model_last_error(model), "");
  EXPECT_TRUE(same_outputs(interpret_file(graph, "", {{"x", x}}),
                           {{"y", HostTensor{vkd::DType::Float32, {1, 4, 3, 5}, y}}}));

  // The same model through the C++ API gives the same bytes.
  const std::unique_ptr<vkd::Model> cpp = load(plan);
  ASSERT_TRUE(cpp);
  EXPECT_EQ(run_model(*cpp, {{"x", x}}).at("y").bytes, y);

  in.dtype = VKD_INT8;
  EXPECT_EQ(vkd_model_execute(model, &in, 1, &out, 1), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(vkd_model_last_error(model), "input 0 'x' is float32, got int8");
  // A dtype none of vkd_dtype's enumerators has, as a C caller may store: read as an integer
  // (never as an out-of-range enum) and refused by name.
  const int undefined_dtype = 77;
  std::memcpy(&in.dtype, &undefined_dtype, sizeof(in.dtype));
  EXPECT_EQ(vkd_model_execute(model, &in, 1, &out, 1), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(vkd_model_last_error(model),
               "vkd_model_execute: inputs[0].dtype is 77, none of VKD_FLOAT32 (0), VKD_INT32 "
               "(1), VKD_INT8 (2)");
  in.dtype = VKD_FLOAT32;
  EXPECT_EQ(vkd_model_execute(model, nullptr, 1, &out, 1), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(vkd_model_last_error(model),
               "vkd_model_execute: inputs is NULL but inputs_count is 1");
  vkd_model_destroy(model);
}

// qdq_maxpool.json partitioned: GPU, host max_pool, GPU. The C API's timings are the C++ API's
// last_timings() of the same kind of run: labels, places, one profile entry per dispatch.
TEST_F(ModelTest, CApiTimingsAndProfile) {
  const std::string plan = compile_partitioned(kCompilerGraphs + "/qdq_maxpool.json", "", "m");
  vkd_model* model = nullptr;
  ASSERT_EQ(vkd_model_load(plan.c_str(), nullptr, nullptr, &model), VKD_OK)
      << vkd_model_load_error();
  EXPECT_EQ(vkd_model_timing_count(model), 0u);  // before the first execute
  const std::unique_ptr<vkd::Model> cpp = load(plan);
  ASSERT_TRUE(cpp);
  EXPECT_EQ(std::string(vkd_model_device_name(model)), cpp->device_name());

  const HostTensor x = random_input({1, 4, 6, 10}, 3);
  std::vector<uint8_t> y(240);
  vkd_tensor in =
      c_tensor(const_cast<uint8_t*>(x.bytes.data()), x.bytes.size(), VKD_FLOAT32, {1, 4, 6, 10});
  vkd_tensor out = c_tensor(y.data(), y.size(), VKD_FLOAT32, {1, 4, 3, 5});
  ASSERT_EQ(vkd_model_execute(model, &in, 1, &out, 1), VKD_OK) << vkd_model_last_error(model);
  run_model(*cpp, {{"x", x}});
  const std::vector<vkd::StepTiming> expected = cpp->last_timings();

  ASSERT_EQ(vkd_model_timing_count(model), expected.size());
  ASSERT_EQ(expected.size(), 3u);
  for (size_t i = 0; i < expected.size(); ++i) {
    vkd_step_timing t{};
    t.struct_size = sizeof(t);
    ASSERT_EQ(vkd_model_timing(model, i, &t), VKD_OK) << vkd_model_last_error(model);
    EXPECT_EQ(t.step, expected[i].step);
    EXPECT_EQ(t.place, expected[i].place == vkd::StepPlace::Gpu ? VKD_STEP_GPU : VKD_STEP_HOST);
    EXPECT_EQ(std::string(t.label), expected[i].label);
    EXPECT_GT(t.wall_us, 0.0);
    ASSERT_EQ(t.profile_count, expected[i].profile.size()) << t.label;
    for (size_t n = 0; n < t.profile_count; ++n) {
      vkd_node_profile node{};
      node.struct_size = sizeof(node);
      ASSERT_EQ(vkd_model_profile_entry(model, i, n, &node), VKD_OK);
      EXPECT_EQ(std::string(node.op), expected[i].profile[n].op);
      EXPECT_EQ(std::string(node.kernel), expected[i].profile[n].kernel);
      EXPECT_EQ(std::string(node.tensors), expected[i].profile[n].tensors);
      EXPECT_GE(node.gpu_us, 0.0);
    }
  }
  vkd_step_timing gpu{};
  gpu.struct_size = sizeof(gpu);
  ASSERT_EQ(vkd_model_timing(model, 0, &gpu), VKD_OK);
  EXPECT_EQ(gpu.place, VKD_STEP_GPU);
  EXPECT_GT(gpu.profile_count, 0u);  // profiling is on by default

  vkd_node_profile node{};
  node.struct_size = sizeof(node);
  EXPECT_EQ(vkd_model_profile_entry(model, 1, 0, &node), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(vkd_model_last_error(model),
               "vkd_model_profile_entry: index 0 out of range (step 1 (host node 3 "
               "(aten.max_pool2d)) profiled 0 nodes)");
  EXPECT_EQ(vkd_model_timing(model, 3, &gpu), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(vkd_model_last_error(model),
               "vkd_model_timing: index 3 out of range (the last execute timed 3 steps)");
  EXPECT_EQ(vkd_model_timing(model, 0, nullptr), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(vkd_model_last_error(model), "vkd_model_timing: timing is NULL");
  EXPECT_EQ(vkd_model_validation_message_count(model), 0u);

  // VKD_PROFILING_OFF: the GPU steps record no timestamps; a mode that is none of the three
  // is refused, naming them.
  ASSERT_EQ(vkd_model_set_profiling(model, VKD_PROFILING_OFF), VKD_OK);
  ASSERT_EQ(vkd_model_execute(model, &in, 1, &out, 1), VKD_OK) << vkd_model_last_error(model);
  ASSERT_EQ(vkd_model_timing(model, 0, &gpu), VKD_OK);
  EXPECT_EQ(gpu.profile_count, 0u);
  EXPECT_EQ(vkd_model_set_profiling(model, 3), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(vkd_model_last_error(model),
               "vkd_model_set_profiling: mode 3 is none of VKD_PROFILING_OFF (0), _NODES (1), "
               "_SPAN (2)");
  ASSERT_EQ(vkd_model_set_profiling(model, VKD_PROFILING_NODES), VKD_OK);
  ASSERT_EQ(vkd_model_execute(model, &in, 1, &out, 1), VKD_OK) << vkd_model_last_error(model);
  ASSERT_EQ(vkd_model_timing(model, 0, &gpu), VKD_OK);
  EXPECT_EQ(gpu.profile_count, expected[0].profile.size());

  in.dtype = VKD_INT8;  // a failed execute leaves no timings behind
  EXPECT_EQ(vkd_model_execute(model, &in, 1, &out, 1), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkd_model_timing_count(model), 0u);
  vkd_model_destroy(model);
}

TEST_F(ModelTest, CApiErrorsWithoutAHandle) {
  vkd_model* model = reinterpret_cast<vkd_model*>(this);  // overwritten with NULL on failure
  EXPECT_EQ(vkd_model_load(path("none.partition.json").c_str(), nullptr, nullptr, &model),
            VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(std::string(vkd_model_load_error()),
            "cannot read partition plan '" + path("none.partition.json") + "': no such file");
  EXPECT_EQ(vkd_model_load(nullptr, nullptr, nullptr, &model), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(vkd_model_load_error(), "vkd_model_load: path is NULL");
  vkd_options options{};  // struct_size 0: not initialised
  EXPECT_EQ(vkd_model_load("m.vkd", nullptr, &options, &model), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(std::strstr(vkd_model_load_error(), "call vkd_options_init") != nullptr);
  EXPECT_EQ(vkd_model_input_count(nullptr), 0u);
  EXPECT_EQ(vkd_model_execute(nullptr, nullptr, 0, nullptr, 0), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(vkd_model_last_error(nullptr), "invalid argument: the vkd_model handle is NULL");
  EXPECT_EQ(vkd_model_timing_count(nullptr), 0u);
  EXPECT_EQ(vkd_model_timing(nullptr, 0, nullptr), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkd_model_profile_entry(nullptr, 0, 0, nullptr), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(vkd_model_set_profiling(nullptr, VKD_PROFILING_OFF), VKD_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(vkd_model_device_name(nullptr), "");
  EXPECT_EQ(vkd_model_validation_message_count(nullptr), 0u);
  vkd_model_destroy(nullptr);
}

}  // namespace
}  // namespace vkd_test
