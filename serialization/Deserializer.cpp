#include "serialization/Deserializer.h"

#include <cstring>
#include <utility>

#include "serialization/schema_generated.h"

namespace vkd::serialization {

namespace {

namespace f = ::flatbuffers;

constexpr ErrorCode kBad = ErrorCode::InvalidArgument;

std::string quoted(const f::String* s) { return s ? "'" + s->str() + "'" : "''"; }

// The four identifier bytes, printable ones as they are.
std::string identifier_string(const uint8_t* p) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>(p[i]);
    s += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return s;
}

// "value 7 (tensor 'w')", "value 3 (int_list)": how errors name a value.
std::string value_label(size_t id, ValueKind kind, const f::String* name = nullptr) {
  std::string s = vkd::detail::concat("value ", id, " (", to_string(kind));
  if (name && name->size() > 0) s += " " + quoted(name);
  return s + ")";
}

// Owns a copy of the flatbuffer only when the blob's copy is not 8-byte aligned (FlatBuffers
// reads 8-byte scalars in place).
struct AlignedFlatbuffer {
  const uint8_t* data = nullptr;
  std::vector<uint64_t> storage;
};

AlignedFlatbuffer align_flatbuffer(const uint8_t* p, size_t size) {
  AlignedFlatbuffer out;
  if (reinterpret_cast<uintptr_t>(p) % alignof(uint64_t) == 0) {
    out.data = p;
  } else {
    out.storage.resize((size + 7) / 8);
    std::memcpy(out.storage.data(), p, size);
    out.data = reinterpret_cast<const uint8_t*>(out.storage.data());
  }
  return out;
}

// FlatBuffers 2.0's Verifier checks a vector's length field for 4-byte alignment but not its
// elements: a corrupt blob can put a [long], [double] or [ConstantEntry] vector at 4 mod 8,
// and reading those elements in place is a misaligned load (undefined behaviour; UBSan and the
// fuzzer found it). The builder always aligns them, so such a vector is rejected. The
// flatbuffer starts 8-byte aligned in memory (align_flatbuffer), so the address's alignment is
// the offset's.
template <typename T>
void check_elements_aligned(const f::Vector<T>* v, const std::string& what) {
  if (!v || v->size() == 0) return;  // nothing is read
  VKD_CHECK(reinterpret_cast<uintptr_t>(v->Data()) % alignof(uint64_t) == 0, kBad, what,
            " vector is not ", alignof(uint64_t),
            "-byte aligned in the flatbuffer (the graph is corrupt)");
}

const fb::Graph* verify_flatbuffer(const uint8_t* p, uint64_t size) {
  // The Verifier asserts on sizes at or above this limit instead of failing.
  VKD_CHECK(size < FLATBUFFERS_MAX_BUFFER_SIZE, kBad, "flatbuffer: ", size,
            " bytes exceeds the FlatBuffers limit of ", FLATBUFFERS_MAX_BUFFER_SIZE, " bytes");
  VKD_CHECK(size >= 2 * sizeof(f::uoffset_t), kBad, "flatbuffer: ", size,
            " bytes is too small for a root offset and file identifier");
  VKD_CHECK(fb::GraphBufferHasIdentifier(p), kBad, "flatbuffer: file identifier '",
            identifier_string(p + sizeof(f::uoffset_t)), "' is not '", kGraphFileIdentifier, "'");
  f::Verifier verifier(p, static_cast<size_t>(size));
  VKD_CHECK(fb::VerifyGraphBuffer(verifier), kBad,
            "flatbuffer: FlatBuffers verification failed (the ", size,
            "-byte graph is corrupt: an offset, length or string points outside it)");
  return fb::GetGraph(p);
}

std::vector<ConstantBytes> read_constants(const fb::Graph& g, const uint8_t* blob,
                                          const BlobHeader& h) {
  std::vector<ConstantBytes> out;
  if (!g.constants()) return out;
  check_elements_aligned(g.constants(), "graph: constants");
  out.reserve(g.constants()->size());
  for (f::uoffset_t i = 0; i < g.constants()->size(); ++i) {
    const fb::ConstantEntry* e = g.constants()->Get(i);
    const uint64_t off = e->offset(), len = e->length();
    VKD_CHECK(off <= h.constant_size && len <= h.constant_size - off, kBad, "constant ", i, ": [",
              off, ", ", off, " + ", len, ") extends past the end of the ", h.constant_size,
              "-byte constant segment");
    out.push_back(ConstantBytes{blob + h.constant_offset + off, static_cast<size_t>(len),
                                h.constant_offset + off});
  }
  return out;
}

void check_id(ValueId id, size_t value_count, const std::string& where) {
  VKD_CHECK(id < value_count, kBad, where, " refers to value ", id, ", but the graph has ",
            value_count, " values");
}

TensorValue read_tensor(size_t id, const fb::TensorValue& t,
                        const std::vector<ConstantBytes>& constants) {
  const std::string label = value_label(id, ValueKind::Tensor, t.name());
  TensorValue out;
  out.name = t.name() ? t.name()->str() : std::string();
  check_elements_aligned(t.sizes(), label + ": sizes");
  if (t.sizes()) out.spec.sizes.assign(t.sizes()->begin(), t.sizes()->end());

  const auto dtype = static_cast<uint8_t>(t.dtype());
  const auto storage = static_cast<uint8_t>(t.storage());
  const auto layout = static_cast<uint8_t>(t.layout());
  VKD_CHECK(dtype <= static_cast<uint8_t>(DType::Int8x4), kBad, label, ": unknown dtype ",
            int{dtype});
  VKD_CHECK(storage <= static_cast<uint8_t>(StorageType::Texture3D), kBad, label,
            ": unknown storage type ", int{storage});
  VKD_CHECK(layout <= static_cast<uint8_t>(MemoryLayout::PackedInt8_4C1W), kBad, label,
            ": unknown memory layout ", int{layout});
  out.spec.dtype = static_cast<DType>(dtype);
  out.spec.storage = static_cast<StorageType>(storage);
  out.spec.layout = static_cast<MemoryLayout>(layout);
  try {
    validate(out.spec);  // rank 1..4, sizes >= 1, layout legal for the dtype, index limits
  } catch (const Error& e) {
    VKD_THROW(kBad, label, ": ", e.what());
  }

  const int32_t cid = t.constant_id();
  if (cid == -1) return out;
  VKD_CHECK(cid >= 0 && static_cast<size_t>(cid) < constants.size(), kBad, label, ": constant id ",
            cid, " out of range (the graph has ", constants.size(), " constants)");
  const ConstantBytes& c = constants[static_cast<size_t>(cid)];
  const uint64_t need = constant_byte_size(out.spec);
  VKD_CHECK(c.size == need, kBad, label, ": constant ", cid, " has ", c.size, " bytes, tensor ",
            out.spec.describe(), " needs ", need, " (", out.spec.numel(), " elements x ",
            need / static_cast<uint64_t>(out.spec.numel()), " bytes, host NCHW)");
  out.constant = c;
  return out;
}

template <typename T, typename V>
std::vector<T> to_vector(const V* v) {
  return v ? std::vector<T>(v->begin(), v->end()) : std::vector<T>();
}

Value read_value(size_t id, const fb::Value* v, size_t value_count,
                 const std::vector<ConstantBytes>& constants) {
  const auto type = static_cast<uint8_t>(v->value_type());
  VKD_CHECK(type != 0, kBad, "value ", id, ": empty (union type NONE)");
  VKD_CHECK(type <= static_cast<uint8_t>(fb::ValueUnion::MAX), kBad, "value ", id,
            ": unknown value kind ", int{type});
  VKD_CHECK(v->value() != nullptr, kBad, "value ", id, ": kind ", int{type}, " without a payload");
  switch (v->value_type()) {
    case fb::ValueUnion::TensorValue: return read_tensor(id, *v->value_as_TensorValue(), constants);
    case fb::ValueUnion::IntValue: return IntValue{v->value_as_IntValue()->value()};
    case fb::ValueUnion::FloatValue: return FloatValue{v->value_as_FloatValue()->value()};
    case fb::ValueUnion::BoolValue: return BoolValue{v->value_as_BoolValue()->value()};
    case fb::ValueUnion::IntListValue: {
      const auto* items = v->value_as_IntListValue()->items();
      check_elements_aligned(items, value_label(id, ValueKind::IntList) + ": items");
      return IntListValue{to_vector<int64_t>(items)};
    }
    case fb::ValueUnion::FloatListValue: {
      const auto* items = v->value_as_FloatListValue()->items();
      check_elements_aligned(items, value_label(id, ValueKind::FloatList) + ": items");
      return FloatListValue{to_vector<double>(items)};
    }
    case fb::ValueUnion::StringValue: {
      const f::String* s = v->value_as_StringValue()->value();
      return StringValue{s ? s->str() : std::string()};
    }
    case fb::ValueUnion::ValueListValue: {
      ValueListValue out{to_vector<ValueId>(v->value_as_ValueListValue()->items())};
      for (size_t i = 0; i < out.items.size(); ++i) {
        check_id(out.items[i], value_count,
                 vkd::detail::concat(value_label(id, ValueKind::ValueList), ": item ", i));
      }
      return out;
    }
    case fb::ValueUnion::NONE: break;
  }
  VKD_THROW(ErrorCode::Internal, "value ", id, ": unhandled value kind ", int{type});
}

std::string signature_string(const OpSignature& sig) {
  std::string s;
  for (size_t i = 0; i < sig.args.size(); ++i)
    s += (i ? ", " : "") + std::string(to_string(sig.args[i]));
  return s;
}

OpCall read_op(size_t index, const fb::Operator* op, const std::vector<Value>& values,
               const OpSignatureTable* known_ops) {
  VKD_CHECK(op->name() && op->name()->size() > 0, kBad, "op ", index, ": has no name");
  OpCall out{op->name()->str(), to_vector<ValueId>(op->args())};
  const std::string label = vkd::detail::concat("op ", index, " '", out.name, "'");
  for (size_t i = 0; i < out.args.size(); ++i) {
    check_id(out.args[i], values.size(), vkd::detail::concat(label, ": argument ", i));
  }
  if (!known_ops) return out;

  const auto it = known_ops->find(out.name);
  VKD_CHECK(it != known_ops->end(), kBad, label, ": unknown op (not in the op signature table)");
  const OpSignature& sig = it->second;
  VKD_CHECK(out.args.size() == sig.args.size(), kBad, label, ": expects ", sig.args.size(),
            " arguments (", signature_string(sig), "), got ", out.args.size());
  for (size_t i = 0; i < out.args.size(); ++i) {
    const ValueKind got = kind_of(values[out.args[i]]);
    VKD_CHECK(got == sig.args[i], kBad, label, ": argument ", i, " (value ", out.args[i], ") is a ",
              to_string(got), ", expected ", to_string(sig.args[i]));
  }
  return out;
}

std::vector<GraphIO> read_io(const char* what, const f::Vector<uint32_t>* ids,
                             const f::Vector<f::Offset<f::String>>* names,
                             const std::vector<Value>& values, bool allow_constant) {
  std::vector<GraphIO> out;
  const size_t n = ids ? ids->size() : 0;
  const size_t name_count = names ? names->size() : 0;
  VKD_CHECK(name_count == 0 || name_count == n, kBad, "graph: ", name_count, " ", what,
            " names for ", n, " ", what, "s");
  for (size_t i = 0; i < n; ++i) {
    const ValueId id = ids->Get(static_cast<f::uoffset_t>(i));
    const std::string label = vkd::detail::concat(what, ' ', i);
    check_id(id, values.size(), label);
    const auto* t = std::get_if<TensorValue>(&values[id]);
    VKD_CHECK(t != nullptr, kBad, label, " (value ", id, ") is a ", to_string(kind_of(values[id])),
              ", not a tensor");
    VKD_CHECK(allow_constant || !t->constant, kBad, label, " (value ", id, ", tensor '", t->name,
              "') is a constant");
    const f::String* name = name_count ? names->Get(static_cast<f::uoffset_t>(i)) : nullptr;
    out.push_back(GraphIO{id, name ? name->str() : std::string()});
  }
  return out;
}

std::string entry_label(size_t i, const DynamicEntry& e) {
  return vkd::detail::concat("dynamic length: entry ", i, " (value ", e.value, ", element ",
                             e.element, ")");
}

// The item an entry names, checked to exist and to be a size or an int the graph may vary.
int64_t entry_target(size_t i, const DynamicEntry& e, const std::vector<Value>& values,
                     bool* is_dim) {
  const std::string label = entry_label(i, e);
  check_id(e.value, values.size(), label);
  const Value& v = values[e.value];
  *is_dim = false;
  if (const auto* t = std::get_if<TensorValue>(&v)) {
    VKD_CHECK(e.element < t->spec.sizes.size(), kBad, label, ": tensor '", t->name, "' has rank ",
              t->spec.sizes.size());
    if (t->constant) {
      // At a shorter length a constant is the first rows of its bytes (host NCHW): only a
      // leading dimension can follow the length, and only by growing with it.
      for (size_t k = 0; k < e.element; ++k) {
        VKD_CHECK(t->spec.sizes[k] == 1, kBad, label, ": constant '", t->name, "' ",
                  t->spec.describe(),
                  " can follow the length only in its first dimension "
                  "larger than 1 (at a shorter length it is a prefix of its bytes)");
      }
      VKD_CHECK(e.a >= 0, kBad, label, ": constant '", t->name,
                "' would grow at shorter lengths (a = ", e.a, ")");
    }
    *is_dim = true;
    return t->spec.sizes[e.element];
  }
  if (const auto* n = std::get_if<IntValue>(&v)) {
    VKD_CHECK(e.element == 0, kBad, label, ": an int has only element 0");
    return n->value;
  }
  if (const auto* l = std::get_if<IntListValue>(&v)) {
    VKD_CHECK(e.element < l->items.size(), kBad, label, ": the int list has ", l->items.size(),
              " items");
    return l->items[e.element];
  }
  VKD_THROW(kBad, label, ": a ", to_string(kind_of(v)),
            " cannot follow the length (only tensor sizes, ints and int lists)");
}

std::optional<DynamicLength> read_dynamic_length(const fb::Graph& g,
                                                 const std::vector<Value>& values) {
  const fb::DynamicLength* d = g.dynamic_length();
  if (!d) return std::nullopt;
  DynamicLength out;
  out.name = d->name() ? d->name()->str() : std::string();
  out.min = d->min();
  out.max = d->max();
  VKD_CHECK(out.min >= 1 && out.min <= out.max && out.max <= kMaxDynamicLength, kBad,
            "dynamic length: range [", out.min, ", ", out.max, "] is not within [1, ",
            kMaxDynamicLength, "] (min <= max)");
  check_elements_aligned(d->entries(), "dynamic length: entries");
  const size_t n = d->entries() ? d->entries()->size() : 0;
  VKD_CHECK(n > 0, kBad, "dynamic length: no entries (nothing follows the length)");
  for (size_t i = 0; i < n; ++i) {
    const fb::DynamicEntry* fe = d->entries()->Get(static_cast<f::uoffset_t>(i));
    const DynamicEntry e{fe->value(), fe->element(), fe->a(), fe->b()};
    const std::string label = entry_label(i, e);
    if (i > 0) {
      const DynamicEntry& p = out.entries.back();
      VKD_CHECK(p.value < e.value || (p.value == e.value && p.element < e.element), kBad, label,
                ": entries must be sorted by (value, element), each once");
      const auto* t =
          e.value < values.size() ? std::get_if<TensorValue>(&values[e.value]) : nullptr;
      VKD_CHECK(p.value != e.value || !t || !t->constant, kBad, label, ": constant '",
                t ? t->name : "",
                "' has a second entry (a constant follows the length in one dimension)");
    }
    VKD_CHECK(e.a >= -kMaxDynamicCoefficient && e.a <= kMaxDynamicCoefficient &&
                  e.b >= -kMaxDynamicCoefficient && e.b <= kMaxDynamicCoefficient,
              kBad, label, ": coefficients a = ", e.a, ", b = ", e.b, " exceed +-",
              kMaxDynamicCoefficient);
    bool is_dim = false;
    const int64_t written = entry_target(i, e, values, &is_dim);
    // |a|, |b| <= 2^31 and max <= 2^31: no overflow.
    const int64_t at_max = e.a * out.max + e.b, at_min = e.a * out.min + e.b;
    VKD_CHECK(at_max == written, kBad, label, ": ", e.a, " * ", out.max, " + ", e.b, " = ", at_max,
              ", but the graph (compiled at the maximum length ", out.max, ") holds ", written);
    VKD_CHECK(!is_dim || at_min >= 1, kBad, label, ": the size is ", at_min,
              " at the minimum length ", out.min, " (sizes must be >= 1)");
    out.entries.push_back(e);
  }
  return out;
}

DeserializedGraph deserialize_checked(const uint8_t* data, size_t size,
                                      const OpSignatureTable* known_ops) {
  const BlobHeader h = parse_header(data, size);
  verify_checksums(data, size, h);
  const AlignedFlatbuffer fbuf =
      align_flatbuffer(data + h.flatbuffer_offset, static_cast<size_t>(h.flatbuffer_size));
  const fb::Graph& g = *verify_flatbuffer(fbuf.data, h.flatbuffer_size);

  DeserializedGraph out;
  out.header_version = h.header_version;
  out.source_graph_hash = h.source_graph_hash;
  out.schema_version = g.schema_version();
  VKD_CHECK(out.schema_version == kGraphSchemaVersion, kBad, "graph: schema version ",
            out.schema_version, " not supported (this build reads ", kGraphSchemaVersion, ")");

  const std::vector<ConstantBytes> constants = read_constants(g, data, h);
  const size_t value_count = g.values() ? g.values()->size() : 0;
  out.values.reserve(value_count);
  for (size_t i = 0; i < value_count; ++i) {
    out.values.push_back(
        read_value(i, g.values()->Get(static_cast<f::uoffset_t>(i)), value_count, constants));
  }
  const size_t op_count = g.ops() ? g.ops()->size() : 0;
  out.ops.reserve(op_count);
  for (size_t i = 0; i < op_count; ++i) {
    out.ops.push_back(
        read_op(i, g.ops()->Get(static_cast<f::uoffset_t>(i)), out.values, known_ops));
  }
  out.inputs = read_io("input", g.inputs(), g.input_names(), out.values, false);
  out.outputs = read_io("output", g.outputs(), g.output_names(), out.values, true);
  out.dynamic = read_dynamic_length(g, out.values);
  return out;
}

}  // namespace

ValueKind kind_of(const Value& value) { return static_cast<ValueKind>(value.index()); }

std::string_view to_string(ValueKind kind) {
  switch (kind) {
    case ValueKind::Tensor: return "tensor";
    case ValueKind::Int: return "int";
    case ValueKind::Float: return "float";
    case ValueKind::Bool: return "bool";
    case ValueKind::IntList: return "int_list";
    case ValueKind::FloatList: return "float_list";
    case ValueKind::String: return "string";
    case ValueKind::ValueList: return "value_list";
  }
  return "unknown_kind";
}

DeserializedGraph deserialize(const uint8_t* data, size_t size, const OpSignatureTable* known_ops) {
  return detail::only_vkd_errors("deserialize",
                                 [&] { return deserialize_checked(data, size, known_ops); });
}

DeserializedGraph deserialize(const std::vector<uint8_t>& blob, const OpSignatureTable* known_ops) {
  return deserialize(blob.data(), blob.size(), known_ops);
}

}  // namespace vkd::serialization
