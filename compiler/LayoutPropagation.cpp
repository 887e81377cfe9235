#include "compiler/LayoutPropagation.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

#include "compiler/SchemaView.h"
#include "core/Error.h"
#include "core/FloatLayout.h"
#include "core/TensorSpec.h"
#include "partitioner_schema/OpSchema.h"

namespace vkd::compiler {
namespace {

// One requirement on a value from outside its tie class: a producer or a consumer argument.
struct Constraint {
  std::string value;
  int node;
  bool producer;
  schema::PlacementSet set;
  std::vector<schema::Placement> preferred;
};

struct Insertion {
  size_t position;  // before the original node with this index (nodes.size(): at the end)
  Node node;
};

schema::PlacementSet legal_for(const Value& v, const LayoutOptions& options) {
  schema::PlacementSet set;
  switch (v.dtype) {
    case DType::Int8x4: return schema::PlacementSet::all_int8();
    case DType::Int8: return {{StorageType::Buffer, MemoryLayout::WidthPacked}};
    case DType::Float32:
    case DType::Float16:
    case DType::Int32: set = schema::PlacementSet::all_float(); break;
  }
  // Textures only where the extents fit the device limit assumed at compile time.
  TensorSpec spec{v.shape.empty() ? std::vector<int64_t>{1} : v.shape, v.dtype};
  for (const auto& p : set.list()) {
    if (p.storage != StorageType::Texture3D) continue;
    const TextureExtents e = texture_extents(p.layout, spec.dims4());
    if (std::max({e.x, e.y, e.z}) > options.max_texture_extent) set = set.without(p);
  }
  return set;
}

class UnionFind {
 public:
  std::string find(const std::string& x) {
    auto it = parent_.find(x);
    if (it == parent_.end() || it->second == x) return x;
    return it->second = find(it->second);
  }
  void unite(const std::string& a, const std::string& b) {
    const std::string ra = find(a), rb = find(b);
    if (ra != rb) parent_[std::max(ra, rb)] = std::min(ra, rb);  // deterministic root
  }

 private:
  std::map<std::string, std::string> parent_;
};

std::string short_name(const schema::Placement& p) {
  if (p.storage == StorageType::Texture3D) return "tex_" + std::string(to_string(p.layout));
  return std::string(to_string(p.layout));
}

// Best placement of `candidates` for `constraints`: most satisfied, then preference order.
schema::Placement choose(const schema::PlacementSet& candidates,
                         const std::vector<const Constraint*>& constraints) {
  std::vector<schema::Placement> order;
  for (const Constraint* c : constraints) {
    if (!c->producer) continue;
    for (const auto& p : c->preferred) order.push_back(p);
  }
  for (const Constraint* c : constraints) {
    for (const auto& p : c->preferred) order.push_back(p);
  }
  for (const auto& p : schema::all_placements()) order.push_back(p);
  schema::Placement best{};
  int best_score = -1;
  for (const auto& p : order) {
    if (!candidates.contains(p)) continue;
    int score = 0;
    for (const Constraint* c : constraints) score += c->set.contains(p) ? 1 : 0;
    if (score > best_score) {
      best = p;
      best_score = score;
    }
  }
  return best;
}

Node conversion_node(const Graph& g, const std::string& from, const std::string& to) {
  const Value& v = g.value(from);
  Node n;
  n.inputs = {from};
  n.outputs = {to};
  if (v.dtype == DType::Int8x4) {
    n.op = "q8ta_convert";
    n.args["zero_point"] = v.quant ? v.quant->zero_point : int64_t{0};
  } else {
    n.op = "float_convert";
  }
  n.origin = "conversion " + from + " -> " + to;
  return n;
}

}  // namespace

PassReport propagate_layouts(Graph& g, const LayoutOptions& options) {
  PassReport report{"layouts", {}};
  UnionFind classes;
  std::map<std::string, schema::PlacementSet> internal;  // value -> placements its tied uses allow
  std::vector<Constraint> constraints;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& node = g.nodes[k];
    const schema::OpSchema* schema = schema::find_op_schema(node.op);
    VKD_CHECK(schema != nullptr, ErrorCode::InvalidArgument, node.origin, ": '", node.op,
              "' is not a backend op");
    const auto uses = tensor_uses(node, *schema);
    std::vector<bool> tied(uses.size(), false);
    for (size_t u = 0; u < uses.size(); ++u) {
      if (uses[u].arg->tied_to < 0) continue;
      for (size_t t = 0; t < uses.size(); ++t) {
        if (uses[t].arg_index != uses[u].arg->tied_to) continue;
        classes.unite(uses[u].value, uses[t].value);
        tied[u] = tied[t] = true;
      }
    }
    for (size_t u = 0; u < uses.size(); ++u) {
      if (tied[u]) continue;
      constraints.push_back({uses[u].value, static_cast<int>(k), uses[u].output,
                             uses[u].arg->placements, uses[u].arg->preferred});
    }
    for (size_t u = 0; u < uses.size(); ++u) {
      if (!tied[u]) continue;
      auto it = internal.find(uses[u].value);
      schema::PlacementSet set = uses[u].arg->placements;
      if (it != internal.end()) set = set & it->second;
      internal[uses[u].value] = set;
    }
  }
  // Fold per-value tie sets into their class roots.
  std::map<std::string, schema::PlacementSet> class_set;
  std::map<std::string, std::vector<std::string>> members;
  for (const auto& name : g.value_names()) {
    const std::string root = classes.find(name);
    schema::PlacementSet legal = legal_for(g.value(name), options);
    auto it = internal.find(name);
    if (it != internal.end()) legal = legal & it->second;
    auto cs = class_set.find(root);
    class_set[root] = cs == class_set.end() ? legal : (cs->second & legal);
    members[root].push_back(name);
  }

  std::vector<Insertion> insertions;
  std::map<std::string, schema::Placement> chosen;
  for (const auto& [root, names] : members) {
    const schema::PlacementSet candidates = class_set[root];
    std::vector<const Constraint*> cons;
    for (const auto& c : constraints) {
      if (classes.find(c.value) == root) cons.push_back(&c);
    }
    VKD_CHECK(!candidates.empty(), ErrorCode::InvalidArgument, "tensor '", names.front(),
              "': the ops tied to it allow no common placement");
    const schema::Placement p = choose(candidates, cons);
    for (const auto& n : names) chosen[n] = p;
    if (names.size() > 1) {
      report.lines.push_back("tied " + std::to_string(names.size()) + " tensors (" + names.front() +
                             ", ...) -> " + describe(p));
    }
    // Unsatisfied producers: write a fresh value in the producer's placement, convert after.
    for (const Constraint* c : cons) {
      if (!c->producer || c->set.contains(p)) continue;
      Node& producer = g.nodes[c->node];
      const std::string staged = g.unique_name(c->value + "_" + short_name(choose(c->set, {c})));
      Value v = g.value(c->value);
      v.name = staged;
      g.add_value(v);
      chosen[staged] = choose(c->set, {c});
      std::replace(producer.outputs.begin(), producer.outputs.end(), c->value, staged);
      insertions.push_back(
          {static_cast<size_t>(c->node) + 1, conversion_node(g, staged, c->value)});
      report.lines.push_back("conversion after " + producer.origin + ": it writes " +
                             c->set.describe() + ", '" + c->value + "' is " + describe(p));
    }
    // Unsatisfied consumers: one conversion per group that agrees on a placement.
    std::vector<const Constraint*> pending;
    for (const Constraint* c : cons) {
      if (!c->producer && !c->set.contains(p)) pending.push_back(c);
    }
    while (!pending.empty()) {
      const schema::Placement q = choose(pending.front()->set, pending);
      const std::string& source = pending.front()->value;
      const std::string converted = g.unique_name(source + "_" + short_name(q));
      Value v = g.value(source);
      v.name = converted;
      g.add_value(v);
      chosen[converted] = q;
      std::vector<const Constraint*> rest;
      size_t first_node = g.nodes.size();
      std::string readers;
      for (const Constraint* c : pending) {
        if (c->value != source || !c->set.contains(q)) {
          rest.push_back(c);
          continue;
        }
        Node& consumer = g.nodes[c->node];
        std::replace(consumer.inputs.begin(), consumer.inputs.end(), source, converted);
        first_node = std::min(first_node, static_cast<size_t>(c->node));
        readers += (readers.empty() ? "" : ", ") + consumer.origin;
      }
      insertions.push_back({first_node, conversion_node(g, source, converted)});
      report.lines.push_back("conversion '" + source + "' " + describe(p) + " -> " + describe(q) +
                             " for " + readers + " (reads " + pending.front()->set.describe() +
                             ")");
      pending = rest;
    }
  }

  // Apply the insertions in node order (stable for equal positions).
  std::stable_sort(insertions.begin(), insertions.end(),
                   [](const Insertion& a, const Insertion& b) { return a.position < b.position; });
  std::vector<Node> nodes;
  size_t next = 0;
  for (size_t k = 0; k <= g.nodes.size(); ++k) {
    while (next < insertions.size() && insertions[next].position == k) {
      nodes.push_back(insertions[next++].node);
    }
    if (k < g.nodes.size()) nodes.push_back(g.nodes[k]);
  }
  g.nodes = std::move(nodes);
  for (const auto& name : g.value_names()) {
    Value& v = g.value(name);
    const schema::Placement p = chosen.at(name);
    v.storage = p.storage;
    v.layout = p.layout;
  }
  return report;
}

}  // namespace vkd::compiler
