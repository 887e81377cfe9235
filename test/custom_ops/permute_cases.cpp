// ACCU and PERF cases for the int8 data-movement ops: q8ta_channel_shuffle (groups 2, 3, 4, odd
// channel counts, every layout; 4C1W with widths that are and are not multiples of 4) and
// q8ta_permute (all 24 orders, every layout pair, batch > 1 for the orders that move it), each
// moving bytes and requantizing.
#include <algorithm>
#include <array>
#include <numeric>

#include "runtime/ops/Permute.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/QuantCaseUtils.h"
#include "test/reference/LayoutReference.h"
#include "test/reference/PermuteReference.h"

namespace vkd::custom_ops {
namespace {

using testing::RefShape;

// Input and output quantization of one case.
struct MoveQuant {
  const char* name;
  ops::QuantParams in, out;
};

const MoveQuant kQuants[] = {
    {"same", {0.05f, 3}, {0.05f, 3}},  // bytes moved
    {"same_zp-128", {0.02f, -128}, {0.02f, -128}},
    {"requant", {0.05f, -7}, {0.031f, 11}},  // both clamp ends are reached
    {"requant_zp127_-128", {0.04f, 127}, {0.0173f, -128}},
};

// One op: a channel shuffle (groups > 0) or a permute (dims).
struct Move {
  int64_t groups = 0;
  std::array<int, 4> dims{0, 1, 2, 3};
  std::string name() const {
    if (groups > 0) return "g" + std::to_string(groups);
    std::string s = "p";
    for (int d : dims) s += std::to_string(d);
    return s;
  }
};

std::vector<int64_t> sizes_of(const RefShape& s) { return {s.n, s.c, s.h, s.w}; }

class MoveCase : public CaseInstance {
 public:
  MoveCase(RefShape s, Move m, MemoryLayout in, MemoryLayout out, MoveQuant q)
      : s_(s),
        m_(m),
        in_(in),
        out_(out),
        q_(q),
        out_shape_(m.groups > 0 ? s : testing::reference_permuted_shape(s, m.dims)) {}

  void build(graph::ComputeGraph& g) override {
    in_ref_ = g.add_tensor({sizes_of(s_), DType::Int8x4, StorageType::Buffer, in_}, "x");
    out_ref_ = g.add_tensor({sizes_of(out_shape_), DType::Int8x4, StorageType::Buffer, out_}, "y");
    if (m_.groups > 0) {
      ops::add_q8ta_channel_shuffle_node(g, in_ref_, q_.in, m_.groups, out_ref_, q_.out);
    } else {
      const std::vector<int64_t> dims(m_.dims.begin(), m_.dims.end());
      ops::add_q8ta_permute_node(g, in_ref_, q_.in, dims, out_ref_, q_.out);
    }
    g.add_input(in_ref_);
    g.add_output(out_ref_);
  }
  void write_inputs(graph::ComputeGraph& g, std::mt19937& rng) override {
    x_ = random_int8(g.spec(in_ref_).numel(), -128, 127, rng);
    // Padding lanes = the input zero point (the test's own packing).
    g.write_words(in_ref_, testing::ref_pack(in_, s_, x_, q_.in.zero_point));
  }
  AccuResult check(const graph::ComputeGraph& g) override {
    const std::vector<int8_t> moved = m_.groups > 0
                                          ? testing::reference_channel_shuffle(x_, s_, m_.groups)
                                          : testing::reference_permute(x_, s_, m_.dims);
    const std::vector<int8_t> y = testing::reference_requantize(
        moved, q_.in.scale, q_.in.zero_point, q_.out.scale, q_.out.zero_point);
    AccuResult r;
    compare_words(g.read_words(out_ref_), testing::ref_pack(out_, out_shape_, y, q_.out.zero_point),
                  r);
    return r;
  }
  // Every input and output word once.
  PerfWork work() const override {
    return {
        4.0 * double(testing::ref_word_count(in_, s_) + testing::ref_word_count(out_, out_shape_)),
        0.0};
  }

 private:
  RefShape s_;
  Move m_;
  MemoryLayout in_, out_;
  MoveQuant q_;
  RefShape out_shape_;
  graph::ValueRef in_ref_ = -1, out_ref_ = -1;
  std::vector<int8_t> x_;
};

std::string lname(MemoryLayout l) { return std::string(to_string(l)); }

void add_case(Registry& registry, const std::string& prefix, const RefShape& s, const Move& m,
              MemoryLayout in, MemoryLayout out, const MoveQuant& q, bool accu) {
  const char* op = m.groups > 0 ? "q8ta_channel_shuffle" : "q8ta_permute";
  const std::string shape = shape_string(sizes_of(s));
  const std::string layouts = m.groups > 0 ? lname(in) : lname(in) + "->" + lname(out);
  registry.add({prefix + op + "/" + layouts + "/" + m.name() + "/" + q.name + "/" + shape, op,
                shape, layouts + " " + m.name() + " " + q.name, accu, !accu, false, Metric::GBps,
                [=] { return std::make_unique<MoveCase>(s, m, in, out, q); }});
}

void register_channel_shuffle_cases(Registry& registry) {
  // (shape, groups): C / groups odd, C odd, widths past a 4-block (4W4C padding words, 4C1W
  // rows ending inside a chunk) and multiples of 4 (4C1W's 16-byte path), batch 2, C = 116
  // (ShuffleNet's first stage), groups = C.
  const std::pair<RefShape, int64_t> shapes[] = {
      {{1, 6, 5, 7}, 2},   {{1, 6, 4, 8}, 3}, {{2, 12, 3, 9}, 2}, {{2, 12, 3, 9}, 3},
      {{2, 12, 4, 4}, 4},  {{1, 9, 6, 5}, 3}, {{1, 15, 2, 8}, 3}, {{1, 20, 3, 3}, 4},
      {{1, 116, 3, 5}, 2}, {{1, 4, 1, 1}, 4}, {{1, 2, 7, 1}, 2},
  };
  size_t index = 0;
  for (const auto& [s, groups] : shapes) {
    for (MemoryLayout l : kAllPackedInt8Layouts) {
      const MoveQuant& q = kQuants[index++ % std::size(kQuants)];
      add_case(registry, "", s, Move{groups, {}}, l, l, q, true);
    }
  }
  // Every parameter set on one shape and layout each.
  for (MemoryLayout l : kAllPackedInt8Layouts) {
    for (const auto& q : kQuants) add_case(registry, "", {1, 10, 3, 6}, Move{2, {}}, l, l, q, true);
  }
}

void register_permute_accu_cases(Registry& registry) {
  // Every order of the 4 dims on a batch-2 shape with partial 4-blocks everywhere, layout pairs
  // and parameter sets rotating.
  std::array<int, 4> dims{0, 1, 2, 3};
  size_t index = 0;
  do {
    for (const RefShape& s : {RefShape{2, 5, 3, 7}, RefShape{1, 6, 9, 4}}) {
      const MemoryLayout in = kAllPackedInt8Layouts[index % 3];
      const MemoryLayout out = kAllPackedInt8Layouts[(index / 3) % 3];
      add_case(registry, "", s, Move{0, dims}, in, out, kQuants[index % std::size(kQuants)], true);
      ++index;
    }
  } while (std::next_permutation(dims.begin(), dims.end()));
  // The orders models use (NCHW <-> NHWC, H <-> W, C <-> H, a batch swap) in every layout pair.
  const std::array<int, 4> common[] = {
      {0, 2, 3, 1}, {0, 3, 1, 2}, {0, 1, 3, 2}, {0, 2, 1, 3}, {1, 0, 2, 3}};
  for (const auto& d : common) {
    for (MemoryLayout in : kAllPackedInt8Layouts) {
      for (MemoryLayout out : kAllPackedInt8Layouts) {
        add_case(registry, "", {2, 7, 5, 9}, Move{0, d}, in, out,
                 kQuants[index++ % std::size(kQuants)], true);
      }
    }
  }
}

void register_move_perf_cases(Registry& registry) {
  // ShuffleNet v2's channel shuffle at a 1x64x256x256-class size, at 16 times that (64 MiB, past
  // the caches of big GPUs, where the share of the copy peak means bandwidth rather than launch
  // cost) and at its first stage (224 x 224 input); both paths, every layout.
  const RefShape big{1, 64, 256, 256}, huge{1, 64, 1024, 1024};
  for (MemoryLayout l : kAllPackedInt8Layouts) {
    for (const RefShape& s : {big, huge, RefShape{1, 116, 28, 28}}) {
      add_case(registry, "perf/", s, Move{2, {}}, l, l, kQuants[0], false);
    }
    add_case(registry, "perf/", big, Move{2, {}}, l, l, kQuants[2], false);
  }
  // NCHW -> NHWC (4W4C -> 4H4W is then a copy of the same bytes), H <-> W, and the batch swap
  // (the element-gather path).
  const std::array<int, 4> nhwc{0, 2, 3, 1}, hw{0, 1, 3, 2}, nchw{0, 3, 1, 2};
  for (MemoryLayout in : kAllPackedInt8Layouts) {
    for (const RefShape& s : {big, huge}) {
      add_case(registry, "perf/", s, Move{0, nhwc}, in, in, kQuants[0], false);
      add_case(registry, "perf/", s, Move{0, hw}, in, in, kQuants[0], false);
    }
  }
  add_case(registry, "perf/", huge, Move{0, nhwc}, MemoryLayout::PackedInt8_4W4C,
           MemoryLayout::PackedInt8_4H4W, kQuants[0], false);
  add_case(registry, "perf/", big, Move{0, nhwc}, MemoryLayout::PackedInt8_4W4C,
           MemoryLayout::PackedInt8_4H4W, kQuants[0], false);
  add_case(registry, "perf/", big, Move{0, nhwc}, MemoryLayout::PackedInt8_4W4C,
           MemoryLayout::PackedInt8_4H4W, kQuants[2], false);
  add_case(registry, "perf/", big, Move{0, nchw}, MemoryLayout::PackedInt8_4H4W,
           MemoryLayout::PackedInt8_4W4C, kQuants[0], false);
  add_case(registry, "perf/", {4, 64, 128, 128}, Move{0, {1, 0, 2, 3}},
           MemoryLayout::PackedInt8_4W4C, MemoryLayout::PackedInt8_4W4C, kQuants[0], false);
}

}  // namespace

void register_permute_cases(Registry& registry) {
  register_channel_shuffle_cases(registry);
  register_permute_accu_cases(registry);
  register_move_perf_cases(registry);
}

}  // namespace vkd::custom_ops
