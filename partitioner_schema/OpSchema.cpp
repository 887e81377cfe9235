#include "partitioner_schema/OpSchema.h"

#include "core/Error.h"
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// The family files of partitioner_schema/ops/: <Family>.cpp defines <family>_schemas, the
// entries of the ops runtime/ops/<Family>.cpp builds. The list is made from the folder at
// configure time (cmake/VkdFamilyLists.cmake), in file-name order.
#define VKD_FAMILY(family) void family##_schemas(std::vector<OpSchema>& s);
#include "partitioner_schema/ops/SchemaFamilies.inc"
#undef VKD_FAMILY

namespace {

using S = StorageType;
using L = MemoryLayout;

// Every family's entries, in the order of the family files' names: nothing depends on it
// (kernel signatures, lookups and the runtime registry go by name).
std::vector<OpSchema> build_schemas() {
  std::vector<OpSchema> s;
#define VKD_FAMILY(family) family##_schemas(s);
#include "partitioner_schema/ops/SchemaFamilies.inc"
#undef VKD_FAMILY
  return s;
}

}  // namespace

PlacementSet::PlacementSet(std::initializer_list<Placement> list) {
  for (const auto& p : list) bits_ |= bit(p);
}

const std::vector<Placement>& all_placements() {
  static const std::vector<Placement> all = {{S::Buffer, L::WidthPacked},
                                             {S::Buffer, L::HeightPacked},
                                             {S::Buffer, L::ChannelsPacked},
                                             {S::Texture3D, L::WidthPacked},
                                             {S::Texture3D, L::HeightPacked},
                                             {S::Texture3D, L::ChannelsPacked},
                                             k4W4C,
                                             k4H4W,
                                             k4C1W};
  return all;
}

uint16_t PlacementSet::bit(const Placement& p) {
  const auto& all = all_placements();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] == p) return static_cast<uint16_t>(1u << i);
  }
  VKD_THROW(ErrorCode::Internal, "placement ", vkd::schema::describe(p), " is not legal");
}

PlacementSet PlacementSet::from_bits(uint16_t bits) {
  PlacementSet s;
  s.bits_ = bits;
  return s;
}

PlacementSet PlacementSet::all_float() { return from_bits(0x3f); }
PlacementSet PlacementSet::float_buffers() { return from_bits(0x07); }
PlacementSet PlacementSet::all_int8() { return from_bits(0x1c0); }
PlacementSet PlacementSet::channels_packed_int8() { return {k4W4C, k4C1W}; }

std::vector<Placement> PlacementSet::list() const {
  std::vector<Placement> out;
  for (const auto& p : all_placements()) {
    if (contains(p)) out.push_back(p);
  }
  return out;
}

std::string PlacementSet::describe() const {
  std::string out = "{";
  for (const auto& p : list()) out += (out.size() > 1 ? ", " : "") + vkd::schema::describe(p);
  return out + "}";
}

std::string describe(const Placement& p) {
  return std::string(to_string(p.storage)) + " " + std::string(to_string(p.layout));
}

int OpSchema::arg_index(std::string_view arg_name) const {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].name == arg_name) return static_cast<int>(i);
  }
  return -1;
}

const std::vector<OpSchema>& op_schemas() {
  static const std::vector<OpSchema> schemas = build_schemas();
  return schemas;
}

bool is_runnable_op(std::string_view op) {
  const OpSchema* s = find_op_schema(op);
  return s != nullptr && s->runnable();
}

const OpSchema* find_op_schema(std::string_view name) {
  for (const auto& s : op_schemas()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace vkd::schema
