// ACCU and PERF cases for q8ta_embedding (int8 rows into 4H4W) and embedding (float32 rows):
// small and BERT-sized vocabularies (V = 30522), rows of 384 and an awkward 10 (partial words),
// 1, 7 and 16 tokens (partial 4-row blocks), one and two batches; ids that hit the first and
// last rows and repeat, and ids outside the table (the kernel clamps them). The int8 table is
// the test's own quantization of a float table (test/reference/QuantReference.h); the output,
// padding included, is compared word for word with the reference's rows packed on the CPU
// (test/reference/EmbeddingReference.h, LayoutReference.h).
#include "runtime/ops/Embedding.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/reference/EmbeddingReference.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/QuantReference.h"

namespace vkd::custom_ops {
namespace {

constexpr float kScale = 0.0061f;
constexpr int32_t kZeroPoint = -45;

class EmbeddingCase : public CaseInstance {
 public:
  // `ids` [batches, tokens] into a [rows, cols] table; int8 rows (q8ta_embedding) or float32.
  EmbeddingCase(int64_t rows, int64_t cols, int64_t batches, int64_t tokens, bool int8,
                bool outside)
      : rows_(rows),
        cols_(cols),
        batches_(batches),
        tokens_(tokens),
        int8_(int8),
        outside_(outside) {}

  void build(graph::ComputeGraph& g) override {
    std::mt19937 rng(static_cast<uint32_t>(rows_ * 31 + cols_));
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    table_.resize(static_cast<size_t>(rows_ * cols_));
    for (float& x : table_) x = value(rng);
    table_q_ = testing::reference_quantize(table_, kScale, kZeroPoint, -128, 127);
    const std::vector<int64_t> ids_sizes = {batches_, tokens_};
    ids_ = g.add_tensor({ids_sizes, DType::Int32, StorageType::Buffer, MemoryLayout::WidthPacked},
                        "ids");
    const std::vector<int64_t> out_sizes = {batches_, tokens_, cols_};
    out_ =
        int8_
            ? g.add_tensor(
                  {out_sizes, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4H4W},
                  "y")
            : g.add_tensor(
                  {out_sizes, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}, "y");
    ops::EmbeddingParams p;
    p.rows = rows_;
    p.cols = cols_;
    p.table = int8_ ? static_cast<const void*>(table_q_.data()) : table_.data();
    if (int8_) p.output = ops::QuantParams{kScale, kZeroPoint, -128, 127};
    ops::add_embedding_node(g, ids_, out_, p);
    g.add_input(ids_);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(rows_ - 1));
    x_.resize(static_cast<size_t>(batches_ * tokens_));
    for (auto& v : x_) v = id(rng);
    x_[0] = 0;  // the first row, the last, a repeat
    if (x_.size() > 1) x_[1] = static_cast<int32_t>(rows_ - 1);
    if (x_.size() > 2) x_[2] = x_[1];
    if (outside_) {  // clamped to the first and last rows
      x_.front() = -7;
      x_.back() = static_cast<int32_t>(rows_ + 3);
    }
    g.write_int32(ids_, x_);
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    AccuResult r;
    if (int8_) {
      const auto rows = testing::ref_embedding(table_q_, rows_, cols_, x_);
      compare_words(
          g.read_words(out_),
          testing::ref_pack(MemoryLayout::PackedInt8_4H4W,
                            testing::ref_shape_of({batches_, tokens_, cols_}), rows, kZeroPoint),
          r);
    } else {
      compare_floats(g.read_float(out_), testing::ref_embedding(table_, rows_, cols_, x_), 0.0, r);
    }
    return r;
  }
  PerfWork work() const override {
    // The ids read, each row read once and written once (int8: 4H4W words incl. padding).
    const double row_bytes = int8_ ? 4.0 * static_cast<double>((cols_ + 3) / 4) : 4.0 * cols_;
    const double out_bytes =
        int8_ ? 4.0 * testing::ref_word_count(MemoryLayout::PackedInt8_4H4W,
                                              testing::ref_shape_of({batches_, tokens_, cols_}))
              : row_bytes * static_cast<double>(batches_ * tokens_);
    return {4.0 * static_cast<double>(batches_ * tokens_) +
                row_bytes * static_cast<double>(batches_ * tokens_) + out_bytes,
            0.0};
  }

 private:
  int64_t rows_, cols_, batches_, tokens_;
  bool int8_, outside_;
  graph::ValueRef ids_ = -1, out_ = -1;
  std::vector<float> table_;
  std::vector<int8_t> table_q_;
  std::vector<int32_t> x_;
};

void add_case(Registry& registry, const std::string& prefix, int64_t rows, int64_t cols,
              int64_t batches, int64_t tokens, bool int8, bool outside, bool accu) {
  const std::string op = int8 ? "q8ta_embedding" : "embedding";
  const std::string shape = std::to_string(rows) + "x" + std::to_string(cols) + "/" +
                            std::to_string(batches) + "x" + std::to_string(tokens);
  const std::string layout = int8 ? "buffer/width_packed -> 4H4W" : "buffer/width_packed";
  registry.add({prefix + op + "/" + shape + (outside ? "/ids_outside" : ""), op, shape, layout,
                accu, !accu, false, Metric::GBps, [=] {
                  return std::make_unique<EmbeddingCase>(rows, cols, batches, tokens, int8,
                                                         outside);
                }});
}

}  // namespace

void register_embedding_cases(Registry& registry) {
  for (bool int8 : {true, false}) {
    for (int64_t rows : {5, 30522}) {
      for (int64_t cols : {384, 10}) {
        for (int64_t tokens : {1, 7, 16})
          add_case(registry, "", rows, cols, 1, tokens, int8, false, true);
      }
    }
    add_case(registry, "", 100, 10, 2, 7, int8, true, true);
    // MiniLM's word embeddings at sequence lengths 128 and 512.
    add_case(registry, "perf/", 30522, 384, 1, 128, int8, false, false);
    add_case(registry, "perf/", 30522, 384, 1, 512, int8, false, false);
  }
}

}  // namespace vkd::custom_ops
