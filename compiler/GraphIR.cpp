#include "compiler/GraphIR.h"

#include <algorithm>

#include "core/Error.h"

namespace vkd::compiler {

Value& Graph::add_value(Value v) {
  VKD_CHECK(!v.name.empty(), ErrorCode::InvalidArgument, "a value has an empty name");
  VKD_CHECK(!has_value(v.name), ErrorCode::InvalidArgument, "value '", v.name,
            "' is defined twice");
  const std::string name = v.name;
  index_[name] = order_.size();
  order_.push_back(name);
  return values_[name] = std::move(v);
}

Value& Graph::value(const std::string& name) {
  auto it = values_.find(name);
  VKD_CHECK(it != values_.end(), ErrorCode::InvalidArgument, "unknown value '", name, "'");
  return it->second;
}

const Value& Graph::value(const std::string& name) const {
  auto it = values_.find(name);
  VKD_CHECK(it != values_.end(), ErrorCode::InvalidArgument, "unknown value '", name, "'");
  return it->second;
}

void Graph::remove_value(const std::string& name) {
  VKD_CHECK(has_value(name), ErrorCode::Internal, "remove_value: unknown value '", name, "'");
  values_.erase(name);
  order_.erase(std::find(order_.begin(), order_.end(), name));
  index_.clear();
  for (size_t i = 0; i < order_.size(); ++i) index_[order_[i]] = i;
}

std::string Graph::unique_name(const std::string& base) const {
  if (!has_value(base)) return base;
  for (int i = 1;; ++i) {
    const std::string candidate = base + "." + std::to_string(i);
    if (!has_value(candidate)) return candidate;
  }
}

int Graph::producer(const std::string& value) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& o : nodes[i].outputs) {
      if (o == value) return static_cast<int>(i);
    }
  }
  return -1;
}

std::vector<int> Graph::consumers(const std::string& value) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (std::find(nodes[i].inputs.begin(), nodes[i].inputs.end(), value) != nodes[i].inputs.end()) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

bool Graph::is_graph_input(const std::string& value) const {
  return std::find(inputs.begin(), inputs.end(), value) != inputs.end();
}

bool Graph::is_graph_output(const std::string& value) const {
  return std::find(outputs.begin(), outputs.end(), value) != outputs.end();
}

namespace {

const ArgValue& find_arg(const Node& node, const std::string& name) {
  auto it = node.args.find(name);
  VKD_CHECK(it != node.args.end(), ErrorCode::InvalidArgument, node.origin, ": missing argument '",
            name, "'");
  return it->second;
}

}  // namespace

int64_t arg_int(const Node& node, const std::string& name) {
  const ArgValue& v = find_arg(node, name);
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  if (const auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  VKD_THROW(ErrorCode::InvalidArgument, node.origin, ": argument '", name, "' must be an integer");
}

double arg_float(const Node& node, const std::string& name) {
  const ArgValue& v = find_arg(node, name);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  VKD_THROW(ErrorCode::InvalidArgument, node.origin, ": argument '", name, "' must be a number");
}

bool arg_bool(const Node& node, const std::string& name) {
  const ArgValue& v = find_arg(node, name);
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  VKD_THROW(ErrorCode::InvalidArgument, node.origin, ": argument '", name, "' must be a bool");
}

std::vector<int64_t> arg_ints(const Node& node, const std::string& name) {
  const ArgValue& v = find_arg(node, name);
  if (const auto* l = std::get_if<std::vector<int64_t>>(&v)) return *l;
  if (const auto* i = std::get_if<int64_t>(&v)) return {*i};
  VKD_THROW(ErrorCode::InvalidArgument, node.origin, ": argument '", name,
            "' must be a list of integers");
}

bool arg_present(const Node& node, const std::string& name) {
  auto it = node.args.find(name);
  return it != node.args.end() && !std::holds_alternative<NoneArg>(it->second);
}

}  // namespace vkd::compiler
