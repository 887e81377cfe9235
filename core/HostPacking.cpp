#include "core/HostPacking.h"

#include <algorithm>

#include "core/Error.h"
#include "core/PackedInt8Layout.h"

namespace vkd {

namespace {

uint32_t splat(int8_t v) { return 0x01010101u * static_cast<uint8_t>(v); }

// Guards the buffers against a position formula that strays outside the word count.
void check_in_range(const WordLane& p, int64_t words) {
  VKD_CHECK(p.word >= 0 && p.word < words && p.lane >= 0 && p.lane < 4, ErrorCode::Internal,
            "packed int8 position (", p.word, ",", p.lane, ") outside ", words, " words");
}

// Calls fn(nchw_index, position) for every element, in NCHW order, with range-checked positions.
template <typename Fn>
void for_each_position(const Dims4& d, MemoryLayout layout, int64_t words, Fn fn) {
  int64_t i = 0;
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t c = 0; c < d.c; ++c)
      for (int64_t h = 0; h < d.h; ++h)
        for (int64_t w = 0; w < d.w; ++w, ++i) {
          const WordLane p = packed_int8_position(layout, d, n, c, h, w);
          check_in_range(p, words);
          fn(i, p);
        }
}

}  // namespace

void pack_int8_into(const int8_t* nchw, int32_t* words, const Dims4& d, MemoryLayout layout,
                    int8_t pad_value) {
  const int64_t count = packed_int8_word_count(layout, d);  // checks layout and dims
  VKD_CHECK(nchw != nullptr && words != nullptr, ErrorCode::InvalidArgument,
            "pack_int8: null pointer");
  // Start with every lane = pad_value, then overwrite the lanes that hold elements; what is
  // left is exactly the padding.
  auto* out = reinterpret_cast<uint32_t*>(words);
  std::fill(out, out + count, splat(pad_value));
  for_each_position(d, layout, count, [&](int64_t i, const WordLane& p) {
    const int shift = 8 * p.lane;
    uint32_t& word = out[p.word];
    word = (word & ~(0xFFu << shift)) |
           (static_cast<uint32_t>(static_cast<uint8_t>(nchw[i])) << shift);
  });
}

std::vector<int32_t> pack_int8(const int8_t* nchw, const Dims4& d, MemoryLayout layout,
                               int8_t pad_value) {
  std::vector<int32_t> out(static_cast<size_t>(packed_int8_word_count(layout, d)));
  pack_int8_into(nchw, out.data(), d, layout, pad_value);
  return out;
}

void unpack_int8_into(const int32_t* words, int8_t* nchw, const Dims4& d, MemoryLayout layout) {
  const int64_t count = packed_int8_word_count(layout, d);  // checks layout and dims
  VKD_CHECK(words != nullptr && nchw != nullptr, ErrorCode::InvalidArgument,
            "unpack_int8: null pointer");
  for_each_position(d, layout, count, [&](int64_t i, const WordLane& p) {
    nchw[i] = word_lane(words[p.word], p.lane);
  });
}

std::vector<int8_t> unpack_int8(const int32_t* words, const Dims4& d, MemoryLayout layout) {
  std::vector<int8_t> out(static_cast<size_t>(d.numel()));
  unpack_int8_into(words, out.data(), d, layout);
  return out;
}

}  // namespace vkd

// ---------------------------------------------------------------------------------------
// Strided (float / int32) tensors.

#include <cstring>

#include "core/FloatLayout.h"

namespace vkd {
namespace {

// Calls fn(nchw_index, device_index, run) for every run of `run` elements that are
// consecutive both in NCHW order and on the device (whole width rows of a buffer whose width
// stride is 1, single elements otherwise).
template <typename Fn>
void for_each_run(const Dims4& d, StorageType storage, MemoryLayout layout, Fn fn) {
  if (storage == StorageType::Buffer) {
    const auto s = buffer_strides(layout, d);
    int64_t i = 0;
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t c = 0; c < d.c; ++c)
        for (int64_t h = 0; h < d.h; ++h) {
          const int64_t row = n * s[0] + c * s[1] + h * s[2];
          if (s[3] == 1) {
            fn(i, row, d.w);
            i += d.w;
          } else {
            for (int64_t w = 0; w < d.w; ++w, ++i) fn(i, row + w * s[3], int64_t(1));
          }
        }
    return;
  }
  const TextureExtents e = texture_extents(layout, d);
  const int packed = packed_dim_nchw(layout);
  const int64_t c4 = div_up(d.c, 4);
  int64_t i = 0;
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t c = 0; c < d.c; ++c)
      for (int64_t h = 0; h < d.h; ++h)
        for (int64_t w = 0; w < d.w; ++w, ++i) {
          int64_t x = w, y = h, z = n * d.c + c, comp = 0;
          if (packed == 3) {
            x = w / 4;
            comp = w % 4;
          }
          if (packed == 2) {
            y = h / 4;
            comp = h % 4;
          }
          if (packed == 1) {
            z = n * c4 + c / 4;
            comp = c % 4;
          }
          fn(i, ((z * e.y + y) * e.x + x) * 4 + comp, int64_t(1));
        }
}

}  // namespace

int64_t device_element_count(const Dims4& d, StorageType storage, MemoryLayout layout) {
  if (storage == StorageType::Buffer) return d.numel();
  const TextureExtents e = texture_extents(layout, d);
  return e.x * e.y * e.z * 4;
}

template <typename T>
void pack_strided_into(const T* nchw, T* device, const Dims4& dims, StorageType storage,
                       MemoryLayout layout) {
  const int64_t count = device_element_count(dims, storage, layout);
  // Texture padding components must read 0; a buffer has none.
  if (count != dims.numel()) std::fill(device, device + count, T(0));
  for_each_run(dims, storage, layout, [&](int64_t src, int64_t dst, int64_t run) {
    std::memcpy(device + dst, nchw + src, static_cast<size_t>(run) * sizeof(T));
  });
}

template <typename T>
void unpack_strided_into(const T* device, T* nchw, const Dims4& dims, StorageType storage,
                         MemoryLayout layout) {
  for_each_run(dims, storage, layout, [&](int64_t dst, int64_t src, int64_t run) {
    std::memcpy(nchw + dst, device + src, static_cast<size_t>(run) * sizeof(T));
  });
}

template <typename T>
std::vector<T> pack_strided(const T* nchw, const Dims4& dims, StorageType storage,
                            MemoryLayout layout) {
  std::vector<T> out(static_cast<size_t>(device_element_count(dims, storage, layout)), T(0));
  pack_strided_into(nchw, out.data(), dims, storage, layout);
  return out;
}

template <typename T>
std::vector<T> unpack_strided(const T* device, const Dims4& dims, StorageType storage,
                              MemoryLayout layout) {
  std::vector<T> out(static_cast<size_t>(dims.numel()));
  unpack_strided_into(device, out.data(), dims, storage, layout);
  return out;
}

template std::vector<float> pack_strided(const float*, const Dims4&, StorageType, MemoryLayout);
template std::vector<int32_t> pack_strided(const int32_t*, const Dims4&, StorageType, MemoryLayout);
template std::vector<float> unpack_strided(const float*, const Dims4&, StorageType, MemoryLayout);
template std::vector<int32_t> unpack_strided(const int32_t*, const Dims4&, StorageType,
                                             MemoryLayout);
template void pack_strided_into(const float*, float*, const Dims4&, StorageType, MemoryLayout);
template void pack_strided_into(const int32_t*, int32_t*, const Dims4&, StorageType, MemoryLayout);
template void unpack_strided_into(const float*, float*, const Dims4&, StorageType, MemoryLayout);
template void unpack_strided_into(const int32_t*, int32_t*, const Dims4&, StorageType,
                                  MemoryLayout);

uint16_t to_float16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u)
    return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
  if (abs < 0x38800000u) {  // half subnormal or zero: shift mantissa, round to nearest even
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // value * 2^24 = m * 2^(e - 126)
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    uint32_t result = m >> shift;
    if (rem > half || (rem == half && (result & 1))) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float from_float16(uint16_t bits) {
  const uint32_t sign = (bits & 0x8000u) << 16;
  const uint32_t e = (bits >> 10) & 0x1f, m = bits & 0x3ffu;
  uint32_t x;
  if (e == 0) {
    if (m == 0) {
      x = sign;
    } else {  // subnormal: value = m * 2^-24
      float f = static_cast<float>(m) * (1.0f / 16777216.0f);
      std::memcpy(&x, &f, 4);
      x |= sign;
    }
  } else if (e == 31) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112) << 23) | (m << 13);
  }
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

namespace {

// `bytes` read as `From` elements, each converted by `convert` and stored as a `To`.
template <typename From, typename To>
std::vector<uint8_t> convert_elements(const std::vector<uint8_t>& bytes, To (*convert)(From)) {
  std::vector<uint8_t> out(bytes.size() * sizeof(To) / sizeof(From));
  for (size_t i = 0; i < bytes.size() / sizeof(From); ++i) {
    From x;
    std::memcpy(&x, bytes.data() + sizeof(From) * i, sizeof(From));
    const To y = convert(x);
    std::memcpy(out.data() + sizeof(To) * i, &y, sizeof(To));
  }
  return out;
}

}  // namespace

std::vector<uint8_t> float16_bytes_to_float32(const std::vector<uint8_t>& half) {
  return convert_elements(half, from_float16);
}
std::vector<uint8_t> float32_bytes_to_float16(const std::vector<uint8_t>& single) {
  return convert_elements(single, to_float16);
}

}  // namespace vkd
