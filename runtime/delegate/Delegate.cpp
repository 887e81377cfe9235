// vkd::Delegate (Delegate.hpp): the API boundary. Everything below throws vkd::Error; here
// every exception becomes a Status plus a message kept on the handle.
#include "vkdelegate/Delegate.hpp"

#include <chrono>
#include <list>
#include <mutex>
#include <new>
#include <optional>
#include <sstream>

#include "core/DeviceClass.h"
#include "core/Error.h"
#include "core/TensorSpec.h"
#include "runtime/delegate/ApiBoundary.h"
#include "runtime/delegate/GraphLoader.h"
#include "runtime/vk/Context.h"
#include "serialization/GraphAtLength.h"

namespace vkd {
namespace {

using api::guarded;

HostDType host_dtype_of(DType dtype) {
  switch (dtype) {
    case DType::Float32:
    case DType::Float16: return HostDType::Float32;
    case DType::Int32: return HostDType::Int32;
    case DType::Int8x4: return HostDType::Int8;
    case DType::Int8: break;
  }
  VKD_THROW(ErrorCode::Unsupported, "graph inputs/outputs of dtype ", to_string(dtype),
            " are not supported (use int8x4 for quantized tensors)");
}

TensorInfo info_of(const delegate::GraphIO& io) {
  TensorInfo info;
  info.name = io.name;
  info.named = io.named;
  info.sizes = io.spec.sizes;
  info.host_dtype = host_dtype_of(io.spec.dtype);
  info.device_dtype = std::string(to_string(io.spec.dtype));
  info.storage = std::string(to_string(io.spec.storage));
  info.layout = std::string(to_string(io.spec.layout));
  return info;
}

}  // namespace

const char* status_name(Status status) {
  switch (status) {
    case Status::Ok: return "ok";
    case Status::InvalidArgument: return "invalid argument";
    case Status::Unsupported: return "unsupported";
    case Status::OutOfMemory: return "out of memory";
    case Status::DeviceLost: return "device lost";
    case Status::VulkanFailure: return "Vulkan failure";
    case Status::Internal: return "internal error";
    case Status::Timeout: return "timeout";
  }
  return "unknown status";
}

const char* host_dtype_name(HostDType dtype) {
  switch (dtype) {
    case HostDType::Float32: return "float32";
    case HostDType::Int32: return "int32";
    case HostDType::Int8: return "int8";
  }
  return "unknown dtype";
}

size_t host_dtype_size(HostDType dtype) {
  switch (dtype) {
    case HostDType::Float32:
    case HostDType::Int32: return 4;
    case HostDType::Int8: return 1;
  }
  return 0;
}

// Hidden: Impl is nested in an exported class but is not part of the API.
struct __attribute__((visibility("hidden"))) Delegate::Impl {
  DelegateOptions options;
  std::unique_ptr<vk::Context> context;
  delegate::LoadedGraph loaded;
  std::vector<TensorInfo> inputs, outputs;

  mutable std::mutex mutex;  // serializes every call on one handle
  std::string last_error;
  bool device_lost = false;
  std::vector<NodeProfile> profile;
  ExecuteProfile execute_profile;
  bool profiling = false;  // this run records timestamps (options.profiling, set_profiling())

  // A blob with a dynamic length (issue 35): its bytes (every length's constants are views into
  // them), the graph as read, and the graphs of the shorter lengths run lately, each built as
  // the blob of that length would be (serialization/GraphAtLength.h), most recent first.
  struct AtLength {
    int64_t length = 0;
    delegate::LoadedGraph loaded;
    std::vector<TensorInfo> inputs, outputs;
  };
  static constexpr size_t kKeptLengths = 4;
  std::vector<uint8_t> blob;
  std::optional<serialization::DeserializedGraph> definition;
  // What every length's graph shares: the constants uploaded once, the maximum's intermediates.
  std::shared_ptr<graph::SharedGraphMemory> shared_memory;
  std::list<AtLength> shorter;
  std::optional<graph::ComputeGraph::ExecutionTiming> timing;  // set_profiling's, for each

  AtLength& at_length(int64_t length);
  int64_t length_of(const std::vector<std::vector<int64_t>>& sizes) const;
  void run(const std::vector<ConstTensorView>& in, const std::vector<TensorView>& out);
  Status staging_view(bool input, size_t index, TensorView* view);
  std::string describe() const;
};

namespace {

// Microseconds since `t0`; restarts `t0` at now (consecutive phases share their boundaries).
double lap_us(std::chrono::steady_clock::time_point& t0) {
  const auto t1 = std::chrono::steady_clock::now();
  const double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  t0 = t1;
  return us;
}

}  // namespace

int64_t Delegate::Impl::length_of(const std::vector<std::vector<int64_t>>& sizes) const {
  VKD_CHECK(definition.has_value(), ErrorCode::InvalidArgument,
            "the model was compiled for fixed shapes (no dynamic length)");
  std::vector<std::string> names;
  for (const auto& info : inputs) names.push_back(info.name);
  return serialization::length_of_inputs(*definition, sizes, names);
}

Delegate::Impl::AtLength& Delegate::Impl::at_length(int64_t length) {
  for (auto it = shorter.begin(); it != shorter.end(); ++it) {
    if (it->length != length) continue;
    shorter.splice(shorter.begin(), shorter, it);
    return shorter.front();
  }
  AtLength made;
  made.length = length;
  made.loaded = delegate::load_graph(*context, serialization::graph_at_length(*definition, length),
                                     options.constant_batch_bytes, options.expose_intermediates,
                                     options.profiling, shared_memory);
  if (timing) made.loaded.graph->set_execution_timing(*timing);
  for (const auto& io : made.loaded.inputs) made.inputs.push_back(info_of(io));
  for (const auto& io : made.loaded.outputs) made.outputs.push_back(info_of(io));
  // Names as the maximum's graph gives them (the same blob: the same names).
  shorter.push_front(std::move(made));
  if (shorter.size() > kKeptLengths) shorter.pop_back();
  return shorter.front();
}

void Delegate::Impl::run(const std::vector<ConstTensorView>& in,
                         const std::vector<TensorView>& out) {
  const auto start = std::chrono::steady_clock::now();
  execute_profile = {};
  VKD_CHECK(!device_lost, ErrorCode::DeviceLost,
            "the device was lost in an earlier call; destroy this delegate and create a new one");
  // Checked before the inputs are written: the timed-out run may still read their staging.
  VKD_CHECK(!context->timed_out(), ErrorCode::Timeout, "an earlier execute did not finish within ",
            options.gpu_timeout_ms,
            " ms (gpu_timeout_ms); destroy this delegate and create a new one");
  VKD_CHECK(in.size() == inputs.size(), ErrorCode::InvalidArgument, "the model takes ",
            inputs.size(), " inputs, got ", in.size());
  VKD_CHECK(out.size() == outputs.size(), ErrorCode::InvalidArgument, "the model gives ",
            outputs.size(), " outputs, got ", out.size());
  // A dynamic-length blob runs the graph of the length its inputs give.
  delegate::LoadedGraph* use = &loaded;
  const std::vector<TensorInfo>* use_inputs = &inputs;
  const std::vector<TensorInfo>* use_outputs = &outputs;
  if (definition) {
    std::vector<std::vector<int64_t>> sizes;
    for (const auto& view : in) sizes.push_back(view.sizes);
    const int64_t length = length_of(sizes);
    if (length != definition->dynamic->max) {
      AtLength& at = at_length(length);
      use = &at.loaded;
      use_inputs = &at.inputs;
      use_outputs = &at.outputs;
    }
    for (size_t i = 0; i < out.size(); ++i) {
      const TensorInfo& info = (*use_outputs)[i];
      VKD_CHECK(out[i].sizes == info.sizes, ErrorCode::InvalidArgument, "output ", i, " '",
                info.name, "' has shape ", sizes_string(out[i].sizes), "; at the inputs' length ",
                serialization::length_name(*definition->dynamic), " = ", length,
                " the model gives ", sizes_string(info.sizes));
    }
  }
  for (size_t i = 0; i < in.size(); ++i) {
    api::check_view("input", i, (*use_inputs)[i], in[i], use->ops_without_resize);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    api::check_view("output", i, (*use_outputs)[i], out[i], use->ops_without_resize);
  }
  const delegate::LoadedGraph& loaded = *use;
  const std::vector<TensorInfo>& inputs = *use_inputs;
  const std::vector<TensorInfo>& outputs = *use_outputs;
  graph::ComputeGraph& graph = *loaded.graph;
  ExecuteProfile times;
  auto t = std::chrono::steady_clock::now();
  for (size_t i = 0; i < in.size(); ++i) {
    const graph::ValueRef ref = loaded.inputs[i].ref;
    const size_t n = inputs[i].numel();
    if (in[i].data == graph.staging_data(ref)) {  // a staging view: already in place
      graph.flush_input(ref);
      continue;
    }
    switch (in[i].dtype) {
      case HostDType::Float32:
        graph.write_float(ref, static_cast<const float*>(in[i].data), n);
        break;
      case HostDType::Int32:
        graph.write_int32(ref, static_cast<const int32_t*>(in[i].data), n);
        break;
      case HostDType::Int8:
        graph.write_int8(ref, static_cast<const int8_t*>(in[i].data), n,
                         static_cast<int8_t>(graph.zero_point(ref).value_or(0)));
        break;
    }
  }
  times.input_copy_us = lap_us(t);
  graph.execute();
  times.submit_wait_us = lap_us(t);
  for (size_t i = 0; i < out.size(); ++i) {
    // Unpacked straight from the mapped staging memory into the caller's.
    const graph::ValueRef ref = loaded.outputs[i].ref;
    const size_t n = outputs[i].numel();
    if (out[i].data == graph.staging_data(ref)) {  // a staging view: the caller reads in place
      graph.invalidate_output(ref);
      continue;
    }
    switch (out[i].dtype) {
      case HostDType::Float32: graph.read_float(ref, static_cast<float*>(out[i].data), n); break;
      case HostDType::Int32: graph.read_int32(ref, static_cast<int32_t*>(out[i].data), n); break;
      case HostDType::Int8: graph.read_int8(ref, static_cast<int8_t*>(out[i].data), n); break;
    }
  }
  times.output_copy_us = lap_us(t);
  // Reading the queries is bookkeeping after the inference, outside the host wall.
  times.host_wall_us = std::chrono::duration<double, std::micro>(t - start).count();
  profile.clear();
  if (profiling) {
    for (const auto& n : graph.last_timings()) {
      profile.push_back({n.op, n.kernel, n.tensors, n.gpu_us});
      times.gpu_total_us += n.gpu_us;
    }
    times.gpu_span_us = graph.last_gpu_span_us();
    const auto copies = graph.last_copy_times();
    times.gpu_input_copy_us = copies.inputs_us;
    times.gpu_output_copy_us = copies.outputs_us;
  }
  execute_profile = times;
}

std::string Delegate::Impl::describe() const {
  const graph::ComputeGraph& graph = *loaded.graph;
  std::ostringstream os;
  os << "device: " << context->profile().name << "\n";
  os << "tensors (" << graph.tensor_count() << "):\n";
  for (size_t i = 0; i < graph.tensor_count(); ++i) {
    const auto ref = static_cast<graph::ValueRef>(i);
    const graph::GpuTensor& t = graph.tensor(ref);
    os << "  %" << i << " " << t.name() << " " << t.spec().describe() << ", "
       << vk::format_bytes(t.bytes());
    if (graph.is_constant(ref)) os << ", constant";
    if (const auto zp = graph.zero_point(ref)) os << ", zero point " << *zp;
    os << "\n";
  }
  auto io_list = [&](const char* title, const std::vector<delegate::GraphIO>& list) {
    os << title << ":";
    for (const auto& io : list) os << " " << io.name << "=%" << io.ref;
    os << "\n";
  };
  io_list("inputs", loaded.inputs);
  io_list("outputs", loaded.outputs);
  os << "op calls (" << loaded.ops.size() << "):\n";
  const auto& nodes = graph.nodes();
  for (size_t k = 0; k < loaded.ops.size(); ++k) {
    const auto& op = loaded.ops[k];
    os << "  [" << k << "] " << op.name << "(";
    for (size_t a = 0; a < op.args.size(); ++a) os << (a ? ", " : "") << op.args[a];
    os << ")\n";
    for (size_t n = op.first_node; n < op.first_node + op.node_count; ++n) {
      os << "      node " << n << (graph.barrier_before(n) ? " (after a barrier)" : "")
         << ": kernel " << shaders::shader_info(nodes[n].kernel).name << ", "
         << nodes[n].plan.group_count[0] << "x" << nodes[n].plan.group_count[1] << "x"
         << nodes[n].plan.group_count[2] << " workgroups of " << nodes[n].plan.local_size[0] << "x"
         << nodes[n].plan.local_size[1] << "x" << nodes[n].plan.local_size[2] << "; "
         << graph.describe_node(n) << "\n";
    }
  }
  os << "barriers between dispatch nodes: " << graph.barrier_count() << " of "
     << (nodes.empty() ? 0 : nodes.size() - 1)
     << " (only before a node that touches memory written, or writes memory read, since the last "
        "one)\n";
  os << "ways down (" << graph.ways_down().size() << ")"
     << (graph.ways_down().empty() ? ": none, every kernel fits the device\n" : ":\n");
  for (const std::string& line : graph.ways_down()) os << "  " << line << "\n";
  const auto& m = graph.memory_stats();
  os << "memory: constants " << vk::format_bytes(m.constant_host_bytes) << " in the blob, "
     << vk::format_bytes(m.constant_device_bytes) << " on the device; inputs+outputs "
     << vk::format_bytes(m.io_device_bytes) << "; intermediates planned "
     << vk::format_bytes(m.intermediate_planned_bytes) << " (" << m.intermediate_planned_bytes
     << " B) vs naive " << vk::format_bytes(m.intermediate_naive_bytes) << " ("
     << m.intermediate_naive_bytes << " B); device total " << vk::format_bytes(m.device_bytes)
     << "; staging " << vk::format_bytes(m.staging_bytes) << "; peak during load "
     << vk::format_bytes(m.load_peak_bytes) << "\n";
  return os.str();
}

Delegate::Delegate(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Delegate::~Delegate() = default;

Status Delegate::create(const void* blob, size_t size, const DelegateOptions& options,
                        std::unique_ptr<Delegate>* out, std::string* error) {
  return api::create_guarded(out, error, "Delegate::create", [&] {
    VKD_CHECK(blob != nullptr || size == 0, ErrorCode::InvalidArgument,
              "Delegate::create: blob is null");
    VKD_CHECK(options.gpu_timeout_ms > 0, ErrorCode::InvalidArgument,
              "Delegate::create: gpu_timeout_ms is 0; give the longest a GPU wait may take, in "
              "milliseconds (default 120000)");
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    vk::ContextOptions ctx = vk::ContextOptions::from_env();
    if (!options.device.empty()) ctx.device_selector = options.device;
    if (!options.device_class.empty()) {
      ctx.overrides.device_class = find_device_class(options.device_class);
      VKD_CHECK(ctx.overrides.device_class != nullptr, ErrorCode::InvalidArgument,
                "Delegate::create: unknown device class '", options.device_class,
                "'; the classes are: ", device_class_names());
    }
    ctx.validation = ctx.validation || options.validation;
    if (!options.pipeline_cache_file.empty()) ctx.pipeline_cache_file = options.pipeline_cache_file;
    ctx.gpu_timeout = std::chrono::milliseconds(options.gpu_timeout_ms);
    impl->context = std::make_unique<vk::Context>(ctx);
    const auto* bytes = static_cast<const uint8_t*>(blob);
    serialization::DeserializedGraph read = delegate::read_blob(bytes, size);
    if (read.dynamic) {  // kept to build other lengths later: read again from its own copy
      impl->blob.assign(bytes, bytes + size);
      impl->definition = delegate::read_blob(impl->blob.data(), impl->blob.size());
      impl->shared_memory = std::make_shared<graph::SharedGraphMemory>();
    }
    impl->loaded = delegate::load_graph(*impl->context, impl->definition ? *impl->definition : read,
                                        options.constant_batch_bytes, options.expose_intermediates,
                                        options.profiling, impl->shared_memory);
    impl->profiling = options.profiling;
    for (const auto& io : impl->loaded.inputs) impl->inputs.push_back(info_of(io));
    for (const auto& io : impl->loaded.outputs) impl->outputs.push_back(info_of(io));
    return std::unique_ptr<Delegate>(new Delegate(std::move(impl)));
  });
}

size_t Delegate::input_count() const { return impl_->inputs.size(); }
size_t Delegate::output_count() const { return impl_->outputs.size(); }

TensorInfo Delegate::input(size_t index) const {
  return index < impl_->inputs.size() ? impl_->inputs[index] : TensorInfo{};
}

TensorInfo Delegate::output(size_t index) const {
  return index < impl_->outputs.size() ? impl_->outputs[index] : TensorInfo{};
}

Status Delegate::execute(const std::vector<ConstTensorView>& inputs,
                         const std::vector<TensorView>& outputs) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const Status status = guarded(impl_->last_error, [&] { impl_->run(inputs, outputs); });
  if (status == Status::DeviceLost) impl_->device_lost = true;
  return status;
}

Status Delegate::Impl::staging_view(bool input, size_t index, TensorView* view) {
  return guarded(last_error, [&] {
    const char* role = input ? "input" : "output";
    const auto& list = input ? inputs : outputs;
    VKD_CHECK(view != nullptr, ErrorCode::InvalidArgument, "staging_", role, ": view is null");
    VKD_CHECK(index < list.size(), ErrorCode::InvalidArgument, "staging_", role, ": index ", index,
              " out of range (the model has ", list.size(), " ", role, "s)");
    const TensorInfo& info = list[index];
    const graph::ValueRef ref = (input ? loaded.inputs : loaded.outputs)[index].ref;
    VKD_CHECK(loaded.graph->staging_is_host_form(ref), ErrorCode::Unsupported, "staging_", role,
              ": ", role, " ", index, " ('", info.name, "') is ", info.device_dtype, " ",
              info.storage, " ", info.layout,
              " on the device, not contiguous NCHW float32/int32: its staging is not its host "
              "form, so it is copied (packed) by execute()");
    view->data = loaded.graph->staging_data(ref);
    view->bytes = info.host_bytes();
    view->dtype = info.host_dtype;
    view->sizes = info.sizes;
  });
}

Status Delegate::staging_input(size_t index, TensorView* view) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->staging_view(true, index, view);
}

Status Delegate::staging_output(size_t index, TensorView* view) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->staging_view(false, index, view);
}

Status Delegate::set_profiling(Profiling mode) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return guarded(impl_->last_error, [&] {
    const bool on = mode != Profiling::Off;
    VKD_CHECK(!on || impl_->options.profiling, ErrorCode::InvalidArgument, "set_profiling(",
              mode == Profiling::Span ? "Span" : "PerDispatch",
              "): the delegate was created with options.profiling off, so its execution records "
              "no timestamps");
    using Timing = graph::ComputeGraph::ExecutionTiming;
    const Timing timing = mode == Profiling::Span          ? Timing::Span
                          : mode == Profiling::PerDispatch ? Timing::PerDispatch
                                                           : Timing::Off;
    impl_->loaded.graph->set_execution_timing(timing);
    for (auto& at : impl_->shorter) at.loaded.graph->set_execution_timing(timing);
    impl_->timing = timing;
    impl_->profiling = on;
  });
}

Delegate::LengthRange Delegate::length_range() const {
  LengthRange r;
  if (impl_->definition) {
    const auto& d = *impl_->definition->dynamic;
    r.name = serialization::length_name(d);
    r.min = d.min;
    r.max = d.max;
  }
  return r;
}

Status Delegate::length_of_inputs(const std::vector<std::vector<int64_t>>& input_sizes,
                                  int64_t* length) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return guarded(impl_->last_error, [&] {
    VKD_CHECK(length != nullptr, ErrorCode::InvalidArgument, "length_of_inputs: length is null");
    *length = impl_->length_of(input_sizes);
  });
}

Status Delegate::infos_at_length(int64_t length, std::vector<TensorInfo>* inputs,
                                 std::vector<TensorInfo>* outputs) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return guarded(impl_->last_error, [&] {
    VKD_CHECK(inputs != nullptr && outputs != nullptr, ErrorCode::InvalidArgument,
              "infos_at_length: inputs or outputs is null");
    VKD_CHECK(impl_->definition.has_value(), ErrorCode::InvalidArgument,
              "infos_at_length: the model was compiled for fixed shapes (no dynamic length)");
    if (length == impl_->definition->dynamic->max) {
      *inputs = impl_->inputs;
      *outputs = impl_->outputs;
      return;
    }
    const Impl::AtLength& at = impl_->at_length(length);
    *inputs = at.inputs;
    *outputs = at.outputs;
  });
}

std::string Delegate::last_error() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->last_error;
}

std::vector<NodeProfile> Delegate::last_profile() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->profile;
}

ExecuteProfile Delegate::last_execute_profile() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->execute_profile;
}

MemoryReport Delegate::memory() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const auto& m = impl_->loaded.graph->memory_stats();
  MemoryReport r;
  r.constant_bytes = m.constant_host_bytes;
  r.constant_device_bytes = m.constant_device_bytes;
  r.io_device_bytes = m.io_device_bytes;
  r.intermediate_naive_bytes = m.intermediate_naive_bytes;
  r.intermediate_planned_bytes = m.intermediate_planned_bytes;
  r.device_bytes = m.device_bytes;
  r.staging_bytes = m.staging_bytes;
  r.load_peak_bytes = m.load_peak_bytes;
  // The graphs of the shorter lengths held now: only what each allocated itself (the constants
  // and intermediates they share with the maximum's graph are counted there, once).
  for (const auto& at : impl_->shorter) {
    const auto& s = at.loaded.graph->memory_stats();
    r.constant_device_bytes += s.constant_device_bytes;
    r.io_device_bytes += s.io_device_bytes;
    r.device_bytes += s.device_bytes;
    r.staging_bytes += s.staging_bytes;
  }
  return r;
}

std::string Delegate::device_name() const { return impl_->context->profile().name; }

uint64_t Delegate::validation_message_count() const {
  const auto& log = impl_->context->instance().validation_log();
  return uint64_t{log.error_count()} + log.warning_count();
}

std::vector<std::string> Delegate::ways_down() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->loaded.graph->ways_down();
}

std::string Delegate::describe() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::string text, message;
  guarded(message, [&] { text = impl_->describe(); });
  return message.empty() ? text : "describe failed: " + message;
}

}  // namespace vkd
