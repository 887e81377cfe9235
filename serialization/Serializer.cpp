#include "serialization/Serializer.h"

#include <cstring>
#include <utility>

#include "serialization/schema_generated.h"

namespace vkd::serialization {

namespace {

namespace f = ::flatbuffers;

uint64_t align_up_u64(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::vector<f::Offset<f::String>> create_strings(f::FlatBufferBuilder& fbb,
                                                 const std::vector<std::string>& names) {
  std::vector<f::Offset<f::String>> out;
  out.reserve(names.size());
  for (const std::string& n : names) out.push_back(fbb.CreateString(n));
  return out;
}

// `what`: "input" or "output".
void check_names(const char* what, const std::vector<ValueId>& ids,
                 const std::vector<std::string>& names) {
  VKD_CHECK(names.empty() || names.size() == ids.size(), ErrorCode::InvalidArgument,
            "GraphBuilder::set_", what, "s: ", names.size(), " names for ", ids.size(), " ", what,
            "s (give none or one per ", what, ')');
}

}  // namespace

ValueId GraphBuilder::push(Entry entry) {
  VKD_CHECK(values_.size() < UINT32_MAX, ErrorCode::InvalidArgument,
            "GraphBuilder: too many values");
  values_.push_back(std::move(entry));
  return static_cast<ValueId>(values_.size() - 1);
}

ValueId GraphBuilder::add_tensor(const TensorSpec& spec, std::string name,
                                 std::optional<std::vector<uint8_t>> constant) {
  return detail::only_vkd_errors("GraphBuilder::add_tensor", [&] {
    Entry e;
    e.kind = Kind::Tensor;
    e.spec = spec;
    e.name = std::move(name);
    if (constant) {
      VKD_CHECK(constants_.size() < INT32_MAX, ErrorCode::InvalidArgument,
                "GraphBuilder: too many constants");
      e.constant_id = static_cast<int32_t>(constants_.size());
      constants_.push_back(std::move(*constant));
    }
    return push(std::move(e));
  });
}

ValueId GraphBuilder::add_int(int64_t value) {
  return detail::only_vkd_errors("GraphBuilder::add_int", [&] {
    Entry e;
    e.kind = Kind::Int;
    e.int_value = value;
    return push(std::move(e));
  });
}

ValueId GraphBuilder::add_float(double value) {
  return detail::only_vkd_errors("GraphBuilder::add_float", [&] {
    Entry e;
    e.kind = Kind::Float;
    e.float_value = value;
    return push(std::move(e));
  });
}

ValueId GraphBuilder::add_bool(bool value) {
  return detail::only_vkd_errors("GraphBuilder::add_bool", [&] {
    Entry e;
    e.kind = Kind::Bool;
    e.int_value = value ? 1 : 0;
    return push(std::move(e));
  });
}

ValueId GraphBuilder::add_int_list(std::vector<int64_t> items) {
  return detail::only_vkd_errors("GraphBuilder::add_int_list", [&] {
    Entry e;
    e.kind = Kind::IntList;
    e.ints = std::move(items);
    return push(std::move(e));
  });
}

ValueId GraphBuilder::add_float_list(std::vector<double> items) {
  return detail::only_vkd_errors("GraphBuilder::add_float_list", [&] {
    Entry e;
    e.kind = Kind::FloatList;
    e.floats = std::move(items);
    return push(std::move(e));
  });
}

ValueId GraphBuilder::add_string(std::string value) {
  return detail::only_vkd_errors("GraphBuilder::add_string", [&] {
    Entry e;
    e.kind = Kind::String;
    e.name = std::move(value);
    return push(std::move(e));
  });
}

ValueId GraphBuilder::add_value_list(std::vector<ValueId> items) {
  return detail::only_vkd_errors("GraphBuilder::add_value_list", [&] {
    Entry e;
    e.kind = Kind::ValueList;
    e.ids = std::move(items);
    return push(std::move(e));
  });
}

void GraphBuilder::add_op(std::string name, std::vector<ValueId> args) {
  detail::only_vkd_errors("GraphBuilder::add_op",
                          [&] { ops_.push_back(Op{std::move(name), std::move(args)}); });
}

void GraphBuilder::set_inputs(std::vector<ValueId> ids, std::vector<std::string> names) {
  check_names("input", ids, names);
  inputs_ = std::move(ids);
  input_names_ = std::move(names);
}

void GraphBuilder::set_outputs(std::vector<ValueId> ids, std::vector<std::string> names) {
  check_names("output", ids, names);
  outputs_ = std::move(ids);
  output_names_ = std::move(names);
}

std::vector<uint8_t> GraphBuilder::finish() const {
  return detail::only_vkd_errors("GraphBuilder::finish", [&] {
    // Constant placement first: entries are relative to the segment, so they do not depend
    // on where the segment lands.
    std::vector<fb::ConstantEntry> entries;
    entries.reserve(constants_.size());
    uint64_t segment_size = 0;
    for (const std::vector<uint8_t>& c : constants_) {
      const uint64_t offset = align_up_u64(segment_size, kConstantAlignment);
      entries.emplace_back(offset, c.size());
      segment_size = offset + c.size();
    }

    f::FlatBufferBuilder fbb(1024);
    std::vector<f::Offset<fb::Value>> values;
    values.reserve(values_.size());
    for (const Entry& e : values_) {
      fb::ValueUnion type = fb::ValueUnion::NONE;
      f::Offset<void> obj;
      switch (e.kind) {
        case Kind::Tensor: {
          type = fb::ValueUnion::TensorValue;
          const auto sizes = fbb.CreateVector(e.spec.sizes);
          const auto name = fbb.CreateString(e.name);
          // Enums are cast as they are (no range check): see the class comment.
          obj = fb::CreateTensorValue(fbb, sizes, static_cast<fb::DType>(e.spec.dtype),
                                      static_cast<fb::StorageType>(e.spec.storage),
                                      static_cast<fb::MemoryLayout>(e.spec.layout), e.constant_id,
                                      name)
                    .Union();
          break;
        }
        case Kind::Int:
          type = fb::ValueUnion::IntValue;
          obj = fb::CreateIntValue(fbb, e.int_value).Union();
          break;
        case Kind::Float:
          type = fb::ValueUnion::FloatValue;
          obj = fb::CreateFloatValue(fbb, e.float_value).Union();
          break;
        case Kind::Bool:
          type = fb::ValueUnion::BoolValue;
          obj = fb::CreateBoolValue(fbb, e.int_value != 0).Union();
          break;
        case Kind::IntList:
          type = fb::ValueUnion::IntListValue;
          obj = fb::CreateIntListValue(fbb, fbb.CreateVector(e.ints)).Union();
          break;
        case Kind::FloatList:
          type = fb::ValueUnion::FloatListValue;
          obj = fb::CreateFloatListValue(fbb, fbb.CreateVector(e.floats)).Union();
          break;
        case Kind::String:
          type = fb::ValueUnion::StringValue;
          obj = fb::CreateStringValue(fbb, fbb.CreateString(e.name)).Union();
          break;
        case Kind::ValueList:
          type = fb::ValueUnion::ValueListValue;
          obj = fb::CreateValueListValue(fbb, fbb.CreateVector(e.ids)).Union();
          break;
      }
      values.push_back(fb::CreateValue(fbb, type, obj));
    }

    std::vector<f::Offset<fb::Operator>> ops;
    ops.reserve(ops_.size());
    for (const Op& op : ops_) {
      const auto name = fbb.CreateString(op.name);
      ops.push_back(fb::CreateOperator(fbb, name, fbb.CreateVector(op.args)));
    }

    const auto values_vec = fbb.CreateVector(values);
    const auto ops_vec = fbb.CreateVector(ops);
    const auto inputs_vec = fbb.CreateVector(inputs_);
    const auto input_names_vec = fbb.CreateVector(create_strings(fbb, input_names_));
    const auto outputs_vec = fbb.CreateVector(outputs_);
    const auto output_names_vec = fbb.CreateVector(create_strings(fbb, output_names_));
    const auto constants_vec = fbb.CreateVectorOfStructs(entries);
    f::Offset<fb::DynamicLength> dynamic_table;
    if (dynamic_) {
      std::vector<fb::DynamicEntry> items;
      items.reserve(dynamic_->entries.size());
      for (const DynamicEntry& e : dynamic_->entries)
        items.emplace_back(e.value, e.element, e.a, e.b);
      const auto name = fbb.CreateString(dynamic_->name);
      const auto entries_vec = fbb.CreateVectorOfStructs(items);
      dynamic_table = fb::CreateDynamicLength(fbb, name, dynamic_->min, dynamic_->max, entries_vec);
    }
    const auto graph =
        fb::CreateGraph(fbb, kGraphSchemaVersion, values_vec, ops_vec, inputs_vec, input_names_vec,
                        outputs_vec, output_names_vec, constants_vec, dynamic_table);
    fb::FinishGraphBuffer(fbb, graph);

    BlobHeader header;
    header.flatbuffer_offset = align_up_u64(kBlobHeaderSize, kConstantAlignment);
    header.flatbuffer_size = fbb.GetSize();
    header.constant_offset =
        align_up_u64(header.flatbuffer_offset + header.flatbuffer_size, kConstantAlignment);
    header.constant_size = segment_size;
    header.source_graph_hash = source_graph_hash_;

    // Zero-filled, so padding bytes are deterministic.
    std::vector<uint8_t> blob(header.constant_offset + header.constant_size, 0);
    encode_header(header, blob.data());
    std::memcpy(blob.data() + header.flatbuffer_offset, fbb.GetBufferPointer(), fbb.GetSize());
    for (size_t i = 0; i < constants_.size(); ++i) {
      if (constants_[i].empty()) continue;
      std::memcpy(blob.data() + header.constant_offset + entries[i].offset(), constants_[i].data(),
                  constants_[i].size());
    }
    seal_blob(blob);
    return blob;
  });
}

}  // namespace vkd::serialization
