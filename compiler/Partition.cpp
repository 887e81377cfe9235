#include "compiler/Partition.h"

#include <algorithm>
#include <map>
#include <set>

#include "partitioner_schema/OpSchema.h"

namespace vkd::compiler {

bool runs_on_backend(const Node& node) { return schema::is_runnable_op(node.op); }

bool fits_device(const Value& v) {
  return v.shape.size() <= kMaxDeviceRank && v.foreign_dtype.empty();
}

const Value* tensor_beyond_device(const Graph& g, const Node& node) {
  for (const auto* list : {&node.inputs, &node.outputs}) {
    for (const std::string& name : *list) {
      if (name.empty() || !g.has_value(name)) continue;
      const Value& v = g.value(name);
      if (!fits_device(v)) return &v;
    }
  }
  return nullptr;
}

std::string beyond_device_reason(const Value& v) {
  if (!v.foreign_dtype.empty()) {
    return "value '" + v.name + "' is " + v.foreign_dtype +
           "; device tensors are float32, float16, int8 or int32";
  }
  return "value '" + v.name + "' has rank " + std::to_string(v.shape.size()) + " (" +
         shape_str(v.shape) + "); device tensors are at most " + std::to_string(kMaxDeviceRank) +
         "-D";
}

namespace {

// Which unit each node belongs to: a partition label for backend nodes, its own label for a
// host node (host labels start after every possible partition label).
class Units {
 public:
  explicit Units(const Graph& g) : g_(g), label_(g.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      label_[i] = static_cast<int>(g.nodes.size() + i);
      for (const auto& o : g.nodes[i].outputs) producer_[o] = static_cast<int>(i);
    }
  }

  int producer(const std::string& v) const {
    auto it = producer_.find(v);
    return it == producer_.end() ? -1 : it->second;
  }
  int label(size_t node) const { return label_[node]; }
  void set(size_t node, int label) { label_[node] = label; }
  void relabel(int from, int to) { std::replace(label_.begin(), label_.end(), from, to); }
  const std::vector<int>& labels() const { return label_; }
  void restore(std::vector<int> labels) { label_ = std::move(labels); }

  // Edges between distinct units, from producer unit to consumer unit.
  std::map<int, std::set<int>> unit_edges() const {
    std::map<int, std::set<int>> edges;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      edges[label_[i]];
      for (const auto& in : g_.nodes[i].inputs) {
        const int p = in.empty() ? -1 : producer(in);
        if (p >= 0 && label_[p] != label_[i]) edges[label_[p]].insert(label_[i]);
      }
    }
    return edges;
  }

  // Units in a dependency order (ties: the unit whose first node comes first), or empty when
  // the units depend on each other in a cycle.
  std::vector<int> unit_order() const {
    const auto edges = unit_edges();
    std::map<int, int> indegree, first_node;
    for (const auto& e : edges) {
      indegree[e.first];
      for (int to : e.second) ++indegree[to];
    }
    for (size_t i = 0; i < label_.size(); ++i) first_node.emplace(label_[i], static_cast<int>(i));
    std::set<std::pair<int, int>> ready;  // (first node, label)
    for (const auto& d : indegree) {
      if (d.second == 0) ready.insert({first_node[d.first], d.first});
    }
    std::vector<int> order;
    while (!ready.empty()) {
      const int u = ready.begin()->second;
      ready.erase(ready.begin());
      order.push_back(u);
      for (int to : edges.at(u)) {
        if (--indegree[to] == 0) ready.insert({first_node[to], to});
      }
    }
    if (order.size() != indegree.size()) order.clear();
    return order;
  }

 private:
  const Graph& g_;
  std::vector<int> label_;
  std::map<std::string, int> producer_;
};

void copy_value(const Graph& from, Graph& to, const std::string& name) {
  if (name.empty() || to.has_value(name)) return;
  to.add_value(from.value(name));
}

Partition make_partition(const Graph& g, const std::vector<int>& nodes) {
  Partition p;
  p.nodes = nodes;
  std::set<int> members(nodes.begin(), nodes.end());
  std::set<std::string> produced;
  for (int i : nodes) {
    const Node& n = g.nodes[i];
    for (const auto& in : n.inputs) {
      if (in.empty()) continue;
      copy_value(g, p.graph, in);
      const bool outside = !g.value(in).is_constant() && produced.count(in) == 0;
      if (outside &&
          std::find(p.graph.inputs.begin(), p.graph.inputs.end(), in) == p.graph.inputs.end()) {
        p.graph.inputs.push_back(in);
      }
    }
    for (const auto& out : n.outputs) {
      copy_value(g, p.graph, out);
      produced.insert(out);
    }
    p.graph.nodes.push_back(n);
  }
  for (int i : nodes) {
    for (const auto& out : g.nodes[i].outputs) {
      bool read_outside = g.is_graph_output(out);
      for (int c : g.consumers(out)) read_outside = read_outside || members.count(c) == 0;
      if (read_outside) p.graph.outputs.push_back(out);
    }
  }
  return p;
}

}  // namespace

PartitionPlan partition_graph(const Graph& g, const std::function<bool(const Node&)>& on_backend) {
  Units units(g);
  int next_label = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!on_backend(g.nodes[i])) continue;
    // The partitions of this node's backend producers, in the order they first appear.
    std::vector<int> candidates;
    for (const auto& in : g.nodes[i].inputs) {
      const int p = in.empty() ? -1 : units.producer(in);
      if (p < 0 || !on_backend(g.nodes[p])) continue;
      if (std::find(candidates.begin(), candidates.end(), units.label(p)) == candidates.end()) {
        candidates.push_back(units.label(p));
      }
    }
    int joined = next_label++;
    units.set(i, joined);
    for (int c : candidates) {
      const std::vector<int> before = units.labels();
      units.relabel(joined, c);
      if (units.unit_order().empty()) {
        units.restore(before);  // merging would close a cycle through the host
      } else {
        joined = c;
      }
    }
  }

  PartitionPlan plan;
  std::map<int, size_t> partition_of_label;
  for (int unit : units.unit_order()) {
    std::vector<int> members;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (units.label(i) == unit) members.push_back(static_cast<int>(i));
    }
    if (!on_backend(g.nodes[members.at(0)])) {
      plan.steps.push_back({false, static_cast<size_t>(members[0])});
      continue;
    }
    plan.steps.push_back({true, plan.partitions.size()});
    plan.partitions.push_back(make_partition(g, members));
  }
  return plan;
}

}  // namespace vkd::compiler
