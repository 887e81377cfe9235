#include "compiler/GraphHash.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "serialization/Xxh64.h"

namespace vkd::compiler {
namespace {

// Every item goes in with its length or a tag, so no two different graphs give the same
// byte stream.
class GraphHasher {
 public:
  void u64(uint64_t v) { h_.update_u64(v); }
  void bytes(const void* p, size_t n) {
    u64(n);
    h_.update(p, n);
  }
  void str(const std::string& s) { bytes(s.data(), s.size()); }
  void names(const std::vector<std::string>& list) {
    u64(list.size());
    for (const std::string& s : list) str(s);
  }
  void ints(const std::vector<int64_t>& list) {
    u64(list.size());
    for (const int64_t v : list) u64(static_cast<uint64_t>(v));
  }
  void f64(double v) {
    uint64_t bits;
    static_assert(sizeof bits == sizeof v);
    std::memcpy(&bits, &v, sizeof bits);
    u64(bits);
  }

  void value(const Value& v) {
    str(v.name);
    u64(static_cast<uint64_t>(v.dtype));
    if (!v.foreign_dtype.empty()) str(v.foreign_dtype);  // graphs without one hash as before
    ints(v.shape);
    u64(v.data ? 1 : 0);
    if (v.data) bytes(v.data->data(), v.data->size());
  }

  void arg(const ArgValue& a) {
    u64(a.index());  // the kind
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t>) {
            u64(static_cast<uint64_t>(x));
          } else if constexpr (std::is_same_v<T, double>) {
            f64(x);
          } else if constexpr (std::is_same_v<T, std::string>) {
            str(x);
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            ints(x);
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            u64(x.size());
            for (const double d : x) f64(d);
          }
        },
        a);
  }

  void node(const Node& n) {
    str(n.op);
    names(n.inputs);
    names(n.outputs);
    u64(n.args.size());
    for (const auto& [name, a] : n.args) {  // a std::map: in name order
      str(name);
      arg(a);
    }
  }

  uint64_t digest() const { return h_.digest(); }

 private:
  serialization::Xxh64 h_;
};

}  // namespace

uint64_t graph_ir_hash(const Graph& g) {
  GraphHasher h;
  h.names(g.inputs);
  h.names(g.outputs);
  std::vector<std::string> names = g.value_names();
  std::sort(names.begin(), names.end());
  h.u64(names.size());
  for (const std::string& name : names) h.value(g.value(name));
  h.u64(g.nodes.size());
  for (const Node& n : g.nodes) h.node(n);
  return h.digest();
}

}  // namespace vkd::compiler
