// q8ta_lut: an element-wise function of one int8x4 tensor between fixed quantizations, by table:
// out = table[in] per element. The compiler computed the 256 entries (the function on the
// dequantized value, then the output's quantize rounding: compiler/ops/Lut.cpp), so the kernel
// does no arithmetic. Input and output share their sizes and packed layout (INT8_LAYOUT); padding
// lanes of the output hold its zero point.
//
// The table (binding 2) is 256 words indexed by the input's unsigned byte u: word u holds the
// output byte in its low 8 bits, the rest 0 (runtime/ops/Lut.cpp reorders the blob's table,
// indexed by v + 128, into this). Every workgroup first copies it into shared memory (invocation
// t copies words t, t + size, ...): a lookup is then one shared load and an or, with no byte
// extraction (measured on the H100 against 64 words of 4 packed bytes: 50 vs 70 us at
// 1x64x1024x1024). Invocation i then maps the 16-byte chunks (4 consecutive words,
// int8x4_chunk.glslh's map_chunk) i, i + stride, ... of the word arrays: the host launches about a
// quarter as many invocations as chunks, so each workgroup's table copy serves 4 chunks per
// invocation.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#define CHUNK_MAP
#include "int8x4_chunk.glslh"

layout(set = 0, binding = 2) readonly buffer TableWords { int table_words[256]; };

layout(push_constant) uniform Params {
  ivec4 sizes;      // N, C, H, W of in and out
  int chunk_count;  // ceil(word_count / 4)
  int word_count;   // words of in and out
  int out_zp;
  int stride;       // invocations that do work: each maps chunks id, id + stride, ...
} p;

shared int lut[256];

int map_word(int w, int valid, int index) {
  int word = 0;
  for (int lane = 0; lane < 4; ++lane) {
    word |= lut[bitfieldExtract(uint(w), 8 * lane, 8)] << (8 * lane);
  }
  return pad_lanes(word, valid, p.out_zp);
}

void main() {
  const uint size = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
  for (uint i = gl_LocalInvocationIndex; i < 256; i += size) lut[i] = table_words[i];
  barrier();
  for (int k = int(linear_invocation_id()); k < p.chunk_count; k += p.stride) {
    map_chunk(k, p.word_count, p.sizes);
  }
}
