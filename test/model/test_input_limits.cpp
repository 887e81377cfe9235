// The limits every reader of untrusted input applies (CPU only): the size caps of
// core/TensorLimits.h, which partition plans (test_partition_plan.cpp), graph IR,
// safetensors headers and blobs (validate(), test/unit/test_tensor_layouts.cpp) share, and the
// JSON depth cap of compiler/StrictJson.h, which the plan, graph IR and safetensors-header
// readers share: 70,000 nested brackets (140 KB) crashed all three, 5,000 on a 512 KiB thread
// stack; now each says what is wrong, on such a stack too.
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "compiler/Parse.h"
#include "compiler/Safetensors.h"
#include "core/Error.h"
#include "core/TensorLimits.h"
#include "model/PartitionPlan.h"

namespace vkd {
namespace {

__extension__ typedef __int128 Wide;  // GCC and clang (-Wpedantic: not ISO C++)

// The reference: the product in 128-bit arithmetic, sizes 0 counted as 1 (the bound on every
// partial product), or -1 for a negative size.
Wide wide_bound(const std::vector<int64_t>& sizes) {
  Wide p = 1;
  for (const int64_t s : sizes) {
    if (s < 0) return -1;
    if (p > (Wide{1} << 64)) return p;  // far past the cap; a size < 2^63 more cannot wrap
    p *= s == 0 ? 1 : s;
  }
  return p;
}

TEST(TensorLimits, CheckedElementCountAgreesWithA128BitProduct) {
  std::mt19937_64 rng(31);
  // Sizes around the cap's factors and the values whose int64 products wrap.
  const std::vector<int64_t> pool = {
      0,          1,          2,          3,     4,
      255,        46340,      46341,      65535, 65536,
      2147483647, 2147483648, 4294967296, -1,    (int64_t{1} << 62) + 1,
      INT64_MAX};
  for (int i = 0; i < 20000; ++i) {
    std::vector<int64_t> sizes(rng() % 7);
    bool has_zero = false;
    for (int64_t& s : sizes) {
      s = pool[rng() % pool.size()];
      has_zero = has_zero || s == 0;
    }
    const Wide bound = wide_bound(sizes);
    const std::optional<int64_t> count = checked_element_count(sizes);
    if (bound < 0 || bound > kMaxTensorElements) {
      EXPECT_FALSE(count.has_value()) << sizes_string(sizes);
    } else {
      ASSERT_TRUE(count.has_value()) << sizes_string(sizes);
      EXPECT_EQ(*count, has_zero ? 0 : static_cast<int64_t>(bound)) << sizes_string(sizes);
    }
  }
  EXPECT_EQ(checked_element_count({}), 1);
  EXPECT_EQ(checked_element_count({kMaxTensorElements}), kMaxTensorElements);
  EXPECT_FALSE(checked_element_count({65536, 32768}).has_value());  // 2^31
}

TEST(TensorLimits, SizeProblemsAreNamed) {
  EXPECT_EQ(tensor_size_problem({1, 4, 3, 5}, 4), "");
  EXPECT_EQ(tensor_size_problem({1, 1, 1, 1, 1, 1, 1}, 4), "rank 7 is above the limit of 6");
  EXPECT_EQ(tensor_size_problem({1, 2, 3, 4, 5}, 4, 4), "rank 5 is above the limit of 4");
  EXPECT_EQ(tensor_size_problem({3, -2}, 4), "size -2 in dim 1 is negative");
  EXPECT_EQ(tensor_size_problem({(int64_t{1} << 62) + 1, 4}, 4),
            "the product of the sizes (numel) is above the limit of 2^31 - 1 elements per "
            "tensor");
  EXPECT_EQ(tensor_size_problem({kMaxTensorElements}, 8), "");
  EXPECT_EQ(tensor_size_problem({kMaxTensorElements}, 9),
            "2147483647 elements of 9 bytes are above the limit of 17179869176 bytes per tensor");
}

// The message of the Error `read` throws ("" when it throws none).
std::string error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    return e.what();
  }
  return "";
}

std::string graph_error(const std::string& text) {
  return error_of([&] { compiler::parse_graph(text, "g.json", nullptr); });
}

std::string graph_with(const std::string& values, const std::string& nodes,
                       const std::string& output) {
  return R"({"vkd_graph": 1, "inputs": ["x"], "outputs": [")" + output + R"("],
             "values": {"x": {"dtype": "float32", "shape": [1, 4]})" +
         values + R"(},
             "nodes": )" +
         nodes + "}";
}

TEST(TensorLimits, GraphIrSizesBeyondTheCapsAreRefusedByName) {
  const std::string view_to = R"([{"op": "aten.view_copy", "inputs": ["x"],
                                   "args": {"size": SIZE}, "outputs": ["v"]}])";
  // A declared value: 2^35 elements (accepted before, under the old 2^40).
  EXPECT_EQ(
      graph_error(graph_with(R"(, "v": {"dtype": "int8", "shape": [32, 1073741824]})", "[]", "x")),
      "g.json: value 'v': field 'shape': [32,1073741824]: the product of the sizes (numel) "
      "is above the limit of 2^31 - 1 elements per tensor");
  // A view to [2^62 + 1, 4] of a 4-element tensor: "4" elements in int64 arithmetic, so the
  // graph was accepted (and a partitioned compile wrote a plan holding the size).
  std::string nodes = view_to;
  nodes.replace(nodes.find("SIZE"), 4, "[4611686018427387905, 4]");
  EXPECT_EQ(graph_error(graph_with("", nodes, "v")),
            "g.json: node 0 (aten.view_copy): argument 'size': [4611686018427387905, 4] has more "
            "elements than a tensor may (2147483647)");
  // An inferred shape is held to the caps too: a 1x1 input upsampled by 2^16 in each dim.
  EXPECT_EQ(graph_error(R"({"vkd_graph": 1, "inputs": ["x"], "outputs": ["u"],
      "values": {"x": {"dtype": "float32", "shape": [1, 1, 1, 1]}},
      "nodes": [{"op": "aten.upsample_nearest2d.vec", "inputs": ["x"],
                 "args": {"output_size": null, "scale_factors": [65536.0, 65536.0]},
                 "outputs": ["u"]}]})"),
            "g.json: node 0 (aten.upsample_nearest2d.vec): output 'u' [1, 1, 65536, 65536]: the "
            "product of the sizes (numel) is above the limit of 2^31 - 1 elements per tensor");
  // A scale whose product no int64 holds (converting it was undefined behaviour).
  EXPECT_EQ(graph_error(R"({"vkd_graph": 1, "inputs": ["x"], "outputs": ["u"],
      "values": {"x": {"dtype": "float32", "shape": [1, 1, 1, 1]}},
      "nodes": [{"op": "aten.upsample_nearest2d.vec", "inputs": ["x"],
                 "args": {"output_size": null, "scale_factors": [1e300, 1e300]},
                 "outputs": ["u"]}]})"),
            "g.json: node 0 (aten.upsample_nearest2d.vec): output 'u' [1, 1, 4611686018427387904, "
            "4611686018427387904]: the product of the sizes (numel) is above the limit of 2^31 - "
            "1 elements per tensor");
  // An upscale factor whose square no int64 holds.
  EXPECT_EQ(graph_error(R"({"vkd_graph": 1, "inputs": ["x"], "outputs": ["p"],
      "values": {"x": {"dtype": "float32", "shape": [1, 4, 1, 1]}},
      "nodes": [{"op": "aten.pixel_shuffle", "inputs": ["x"],
                 "args": {"upscale_factor": 4294967296}, "outputs": ["p"]}]})"),
            "g.json: node 0 (aten.pixel_shuffle): argument 'upscale_factor': 4294967296 is above "
            "the largest size of a tensor");
}

// A safetensors file: `header` and 16 zero bytes of data.
std::vector<uint8_t> safetensors_file(const std::string& header) {
  std::vector<uint8_t> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + 16, 0);
  return out;
}

std::string safetensors_error(const std::string& header) {
  return error_of([&] { compiler::SafetensorsFile::from_bytes(safetensors_file(header), "w.st"); });
}

TEST(TensorLimits, SafetensorsSizesBeyondTheCapsAreRefusedByName) {
  EXPECT_EQ(safetensors_error(R"({"t": {"dtype": "F32", "shape": [4611686018427387905, 4],
                                       "data_offsets": [0, 16]}})"),
            "w.st: tensor 't': field 'shape' [4611686018427387905, 4]: the product of the sizes "
            "(numel) is above the limit of 2^31 - 1 elements per tensor");
  EXPECT_EQ(safetensors_error(R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})"),
            "");
}

// `read` on a thread whose stack is 512 KiB (as an application's worker thread may have).
std::string on_small_stack(const std::function<std::string()>& read) {
  struct Job {
    const std::function<std::string()>* read;
    std::string result;
  } job{&read, {}};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 512 * 1024);
  pthread_t thread;
  const int rc = pthread_create(
      &thread, &attr,
      [](void* p) -> void* {
        auto* j = static_cast<Job*>(p);
        j->result = (*j->read)();
        return nullptr;
      },
      &job);
  pthread_attr_destroy(&attr);
  EXPECT_EQ(rc, 0);
  if (rc == 0) pthread_join(thread, nullptr);
  return job.result;
}

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Each reader gets the deep part where it used to print it in its message (dump() recursed once
// per level).
TEST(JsonDepth, EveryReaderRefusesDeepNestingOnASmallStack) {
  for (const int depth : {5000, 70000}) {
    SCOPED_TRACE(depth);
    const std::string plan = R"({"vkd_partition": 1, "inputs": )" + nested(depth) + "}";
    EXPECT_EQ(on_small_stack([&] {
                return error_of([&] { model::parse_partition_plan(plan, "m.partition.json"); });
              }),
              "m.partition.json: JSON nested deeper than 64 levels (arrays and objects)");
    const std::string graph = R"({"vkd_graph": 1, "values": {"x": {"dtype": "float32", "shape": )" +
                              nested(depth) + "}}}";
    EXPECT_EQ(on_small_stack([&] { return graph_error(graph); }),
              "g.json: JSON nested deeper than 64 levels (arrays and objects)");
    const std::string header =
        R"({"t": {"dtype": "F32", "data_offsets": [0, 16], "shape": )" + nested(depth) + "}}";
    EXPECT_EQ(on_small_stack([&] { return safetensors_error(header); }),
              "w.st (safetensors header): JSON nested deeper than 64 levels (arrays and objects)");
  }
}

TEST(JsonDepth, SixtyFourLevelsAreRead) {
  // 64 levels in all: the graph's object, "values", the value and 61 arrays in its shape (the
  // shape is then wrong, which is the message: the depth was accepted).
  const std::string graph =
      R"({"vkd_graph": 1, "values": {"x": {"dtype": "float32", "shape": [)" + nested(60) + "]}}}";
  EXPECT_NE(graph_error(graph).find("g.json: value 'x': field 'shape': element 0 must be a "
                                    "non-negative integer"),
            std::string::npos)
      << graph_error(graph);
  const std::string deeper =
      R"({"vkd_graph": 1, "values": {"x": {"dtype": "float32", "shape": [)" + nested(61) + "]}}}";
  EXPECT_EQ(graph_error(deeper), "g.json: JSON nested deeper than 64 levels (arrays and objects)");
}

}  // namespace
}  // namespace vkd
