// ACCU and PERF cases for q8ta_embedding (int8 rows into 4H4W), embedding (float32 rows) and
// embedding_add (float32 rows + one or two float32 tensors, BERT's position and token type rows):
// small and BERT-sized vocabularies (V = 30522), rows of 384 and an awkward 10 (partial words),
// 1, 7 and 16 tokens (partial 4-row blocks), one and two batches; ids that hit the first and
// last rows and repeat, and ids outside the table (the kernel clamps them). The int8 table is
// the test's own quantization of a float table (test/reference/QuantReference.h); the output,
// padding included, is compared word for word with the reference's rows packed on the CPU
// (test/reference/EmbeddingReference.h, LayoutReference.h). embedding_add: the gathered rows,
// then + the first addend, then + the second, each rounded to float32 here, compared bit for bit;
// the addends span 2^-12 to 2^12 so that adding them in another order (or folding them first)
// gives other bits, which the case checks its data shows.
#include <cmath>
#include <cstdio>
#include <cstring>

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
  // `ids` [batches, tokens] into a [rows, cols] table; int8 rows (q8ta_embedding) or float32,
  // plus `addends` (0 to 2; float rows only) float32 tensors of sizes `addend_sizes`.
  EmbeddingCase(int64_t rows, int64_t cols, int64_t batches, int64_t tokens, bool int8,
                bool outside, std::vector<std::vector<int64_t>> addend_sizes = {})
      : rows_(rows),
        cols_(cols),
        batches_(batches),
        tokens_(tokens),
        int8_(int8),
        outside_(outside),
        addend_sizes_(std::move(addend_sizes)) {}

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
    for (size_t k = 0; k < addend_sizes_.size(); ++k) {
      addends_.push_back(g.add_tensor(
          {addend_sizes_[k], DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked},
          "a" + std::to_string(k)));
      g.add_input(addends_.back());
    }
    p.addends = addends_;
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
    // Magnitudes 2^-12 .. 2^12: the sums round differently in another order.
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::uniform_int_distribution<int> exponent(-12, 12);
    addend_values_.clear();
    for (size_t k = 0; k < addends_.size(); ++k) {
      std::vector<float> a(static_cast<size_t>(numel(addend_sizes_[k])));
      for (float& v : a) v = std::ldexp(unit(rng), exponent(rng));
      g.write_float(addends_[k], a);
      addend_values_.push_back(std::move(a));
    }
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
    } else if (addends_.empty()) {
      compare_floats(g.read_float(out_), testing::ref_embedding(table_, rows_, cols_, x_), 0.0, r);
    } else {
      compare_words(g.read_words(out_), ordered_sum_words(r), r);
    }
    return r;
  }
  // The gathered rows + addend 0, then + addend 1, each sum rounded to float32; an addend of
  // the output's trailing dims is read at i % its count (broadcast along the leading dims). The
  // case must tell this order from (rows + addend 1) + addend 0 and rows + (addend 0 + addend 1).
  std::vector<int32_t> ordered_sum_words(AccuResult& r) const {
    const std::vector<float> rows = testing::ref_embedding(table_, rows_, cols_, x_);
    std::vector<float> sum = rows;
    for (const std::vector<float>& a : addend_values_) {
      for (size_t i = 0; i < sum.size(); ++i) sum[i] = sum[i] + a[i % a.size()];
    }
    if (addend_values_.size() == 2) {
      const std::vector<float>&a0 = addend_values_[0], &a1 = addend_values_[1];
      size_t reordered = 0, folded = 0;
      for (size_t i = 0; i < sum.size(); ++i) {
        const float b = a0[i % a0.size()], c = a1[i % a1.size()];
        reordered += (rows[i] + c) + b != sum[i];
        folded += rows[i] + (b + c) != sum[i];
      }
      if (reordered == 0 || folded == 0) {  // a case that could not fail: counted as failing
        std::fprintf(stderr, "embedding_add: the data cannot tell the order of the adds\n");
        ++r.mismatches;
      }
    }
    std::vector<int32_t> words(sum.size());
    std::memcpy(words.data(), sum.data(), 4 * sum.size());
    return words;
  }

  static int64_t numel(const std::vector<int64_t>& sizes) {
    int64_t n = 1;
    for (int64_t d : sizes) n *= d;
    return n;
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
  std::vector<std::vector<int64_t>> addend_sizes_;
  std::vector<graph::ValueRef> addends_;
  std::vector<std::vector<float>> addend_values_;
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

// embedding_add: float rows + addends of `addend_sizes`, in order.
void add_addends_case(Registry& registry, int64_t rows, int64_t cols, int64_t batches,
                      int64_t tokens, std::vector<std::vector<int64_t>> addend_sizes) {
  std::string shape = std::to_string(rows) + "x" + std::to_string(cols) + "/" +
                      std::to_string(batches) + "x" + std::to_string(tokens);
  for (const auto& sizes : addend_sizes) {
    shape += "/+";
    for (size_t d = 0; d < sizes.size(); ++d) shape += (d ? "x" : "") + std::to_string(sizes[d]);
  }
  registry.add({"embedding_add/" + shape, "embedding_add", shape, "buffer/width_packed", true,
                false, false, Metric::GBps, [=] {
                  return std::make_unique<EmbeddingCase>(rows, cols, batches, tokens, false, false,
                                                         addend_sizes);
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
  // BERT's word rows + position rows + token type rows ([1, T, C] each); a batch of 2 reading
  // [1, T, C] and [C] addends (broadcast along the leading dims); one addend; partial words.
  add_addends_case(registry, 30522, 384, 1, 16, {{1, 16, 384}, {1, 16, 384}});
  add_addends_case(registry, 100, 10, 2, 7, {{1, 7, 10}, {10}});
  add_addends_case(registry, 5, 10, 2, 7, {{2, 7, 10}, {1, 1, 10}});
  add_addends_case(registry, 5, 384, 1, 7, {{7, 384}});
}

}  // namespace vkd::custom_ops
