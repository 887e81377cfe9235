// Tests for the pure-C++ tensor layer: packed int8x4 layouts, host pack/unpack, float layouts,
// TensorSpec validation. The references here are deliberately formulated differently from the
// closed forms in PackedInt8Layout.cpp (a generic block-stride walk, and its inverse).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/DType.h"
#include "core/Error.h"
#include "core/FloatLayout.h"
#include "core/HostPacking.h"
#include "core/PackedInt8Layout.h"
#include "core/TensorSpec.h"

namespace vkd {
namespace {

constexpr int N = 0, C = 1, H = 2, W = 3;  // NCHW dim numbering

// ---------------------------------------------------------------------------------------------
// Generic reference (block-stride walk). Each layout: packed dim P (block 4, in the byte lanes),
// outer dim O with block Ob, dim order slowest -> fastest. One block = 4*Ob elements.
struct GenericLayout {
  int p;                     // packed dim
  int o;                     // outer blocked dim
  int64_t ob;                // outer block size
  std::array<int, 4> order;  // slowest -> fastest
};

GenericLayout generic(MemoryLayout layout) {
  switch (layout) {
    case MemoryLayout::PackedInt8_4W4C: return {C, W, 4, {N, H, W, C}};
    case MemoryLayout::PackedInt8_4H4W: return {W, H, 4, {N, C, H, W}};
    case MemoryLayout::PackedInt8_4C1W: return {C, W, 1, {N, H, C, W}};
    default: break;
  }
  ADD_FAILURE() << "not a packed int8 layout";
  return {C, W, 1, {N, C, H, W}};
}

struct Walk {
  GenericLayout g;
  std::array<int64_t, 4> size{};     // logical sizes (NCHW)
  std::array<int64_t, 4> block{};    // block size per dim
  std::array<int64_t, 4> nblocks{};  // padded size / block size per dim
  std::array<int64_t, 4> stride{};   // block strides per dim

  Walk(MemoryLayout layout, const Dims4& d) : g(generic(layout)) {
    size = {d.n, d.c, d.h, d.w};
    block = {1, 1, 1, 1};
    block[g.p] = 4;
    block[g.o] = g.ob;
    for (int k = 0; k < 4; ++k) {
      int64_t padded = size[k];
      while (padded % block[k] != 0) ++padded;  // round up by counting, not div_up
      nblocks[k] = padded / block[k];
    }
    int64_t s = 1;
    for (int i = 3; i >= 0; --i) {
      stride[g.order[i]] = s;
      s *= nblocks[g.order[i]];
    }
  }
  int64_t total_blocks() const { return nblocks[0] * nblocks[1] * nblocks[2] * nblocks[3]; }
  int64_t words() const { return total_blocks() * 4 * g.ob / 4; }

  WordLane position(const std::array<int64_t, 4>& idx) const {
    int64_t block_idx = 0;
    for (int k = 0; k < 4; ++k) block_idx += stride[k] * (idx[k] / block[k]);
    const int64_t intra = (idx[g.o] % g.ob) * 4 + idx[g.p] % 4;
    const int64_t element = block_idx * (4 * g.ob) + intra;
    return {element / 4, static_cast<int>(element % 4)};
  }

  // Inverse of position() over the padded tensor: the (possibly out-of-range) coordinate that
  // a (word, lane) slot belongs to.
  std::array<int64_t, 4> coord(int64_t word, int lane) const {
    const int64_t element = word * 4 + lane;
    int64_t block_idx = element / (4 * g.ob);
    const int64_t intra = element % (4 * g.ob);
    std::array<int64_t, 4> idx{};
    for (int i = 0; i < 4; ++i) {
      const int k = g.order[i];
      idx[k] = (block_idx / stride[k]) * block[k];
      block_idx %= stride[k];
    }
    idx[g.p] += intra % 4;
    idx[g.o] += intra / 4;
    return idx;
  }
  bool in_range(const std::array<int64_t, 4>& idx) const {
    for (int k = 0; k < 4; ++k)
      if (idx[k] >= size[k]) return false;
    return true;
  }
};

// ---------------------------------------------------------------------------------------------
std::string dims_str(const Dims4& d) {
  return "[" + std::to_string(d.n) + "," + std::to_string(d.c) + "," + std::to_string(d.h) + "," +
         std::to_string(d.w) + "]";
}

Dims4 dims_of(std::vector<int64_t> sizes) {
  TensorSpec s;
  s.sizes = std::move(sizes);
  return s.dims4();
}

std::vector<Dims4> awkward_shapes() {
  return {
      dims_of({1, 1, 1, 1}), dims_of({1, 3, 5, 7}), dims_of({2, 17, 9, 6}), dims_of({1, 4, 1, 33}),
      dims_of({3, 1, 7, 1}), dims_of({1, 5, 4, 4}), dims_of({2, 8, 3, 2}),  dims_of({1, 33, 2, 9}),
      dims_of({1, 6, 3, 5}), dims_of({7}),          dims_of({5, 9}),        dims_of({3, 6, 10}),
  };
}

constexpr int8_t kPad = -7;

// Deterministic data that never equals kPad.
std::vector<int8_t> make_data(int64_t numel, uint32_t seed) {
  std::vector<int8_t> v(static_cast<size_t>(numel));
  uint32_t x = seed * 2654435761u + 12345u;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<int8_t>(static_cast<uint8_t>(x >> 24));
    if (e == kPad) e = 100;
  }
  return v;
}

template <typename F>
void for_each_index(const Dims4& d, F f) {
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t c = 0; c < d.c; ++c)
      for (int64_t h = 0; h < d.h; ++h)
        for (int64_t w = 0; w < d.w; ++w) f(n, c, h, w);
}

// ---------------------------------------------------------------------------------------------
// Worked example [1,6,3,5] and probes.

struct Probe {
  MemoryLayout layout;
  int64_t n, c, h, w;
  int64_t word;
  int lane;
};

TEST(PackedInt8Layout, WorkedExample1x6x3x5) {
  const Dims4 d{1, 6, 3, 5};
  EXPECT_EQ(packed_int8_word_count(MemoryLayout::PackedInt8_4W4C, d), 48);
  EXPECT_EQ(packed_int8_word_count(MemoryLayout::PackedInt8_4H4W, d), 48);
  EXPECT_EQ(packed_int8_word_count(MemoryLayout::PackedInt8_4C1W, d), 30);

  const Probe probes[] = {
      {MemoryLayout::PackedInt8_4W4C, 0, 5, 2, 4, 44, 1},
      {MemoryLayout::PackedInt8_4H4W, 0, 5, 2, 4, 46, 0},
      {MemoryLayout::PackedInt8_4C1W, 0, 5, 2, 4, 29, 1},
      {MemoryLayout::PackedInt8_4W4C, 0, 1, 0, 0, 0, 1},
      {MemoryLayout::PackedInt8_4W4C, 0, 4, 0, 0, 4, 0},
      {MemoryLayout::PackedInt8_4W4C, 0, 0, 0, 1, 1, 0},
      {MemoryLayout::PackedInt8_4W4C, 0, 0, 1, 0, 16, 0},
      {MemoryLayout::PackedInt8_4C1W, 0, 4, 0, 0, 5, 0},
      {MemoryLayout::PackedInt8_4C1W, 0, 0, 0, 1, 1, 0},
      {MemoryLayout::PackedInt8_4C1W, 0, 0, 1, 0, 10, 0},
      {MemoryLayout::PackedInt8_4H4W, 0, 1, 0, 0, 8, 0},
      {MemoryLayout::PackedInt8_4H4W, 0, 0, 1, 0, 1, 0},
      {MemoryLayout::PackedInt8_4H4W, 0, 0, 0, 1, 0, 1},
      {MemoryLayout::PackedInt8_4H4W, 0, 4, 0, 0, 32, 0},
      {MemoryLayout::PackedInt8_4W4C, 0, 0, 0, 0, 0, 0},
      {MemoryLayout::PackedInt8_4H4W, 0, 0, 0, 0, 0, 0},
      {MemoryLayout::PackedInt8_4C1W, 0, 0, 0, 0, 0, 0},
  };
  for (const Probe& p : probes) {
    const WordLane got = packed_int8_position(p.layout, d, p.n, p.c, p.h, p.w);
    EXPECT_EQ(got.word, p.word) << to_string(p.layout) << " (" << p.n << "," << p.c << "," << p.h
                                << "," << p.w << ")";
    EXPECT_EQ(got.lane, p.lane) << to_string(p.layout) << " (" << p.n << "," << p.c << "," << p.h
                                << "," << p.w << ")";
    // The reference walk agrees with the hand-derived numbers too.
    const WordLane ref = Walk(p.layout, d).position({p.n, p.c, p.h, p.w});
    EXPECT_EQ(ref.word, p.word) << "reference walk, " << to_string(p.layout);
    EXPECT_EQ(ref.lane, p.lane) << "reference walk, " << to_string(p.layout);
  }
}

TEST(PackedInt8Layout, MatchesReferenceWalk) {
  for (MemoryLayout layout : kAllPackedInt8Layouts) {
    for (const Dims4& d : awkward_shapes()) {
      const Walk ref(layout, d);
      ASSERT_EQ(packed_int8_word_count(layout, d), ref.words())
          << to_string(layout) << " " << dims_str(d);
      for_each_index(d, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
        const WordLane got = packed_int8_position(layout, d, n, c, h, w);
        const WordLane want = ref.position({n, c, h, w});
        ASSERT_TRUE(got == want) << to_string(layout) << " " << dims_str(d) << " (" << n << "," << c
                                 << "," << h << "," << w << "): got (" << got.word << ","
                                 << got.lane << ") want (" << want.word << "," << want.lane << ")";
      });
    }
  }
}

TEST(PackedInt8Layout, BijectiveOntoNonPaddingSlots) {
  for (MemoryLayout layout : kAllPackedInt8Layouts) {
    for (const Dims4& d : awkward_shapes()) {
      SCOPED_TRACE(std::string(to_string(layout)) + " " + dims_str(d));
      const int64_t words = packed_int8_word_count(layout, d);
      std::vector<char> hit(static_cast<size_t>(words * 4), 0);
      bool ok = true;
      for_each_index(d, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
        const WordLane p = packed_int8_position(layout, d, n, c, h, w);
        if (p.word < 0 || p.word >= words || p.lane < 0 || p.lane > 3) {
          ADD_FAILURE() << "(" << n << "," << c << "," << h << "," << w << ") -> (" << p.word << ","
                        << p.lane << ") outside " << words << " words";
          ok = false;
          return;
        }
        char& slot = hit[static_cast<size_t>(p.word * 4 + p.lane)];
        if (slot) {
          ADD_FAILURE() << "(" << n << "," << c << "," << h << "," << w << ") -> (" << p.word << ","
                        << p.lane << ") already taken";
          ok = false;
        }
        slot = 1;
      });
      if (!ok) continue;
      // The slots not hit are exactly the padding: slots whose (inverse-walk) coordinate lies
      // outside the logical sizes.
      const Walk ref(layout, d);
      int64_t unhit = 0;
      for (int64_t word = 0; word < words; ++word) {
        for (int lane = 0; lane < 4; ++lane) {
          const bool is_hit = hit[static_cast<size_t>(word * 4 + lane)] != 0;
          const std::array<int64_t, 4> idx = ref.coord(word, lane);
          EXPECT_EQ(is_hit, ref.in_range(idx)) << "slot (" << word << "," << lane << ")";
          if (!is_hit) ++unhit;
        }
      }
      EXPECT_EQ(unhit, words * 4 - d.numel());
    }
  }
}

TEST(PackedInt8Layout, RejectsBadArguments) {
  const Dims4 d{1, 6, 3, 5};
  EXPECT_THROW(packed_int8_word_count(MemoryLayout::WidthPacked, d), Error);
  EXPECT_THROW(packed_int8_position(MemoryLayout::ChannelsPacked, d, 0, 0, 0, 0), Error);
  EXPECT_THROW(packed_int8_position(MemoryLayout::PackedInt8_4W4C, d, 0, 6, 0, 0), Error);
  EXPECT_THROW(packed_int8_position(MemoryLayout::PackedInt8_4H4W, d, 0, 0, 3, 0), Error);
  EXPECT_THROW(packed_int8_position(MemoryLayout::PackedInt8_4C1W, d, 0, 0, 0, -1), Error);
  EXPECT_THROW(packed_int8_word_count(MemoryLayout::PackedInt8_4C1W, Dims4{1, 0, 1, 1}), Error);
}

// ---------------------------------------------------------------------------------------------
// Host packing.

TEST(HostPacking, MatchesReferenceWalkWordByWord) {
  uint32_t seed = 1;
  for (MemoryLayout layout : kAllPackedInt8Layouts) {
    for (const Dims4& d : awkward_shapes()) {
      SCOPED_TRACE(std::string(to_string(layout)) + " " + dims_str(d));
      const std::vector<int8_t> data = make_data(d.numel(), seed++);
      const std::vector<int32_t> packed = pack_int8(data.data(), d, layout, kPad);

      // Reference: build the bytes slot by slot from the inverse walk.
      const Walk ref(layout, d);
      ASSERT_EQ(static_cast<int64_t>(packed.size()), ref.words());
      for (int64_t word = 0; word < ref.words(); ++word) {
        uint32_t expect = 0;
        for (int lane = 0; lane < 4; ++lane) {
          const std::array<int64_t, 4> i = ref.coord(word, lane);
          int8_t v = kPad;
          if (ref.in_range(i))
            v = data[static_cast<size_t>(((i[N] * d.c + i[C]) * d.h + i[H]) * d.w + i[W])];
          expect |= static_cast<uint32_t>(static_cast<uint8_t>(v)) << (8 * lane);
        }
        ASSERT_EQ(static_cast<uint32_t>(packed[static_cast<size_t>(word)]), expect)
            << "word " << word;
      }
    }
  }
}

TEST(HostPacking, RoundTripAndPadding) {
  uint32_t seed = 100;
  for (MemoryLayout layout : kAllPackedInt8Layouts) {
    for (const Dims4& d : awkward_shapes()) {
      SCOPED_TRACE(std::string(to_string(layout)) + " " + dims_str(d));
      const std::vector<int8_t> data = make_data(d.numel(), seed++);
      const std::vector<int32_t> packed = pack_int8(data.data(), d, layout, kPad);
      ASSERT_EQ(static_cast<int64_t>(packed.size()), packed_int8_word_count(layout, d));

      const std::vector<int8_t> back = unpack_int8(packed.data(), d, layout);
      EXPECT_EQ(back, data);

      // The data never equals kPad, so the pad-valued lanes are exactly the padding.
      int64_t pad_lanes = 0;
      for (int32_t word : packed)
        for (int lane = 0; lane < 4; ++lane)
          if (word_lane(word, lane) == kPad) ++pad_lanes;
      EXPECT_EQ(pad_lanes, static_cast<int64_t>(packed.size()) * 4 - d.numel());
    }
  }
}

TEST(HostPacking, LaneZeroIsLeastSignificantByte) {
  const int8_t data[4] = {1, 2, 3, -1};
  const Dims4 d{1, 4, 1, 1};
  const std::vector<int32_t> w = pack_int8(data, d, MemoryLayout::PackedInt8_4C1W, 0);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(static_cast<uint32_t>(w[0]), 0xFF030201u);
  EXPECT_EQ(word_lane(w[0], 0), 1);
  EXPECT_EQ(word_lane(w[0], 3), -1);
  // 4W4C of the same tensor: one channel block at w=0 (word 0), words 1..3 all padding.
  const std::vector<int32_t> t = pack_int8(data, d, MemoryLayout::PackedInt8_4W4C, 5);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(static_cast<uint32_t>(t[0]), 0xFF030201u);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(static_cast<uint32_t>(t[i]), 0x05050505u);
}

// ---------------------------------------------------------------------------------------------
// Float layouts.

std::array<int, 4> float_order(MemoryLayout layout) {  // slowest -> fastest
  switch (layout) {
    case MemoryLayout::WidthPacked: return {N, C, H, W};
    case MemoryLayout::HeightPacked: return {N, C, W, H};
    case MemoryLayout::ChannelsPacked: return {N, H, W, C};
    default: break;
  }
  ADD_FAILURE() << "not a float layout";
  return {N, C, H, W};
}

TEST(FloatLayout, BufferStridesExplicit) {
  const Dims4 d{2, 3, 4, 5};
  EXPECT_EQ(buffer_strides(MemoryLayout::WidthPacked, d), (std::array<int64_t, 4>{60, 20, 5, 1}));
  EXPECT_EQ(buffer_strides(MemoryLayout::HeightPacked, d), (std::array<int64_t, 4>{60, 20, 1, 4}));
  EXPECT_EQ(buffer_strides(MemoryLayout::ChannelsPacked, d),
            (std::array<int64_t, 4>{60, 1, 15, 3}));
  EXPECT_THROW(buffer_strides(MemoryLayout::PackedInt8_4W4C, d), Error);
}

// Walk each layout's dim order with nested loops and a running counter: the strided offset
// must equal the counter.
TEST(FloatLayout, BufferStridesMatchNestedWalk) {
  for (MemoryLayout layout : kAllFloatLayouts) {
    for (const Dims4& d : {Dims4{2, 3, 4, 5}, Dims4{1, 7, 1, 3}, Dims4{3, 1, 6, 2}}) {
      SCOPED_TRACE(std::string(to_string(layout)) + " " + dims_str(d));
      const std::array<int64_t, 4> s = buffer_strides(layout, d);
      const std::array<int64_t, 4> size{d.n, d.c, d.h, d.w};
      const std::array<int, 4> o = float_order(layout);
      std::array<int64_t, 4> i{};
      int64_t counter = 0;
      for (i[o[0]] = 0; i[o[0]] < size[o[0]]; ++i[o[0]])
        for (i[o[1]] = 0; i[o[1]] < size[o[1]]; ++i[o[1]])
          for (i[o[2]] = 0; i[o[2]] < size[o[2]]; ++i[o[2]])
            for (i[o[3]] = 0; i[o[3]] < size[o[3]]; ++i[o[3]], ++counter)
              ASSERT_EQ(i[0] * s[0] + i[1] * s[1] + i[2] * s[2] + i[3] * s[3], counter);
      EXPECT_EQ(counter, d.numel());
    }
  }
}

TEST(FloatLayout, TextureExtentsAndPackedDim) {
  auto ext = [](MemoryLayout l, const Dims4& d) {
    const TextureExtents e = texture_extents(l, d);
    return std::array<int64_t, 3>{e.x, e.y, e.z};
  };
  const Dims4 a{2, 3, 5, 7};
  EXPECT_EQ(ext(MemoryLayout::WidthPacked, a), (std::array<int64_t, 3>{2, 5, 6}));
  EXPECT_EQ(ext(MemoryLayout::HeightPacked, a), (std::array<int64_t, 3>{7, 2, 6}));
  EXPECT_EQ(ext(MemoryLayout::ChannelsPacked, a), (std::array<int64_t, 3>{7, 5, 2}));
  const Dims4 b{1, 8, 4, 9};
  EXPECT_EQ(ext(MemoryLayout::WidthPacked, b), (std::array<int64_t, 3>{3, 4, 8}));
  EXPECT_EQ(ext(MemoryLayout::HeightPacked, b), (std::array<int64_t, 3>{9, 1, 8}));
  EXPECT_EQ(ext(MemoryLayout::ChannelsPacked, b), (std::array<int64_t, 3>{9, 4, 2}));
  EXPECT_THROW(texture_extents(MemoryLayout::PackedInt8_4H4W, b), Error);

  EXPECT_EQ(packed_dim_nchw(MemoryLayout::WidthPacked), 3);
  EXPECT_EQ(packed_dim_nchw(MemoryLayout::HeightPacked), 2);
  EXPECT_EQ(packed_dim_nchw(MemoryLayout::ChannelsPacked), 1);
  // The int8x4 layouts report the dim held in the byte lanes (the generic walk's P).
  for (MemoryLayout l : kAllPackedInt8Layouts) EXPECT_EQ(packed_dim_nchw(l), generic(l).p);
}

// ---------------------------------------------------------------------------------------------
// DType / TensorSpec.

// Device index of NCHW element (n, c, h, w), written from FloatLayout.h's description (not from
// buffer_strides / texture_extents): buffers in the layout's dim order, textures as texels of 4.
int64_t float_device_index(StorageType storage, MemoryLayout layout, const Dims4& d, int64_t n,
                           int64_t c, int64_t h, int64_t w) {
  if (storage == StorageType::Buffer) {
    switch (layout) {
      case MemoryLayout::WidthPacked: return ((n * d.c + c) * d.h + h) * d.w + w;
      case MemoryLayout::HeightPacked: return ((n * d.c + c) * d.w + w) * d.h + h;
      default: return ((n * d.h + h) * d.w + w) * d.c + c;  // ChannelsPacked: NHWC
    }
  }
  const int64_t w4 = (d.w + 3) / 4, h4 = (d.h + 3) / 4, c4 = (d.c + 3) / 4;
  switch (layout) {
    case MemoryLayout::WidthPacked: return (((n * d.c + c) * d.h + h) * w4 + w / 4) * 4 + w % 4;
    case MemoryLayout::HeightPacked: return (((n * d.c + c) * h4 + h / 4) * d.w + w) * 4 + h % 4;
    default: return (((n * c4 + c / 4) * d.h + h) * d.w + w) * 4 + c % 4;
  }
}

TEST(HostPacking, StridedPackIntoCallerMemoryMatchesTheLayoutDescription) {
  const Dims4 d{2, 5, 3, 6};  // no dim a multiple of 4 except none: texture padding exists
  std::vector<float> nchw(static_cast<size_t>(d.numel()));
  for (size_t i = 0; i < nchw.size(); ++i) nchw[i] = 0.5f + static_cast<float>(i);
  for (StorageType storage : {StorageType::Buffer, StorageType::Texture3D}) {
    for (MemoryLayout layout :
         {MemoryLayout::WidthPacked, MemoryLayout::HeightPacked, MemoryLayout::ChannelsPacked}) {
      SCOPED_TRACE(std::string(to_string(storage)) + " " + std::string(to_string(layout)));
      const int64_t count = device_element_count(d, storage, layout);
      // Stale staging contents: padding must come out 0 regardless.
      std::vector<float> device(static_cast<size_t>(count), -7.0f);
      pack_strided_into(nchw.data(), device.data(), d, storage, layout);
      std::vector<float> expected(static_cast<size_t>(count), 0.0f);
      int64_t i = 0;
      for (int64_t n = 0; n < d.n; ++n)
        for (int64_t c = 0; c < d.c; ++c)
          for (int64_t h = 0; h < d.h; ++h)
            for (int64_t w = 0; w < d.w; ++w, ++i)
              expected[static_cast<size_t>(float_device_index(storage, layout, d, n, c, h, w))] =
                  nchw[static_cast<size_t>(i)];
      EXPECT_EQ(device, expected);
      EXPECT_EQ(pack_strided(nchw.data(), d, storage, layout), expected);
      std::vector<float> back(nchw.size(), -1.0f);
      unpack_strided_into(device.data(), back.data(), d, storage, layout);
      EXPECT_EQ(back, nchw);
    }
  }
}

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::Float32, DType::Float16, DType::Int32, DType::Int8, DType::Int8x4})
    EXPECT_EQ(parse_dtype(to_string(t)), t);
  for (StorageType s : {StorageType::Buffer, StorageType::Texture3D})
    EXPECT_EQ(parse_storage(to_string(s)), s);
  for (MemoryLayout l : kAllFloatLayouts) EXPECT_EQ(parse_layout(to_string(l)), l);
  for (MemoryLayout l : kAllPackedInt8Layouts) EXPECT_EQ(parse_layout(to_string(l)), l);
  EXPECT_EQ(to_string(MemoryLayout::PackedInt8_4W4C), "4W4C");
  EXPECT_EQ(to_string(MemoryLayout::WidthPacked), "width_packed");
  EXPECT_FALSE(parse_dtype("float64").has_value());
  EXPECT_FALSE(parse_layout("4W4H").has_value());
  EXPECT_EQ(element_size(DType::Float16), 2u);
  EXPECT_EQ(element_size(DType::Float32), 4u);
  EXPECT_TRUE(is_packed_int8(MemoryLayout::PackedInt8_4C1W));
  EXPECT_FALSE(is_packed_int8(MemoryLayout::ChannelsPacked));
}

TEST(TensorSpec, Dims4PrefixesOnesAndDescribe) {
  EXPECT_EQ(dims_of({7}), (Dims4{1, 1, 1, 7}));
  EXPECT_EQ(dims_of({5, 9}), (Dims4{1, 1, 5, 9}));
  EXPECT_EQ(dims_of({3, 6, 10}), (Dims4{1, 3, 6, 10}));
  EXPECT_EQ(dims_of({2, 3, 6, 10}), (Dims4{2, 3, 6, 10}));
  TensorSpec s{{1, 3, 5, 7}, DType::Int8x4, StorageType::Buffer, MemoryLayout::PackedInt8_4W4C};
  EXPECT_EQ(s.describe(), "[1,3,5,7] int8x4 buffer 4W4C");
  EXPECT_EQ(s.numel(), 105);
}

// Expects validate(spec) to throw InvalidArgument with every one of `parts` in the message.
void expect_invalid(const TensorSpec& spec, std::vector<std::string> parts) {
  try {
    validate(spec);
    ADD_FAILURE() << spec.describe() << ": validate() accepted it";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    const std::string msg = e.what();
    for (const std::string& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos)
          << "message \"" << msg << "\" lacks \"" << p << "\"";
  }
}

TEST(TensorSpec, ValidateAcceptsLegalSpecs) {
  for (MemoryLayout l : kAllPackedInt8Layouts)
    EXPECT_NO_THROW(validate({{1, 6, 3, 5}, DType::Int8x4, StorageType::Buffer, l}));
  for (MemoryLayout l : kAllFloatLayouts)
    for (StorageType st : {StorageType::Buffer, StorageType::Texture3D})
      for (DType t : {DType::Float32, DType::Float16, DType::Int32})
        EXPECT_NO_THROW(validate({{2, 7}, t, st, l}));
  EXPECT_NO_THROW(
      validate({{3, 6, 10}, DType::Int8, StorageType::Buffer, MemoryLayout::WidthPacked}));
  // Just under the limits.
  EXPECT_NO_THROW(validate(
      {{1, 1, 32768, 65535}, DType::Float32, StorageType::Buffer, MemoryLayout::WidthPacked}));
  EXPECT_NO_THROW(validate({{1, 1, (int64_t{1} << 29) - 1, 1},
                            DType::Int8x4,
                            StorageType::Buffer,
                            MemoryLayout::PackedInt8_4W4C}));
}

TEST(TensorSpec, ValidateRejections) {
  const auto F32 = DType::Float32, I8x4 = DType::Int8x4;
  const auto Buf = StorageType::Buffer, Tex = StorageType::Texture3D;
  expect_invalid({{1, 3, 0, 5}, F32, Buf, MemoryLayout::WidthPacked},
                 {"[1,3,0,5]", "size 0 in dim 2"});
  expect_invalid({{1, -2}, F32, Buf, MemoryLayout::WidthPacked}, {"size -2 in dim 1"});
  expect_invalid({{1, 2, 3, 4, 5}, F32, Buf, MemoryLayout::WidthPacked}, {"rank 5"});
  expect_invalid({{}, F32, Buf, MemoryLayout::WidthPacked}, {"rank 0"});
  expect_invalid({{1, 4, 4, 4}, I8x4, Buf, MemoryLayout::WidthPacked}, {"int8x4", "width_packed"});
  expect_invalid({{1, 4, 4, 4}, I8x4, Tex, MemoryLayout::PackedInt8_4W4C}, {"int8x4", "texture3d"});
  expect_invalid({{1, 4, 4, 4}, F32, Buf, MemoryLayout::PackedInt8_4W4C}, {"float32", "4W4C"});
  expect_invalid({{1, 4, 4, 4}, DType::Float16, Tex, MemoryLayout::PackedInt8_4H4W},
                 {"float16", "4H4W"});
  expect_invalid({{4, 4}, DType::Int8, Tex, MemoryLayout::WidthPacked}, {"int8", "host-only"});
  expect_invalid({{4, 4}, DType::Int8, Buf, MemoryLayout::ChannelsPacked},
                 {"int8", "channels_packed"});
  // numel = 2^31.
  expect_invalid({{1, 1, 32768, 65536}, F32, Buf, MemoryLayout::WidthPacked}, {"2^31", "numel"});
  // Sizes whose product overflows int64 must still be rejected cleanly.
  expect_invalid(
      {{int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40}, F32, Buf, MemoryLayout::WidthPacked},
      {"2^31"});
  // numel = 2^29 fits, but 4W4C with C = W = 1 pads each element to a word: 2^31 words.
  expect_invalid({{1, 1, int64_t{1} << 29, 1}, I8x4, Buf, MemoryLayout::PackedInt8_4W4C},
                 {"word", "2^31", "4W4C"});
}

}  // namespace
}  // namespace vkd
