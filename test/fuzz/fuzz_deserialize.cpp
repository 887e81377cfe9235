// libFuzzer target: arbitrary bytes into vkd::serialization::deserialize, as they are without an
// op signature table, then resealed (new checksums) with one. A vkd::Error is the expected
// answer to a bad blob; any other exception escapes (std::terminate: a crash libFuzzer
// reports), and so do ASan/UBSan findings. A blob
// that is accepted must also hold every promise Deserializer.h makes, checked below, so the
// fuzzer finds missing checks as well as memory errors.
//
// Built only with VKD_FUZZ=ON (clang); test/fuzz/run_sanitized.sh builds and runs it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <variant>

#include "core/Error.h"
#include "serialization/Blob.h"
#include "serialization/Deserializer.h"
#include "serialization/GraphAtLength.h"
#include "test/fuzz/FuzzOps.h"

namespace {

using namespace vkd::serialization;

// abort() rather than assert(): the check must stay in release builds.
#define FUZZ_REQUIRE(cond)                                                                 \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "fuzz_deserialize: accepted blob breaks '%s' (%s:%d)\n", #cond, \
                   __FILE__, __LINE__);                                                    \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

void check_accepted(const DeserializedGraph& g, const uint8_t* data, size_t size,
                    const OpSignatureTable* ops) {
  FUZZ_REQUIRE(g.schema_version == kGraphSchemaVersion);
  const size_t n = g.values.size();
  for (const Value& v : g.values) {
    if (const auto* t = std::get_if<TensorValue>(&v)) {
      bool valid = true;
      try {
        vkd::validate(t->spec);
      } catch (const vkd::Error&) {
        valid = false;
      }
      FUZZ_REQUIRE(valid);
      if (t->constant) {
        const ConstantBytes& c = *t->constant;
        FUZZ_REQUIRE(c.size == constant_byte_size(t->spec));
        FUZZ_REQUIRE(c.offset <= size && c.size <= size - c.offset);
        FUZZ_REQUIRE(c.data == data + c.offset);
      }
    } else if (const auto* list = std::get_if<ValueListValue>(&v)) {
      for (ValueId id : list->items) FUZZ_REQUIRE(id < n);
    }
  }
  for (const OpCall& op : g.ops) {
    FUZZ_REQUIRE(!op.name.empty());
    for (ValueId id : op.args) FUZZ_REQUIRE(id < n);
    if (!ops) continue;
    const auto it = ops->find(op.name);
    FUZZ_REQUIRE(it != ops->end());
    FUZZ_REQUIRE(it->second.args.size() == op.args.size());
    for (size_t i = 0; i < op.args.size(); ++i) {
      FUZZ_REQUIRE(kind_of(g.values[op.args[i]]) == it->second.args[i]);
    }
  }
  for (const GraphIO& io : g.inputs) {
    FUZZ_REQUIRE(io.value < n);
    const auto* t = std::get_if<TensorValue>(&g.values[io.value]);
    FUZZ_REQUIRE(t != nullptr && !t->constant);
  }
  for (const GraphIO& io : g.outputs) {
    FUZZ_REQUIRE(io.value < n);
    FUZZ_REQUIRE(std::holds_alternative<TensorValue>(g.values[io.value]));
  }
  if (!g.dynamic) return;
  // A dynamic length: in range, every entry naming a size or int that holds a * max + b, and
  // the graph of its shortest length buildable or refused with a vkd::Error (a size past the
  // index limits), never anything else.
  const DynamicLength& d = *g.dynamic;
  FUZZ_REQUIRE(d.min >= 1 && d.min <= d.max && d.max <= kMaxDynamicLength);
  for (const DynamicEntry& e : d.entries) FUZZ_REQUIRE(e.value < n);
  try {
    const DeserializedGraph shortest = graph_at_length(g, d.min);
    FUZZ_REQUIRE(shortest.values.size() == n);
  } catch (const vkd::Error&) {
  }
}

void run_one(const uint8_t* data, size_t size, const OpSignatureTable* ops) {
  DeserializedGraph g;
  try {
    g = deserialize(data, size, ops);
  } catch (const vkd::Error&) {
    return;  // the documented answer to a malformed blob; nothing else is caught
  }
  check_accepted(g, data, size, ops);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const OpSignatureTable ops = vkd::fuzz::fuzz_op_table();
  // The bytes as they are: a mutated blob mostly stops at its checksums here.
  run_one(data, size, nullptr);
  // Again with the table, from a copy one byte past the allocator's alignment, so the
  // flatbuffer's alignment (and with it the aligned-copy path in deserialize) differs from the
  // first run. The copy ends exactly where the blob does, so ASan still sees any over-read.
  // It is resealed (seal_blob: the size and checksums its header records recomputed), so the
  // mutation reaches the checks behind the checksums: the header's fields, the flatbuffer,
  // the values and ops.
  const std::unique_ptr<uint8_t[]> storage(new uint8_t[size + 1]);
  uint8_t* shifted = storage.get() + 1;
  if (size > 0) std::memcpy(shifted, data, size);
  seal_blob(shifted, size);
  run_one(shifted, size, &ops);
  return 0;
}
