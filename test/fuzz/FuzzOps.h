// The op signature table shared by the fuzzer and the seed-corpus generator: the seeds call
// these ops with matching arguments, so the fuzzer starts from blobs that pass the signature
// checks and mutates its way into every failure of them.
#pragma once

#include "serialization/Deserializer.h"

namespace vkd::fuzz {

inline serialization::OpSignatureTable fuzz_op_table() {
  using K = serialization::ValueKind;
  return {
      {"quantize", {{K::Tensor, K::Float, K::Int, K::Tensor}}},
      {"dequantize", {{K::Tensor, K::Float, K::Int, K::Tensor}}},
      {"conv2d",
       {{K::Tensor, K::Tensor, K::Tensor, K::IntList, K::IntList, K::FloatList, K::Tensor}}},
      {"mix", {{K::Tensor, K::ValueList, K::IntList, K::FloatList, K::String, K::Bool, K::Tensor}}},
  };
}

}  // namespace vkd::fuzz
