// Op family: embedding (q8ta_embedding: int8 rows; embedding: float32 rows; embedding_add:
// float32 rows plus one or two float32 tensors).
// Anatomy: push-constant struct (mirroring the shader), the table packer, add_embedding_node, the
// registry entries.
#include "runtime/ops/Embedding.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "runtime/ops/FloatElementwise.h"
#include "runtime/ops/OpRegistry.h"
#include "runtime/vk/KernelLimits.h"
#include "runtime/vk/WorkgroupChooser.h"

namespace vkd::ops {
namespace {

// Mirrors `Params` in shaders/q8ta_embedding.glsl.
struct EmbeddingPush {
  int32_t word_count, row_words, tokens, rows, pad_word, stride;
  int32_t first_words, second_words;  // embedding_add: the addends' element counts
};

// Output words each invocation copies (the shader loops with a stride): 4 with CPU-shaped kernels;
// one on GPUs, where each word is a chain of two dependent loads (the id, then its row) that a
// loop runs one after another (docs/BENCHMARKS.md, "transformers whole").
constexpr int64_t kWordsPerInvocationCpu = 4;

// The int8 table as the kernel reads it: row v = ceil(C / 4) little-endian words, lane j of
// word w = element 4w + j, lanes past C the output's zero point.
std::vector<uint8_t> pack_int8_rows(const int8_t* table, int64_t rows, int64_t cols, int8_t zp) {
  const int64_t row_bytes = 4 * div_up(cols, 4);
  std::vector<uint8_t> out(static_cast<size_t>(rows * row_bytes), static_cast<uint8_t>(zp));
  for (int64_t v = 0; v < rows; ++v) {
    std::memcpy(out.data() + v * row_bytes, table + v * cols, static_cast<size_t>(cols));
  }
  return out;
}

// The output's checks against the ids: sizes = ids' sizes + [C], the dtype and layout the
// variant writes.
void check_output(const std::string& op, const TensorSpec& ids, const TensorSpec& out,
                  const EmbeddingParams& params) {
  std::vector<int64_t> want = ids.sizes;
  want.push_back(params.cols);
  VKD_CHECK(out.sizes == want, ErrorCode::InvalidArgument, op, ": output ", out.describe(),
            " must be the ids' sizes + [", params.cols, "] (ids ", ids.describe(), ")");
  if (params.output) {
    check_quant_params(op, *params.output);
    VKD_CHECK(out.dtype == DType::Int8x4 && out.storage == StorageType::Buffer &&
                  out.layout == MemoryLayout::PackedInt8_4H4W,
              ErrorCode::InvalidArgument, op, ": output ", out.describe(),
              " must be an int8x4 4H4W buffer");
  } else {
    VKD_CHECK(out.dtype == DType::Float32 && out.storage == StorageType::Buffer &&
                  out.layout == MemoryLayout::WidthPacked,
              ErrorCode::InvalidArgument, op, ": output ", out.describe(),
              " must be a width-packed float32 buffer");
  }
}

// The addends' checks: float rows only, at most two, each a width-packed float32 buffer whose
// sizes without leading 1s end the output's (what the kernel's i % count reads).
void check_addends(const graph::ComputeGraph& graph, const std::string& op, const TensorSpec& out,
                   const EmbeddingParams& params) {
  VKD_CHECK(params.addends.empty() || !params.output, ErrorCode::InvalidArgument, op,
            ": the int8 rows take no addends");
  VKD_CHECK(params.addends.size() <= kMaxEmbeddingAddends, ErrorCode::InvalidArgument, op, ": ",
            params.addends.size(), " addends, the kernel adds at most ", kMaxEmbeddingAddends);
  for (const graph::ValueRef a : params.addends) {
    const TensorSpec& s = graph.spec(a);
    std::vector<int64_t> dims = s.sizes;
    while (!dims.empty() && dims.front() == 1) dims.erase(dims.begin());
    const bool trailing =
        dims.size() <= out.sizes.size() &&
        std::equal(dims.begin(), dims.end(), out.sizes.end() - static_cast<int64_t>(dims.size()));
    VKD_CHECK(s.dtype == DType::Float32 && s.storage == StorageType::Buffer &&
                  s.layout == MemoryLayout::WidthPacked && trailing && s.numel() >= 1,
              ErrorCode::InvalidArgument, op, ": addend ", s.describe(),
              " must be a width-packed float32 buffer of the output's trailing dims (output ",
              out.describe(), ")");
  }
}

}  // namespace

void add_embedding_node(graph::ComputeGraph& graph, graph::ValueRef indices, graph::ValueRef output,
                        const EmbeddingParams& params) {
  const bool int8 = params.output.has_value();
  const size_t addends = params.addends.size();
  const std::string op = int8 ? "q8ta_embedding" : addends > 0 ? "embedding_add" : "embedding";
  const TensorSpec& ids = graph.spec(indices);
  const TensorSpec& out = graph.spec(output);
  VKD_CHECK(ids.dtype == DType::Int32 && ids.storage == StorageType::Buffer &&
                ids.layout == MemoryLayout::WidthPacked && ids.sizes.size() <= 3,
            ErrorCode::InvalidArgument, op, ": indices ", ids.describe(),
            " must be a width-packed int32 buffer of rank 1 to 3");
  VKD_CHECK(params.rows >= 1 && params.cols >= 1 && params.table != nullptr,
            ErrorCode::InvalidArgument, op, ": the table [", params.rows, ", ", params.cols,
            "] must have rows and columns");
  check_output(op, ids, out, params);
  check_addends(graph, op, out, params);
  // Variants: int8 rows, float rows, float rows + 1 addend, + 2 addends.
  const shaders::Kernel kernel = shaders::variants::q8ta_embedding[int8 ? 0 : 1 + addends];
  // The way down where the kernel's storage buffers (3 + addends) exceed a stage's (the Android
  // baseline's 4): the rows into a tensor of their own, then float_add of each addend in order,
  // the unfused ops the kernel's adds are bit for bit.
  if (addends > 0 && !vk::fits_storage_buffers(graph.profile(), kernel)) {
    note_way_down(graph, op, output, "the rows into a tensor of their own, then float_add",
                  vk::storage_buffers_problem(graph.profile(), kernel));
    graph::ValueRef sum = graph.add_tensor(out, own_tensor_name(graph, output, op, ".rows"));
    EmbeddingParams rows = params;
    rows.addends.clear();
    add_embedding_node(graph, indices, sum, rows);
    for (size_t i = 0; i < addends; ++i) {
      const graph::ValueRef next =
          i + 1 == addends ? output
                           : graph.add_tensor(out, own_tensor_name(graph, output, op,
                                                                   ".sum" + std::to_string(i)));
      add_float_binary_node(graph, FloatBinaryOp::Add, sum, params.addends[i], next);
      sum = next;
    }
    return;
  }
  const int64_t row_words = int8 ? div_up(params.cols, 4) : params.cols;
  const int64_t tokens = ids.sizes.back();
  const int64_t planes = ids.numel() / tokens;
  const int64_t words = int8 ? planes * 4 * div_up(tokens, 4) * row_words : ids.numel() * row_words;
  VKD_CHECK(words < (int64_t(1) << 31) && params.rows * row_words < (int64_t(1) << 31),
            ErrorCode::Unsupported, op, ": the output's or the table's words exceed the 2^31 a ",
            "kernel can index");
  const TensorSpec table_spec{
      {params.rows, row_words}, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked};
  const int8_t zp = int8 ? static_cast<int8_t>(params.output->zero_point) : 0;
  const graph::ConstantPacker packer =
      int8 ? graph::ConstantPacker([t = static_cast<const int8_t*>(params.table), r = params.rows,
                                    c = params.cols, zp] { return pack_int8_rows(t, r, c, zp); })
           : graph::ConstantPacker(
                 [t = static_cast<const uint8_t*>(params.table), n = params.rows * params.cols] {
                   return std::vector<uint8_t>(t, t + 4 * n);
                 });
  const auto table =
      graph.add_constant(table_spec, graph.tensor(output).name() + ".table", packer,
                         static_cast<uint64_t>(params.rows * params.cols * (int8 ? 1 : 4)));
  const int64_t stride = div_up(words, graph.profile().cpu_kernels ? kWordsPerInvocationCpu : 1);
  const uint32_t pad_lane = static_cast<uint8_t>(zp);
  const EmbeddingPush push{int32_t(words),
                           int32_t(row_words),
                           int32_t(tokens),
                           int32_t(params.rows),
                           static_cast<int32_t>(pad_lane * 0x01010101u),
                           int32_t(stride),
                           addends > 0 ? int32_t(graph.spec(params.addends[0]).numel()) : 1,
                           addends > 1 ? int32_t(graph.spec(params.addends[1]).numel()) : 1};
  graph::DispatchNode node;
  node.op = op;
  node.kernel = kernel;
  node.bindings = {output, indices, table};
  node.bindings.insert(node.bindings.end(), params.addends.begin(), params.addends.end());
  node.push_constants = graph::push_constant_bytes(push);
  node.plan = vk::plan_linear(graph.profile(), static_cast<uint64_t>(stride));
  graph.add_node(std::move(node));
}

// --- registry entries -------------------------------------------------------------

namespace {

// The loader checked the table against the schema (a rank-2 constant of the variant's dtype)
// and keeps the blob until prepare(). The ids the graph is given are checked against the
// table's rows on the host (ComputeGraph::limit_ids): a bad id is an error naming it.
EmbeddingParams blob_table(const OpCall& call) {
  const auto& w = call.constant("weight");
  EmbeddingParams p;
  p.rows = w.spec.sizes[0];
  p.cols = w.spec.sizes[1];
  p.table = w.constant->data;
  call.graph().limit_ids(call.tensor("indices"), p.rows);
  return p;
}

void build_q8ta_embedding(const OpCall& call) {
  EmbeddingParams p = blob_table(call);
  p.output = call.quant("output");
  call.set_zero_point("output", p.output->zero_point);
  add_embedding_node(call.graph(), call.tensor("indices"), call.tensor("output"), p);
}

void build_embedding(const OpCall& call) {
  add_embedding_node(call.graph(), call.tensor("indices"), call.tensor("output"), blob_table(call));
}

// The float rows plus the blob's one or two addends (constants, made graph tensors as stored).
void build_embedding_add(const OpCall& call) {
  EmbeddingParams p = blob_table(call);
  p.addends = call.tensor_list("addends");
  add_embedding_node(call.graph(), call.tensor("indices"), call.tensor("output"), p);
}

}  // namespace

void register_embedding_ops(OpRegistry& registry) {
  registry.add("q8ta_embedding", build_q8ta_embedding);
  registry.add("embedding", build_embedding);
  registry.add("embedding_add", build_embedding_add);
}

}  // namespace vkd::ops
