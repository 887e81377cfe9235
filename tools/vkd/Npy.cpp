#include "tools/vkd/Npy.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "tools/vkd/Files.h"

namespace vkd::cli {
namespace {

constexpr char kMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kAlignment = 64;

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw NpyError(source + ": " + what);
}

// Minimal reader for the header dict: string keys and values, True/False, tuples of integers.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& source) : s_(text), source_(source) {}

  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool at_end() {
    skip_space();
    return pos_ >= s_.size();
  }
  char peek() {
    skip_space();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  void expect(char c, const char* where) {
    if (peek() != c) {
      bad(std::string("expected '") + c + "' " + where);
    }
    ++pos_;
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  std::string string_literal(const char* what) {
    const char q = peek();
    if (q != '\'' && q != '"') bad(std::string("expected a quoted string for ") + what);
    ++pos_;
    const size_t end = s_.find(q, pos_);
    if (end == std::string::npos) bad(std::string("unterminated string for ") + what);
    std::string out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  bool boolean(const char* what) {
    skip_space();
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    bad(std::string("expected True or False for ") + what);
  }
  std::vector<int64_t> int_tuple() {
    expect('(', "to open 'shape'");
    std::vector<int64_t> dims;
    while (!accept(')')) {
      skip_space();
      const size_t start = pos_;
      int64_t v = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        const int digit = s_[pos_] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10)
          bad("shape dimension too large");
        v = v * 10 + digit;
        ++pos_;
      }
      if (pos_ == start) bad("expected a non-negative integer in 'shape'");
      // NumPy writes Python ints; an 'L' suffix comes from Python 2 writers.
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;
      dims.push_back(v);
      if (!accept(',')) {
        // "(5)" is the integer 5 in Python, not a tuple; NumPy writes "(5,)".
        if (dims.size() == 1) bad("'shape' is not a tuple (a 1-element tuple is written (5,))");
        expect(')', "to close 'shape'");
        break;
      }
    }
    return dims;
  }
  [[noreturn]] void bad(const std::string& what) const {
    fail(source_,
         "malformed .npy header (" + what + " at offset " + std::to_string(pos_) + "): " + s_);
  }

 private:
  const std::string& s_;
  const std::string& source_;
  size_t pos_ = 0;
};

uint32_t load_le(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

const char* npy_dtype_name(NpyDType dtype) {
  switch (dtype) {
    case NpyDType::Float32: return "float32";
    case NpyDType::Int8: return "int8";
    case NpyDType::Int32: return "int32";
    case NpyDType::Float16: return "float16";
    case NpyDType::Int64: return "int64";
  }
  return "?";
}

const char* npy_dtype_descr(NpyDType dtype) {
  switch (dtype) {
    case NpyDType::Float32: return "<f4";
    case NpyDType::Int8: return "|i1";
    case NpyDType::Int32: return "<i4";
    case NpyDType::Float16: return "<f2";
    case NpyDType::Int64: return "<i8";
  }
  return "?";
}

size_t npy_dtype_size(NpyDType dtype) {
  switch (dtype) {
    case NpyDType::Int8: return 1;
    case NpyDType::Float16: return 2;
    case NpyDType::Float32:
    case NpyDType::Int32: return 4;
    case NpyDType::Int64: return 8;
  }
  return 4;
}

size_t NpyArray::numel() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

std::string npy_shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

namespace {

// What the preamble and the header say; the data follows at data_offset.
struct NpyHeader {
  NpyDType dtype = NpyDType::Float32;
  std::vector<int64_t> shape;
  size_t data_offset = 0;
  uint64_t data_bytes = 0;
};

constexpr size_t kMaxPreamble = 12;  // magic, version, 4-byte header length (2.0, 3.0)

// The end of the header (preamble + header length) from the first bytes of the file, which
// must hold the whole preamble.
uint64_t header_end(const uint8_t* bytes, size_t size, const std::string& source) {
  if (size < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0) {
    fail(source, "not a .npy file (no \\x93NUMPY magic at the start)");
  }
  if (size < 8) {
    fail(source,
         "truncated .npy file (" + std::to_string(size) + " bytes, the version bytes are cut)");
  }
  const int major = bytes[6], minor = bytes[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    fail(source, "unsupported .npy format version " + std::to_string(major) + "." +
                     std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t prefix = 8 + len_bytes;
  if (size < prefix) {
    fail(source, "truncated .npy file (" + std::to_string(size) +
                     " bytes, the header length field is cut)");
  }
  return prefix + load_le(bytes + 8, static_cast<int>(len_bytes));
}

// Parses the preamble and the header; `bytes` holds at least everything up to header_end()
// unless the file is shorter.
NpyHeader parse_header(const uint8_t* bytes, size_t size, const std::string& source) {
  const uint64_t end = header_end(bytes, size, source);
  const size_t prefix = bytes[6] == 1 ? 10 : 12;
  const uint64_t header_len = end - prefix;
  if (header_len > size - prefix) {
    fail(source, "truncated .npy header: " + std::to_string(header_len) +
                     " header bytes announced, the file has " + std::to_string(size - prefix) +
                     " after the preamble");
  }
  const std::string header(reinterpret_cast<const char*>(bytes + prefix), header_len);
  if (header.empty() || header.back() != '\n') {
    fail(source, "malformed .npy header (does not end with a newline)");
  }

  HeaderParser p(header, source);
  std::string descr;
  bool have_descr = false, have_fortran = false, have_shape = false, fortran = false;
  std::vector<int64_t> shape;
  p.expect('{', "at the start of the header dict");
  while (!p.accept('}')) {
    const std::string key = p.string_literal("a key");
    p.expect(':', "after a key");
    if (key == "descr") {
      if (p.peek() == '[') {
        fail(source,
             "unsupported dtype: structured arrays are not supported (supported: "
             "'<f4' float32, '<f2' float16, '|i1' int8, '<i4' int32)");
      }
      descr = p.string_literal("'descr'");
      have_descr = true;
    } else if (key == "fortran_order") {
      fortran = p.boolean("'fortran_order'");
      have_fortran = true;
    } else if (key == "shape") {
      shape = p.int_tuple();
      have_shape = true;
    } else {
      p.bad("unexpected key '" + key + "'");
    }
    if (!p.accept(',')) {
      p.expect('}', "to close the header dict");
      break;
    }
  }
  if (!p.at_end()) p.bad("text after the header dict");
  if (!have_descr || !have_fortran || !have_shape) {
    fail(source, std::string("malformed .npy header (missing '") +
                     (!have_descr     ? "descr"
                      : !have_fortran ? "fortran_order"
                                      : "shape") +
                     "' key): " + header);
  }

  NpyHeader out;
  if (descr == "<f4") {
    out.dtype = NpyDType::Float32;
  } else if (descr == "<f2") {
    out.dtype = NpyDType::Float16;
  } else if (descr == "<i4") {
    out.dtype = NpyDType::Int32;
  } else if (descr == "<i8") {
    out.dtype = NpyDType::Int64;
  } else if (descr == "|i1" || descr == "<i1" || descr == ">i1" || descr == "i1" ||
             descr == "=i1") {
    out.dtype = NpyDType::Int8;
  } else if (descr == ">f4" || descr == ">f2" || descr == ">i4" || descr == ">i8") {
    fail(source, "big-endian dtype '" + descr + "' is not supported (write it little-endian: '<" +
                     descr.substr(1) + "', e.g. arr.astype('<" + descr.substr(1) + "'))");
  } else {
    fail(source,
         "unsupported dtype '" + descr +
             "' (supported: '<f4' float32, '<f2' float16, '|i1' int8, '<i4' int32, '<i8' int64)");
  }
  if (fortran) {
    fail(source,
         "fortran_order True is not supported (save a C-ordered array, e.g. "
         "np.save(path, np.ascontiguousarray(arr)))");
  }

  uint64_t need = npy_dtype_size(out.dtype);
  for (int64_t d : shape) {
    if (d != 0 && need > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
      fail(source, "shape " + npy_shape_string(shape) + " is too large");
    }
    need *= static_cast<uint64_t>(d);
  }
  out.shape = std::move(shape);
  out.data_offset = static_cast<size_t>(end);
  out.data_bytes = need;
  return out;
}

// The data size the header announces against the `have` bytes the file holds after it.
void check_data_size(const NpyHeader& h, uint64_t have, const std::string& source) {
  if (have < h.data_bytes) {
    fail(source, "truncated data: shape " + npy_shape_string(h.shape) + " " +
                     npy_dtype_name(h.dtype) + " needs " + std::to_string(h.data_bytes) +
                     " bytes after the " + std::to_string(h.data_offset) +
                     "-byte header, the file has " + std::to_string(have));
  }
  if (have > h.data_bytes) {
    fail(source, std::to_string(have - h.data_bytes) + " unexpected bytes after the data (shape " +
                     npy_shape_string(h.shape) + " " + npy_dtype_name(h.dtype) + " is " +
                     std::to_string(h.data_bytes) + " bytes)");
  }
}

}  // namespace

NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& source) {
  NpyHeader h = parse_header(bytes, size, source);
  check_data_size(h, size - h.data_offset, source);
  NpyArray out;
  out.dtype = h.dtype;
  out.shape = std::move(h.shape);
  out.data.assign(bytes + h.data_offset, bytes + size);
  return out;
}

// Reads no more than the header announces: the preamble, the header (up to kMaxNpyHeaderBytes),
// then exactly the data bytes, once the file's size says they are all there.
NpyArray read_npy(const std::string& path) {
  try {
    InputFile file(path);
    std::vector<uint8_t> image = file.read(kMaxPreamble);
    const uint64_t end = header_end(image.data(), image.size(), path);
    if (end > kMaxNpyHeaderBytes) {
      fail(path, "the header announces " + std::to_string(end) + " bytes, more than the " +
                     std::to_string(kMaxNpyHeaderBytes) + " accepted");
    }
    if (end > image.size()) {
      const std::vector<uint8_t> rest = file.read(end - image.size());
      image.insert(image.end(), rest.begin(), rest.end());
    }
    NpyHeader h = parse_header(image.data(), image.size(), path);
    check_data_size(h, file.size() > h.data_offset ? file.size() - h.data_offset : 0, path);
    NpyArray out;
    out.dtype = h.dtype;
    out.shape = std::move(h.shape);
    out.data = file.read(h.data_bytes);
    if (out.data.size() != h.data_bytes) fail(path, "the file shrank while it was read");
    return out;
  } catch (const InputFileError& e) {
    fail(path, std::string("cannot read: ") + e.what());
  }
}

void write_npy(const std::string& path, const NpyArray& array) {
  const std::vector<uint8_t> bytes = encode_npy(array);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) fail(path, std::string("cannot write: ") + std::strerror(errno));
}

std::vector<uint8_t> encode_npy(const NpyArray& array, int major_version) {
  if (array.data.size() != array.numel() * npy_dtype_size(array.dtype)) {
    throw NpyError("encode_npy: " + std::to_string(array.data.size()) + " data bytes for shape " +
                   npy_shape_string(array.shape) + " " + npy_dtype_name(array.dtype));
  }
  std::string dict = std::string("{'descr': '") + npy_dtype_descr(array.dtype) +
                     "', 'fortran_order': False, 'shape': " + npy_shape_string(array.shape) + ", }";
  auto padded_len = [&](size_t prefix) {
    // dict + spaces + '\n', so that prefix + header is a multiple of kAlignment.
    const size_t unpadded = prefix + dict.size() + 1;
    return dict.size() + 1 + (kAlignment - unpadded % kAlignment) % kAlignment;
  };
  int major = major_version;
  if (major == 0) major = padded_len(10) <= 0xFFFF ? 1 : 2;
  if (major < 1 || major > 3)
    throw NpyError("encode_npy: bad format version " + std::to_string(major));
  const size_t prefix = major == 1 ? 10 : 12;
  const size_t header_len = padded_len(prefix);
  if (major == 1 && header_len > 0xFFFF) {
    throw NpyError("encode_npy: header of " + std::to_string(header_len) +
                   " bytes does not fit format 1.0");
  }

  // Built from the magic (GCC 12 warns falsely about inserting into a reserved empty vector).
  std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
  out.reserve(prefix + header_len + array.data.size());
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  for (size_t i = 0; i < prefix - 8; ++i)
    out.push_back(static_cast<uint8_t>(header_len >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), header_len - dict.size() - 1, ' ');
  out.push_back('\n');
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

}  // namespace vkd::cli
