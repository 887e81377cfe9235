// The backend op registry: one declarative entry per op the runtime can be asked to run (what
// a blob may call). The compiler reads it to lower, check and lay out graphs; the runtime reads
// it for argument order and kinds (runtime/ops/OpRegistry attaches a builder per entry). One
// source of truth: test_op_schema walks every entry and every (dtype, storage, layout) it
// claims and builds it on the runtime.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/DType.h"

namespace vkd::schema {

// Argument kinds in blob order; numbered as serialization::ValueKind. TensorList: one or more
// input tensors (a value_list in the blob) of one argument (aten.cat's inputs), each checked
// and placed like a Tensor argument of the same schema (dtypes, placements, ties).
enum class ArgKind : uint8_t { Tensor, Int, Float, Bool, IntList, FloatList, TensorList = 7 };

// A (storage, memory layout) a tensor can live in.
struct Placement {
  StorageType storage;
  MemoryLayout layout;
  bool operator==(const Placement& o) const { return storage == o.storage && layout == o.layout; }
};

// A set of placements, as a bitmask over the 9 legal ones (6 buffer layouts + 3 textures).
class PlacementSet {
 public:
  PlacementSet() = default;
  PlacementSet(std::initializer_list<Placement> list);
  static PlacementSet all_float();  // buffer and texture, width/height/channels packed
  static PlacementSet float_buffers();
  static PlacementSet all_int8();              // buffer 4W4C, 4H4W, 4C1W
  static PlacementSet channels_packed_int8();  // buffer 4W4C, 4C1W

  bool contains(const Placement& p) const { return bits_ & bit(p); }
  bool empty() const { return bits_ == 0; }
  PlacementSet operator&(const PlacementSet& o) const { return from_bits(bits_ & o.bits_); }
  PlacementSet operator|(const PlacementSet& o) const { return from_bits(bits_ | o.bits_); }
  PlacementSet without(const Placement& p) const { return from_bits(bits_ & ~bit(p)); }
  bool operator==(const PlacementSet& o) const { return bits_ == o.bits_; }
  std::vector<Placement> list() const;  // in the canonical order of all_placements()
  std::string describe() const;         // "{buffer 4W4C, buffer 4C1W}"

 private:
  static uint16_t bit(const Placement& p);
  static PlacementSet from_bits(uint16_t bits);
  uint16_t bits_ = 0;
};

const std::vector<Placement>& all_placements();
std::string describe(const Placement& p);  // "buffer 4W4C", "texture3d channels_packed"

struct ArgSchema {
  std::string name;
  ArgKind kind = ArgKind::Tensor;
  bool output = false;               // a tensor the op writes
  bool constant = false;             // must be a constant (weights, scales, bias)
  std::vector<DType> dtypes;         // tensors: accepted dtypes
  PlacementSet placements;           // tensors: accepted placements
  std::vector<Placement> preferred;  // tensors: first choices, in order (the rest follow)
  int tied_to = -1;                  // index of the tensor arg that must share the placement
                                     // and the dtype
  // Constants the op reads on the host: the shape the loader checks (with the dtype) before
  // any builder reads a byte of the blob. 0 = any rank.
  int constant_rank = 0;
  // "" or the name of a tensor argument whose dim 0 this constant's element count must equal
  // (per-output-channel weight scales and bias: dim 0 of the weight).
  std::string count_is_dim0_of;
};

// A Tensor or TensorList argument: what the tensor walks (placements, data flow) go over.
inline bool holds_tensors(const ArgSchema& a) {
  return a.kind == ArgKind::Tensor || a.kind == ArgKind::TensorList;
}

struct OpSchema {
  std::string name;
  std::vector<ArgSchema> args;  // blob order: tensors and scalars, outputs last
  // What the runtime does with the op; the family files of partitioner_schema/ops/ set them by
  // name (kernel_op, identity_op, schema_only_op), never positionally.
  bool has_kernel = false;       // the runtime can build it (false: schema only, no kernel yet)
  bool identity = false;         // output == input; always removed by the compiler
  bool supports_resize = false;  // kernels take sizes at run time
  std::string summary;

  int arg_index(std::string_view arg_name) const;  // -1 when absent
  // A blob may call it and the runtime runs it: it has a kernel, or it is an identity the
  // compiler folds away.
  bool runnable() const { return has_kernel || identity; }
};

// Every backend op, family by family in the order of partitioner_schema/ops/' file names;
// nothing depends on the order (look ops up by name).
const std::vector<OpSchema>& op_schemas();
const OpSchema* find_op_schema(std::string_view name);
// The backend op named `op` exists and is runnable().
bool is_runnable_op(std::string_view op);

}  // namespace vkd::schema
