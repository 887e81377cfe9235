#include "compiler/Parse.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "compiler/DynamicLength.h"
#include "compiler/StrictJson.h"

#include "compiler/ShapeInference.h"
#include "compiler/ops/EdgeOp.h"
#include "core/Error.h"
#include "core/TensorLimits.h"
#include "partitioner_schema/OpSchema.h"

namespace vkd::compiler {

namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kGraphVersion = 1;
constexpr size_t kMaxRank = kMaxGraphRank;
static_assert(kMaxGraphRank == kMaxTensorRank, "one rank cap for every reader (TensorLimits.h)");

// ---- JSON helpers ----------------------------------------------------------------------------

// A short rendering of a JSON value for messages.
std::string show(const Json& j) {
  std::string s = j.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// The field `key` of `obj`, which must be an object; errors name `where`.
const Json& field(const Json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  VKD_CHECK(it != obj.end(), ErrorCode::InvalidArgument, where, ": missing field '", key, "'");
  return *it;
}

void only_fields(const Json& obj, std::initializer_list<const char*> allowed,
                 const std::string& where) {
  for (const auto& item : obj.items()) {
    bool ok = false;
    std::string list;
    for (const char* a : allowed) {
      ok = ok || item.key() == a;
      list += list.empty() ? "" : ", ";
      list += a;
    }
    VKD_CHECK(ok, ErrorCode::InvalidArgument, where, ": unknown field '", item.key(),
              "' (expected ", list, ")");
  }
}

std::vector<std::string> string_list(const Json& j, const std::string& where) {
  VKD_CHECK(j.is_array(), ErrorCode::InvalidArgument, where, ": must be an array of strings, got ",
            j.type_name());
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    VKD_CHECK(j[i].is_string(), ErrorCode::InvalidArgument, where, ": element ", i,
              " must be a string, got ", show(j[i]));
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

// A JSON literal -> ArgValue (ints -> int64, floats -> double, lists keep their element type:
// any float makes a list of doubles).
ArgValue to_arg(const Json& j, const std::string& where) {
  int64_t i = 0;
  if (j.is_null()) return NoneArg{};
  if (j.is_boolean()) return j.get<bool>();
  if (json_int(j, &i)) return i;
  if (j.is_number_unsigned())
    VKD_THROW(ErrorCode::InvalidArgument, where, ": integer ", show(j), " does not fit in int64");
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_array()) {
    bool any_float = false;
    for (size_t k = 0; k < j.size(); ++k) {
      VKD_CHECK(j[k].is_number() && !(j[k].is_number_unsigned() && !json_int(j[k], &i)),
                ErrorCode::InvalidArgument, where, ": list element ", k, " must be a number, got ",
                show(j[k]));
      any_float = any_float || j[k].is_number_float();
    }
    if (any_float) {
      std::vector<double> out;
      for (const Json& e : j) out.push_back(e.get<double>());
      return out;
    }
    std::vector<int64_t> out;
    for (const Json& e : j) {
      json_int(e, &i);
      out.push_back(i);
    }
    return out;
  }
  VKD_THROW(ErrorCode::InvalidArgument, where,
            ": must be a literal (number, bool, string, list "
            "of numbers or null), got ",
            j.type_name());
}

// ---- values ------------------------------------------------------------------------------------

struct Decl {
  std::string name;
  std::string dtype_name;  // as written: float32, float16, int8, int32, int64, or a foreign one
  std::vector<int64_t> shape;
  std::optional<std::string> data;
  bool foreign = false;  // a dtype no device tensor has (Value::foreign_dtype)
};

struct DTypeInfo {
  DType dtype;     // in the graph (int64 -> int32)
  const char* st;  // the safetensors dtype of `data`
  size_t st_size;
};

std::optional<DTypeInfo> value_dtype(const std::string& name) {
  if (name == "float32") return DTypeInfo{DType::Float32, "F32", 4};
  if (name == "float16") return DTypeInfo{DType::Float16, "F16", 2};
  if (name == "int8") return DTypeInfo{DType::Int8, "I8", 1};
  if (name == "int32") return DTypeInfo{DType::Int32, "I32", 4};
  if (name == "int64") return DTypeInfo{DType::Int32, "I64", 8};
  return std::nullopt;
}

// The element size of a dtype a graph may carry between CPU ops (masks, token ids) but no
// device tensor has; int64 is also one for a value that is not a constant.
std::optional<size_t> foreign_element_size(const std::string& name) {
  static const std::map<std::string, size_t> sizes = {
      {"bool", 1}, {"uint8", 1}, {"int16", 2}, {"int64", 8}, {"float64", 8}, {"bfloat16", 2}};
  auto it = sizes.find(name);
  return it == sizes.end() ? std::nullopt : std::optional<size_t>(it->second);
}

Decl parse_decl(const std::string& name, const Json& j) {
  const std::string where = "value '" + name + "'";
  VKD_CHECK(!name.empty(), ErrorCode::InvalidArgument, "values: a value has an empty name");
  VKD_CHECK(j.is_object(), ErrorCode::InvalidArgument, where, ": must be an object, got ",
            j.type_name());
  only_fields(j, {"dtype", "shape", "data"}, where);
  Decl d;
  d.name = name;
  const Json& jd = field(j, "dtype", where);
  VKD_CHECK(jd.is_string() && (value_dtype(jd.get<std::string>()).has_value() ||
                               foreign_element_size(jd.get<std::string>()).has_value()),
            ErrorCode::InvalidArgument, where,
            ": field 'dtype': expected one of \"float32\", \"float16\", \"int8\", \"int32\", "
            "\"int64\" or, for a value no device op touches, \"bool\", \"uint8\", \"int16\", "
            "\"float64\", \"bfloat16\"; got ",
            show(jd));
  d.dtype_name = jd.get<std::string>();
  const Json& js = field(j, "shape", where);
  VKD_CHECK(js.is_array(), ErrorCode::InvalidArgument, where,
            ": field 'shape': must be an array of integers, got ", show(js));
  VKD_CHECK(js.size() <= kMaxRank, ErrorCode::InvalidArgument, where, ": field 'shape': rank ",
            js.size(), " is above the supported ", kMaxRank, " (", show(js), ")");
  for (size_t i = 0; i < js.size(); ++i) {
    int64_t dim = 0;
    VKD_CHECK(json_int(js[i], &dim) && dim >= 0, ErrorCode::InvalidArgument, where,
              ": field 'shape': element ", i, " must be a non-negative integer, got ", show(js[i]));
    d.shape.push_back(dim);
  }
  const auto device = value_dtype(d.dtype_name);
  const std::string too_large =
      tensor_size_problem(d.shape, device ? device->st_size : *foreign_element_size(d.dtype_name));
  VKD_CHECK(too_large.empty(), ErrorCode::InvalidArgument, where, ": field 'shape': ", show(js),
            ": ", too_large);
  if (j.contains("data")) {
    const Json& jdata = j["data"];
    VKD_CHECK(jdata.is_string() && !jdata.get<std::string>().empty(), ErrorCode::InvalidArgument,
              where, ": field 'data': must be a tensor name (a non-empty string), got ",
              show(jdata));
    d.data = jdata.get<std::string>();
  }
  // int64 constants are narrowed to int32; any other int64 value is foreign.
  d.foreign = !device || (d.dtype_name == "int64" && !d.data);
  VKD_CHECK(!d.foreign || !d.data, ErrorCode::InvalidArgument, where,
            ": field 'dtype': ", d.dtype_name,
            " constants are not accepted (constants are float32, float16, int8, "
            "int32 or int64)");
  return d;
}

Value make_constant(const Decl& d, const SafetensorsFile* weights) {
  const std::string where = "value '" + d.name + "'";
  VKD_CHECK(weights != nullptr, ErrorCode::InvalidArgument, where, ": field 'data': names tensor '",
            *d.data, "' but no weights file was given (--weights)");
  const SafetensorsTensorView* t = weights->find(*d.data);
  VKD_CHECK(t != nullptr, ErrorCode::InvalidArgument, where, ": field 'data': tensor '", *d.data,
            "' is not in the weights file '", weights->source_name(), "'");
  const DTypeInfo info = *value_dtype(d.dtype_name);
  VKD_CHECK(t->dtype == info.st, ErrorCode::InvalidArgument, where, ": field 'data': tensor '",
            *d.data, "' has dtype ", t->dtype, ", expected ", info.st, " (value dtype ",
            d.dtype_name, ")");
  VKD_CHECK(t->shape == d.shape, ErrorCode::InvalidArgument, where, ": field 'data': tensor '",
            *d.data, "' has shape ", shape_str(t->shape), ", expected ", shape_str(d.shape));
  Value v;
  v.name = d.name;
  v.dtype = info.dtype;
  v.shape = d.shape;
  v.weights_name = *d.data;
  if (d.dtype_name != "int64") {
    v.data = t->bytes();
    return v;
  }
  // int64 -> int32 (little-endian both ways), when every element fits.
  const size_t n = t->nbytes / 8;
  std::vector<uint8_t> out(n * 4);
  for (size_t i = 0; i < n; ++i) {
    uint64_t u = 0;
    for (int b = 0; b < 8; ++b) u |= static_cast<uint64_t>(t->data[i * 8 + b]) << (8 * b);
    const int64_t x = static_cast<int64_t>(u);
    VKD_CHECK(x >= std::numeric_limits<int32_t>::min() && x <= std::numeric_limits<int32_t>::max(),
              ErrorCode::InvalidArgument, where, ": int64 constant element ", i, " (= ", x,
              ") does not fit in int32");
    const uint32_t w = static_cast<uint32_t>(static_cast<int32_t>(x));
    for (int b = 0; b < 4; ++b) out[i * 4 + b] = static_cast<uint8_t>(w >> (8 * b));
  }
  v.data = std::move(out);
  return v;
}

// ---- nodes ------------------------------------------------------------------------------------

// Who defined `name` so far, for "defined twice" messages.
std::string definer(const Graph& g, const std::map<std::string, std::string>& written_by,
                    const std::string& name) {
  auto it = written_by.find(name);
  if (it != written_by.end()) return "output of " + it->second;
  for (const std::string& in : g.inputs) {
    if (in == name) return "graph input";
  }
  return "constant";
}

// The declared values ("values") and which of them the graph has used so far.
struct Declarations {
  std::vector<Decl> list;
  std::map<std::string, size_t> index;
  std::set<std::string> used;

  const Decl* find(const std::string& name) const {
    auto it = index.find(name);
    return it == index.end() ? nullptr : &list[it->second];
  }
};

// A graph input or a declared node output: a value with the declared dtype and shape.
Value declared_value(const Decl& d) {
  Value v;
  v.name = d.name;
  v.dtype = d.foreign ? DType::Float32 : value_dtype(d.dtype_name)->dtype;
  v.foreign_dtype = d.foreign ? d.dtype_name : "";
  v.shape = d.shape;
  return v;
}

void check_version(const Json& root) {
  int64_t version = 0;
  const Json& jv = field(root, "vkd_graph", "graph");
  VKD_CHECK(json_int(jv, &version), ErrorCode::InvalidArgument,
            "field 'vkd_graph': must be an integer, got ", show(jv));
  VKD_CHECK(version == kGraphVersion, ErrorCode::InvalidArgument,
            "field 'vkd_graph': unsupported version ", version, " (this compiler reads version ",
            kGraphVersion, ")");
}

Declarations parse_declarations(const Json& root) {
  const Json& jvalues = field(root, "values", "graph");
  VKD_CHECK(jvalues.is_object(), ErrorCode::InvalidArgument,
            "field 'values': must be an object, got ", jvalues.type_name());
  Declarations decls;
  for (const auto& item : jvalues.items()) {
    decls.index[item.key()] = decls.list.size();
    decls.list.push_back(parse_decl(item.key(), item.value()));
  }
  return decls;
}

// Whether every node of the graph IR reading `name` is an aten.embedding reading it as its ids
// (input 1), and one does: token ids, which the device holds as int32 (the caller's int64 ids
// are narrowed on the host with a range check: python/vkdelegate/runtime, vkd run). Looked at
// before the nodes are parsed, which type their outputs as they go; a malformed node is
// reported by the parse itself.
bool only_embedding_ids(const Json& root, const std::string& name) {
  if (!root.contains("nodes") || !root["nodes"].is_array()) return false;
  bool read = false;
  for (const Json& jn : root["nodes"]) {
    if (!jn.is_object() || !jn.contains("inputs") || !jn["inputs"].is_array()) continue;
    const Json& in = jn["inputs"];
    for (size_t k = 0; k < in.size(); ++k) {
      if (!in[k].is_string() || in[k].get<std::string>() != name) continue;
      const bool ids = k == 1 && jn.contains("op") && jn["op"] == "aten.embedding";
      if (!ids) return false;
      read = true;
    }
  }
  return read;
}

void add_graph_inputs(const Json& root, Declarations& decls, Graph& g) {
  const std::vector<std::string> inputs =
      string_list(field(root, "inputs", "graph"), "field 'inputs'");
  for (const std::string& name : inputs) {
    const Decl* d = decls.find(name);
    VKD_CHECK(d != nullptr, ErrorCode::InvalidArgument, "field 'inputs': input '", name,
              "' is not declared in 'values' (a graph input needs its dtype and shape)");
    VKD_CHECK(!d->data.has_value(), ErrorCode::InvalidArgument, "field 'inputs': input '", name,
              "' has 'data' (a graph input cannot be a constant)");
    VKD_CHECK(!decls.used.count(name), ErrorCode::InvalidArgument, "field 'inputs': input '", name,
              "' is listed twice");
    for (size_t k = 0; k < d->shape.size(); ++k) {
      // Graph inputs always become device tensors, which have no empty dims.
      VKD_CHECK(d->shape[k] >= 1, ErrorCode::InvalidArgument, "value '", name,
                "': field 'shape': size 0 in dim ", k, " of ", sizes_string(d->shape),
                " (a graph input needs every size >= 1)");
    }
    decls.used.insert(name);
    Value v = declared_value(*d);
    if (v.foreign_dtype == "int64" && only_embedding_ids(root, name)) {
      v.foreign_dtype.clear();
      v.dtype = DType::Int32;
    }
    g.add_value(std::move(v));
    g.inputs.push_back(name);
  }
}

void add_constants(Declarations& decls, const SafetensorsFile* weights, Graph& g) {
  for (const Decl& d : decls.list) {
    if (!d.data) continue;
    g.add_value(make_constant(d, weights));
    decls.used.insert(d.name);
  }
}

// The descriptor of the node's op, or nullptr for an op the compiler has none for (kept as
// given: a host node under --partition). Backend op names are refused: the graph IR is the
// edge dialect, and a node named like a backend op would reach the backend unchecked.
const EdgeOp* node_op(const Json& jn, const std::string& at, Node& node) {
  VKD_CHECK(jn.is_object(), ErrorCode::InvalidArgument, at, ": must be an object, got ",
            jn.type_name());
  const Json& jop = field(jn, "op", at);
  VKD_CHECK(jop.is_string(), ErrorCode::InvalidArgument, at, ": field 'op': must be a string, got ",
            show(jop));
  node.op = jop.get<std::string>();
  VKD_CHECK(!node.op.empty(), ErrorCode::InvalidArgument, at, ": field 'op': must not be empty");
  node.origin = at + " (" + node.op + ")";
  const EdgeOp* spec = find_edge_op(node.op);
  VKD_CHECK(spec != nullptr || schema::find_op_schema(node.op) == nullptr,
            ErrorCode::InvalidArgument, node.origin, ": field 'op': '", node.op,
            "' is a backend op; the graph IR takes edge-dialect ops (aten.*, "
            "quantized_decomposed.*, torchao.*, or any other op, left to the host)");
  only_fields(jn, {"op", "inputs", "args", "outputs"}, node.origin);
  return spec;
}

// Each named input must be defined earlier. A known op's inputs are padded with "" to its
// arity, a required one must be given (a tensor list, the last input of aten.cat, takes one or
// more values, each required); an unknown op's are kept as written.
void parse_node_inputs(const Json& jn, const EdgeOp* spec, const Graph& g, Node& node) {
  const std::string& where = node.origin;
  node.inputs = string_list(field(jn, "inputs", where), where + ": field 'inputs'");
  if (spec != nullptr && spec->tensor_list) {
    VKD_CHECK(node.inputs.size() >= spec->inputs.size(), ErrorCode::InvalidArgument, where,
              ": field 'inputs': at least ", spec->inputs.size(), " tensor input(s), got ",
              node.inputs.size());
  } else if (spec != nullptr) {
    VKD_CHECK(node.inputs.size() <= spec->inputs.size(), ErrorCode::InvalidArgument, where,
              ": field 'inputs': at most ", spec->inputs.size(), " tensor inputs, got ",
              node.inputs.size());
    node.inputs.resize(spec->inputs.size());
  }
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const std::string& in = node.inputs[i];
    if (in.empty()) {
      const size_t slot = spec ? std::min(i, spec->inputs.size() - 1) : i;
      VKD_CHECK(spec == nullptr || slot >= spec->required_inputs, ErrorCode::InvalidArgument, where,
                ": input ", spec ? spec->inputs[slot] : "", " (position ", i, ") is required");
      continue;
    }
    VKD_CHECK(g.has_value(in), ErrorCode::InvalidArgument, where, ": input '", in,
              "' is not defined (no graph input, constant or earlier output)");
  }
}

const EdgeArg& schema_arg(const EdgeOp& spec, const std::string& name, const std::string& afield) {
  for (const EdgeArg& a : spec.args) {
    if (name == a.name) return a;
  }
  std::string known;
  for (const EdgeArg& a : spec.args) known += std::string(known.empty() ? "" : ", ") + a.name;
  VKD_THROW(ErrorCode::InvalidArgument, afield, ": unknown argument of ", spec.name,
            " (accepted: ", known.empty() ? "none" : known, ")");
}

void check_arg_kind(const EdgeArg& as, const ArgValue& v, const Json& written,
                    const std::string& afield) {
  const bool is_none = std::holds_alternative<NoneArg>(v);
  VKD_CHECK(lit_matches(v, as.kind) || (is_none && as.nullable), ErrorCode::InvalidArgument, afield,
            ": must be ", lit_name(as.kind), as.nullable ? " or null" : "", ", got ",
            show(written));
}

// The node's "args" as literals; a known op's are checked against its signature (name, kind,
// None where allowed) and completed with their defaults, an unknown op's kept as written.
void parse_node_args(const Json& jn, const EdgeOp* spec, Node& node) {
  const std::string& where = node.origin;
  if (jn.contains("args")) {
    const Json& jargs = jn["args"];
    VKD_CHECK(jargs.is_object(), ErrorCode::InvalidArgument, where,
              ": field 'args': must be an object, got ", jargs.type_name());
    for (const auto& item : jargs.items()) {
      const std::string& name = item.key();
      const std::string afield = where + ": argument '" + name + "'";
      ArgValue v = to_arg(item.value(), afield);
      if (spec != nullptr) check_arg_kind(schema_arg(*spec, name, afield), v, item.value(), afield);
      node.args[name] = std::move(v);
    }
  }
  if (spec == nullptr) return;
  for (const EdgeArg& a : spec->args) {
    if (node.args.count(a.name)) continue;
    VKD_CHECK(!a.required, ErrorCode::InvalidArgument, where, ": argument '", a.name,
              "' is required but missing");
    if (a.def) node.args[a.name] = *a.def;
  }
  if (spec->complete_args) spec->complete_args(node.args);
}

// An unknown op may have any number of outputs; each must be declared in "values" (shape
// inference cannot type them, and says so). A known op with a variable count (split) has one
// or more; shape inference checks how many.
void parse_node_outputs(const Json& jn, const EdgeOp* spec, Declarations& decls, Graph& g,
                        std::map<std::string, std::string>& written_by, Node& node) {
  const std::string& where = node.origin;
  node.outputs = string_list(field(jn, "outputs", where), where + ": field 'outputs'");
  if (spec != nullptr && spec->outputs == 0) {
    VKD_CHECK(!node.outputs.empty(), ErrorCode::InvalidArgument, where,
              ": field 'outputs': expected one or more outputs, got none");
  } else {
    VKD_CHECK(spec == nullptr || node.outputs.size() == spec->outputs, ErrorCode::InvalidArgument,
              where, ": field 'outputs': expected ", spec ? spec->outputs : 0, " output(s), got ",
              node.outputs.size());
  }
  std::set<std::string> own;
  for (const std::string& out : node.outputs) {
    VKD_CHECK(!out.empty(), ErrorCode::InvalidArgument, where,
              ": field 'outputs': an output has an empty name");
    VKD_CHECK(own.insert(out).second, ErrorCode::InvalidArgument, where, ": output '", out,
              "' is listed twice; a value is defined once");
    VKD_CHECK(!g.has_value(out), ErrorCode::InvalidArgument, where, ": output '", out,
              "' is already defined (", definer(g, written_by, out), "); a value is defined once");
    if (const Decl* d = decls.find(out)) {
      // Declared: added with the declared type; shape inference checks it.
      g.add_value(declared_value(*d));
      decls.used.insert(out);
    }
    written_by[out] = node.origin;
  }
}

// A shape an op's rule computed from its inputs and arguments (a view to [2^62 + 1, 4] of a
// 4-element tensor) is held to the caps of a declared one, before any later node or pass
// multiplies its sizes.
void check_output_sizes(const Graph& g, const Node& node) {
  for (const std::string& out : node.outputs) {
    const Value& v = g.value(out);
    const std::string too_large = tensor_size_problem(v.shape, host_element_size(v.dtype));
    VKD_CHECK(too_large.empty(), ErrorCode::InvalidArgument, node.origin, ": output '", out, "' ",
              shape_str(v.shape), ": ", too_large);
  }
}

void add_nodes(const Json& root, Declarations& decls, Graph& g) {
  const Json& jnodes = field(root, "nodes", "graph");
  VKD_CHECK(jnodes.is_array(), ErrorCode::InvalidArgument, "field 'nodes': must be an array, got ",
            jnodes.type_name());
  std::map<std::string, std::string> written_by;
  for (size_t index = 0; index < jnodes.size(); ++index) {
    const Json& jn = jnodes[index];
    Node node;
    const EdgeOp* spec = node_op(jn, "node " + std::to_string(index), node);
    parse_node_inputs(jn, spec, g, node);
    parse_node_args(jn, spec, node);
    parse_node_outputs(jn, spec, decls, g, written_by, node);
    g.nodes.push_back(std::move(node));
    // Types the outputs (adding the undeclared ones) before the next node reads them.
    infer_node_shapes(g, g.nodes.size() - 1);
    check_output_sizes(g, g.nodes.back());
  }
}

void check_declarations_used(const Declarations& decls) {
  for (const Decl& d : decls.list) {
    VKD_CHECK(decls.used.count(d.name), ErrorCode::InvalidArgument, "value '", d.name,
              "': declared in 'values' but it is no graph input, has no 'data' and no node "
              "writes it");
  }
}

void set_graph_outputs(const Json& root, Graph& g) {
  const std::vector<std::string> outputs =
      string_list(field(root, "outputs", "graph"), "field 'outputs'");
  VKD_CHECK(!outputs.empty(), ErrorCode::InvalidArgument,
            "field 'outputs': the graph has no outputs");
  std::set<std::string> seen;
  for (const std::string& out : outputs) {
    VKD_CHECK(g.has_value(out), ErrorCode::InvalidArgument, "field 'outputs': output '", out,
              "' is not defined (no graph input, constant or node output)");
    VKD_CHECK(seen.insert(out).second, ErrorCode::InvalidArgument, "field 'outputs': output '", out,
              "' is listed twice");
  }
  g.outputs = outputs;
}

// The sections in the order their checks must run (each message names its section).
Graph parse_document(const Json& root, const SafetensorsFile* weights) {
  VKD_CHECK(root.is_object(), ErrorCode::InvalidArgument, "the graph must be a JSON object, got ",
            root.type_name());
  only_fields(root, {"vkd_graph", "inputs", "outputs", "values", "nodes", "dynamic"}, "graph");
  check_version(root);
  Declarations decls = parse_declarations(root);
  Graph g;
  add_graph_inputs(root, decls, g);
  add_constants(decls, weights, g);
  add_nodes(root, decls, g);
  check_declarations_used(decls);
  set_graph_outputs(root, g);
  if (root.contains("dynamic")) read_dynamic_section(root["dynamic"], g);
  return g;
}

std::string read_text_file(const std::string& path, const char* what) {
  std::error_code ec;
  VKD_CHECK(std::filesystem::exists(path, ec), ErrorCode::InvalidArgument, what, " '", path,
            "' does not exist");
  VKD_CHECK(std::filesystem::is_regular_file(path, ec), ErrorCode::InvalidArgument, what, " '",
            path, "' is not a regular file");
  std::ifstream in(path, std::ios::binary);
  VKD_CHECK(in.good(), ErrorCode::InvalidArgument, what, " '", path,
            "' cannot be opened for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  VKD_CHECK(!in.bad(), ErrorCode::InvalidArgument, what, " '", path, "' could not be read");
  return ss.str();
}

}  // namespace

const std::vector<std::string>& accepted_edge_ops() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> out;
    for (const EdgeOp& s : edge_ops()) out.push_back(s.name);
    return out;
  }();
  return kNames;
}

Graph parse_graph(const std::string& json_text, const std::string& source_name,
                  const SafetensorsFile* weights) {
  try {
    return parse_document(parse_json_strict(json_text), weights);
  } catch (const Error& e) {
    throw Error(e.code(), source_name + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    // Not expected (every access is type-checked first), but never let one escape as-is.
    throw Error(ErrorCode::InvalidArgument, source_name + ": " + e.what());
  }
}

Graph parse_graph_file(const std::string& json_path, const std::string& weights_path) {
  const std::string text = read_text_file(json_path, "graph file");
  std::optional<SafetensorsFile> weights;
  if (!weights_path.empty()) weights = SafetensorsFile::read(weights_path);
  return parse_graph(text, json_path, weights ? &*weights : nullptr);
}

}  // namespace vkd::compiler
