// make_v1_blob IN.vkd OUT.vkd: writes IN as vkdelegate 0.1.0 wrote blobs, header version 1: the
// 48-byte header, no checksums and no graph IR hash (serialization/README.md). The CLI tests
// run such a blob (old blobs still load) and check it against graphs it was not compiled from,
// which only a blob that records no graph IR hash lets `vkd run --check` compare.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <vector>

#include "serialization/Blob.h"

int main(int argc, char** argv) {
  using namespace vkd::serialization;
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_v1_blob IN.vkd OUT.vkd\n");
    return 2;
  }
  try {
    std::ifstream in(argv[1], std::ios::binary);
    std::vector<uint8_t> blob((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    BlobHeader h = parse_header(blob.data(), blob.size());
    if (h.header_version != 2) {
      std::fprintf(stderr, "make_v1_blob: %s is not a version 2 blob\n", argv[1]);
      return 1;
    }
    // The segments stay where they are (a version 1 reader takes any offset past its header);
    // the version 2 fields become zero padding.
    std::fill(blob.begin(), blob.begin() + h.header_size, 0);
    h.header_version = 1;
    h.header_size = kBlobHeaderSizeV1;
    encode_header(h, blob.data());
    std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(blob.data()),
              static_cast<std::streamsize>(blob.size()));
    if (!out) {
      std::fprintf(stderr, "make_v1_blob: cannot write %s\n", argv[2]);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_v1_blob: %s\n", e.what());
    return 1;
  }
  return 0;
}
