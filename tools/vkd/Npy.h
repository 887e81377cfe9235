// .npy files (NumPy's array format) for the vkd CLI: read and write the three host dtypes the
// delegate exchanges (float32, int8, int32) and float16 (the file form of float16 model tensors,
// which the delegate exchanges as float32), little-endian, C order.
//
// Format (numpy.lib.format): magic "\x93NUMPY", major and minor version bytes, the header length
// (uint16 little-endian for version 1.0, uint32 for 2.0 and 3.0), then the header: a Python
// dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (1, 5), } padded with spaces
// and ended by '\n' so that the data starts on a multiple of 64 bytes. The data follows.
//
// Pure C++, no Vulkan and no delegate: the CLI tests link it on their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace vkd::cli {

// Int64: token ids as torch and HF tokenizers give them, read only (narrowed to an int32 input).
enum class NpyDType { Float32, Int8, Int32, Float16, Int64 };

const char* npy_dtype_name(NpyDType dtype);   // "float32", "int8", "int32", "float16", "int64"
const char* npy_dtype_descr(NpyDType dtype);  // "<f4", "|i1", "<i4", "<f2", "<i8"
size_t npy_dtype_size(NpyDType dtype);

struct NpyArray {
  NpyDType dtype = NpyDType::Float32;
  std::vector<int64_t> shape;  // C order; empty = a 0-d array (one element)
  std::vector<uint8_t> data;   // numel() * npy_dtype_size(dtype) bytes, little-endian

  size_t numel() const;
};

// Every failure: the message starts with the source (file path) and says what is wrong.
class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses a whole .npy image. `source` names it in error messages. Accepts format versions 1.0,
// 2.0 and 3.0 and the dtypes '<f4', '<f2', '<i4', '<i8' and int8 ('|i1'; '<i1' and '>i1' are the
// same bytes); rejects fortran_order True, big-endian and other dtypes, a data size that differs
// from the shape's (truncated or trailing bytes), and any malformed header.
NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& source);
// parse_npy() of a file, which must be a regular file (not a device or FIFO: Files.h). Reads the
// header (at most kMaxNpyHeaderBytes), then only the data bytes it announces, and only once the
// file's size says they are there: no read is unbounded.
NpyArray read_npy(const std::string& path);
inline constexpr uint64_t kMaxNpyHeaderBytes = 1u << 20;

// The .npy image of `array`. `major_version` 1, 2 or 3; 0 picks 1.0 unless the header needs more
// than 65535 bytes (then 2.0). The data starts on a 64-byte boundary.
std::vector<uint8_t> encode_npy(const NpyArray& array, int major_version = 0);
// encode_npy() written to `path` (NpyError naming the path when it cannot be). For test
// fixtures; `vkd run` writes its outputs atomically (tools/vkd/Files.h).
void write_npy(const std::string& path, const NpyArray& array);

// "(1, 5, 7, 9)" as NumPy prints a shape; "(5,)" for rank 1, "()" for rank 0.
std::string npy_shape_string(const std::vector<int64_t>& shape);

}  // namespace vkd::cli
