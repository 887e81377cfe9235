// tools/vkd/Npy: round trips of every dtype and rank through every header version, the header
// padding the .npy spec asks for, headers as other writers produce them, and one test per
// malformed-file error (each must name the file and the problem).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tools/vkd/Npy.h"

namespace vkd::cli {
namespace {

using Bytes = std::vector<uint8_t>;

NpyArray make(NpyDType dtype, std::vector<int64_t> shape) {
  NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.data.resize(a.numel() * npy_dtype_size(dtype));
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(i * 37 + 11);
  return a;
}

size_t header_end(const Bytes& b) {
  const size_t prefix = b[6] == 1 ? 10 : 12;
  size_t len = b[8] | (b[9] << 8);
  if (b[6] != 1) len |= (static_cast<size_t>(b[10]) << 16) | (static_cast<size_t>(b[11]) << 24);
  return prefix + len;
}

// A file with the given version and header text: `pad_to` aligns the data like NumPy does
// (64 now, 16 in old versions); 0 leaves the header as it is (it must end with '\n' itself).
Bytes raw_npy(int major, int minor, std::string header, const Bytes& data, size_t pad_to = 64) {
  const size_t prefix = major == 1 ? 10 : 12;
  if (pad_to) {
    const size_t unpadded = prefix + header.size() + 1;
    header += std::string((pad_to - unpadded % pad_to) % pad_to, ' ') + "\n";
  }
  Bytes b = {
      0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), static_cast<uint8_t>(minor)};
  for (size_t i = 0; i < prefix - 8; ++i)
    b.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

Bytes floats_bytes(size_t n) { return Bytes(n * 4, 0x3f); }

// The message of the NpyError parse_npy throws (fails the test when none is thrown).
std::string parse_error(const Bytes& b, const std::string& source = "in.npy") {
  try {
    parse_npy(b.data(), b.size(), source);
  } catch (const NpyError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for a malformed file";
  return "";
}

#define EXPECT_NPY_ERROR(bytes, fragment)                      \
  do {                                                         \
    const std::string msg_ = parse_error(bytes);               \
    EXPECT_EQ(msg_.rfind("in.npy: ", 0), 0u) << msg_;          \
    EXPECT_NE(msg_.find(fragment), std::string::npos) << msg_; \
  } while (0)

// ---------------------------------------------------------------------------------------------
TEST(Npy, RoundTripEveryDtypeRankAndVersion) {
  const std::vector<std::vector<int64_t>> shapes = {{7}, {3, 5}, {2, 3, 5}, {1, 5, 7, 9}};
  for (NpyDType dtype :
       {NpyDType::Float32, NpyDType::Int8, NpyDType::Int32, NpyDType::Float16, NpyDType::Int64}) {
    for (const auto& shape : shapes) {
      for (int version : {1, 2, 3}) {
        SCOPED_TRACE(std::string(npy_dtype_name(dtype)) + " " + npy_shape_string(shape) + " v" +
                     std::to_string(version));
        const NpyArray a = make(dtype, shape);
        const Bytes b = encode_npy(a, version);
        EXPECT_EQ(b[6], version);
        EXPECT_EQ(b[7], 0);
        const NpyArray r = parse_npy(b.data(), b.size(), "rt.npy");
        EXPECT_EQ(r.dtype, a.dtype);
        EXPECT_EQ(r.shape, a.shape);
        EXPECT_EQ(r.data, a.data);
        const std::string header(b.begin() + (version == 1 ? 10 : 12), b.begin() + header_end(b));
        EXPECT_NE(header.find(std::string("'descr': '") + npy_dtype_descr(dtype) + "'"),
                  std::string::npos)
            << header;
        EXPECT_NE(header.find("'shape': " + npy_shape_string(shape)), std::string::npos) << header;
      }
    }
  }
}

TEST(Npy, DefaultVersionIsOneAndZeroDimArraysRoundTrip) {
  const NpyArray a = make(NpyDType::Float32, {});
  const Bytes b = encode_npy(a);
  EXPECT_EQ(b[6], 1);
  const NpyArray r = parse_npy(b.data(), b.size(), "scalar.npy");
  EXPECT_TRUE(r.shape.empty());
  EXPECT_EQ(r.data.size(), 4u);
  EXPECT_NE(std::string(b.begin(), b.end()).find("'shape': ()"), std::string::npos);
}

TEST(Npy, RankOneShapeIsWrittenAsOneTuple) {
  EXPECT_EQ(npy_shape_string({5}), "(5,)");
  EXPECT_EQ(npy_shape_string({1, 5, 7, 9}), "(1, 5, 7, 9)");
  EXPECT_EQ(npy_shape_string({}), "()");
}

TEST(Npy, HeaderIsPaddedSoDataStartsOn64Bytes) {
  for (int version : {1, 2, 3}) {
    for (int rank = 1; rank <= 4; ++rank) {
      for (int64_t big : {1, 12345, 1234567}) {
        std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
        shape[0] = big;
        const Bytes b = encode_npy(make(NpyDType::Int8, shape), version);
        const size_t end = header_end(b);
        EXPECT_EQ(end % 64, 0u) << "v" << version << " " << npy_shape_string(shape);
        EXPECT_EQ(b[end - 1], '\n');
        // Padding is spaces between the dict and the newline; the newline is the only one.
        const std::string header(b.begin() + (version == 1 ? 10 : 12), b.begin() + end);
        EXPECT_EQ(header.find('\n'), header.size() - 1);
        const size_t close = header.rfind('}');
        EXPECT_EQ(header.find_first_not_of(' ', close + 1), header.size() - 1);
        EXPECT_EQ(b.size() - end, static_cast<size_t>(big));
      }
    }
  }
}

TEST(Npy, LengthFieldIsTwoBytesInV1AndFourInV2) {
  const NpyArray a = make(NpyDType::Int32, {2, 3});
  const Bytes v1 = encode_npy(a, 1), v2 = encode_npy(a, 2);
  // The 59-character dict does not fit 64 - 10 bytes, so preamble + header take two blocks.
  EXPECT_EQ(v1.size() - 24, 128u);
  EXPECT_EQ(v1[8] | (v1[9] << 8), 118);
  EXPECT_EQ(v2.size() - 24, 128u);
  EXPECT_EQ(v2[8] | (v2[9] << 8) | (v2[10] << 16) | (v2[11] << 24), 116);
}

TEST(Npy, HugeHeaderSwitchesToV2AndV1Refuses) {
  // 25000 dims of 1: a header longer than the 65535 bytes a v1 length field holds.
  const NpyArray a = make(NpyDType::Int8, std::vector<int64_t>(25000, 1));
  const Bytes b = encode_npy(a);
  EXPECT_EQ(b[6], 2);
  EXPECT_EQ(header_end(b) % 64, 0u);
  EXPECT_EQ(parse_npy(b.data(), b.size(), "huge.npy").shape.size(), 25000u);
  EXPECT_THROW(encode_npy(a, 1), NpyError);
}

TEST(Npy, ReadsHeadersAsOtherWritersMakeThem) {
  const Bytes data = floats_bytes(6);
  // Old NumPy: 16-byte alignment; keys in another order; double quotes; no trailing comma;
  // Python 2 long suffix; int8 with the '<' byte order mark.
  const std::vector<std::string> headers = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}",
      "{'descr':'<f4','fortran_order':False,'shape':(2L, 3L),}",
  };
  for (size_t pad : {size_t{16}, size_t{64}}) {
    for (const auto& h : headers) {
      const Bytes b = raw_npy(1, 0, h, data, pad);
      const NpyArray r = parse_npy(b.data(), b.size(), "other.npy");
      EXPECT_EQ(r.dtype, NpyDType::Float32) << h;
      EXPECT_EQ(r.shape, (std::vector<int64_t>{2, 3})) << h;
    }
  }
  const Bytes i8 =
      raw_npy(3, 0, "{'descr': '<i1', 'fortran_order': False, 'shape': (4,), }", Bytes(4, 0xff));
  EXPECT_EQ(parse_npy(i8.data(), i8.size(), "i8.npy").dtype, NpyDType::Int8);
}

// --- malformed files --------------------------------------------------------------------------
TEST(NpyErrors, BadMagic) {
  Bytes b = encode_npy(make(NpyDType::Float32, {2}));
  b[1] = 'X';
  EXPECT_NPY_ERROR(b, "not a .npy file");
  EXPECT_NPY_ERROR(Bytes{}, "not a .npy file");
}

TEST(NpyErrors, TruncatedPreamble) {
  const Bytes b = encode_npy(make(NpyDType::Float32, {2}));
  EXPECT_NPY_ERROR(Bytes(b.begin(), b.begin() + 7), "truncated .npy file");
  EXPECT_NPY_ERROR(Bytes(b.begin(), b.begin() + 9), "header length field is cut");
}

TEST(NpyErrors, UnsupportedVersion) {
  const std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  EXPECT_NPY_ERROR(raw_npy(4, 0, h, floats_bytes(1)), "unsupported .npy format version 4.0");
  EXPECT_NPY_ERROR(raw_npy(1, 1, h, floats_bytes(1)), "unsupported .npy format version 1.1");
}

TEST(NpyErrors, TruncatedHeader) {
  const Bytes b = encode_npy(make(NpyDType::Float32, {2}));
  EXPECT_NPY_ERROR(Bytes(b.begin(), b.begin() + 40), "truncated .npy header");
}

TEST(NpyErrors, HeaderWithoutNewline) {
  const Bytes b = raw_npy(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }  ",
                          floats_bytes(1), 0);
  EXPECT_NPY_ERROR(b, "does not end with a newline");
}

TEST(NpyErrors, FortranOrder) {
  const Bytes b =
      raw_npy(1, 0, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", floats_bytes(6));
  EXPECT_NPY_ERROR(b, "fortran_order True is not supported");
}

TEST(NpyErrors, BigEndian) {
  EXPECT_NPY_ERROR(
      raw_npy(1, 0, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", floats_bytes(2)),
      "big-endian dtype '>f4'");
  EXPECT_NPY_ERROR(
      raw_npy(1, 0, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", floats_bytes(2)),
      "big-endian dtype '>i4'");
  EXPECT_NPY_ERROR(
      raw_npy(1, 0, "{'descr': '>f2', 'fortran_order': False, 'shape': (2,), }", floats_bytes(1)),
      "big-endian dtype '>f2'");
  EXPECT_NPY_ERROR(
      raw_npy(1, 0, "{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }", floats_bytes(4)),
      "big-endian dtype '>i8'");
}

TEST(NpyErrors, OtherDtypes) {
  // ('<i8' is read: token ids, narrowed to an int32 input by vkd run.)
  for (const char* descr : {"<f8", "<i2", "<u1", "|u1", "|f2", "|b1", "<u8", "|O"}) {
    const Bytes b = raw_npy(
        1, 0, std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (2,), }",
        floats_bytes(4));
    EXPECT_NPY_ERROR(b, std::string("unsupported dtype '") + descr + "'");
  }
  const Bytes structured = raw_npy(
      1, 0, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", floats_bytes(2));
  EXPECT_NPY_ERROR(structured, "structured arrays are not supported");
}

TEST(NpyErrors, TruncatedData) {
  const Bytes b = encode_npy(make(NpyDType::Float32, {1, 5, 7, 9}));
  const std::string msg = parse_error(Bytes(b.begin(), b.end() - 3));
  EXPECT_NE(msg.find("truncated data: shape (1, 5, 7, 9) float32 needs 1260 bytes after the "
                     "128-byte header, the file has 1257"),
            std::string::npos)
      << msg;
}

TEST(NpyErrors, TrailingData) {
  Bytes b = encode_npy(make(NpyDType::Int8, {3}));
  b.push_back(0);
  EXPECT_NPY_ERROR(b, "1 unexpected bytes after the data");
}

TEST(NpyErrors, MalformedHeaders) {
  const Bytes d = floats_bytes(2);
  EXPECT_NPY_ERROR(raw_npy(1, 0, "{'descr': '<f4', 'fortran_order': False}", d),
                   "missing 'shape' key");
  EXPECT_NPY_ERROR(raw_npy(1, 0, "{'descr': '<f4', 'shape': (2,)}", d),
                   "missing 'fortran_order' key");
  EXPECT_NPY_ERROR(
      raw_npy(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", d),
      "unexpected key 'x'");
  EXPECT_NPY_ERROR(raw_npy(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", d),
                   "'shape' is not a tuple");
  EXPECT_NPY_ERROR(raw_npy(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", d),
                   "expected a non-negative integer");
  EXPECT_NPY_ERROR(raw_npy(1, 0, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", d),
                   "expected True or False");
  EXPECT_NPY_ERROR(raw_npy(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", d),
                   "text after the header dict");
  EXPECT_NPY_ERROR(raw_npy(1, 0, "['descr', '<f4']", d), "expected '{'");
  EXPECT_NPY_ERROR(raw_npy(1, 0, "{'descr: '<f4'}", d), "malformed .npy header");
  EXPECT_NPY_ERROR(raw_npy(1, 0,
                           "{'descr': '<f4', 'fortran_order': False, "
                           "'shape': (99999999999, 99999999999, 99999999999)}",
                           d),
                   "too large");
}

// The NpyError read_npy throws for `path` (fails the test when none is thrown).
std::string read_error(const std::string& path) {
  try {
    read_npy(path);
  } catch (const NpyError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error reading " << path;
  return "";
}

void write_bytes(const std::string& path, const Bytes& b) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

TEST(NpyErrors, FilesNameThemselves) {
  const std::string missing = ::testing::TempDir() + "vkd_no_such_file.npy";
  EXPECT_EQ(read_error(missing), missing + ": cannot read: no such file");
  EXPECT_EQ(read_error(::testing::TempDir()),
            ::testing::TempDir() + ": cannot read: it is a directory");
  // A file on disk goes through the same checks.
  const std::string path = ::testing::TempDir() + "vkd_truncated.npy";
  const Bytes b = encode_npy(make(NpyDType::Int32, {4}));
  write_bytes(path, Bytes(b.begin(), b.end() - 3));
  EXPECT_EQ(read_error(path).rfind(path + ": truncated data", 0), 0u) << read_error(path);
  write_bytes(path, [&] {
    Bytes t = b;
    t.push_back(0);
    return t;
  }());
  EXPECT_EQ(read_error(path).rfind(path + ": 1 unexpected bytes after the data", 0), 0u);
  std::remove(path.c_str());
}

// Only regular files are read: /dev/zero (endless) and a FIFO without a writer (would block)
// are refused at once, naming the file and what it is.
TEST(NpyErrors, NonRegularFilesAreRefusedWithoutReading) {
  EXPECT_EQ(read_error("/dev/zero"),
            "/dev/zero: cannot read: it is a character device, not a regular file");
  const std::string fifo = ::testing::TempDir() + "vkd_npy_fifo";
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(read_error(fifo),
            fifo + ": cannot read: it is a FIFO (named pipe), not a regular file");
  std::remove(fifo.c_str());
}

// What is read is capped by the header: a header announcing far more data than the file has is
// "truncated" (found from the file's size, nothing allocated for the announced size), and a
// header length beyond kMaxNpyHeaderBytes is refused before it is read.
TEST(NpyErrors, ReadsAreBoundedByTheHeader) {
  const std::string path = ::testing::TempDir() + "vkd_huge_header.npy";
  write_bytes(path, raw_npy(1, 0,
                            "{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (1099511627776,), }",
                            floats_bytes(4)));
  EXPECT_EQ(read_error(path).rfind(path + ": truncated data: shape (1099511627776,) float32 needs "
                                          "4398046511104 bytes",
                                   0),
            0u)
      << read_error(path);
  Bytes big = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xf0, 0xff, 0xff, 0xff};
  write_bytes(path, big);
  EXPECT_EQ(read_error(path), path + ": the header announces 4294967292 bytes, more than the " +
                                  std::to_string(kMaxNpyHeaderBytes) + " accepted");
  std::remove(path.c_str());
}

TEST(Npy, EncodeChecksTheDataSize) {
  NpyArray a = make(NpyDType::Float32, {2, 2});
  a.data.pop_back();
  EXPECT_THROW(encode_npy(a), NpyError);
}

}  // namespace
}  // namespace vkd::cli
