#include "runtime/graph/GraphIO.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/Error.h"
#include "core/HostPacking.h"
#include "core/PackedInt8Layout.h"

namespace vkd::graph {

GraphIO::GraphIO(vk::Context& context, const GraphDefinition& graph)
    : context_(context), graph_(graph) {}

bool GraphIO::staging_is_host_form(ValueRef ref) const {
  return graph::staging_is_host_form(graph_.spec(ref));
}

void GraphIO::create_staging_buffers(GraphMemory& memory) {
  for (const bool input : {true, false}) {
    for (ValueRef ref : input ? graph_.input_refs() : graph_.output_refs()) {
      const GpuTensor& t = graph_.tensor(ref);
      auto& list = input ? inputs_ : outputs_;
      if (memory.direct_io(ref)) {
        list.push_back({ref, {}, true});
      } else {
        list.push_back(
            {ref, context_.memory().create_buffer(
                      t.bytes(), input ? vk::MemoryUse::HostUpload : vk::MemoryUse::HostReadback,
                      std::string(input ? "input" : "output") + " staging for tensor '" + t.name() +
                          "'")});
      }
      memory.add_staging_bytes(staging_buffer(list.back()).size());
    }
  }
  memory.note_load_bytes(0);
}

const GraphIO::Staging& GraphIO::staging_for(const std::vector<Staging>& list, ValueRef ref,
                                             const char* role) const {
  VKD_CHECK(graph_.prepared(), ErrorCode::Internal, "graph used before prepare()");
  for (const auto& s : list) {
    if (s.tensor == ref) return s;
  }
  VKD_THROW(ErrorCode::InvalidArgument, "tensor '", graph_.tensor(ref).name(), "' is not a graph ",
            role);
}

void* GraphIO::input_staging(ValueRef input, size_t bytes) {
  const Staging& s = staging_for(inputs_, input, "input");
  VKD_CHECK(bytes == graph_.tensor(input).bytes(), ErrorCode::Internal, "staging size mismatch");
  return staging_buffer(s).mapped();
}

const void* GraphIO::output_staging(ValueRef output) const {
  const vk::Buffer& b = staging_buffer(staging_for(outputs_, output, "output"));
  b.invalidate();
  return b.mapped();
}

void* GraphIO::staging_data(ValueRef ref) {
  VKD_CHECK(graph_.prepared(), ErrorCode::Internal, "graph used before prepare()");
  for (auto* list : {&inputs_, &outputs_}) {
    for (const auto& s : *list) {
      if (s.tensor == ref) return staging_buffer(s).mapped();
    }
  }
  VKD_THROW(ErrorCode::InvalidArgument, "tensor '", graph_.tensor(ref).name(),
            "' is neither a graph input nor a graph output");
}

template <typename T>
void GraphIO::pack_input(ValueRef input, const T* nchw) {
  const TensorSpec& spec = graph_.tensor(input).spec();
  const int64_t elements = device_element_count(spec.dims4(), spec.storage, spec.layout);
  // Straight into the mapped staging memory.
  auto* staging = static_cast<T*>(input_staging(input, elements * sizeof(T)));
  if (staging_is_host_form(input)) {
    context_.host_copies().copy(staging, nchw, static_cast<size_t>(elements) * sizeof(T));
  } else {
    pack_strided_into(nchw, staging, spec.dims4(), spec.storage, spec.layout);
  }
}

template <typename T>
void GraphIO::unpack_output(ValueRef output, T* nchw) const {
  const TensorSpec& spec = graph_.tensor(output).spec();
  // Straight out of the mapped staging memory.
  const auto* staging = static_cast<const T*>(output_staging(output));
  if (staging_is_host_form(output)) {
    context_.host_copies().copy(nchw, staging, static_cast<size_t>(spec.numel()) * sizeof(T));
  } else {
    unpack_strided_into(staging, nchw, spec.dims4(), spec.storage, spec.layout);
  }
}

void GraphIO::check_ids(ValueRef input, const int32_t* ids) const {
  const std::optional<int64_t> rows = graph_.id_limit(input);
  if (!rows) return;
  const int64_t n = graph_.tensor(input).spec().numel();
  for (int64_t i = 0; i < n; ++i) {
    VKD_CHECK(ids[i] >= 0 && ids[i] < *rows, ErrorCode::InvalidArgument, "input '",
              graph_.tensor(input).name(), "': element ", i, " is ", ids[i],
              ", not a row of the embedding table [0, ", *rows, ")");
  }
}

void GraphIO::flush_input(ValueRef input) {
  const auto& staging = staging_buffer(staging_for(inputs_, input, "input"));
  if (graph_.id_limit(input)) {
    // Token ids the caller wrote in place (NCHW int32): checked before the GPU may read them,
    // from one bulk copy. The staging may be write-combined device memory, where every read
    // is a bus round trip: read id by id, 512 ids took a millisecond on an H200.
    std::vector<int32_t> ids(static_cast<size_t>(graph_.tensor(input).spec().numel()));
    std::memcpy(ids.data(), staging.mapped(), ids.size() * sizeof(int32_t));
    check_ids(input, ids.data());
  }
  staging.flush();
}

void GraphIO::write_float(ValueRef input, const float* nchw, size_t count) {
  const TensorSpec& spec = graph_.tensor(input).spec();
  VKD_CHECK(spec.dtype == DType::Float32 || spec.dtype == DType::Float16,
            ErrorCode::InvalidArgument, "input '", graph_.tensor(input).name(), "' is ",
            to_string(spec.dtype), ", not a float tensor");
  VKD_CHECK(static_cast<int64_t>(count) == spec.numel(), ErrorCode::InvalidArgument, "input '",
            graph_.tensor(input).name(), "' ", spec.describe(), " needs ", spec.numel(),
            " values, got ", count);
  if (spec.dtype == DType::Float32) {
    pack_input(input, nchw);
  } else {
    const int64_t elements = device_element_count(spec.dims4(), spec.storage, spec.layout);
    const auto packed = pack_strided(nchw, spec.dims4(), spec.storage, spec.layout);
    auto* staging = static_cast<uint16_t*>(input_staging(input, elements * sizeof(uint16_t)));
    std::transform(packed.begin(), packed.end(), staging, to_float16);
  }
  flush_input(input);
}

void GraphIO::write_int32(ValueRef input, const int32_t* nchw, size_t count) {
  const TensorSpec& spec = graph_.tensor(input).spec();
  VKD_CHECK(spec.dtype == DType::Int32 && static_cast<int64_t>(count) == spec.numel(),
            ErrorCode::InvalidArgument, "input '", graph_.tensor(input).name(), "' ",
            spec.describe(), " cannot take ", count, " int32 values");
  check_ids(input, nchw);  // from the caller's memory, before anything reaches the staging
  pack_input(input, nchw);
  staging_buffer(staging_for(inputs_, input, "input")).flush();
}

void GraphIO::write_int8(ValueRef input, const int8_t* nchw, size_t count, int8_t pad_value) {
  const TensorSpec& spec = graph_.tensor(input).spec();
  VKD_CHECK(spec.dtype == DType::Int8x4 && static_cast<int64_t>(count) == spec.numel(),
            ErrorCode::InvalidArgument, "input '", graph_.tensor(input).name(), "' ",
            spec.describe(), " cannot take ", count, " int8 values");
  const int64_t words = packed_int8_word_count(spec.layout, spec.dims4());
  auto* staging = static_cast<int32_t*>(input_staging(input, words * sizeof(int32_t)));
  pack_int8_into(nchw, staging, spec.dims4(), spec.layout, pad_value);
  flush_input(input);
}

void GraphIO::write_words(ValueRef input, const std::vector<int32_t>& words) {
  VKD_CHECK(words.size() * 4 == graph_.tensor(input).bytes(), ErrorCode::InvalidArgument, "input '",
            graph_.tensor(input).name(), "' holds ", graph_.tensor(input).bytes() / 4,
            " words, got ", words.size());
  std::memcpy(input_staging(input, words.size() * 4), words.data(), words.size() * 4);
  flush_input(input);
}

void GraphIO::read_float(ValueRef output, float* nchw, size_t count) const {
  const TensorSpec& spec = graph_.tensor(output).spec();
  VKD_CHECK(spec.dtype == DType::Float32 || spec.dtype == DType::Float16,
            ErrorCode::InvalidArgument, "output '", graph_.tensor(output).name(), "' is ",
            to_string(spec.dtype), ", not a float tensor");
  VKD_CHECK(static_cast<int64_t>(count) == spec.numel(), ErrorCode::InvalidArgument, "output '",
            graph_.tensor(output).name(), "' ", spec.describe(), " gives ", spec.numel(),
            " values, not ", count);
  if (spec.dtype == DType::Float32) {
    unpack_output(output, nchw);
    return;
  }
  const void* staging = output_staging(output);
  const int64_t elements = device_element_count(spec.dims4(), spec.storage, spec.layout);
  const auto* half = static_cast<const uint16_t*>(staging);
  std::vector<float> device(static_cast<size_t>(elements));
  std::transform(half, half + elements, device.begin(), from_float16);
  unpack_strided_into(device.data(), nchw, spec.dims4(), spec.storage, spec.layout);
}

void GraphIO::read_int32(ValueRef output, int32_t* nchw, size_t count) const {
  const TensorSpec& spec = graph_.tensor(output).spec();
  VKD_CHECK(spec.dtype == DType::Int32 && static_cast<int64_t>(count) == spec.numel(),
            ErrorCode::InvalidArgument, "output '", graph_.tensor(output).name(), "' ",
            spec.describe(), " cannot give ", count, " int32 values");
  unpack_output(output, nchw);
}

void GraphIO::read_int8(ValueRef output, int8_t* nchw, size_t count) const {
  const TensorSpec& spec = graph_.tensor(output).spec();
  VKD_CHECK(spec.dtype == DType::Int8x4 && static_cast<int64_t>(count) == spec.numel(),
            ErrorCode::InvalidArgument, "output '", graph_.tensor(output).name(), "' ",
            spec.describe(), " cannot give ", count, " int8 values");
  unpack_int8_into(static_cast<const int32_t*>(output_staging(output)), nchw, spec.dims4(),
                   spec.layout);
}

std::vector<float> GraphIO::read_float(ValueRef output) const {
  std::vector<float> out(static_cast<size_t>(graph_.tensor(output).spec().numel()));
  read_float(output, out.data(), out.size());
  return out;
}

std::vector<int32_t> GraphIO::read_int32(ValueRef output) const {
  std::vector<int32_t> out(static_cast<size_t>(graph_.tensor(output).spec().numel()));
  read_int32(output, out.data(), out.size());
  return out;
}

std::vector<int8_t> GraphIO::read_int8(ValueRef output) const {
  std::vector<int8_t> out(static_cast<size_t>(graph_.tensor(output).spec().numel()));
  read_int8(output, out.data(), out.size());
  return out;
}

std::vector<int32_t> GraphIO::read_words(ValueRef output) const {
  const auto* words = static_cast<const int32_t*>(output_staging(output));
  return std::vector<int32_t>(words, words + graph_.tensor(output).bytes() / 4);
}

}  // namespace vkd::graph
