// XXH64, the 64-bit xxHash of Yann Collet, written here from its specification
// (github.com/Cyan4973/xxHash, doc/xxhash_spec.md): what the blob's checksums and the graph IR
// hash it records are made of. Fast (a few GB/s on one core, so verifying a blob costs little
// next to loading it), not cryptographic: it catches corruption and names a different graph,
// it does not resist a forger. Tested against the published test vectors of xxHash's own
// sanity check (test/unit/test_serialization.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace vkd::serialization {

// Streaming form: update() with the pieces in order gives the same digest as one call on their
// concatenation.
class Xxh64 {
 public:
  explicit Xxh64(uint64_t seed = 0);
  void update(const void* data, size_t size);
  void update_u64(uint64_t v);  // its 8 little-endian bytes
  uint64_t digest() const;      // the state is unchanged: more updates may follow

 private:
  uint64_t acc_[4];
  uint64_t seed_;
  uint64_t total_ = 0;
  uint8_t buffer_[32];  // an incomplete 32-byte stripe
  size_t buffered_ = 0;
};

uint64_t xxh64(const void* data, size_t size, uint64_t seed = 0);

// "0x" and 16 hex digits: how messages print a hash or checksum.
std::string hash_string(uint64_t hash);

}  // namespace vkd::serialization
