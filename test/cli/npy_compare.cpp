// npy_compare A.npy B.npy: exit 0 when both hold the same dtype, shape and bytes; else prints
// the difference (the first mismatching elements) and exits 1. Unreadable files exit 2.
#include <cstdio>
#include <cstring>
#include <string>

#include "tools/vkd/Npy.h"

using vkd::cli::NpyArray;
using vkd::cli::NpyDType;

namespace {

std::string element(const NpyArray& a, size_t i) {
  char buf[48];
  if (a.dtype == NpyDType::Float32) {
    float v;
    std::memcpy(&v, a.data.data() + 4 * i, 4);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", v, bits);
  } else if (a.dtype == NpyDType::Int32) {
    int32_t v;
    std::memcpy(&v, a.data.data() + 4 * i, 4);
    std::snprintf(buf, sizeof buf, "%d", v);
  } else {
    std::snprintf(buf, sizeof buf, "%d", static_cast<int>(static_cast<int8_t>(a.data[i])));
  }
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: npy_compare A.npy B.npy\n");
    return 2;
  }
  NpyArray a, b;
  try {
    a = vkd::cli::read_npy(argv[1]);
    b = vkd::cli::read_npy(argv[2]);
  } catch (const vkd::cli::NpyError& e) {
    std::fprintf(stderr, "npy_compare: %s\n", e.what());
    return 2;
  }
  if (a.dtype != b.dtype || a.shape != b.shape) {
    std::fprintf(stderr, "npy_compare: %s is %s %s, %s is %s %s\n", argv[1],
                 vkd::cli::npy_dtype_name(a.dtype), vkd::cli::npy_shape_string(a.shape).c_str(),
                 argv[2], vkd::cli::npy_dtype_name(b.dtype),
                 vkd::cli::npy_shape_string(b.shape).c_str());
    return 1;
  }
  const size_t item = vkd::cli::npy_dtype_size(a.dtype);
  size_t mismatches = 0;
  for (size_t i = 0; i < a.numel(); ++i) {
    if (std::memcmp(a.data.data() + i * item, b.data.data() + i * item, item) != 0) {
      if (++mismatches <= 10) {
        std::fprintf(stderr, "npy_compare: element %zu: %s vs %s\n", i, element(a, i).c_str(),
                     element(b, i).c_str());
      }
    }
  }
  if (mismatches) {
    std::fprintf(stderr, "npy_compare: %zu of %zu elements differ\n", mismatches, a.numel());
    return 1;
  }
  std::printf("npy_compare: %s and %s are identical (%zu elements)\n", argv[1], argv[2], a.numel());
  return 0;
}
