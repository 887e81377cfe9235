#include "test/fuzz/JsonMutator.h"

#include <cstdint>
#include <limits>
#include <random>
#include <utility>

#include <nlohmann/json.hpp>

#include "compiler/StrictJson.h"
#include "core/Error.h"

namespace vkd::fuzz {
namespace {

using Json = nlohmann::ordered_json;

// A value of the document and where it sits (parent nullptr: the root).
struct Node {
  Json* value = nullptr;
  Json* parent = nullptr;
  std::string key;   // in an object parent
  size_t index = 0;  // in an array parent
};

// Depth is at most the readers' cap (the strict parser refused deeper documents).
void collect(Json& j, Json* parent, const std::string& key, size_t index, std::vector<Node>& out) {
  out.push_back({&j, parent, key, index});
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) collect(it.value(), &j, it.key(), 0, out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) collect(j[i], &j, "", i, out);
  }
}

Json mutated_number(const Json& n, std::mt19937& rng) {
  const int64_t v = n.is_number_integer() ? n.get<int64_t>() : 0;
  const std::vector<Json> picks = {
      0, 1, -1, 2, 3, 4, 255, 65536, int64_t{2147483647}, int64_t{2147483648},
      int64_t{4611686018427387905}, std::numeric_limits<int64_t>::max(),
      std::numeric_limits<int64_t>::min(), std::numeric_limits<uint64_t>::max(), 0.5, -0.5, 1e300,
      // near the value (wrapping like the readers must not)
      static_cast<int64_t>(static_cast<uint64_t>(v) + 1),
      static_cast<int64_t>(static_cast<uint64_t>(v) - 1),
      static_cast<int64_t>(static_cast<uint64_t>(v) * 2)};
  return picks[rng() % picks.size()];
}

// One change to `doc`; false when there was nothing to change.
bool mutate_once(Json& doc, std::mt19937& rng, const std::vector<std::string>& words) {
  std::vector<Node> nodes;
  collect(doc, nullptr, "", 0, nodes);
  std::vector<const Json*> strings;
  for (const Node& n : nodes) {
    if (n.value->is_string()) strings.push_back(n.value);
  }
  const Node& n = nodes[rng() % nodes.size()];
  const Json other = *nodes[rng() % nodes.size()].value;  // a copy: `n` may hold it
  Json& v = *n.value;
  switch (rng() % 8) {
    case 0:  // another value of the document in its place (a type it may not expect)
      v = other;
      return true;
    case 1:  // one level deeper
      v = Json::array({Json(v)});
      return true;
    case 2:  // removed from its parent
      if (n.parent == nullptr) return false;
      if (n.parent->is_object()) {
        n.parent->erase(n.key);
      } else {
        n.parent->erase(n.index);
      }
      return true;
    default: break;
  }
  if (v.is_number()) {
    v = mutated_number(v, rng);
  } else if (v.is_string()) {
    const bool from_doc = !strings.empty() && (words.empty() || rng() % 2 == 0);
    v = from_doc ? *strings[rng() % strings.size()] : Json(words[rng() % words.size()]);
  } else if (v.is_boolean()) {
    v = !v.get<bool>();
  } else if (v.is_null()) {
    v = 0;
  } else if (v.is_array()) {
    if (v.empty() || rng() % 3 == 0) {
      v.push_back(v.empty() ? other : Json(v[rng() % v.size()]));  // a duplicate or a stranger
    } else {
      std::swap(v[rng() % v.size()], v[rng() % v.size()]);
    }
  } else if (v.is_object()) {
    std::string key = words.empty() ? "x" : words[rng() % words.size()];
    if (!v.empty() && rng() % 2 == 0) key = std::next(v.begin(), rng() % v.size()).key();
    v[key] = other;  // a member replaced, or a new one
  }
  return true;
}

}  // namespace

std::optional<std::string> mutate_json(const std::string& text, uint32_t seed,
                                       const std::vector<std::string>& words) {
  Json doc;
  try {
    doc = compiler::parse_json_strict(text);
  } catch (const Error&) {
    return std::nullopt;
  }
  std::mt19937 rng(seed);
  const int changes = 1 + static_cast<int>(rng() % 2);
  for (int i = 0; i < changes; ++i) mutate_once(doc, rng, words);
  return doc.dump(1);
}

}  // namespace vkd::fuzz
