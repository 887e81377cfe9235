// The C API over vkd::Model (vkd_model.h): a partitioned model loaded, described and run
// through vkd_model_*, its output equal to the C++ API's and to the reference interpreter's;
// errors as statuses with messages (load, info, execute), NULL handles refused.
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
  vkd_tensor in = c_tensor(const_cast<uint8_t*>(x.bytes.data()), x.bytes.size(), VKD_FLOAT32,
                           {1, 4, 6, 10});
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
  vkd_model_destroy(nullptr);
}

}  // namespace
}  // namespace vkd_test
