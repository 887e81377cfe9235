#include "tools/vkd/Dot.h"

#include <sstream>
#include <variant>
#include <vector>

#include "core/Error.h"
#include "partitioner_schema/OpSchema.h"

namespace vkd::cli {
namespace {

using serialization::DeserializedGraph;
using serialization::OpCall;
using serialization::TensorValue;
using serialization::ValueId;

constexpr const char* kConstantFill = "#eeeeee";
constexpr const char* kConstantLine = "#999999";
constexpr const char* kOpFill = "#f5f5f5";
constexpr const char* kConversionFill = "#fde0dd";

// Fill colour per memory layout (ColorBrewer Set3 pastels; none is red, which marks inserted
// conversions). No default case: a new layout is a -Wswitch warning here, not a white node.
const char* layout_color(MemoryLayout layout) {
  switch (layout) {
    case MemoryLayout::WidthPacked: return "#80b1d3";
    case MemoryLayout::HeightPacked: return "#b3de69";
    case MemoryLayout::ChannelsPacked: return "#fdb462";
    case MemoryLayout::PackedInt8_4W4C: return "#bebada";
    case MemoryLayout::PackedInt8_4H4W: return "#ffffb3";
    case MemoryLayout::PackedInt8_4C1W: return "#8dd3c7";
  }
  return "white";
}

// Only layout propagation (partitioner_schema/LayoutPropagation) emits these ops: each one is
// a layout decision that costs a dispatch.
bool is_inserted_conversion(const std::string& op) {
  return op == "q8ta_convert" || op == "float_convert";
}

std::string tensor_id(ValueId id) { return "t" + std::to_string(id); }
std::string op_id(size_t index) { return "op" + std::to_string(index); }

// Graph input/output positions of each value ("graph input 0"), for the labels.
std::vector<std::vector<std::string>> io_roles(const DeserializedGraph& g) {
  std::vector<std::vector<std::string>> roles(g.values.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    roles[g.inputs[i].value].push_back("graph input " + std::to_string(i));
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    roles[g.outputs[i].value].push_back("graph output " + std::to_string(i));
  }
  return roles;
}

void write_tensor(std::ostream& os, ValueId id, const TensorValue& t,
                  const std::vector<std::string>& roles) {
  // Unnamed tensors go by their value id, as in `vkd inspect`'s device description.
  const std::string name = t.name.empty() ? "%" + std::to_string(id) : t.name;
  std::string label = name + "\n" + t.spec.describe();
  if (t.constant) label += "\nconstant";
  for (const auto& role : roles) label += "\n" + role;
  os << "  " << tensor_id(id) << " [label=" << dot_string(label);
  if (t.constant) {
    // Weights and scales: context, not data flow; keep them out of the way.
    os << ", style=filled, fillcolor=\"" << kConstantFill << "\", color=\"" << kConstantLine
       << "\", fontcolor=\"#666666\", fontsize=9, height=0.3";
  } else {
    os << ", style=filled, fillcolor=\"" << layout_color(t.spec.layout) << "\"";
    if (!roles.empty()) os << ", peripheries=2";
  }
  os << "];\n";
}

void write_op(std::ostream& os, size_t index, const OpCall& call) {
  os << "  " << op_id(index) << " [shape=box, ";
  if (is_inserted_conversion(call.name)) {
    os << "label=" << dot_string(call.name + "\ninserted conversion")
       << ", style=\"bold,filled\", fillcolor=\"" << kConversionFill
       << "\", color=red, fontcolor=red, penwidth=3";
  } else {
    os << "label=" << dot_string(call.name) << ", style=\"rounded,filled\", fillcolor=\"" << kOpFill
       << "\"";
  }
  os << "];\n";
}

// Edges of one op call: the schema says which tensor arguments are written.
void write_edges(std::ostream& os, size_t index, const OpCall& call, const DeserializedGraph& g) {
  const schema::OpSchema* schema = schema::find_op_schema(call.name);
  VKD_CHECK(schema != nullptr, ErrorCode::InvalidArgument, "op call ", index, " ('", call.name,
            "'): not in the backend op schema, so its outputs are unknown");
  VKD_CHECK(schema->args.size() == call.args.size(), ErrorCode::InvalidArgument, "op call ", index,
            " ('", call.name, "'): ", call.args.size(), " arguments, the schema has ",
            schema->args.size());
  for (size_t a = 0; a < call.args.size(); ++a) {
    // A tensor list (cat's inputs) draws an edge per item; scalars are not drawn.
    std::vector<ValueId> tensors = {call.args[a]};
    if (const auto* list = std::get_if<serialization::ValueListValue>(&g.values[call.args[a]])) {
      tensors = list->items;
    }
    for (const ValueId v : tensors) {
      if (!std::holds_alternative<TensorValue>(g.values[v])) continue;
      if (schema->args[a].output) {
        os << "  " << op_id(index) << " -> " << tensor_id(v) << ";\n";
      } else {
        os << "  " << tensor_id(v) << " -> " << op_id(index) << ";\n";
      }
    }
  }
}

// A fixed legend: every layout's colour, a constant and an inserted conversion, stacked by
// invisible edges.
void write_legend(std::ostream& os) {
  os << "  subgraph cluster_legend {\n"
     << "    label=\"legend\"; style=dashed; fontsize=10;\n"
     << "    node [fontsize=9, height=0.3];\n";
  std::vector<std::string> ids;
  auto add_layout = [&](MemoryLayout layout) {
    ids.push_back("legend_" + std::to_string(static_cast<int>(layout)));
    os << "    " << ids.back() << " [label=" << dot_string(std::string(to_string(layout)))
       << ", style=filled, fillcolor=\"" << layout_color(layout) << "\"];\n";
  };
  for (MemoryLayout l : kAllFloatLayouts) add_layout(l);
  for (MemoryLayout l : kAllPackedInt8Layouts) add_layout(l);
  os << "    legend_constant [label=\"constant\", style=filled, fillcolor=\"" << kConstantFill
     << "\", color=\"" << kConstantLine << "\", fontcolor=\"#666666\"];\n"
     << "    legend_conversion [shape=box, label=\"inserted conversion\", style=\"bold,filled\", "
     << "fillcolor=\"" << kConversionFill << "\", color=red, fontcolor=red, penwidth=3];\n";
  ids.push_back("legend_constant");
  ids.push_back("legend_conversion");
  os << "    ";
  for (size_t i = 0; i < ids.size(); ++i) os << (i ? " -> " : "") << ids[i];
  os << " [style=invis];\n  }\n";
}

}  // namespace

std::string dot_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += '?';
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string graph_to_dot(const DeserializedGraph& graph, const std::string& title) {
  std::ostringstream os;
  os << "// vkd inspect --dot: " << graph.ops.size() << " op call(s); render with dot -Tsvg\n"
     << "digraph vkd {\n"
     << "  graph [label=" << dot_string(title) << ", labelloc=t, fontname=\"Helvetica\"];\n"
     << "  node [shape=ellipse, fontname=\"Helvetica\", fontsize=10];\n"
     << "  edge [fontname=\"Helvetica\"];\n";
  write_legend(os);
  const auto roles = io_roles(graph);
  for (ValueId id = 0; id < graph.values.size(); ++id) {
    if (const auto* t = std::get_if<TensorValue>(&graph.values[id])) {
      write_tensor(os, id, *t, roles[id]);
    }
  }
  for (size_t i = 0; i < graph.ops.size(); ++i) write_op(os, i, graph.ops[i]);
  for (size_t i = 0; i < graph.ops.size(); ++i) write_edges(os, i, graph.ops[i], graph);
  os << "}\n";
  return os.str();
}

}  // namespace vkd::cli
