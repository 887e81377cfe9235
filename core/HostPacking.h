// CPU pack/unpack between host NCHW arrays and the packed int8x4 layouts. Used for staging
// int8 data, for prepacking constants and as the reference the GPU layouts are tested against.
#pragma once

#include <cstdint>
#include <vector>

#include "core/DType.h"
#include "core/TensorSpec.h"

namespace vkd {

// Packs NCHW int8 values into int32 words; every padding lane/row gets `pad_value`
// (the tensor's zero point).
std::vector<int32_t> pack_int8(const int8_t* nchw, const Dims4& dims, MemoryLayout layout,
                               int8_t pad_value);

// Unpacks words (packed_int8_word_count(layout, dims) of them) back into NCHW int8.
std::vector<int8_t> unpack_int8(const int32_t* words, const Dims4& dims, MemoryLayout layout);
// The same into caller memory (staging, the caller's tensor): `words` holds
// packed_int8_word_count(layout, dims) words, `nchw` dims.numel() values.
void pack_int8_into(const int8_t* nchw, int32_t* words, const Dims4& dims, MemoryLayout layout,
                    int8_t pad_value);
void unpack_int8_into(const int32_t* words, int8_t* nchw, const Dims4& dims, MemoryLayout layout);

// Byte `lane` of `word` as a signed int8.
inline int8_t word_lane(int32_t word, int lane) {
  return static_cast<int8_t>(static_cast<uint32_t>(word) >> (8 * lane));
}

}  // namespace vkd

namespace vkd {

// Host NCHW values <-> the device element order of a non-int8x4 tensor: buffer storage in
// the layout's strides (buffer_strides), texture storage as texels in x-fastest order with 4
// components each (texture_extents; components past the packed dim's end hold 0).
// `T` is float or int32_t (float16 tensors use float here and are converted to half by
// to_float16/from_float16).
template <typename T>
std::vector<T> pack_strided(const T* nchw, const Dims4& dims, StorageType storage,
                            MemoryLayout layout);
template <typename T>
std::vector<T> unpack_strided(const T* device, const Dims4& dims, StorageType storage,
                              MemoryLayout layout);
// The same into caller memory: `device` holds device_element_count() elements, `nchw`
// dims.numel(). Rows that are contiguous on both sides are copied whole.
int64_t device_element_count(const Dims4& dims, StorageType storage, MemoryLayout layout);
template <typename T>
void pack_strided_into(const T* nchw, T* device, const Dims4& dims, StorageType storage,
                       MemoryLayout layout);
template <typename T>
void unpack_strided_into(const T* device, T* nchw, const Dims4& dims, StorageType storage,
                         MemoryLayout layout);

// IEEE half conversions, round to nearest even.
uint16_t to_float16(float value);
float from_float16(uint16_t bits);

// The same over little-endian host data (the APIs exchange float16 tensors as float32):
// widening is exact; narrowing rounds to nearest even (exact for values that came from float16).
std::vector<uint8_t> float16_bytes_to_float32(const std::vector<uint8_t>& half);
std::vector<uint8_t> float32_bytes_to_float16(const std::vector<uint8_t>& single);

}  // namespace vkd
