// Layout propagation: decides every tensor's (storage, memory layout) of a lowered graph.
//
// 1. Tensors joined by a tied op argument (identity, add, pixel shuffle, ...) form one class
//    that must share a placement; the class may only use placements every tied op allows.
// 2. Each class collects its external constraints: the set its producer can write and the set
//    each consumer can read (graph inputs and constants: anything legal for the dtype).
// 3. The class takes the placement that satisfies the most constraints (producer and consumers
//    alike; ties broken by the ops' preferences, then the canonical order), after removing
//    textures whose extents exceed the compile-time limit.
// 4. Every unsatisfied constraint gets exactly one conversion (q8ta_convert / float_convert):
//    after an unsatisfied producer, before each group of consumers that agree on a placement.
#pragma once

#include <cstdint>

#include "compiler/GraphIR.h"
#include "compiler/PassReport.h"

namespace vkd::compiler {

struct LayoutOptions {
  int64_t max_texture_extent = 16384;  // texels per axis the target device is assumed to have
};

PassReport propagate_layouts(Graph& g, const LayoutOptions& options);

}  // namespace vkd::compiler
