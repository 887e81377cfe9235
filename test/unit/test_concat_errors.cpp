// q8ta_cat's and q8ta_slice's argument checks: bad dtypes, layouts, ranks, sizes that do not
// line up along the dim, out-of-range dims, slices reaching past the input and bad quantization
// are InvalidArgument errors naming the op and the problem, raised while the graph is built; a
// cat of more inputs than one dispatch binds becomes several dispatches; parts that are
// contiguous byte ranges (contiguous_slice_offset, checked against the layout formulas) are
// shared instead of copied. The data movement is checked by the ACCU cases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/PackedInt8Layout.h"
#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Concat.h"
#include "runtime/ops/LayoutConvert.h"
#include "test/unit/GpuTest.h"
#include "test/unit/OpErrorTest.h"

namespace vkd_test {
namespace {

// [1, 3, 5, 6] and [1, 6, 5, 6] joined along channels into [1, 9, 5, 6].
struct CatSetup {
  std::vector<TensorSpec> in = {int8_spec({1, 3, 5, 6}), int8_spec({1, 6, 5, 6})};
  TensorSpec out = int8_spec({1, 9, 5, 6});
  vkd::ops::CatParams p{1, {{0.1f, 0}, {0.2f, 3}}, {0.1f, 0}};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      std::vector<vkd::graph::ValueRef> refs;
      for (size_t i = 0; i < in.size(); ++i) {
        refs.push_back(g.add_tensor(in[i], "x" + std::to_string(i)));
      }
      vkd::ops::add_q8ta_cat_node(g, refs, g.add_tensor(out, "y"), p);
    });
  }
};

// Channels 3 .. 8 of [2, 11, 4, 5], every other one: [2, 3, 4, 5].
struct SliceSetup {
  TensorSpec in = int8_spec({2, 11, 4, 5});
  TensorSpec out = int8_spec({2, 3, 4, 5});
  vkd::ops::SliceParams p{1, 3, 2, {0.1f, 0}, {0.3f, -5}};

  std::pair<int, std::string> build(vkd::vk::Context& ctx) const {
    return build_result(ctx, [&](ComputeGraph& g) {
      vkd::ops::add_q8ta_slice_node(g, g.add_tensor(in, "x"), g.add_tensor(out, "y"), p);
    });
  }
};

class ConcatChecks : public GpuTest {};

TEST_F(ConcatChecks, TheSetupsBuild) {
  EXPECT_EQ(CatSetup{}.build(ctx()).first, -1) << CatSetup{}.build(ctx()).second;
  EXPECT_EQ(SliceSetup{}.build(ctx()).first, -1) << SliceSetup{}.build(ctx()).second;
}

TEST_F(ConcatChecks, CatSizesLayoutsAndDimsAreNamed) {
  CatSetup sum;
  sum.out = int8_spec({1, 10, 5, 6});
  expect_op_error(sum, ctx(), "q8ta_cat", "add up to 9");
  CatSetup other;
  other.in[1] = int8_spec({1, 6, 4, 6});
  expect_op_error(other, ctx(), "q8ta_cat", "in a size other than dim 1");
  CatSetup layout;
  layout.in[0] = int8_spec({1, 3, 5, 6}, MemoryLayout::PackedInt8_4C1W);
  expect_op_error(layout, ctx(), "q8ta_cat", "must share the output's layout and rank");
  CatSetup rank;
  rank.in[0] = int8_spec({3, 5, 6});
  expect_op_error(rank, ctx(), "q8ta_cat", "must share the output's layout and rank");
  CatSetup dim;
  dim.p.dim = 4;
  expect_op_error(dim, ctx(), "q8ta_cat", "dim 4 is outside [0, 4)");
  CatSetup flt;
  flt.in[1] = {{1, 6, 5, 6}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked};
  expect_op_error(flt, ctx(), "q8ta_cat", "tensor 'x1'");
  CatSetup none;
  none.in.clear();
  none.p.inputs.clear();
  expect_op_error(none, ctx(), "q8ta_cat", "needs at least one input");
}

TEST_F(ConcatChecks, CatQuantizationIsChecked) {
  CatSetup count;
  count.p.inputs.pop_back();
  expect_op_error(count, ctx(), "q8ta_cat", "1 input quantizations for 2 inputs");
  CatSetup scale;
  scale.p.inputs[1].scale = 0.0f;
  expect_op_error(scale, ctx(), "q8ta_cat", "scale must be finite and > 0");
  CatSetup range;
  range.p.output.quant_min = 10;
  expect_op_error(range, ctx(), "q8ta_cat", "zero_point 0 outside [quant_min, quant_max]");
}

// Nine 1-channel inputs: windows of at most 4 inputs, each owning the tiles its inputs fill
// (channels 0..3, 4..7, 8): three dispatches, all with the cat kernel.
TEST_F(ConcatChecks, ManyInputsBecomeSeveralDispatches) {
  CatSetup many;
  many.in.assign(9, int8_spec({1, 1, 5, 6}));
  many.out = int8_spec({1, 9, 5, 6});
  many.p.inputs.assign(9, {0.1f, 0});
  ComputeGraph g(ctx());
  std::vector<vkd::graph::ValueRef> refs;
  for (size_t i = 0; i < many.in.size(); ++i) refs.push_back(g.add_tensor(many.in[i]));
  vkd::ops::add_q8ta_cat_node(g, refs, g.add_tensor(many.out), many.p);
  ASSERT_EQ(g.nodes().size(), 3u);
  for (const auto& n : g.nodes()) EXPECT_EQ(n.op, "q8ta_cat");
}

TEST_F(ConcatChecks, SliceRangesAreNamed) {
  SliceSetup past;
  past.p.start = 6;  // 6, 8, 10, then 12 is past the 11 channels
  past.out = int8_spec({2, 4, 4, 5});
  expect_op_error(past, ctx(), "q8ta_slice", "start 6 and step 2 take 4 elements along dim 1");
  SliceSetup step;
  step.p.step = 0;
  expect_op_error(step, ctx(), "q8ta_slice", "need start >= 0, step >= 1");
  SliceSetup negative;
  negative.p.start = -1;
  expect_op_error(negative, ctx(), "q8ta_slice", "need start >= 0");
  SliceSetup other;
  other.out = int8_spec({2, 3, 4, 4});
  expect_op_error(other, ctx(), "q8ta_slice", "in a size other than dim 1");
  SliceSetup layout;
  layout.out = int8_spec({2, 3, 4, 5}, MemoryLayout::PackedInt8_4H4W);
  expect_op_error(layout, ctx(), "q8ta_slice", "must share the output's layout and rank");
  SliceSetup zp;
  zp.p.input.zero_point = 200;
  expect_op_error(zp, ctx(), "q8ta_slice", "zero_point 200 outside");
}

// contiguous_slice_offset against the closed forms: where it gives an offset, every element of
// a tensor of the slice's dims (padding words and lanes included) lies at that offset plus its
// own position, and every word of that range holds one of them; it says so for the parts the
// layouts store contiguously (batches; rows of 4W4C / 4C1W and channels of 4H4W with one
// batch) and refuses strided parts and blocks shared with the next part.
TEST(ContiguousSlice, OffsetsMatchTheLayoutFormulas) {
  using vkd::Dims4;
  int found = 0;
  for (MemoryLayout layout : {MemoryLayout::PackedInt8_4W4C, MemoryLayout::PackedInt8_4H4W,
                              MemoryLayout::PackedInt8_4C1W}) {
    for (const Dims4 d : {Dims4{2, 6, 5, 7}, Dims4{1, 6, 5, 7}, Dims4{1, 1, 5, 7},
                          Dims4{1, 9, 1, 6}, Dims4{1, 3, 3, 9}}) {
      const int64_t size[4] = {d.n, d.c, d.h, d.w};
      for (int dim = 0; dim < 4; ++dim) {
        for (int64_t start = 0; start < size[dim]; ++start) {
          for (int64_t len = 1; start + len <= size[dim]; ++len) {
            const int64_t offset = vkd::contiguous_slice_offset(layout, d, dim, start, len);
            if (offset < 0) continue;
            ++found;
            Dims4 part = d;
            int64_t* ps[4] = {&part.n, &part.c, &part.h, &part.w};
            *ps[dim] = len;
            const int64_t words = vkd::packed_int8_word_count(layout, part);
            ASSERT_EQ(offset % 4, 0);
            ASSERT_LE(offset / 4 + words, vkd::packed_int8_word_count(layout, d));
            // Every element of the part at its own position plus the offset, and the part's
            // padding free of the whole's elements: the whole's elements inside the range are
            // exactly the part's.
            int64_t inside = 0;
            for (int64_t n = 0; n < d.n; ++n)
              for (int64_t c = 0; c < d.c; ++c)
                for (int64_t h = 0; h < d.h; ++h)
                  for (int64_t w = 0; w < d.w; ++w) {
                    int64_t e[4] = {n, c, h, w};
                    const auto whole = vkd::packed_int8_position(layout, d, n, c, h, w);
                    const bool in_range =
                        whole.word >= offset / 4 && whole.word < offset / 4 + words;
                    const bool in_part = e[dim] >= start && e[dim] < start + len;
                    ASSERT_EQ(in_range, in_part) << int(layout) << " dim " << dim;
                    if (!in_part) continue;
                    ++inside;
                    e[dim] -= start;
                    const auto own =
                        vkd::packed_int8_position(layout, part, e[0], e[1], e[2], e[3]);
                    ASSERT_EQ(own.word + offset / 4, whole.word);
                    ASSERT_EQ(own.lane, whole.lane);
                  }
            ASSERT_EQ(inside, part.numel());
          }
        }
      }
      // What the layouts store contiguously is found.
      EXPECT_GE(vkd::contiguous_slice_offset(layout, d, 0, 0, 1), 0);
    }
    const Dims4 d{1, 8, 6, 5};
    const bool channels = layout == MemoryLayout::PackedInt8_4H4W;
    EXPECT_EQ(vkd::contiguous_slice_offset(layout, d, 2, 2, 3) >= 0, !channels) << int(layout);
    EXPECT_EQ(vkd::contiguous_slice_offset(layout, d, 1, 3, 2) >= 0, channels) << int(layout);
    // A block shared with the next part is refused, the last part keeps its padding.
    if (layout != MemoryLayout::PackedInt8_4H4W) {
      const Dims4 one_row{1, 7, 1, 1};
      EXPECT_EQ(vkd::contiguous_slice_offset(layout, one_row, 1, 0, 3), -1);
      EXPECT_GE(vkd::contiguous_slice_offset(layout, one_row, 1, 4, 3), 0);
    }
  }
  EXPECT_EQ(found, 180);  // parts found contiguous over these shapes (not all refused)
}

// x0, x1 -> q8ta_convert -> t0, t1 -> q8ta_cat along `dim` -> y: how many cat dispatches are
// left, and where t0 / t1 live after prepare().
struct InPlaceSetup {
  std::vector<TensorSpec> parts;
  TensorSpec out;
  int dim;
  std::vector<vkd::ops::QuantParams> quants;
};

TEST_F(ConcatChecks, ContiguousPartsAreWrittenInPlace) {
  const vkd::ops::QuantParams q{0.1f, 2};
  const InPlaceSetup rows{
      {int8_spec({1, 6, 3, 7}), int8_spec({1, 6, 5, 7})}, int8_spec({1, 6, 8, 7}), 2, {q, q}};
  const InPlaceSetup requant{rows.parts, rows.out, 2, {q, {0.2f, 2}}};
  const InPlaceSetup chans{
      {int8_spec({1, 4, 5, 7}), int8_spec({1, 4, 5, 7})}, int8_spec({1, 8, 5, 7}), 1, {q, q}};
  struct Want {
    const InPlaceSetup* setup;
    size_t cat_dispatches;
    std::vector<bool> shared;
  };
  for (const Want& want : {Want{&rows, 0, {true, true}}, Want{&requant, 1, {true, false}},
                           Want{&chans, 1, {false, false}}}) {
    const InPlaceSetup& s = *want.setup;
    ComputeGraph g(ctx());
    std::vector<vkd::graph::ValueRef> parts;
    for (const TensorSpec& spec : s.parts) {
      const auto x = g.add_tensor(spec);
      parts.push_back(g.add_tensor(spec));
      vkd::ops::add_q8ta_convert_node(g, x, parts.back(), 2);
      g.add_input(x);
    }
    const auto y = g.add_tensor(s.out);
    vkd::ops::add_q8ta_cat_node(g, parts, y, {s.dim, s.quants, q});
    g.add_output(y);
    EXPECT_EQ(g.nodes().size(), parts.size() + want.cat_dispatches);
    g.prepare();
    const auto whole = g.memory_range(y);
    uint64_t row = 0;  // t0's bytes, then t1's: t1 starts where t0 ends
    for (size_t i = 0; i < parts.size(); ++i) {
      const auto r = g.memory_range(parts[i]);
      const bool inside = r.memory == whole.memory && r.offset == whole.offset + row;
      EXPECT_EQ(inside, want.shared[i]) << "part " << i;
      row += g.tensor(parts[i]).bytes();
    }
  }
}

// A slice quantized like its input that is one contiguous byte range of it is a view: no
// dispatch, its bytes inside the input's from the part's offset.
TEST_F(ConcatChecks, ContiguousSlicesAreViews) {
  ComputeGraph g(ctx());
  const auto x = g.add_tensor(int8_spec({1, 6, 8, 7}));
  const auto t = g.add_tensor(int8_spec({1, 6, 5, 7}));
  const auto y = g.add_tensor(int8_spec({1, 6, 5, 7}));
  const vkd::ops::QuantParams q{0.1f, 2};
  vkd::ops::add_q8ta_slice_node(g, x, t, {2, 3, 1, q, q});
  EXPECT_EQ(g.nodes().size(), 0u);
  vkd::ops::add_q8ta_convert_node(g, t, y, 2);
  g.add_input(x);
  g.add_output(y);
  g.prepare();
  // Rows of 4W4C [1, 6, 8, 7]: 2 width blocks x 2 channel blocks x 16 bytes each.
  EXPECT_EQ(g.memory_range(t).offset, g.memory_range(x).offset + 3 * 2 * 2 * 16);
  EXPECT_EQ(g.memory_range(t).memory, g.memory_range(x).memory);
  ComputeGraph h(ctx());
  vkd::ops::add_q8ta_slice_node(h, h.add_tensor(int8_spec({1, 6, 8, 7})),
                                h.add_tensor(int8_spec({1, 6, 5, 7})),
                                {2, 3, 1, q, {0.2f, 2}});  // requantized: a kernel
  EXPECT_EQ(h.nodes().size(), 1u);
}

}  // namespace
}  // namespace vkd_test
