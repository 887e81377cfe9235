#include "compiler/Safetensors.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "compiler/GraphIR.h"
#include "compiler/StrictJson.h"

#include "core/Error.h"
#include "core/TensorLimits.h"

namespace vkd::compiler {

namespace {

using Json = nlohmann::ordered_json;

// Header sizes above this are rejected before anything is allocated for them (the reference
// implementation uses the same bound).
constexpr uint64_t kMaxHeaderBytes = 100u * 1000u * 1000u;

const char* kMetadataKey = "__metadata__";

const char* json_type(const Json& j) { return j.type_name(); }

void put_u64_le(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// The element count of a tensor `where` names, within the caps of TensorLimits.h.
int64_t checked_numel(const std::vector<int64_t>& shape, size_t element_bytes,
                      const std::string& where) {
  const std::string too_large = tensor_size_problem(shape, element_bytes);
  VKD_CHECK(too_large.empty(), ErrorCode::InvalidArgument, where, " ", shape_str(shape), ": ",
            too_large);
  return *checked_element_count(shape);
}

}  // namespace

size_t safetensors_element_size(const std::string& dtype) {
  static const std::map<std::string, size_t> kSizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2},  {"BF16", 2},    {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},   {"U64", 8},     {"U32", 4},
      {"U16", 2}, {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

SafetensorsFile SafetensorsFile::read(const std::string& path) {
  std::error_code ec;
  VKD_CHECK(std::filesystem::exists(path, ec), ErrorCode::InvalidArgument, "weights file '", path,
            "' does not exist");
  VKD_CHECK(std::filesystem::is_regular_file(path, ec), ErrorCode::InvalidArgument,
            "weights file '", path, "' is not a regular file");
  std::ifstream in(path, std::ios::binary);
  VKD_CHECK(in.good(), ErrorCode::InvalidArgument, "weights file '", path,
            "' cannot be opened for reading");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  VKD_CHECK(!in.bad(), ErrorCode::InvalidArgument, "weights file '", path, "' could not be read");
  return from_bytes(std::move(bytes), path);
}

SafetensorsFile SafetensorsFile::from_bytes(std::vector<uint8_t> bytes,
                                            const std::string& source_name) {
  const std::string& src = source_name;
  SafetensorsFile file;
  file.source_name_ = source_name;
  VKD_CHECK(bytes.size() >= 8, ErrorCode::InvalidArgument, src, ": truncated safetensors file (",
            bytes.size(), " bytes; the 8-byte header length alone needs 8)");
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  const uint64_t available = bytes.size() - 8;
  VKD_CHECK(header_len <= available, ErrorCode::InvalidArgument, src,
            ": truncated safetensors header (header length ", header_len, " but only ", available,
            " bytes follow the length field)");
  VKD_CHECK(header_len <= kMaxHeaderBytes, ErrorCode::InvalidArgument, src,
            ": safetensors header length ", header_len, " exceeds the limit of ", kMaxHeaderBytes,
            " bytes");
  VKD_CHECK(header_len >= 2, ErrorCode::InvalidArgument, src, ": safetensors header length ",
            header_len, " is too small for a JSON object");

  const std::string header_text(reinterpret_cast<const char*>(bytes.data() + 8),
                                static_cast<size_t>(header_len));
  Json header;
  try {
    header = parse_json_strict(header_text);
  } catch (const Error& e) {
    throw Error(e.code(), src + " (safetensors header): " + e.what());
  }
  VKD_CHECK(header.is_object(), ErrorCode::InvalidArgument, src,
            ": safetensors header must be a JSON object, got ", json_type(header));

  const size_t data_start = 8 + static_cast<size_t>(header_len);
  const uint64_t data_size = bytes.size() - data_start;
  auto shared = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  const uint8_t* data_base = shared->data() + data_start;

  struct Range {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Range> ranges;

  for (const auto& item : header.items()) {
    const std::string& name = item.key();
    const Json& entry = item.value();
    if (name == kMetadataKey) {
      VKD_CHECK(entry.is_object(), ErrorCode::InvalidArgument, src,
                ": '__metadata__' must be an object of strings, got ", json_type(entry));
      for (const auto& m : entry.items()) {
        VKD_CHECK(m.value().is_string(), ErrorCode::InvalidArgument, src, ": '__metadata__' key '",
                  m.key(), "' must be a string, got ", json_type(m.value()));
        file.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = src + ": tensor '" + name + "'";
    VKD_CHECK(entry.is_object(), ErrorCode::InvalidArgument, where,
              ": entry must be an object, got ", json_type(entry));
    for (const auto& field : entry.items()) {
      const std::string& k = field.key();
      VKD_CHECK(k == "dtype" || k == "shape" || k == "data_offsets", ErrorCode::InvalidArgument,
                where, ": unknown field '", k, "' (expected dtype, shape, data_offsets)");
    }

    // dtype
    VKD_CHECK(entry.contains("dtype"), ErrorCode::InvalidArgument, where,
              ": missing field 'dtype'");
    const Json& jd = entry["dtype"];
    VKD_CHECK(jd.is_string(), ErrorCode::InvalidArgument, where,
              ": field 'dtype' must be a string, got ", json_type(jd));
    const std::string dtype = jd.get<std::string>();
    const size_t elem = safetensors_element_size(dtype);
    VKD_CHECK(elem != 0, ErrorCode::InvalidArgument, where, ": field 'dtype': unknown dtype '",
              dtype,
              "' (known: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL F8_E4M3 F8_E5M2)");

    // shape
    VKD_CHECK(entry.contains("shape"), ErrorCode::InvalidArgument, where,
              ": missing field 'shape'");
    const Json& js = entry["shape"];
    VKD_CHECK(js.is_array(), ErrorCode::InvalidArgument, where,
              ": field 'shape' must be an array, got ", json_type(js));
    std::vector<int64_t> shape;
    for (size_t i = 0; i < js.size(); ++i) {
      int64_t d = 0;
      VKD_CHECK(json_int(js[i], &d) && d >= 0, ErrorCode::InvalidArgument, where,
                ": field 'shape': element ", i, " must be a non-negative integer, got ",
                js[i].dump());
      shape.push_back(d);
    }
    const int64_t numel = checked_numel(shape, elem, where + ": field 'shape'");

    // data_offsets
    VKD_CHECK(entry.contains("data_offsets"), ErrorCode::InvalidArgument, where,
              ": missing field 'data_offsets'");
    const Json& jo = entry["data_offsets"];
    int64_t begin = 0, end = 0;
    VKD_CHECK(jo.is_array() && jo.size() == 2 && json_int(jo[0], &begin) && json_int(jo[1], &end) &&
                  begin >= 0 && end >= 0,
              ErrorCode::InvalidArgument, where,
              ": field 'data_offsets' must be [begin, end] with non-negative integers, got ",
              jo.dump());
    VKD_CHECK(begin <= end, ErrorCode::InvalidArgument, where, ": field 'data_offsets' [", begin,
              ", ", end, "]: begin is after end");
    VKD_CHECK(static_cast<uint64_t>(end) <= data_size, ErrorCode::InvalidArgument, where,
              ": field 'data_offsets' [", begin, ", ", end, "] ends past the data section (",
              data_size, " bytes)");
    const uint64_t expected = static_cast<uint64_t>(numel) * elem;
    VKD_CHECK(static_cast<uint64_t>(end - begin) == expected, ErrorCode::InvalidArgument, where,
              ": field 'data_offsets' [", begin, ", ", end, "] covers ", end - begin,
              " bytes, but dtype ", dtype, " shape ", shape_str(shape), " needs ", expected);

    SafetensorsTensorView view;
    view.name = name;
    view.dtype = dtype;
    view.shape = std::move(shape);
    view.data = data_base + begin;
    view.nbytes = static_cast<size_t>(expected);
    file.names_.push_back(name);
    file.tensors_.emplace(name, std::move(view));
    if (end > begin) {
      ranges.push_back({static_cast<uint64_t>(begin), static_cast<uint64_t>(end), name});
    }
  }

  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i) {
    VKD_CHECK(ranges[i].begin >= ranges[i - 1].end, ErrorCode::InvalidArgument, src, ": tensor '",
              ranges[i].name, "': field 'data_offsets' [", ranges[i].begin, ", ", ranges[i].end,
              "] overlaps tensor '", ranges[i - 1].name, "' [", ranges[i - 1].begin, ", ",
              ranges[i - 1].end, "]");
  }
  file.bytes_ = std::move(shared);
  return file;
}

const SafetensorsTensorView* SafetensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const SafetensorsTensorView& SafetensorsFile::get(const std::string& name) const {
  const SafetensorsTensorView* t = find(name);
  VKD_CHECK(t != nullptr, ErrorCode::InvalidArgument, source_name_, ": no tensor named '", name,
            "'");
  return *t;
}

std::vector<uint8_t> serialize_safetensors(const std::vector<SafetensorsTensor>& tensors,
                                           const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header[kMetadataKey] = std::move(meta);
  }
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const SafetensorsTensor& t : tensors) {
    VKD_CHECK(!t.name.empty() && t.name != kMetadataKey, ErrorCode::InvalidArgument,
              "write_safetensors: invalid tensor name '", t.name, "'");
    VKD_CHECK(seen.insert(t.name).second, ErrorCode::InvalidArgument, "write_safetensors: tensor '",
              t.name, "' given twice");
    const size_t elem = safetensors_element_size(t.dtype);
    VKD_CHECK(elem != 0, ErrorCode::InvalidArgument, "write_safetensors: tensor '", t.name,
              "': unknown dtype '", t.dtype, "'");
    const int64_t numel =
        checked_numel(t.shape, elem, "write_safetensors: tensor '" + t.name + "': shape");
    VKD_CHECK(t.data.size() == static_cast<uint64_t>(numel) * elem, ErrorCode::InvalidArgument,
              "write_safetensors: tensor '", t.name, "': ", t.data.size(), " bytes of data, but ",
              t.dtype, " ", shape_str(t.shape), " needs ", static_cast<uint64_t>(numel) * elem);
    Json entry = Json::object();
    entry["dtype"] = t.dtype;
    entry["shape"] = t.shape;
    entry["data_offsets"] = {offset, offset + t.data.size()};
    header[t.name] = std::move(entry);
    offset += t.data.size();
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');

  std::vector<uint8_t> out;
  out.reserve(8 + text.size() + offset);
  put_u64_le(out, text.size());
  out.insert(out.end(), text.begin(), text.end());
  for (const SafetensorsTensor& t : tensors) out.insert(out.end(), t.data.begin(), t.data.end());
  return out;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::vector<uint8_t> bytes = serialize_safetensors(tensors, metadata);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  VKD_CHECK(out.good(), ErrorCode::InvalidArgument, "write_safetensors: cannot open '", path,
            "' for writing");
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  VKD_CHECK(!out.fail(), ErrorCode::InvalidArgument, "write_safetensors: writing '", path,
            "' failed");
}

}  // namespace vkd::compiler
