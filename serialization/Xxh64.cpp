#include "serialization/Xxh64.h"

#include <cstdio>
#include <cstring>

namespace vkd::serialization {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ull;

constexpr uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Little-endian loads whatever the host, spelled so that compilers make each one load (the
// stripe loop is the whole cost of hashing).
inline uint64_t read32(const uint8_t* p) {
  return uint64_t{p[0]} | uint64_t{p[1]} << 8 | uint64_t{p[2]} << 16 | uint64_t{p[3]} << 24;
}
inline uint64_t read64(const uint8_t* p) {
  return uint64_t{p[0]} | uint64_t{p[1]} << 8 | uint64_t{p[2]} << 16 | uint64_t{p[3]} << 24 |
         uint64_t{p[4]} << 32 | uint64_t{p[5]} << 40 | uint64_t{p[6]} << 48 | uint64_t{p[7]} << 56;
}

// One lane into one accumulator (the spec's "round").
constexpr uint64_t round(uint64_t acc, uint64_t lane) {
  return rotl(acc + lane * kPrime2, 31) * kPrime1;
}

constexpr uint64_t merge(uint64_t acc, uint64_t lane_acc) {
  return (acc ^ round(0, lane_acc)) * kPrime1 + kPrime4;
}

// A whole 32-byte stripe: one 8-byte lane into each accumulator.
inline void stripe(uint64_t acc[4], const uint8_t* p) {
  for (int i = 0; i < 4; ++i) acc[i] = round(acc[i], read64(p + 8 * i));
}

}  // namespace

Xxh64::Xxh64(uint64_t seed)
    : acc_{seed + kPrime1 + kPrime2, seed + kPrime2, seed, seed - kPrime1}, seed_(seed) {}

void Xxh64::update(const void* data, size_t size) {
  if (size == 0) return;  // (data may be null then)
  const auto* p = static_cast<const uint8_t*>(data);
  total_ += size;
  if (buffered_ > 0) {
    const size_t take = size < 32 - buffered_ ? size : 32 - buffered_;
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    size -= take;
    if (buffered_ < 32) return;
    stripe(acc_, buffer_);
    buffered_ = 0;
  }
  for (; size >= 32; p += 32, size -= 32) stripe(acc_, p);
  if (size > 0) std::memcpy(buffer_, p, size);
  buffered_ = size;
}

void Xxh64::update_u64(uint64_t v) {
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(v >> (8 * i));
  update(bytes, sizeof bytes);
}

uint64_t Xxh64::digest() const {
  uint64_t h;
  if (total_ >= 32) {
    h = rotl(acc_[0], 1) + rotl(acc_[1], 7) + rotl(acc_[2], 12) + rotl(acc_[3], 18);
    for (const uint64_t a : acc_) h = merge(h, a);
  } else {
    h = seed_ + kPrime5;
  }
  h += total_;
  // The last total % 32 bytes: 8 at a time, then 4, then one by one.
  const uint8_t* p = buffer_;
  size_t left = buffered_;
  for (; left >= 8; p += 8, left -= 8) h = rotl(h ^ round(0, read64(p)), 27) * kPrime1 + kPrime4;
  if (left >= 4) {
    h = rotl(h ^ (read32(p) * kPrime1), 23) * kPrime2 + kPrime3;
    p += 4;
    left -= 4;
  }
  for (; left > 0; ++p, --left) h = rotl(h ^ (*p * kPrime5), 11) * kPrime1;
  // Avalanche.
  h = (h ^ (h >> 33)) * kPrime2;
  h = (h ^ (h >> 29)) * kPrime3;
  return h ^ (h >> 32);
}

uint64_t xxh64(const void* data, size_t size, uint64_t seed) {
  Xxh64 h(seed);
  h.update(data, size);
  return h.digest();
}

std::string hash_string(uint64_t hash) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace vkd::serialization
