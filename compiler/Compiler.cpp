#include "compiler/Compiler.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "compiler/DynamicLength.h"
#include "compiler/Emit.h"
#include "compiler/Fold.h"
#include "compiler/Fuse.h"
#include "compiler/GraphHash.h"
#include "compiler/InPlace.h"
#include "compiler/Interpreter.h"
#include "compiler/Parse.h"
#include "compiler/ShapeInference.h"
#include "core/Error.h"
#include "partitioner_schema/OpSchema.h"

namespace vkd::compiler {

namespace {

bool is_edge_op(const std::string& op) {
  const auto& edge = accepted_edge_ops();
  return std::find(edge.begin(), edge.end(), op) != edge.end();
}

// Why the backend cannot run `node` ("" when it can). An op with no descriptor is "not
// supported"; every edge op the parser knows is planned for the backend (README table), so a
// missing pattern or kernel is "not yet" supported, unless a tensor is beyond any device's rank.
std::string unsupported_reason(const Graph& g, const Node& node) {
  const schema::OpSchema* schema = schema::find_op_schema(node.op);
  const std::string no_op = " (no fusion pattern or backend op for '" + node.op + "')";
  if (schema == nullptr && !is_edge_op(node.op)) return "not supported by the backend" + no_op;
  if (const Value* v = tensor_beyond_device(g, node)) {
    return "not supported by the backend (" + beyond_device_reason(*v) + ")";
  }
  if (schema == nullptr) return "not yet supported by the backend" + no_op;
  if (!schema->runnable()) {
    return "not yet supported by the backend (backend op '" + schema->name + "' has no kernel yet)";
  }
  return "";
}

// Values no device tensor holds (rank, dtype) that no node reads or writes (a graph input passed
// through to the outputs, an unread constant): the nodes' own list does not name them.
std::vector<std::string> untouched_values_beyond_device(const Graph& g) {
  std::vector<std::string> out;
  for (const std::string& name : g.value_names()) {
    const Value& v = g.value(name);
    if (fits_device(v)) continue;
    if (g.producer(name) >= 0 || !g.consumers(name).empty()) continue;
    out.push_back(beyond_device_reason(v));
  }
  return out;
}

}  // namespace

std::vector<std::string> unsupported_nodes(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& node : g.nodes) {
    const std::string reason = unsupported_reason(g, node);
    if (!reason.empty()) out.push_back(node.origin + ": " + reason);
  }
  for (std::string& v : untouched_values_beyond_device(g)) out.push_back(std::move(v));
  // A blob's outputs are written by its ops (or are its inputs); a constant output (what the
  // exporter folded: a weight's transpose or split) is the CPU side's to make.
  for (const std::string& name : g.outputs) {
    if (g.value(name).is_constant()) {
      out.push_back("output '" + name + "': is a constant, which no device op computes");
    }
  }
  return out;
}

void CompileResult::throw_if_unsupported() const {
  if (unsupported.empty()) return;
  std::string list;
  for (const auto& u : unsupported) list += "\n  " + u;
  VKD_THROW(ErrorCode::Unsupported, unsupported.size(), " node(s) cannot be compiled:", list);
}

namespace {

// Layout propagation, identity folding and emission of a lowered graph (when every node is a
// backend op; the blob only when every node can run). `source_hash`: graph_ir_hash() of the
// graph as parsed, recorded in the blob.
void place_and_emit(Graph g, const CompileOptions& options, uint64_t source_hash,
                    CompileResult& result) {
  result.unsupported = unsupported_nodes(g);
  const bool all_backend_ops = std::all_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) {
    return schema::find_op_schema(n.op) != nullptr;
  });
  // Placement needs every tensor to fit a device tensor (TensorSpec::dims4, a device dtype).
  const bool all_fit_device =
      std::all_of(g.value_names().begin(), g.value_names().end(),
                  [&](const std::string& v) { return fits_device(g.value(v)); });
  if (all_backend_ops && all_fit_device) {
    result.reports.push_back(propagate_layouts(g, options.layout));
    result.reports.push_back(fold_identities(g));
    PassReport in_place = report_in_place(g);  // only for graphs with q8ta_cat / q8ta_slice
    if (!in_place.lines.empty()) result.reports.push_back(std::move(in_place));
  }
  if (result.ok()) result.blob = emit_blob(g, source_hash);
  result.graph = std::move(g);
}

// A plan is written only when the host can run every step the backend does not (the model
// loader makes the same check, host_refusal): every node that neither can, one line each.
void throw_if_host_cannot_run(const Graph& g, const PartitionPlan& plan) {
  std::string list;
  size_t count = 0;
  for (const PartitionStep& step : plan.steps) {
    if (step.delegate) continue;
    const Node& node = g.nodes[step.index];
    std::optional<std::string> why = host_refusal(node);
    const Value* foreign = tensor_beyond_device(g, node);
    if (!why && foreign != nullptr && !foreign->foreign_dtype.empty()) {
      why = "its interpreter holds no " + foreign->foreign_dtype + " tensor ('" + foreign->name +
            "')";
    }
    if (why) {
      list += "\n  " + node.origin + ": " + unsupported_reason(g, node) +
              "; the host cannot run it: " + *why;
      ++count;
    }
  }
  VKD_CHECK(count == 0, ErrorCode::Unsupported, count,
            " node(s) can run neither on the backend nor on the host:", list);
}

// sink_dequantize's report, when it moved anything (most graphs have nothing to move).
void sink_dequantizes(Graph& g, std::vector<PassReport>& reports) {
  PassReport r = sink_dequantize(g);
  if (!r.lines.empty()) reports.push_back(std::move(r));
}

}  // namespace

CompileResult compile_graph(Graph g, const CompileOptions& options) {
  if (g.dynamic) {
    return compile_dynamic(g, [&](Graph at) { return compile_graph(std::move(at), options); });
  }
  CompileResult result;
  const uint64_t source_hash = graph_ir_hash(g);
  infer_shapes(g);
  sink_dequantizes(g, result.reports);
  FuseOptions fuse;
  fuse.fuse_epilogues = options.fuse_epilogues;
  result.reports.push_back(fuse_and_lower(g, fuse));
  place_and_emit(std::move(g), options, source_hash, result);
  return result;
}

PartitionedResult compile_partitioned(Graph g, const CompileOptions& options) {
  VKD_CHECK(!g.dynamic, ErrorCode::Unsupported, "the graph has a dynamic length (",
            g.dynamic ? g.dynamic->name : "", " up to ", g.dynamic ? g.dynamic->max : 0,
            "), which only a whole-graph compile takes (without --partition) for now");
  PartitionedResult result;
  const uint64_t source_hash = graph_ir_hash(g);  // what every partition's blob records
  infer_shapes(g);
  sink_dequantizes(g, result.before_fusion);
  FuseOptions fuse;
  fuse.runnable_only = true;
  fuse.fuse_epilogues = options.fuse_epilogues;
  result.fusion = fuse_and_lower(g, fuse);
  result.plan = partition_graph(g);
  throw_if_host_cannot_run(g, result.plan);
  for (const auto& part : result.plan.partitions) {
    CompileResult r;
    place_and_emit(part.graph, options, source_hash, r);
    r.throw_if_unsupported();  // a partition holds only runnable nodes
    result.parts.push_back(std::move(r));
  }
  result.lowered = std::move(g);
  return result;
}

CompileResult compile_file(const std::string& graph_path, const std::string& weights_path,
                           const CompileOptions& options) {
  return compile_graph(parse_graph_file(graph_path, weights_path), options);
}

std::string format_report(const CompileResult& result) {
  std::ostringstream os;
  for (const auto& r : result.reports) {
    os << "[" << r.pass << "]" << (r.lines.empty() ? " no changes" : "") << "\n";
    for (const auto& line : r.lines) os << "  " << line << "\n";
  }
  const Graph& g = result.graph;
  os << "[final] " << g.nodes.size() << " nodes, "
     << (result.ok() ? std::to_string(result.blob.size()) + " blob bytes" : "no blob") << "\n";
  for (const auto& node : g.nodes) {
    os << "  " << node.op << "(";
    for (size_t i = 0; i < node.inputs.size(); ++i) os << (i ? ", " : "") << node.inputs[i];
    os << ") -> ";
    for (size_t i = 0; i < node.outputs.size(); ++i) os << (i ? ", " : "") << node.outputs[i];
    os << "\n";
  }
  os << "[placements]\n";
  for (const auto& name : g.value_names()) {
    const Value& v = g.value(name);
    os << "  " << name << ": " << to_string(v.dtype);
    if (v.storage && v.layout) os << " " << to_string(*v.storage) << " " << to_string(*v.layout);
    os << (v.is_constant() ? " (constant)" : "") << "\n";
  }
  for (const auto& u : result.unsupported) os << "[unsupported] " << u << "\n";
  return os.str();
}

}  // namespace vkd::compiler
