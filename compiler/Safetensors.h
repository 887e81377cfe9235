// Reading and writing safetensors files: the weights a graph IR file names in `data`.
//
// Format: an 8-byte little-endian header length N, N bytes of JSON header, then the data
// section. The header maps tensor names to {"dtype": "F32", "shape": [..], "data_offsets":
// [begin, end]} (offsets relative to the data section, end exclusive) and may hold a
// "__metadata__" object of string -> string. Everything is validated on read; every error is
// vkd::Error(InvalidArgument) naming the file and, where there is one, the tensor and field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace vkd::compiler {

// Bytes per element of a safetensors dtype ("F32" -> 4, "I8" -> 1, "BOOL" -> 1, ...); 0 when
// the dtype is unknown. Known: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL F8_E4M3
// F8_E5M2.
size_t safetensors_element_size(const std::string& dtype);

// One tensor of a file that was read: a view into the file's bytes (valid while the
// SafetensorsFile lives).
struct SafetensorsTensorView {
  std::string name;
  std::string dtype;           // "F32", "I8", "I32", "I64", ...
  std::vector<int64_t> shape;  // may be empty (a scalar)
  const uint8_t* data = nullptr;
  size_t nbytes = 0;  // element_count(shape) * element size
  std::vector<uint8_t> bytes() const { return std::vector<uint8_t>(data, data + nbytes); }
};

class SafetensorsFile {
 public:
  // Reads and validates a file. A missing or unreadable file: InvalidArgument naming the path.
  static SafetensorsFile read(const std::string& path);
  // Validates an in-memory image of a file; `source_name` prefixes the messages.
  static SafetensorsFile from_bytes(std::vector<uint8_t> bytes, const std::string& source_name);

  const std::string& source_name() const { return source_name_; }
  // Tensor names in header order.
  const std::vector<std::string>& names() const { return names_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const SafetensorsTensorView* find(const std::string& name) const;  // nullptr when absent
  // Throws InvalidArgument naming the file and the tensor when absent.
  const SafetensorsTensorView& get(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::string source_name_;
  std::shared_ptr<const std::vector<uint8_t>> bytes_;  // the whole file; views point into it
  std::vector<std::string> names_;
  std::map<std::string, SafetensorsTensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A tensor to write.
struct SafetensorsTensor {
  std::string name;
  std::string dtype;  // a known safetensors dtype
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // little-endian, row-major; size must be numel * element size
};

// The bytes of a safetensors file holding `tensors` in the given order (contiguous, no
// padding between tensors; the header is padded with spaces to a multiple of 8 bytes).
// Throws InvalidArgument on an unknown dtype, a size mismatch or a duplicate name.
std::vector<uint8_t> serialize_safetensors(const std::vector<SafetensorsTensor>& tensors,
                                           const std::map<std::string, std::string>& metadata = {});
// serialize_safetensors() written to `path` (InvalidArgument naming the path if it cannot be).
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace vkd::compiler
