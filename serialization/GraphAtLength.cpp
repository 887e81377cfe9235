#include "serialization/GraphAtLength.h"

#include <algorithm>
#include <variant>

#include "core/Error.h"

namespace vkd::serialization {
namespace {

constexpr ErrorCode kBad = ErrorCode::InvalidArgument;

const DynamicEntry* entry_for(const DynamicLength& d, ValueId value, uint32_t element) {
  for (const DynamicEntry& e : d.entries) {
    if (e.value == value && e.element == element) return &e;
  }
  return nullptr;
}

}  // namespace

std::string length_name(const DynamicLength& d) { return d.name.empty() ? "L" : d.name; }

std::string affine_string(const DynamicLength& d, const DynamicEntry& e) {
  std::string s = std::to_string(e.a) + "*" + length_name(d);
  if (e.b != 0) s += (e.b > 0 ? "+" : "") + std::to_string(e.b);
  return s;
}

DeserializedGraph graph_at_length(const DeserializedGraph& g, int64_t length) {
  VKD_CHECK(g.dynamic.has_value(), kBad, "the graph has no dynamic length");
  const DynamicLength& d = *g.dynamic;
  VKD_CHECK(length >= d.min && length <= d.max, kBad, "length ", length_name(d), " = ", length,
            " is outside [", d.min, ", ", d.max, "], the lengths this model takes");
  DeserializedGraph out = g;
  for (const DynamicEntry& e : d.entries) {
    const int64_t v = e.a * length + e.b;  // bounded by deserialize(): no overflow
    Value& value = out.values.at(e.value);
    if (auto* t = std::get_if<TensorValue>(&value)) {
      t->spec.sizes.at(e.element) = v;
      // A constant's leading rows: a prefix of its host bytes (checked by deserialize()).
      if (t->constant) t->constant->size = static_cast<size_t>(constant_byte_size(t->spec));
    } else if (auto* n = std::get_if<IntValue>(&value)) {
      n->value = v;
    } else if (auto* l = std::get_if<IntListValue>(&value)) {
      l->items.at(e.element) = v;
    } else {
      VKD_THROW(ErrorCode::Internal, "dynamic length entry on value ", e.value,
                ", which is neither a tensor nor an int");
    }
  }
  for (size_t id = 0; id < out.values.size(); ++id) {
    const auto* t = std::get_if<TensorValue>(&out.values[id]);
    if (!t) continue;
    try {
      validate(t->spec);
    } catch (const Error& e) {
      VKD_THROW(kBad, "value ", id, " (tensor '", t->name, "') at ", length_name(d), " = ", length,
                ": ", e.what());
    }
  }
  return out;
}

int64_t length_of_inputs(const DeserializedGraph& g, const std::vector<std::vector<int64_t>>& sizes,
                         const std::vector<std::string>& names) {
  VKD_CHECK(g.dynamic.has_value(), ErrorCode::Internal, "length_of_inputs: no dynamic length");
  VKD_CHECK(sizes.size() == g.inputs.size() && names.size() == g.inputs.size(), kBad,
            "the model takes ", g.inputs.size(), " inputs, got ", sizes.size());
  const DynamicLength& d = *g.dynamic;
  const std::string T = length_name(d);
  int64_t length = -1;
  std::string from;  // "input 0 'ids' dim 1": where `length` was read
  // Two passes: the length from the first input size that follows it, then every size checked.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      const ValueId id = g.inputs[i].value;
      const auto& compiled = std::get<TensorValue>(g.values.at(id)).spec.sizes;
      const std::string what = "input " + std::to_string(i) + " '" + names[i] + "'";
      VKD_CHECK(sizes[i].size() == compiled.size(), kBad, what, " has shape ",
                sizes_string(sizes[i]), ", the model takes rank ", compiled.size(), " (",
                sizes_string(compiled), " at the maximum ", T, " = ", d.max, ")");
      for (size_t k = 0; k < compiled.size(); ++k) {
        const DynamicEntry* e = entry_for(d, id, static_cast<uint32_t>(k));
        const int64_t got = sizes[i][k];
        const std::string dim =
            what + " has shape " + sizes_string(sizes[i]) + ": dim " + std::to_string(k);
        if (!e || e->a == 0) {
          if (pass == 1) {
            VKD_CHECK(got == compiled[k], kBad, dim, " must be ", compiled[k]);
          }
          continue;
        }
        const int64_t lo = e->a * d.min + e->b, hi = e->a * d.max + e->b;
        const std::string rule = dim + " is " + affine_string(d, *e) + " for the length " + T +
                                 " from " + std::to_string(d.min) + " to " + std::to_string(d.max) +
                                 " (" + std::to_string(std::min(lo, hi)) + " to " +
                                 std::to_string(std::max(lo, hi)) + "), got " + std::to_string(got);
        const int64_t diff = got - e->b;
        VKD_CHECK(diff % e->a == 0, kBad, rule);
        const int64_t at = diff / e->a;
        VKD_CHECK(at >= d.min && at <= d.max, kBad, rule,
                  at > d.max ? " (longer than the maximum the model was compiled for)" : "");
        if (pass == 0 && length < 0) {
          length = at;
          from = what + " dim " + std::to_string(k);
        }
        VKD_CHECK(at == length, kBad, dim, " gives ", T, " = ", at, ", but ", from, " gave ", T,
                  " = ", length);
      }
    }
  }
  return length < 0 ? d.max : length;
}

}  // namespace vkd::serialization
