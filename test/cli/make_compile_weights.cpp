// Writes OUTDIR/weights.safetensors (OUTDIR created if missing), the weights of the `vkd compile`
// cases (test/cli/graphs/add_constant.json):
//   add.other  F32 [1,4,1,1]  {0.5, -0.25, 1, 2}
// A C++ helper because a safetensors file starts with a little-endian 64-bit length, whose zero
// bytes a CMake script cannot write. The float bytes are spelled out, so the file is the same
// on every host.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "partitioner_schema/Safetensors.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_compile_weights OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  try {
    std::filesystem::create_directories(dir);
    // Little-endian IEEE 754 binary32 of 0.5, -0.25, 1.0, 2.0.
    const std::vector<uint8_t> other = {0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x80, 0xbe,
                                        0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40};
    vkd::compiler::write_safetensors(dir + "/weights.safetensors",
                                     {{"add.other", "F32", {1, 4, 1, 1}, other}});
    std::printf("make_compile_weights: wrote %s/weights.safetensors\n", dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_compile_weights: %s\n", e.what());
    return 1;
  }
}
