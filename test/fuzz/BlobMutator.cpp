#include "test/fuzz/BlobMutator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <variant>

#include "core/Error.h"
#include "serialization/Blob.h"
#include "serialization/Deserializer.h"
#include "serialization/Serializer.h"

namespace vkd::fuzz {
namespace {

using namespace vkd::serialization;
using Bytes = std::vector<uint8_t>;

// Two's-complement wrap-around (the mutator itself must not overflow: UBSan watches it too).
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// A blob taken apart: deserialize()'s values with the constant bytes copied out.
struct Model {
  std::vector<Value> values;
  std::vector<std::optional<Bytes>> constants;  // per value; set for constant tensors
  std::vector<OpCall> ops;
  std::vector<GraphIO> inputs, outputs;
  uint64_t source_graph_hash = 0;
};

// The blob as its bytes say, whatever its checksums (a byte mutation may have left them
// stale): read from a resealed copy; the constants are copied out of it.
Model take_apart(const uint8_t* data, size_t size) {
  Bytes copy(data, data + size);
  seal_blob(copy);
  DeserializedGraph g = deserialize(copy, nullptr);
  Model m;
  m.source_graph_hash = g.source_graph_hash;
  m.constants.resize(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    if (auto* t = std::get_if<TensorValue>(&g.values[i]); t && t->constant) {
      m.constants[i] = Bytes(t->constant->data, t->constant->data + t->constant->size);
      t->constant.reset();
    }
  }
  m.values = std::move(g.values);
  m.ops = std::move(g.ops);
  m.inputs = std::move(g.inputs);
  m.outputs = std::move(g.outputs);
  return m;
}

void set_io(GraphBuilder& b, const std::vector<GraphIO>& io, bool inputs) {
  std::vector<ValueId> ids;
  std::vector<std::string> names;
  bool named = false;
  for (const GraphIO& x : io) {
    ids.push_back(x.value);
    names.push_back(x.name);
    named = named || !x.name.empty();
  }
  if (!named) names.clear();
  if (inputs) {
    b.set_inputs(std::move(ids), std::move(names));
  } else {
    b.set_outputs(std::move(ids), std::move(names));
  }
}

// GraphBuilder gives ids in call order, so every value keeps its id.
Bytes put_together(const Model& m) {
  GraphBuilder b;
  for (size_t i = 0; i < m.values.size(); ++i) {
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, TensorValue>) {
            b.add_tensor(v.spec, v.name, m.constants[i]);
          } else if constexpr (std::is_same_v<T, IntValue>) {
            b.add_int(v.value);
          } else if constexpr (std::is_same_v<T, FloatValue>) {
            b.add_float(v.value);
          } else if constexpr (std::is_same_v<T, BoolValue>) {
            b.add_bool(v.value);
          } else if constexpr (std::is_same_v<T, IntListValue>) {
            b.add_int_list(v.items);
          } else if constexpr (std::is_same_v<T, FloatListValue>) {
            b.add_float_list(v.items);
          } else if constexpr (std::is_same_v<T, StringValue>) {
            b.add_string(v.value);
          } else {
            b.add_value_list(v.items);
          }
        },
        m.values[i]);
  }
  for (const OpCall& op : m.ops) b.add_op(op.name, op.args);
  set_io(b, m.inputs, true);
  set_io(b, m.outputs, false);
  b.set_source_graph_hash(m.source_graph_hash);
  return b.finish();  // sealed: its checksums match
}

class Mutator {
 public:
  Mutator(Model& m, unsigned seed, const std::vector<std::string>& op_names)
      : m_(m), rng_(seed), op_names_(op_names) {}

  // One mutation; false when the one picked had nothing to work on.
  bool mutate_once() {
    switch (below(16)) {
      case 0:
      case 1:
      case 2: return tensor_shape();
      case 3:
      case 4: return tensor_dtype();
      case 5: return tensor_placement();
      case 6: return constant_size();
      case 7:
      case 8: return constant_bytes();
      case 9: return toggle_constant();
      case 10:
      case 11: return scalar();
      case 12: return list();
      case 13: return op_arg();
      case 14: return op_structure();
      default: return io_or_clone();
    }
  }

 private:
  size_t below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }
  bool chance(unsigned one_in) { return below(one_in) == 0; }

  template <typename T>
  std::vector<size_t> ids_of() const {
    std::vector<size_t> out;
    for (size_t i = 0; i < m_.values.size(); ++i) {
      if (std::holds_alternative<T>(m_.values[i])) out.push_back(i);
    }
    return out;
  }
  template <typename T>
  T* pick(size_t* id_out = nullptr) {
    const auto ids = ids_of<T>();
    if (ids.empty()) return nullptr;
    const size_t id = ids[below(ids.size())];
    if (id_out) *id_out = id;
    return &std::get<T>(m_.values[id]);
  }
  // A constant tensor when `constant`, else any tensor.
  TensorValue* pick_tensor(size_t* id, bool constant) {
    std::vector<size_t> ids;
    for (size_t i = 0; i < m_.values.size(); ++i) {
      if (std::holds_alternative<TensorValue>(m_.values[i]) && (!constant || m_.constants[i])) {
        ids.push_back(i);
      }
    }
    if (ids.empty()) return nullptr;
    *id = ids[below(ids.size())];
    return &std::get<TensorValue>(m_.values[*id]);
  }

  int64_t interesting_size(int64_t old) {
    static const int64_t table[] = {0,
                                    1,
                                    2,
                                    3,
                                    4,
                                    5,
                                    7,
                                    8,
                                    9,
                                    15,
                                    16,
                                    17,
                                    33,
                                    64,
                                    127,
                                    255,
                                    -1,
                                    1 << 16,
                                    int64_t(1) << 31,
                                    int64_t(1) << 40};
    switch (below(4)) {
      case 0: return table[below(std::size(table))];
      case 1: return wrap_add(old, chance(2) ? 1 : -1);
      case 2: return chance(2) ? wrap_mul(old, 2) : old / 2;
      default: return static_cast<int64_t>(below(24)) + 1;
    }
  }

  // Keeps a constant's byte count equal to its spec's, most of the time, so the blob passes
  // deserialize() and the change reaches the loader and the op builders; only for specs
  // small enough to hold in memory.
  void resize_constant(size_t id) {
    if (!m_.constants[id] || chance(5)) return;
    const TensorSpec& spec = std::get<TensorValue>(m_.values[id]).spec;
    uint64_t numel = 1;
    for (int64_t s : spec.sizes) {
      if (s < 0 || s > (1 << 20)) return;
      numel *= static_cast<uint64_t>(s);
      if (numel > (1u << 20)) return;
    }
    if (static_cast<unsigned>(spec.dtype) > static_cast<unsigned>(DType::Int8x4)) return;
    Bytes& c = *m_.constants[id];
    const size_t want = static_cast<size_t>(constant_byte_size(spec));
    const size_t old = c.size();
    c.resize(want);
    for (size_t i = old; i < want; ++i) c[i] = static_cast<uint8_t>(i * 13 + 5);
  }

  bool tensor_shape() {
    size_t id;
    TensorValue* t = pick_tensor(&id, chance(2));
    if (!t) return false;
    // Insert (rank up to 5, one past the limit), drop or change one dim.
    mutate_items(t->spec.sizes, 5, [&](int64_t s) { return interesting_size(s); });
    resize_constant(id);
    return true;
  }

  bool tensor_dtype() {
    size_t id;
    TensorValue* t = pick_tensor(&id, chance(2));
    if (!t) return false;
    // Mostly a real dtype, now and then one past the enum.
    t->spec.dtype = static_cast<DType>(chance(16) ? 5 + below(3) : below(5));
    resize_constant(id);
    return true;
  }

  bool tensor_placement() {
    size_t id;
    TensorValue* t = pick_tensor(&id, false);
    if (!t) return false;
    if (chance(3)) {
      t->spec.storage = static_cast<StorageType>(chance(16) ? 2 : below(2));
    } else {
      t->spec.layout = static_cast<MemoryLayout>(chance(16) ? 6 + below(2) : below(6));
    }
    return true;
  }

  bool constant_size() {
    size_t id;
    if (!pick_tensor(&id, true)) return false;
    Bytes& c = *m_.constants[id];
    switch (below(4)) {
      case 0: c.clear(); break;
      case 1: c.resize(c.size() + 1 + below(8), 0x41); break;
      case 2:
        if (!c.empty()) c.resize(c.size() - 1 - below(std::min<size_t>(c.size(), 8)));
        break;
      default: c.resize(c.size() * 4 + below(4), 0x3f); break;  // as if each element were 4 bytes
    }
    return true;
  }

  bool constant_bytes() {
    size_t id;
    TensorValue* t = pick_tensor(&id, true);
    if (!t || m_.constants[id]->empty()) return false;
    Bytes& c = *m_.constants[id];
    if (t->spec.dtype == DType::Float32 && c.size() >= 4 && chance(2)) {
      static const float table[] = {0.0f,
                                    -0.0f,
                                    1.0f,
                                    -1.0f,
                                    1e-30f,
                                    -1e-30f,
                                    1e30f,
                                    -1e30f,
                                    1.4e-45f,
                                    3.4e38f,
                                    std::numeric_limits<float>::infinity(),
                                    -std::numeric_limits<float>::infinity(),
                                    std::numeric_limits<float>::quiet_NaN()};
      const float v = table[below(std::size(table))];
      const size_t count = chance(2) ? c.size() / 4 : 1;  // every element or one
      for (size_t k = 0; k < count; ++k) {
        const size_t at = count == 1 ? below(c.size() / 4) * 4 : k * 4;
        std::memcpy(&c[at], &v, 4);
      }
      return true;
    }
    static const uint8_t bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
    const size_t at = below(c.size());
    c[at] =
        chance(2) ? bytes[below(std::size(bytes))] : static_cast<uint8_t>(c[at] ^ (1u << below(8)));
    return true;
  }

  bool toggle_constant() {
    size_t id;
    if (!pick_tensor(&id, false)) return false;
    if (m_.constants[id]) {
      m_.constants[id].reset();
    } else {
      m_.constants[id] = Bytes();
      resize_constant(id);
    }
    return true;
  }

  double interesting_float(double old) {
    static const double table[] = {0.0,
                                   -0.0,
                                   1.0,
                                   -1.0,
                                   0.5,
                                   1e-45,
                                   1e-38,
                                   1e-30,
                                   1e30,
                                   3.4e38,
                                   1e300,
                                   1.1920928955078125e-07,
                                   std::nan(""),
                                   std::numeric_limits<double>::infinity(),
                                   -std::numeric_limits<double>::infinity()};
    switch (below(3)) {
      case 0: return table[below(std::size(table))];
      case 1: return old * (chance(2) ? 2.0 : 0.5);
      default: return -old;
    }
  }
  int64_t interesting_int(int64_t old) {
    static const int64_t table[] = {0,
                                    1,
                                    -1,
                                    2,
                                    3,
                                    4,
                                    -128,
                                    -129,
                                    127,
                                    128,
                                    255,
                                    256,
                                    1024,
                                    65535,
                                    65536,
                                    (1 << 20) - 1,
                                    1 << 20,
                                    std::numeric_limits<int32_t>::max(),
                                    std::numeric_limits<int32_t>::min(),
                                    std::numeric_limits<int64_t>::max(),
                                    std::numeric_limits<int64_t>::min()};
    switch (below(3)) {
      case 0: return table[below(std::size(table))];
      case 1: return wrap_add(old, static_cast<int64_t>(below(5)) - 2);
      default: return static_cast<int64_t>(below(64)) - 32;
    }
  }

  bool scalar() {
    switch (below(3)) {
      case 0:
        if (auto* v = pick<IntValue>()) return v->value = interesting_int(v->value), true;
        return false;
      case 1:
        if (auto* v = pick<FloatValue>()) return v->value = interesting_float(v->value), true;
        return false;
      default:
        if (auto* v = pick<BoolValue>()) return v->value = !v->value, true;
        if (auto* v = pick<StringValue>()) return v->value = chance(2) ? "" : v->value + "x", true;
        return false;
    }
  }

  template <typename List, typename Fn>
  bool mutate_items(List& items, size_t max_items, Fn&& interesting) {
    const size_t r = below(6);
    if (r == 0 && items.size() < max_items) {
      items.insert(items.begin() + static_cast<ptrdiff_t>(below(items.size() + 1)),
                   interesting(items.empty() ? 1 : items.front()));
    } else if (r == 1 && !items.empty()) {
      items.erase(items.begin() + static_cast<ptrdiff_t>(below(items.size())));
    } else if (!items.empty()) {
      auto& x = items[below(items.size())];
      x = interesting(x);
    } else {
      items.push_back(interesting(1));
    }
    return true;
  }

  bool list() {
    switch (below(3)) {
      case 0:
        if (auto* v = pick<IntListValue>()) {
          return mutate_items(v->items, 8, [&](int64_t x) { return interesting_int(x); });
        }
        return false;
      case 1:
        if (auto* v = pick<FloatListValue>()) {
          return mutate_items(v->items, 8, [&](double x) { return interesting_float(x); });
        }
        return false;
      default:
        if (auto* v = pick<ValueListValue>(); v && !m_.values.empty()) {
          return mutate_items(
              v->items, 8, [&](ValueId) { return static_cast<ValueId>(below(m_.values.size())); });
        }
        return false;
    }
  }

  // Another value for one argument: mostly one of the same kind (the blob still passes the
  // signature check and the op builder sees an unexpected tensor or scalar).
  bool op_arg() {
    if (m_.ops.empty()) return false;
    OpCall& op = m_.ops[below(m_.ops.size())];
    if (op.args.empty() || m_.values.empty()) return false;
    ValueId& arg = op.args[below(op.args.size())];
    if (chance(4)) {
      arg = static_cast<ValueId>(below(m_.values.size()));
      return true;
    }
    std::vector<size_t> same;
    for (size_t i = 0; i < m_.values.size(); ++i) {
      if (m_.values[i].index() == m_.values[arg].index() && i != arg) same.push_back(i);
    }
    if (same.empty()) return false;
    arg = static_cast<ValueId>(same[below(same.size())]);
    return true;
  }

  bool op_structure() {
    if (m_.ops.empty()) return false;
    const size_t k = below(m_.ops.size());
    switch (below(6)) {
      case 0:
        if (op_names_.empty()) return false;
        m_.ops[k].name = op_names_[below(op_names_.size())];
        return true;
      case 1: {
        const size_t j = below(m_.ops.size());
        std::swap(m_.ops[k], m_.ops[j]);
        return j != k;
      }
      case 2: m_.ops.erase(m_.ops.begin() + static_cast<ptrdiff_t>(k)); return true;
      case 3:
        m_.ops.insert(m_.ops.begin() + static_cast<ptrdiff_t>(below(m_.ops.size() + 1)), m_.ops[k]);
        return true;
      case 4:
        if (m_.ops[k].args.empty()) return false;
        m_.ops[k].args.erase(m_.ops[k].args.begin() +
                             static_cast<ptrdiff_t>(below(m_.ops[k].args.size())));
        return true;
      default:
        if (m_.values.empty()) return false;
        m_.ops[k].args.push_back(static_cast<ValueId>(below(m_.values.size())));
        return true;
    }
  }

  bool io_or_clone() {
    if (m_.values.empty()) return false;
    const size_t r = below(5);
    if (r == 0) {
      // A copy of a value (its own id at the end), used in place of the original by one
      // argument: e.g. a second tensor of another shape for one op only.
      const size_t id = below(m_.values.size());
      m_.values.push_back(m_.values[id]);
      m_.constants.push_back(m_.constants[id]);
      for (OpCall& op : m_.ops) {
        for (ValueId& a : op.args) {
          if (a == id && chance(2)) {
            a = static_cast<ValueId>(m_.values.size() - 1);
            return true;
          }
        }
      }
      return true;
    }
    std::vector<GraphIO>& io = chance(2) ? m_.inputs : m_.outputs;
    if (r == 1 || io.empty()) {
      io.push_back({static_cast<ValueId>(below(m_.values.size())), chance(2) ? "" : "extra"});
    } else if (r == 2) {
      io.erase(io.begin() + static_cast<ptrdiff_t>(below(io.size())));
    } else {
      io[below(io.size())].value = static_cast<ValueId>(below(m_.values.size()));
    }
    return true;
  }

  Model& m_;
  std::minstd_rand rng_;
  const std::vector<std::string>& op_names_;
};

}  // namespace

std::optional<std::vector<uint8_t>> mutate_blob_structure(
    const uint8_t* data, size_t size, unsigned seed, const std::vector<std::string>& op_names,
    const OpSignatureTable* prefer_valid_for) {
  Model original;
  try {
    original = take_apart(data, size);
  } catch (const vkd::Error&) {
    return std::nullopt;
  }
  std::optional<Bytes> last;
  for (unsigned attempt = 0; attempt < 6; ++attempt) {
    Model m = original;
    Mutator mutator(m, seed + attempt * 0x9e3779b9u, op_names);
    bool changed = false;
    for (int tries = 0; tries < 8 && !changed; ++tries) changed = mutator.mutate_once();
    if (!changed) continue;
    try {
      last = put_together(m);
    } catch (const vkd::Error&) {
      continue;  // e.g. a size the builder cannot write
    }
    if (!prefer_valid_for) return last;
    try {
      deserialize(*last, prefer_valid_for);
      return last;
    } catch (const vkd::Error&) {
      // try another mutation; the last invalid one is the answer if none passes
    }
  }
  return last;
}

}  // namespace vkd::fuzz
