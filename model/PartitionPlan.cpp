#include "model/PartitionPlan.h"

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "compiler/ShapeInference.h"
#include "compiler/StrictJson.h"
#include "core/Error.h"
#include "core/InputFile.h"
#include "core/TensorLimits.h"

namespace vkd::model {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// A plan problem that stops parsing; the caller prefixes the plan's path.
[[noreturn]] void fail(const std::string& message) {
  throw Error(ErrorCode::InvalidArgument, message);
}

const Json& field(const Json& object, const char* key, const std::string& where) {
  if (!object.contains(key)) fail(where + ": field '" + key + "' is missing");
  return object.at(key);
}

std::vector<std::string> string_list(const Json& j, const std::string& where) {
  if (!j.is_array()) fail(where + ": must be an array of tensor names, got " + j.dump());
  std::vector<std::string> names;
  for (const Json& e : j) {
    if (!e.is_string()) fail(where + ": must be an array of tensor names, got " + j.dump());
    names.push_back(e.get<std::string>());
  }
  return names;
}

int64_t integer(const Json& j, const std::string& where) {
  int64_t i = 0;
  if (!compiler::json_int(j, &i)) fail(where + ": must be an integer of int64, got " + j.dump());
  return i;
}

DType tensor_dtype(const Json& j, const std::string& where) {
  const std::string name = j.is_string() ? j.get<std::string>() : "";
  if (name == "float32") return DType::Float32;
  if (name == "float16") return DType::Float16;
  if (name == "int8") return DType::Int8;
  if (name == "int32") return DType::Int32;
  fail(where + ": field 'dtype': expected \"float32\", \"float16\", \"int8\" or \"int32\", got " +
       j.dump());
}

compiler::QuantInfo quant_info(const Json& j, const std::string& where) {
  if (!j.is_object()) fail(where + ": field 'quant': must be an object, got " + j.dump());
  const Json& scale = field(j, "scale", where + ": field 'quant'");
  if (!scale.is_number()) fail(where + ": field 'quant': 'scale' must be a number");
  compiler::QuantInfo q;
  q.scale = scale.get<double>();
  q.zero_point = integer(field(j, "zero_point", where + ": field 'quant'"), where + ": zero_point");
  q.quant_min = integer(field(j, "quant_min", where + ": field 'quant'"), where + ": quant_min");
  q.quant_max = integer(field(j, "quant_max", where + ": field 'quant'"), where + ": quant_max");
  return q;
}

PlanTensor parse_tensor(const std::string& name, const Json& j) {
  const std::string where = "tensor '" + name + "'";
  if (!j.is_object()) fail(where + ": must be an object, got " + j.dump());
  PlanTensor t;
  t.name = name;
  t.dtype = tensor_dtype(field(j, "dtype", where), where);
  const Json& shape = field(j, "shape", where);
  if (!shape.is_array()) fail(where + ": field 'shape': must be an array, got " + shape.dump());
  for (const Json& d : shape) {
    t.shape.push_back(integer(d, where + ": field 'shape'"));
    if (t.shape.back() < 0) fail(where + ": field 'shape': negative size in " + shape.dump());
  }
  // Before anything multiplies them: the host allocates and indexes its tensors by them.
  const std::string too_large = tensor_size_problem(t.shape, host_element_size(t.dtype));
  if (!too_large.empty()) fail(where + ": field 'shape' " + shape.dump() + ": " + too_large);
  if (j.contains("quant")) t.quant = quant_info(j["quant"], where);
  if (j.contains("constant")) {
    if (!j["constant"].is_boolean()) fail(where + ": field 'constant': must be true or false");
    t.constant = j["constant"].get<bool>();
  }
  t.weights_name = name;
  if (j.contains("data")) {
    if (!j["data"].is_string()) fail(where + ": field 'data': must be a tensor name");
    t.weights_name = j["data"].get<std::string>();
  }
  return t;
}

// A host step's argument, as the compiler wrote it from the graph's ArgValue.
compiler::ArgValue arg_value(const Json& j, const std::string& where) {
  if (j.is_null()) return compiler::NoneArg{};
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return integer(j, where);
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (!j.is_array()) fail(where + ": unsupported value " + j.dump());
  bool all_integers = true;
  for (const Json& e : j) {
    if (!e.is_number()) fail(where + ": a list must hold numbers, got " + j.dump());
    all_integers = all_integers && e.is_number_integer();
  }
  if (!all_integers) return j.get<std::vector<double>>();
  std::vector<int64_t> ints;
  for (const Json& e : j) ints.push_back(integer(e, where));
  return ints;
}

void parse_host_fields(const Json& j, const std::string& where, PlanStep& s) {
  s.op = j["host"].get<std::string>();
  if (j.contains("origin")) {
    if (!j["origin"].is_string()) fail(where + ": field 'origin': must be a string");
    s.origin = j["origin"].get<std::string>();
  }
  const Json& args = field(j, "args", where);
  if (!args.is_object()) fail(where + ": field 'args': must be an object, got " + args.dump());
  for (const auto& [name, value] : args.items()) {
    s.args[name] = arg_value(value, where + ": arg '" + name + "'");
  }
}

// A name of a file in the plan's directory itself: no directory part (so no absolute path and
// no '..'), not '.' or '..', no NUL (the OS would cut the name there).
bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\0", 2)) == std::string::npos;
}

PlanStep parse_step(size_t index, const Json& j, const fs::path& plan_dir) {
  std::string where = "step " + std::to_string(index);
  if (!j.is_object()) fail(where + ": must be an object, got " + j.dump());
  const bool gpu = j.contains("delegate"), host = j.contains("host");
  if (gpu == host) fail(where + ": needs exactly one of 'delegate' (a blob) and 'host' (an op)");
  const Json& what = gpu ? j["delegate"] : j["host"];
  if (!what.is_string() || what.get<std::string>().empty()) {
    fail(where + ": field '" + (gpu ? "delegate" : "host") + "': must be a non-empty string");
  }
  PlanStep s;
  s.index = index;
  s.on_gpu = gpu;
  if (gpu) {
    s.blob = what.get<std::string>();
    if (!is_plain_file_name(s.blob)) {
      fail(where + ": field 'delegate': '" + s.blob +
           "' is not a plain file name (a plan's "
           "blobs are files of its own directory: no '/', '.' or '..')");
    }
    s.blob_path = (plan_dir / s.blob).string();
  } else {
    parse_host_fields(j, where, s);
  }
  where = s.label();
  s.inputs = string_list(field(j, "inputs", where), where + ": field 'inputs'");
  s.outputs = string_list(field(j, "outputs", where), where + ": field 'outputs'");
  return s;
}

// The tensors the model itself provides before the first step: inputs and constants, each with
// who provides it (for messages).
std::map<std::string, std::string> initial_writers(const PartitionPlan& p,
                                                   std::vector<std::string>& errors) {
  std::map<std::string, std::string> writer;
  for (const auto& [name, t] : p.tensors) {
    if (t.constant) writer[name] = "the weights file";
  }
  for (const std::string& name : p.inputs) {
    const auto it = p.tensors.find(name);
    if (it == p.tensors.end()) {
      errors.push_back("model input '" + name + "' is not described in 'tensors'");
    } else if (it->second.constant) {
      errors.push_back("model input '" + name + "' is marked as a constant");
    }
    writer[name] = "the model input";
  }
  return writer;
}

// Which step after `from` writes `name` ("" for none): makes "read before written" precise.
std::string later_writer(const PartitionPlan& p, size_t from, const std::string& name) {
  for (size_t i = from + 1; i < p.steps.size(); ++i) {
    for (const std::string& out : p.steps[i].outputs) {
      if (out == name) return p.steps[i].label();
    }
  }
  return "";
}

void check_step_reads(const PartitionPlan& p, const PlanStep& s,
                      const std::map<std::string, std::string>& writer,
                      std::vector<std::string>& errors) {
  for (const std::string& name : s.inputs) {
    if (name.empty()) {
      if (s.on_gpu) errors.push_back(s.label() + ": an input has an empty name");
      continue;
    }
    if (!p.tensors.count(name)) {
      errors.push_back(s.label() + ": reads tensor '" + name +
                       "', which 'tensors' does not "
                       "describe");
    } else if (!writer.count(name)) {
      const std::string later = later_writer(p, s.index, name);
      errors.push_back(s.label() + ": reads tensor '" + name + "' before anything writes it (" +
                       (later.empty() ? "no step writes it" : later + " writes it later") + ")");
    }
  }
}

void check_step_writes(const PartitionPlan& p, const PlanStep& s,
                       std::map<std::string, std::string>& writer,
                       std::vector<std::string>& errors) {
  for (const std::string& name : s.outputs) {
    if (!p.tensors.count(name)) {
      errors.push_back(s.label() + ": writes tensor '" + name +
                       "', which 'tensors' does not "
                       "describe");
      continue;
    }
    const auto it = writer.find(name);
    if (it != writer.end()) {
      errors.push_back(s.label() + ": writes tensor '" + name + "', which " + it->second +
                       " already provides");
      continue;
    }
    writer[name] = s.label();
  }
}

// Every tensor is read after it is written and written once; every model output is written.
void check_data_flow(const PartitionPlan& p) {
  std::vector<std::string> errors;
  std::map<std::string, std::string> writer = initial_writers(p, errors);
  for (const PlanStep& s : p.steps) {
    check_step_reads(p, s, writer, errors);
    check_step_writes(p, s, writer, errors);
  }
  for (const std::string& name : p.outputs) {
    if (!writer.count(name)) errors.push_back("model output '" + name + "' is written by no step");
  }
  for (std::string& e : errors) e = p.path + ": " + e;
  throw_if_any(errors);
}

PartitionPlan parse_document(const Json& doc, const std::string& path) {
  if (!doc.is_object() || !doc.contains("vkd_partition")) {
    fail(
        "not a partition plan (no 'vkd_partition' field; vkd run takes a .vkd blob or the "
        "MODEL.partition.json of vkd compile --partition)");
  }
  if (doc["vkd_partition"] != 1) {
    fail("field 'vkd_partition': version " + doc["vkd_partition"].dump() + " (this vkd reads 1)");
  }
  PartitionPlan p;
  p.path = path;
  p.inputs = string_list(field(doc, "inputs", "plan"), "field 'inputs'");
  p.outputs = string_list(field(doc, "outputs", "plan"), "field 'outputs'");
  const Json& tensors = field(doc, "tensors", "plan");
  if (!tensors.is_object()) fail("field 'tensors': must be an object");
  for (const auto& [name, t] : tensors.items()) p.tensors[name] = parse_tensor(name, t);
  const Json& steps = field(doc, "steps", "plan");
  if (!steps.is_array()) fail("field 'steps': must be an array");
  const fs::path dir = fs::path(path).parent_path();
  for (size_t i = 0; i < steps.size(); ++i) p.steps.push_back(parse_step(i, steps[i], dir));
  return p;
}

}  // namespace

void throw_if_any(const std::vector<std::string>& errors) {
  if (errors.empty()) return;
  std::string message;
  for (const std::string& e : errors) message += (message.empty() ? "" : "\n") + e;
  throw Error(ErrorCode::InvalidArgument, message);
}

Error step_error(const std::string& where, const Error& e) {
  return Error(e.code() == ErrorCode::Internal ? ErrorCode::Internal : ErrorCode::InvalidArgument,
               where + ": " + e.what());
}

bool is_partition_plan_path(const std::string& model_path) {
  return fs::path(model_path).extension() == ".json";
}

std::string PlanStep::label() const {
  const std::string n = "step " + std::to_string(index);
  if (on_gpu) return n + " (GPU " + blob + ")";
  return n + " (host " + (origin.empty() ? op : origin) + ")";
}

const PlanTensor& PartitionPlan::tensor(const std::string& name) const {
  const auto it = tensors.find(name);
  VKD_CHECK(it != tensors.end(), ErrorCode::Internal, path, ": tensor '", name,
            "' is not described (the plan was not validated)");
  return it->second;
}

size_t PartitionPlan::gpu_step_count() const {
  size_t n = 0;
  for (const PlanStep& s : steps) n += s.on_gpu ? 1 : 0;
  return n;
}

bool PartitionPlan::needs_weights() const {
  for (const PlanStep& s : steps) {
    for (const std::string& name : s.inputs) {
      if (!s.on_gpu && !name.empty() && tensors.count(name) && tensors.at(name).constant) {
        return true;
      }
    }
  }
  return false;
}

PartitionPlan parse_partition_plan(const std::string& json_text, const std::string& path) {
  PartitionPlan plan;
  try {
    plan = parse_document(compiler::parse_json_strict(json_text), path);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::InvalidArgument, path + ": malformed JSON: " + e.what());
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
  check_data_flow(plan);
  return plan;
}

PartitionPlan read_partition_plan(const std::string& path) {
  const std::vector<uint8_t> text = read_input_file(path, "partition plan", kMaxGraphFileBytes);
  return parse_partition_plan(std::string(text.begin(), text.end()), path);
}

namespace {

compiler::Value plan_value(const PlanTensor& t,
                           const std::map<std::string, compiler::HostTensor>& constants,
                           const std::string& where) {
  compiler::Value v;
  v.name = t.name;
  v.dtype = t.dtype;
  v.shape = t.shape;
  if (t.constant) {
    const auto it = constants.find(t.name);
    if (it == constants.end()) fail(where + ": constant '" + t.name + "' was not loaded");
    v.data = it->second.bytes;
  }
  return v;
}

}  // namespace

compiler::Graph host_step_graph(const PartitionPlan& plan, const PlanStep& step,
                                const std::map<std::string, compiler::HostTensor>& constants) {
  const std::string where = plan.path + ": step " + std::to_string(step.index);
  // (the node's messages name its origin, so `where` says only which step)
  const compiler::Node node{step.op, step.inputs, step.args, step.outputs,
                            step.origin.empty() ? step.op : step.origin};
  // The check `vkd compile --partition` makes before it writes a plan.
  if (const auto why = compiler::host_refusal(node)) {
    fail(plan.path + ": " + step.label() + ": the host cannot run it: " + *why);
  }
  compiler::Graph g;
  for (const std::string& name : step.inputs) {
    if (name.empty() || g.has_value(name)) continue;  // an absent optional, a repeated input
    const PlanTensor& t = plan.tensor(name);
    g.add_value(plan_value(t, constants, where));
    if (!t.constant) g.inputs.push_back(name);
  }
  for (const std::string& name : step.outputs) {
    g.add_value(plan_value(plan.tensor(name), constants, where));
  }
  g.nodes.push_back(node);
  g.outputs = step.outputs;
  try {
    // The op's own rule checks the arguments and that the outputs are what the plan says.
    compiler::infer_node_shapes(g, 0);
  } catch (const Error& e) {
    throw step_error(where, e);
  }
  return g;
}

}  // namespace vkd::model
