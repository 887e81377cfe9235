#include "compiler/DynamicLength.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <variant>

#include <nlohmann/json.hpp>

#include "compiler/Emit.h"
#include "compiler/StrictJson.h"
#include "core/Error.h"
#include "serialization/Deserializer.h"
#include "serialization/GraphAtLength.h"

namespace vkd::compiler {
namespace {

using Json = nlohmann::ordered_json;
namespace ser = serialization;

constexpr ErrorCode kBad = ErrorCode::InvalidArgument;
constexpr const char* kWhere = "field 'dynamic'";

int64_t int_field(const Json& obj, const char* key) {
  VKD_CHECK(obj.contains(key), kBad, kWhere, ": missing '", key, "'");
  int64_t v = 0;
  VKD_CHECK(json_int(obj[key], &v), kBad, kWhere, ": '", key, "' must be an integer, got ",
            obj[key].dump());
  return v;
}

// [i0, i1, ...] of `n` integers (an arg's name at `string_at` instead).
std::vector<int64_t> int_tuple(const Json& j, size_t n, const std::string& where,
                               int string_at = -1, std::string* text = nullptr) {
  VKD_CHECK(j.is_array() && j.size() == n, kBad, where, ": must be a list of ", n, " items, got ",
            j.dump());
  std::vector<int64_t> out;
  for (size_t k = 0; k < n; ++k) {
    if (static_cast<int>(k) == string_at) {
      VKD_CHECK(j[k].is_string(), kBad, where, ": item ", k, " must be an arg name");
      *text = j[k].get<std::string>();
      out.push_back(0);
      continue;
    }
    int64_t v = 0;
    VKD_CHECK(json_int(j[k], &v), kBad, where, ": item ", k, " must be an integer, got ",
              j[k].dump());
    out.push_back(v);
  }
  return out;
}

void check_coefficients(int64_t a, int64_t b, int64_t written, int64_t max,
                        const std::string& where) {
  VKD_CHECK(a >= -ser::kMaxDynamicCoefficient && a <= ser::kMaxDynamicCoefficient &&
                b >= -ser::kMaxDynamicCoefficient && b <= ser::kMaxDynamicCoefficient,
            kBad, where, ": coefficients a = ", a, ", b = ", b, " exceed +-",
            ser::kMaxDynamicCoefficient);
  VKD_CHECK(a * max + b == written, kBad, where, ": ", a, " * ", max, " + ", b, " = ", a * max + b,
            ", but the graph (written at the maximum length) holds ", written);
}

int64_t* arg_item(Node& node, const std::string& arg, int64_t element, const std::string& where) {
  const auto it = node.args.find(arg);
  VKD_CHECK(it != node.args.end(), kBad, where, ": ", node.origin, " has no arg '", arg, "'");
  if (element < 0) {
    auto* v = std::get_if<int64_t>(&it->second);
    VKD_CHECK(v != nullptr, kBad, where, ": arg '", arg, "' of ", node.origin,
              " is not an int (give the item of a list)");
    return v;
  }
  auto* list = std::get_if<std::vector<int64_t>>(&it->second);
  VKD_CHECK(list != nullptr && static_cast<size_t>(element) < list->size(), kBad, where, ": arg '",
            arg, "' of ", node.origin, " has no int item ", element);
  return &(*list)[static_cast<size_t>(element)];
}

// ---- comparing two compiled blobs -------------------------------------------------------------

struct Difference {
  ser::ValueId value;
  uint32_t element;
  int64_t here, there;
};

std::string label(const ser::DeserializedGraph& g, size_t id) {
  const auto& v = g.values[id];
  std::string s = "value " + std::to_string(id);
  if (const auto* t = std::get_if<ser::TensorValue>(&v))
    s += " (tensor '" + t->name + "')";
  else
    s += " (" + std::string(ser::to_string(ser::kind_of(v))) + ")";
  return s;
}

// "" when `x` and `y` have the same structure (ops, value kinds, dtypes, layouts, constants,
// floats, names); the first difference otherwise. The sizes and ints that differ go to `diffs`.
std::string compare(const ser::DeserializedGraph& x, const ser::DeserializedGraph& y,
                    std::vector<Difference>& diffs) {
  if (x.values.size() != y.values.size()) {
    return std::to_string(x.values.size()) + " values instead of " +
           std::to_string(y.values.size());
  }
  if (x.ops.size() != y.ops.size()) {
    return std::to_string(x.ops.size()) + " ops instead of " + std::to_string(y.ops.size());
  }
  for (size_t k = 0; k < x.ops.size(); ++k) {
    if (x.ops[k].name != y.ops[k].name || x.ops[k].args != y.ops[k].args) {
      return "op " + std::to_string(k) + " is '" + x.ops[k].name + "' instead of '" +
             y.ops[k].name + "' (or other arguments)";
    }
  }
  auto io_equal = [](const std::vector<ser::GraphIO>& a, const std::vector<ser::GraphIO>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].value != b[i].value || a[i].name != b[i].name) return false;
    }
    return true;
  };
  if (!io_equal(x.inputs, y.inputs) || !io_equal(x.outputs, y.outputs)) {
    return "other graph inputs or outputs";
  }
  for (size_t id = 0; id < x.values.size(); ++id) {
    const ser::Value& a = x.values[id];
    const ser::Value& b = y.values[id];
    const std::string what = label(x, id);
    if (a.index() != b.index()) return what + " is of another kind";
    const auto v = static_cast<ser::ValueId>(id);
    if (const auto* ta = std::get_if<ser::TensorValue>(&a)) {
      const auto& tb = std::get<ser::TensorValue>(b);
      if (ta->name != tb.name) return what + " has another name ('" + tb.name + "')";
      if (ta->spec.dtype != tb.spec.dtype || ta->spec.storage != tb.spec.storage ||
          ta->spec.layout != tb.spec.layout) {
        return what + " is " + std::string(to_string(ta->spec.dtype)) + " " +
               std::string(to_string(ta->spec.storage)) + " " +
               std::string(to_string(ta->spec.layout)) + " instead of " +
               std::string(to_string(tb.spec.dtype)) + " " +
               std::string(to_string(tb.spec.storage)) + " " +
               std::string(to_string(tb.spec.layout));
      }
      if (ta->spec.sizes.size() != tb.spec.sizes.size()) return what + " has another rank";
      if (ta->constant.has_value() != tb.constant.has_value()) return what + " is no constant";
      if (ta->constant) {
        // Equal, or one the leading rows of the other (a table cut to the length).
        const size_t n = std::min(ta->constant->size, tb.constant->size);
        const bool prefix = std::memcmp(ta->constant->data, tb.constant->data, n) == 0;
        if (!prefix) return what + " is a constant whose contents change with the length";
      }
      for (size_t k = 0; k < ta->spec.sizes.size(); ++k) {
        if (ta->spec.sizes[k] != tb.spec.sizes[k]) {
          diffs.push_back({v, static_cast<uint32_t>(k), ta->spec.sizes[k], tb.spec.sizes[k]});
        }
      }
    } else if (const auto* ia = std::get_if<ser::IntValue>(&a)) {
      const int64_t ib = std::get<ser::IntValue>(b).value;
      if (ia->value != ib) diffs.push_back({v, 0, ia->value, ib});
    } else if (const auto* la = std::get_if<ser::IntListValue>(&a)) {
      const auto& lb = std::get<ser::IntListValue>(b).items;
      if (la->items.size() != lb.size()) return what + " has another length";
      for (size_t k = 0; k < lb.size(); ++k) {
        if (la->items[k] != lb[k]) {
          diffs.push_back({v, static_cast<uint32_t>(k), la->items[k], lb[k]});
        }
      }
    } else if (const auto* fa = std::get_if<ser::FloatValue>(&a)) {
      const double fb = std::get<ser::FloatValue>(b).value;
      if (std::memcmp(&fa->value, &fb, sizeof fb) != 0) {
        std::ostringstream os;
        os << what << " is " << fa->value << " instead of " << fb;
        return os.str();
      }
    } else if (const auto* fl = std::get_if<ser::FloatListValue>(&a)) {
      const auto& fb = std::get<ser::FloatListValue>(b).items;
      if (fl->items.size() != fb.size() ||
          std::memcmp(fl->items.data(), fb.data(), fb.size() * sizeof(double)) != 0) {
        return what + " holds other floats";
      }
    } else if (const auto* ba = std::get_if<ser::BoolValue>(&a)) {
      if (ba->value != std::get<ser::BoolValue>(b).value) return what + " is another bool";
    } else if (const auto* sa = std::get_if<ser::StringValue>(&a)) {
      if (sa->value != std::get<ser::StringValue>(b).value) return what + " is another string";
    } else if (const auto* va = std::get_if<ser::ValueListValue>(&a)) {
      if (va->items != std::get<ser::ValueListValue>(b).items) return what + " lists other values";
    }
  }
  return "";
}

std::string first_unsupported(const CompileResult& r) {
  return r.unsupported.empty() ? std::string() : r.unsupported.front();
}

}  // namespace

void read_dynamic_section(const Json& section, Graph& g) {
  VKD_CHECK(section.is_object(), kBad, kWhere, ": must be an object");
  for (const auto& item : section.items()) {
    static const std::set<std::string> known = {"name", "min", "max", "values", "args"};
    VKD_CHECK(known.count(item.key()) != 0, kBad, kWhere, ": unknown field '", item.key(),
              "' (expected name, min, max, values, args)");
  }
  DynamicSpec d;
  VKD_CHECK(section.contains("name") && section["name"].is_string(), kBad, kWhere,
            ": 'name' must be a string");
  d.name = section["name"].get<std::string>();
  d.min = int_field(section, "min");
  d.max = int_field(section, "max");
  VKD_CHECK(d.min >= 1 && d.min < d.max && d.max <= ser::kMaxDynamicLength, kBad, kWhere,
            ": lengths [", d.min, ", ", d.max,
            "] must satisfy 1 <= min < max <= ", ser::kMaxDynamicLength);
  if (section.contains("values")) {
    VKD_CHECK(section["values"].is_object(), kBad, kWhere, ": 'values' must be an object");
    for (const auto& item : section["values"].items()) {
      const std::string where = std::string(kWhere) + ": value '" + item.key() + "'";
      VKD_CHECK(g.has_value(item.key()), kBad, where, ": not a value of the graph");
      const Value& v = g.value(item.key());
      VKD_CHECK(item.value().is_array(), kBad, where, ": must be a list of [dim, a, b]");
      VKD_CHECK(!v.is_constant() || item.value().size() == 1, kBad, where,
                ": a constant follows the length in one dimension");
      for (const Json& t : item.value()) {
        const auto dab = int_tuple(t, 3, where);
        VKD_CHECK(dab[0] >= 0 && static_cast<size_t>(dab[0]) < v.shape.size(), kBad, where,
                  ": dim ", dab[0], " out of range (shape ", shape_str(v.shape), ")");
        const auto dim = static_cast<size_t>(dab[0]);
        check_coefficients(dab[1], dab[2], v.shape[dim], d.max,
                           where + " dim " + std::to_string(dim));
        if (v.is_constant()) {  // its first rows at a shorter length: a prefix of its bytes
          const bool leading = std::all_of(v.shape.begin(), v.shape.begin() + dab[0],
                                           [](int64_t n) { return n == 1; });
          VKD_CHECK(leading && dab[1] >= 0, kBad, where, ": constant ", shape_str(v.shape),
                    " can follow the length only in its first dimension larger than 1, growing "
                    "with it");
        }
        d.dims.push_back({item.key(), dim, dab[1], dab[2]});
      }
    }
  }
  if (section.contains("args")) {
    VKD_CHECK(section["args"].is_array(), kBad, kWhere,
              ": 'args' must be a list of [node, arg, element, a, b]");
    for (size_t i = 0; i < section["args"].size(); ++i) {
      const std::string where = std::string(kWhere) + ": args[" + std::to_string(i) + "]";
      std::string arg;
      const auto t = int_tuple(section["args"][i], 5, where, 1, &arg);
      VKD_CHECK(t[0] >= 0 && static_cast<size_t>(t[0]) < g.nodes.size(), kBad, where, ": node ",
                t[0], " out of range (the graph has ", g.nodes.size(), " nodes)");
      VKD_CHECK(t[2] >= -1, kBad, where, ": element ", t[2], " (-1: the int itself)");
      Node& node = g.nodes[static_cast<size_t>(t[0])];
      const int64_t* item = arg_item(node, arg, t[2], where);
      check_coefficients(t[3], t[4], *item, d.max, where);
      d.args.push_back({static_cast<size_t>(t[0]), arg, t[2], t[3], t[4]});
    }
  }
  VKD_CHECK(!d.dims.empty(), kBad, kWhere, ": no value dimension follows the length");
  g.dynamic = std::move(d);
}

Graph graph_at_length(const Graph& g, int64_t length) {
  VKD_CHECK(g.dynamic.has_value(), ErrorCode::Internal, "graph_at_length: no dynamic length");
  Graph out = g;
  out.dynamic.reset();
  for (const DynamicDim& d : g.dynamic->dims) {
    Value& v = out.value(d.value);
    const int64_t before = element_count(v.shape);
    v.shape.at(d.dim) = d.a * length + d.b;
    if (v.data && before > 0) {  // the leading rows (read_dynamic_section checked it)
      v.data->resize(v.data->size() / static_cast<size_t>(before) *
                     static_cast<size_t>(element_count(v.shape)));
    }
  }
  for (const DynamicArg& a : g.dynamic->args) {
    *arg_item(out.nodes.at(a.node), a.arg, a.element, "dynamic length") = a.a * length + a.b;
  }
  return out;
}

std::vector<int64_t> checked_lengths(int64_t min, int64_t max) {
  std::set<int64_t> out;
  if (max - min + 1 <= 64) {
    for (int64_t l = min; l <= max; ++l) out.insert(l);
  } else {
    for (int64_t k = 0; k < 16; ++k) {
      out.insert(min + k);
      out.insert(max - k);
    }
    for (int64_t k = 1; k <= 32; ++k) out.insert(min + (max - min) * k / 33);
  }
  return {out.begin(), out.end()};
}

CompileResult compile_dynamic(const Graph& g,
                              const std::function<CompileResult(Graph)>& compile_static) {
  const DynamicSpec& d = *g.dynamic;
  const std::string T = d.name.empty() ? "L" : d.name;
  CompileResult result = compile_static(graph_at_length(g, d.max));
  if (!result.ok()) return result;
  const ser::DeserializedGraph at_max = ser::deserialize(result.blob);
  auto refuse = [&](int64_t length, const std::string& why) {
    VKD_THROW(ErrorCode::Unsupported, "the dynamic length ", T, " (", d.min, " to ", d.max,
              "): compiled at ", T, " = ", length, ", ", why,
              "; export with another range or at a fixed length");
  };
  auto compiled_at = [&](int64_t length, std::vector<uint8_t>& keep) {
    CompileResult r;
    try {
      r = compile_static(graph_at_length(g, length));
    } catch (const Error& e) {  // say which length the graph was refused at
      throw Error(e.code(), "the dynamic length " + T + " (" + std::to_string(d.min) + " to " +
                                std::to_string(d.max) + "): compiled at " + T + " = " +
                                std::to_string(length) + ", " + e.what());
    }
    if (!r.ok()) refuse(length, first_unsupported(r));
    keep = std::move(r.blob);
    return ser::deserialize(keep);
  };

  // The entries from the maximum and the length below it, then every checked length compared.
  std::vector<uint8_t> below_blob;
  const ser::DeserializedGraph below = compiled_at(d.max - 1, below_blob);
  std::vector<Difference> diffs;
  const std::string why = compare(below, at_max, diffs);
  if (!why.empty()) refuse(d.max - 1, why + " than at the maximum");
  ser::DynamicLength table{d.name, d.min, d.max, {}};
  for (const Difference& x : diffs) {
    const int64_t a = x.there - x.here;  // the lengths differ by one
    table.entries.push_back({x.value, x.element, a, x.there - a * d.max});
  }
  ser::DeserializedGraph with_table = at_max;
  with_table.dynamic = table;
  for (const int64_t length : checked_lengths(d.min, d.max)) {
    if (length >= d.max - 1) continue;
    std::vector<uint8_t> blob;
    const ser::DeserializedGraph got = compiled_at(length, blob);
    const ser::DeserializedGraph want = ser::graph_at_length(with_table, length);
    std::vector<Difference> off;
    std::string what = compare(got, want, off);
    if (what.empty() && !off.empty()) {
      const Difference& x = off.front();
      what = label(got, x.value) + " element " + std::to_string(x.element) + " is " +
             std::to_string(x.here) + ", not " + std::to_string(x.there) +
             " (a * length + b of the two longest lengths), other";
    }
    if (!what.empty()) refuse(length, what + " than at the maximum");
  }
  result.blob = emit_blob(result.graph, at_max.source_graph_hash, &table);
  return result;
}

}  // namespace vkd::compiler
