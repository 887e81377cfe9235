#include "compiler/Parse.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "compiler/StrictJson.h"

#include "compiler/ShapeInference.h"
#include "runtime/core/Error.h"

namespace vkd::compiler {

namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kGraphVersion = 1;
constexpr size_t kMaxRank = 4;
constexpr int64_t kMaxNumel = int64_t{1} << 40;

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

// ---- the op table ----------------------------------------------------------------------------

enum class Lit { Int, Number, Bool, String, Ints };

const char* lit_name(Lit k) {
  switch (k) {
    case Lit::Int: return "an integer";
    case Lit::Number: return "a number";
    case Lit::Bool: return "a bool";
    case Lit::String: return "a string";
    case Lit::Ints: return "a list of integers";
  }
  return "?";
}

struct ArgSpec {
  const char* name;
  Lit kind;
  bool required;
  bool nullable;
  std::optional<ArgValue> def;  // filled in when the arg is absent
};

struct OpSpec {
  const char* op;
  std::vector<const char*> inputs;  // ATen tensor argument names, schema order
  size_t required_inputs;
  std::vector<ArgSpec> args;
  size_t outputs;
};

ArgSpec req(const char* name, Lit kind, bool nullable = false) {
  return {name, kind, true, nullable, std::nullopt};
}
ArgSpec opt(const char* name, Lit kind, std::optional<ArgValue> def = std::nullopt,
            bool nullable = true) {
  return {name, kind, false, nullable, std::move(def)};
}

const std::vector<OpSpec>& op_table() {
  using V = std::vector<int64_t>;
  static const std::vector<OpSpec> kOps = {
      {"quantized_decomposed.quantize_per_tensor", {"input"}, 1,
       {req("scale", Lit::Number), req("zero_point", Lit::Int), req("quant_min", Lit::Int),
        req("quant_max", Lit::Int), req("dtype", Lit::String)},
       1},
      {"quantized_decomposed.dequantize_per_tensor", {"input"}, 1,
       {req("scale", Lit::Number), req("zero_point", Lit::Int), req("quant_min", Lit::Int),
        req("quant_max", Lit::Int), req("dtype", Lit::String), opt("out_dtype", Lit::String)},
       1},
      {"quantized_decomposed.dequantize_per_channel", {"input", "scales", "zero_points"}, 2,
       {req("axis", Lit::Int), req("quant_min", Lit::Int), req("quant_max", Lit::Int),
        req("dtype", Lit::String), opt("out_dtype", Lit::String)},
       1},
      {"aten.convolution", {"input", "weight", "bias"}, 2,
       {req("stride", Lit::Ints), req("padding", Lit::Ints), req("dilation", Lit::Ints),
        req("transposed", Lit::Bool), req("output_padding", Lit::Ints), req("groups", Lit::Int)},
       1},
      {"aten.linear", {"input", "weight", "bias"}, 2, {}, 1},
      {"aten.add.Tensor", {"self", "other"}, 2,
       {opt("alpha", Lit::Number, ArgValue(int64_t{1}), false)}, 1},
      {"aten.relu", {"self"}, 1, {}, 1},
      {"aten.hardtanh", {"self"}, 1,
       {opt("min_val", Lit::Number, ArgValue(-1.0), false),
        opt("max_val", Lit::Number, ArgValue(1.0), false)},
       1},
      {"aten.clamp", {"self"}, 1, {opt("min", Lit::Number), opt("max", Lit::Number)}, 1},
      {"aten.pixel_shuffle", {"self"}, 1, {req("upscale_factor", Lit::Int)}, 1},
      {"aten.max_pool2d", {"self"}, 1,
       {req("kernel_size", Lit::Ints), opt("stride", Lit::Ints, std::nullopt, false),
        opt("padding", Lit::Ints, ArgValue(V{0, 0}), false),
        opt("dilation", Lit::Ints, ArgValue(V{1, 1}), false),
        opt("ceil_mode", Lit::Bool, ArgValue(false), false)},
       1},
      {"aten.mean.dim", {"self"}, 1,
       {req("dim", Lit::Ints), opt("keepdim", Lit::Bool, ArgValue(false), false)}, 1},
      {"aten.adaptive_avg_pool2d", {"self"}, 1, {req("output_size", Lit::Ints)}, 1},
      {"aten.view_copy", {"self"}, 1, {req("size", Lit::Ints)}, 1},
      {"aten.clone", {"self"}, 1, {opt("memory_format", Lit::String)}, 1},
      {"aten.alias_copy", {"self"}, 1, {opt("memory_format", Lit::String)}, 1},
      {"aten._clone_dim_order", {"self"}, 1,
       {opt("non_blocking", Lit::Bool, ArgValue(false), false), opt("dim_order", Lit::Ints)}, 1},
      {"torchao.quantize_affine", {"input", "scale", "zero_point"}, 2,
       {req("block_size", Lit::Ints), req("output_dtype", Lit::String),
        req("quant_min", Lit::Int, true), req("quant_max", Lit::Int, true),
        opt("zero_point_domain", Lit::String)},
       1},
      {"torchao.dequantize_affine", {"input", "scale", "zero_point"}, 2,
       {req("block_size", Lit::Ints), req("input_dtype", Lit::String),
        req("quant_min", Lit::Int, true), req("quant_max", Lit::Int, true),
        opt("output_dtype", Lit::String), opt("zero_point_domain", Lit::String)},
       1},
      {"torchao.choose_qparams_affine", {"input"}, 1,
       {req("mapping_type", Lit::String), req("block_size", Lit::Ints),
        req("target_dtype", Lit::String), req("quant_min", Lit::Int, true),
        req("quant_max", Lit::Int, true), req("eps", Lit::Number, true),
        opt("scale_dtype", Lit::String), opt("zero_point_dtype", Lit::String),
        opt("preserve_zero", Lit::Bool, ArgValue(true), false),
        opt("zero_point_domain", Lit::String)},
       2},
  };
  return kOps;
}

const OpSpec* find_op(const std::string& op) {
  for (const OpSpec& s : op_table()) {
    if (op == s.op) return &s;
  }
  return nullptr;
}

// A JSON literal -> ArgValue (ints -> int64, floats -> double, lists keep their element type:
// any float makes a list of doubles).
ArgValue to_arg(const Json& j, const std::string& where) {
  int64_t i = 0;
  if (j.is_null()) return NoneArg{};
  if (j.is_boolean()) return j.get<bool>();
  if (json_int(j, &i)) return i;
  if (j.is_number_unsigned()) VKD_THROW(ErrorCode::InvalidArgument, where, ": integer ", show(j), " does not fit in int64");
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_array()) {
    bool any_float = false;
    for (size_t k = 0; k < j.size(); ++k) {
      VKD_CHECK(j[k].is_number() && !(j[k].is_number_unsigned() && !json_int(j[k], &i)),
                ErrorCode::InvalidArgument, where, ": list element ", k,
                " must be a number, got ", show(j[k]));
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
  VKD_THROW(ErrorCode::InvalidArgument, where, ": must be a literal (number, bool, string, list "
            "of numbers or null), got ", j.type_name());
}

bool kind_matches(const ArgValue& v, Lit kind) {
  switch (kind) {
    case Lit::Int: return std::holds_alternative<int64_t>(v);
    case Lit::Number: return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
    case Lit::Bool: return std::holds_alternative<bool>(v);
    case Lit::String: return std::holds_alternative<std::string>(v);
    case Lit::Ints:
      return std::holds_alternative<std::vector<int64_t>>(v) || std::holds_alternative<int64_t>(v);
  }
  return false;
}

// ---- values ------------------------------------------------------------------------------------

struct Decl {
  std::string name;
  std::string dtype_name;  // as written: float32, float16, int8, int32, int64
  std::vector<int64_t> shape;
  std::optional<std::string> data;
};

struct DTypeInfo {
  DType dtype;         // in the graph (int64 -> int32)
  const char* st;      // the safetensors dtype of `data`
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

Decl parse_decl(const std::string& name, const Json& j) {
  const std::string where = "value '" + name + "'";
  VKD_CHECK(!name.empty(), ErrorCode::InvalidArgument, "values: a value has an empty name");
  VKD_CHECK(j.is_object(), ErrorCode::InvalidArgument, where, ": must be an object, got ",
            j.type_name());
  only_fields(j, {"dtype", "shape", "data"}, where);
  Decl d;
  d.name = name;
  const Json& jd = field(j, "dtype", where);
  VKD_CHECK(jd.is_string() && value_dtype(jd.get<std::string>()).has_value(),
            ErrorCode::InvalidArgument, where,
            ": field 'dtype': expected one of \"float32\", \"float16\", \"int8\", \"int32\", \"int64\", got ",
            show(jd));
  d.dtype_name = jd.get<std::string>();
  const Json& js = field(j, "shape", where);
  VKD_CHECK(js.is_array(), ErrorCode::InvalidArgument, where,
            ": field 'shape': must be an array of integers, got ", show(js));
  VKD_CHECK(js.size() <= kMaxRank, ErrorCode::InvalidArgument, where, ": field 'shape': rank ",
            js.size(), " is above the supported ", kMaxRank, " (", show(js), ")");
  int64_t numel = 1;
  for (size_t i = 0; i < js.size(); ++i) {
    int64_t dim = 0;
    VKD_CHECK(json_int(js[i], &dim) && dim >= 0, ErrorCode::InvalidArgument, where,
              ": field 'shape': element ", i, " must be a non-negative integer, got ", show(js[i]));
    VKD_CHECK(dim == 0 || numel <= kMaxNumel / dim, ErrorCode::InvalidArgument, where,
              ": field 'shape': ", show(js), " has too many elements");
    numel *= dim;
    d.shape.push_back(dim);
  }
  if (j.contains("data")) {
    const Json& jdata = j["data"];
    VKD_CHECK(jdata.is_string() && !jdata.get<std::string>().empty(), ErrorCode::InvalidArgument,
              where, ": field 'data': must be a tensor name (a non-empty string), got ",
              show(jdata));
    d.data = jdata.get<std::string>();
  }
  VKD_CHECK(d.dtype_name != "int64" || d.data.has_value(), ErrorCode::InvalidArgument, where,
            ": field 'dtype': int64 is only accepted for constants (values with 'data'; they are "
            "narrowed to int32)");
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

// ---- nodes ---------------------------------------------------------------------------------------

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

Graph parse_document(const Json& root, const SafetensorsFile* weights) {
  VKD_CHECK(root.is_object(), ErrorCode::InvalidArgument,
            "the graph must be a JSON object, got ", root.type_name());
  only_fields(root, {"vkd_graph", "inputs", "outputs", "values", "nodes"}, "graph");

  int64_t version = 0;
  const Json& jv = field(root, "vkd_graph", "graph");
  VKD_CHECK(json_int(jv, &version), ErrorCode::InvalidArgument,
            "field 'vkd_graph': must be an integer, got ", show(jv));
  VKD_CHECK(version == kGraphVersion, ErrorCode::InvalidArgument,
            "field 'vkd_graph': unsupported version ", version, " (this compiler reads version ",
            kGraphVersion, ")");

  // values
  const Json& jvalues = field(root, "values", "graph");
  VKD_CHECK(jvalues.is_object(), ErrorCode::InvalidArgument,
            "field 'values': must be an object, got ", jvalues.type_name());
  std::vector<Decl> decls;
  std::map<std::string, size_t> decl_index;
  for (const auto& item : jvalues.items()) {
    decl_index[item.key()] = decls.size();
    decls.push_back(parse_decl(item.key(), item.value()));
  }

  Graph g;
  std::set<std::string> used_decls;

  // inputs
  const std::vector<std::string> inputs = string_list(field(root, "inputs", "graph"), "field 'inputs'");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = inputs[i];
    auto it = decl_index.find(name);
    VKD_CHECK(it != decl_index.end(), ErrorCode::InvalidArgument, "field 'inputs': input '", name,
              "' is not declared in 'values' (a graph input needs its dtype and shape)");
    const Decl& d = decls[it->second];
    VKD_CHECK(!d.data.has_value(), ErrorCode::InvalidArgument, "field 'inputs': input '", name,
              "' has 'data' (a graph input cannot be a constant)");
    VKD_CHECK(!used_decls.count(name), ErrorCode::InvalidArgument, "field 'inputs': input '",
              name, "' is listed twice");
    for (size_t k = 0; k < d.shape.size(); ++k) {
      // Graph inputs always become device tensors, which have no empty dims.
      VKD_CHECK(d.shape[k] >= 1, ErrorCode::InvalidArgument, "value '", name,
                "': field 'shape': size 0 in dim ", k, " of ", sizes_string(d.shape),
                " (a graph input needs every size >= 1)");
    }
    used_decls.insert(name);
    Value v;
    v.name = name;
    v.dtype = value_dtype(d.dtype_name)->dtype;
    v.shape = d.shape;
    g.add_value(std::move(v));
    g.inputs.push_back(name);
  }

  // constants
  for (const Decl& d : decls) {
    if (!d.data) continue;
    g.add_value(make_constant(d, weights));
    used_decls.insert(d.name);
  }

  // nodes
  const Json& jnodes = field(root, "nodes", "graph");
  VKD_CHECK(jnodes.is_array(), ErrorCode::InvalidArgument, "field 'nodes': must be an array, got ",
            jnodes.type_name());
  std::map<std::string, std::string> written_by;
  for (size_t index = 0; index < jnodes.size(); ++index) {
    const Json& jn = jnodes[index];
    const std::string at = "node " + std::to_string(index);
    VKD_CHECK(jn.is_object(), ErrorCode::InvalidArgument, at, ": must be an object, got ",
              jn.type_name());
    const Json& jop = field(jn, "op", at);
    VKD_CHECK(jop.is_string(), ErrorCode::InvalidArgument, at, ": field 'op': must be a string, got ",
              show(jop));
    Node node;
    node.op = jop.get<std::string>();
    node.origin = at + " (" + node.op + ")";
    const std::string& where = node.origin;
    const OpSpec* spec = find_op(node.op);
    if (spec == nullptr) {
      std::string known;
      for (const OpSpec& s : op_table()) known += std::string(known.empty() ? "" : ", ") + s.op;
      VKD_THROW(ErrorCode::InvalidArgument, where, ": field 'op': unknown op '", node.op,
                "' (accepted: ", known, ")");
    }
    only_fields(jn, {"op", "inputs", "args", "outputs"}, where);

    // inputs
    node.inputs = string_list(field(jn, "inputs", where), where + ": field 'inputs'");
    VKD_CHECK(node.inputs.size() <= spec->inputs.size(), ErrorCode::InvalidArgument, where,
              ": field 'inputs': at most ", spec->inputs.size(), " tensor inputs, got ",
              node.inputs.size());
    node.inputs.resize(spec->inputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& in = node.inputs[i];
      if (in.empty()) {
        VKD_CHECK(i >= spec->required_inputs, ErrorCode::InvalidArgument, where, ": input ",
                  spec->inputs[i], " (position ", i, ") is required");
        continue;
      }
      VKD_CHECK(g.has_value(in), ErrorCode::InvalidArgument, where, ": input '", in,
                "' is not defined (no graph input, constant or earlier output)");
    }

    // args
    if (jn.contains("args")) {
      const Json& jargs = jn["args"];
      VKD_CHECK(jargs.is_object(), ErrorCode::InvalidArgument, where,
                ": field 'args': must be an object, got ", jargs.type_name());
      for (const auto& item : jargs.items()) {
        const std::string& name = item.key();
        const std::string afield = where + ": argument '" + name + "'";
        const ArgSpec* as = nullptr;
        for (const ArgSpec& a : spec->args) {
          if (name == a.name) as = &a;
        }
        if (as == nullptr) {
          std::string known;
          for (const ArgSpec& a : spec->args) known += std::string(known.empty() ? "" : ", ") + a.name;
          VKD_THROW(ErrorCode::InvalidArgument, afield, ": unknown argument of ", node.op,
                    " (accepted: ", known.empty() ? "none" : known, ")");
        }
        ArgValue v = to_arg(item.value(), afield);
        const bool is_none = std::holds_alternative<NoneArg>(v);
        VKD_CHECK(kind_matches(v, as->kind) || (is_none && as->nullable),
                  ErrorCode::InvalidArgument, afield, ": must be ", lit_name(as->kind),
                  as->nullable ? " or null" : "", ", got ", show(item.value()));
        node.args[name] = std::move(v);
      }
    }
    for (const ArgSpec& a : spec->args) {
      if (node.args.count(a.name)) continue;
      VKD_CHECK(!a.required, ErrorCode::InvalidArgument, where, ": argument '", a.name,
                "' is required but missing");
      if (a.def) node.args[a.name] = *a.def;
    }
    if (node.op == "aten.max_pool2d" && !node.args.count("stride")) {
      node.args["stride"] = node.args.at("kernel_size");
    }

    // outputs
    node.outputs = string_list(field(jn, "outputs", where), where + ": field 'outputs'");
    VKD_CHECK(node.outputs.size() == spec->outputs, ErrorCode::InvalidArgument, where,
              ": field 'outputs': expected ", spec->outputs, " output(s), got ",
              node.outputs.size());
    std::set<std::string> own;
    for (const std::string& out : node.outputs) {
      VKD_CHECK(!out.empty(), ErrorCode::InvalidArgument, where,
                ": field 'outputs': an output has an empty name");
      VKD_CHECK(own.insert(out).second, ErrorCode::InvalidArgument, where, ": output '", out,
                "' is listed twice; a value is defined once");
      VKD_CHECK(!g.has_value(out), ErrorCode::InvalidArgument, where, ": output '", out,
                "' is already defined (", definer(g, written_by, out),
                "); a value is defined once");
      auto it = decl_index.find(out);
      if (it != decl_index.end()) {
        // Declared: added with the declared type; shape inference checks it.
        const Decl& d = decls[it->second];
        Value v;
        v.name = out;
        v.dtype = value_dtype(d.dtype_name)->dtype;
        v.shape = d.shape;
        g.add_value(std::move(v));
        used_decls.insert(out);
      }
      written_by[out] = node.origin;
    }
    g.nodes.push_back(std::move(node));
    // Types the outputs (adding the undeclared ones) before the next node reads them.
    infer_node_shapes(g, g.nodes.size() - 1);
  }

  for (const Decl& d : decls) {
    VKD_CHECK(used_decls.count(d.name), ErrorCode::InvalidArgument, "value '", d.name,
              "': declared in 'values' but it is no graph input, has no 'data' and no node "
              "writes it");
  }

  // outputs
  const std::vector<std::string> outputs =
      string_list(field(root, "outputs", "graph"), "field 'outputs'");
  VKD_CHECK(!outputs.empty(), ErrorCode::InvalidArgument, "field 'outputs': the graph has no outputs");
  std::set<std::string> seen;
  for (const std::string& out : outputs) {
    VKD_CHECK(g.has_value(out), ErrorCode::InvalidArgument, "field 'outputs': output '", out,
              "' is not defined (no graph input, constant or node output)");
    VKD_CHECK(seen.insert(out).second, ErrorCode::InvalidArgument, "field 'outputs': output '",
              out, "' is listed twice");
  }
  g.outputs = outputs;

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
    for (const OpSpec& s : op_table()) out.emplace_back(s.op);
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
