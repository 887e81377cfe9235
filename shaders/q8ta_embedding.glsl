// q8ta_embedding: rows of a table gathered by int32 token ids (aten.embedding). Pure data
// movement: every output word is one table word, so the kernel is exact whatever the table
// holds.
//
// The table (binding 2) is row_words words per row, V rows (runtime/ops/Embedding.cpp packs
// it): OUTPUT_FLOAT = 0: an int8 table already quantized with the output's parameters, 4 lanes
// per word (padding lanes past C hold the output's zero point); OUTPUT_FLOAT = 1: float32, one
// element per word. The ids (binding 1) are planes x T int32 (the ids tensor, C order); the
// output (binding 0) holds ids' shape + [C]:
//   OUTPUT_FLOAT = 0: int8x4 4H4W ([planes, T, C] as C = planes, H = T, W = C): word
//     ((plane * H4 + t / 4) * row_words + w4) * 4 + t % 4 = table word id * row_words + w4,
//     rows t >= T (the last block's padding) all lanes the zero point;
//   OUTPUT_FLOAT >= 1: a contiguous float32 buffer: word (plane * T + t) * C + c.
// OUTPUT_FLOAT = 2 / 3 (embedding_add): the float rows plus ADDENDS = 1 / 2 float32 tensors
// (bindings 3, 4; BERT's position and token type rows), added in order, each add rounded to
// float32 on its own (`precise`, as float_elementwise.glsl's float_add with alpha 1), so the
// words are the unfused embedding -> float_add -> float_add's bit for bit. An addend holds the
// output's trailing dims (leading dims broadcast): output word i reads its word i % its count.
// Invocation i writes output word i, i + stride, ...; an id outside [0, V) is clamped into it
// (the host checks ids before they reach the device: this only keeps a read in bounds).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer OutWords { int out_words[]; };
layout(set = 0, binding = 1) readonly buffer Ids { int ids[]; };
layout(set = 0, binding = 2) readonly buffer TableWords { int table_words[]; };
#if OUTPUT_FLOAT >= 2
#define ADDENDS (OUTPUT_FLOAT - 1)
#else
#define ADDENDS 0
#endif
#if ADDENDS >= 1
layout(set = 0, binding = 3) readonly buffer FirstFloats { float first_floats[]; };
#endif
#if ADDENDS >= 2
layout(set = 0, binding = 4) readonly buffer SecondFloats { float second_floats[]; };
#endif

layout(push_constant) uniform Params {
  int word_count;  // output words
  int row_words;   // words per table row and per output row
  int tokens;      // T: the ids' last dim
  int rows;        // V: table rows
  int pad_word;    // int8: the zero point in all four lanes
  int stride;      // invocations that do work
  int first_words;   // embedding_add: the addends' element counts
  int second_words;
} p;

void main() {
  for (int i = int(linear_invocation_id()); i < p.word_count; i += p.stride) {
#if OUTPUT_FLOAT
    const int w = i % p.row_words, row = i / p.row_words;  // row = plane * T + t
#else
    const int r = i % 4, rest = i / 4;
    const int w = rest % p.row_words, block = rest / p.row_words;
    const int h4_count = div_up(p.tokens, 4);
    const int t = 4 * (block % h4_count) + r;
    if (t >= p.tokens) {
      out_words[i] = p.pad_word;
      continue;
    }
    const int row = (block / h4_count) * p.tokens + t;
#endif
    const int id = clamp(ids[row], 0, p.rows - 1);
#if ADDENDS == 0
    out_words[i] = table_words[id * p.row_words + w];
#else
    precise float y = intBitsToFloat(table_words[id * p.row_words + w]) +
                      first_floats[i % p.first_words];
#if ADDENDS >= 2
    y = y + second_floats[i % p.second_words];
#endif
    out_words[i] = floatBitsToInt(y);
#endif
  }
}
