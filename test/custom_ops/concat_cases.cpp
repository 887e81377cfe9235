// ACCU and PERF cases for q8ta_cat and q8ta_slice in every packed layout: cats along N, C, H and
// W (ranks 2 to 4) with channel counts and offsets that are no multiple of 4 (slices straddling
// int8x4 words), more inputs than one dispatch binds (several windows, 1-channel inputs sharing
// a word), inputs copied (the output's quantization) or requantized (other scales, exact ties,
// a narrower output range); slices with misaligned starts and steps > 1; cats whose inputs
// their producers write in place and slices that are views.
#include "runtime/ops/Concat.h"
#include "runtime/ops/LayoutConvert.h"
#include "test/custom_ops/Harness.h"
#include "test/reference/ConcatReference.h"
#include "test/reference/LayoutReference.h"

namespace vkd::custom_ops {
namespace {

using testing::RefQuantRange;
using testing::RefShape;

RefShape ref_shape(const std::vector<int64_t>& sizes) {
  const Dims4 d = TensorSpec{sizes, DType::Int8x4}.dims4();
  return {d.n, d.c, d.h, d.w};
}

ops::QuantParams to_params(const RefQuantRange& q) {
  return {q.scale, q.zero_point, q.quant_min, q.quant_max};
}

// Quantizations rotated over the inputs, and the output's. "copy": every input quantized like
// the output; "requant": each its own; "ties": y * inv_s_out a multiple of 1/4 or 1/2
// (round-half-to-even decides); "mixed": the first input copied, the others requantized;
// "range": the output's scale and zero point but a narrower range (clamped, so no copy).
struct QuantSet {
  const char* tag;
  std::vector<RefQuantRange> inputs;
  RefQuantRange output;
};
const QuantSet kCopy{"copy", {{0.05f, 3}}, {0.05f, 3}};
const QuantSet kRequant{
    "requant", {{0.05f, 3}, {0.031f, -7}, {0.2f, 127}, {0.013f, -128}}, {0.07f, 1}};
const QuantSet kTies{"ties", {{0.5f, 0}, {0.25f, 1}, {0.5f, -3}}, {1.0f, -3}};
const QuantSet kMixed{"mixed", {{0.1f, -5}, {0.3f, 20}, {0.02f, -100}}, {0.1f, -5}};
const QuantSet kRange{"range", {{0.1f, 2}}, {0.1f, 2, -100, 90}};

RefQuantRange input_quant(const QuantSet& q, size_t i) { return q.inputs[i % q.inputs.size()]; }

// Words crossing memory once per tensor: what a copy must move.
double tensor_bytes(MemoryLayout layout, const std::vector<int64_t>& sizes) {
  return 4.0 * static_cast<double>(testing::ref_word_count(layout, ref_shape(sizes)));
}

std::vector<int8_t> random_int8(size_t count, std::mt19937& rng) {
  std::uniform_int_distribution<int> value(-128, 127);
  std::vector<int8_t> v(count);
  for (auto& x : v) x = static_cast<int8_t>(value(rng));
  return v;
}

class CatCase : public CaseInstance {
 public:
  CatCase(std::vector<std::vector<int64_t>> inputs, int dim, MemoryLayout layout, QuantSet q)
      : sizes_(std::move(inputs)), dim_(dim), layout_(layout), q_(std::move(q)) {
    const size_t d = static_cast<size_t>(dim_);
    out_sizes_ = sizes_[0];
    out_sizes_[d] = 0;
    for (const auto& s : sizes_) out_sizes_[d] += s[d];
  }

  void build(graph::ComputeGraph& g) override {
    ops::CatParams p;
    p.dim = dim_;
    p.output = to_params(q_.output);
    for (size_t i = 0; i < sizes_.size(); ++i) {
      in_.push_back(g.add_tensor({sizes_[i], DType::Int8x4, StorageType::Buffer, layout_},
                                 "x" + std::to_string(i)));
      p.inputs.push_back(to_params(input_quant(q_, i)));
      g.add_input(in_.back());
    }
    out_ = g.add_tensor({out_sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "y");
    ops::add_q8ta_cat_node(g, in_, out_, p);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    x_.clear();
    for (size_t i = 0; i < in_.size(); ++i) {
      x_.push_back(random_int8(static_cast<size_t>(g.spec(in_[i]).numel()), rng));
      g.write_words(in_[i], testing::ref_pack(layout_, ref_shape(sizes_[i]), x_.back(),
                                              input_quant(q_, i).zero_point));
    }
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    std::vector<RefShape> shapes;
    std::vector<RefQuantRange> quants;
    for (size_t i = 0; i < sizes_.size(); ++i) {
      shapes.push_back(ref_shape(sizes_[i]));
      quants.push_back(input_quant(q_, i));
    }
    const int dim4 = dim_ + 4 - static_cast<int>(out_sizes_.size());
    const auto expected =
        testing::reference_cat(x_, shapes, quants, dim4, ref_shape(out_sizes_), q_.output);
    AccuResult r;
    compare_words(g.read_words(out_),
                  testing::ref_pack(layout_, ref_shape(out_sizes_), expected, q_.output.zero_point),
                  r);
    return r;
  }
  PerfWork work() const override {
    double bytes = tensor_bytes(layout_, out_sizes_);
    for (const auto& s : sizes_) bytes += tensor_bytes(layout_, s);
    return {bytes, 0.0};
  }
  const std::vector<std::vector<int64_t>>& input_sizes() const { return sizes_; }
  const std::vector<int64_t>& out_sizes() const { return out_sizes_; }
  int dim() const { return dim_; }

 private:
  std::vector<std::vector<int64_t>> sizes_;
  std::vector<int64_t> out_sizes_;
  int dim_;
  MemoryLayout layout_;
  QuantSet q_;
  std::vector<graph::ValueRef> in_;
  graph::ValueRef out_ = -1;
  std::vector<std::vector<int8_t>> x_;
};

// out = in[.., start : start + size * step : step, ..] along dim.
struct SliceSpec {
  std::vector<int64_t> in;
  int dim;
  int64_t start, size, step;
};

class SliceCase : public CaseInstance {
 public:
  SliceCase(SliceSpec s, MemoryLayout layout, QuantSet q)
      : s_(std::move(s)), layout_(layout), q_(std::move(q)) {
    out_sizes_ = s_.in;
    out_sizes_[static_cast<size_t>(s_.dim)] = s_.size;
  }

  void build(graph::ComputeGraph& g) override {
    in_ = g.add_tensor({s_.in, DType::Int8x4, StorageType::Buffer, layout_}, "x");
    out_ = g.add_tensor({out_sizes_, DType::Int8x4, StorageType::Buffer, layout_}, "y");
    ops::SliceParams p;
    p.dim = s_.dim;
    p.start = s_.start;
    p.step = s_.step;
    p.input = to_params(input_quant(q_, 0));
    p.output = to_params(q_.output);
    ops::add_q8ta_slice_node(g, in_, out_, p);
    g.add_input(in_);
    g.add_output(out_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    x_ = random_int8(static_cast<size_t>(g.spec(in_).numel()), rng);
    g.write_words(in_,
                  testing::ref_pack(layout_, ref_shape(s_.in), x_, input_quant(q_, 0).zero_point));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const int dim4 = s_.dim + 4 - static_cast<int>(s_.in.size());
    const auto expected =
        testing::reference_slice(x_, ref_shape(s_.in), input_quant(q_, 0), dim4, s_.start, s_.step,
                                 ref_shape(out_sizes_), q_.output);
    AccuResult r;
    compare_words(g.read_words(out_),
                  testing::ref_pack(layout_, ref_shape(out_sizes_), expected, q_.output.zero_point),
                  r);
    return r;
  }
  PerfWork work() const override {
    // The slice's input bytes cross memory once (a strided slice reads whole words anyway).
    const double out = tensor_bytes(layout_, out_sizes_);
    return {2.0 * out, 0.0};
  }

 private:
  SliceSpec s_;
  std::vector<int64_t> out_sizes_;
  MemoryLayout layout_;
  QuantSet q_;
  graph::ValueRef in_ = -1, out_ = -1;
  std::vector<int8_t> x_;
};

// Kernel producers writing a cat's inputs, or a kernel reading a slice, around a cat / slice
// whose parts are contiguous byte ranges (a batch, a row of 4W4C / 4C1W, a channel of 4H4W):
// q8ta_convert (same layout: a copy) writes each input, the cat has them written in place (the
// producers write into the output), or copies the slice's view of the input out. Quantized
// like the output; what the runtime did is the unit tests' business
// (test/unit/test_concat_errors.cpp), the values are checked here either way.
class InPlaceCase : public CaseInstance {
 public:
  InPlaceCase(std::vector<std::vector<int64_t>> inputs, int dim, MemoryLayout layout, bool slice)
      : cat_(std::move(inputs), dim, layout, kCopy),
        sizes_(cat_sizes()),
        layout_(layout),
        slice_(slice) {}

  void build(graph::ComputeGraph& g) override {
    const TensorSpec out{cat_.out_sizes(), DType::Int8x4, StorageType::Buffer, layout_};
    if (slice_) {  // x -> slice (the last input's part) -> t -> convert -> y
      x_.push_back(g.add_tensor(out, "x"));
      const TensorSpec part{sizes_.back(), DType::Int8x4, StorageType::Buffer, layout_};
      const graph::ValueRef t = g.add_tensor(part, "t");
      y_ = g.add_tensor(part, "y");
      ops::SliceParams p;
      p.dim = cat_.dim();
      p.start =
          cat_.out_sizes()[static_cast<size_t>(p.dim)] - sizes_.back()[static_cast<size_t>(p.dim)];
      p.input = p.output = to_params(kCopy.output);
      ops::add_q8ta_slice_node(g, x_[0], t, p);
      ops::add_q8ta_convert_node(g, t, y_, kCopy.output.zero_point);
    } else {  // x_i -> convert -> t_i; cat(t_i) -> y
      std::vector<graph::ValueRef> parts;
      ops::CatParams p;
      p.dim = cat_.dim();
      p.output = to_params(kCopy.output);
      for (size_t i = 0; i < sizes_.size(); ++i) {
        const TensorSpec s{sizes_[i], DType::Int8x4, StorageType::Buffer, layout_};
        x_.push_back(g.add_tensor(s, "x" + std::to_string(i)));
        parts.push_back(g.add_tensor(s, "t" + std::to_string(i)));
        ops::add_q8ta_convert_node(g, x_.back(), parts.back(), kCopy.output.zero_point);
        p.inputs.push_back(p.output);
      }
      y_ = g.add_tensor(out, "y");
      ops::add_q8ta_cat_node(g, parts, y_, p);
    }
    for (graph::ValueRef x : x_) g.add_input(x);
    g.add_output(y_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    values_.clear();
    for (graph::ValueRef x : x_) {
      values_.push_back(random_int8(static_cast<size_t>(g.spec(x).numel()), rng));
      g.write_words(x, testing::ref_pack(layout_, ref_shape(g.spec(x).sizes), values_.back(),
                                         kCopy.output.zero_point));
    }
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const int dim4 = cat_.dim() + 4 - static_cast<int>(sizes_[0].size());
    std::vector<int8_t> expected;
    if (slice_) {
      const auto& out = sizes_.back();
      const int64_t d = static_cast<int64_t>(cat_.dim());
      expected = testing::reference_slice(
          values_[0], ref_shape(cat_.out_sizes()), kCopy.output, dim4,
          cat_.out_sizes()[static_cast<size_t>(d)] - out[static_cast<size_t>(d)], 1, ref_shape(out),
          kCopy.output);
    } else {
      std::vector<RefShape> shapes;
      for (const auto& s : sizes_) shapes.push_back(ref_shape(s));
      expected = testing::reference_cat(values_, shapes,
                                        std::vector<RefQuantRange>(sizes_.size(), kCopy.output),
                                        dim4, ref_shape(cat_.out_sizes()), kCopy.output);
    }
    AccuResult r;
    compare_words(
        g.read_words(y_),
        testing::ref_pack(layout_, ref_shape(g.spec(y_).sizes), expected, kCopy.output.zero_point),
        r);
    return r;
  }
  PerfWork work() const override { return cat_.work(); }

 private:
  std::vector<std::vector<int64_t>> cat_sizes() const { return cat_.input_sizes(); }

  CatCase cat_;  // the shapes, the dim and the bytes
  std::vector<std::vector<int64_t>> sizes_;
  MemoryLayout layout_;
  bool slice_;
  std::vector<graph::ValueRef> x_;
  graph::ValueRef y_ = -1;
  std::vector<std::vector<int8_t>> values_;
};

std::string sizes_list(const std::vector<std::vector<int64_t>>& inputs) {
  std::string s;
  for (const auto& in : inputs) s += (s.empty() ? "" : "+") + shape_string(in);
  return s;
}

void add_cat(Registry& registry, const std::string& prefix,
             const std::vector<std::vector<int64_t>>& inputs, int dim, MemoryLayout layout,
             const QuantSet& q, bool accu) {
  const std::string shape = sizes_list(inputs), lname(to_string(layout));
  registry.add(
      {prefix + "q8ta_cat/" + lname + "/dim" + std::to_string(dim) + "/" + q.tag + "/" + shape,
       "q8ta_cat", shape, lname + " dim " + std::to_string(dim) + " " + q.tag, accu, !accu, false,
       Metric::GBps, [=] { return std::make_unique<CatCase>(inputs, dim, layout, q); }});
}

void add_slice(Registry& registry, const std::string& prefix, const SliceSpec& s,
               MemoryLayout layout, const QuantSet& q, bool accu) {
  const std::string shape = shape_string(s.in), lname(to_string(layout));
  const std::string range =
      std::to_string(s.start) + ":" + std::to_string(s.size) + ":" + std::to_string(s.step);
  registry.add({prefix + "q8ta_slice/" + lname + "/dim" + std::to_string(s.dim) + "/" + range +
                    "/" + q.tag + "/" + shape,
                "q8ta_slice", shape,
                lname + " dim " + std::to_string(s.dim) + " [" + range + "] " + q.tag, accu, !accu,
                false, Metric::GBps, [=] { return std::make_unique<SliceCase>(s, layout, q); }});
}

struct CatSpec {
  std::vector<std::vector<int64_t>> inputs;
  int dim;
  const QuantSet* q;
};

const std::vector<CatSpec>& accu_cats() {
  static const std::vector<CatSpec> cats = {
      // Channels: offset 3 (every word of the second input straddles), 4 odd inputs, aligned.
      {{{2, 3, 5, 6}, {2, 5, 5, 6}}, 1, &kMixed},
      {{{1, 3, 4, 5}, {1, 5, 4, 5}, {1, 2, 4, 5}, {1, 7, 4, 5}}, 1, &kRequant},
      {{{1, 8, 3, 9}, {1, 4, 3, 9}}, 1, &kCopy},
      {{{2, 6, 3, 5}, {2, 10, 3, 5}}, 1, &kTies},
      // 7 inputs: two windows; 1-channel inputs share words.
      {{{1, 1, 3, 5},
        {1, 1, 3, 5},
        {1, 1, 3, 5},
        {1, 2, 3, 5},
        {1, 1, 3, 5},
        {1, 3, 3, 5},
        {1, 1, 3, 5}},
       1,
       &kRequant},
      // Heights (offsets 3 and 8), widths, batches.
      {{{1, 6, 3, 7}, {1, 6, 5, 7}, {1, 6, 2, 7}}, 2, &kMixed},
      {{{2, 5, 3, 2}, {2, 5, 3, 9}}, 3, &kRequant},
      {{{1, 5, 3, 4}, {2, 5, 3, 4}}, 0, &kRange},
      // 9 one-row inputs along H: three windows.
      {{{1, 6, 1, 5},
        {1, 6, 1, 5},
        {1, 6, 1, 5},
        {1, 6, 1, 5},
        {1, 6, 1, 5},
        {1, 6, 1, 5},
        {1, 6, 1, 5},
        {1, 6, 1, 5},
        {1, 6, 1, 5}},
       2,
       &kCopy},
      // Lower ranks: [N, C] along C (W of the 4-D view), [C, H, W] along H.
      {{{5, 3}, {5, 6}}, 1, &kTies},
      {{{3, 6, 10}, {3, 2, 10}}, 1, &kCopy},
  };
  return cats;
}

const std::vector<SliceSpec>& accu_slices() {
  static const std::vector<SliceSpec> slices = {
      {{2, 17, 5, 6}, 1, 3, 7, 1},     // channels from 3: straddles words
      {{2, 17, 5, 6}, 1, 4, 8, 1},     // aligned
      {{2, 17, 5, 6}, 1, 1, 5, 3},     // step 3
      {{1, 116, 2, 3}, 1, 58, 58, 1},  // the second half of a chunk(2) of 116 channels
      {{1, 6, 11, 7}, 2, 2, 6, 1},     // heights
      {{1, 6, 11, 7}, 3, 5, 1, 4},     // one width
      {{3, 6, 4, 13}, 3, 1, 6, 2},     // widths, step 2
      {{3, 5, 2, 3}, 0, 1, 2, 1},      // batches
      {{5, 9}, 1, 2, 7, 1},            // rank 2
  };
  return slices;
}

void add_in_place(Registry& registry, const std::vector<std::vector<int64_t>>& inputs, int dim,
                  MemoryLayout layout, bool slice) {
  const std::string shape = sizes_list(inputs), lname(to_string(layout));
  const std::string what = slice ? "q8ta_slice" : "q8ta_cat";
  registry.add({what + "/" + lname + "/dim" + std::to_string(dim) + "/in_place/" + shape, what,
                shape, lname + " dim " + std::to_string(dim) + " in place", true, false, false,
                Metric::GBps,
                [=] { return std::make_unique<InPlaceCase>(inputs, dim, layout, slice); }});
}

}  // namespace

void register_concat_cases(Registry& registry) {
  const QuantSet* slice_quants[] = {&kCopy, &kRequant, &kTies, &kRange};
  for (MemoryLayout layout : kAllPackedInt8Layouts) {
    for (const CatSpec& c : accu_cats()) add_cat(registry, "", c.inputs, c.dim, layout, *c.q, true);
    size_t k = 0;
    for (const SliceSpec& s : accu_slices()) {
      add_slice(registry, "", s, layout, *slice_quants[k++ % std::size(slice_quants)], true);
    }
    // Parts that are contiguous byte ranges: batches; rows of 4W4C / 4C1W, channels of 4H4W.
    const bool channels = layout == MemoryLayout::PackedInt8_4H4W;
    const std::vector<std::vector<int64_t>> parts =
        channels ? std::vector<std::vector<int64_t>>{{1, 3, 6, 7}, {1, 5, 6, 7}, {1, 4, 6, 7}}
                 : std::vector<std::vector<int64_t>>{{1, 6, 3, 7}, {1, 6, 5, 7}, {1, 6, 4, 7}};
    for (bool slice : {false, true}) {
      add_in_place(registry, {{1, 5, 3, 4}, {2, 5, 3, 4}}, 0, layout, slice);
      add_in_place(registry, parts, channels ? 1 : 2, layout, slice);
    }
    // 1x64x256x256: channel cats aligned (copy, requantized) and straddling, a row cat, and
    // the second half of a channel split, aligned and straddling.
    add_cat(registry, "perf/", {{1, 32, 256, 256}, {1, 32, 256, 256}}, 1, layout, kCopy, false);
    add_cat(registry, "perf/", {{1, 32, 256, 256}, {1, 32, 256, 256}}, 1, layout, kRequant, false);
    add_cat(registry, "perf/", {{1, 30, 256, 256}, {1, 34, 256, 256}}, 1, layout, kCopy, false);
    add_cat(registry, "perf/", {{1, 64, 128, 256}, {1, 64, 128, 256}}, 2, layout, kCopy, false);
    add_slice(registry, "perf/", {{1, 64, 256, 256}, 1, 32, 32, 1}, layout, kCopy, false);
    add_slice(registry, "perf/", {{1, 64, 256, 256}, 1, 30, 32, 1}, layout, kCopy, false);
    // 4x larger: past the dispatch's fixed cost, towards the streaming rate.
    add_cat(registry, "perf/", {{1, 128, 256, 256}, {1, 128, 256, 256}}, 1, layout, kCopy, false);
    add_cat(registry, "perf/", {{1, 126, 256, 256}, {1, 130, 256, 256}}, 1, layout, kCopy, false);
  }
}

}  // namespace vkd::custom_ops
