// GraphBuilder: writes a graph and its constants into a blob (Blob.h, schema.fbs). Used by the
// AOT compiler and by tests.
//
// The builder records what it is given and checks nothing about the graph: ids, enums and
// shapes go into the blob as they are, so tests can craft malformed blobs. deserialize()
// (Deserializer.h) is the one validator; the compiler round-trips its output through it.
// Same calls in the same order produce byte-identical blobs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/TensorSpec.h"
#include "serialization/Blob.h"
#include "serialization/DynamicLength.h"

namespace vkd::serialization {

class GraphBuilder {
 public:
  // Every add_* returns the new value's id (ids are dense, in call order, from 0).
  // `constant`: host NCHW bytes (constant_byte_size(spec) of them), stored in the constant
  // segment; nullopt for a runtime tensor (graph input, output or intermediate).
  ValueId add_tensor(const TensorSpec& spec, std::string name = {},
                     std::optional<std::vector<uint8_t>> constant = std::nullopt);
  ValueId add_int(int64_t value);
  ValueId add_float(double value);
  ValueId add_bool(bool value);
  ValueId add_int_list(std::vector<int64_t> items);
  ValueId add_float_list(std::vector<double> items);
  ValueId add_string(std::string value);
  ValueId add_value_list(std::vector<ValueId> items);

  // Appends an operator call; ops run in the order they are added.
  void add_op(std::string name, std::vector<ValueId> args);

  // `names`: empty, or one per id (throws InvalidArgument otherwise).
  void set_inputs(std::vector<ValueId> ids, std::vector<std::string> names = {});
  void set_outputs(std::vector<ValueId> ids, std::vector<std::string> names = {});

  // The hash of the graph IR this graph was compiled from, recorded in the header
  // (compiler/GraphHash.h; `vkd run --check` compares it). 0, the default: not recorded.
  void set_source_graph_hash(uint64_t hash) { source_graph_hash_ = hash; }

  // The graph's dynamic length (DynamicLength.h), written as given; nullopt (the default): every
  // shape is static.
  void set_dynamic_length(std::optional<DynamicLength> dynamic) { dynamic_ = std::move(dynamic); }

  // The blob: header, FlatBuffers graph, constant segment, sealed (seal_blob: its size and
  // checksums in the header). The builder stays usable (finish() again gives the same bytes).
  std::vector<uint8_t> finish() const;

  size_t value_count() const { return values_.size(); }

 private:
  enum class Kind { Tensor, Int, Float, Bool, IntList, FloatList, String, ValueList };
  // One recorded value; only the fields of its kind are used.
  struct Entry {
    Kind kind = Kind::Int;
    TensorSpec spec;
    std::string name;          // tensor name, or the string value
    int32_t constant_id = -1;  // index into constants_
    int64_t int_value = 0;     // int, bool
    double float_value = 0.0;
    std::vector<int64_t> ints;
    std::vector<double> floats;
    std::vector<ValueId> ids;
  };
  struct Op {
    std::string name;
    std::vector<ValueId> args;
  };

  ValueId push(Entry entry);

  std::vector<Entry> values_;
  std::vector<Op> ops_;
  std::vector<std::vector<uint8_t>> constants_;
  std::vector<ValueId> inputs_, outputs_;
  std::vector<std::string> input_names_, output_names_;
  uint64_t source_graph_hash_ = 0;
  std::optional<DynamicLength> dynamic_;
};

}  // namespace vkd::serialization
