// VkdBackend: vkdelegate as an ExecuTorch backend. A .pte's delegated subgraph carries a
// vkdelegate blob (what `vkd compile` writes); init loads it with vkd::Delegate, execute hands
// ExecuTorch's tensors to it by position, destroy frees it. Registered under "VkdBackend" by a
// static initializer, so loading this library (linking it, or ctypes.CDLL from Python after
// `import executorch.runtime`) is all it takes: both share libexecutorch.so's registry.
//
// Nothing here aborts: the blob is untrusted and the library validates it; every failure is an
// ExecuTorch Error with the library's message logged through ET_LOG.
//
// Token ids: torch.export gives them as int64, the blob holds them as int32 (the compiler
// narrows a graph's int64 ids; docs/DELEGATE_API.md "Token ids": the caller narrows them). So an
// int64 tensor for an int32 input is narrowed here, each id checked to fit int32; whether it is
// a row of the embedding table the library checks in execute(), before the GPU reads it, and
// its message (input, element, id, the table's rows) is logged like any other.
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/exec_aten/util/dim_order_util.h>
#include <executorch/runtime/core/exec_aten/util/scalar_type_util.h>
#include <executorch/runtime/platform/log.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "VkdBackend.h"
#include "vkdelegate/Delegate.hpp"

namespace {

using executorch::aten::ScalarType;
using executorch::aten::Tensor;
using executorch::runtime::ArrayRef;
using executorch::runtime::Backend;
using executorch::runtime::BackendExecutionContext;
using executorch::runtime::BackendInitContext;
using executorch::runtime::BackendInterface;
using executorch::runtime::CompileSpec;
using executorch::runtime::DelegateHandle;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::FreeableBuffer;
using executorch::runtime::Result;
using executorch::runtime::Span;

// The device the last delegate was loaded on (vkd_executorch_device_name).
std::mutex g_device_mutex;
std::string g_device_name;

// What a delegate call keeps between init and destroy: the delegate, and execute()'s views and
// narrowed ids, kept so that an execute after the first allocates nothing.
struct VkdHandle {
  std::unique_ptr<vkd::Delegate> delegate;
  std::vector<vkd::ConstTensorView> inputs;
  std::vector<vkd::TensorView> outputs;
  std::vector<std::vector<int32_t>> narrowed;  // int64 ids as int32, per input
};

// The library's Status as the closest ExecuTorch Error.
Error to_et_error(vkd::Status status) {
  switch (status) {
    case vkd::Status::Ok: return Error::Ok;
    case vkd::Status::InvalidArgument: return Error::InvalidArgument;
    case vkd::Status::Unsupported: return Error::NotSupported;
    case vkd::Status::OutOfMemory: return Error::MemoryAllocationFailed;
    default: return Error::Internal;  // DeviceLost, VulkanFailure, Timeout, Internal
  }
}

// The options every VkdBackend delegate gets: the library's defaults, which read VKD_DEVICE and
// VKD_VALIDATION; no per-dispatch timestamps (ExecuTorch has its own profiling).
vkd::DelegateOptions backend_options() {
  vkd::DelegateOptions options;
  options.profiling = false;
  return options;
}

// The host dtype ExecuTorch's `type` is handed to the library as; int64 (token ids) goes as
// int32, narrowed by narrow_ids.
bool host_dtype_of(ScalarType type, vkd::HostDType* out) {
  switch (type) {
    case ScalarType::Float: *out = vkd::HostDType::Float32; return true;
    case ScalarType::Int: *out = vkd::HostDType::Int32; return true;
    case ScalarType::Long: *out = vkd::HostDType::Int32; return true;
    case ScalarType::Char: *out = vkd::HostDType::Int8; return true;
    default: return false;
  }
}

// Input `index`'s int64 token ids as the int32 the blob holds, into `ids`; an id outside int32
// (so a row of no table the blob can hold) logs one line naming the input, the element and the
// id, and returns false. The table's rows the library checks in execute().
bool narrow_ids(const Tensor& tensor, const vkd::TensorInfo& info, size_t index,
                std::vector<int32_t>* ids) {
  const int64_t* wide = tensor.const_data_ptr<int64_t>();
  ids->resize(static_cast<size_t>(tensor.numel()));
  for (size_t i = 0; i < ids->size(); ++i) {
    if (wide[i] < std::numeric_limits<int32_t>::min() ||
        wide[i] > std::numeric_limits<int32_t>::max()) {
      ET_LOG(Error,
             "VkdBackend: input %zu ('%s'): element %zu is %lld, outside int32, not a row of "
             "the embedding table (the blob holds these ids as int32)",
             index, info.name.c_str(), i, static_cast<long long>(wide[i]));
      return false;
    }
    (*ids)[i] = static_cast<int32_t>(wide[i]);
  }
  return true;
}

std::string sizes_text(const std::vector<int64_t>& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

// Checks that `tensor` is exactly what the delegate's tensor `info` expects (dtype, sizes, a
// contiguous CPU tensor); on a mismatch logs one line naming the tensor and returns false.
bool tensor_matches(const Tensor& tensor, const vkd::TensorInfo& info, bool is_input,
                    size_t index) {
  const char* role = is_input ? "input" : "output";
  std::vector<int64_t> sizes(tensor.sizes().begin(), tensor.sizes().end());
  vkd::HostDType dtype;
  const bool ids = tensor.scalar_type() == ScalarType::Long;  // narrowed: inputs only
  if (!host_dtype_of(tensor.scalar_type(), &dtype) || dtype != info.host_dtype ||
      (ids && !is_input)) {
    ET_LOG(Error, "VkdBackend: %s %zu ('%s'): ExecuTorch dtype %s, the blob expects %s%s", role,
           index, info.name.c_str(), executorch::runtime::toString(tensor.scalar_type()),
           vkd::host_dtype_name(info.host_dtype),
           info.host_dtype == vkd::HostDType::Int32 && is_input ? " (or int64 ids)" : "");
    return false;
  }
  if (sizes != info.sizes) {
    ET_LOG(Error, "VkdBackend: %s %zu ('%s'): ExecuTorch sizes %s, the blob expects %s", role,
           index, info.name.c_str(), sizes_text(sizes).c_str(), sizes_text(info.sizes).c_str());
    return false;
  }
  if (!executorch::runtime::is_contiguous_dim_order(tensor.dim_order().data(), tensor.dim())) {
    ET_LOG(Error, "VkdBackend: %s %zu ('%s') is not contiguous (NCHW)", role, index,
           info.name.c_str());
    return false;
  }
  return true;
}

class VkdBackend final : public BackendInterface {
 public:
  // Available when a Vulkan device can be created. The API has no device query of its own;
  // Delegate::create makes the device before it reads the blob, so an empty blob fails as
  // InvalidArgument exactly when a device was made (no device: Unsupported / VulkanFailure).
  // Asked once per process: ExecuTorch asks for every delegate call it loads.
  bool is_available() const override {
    static const bool available = [] {
      std::unique_ptr<vkd::Delegate> none;
      std::string message;
      const vkd::Status status =
          vkd::Delegate::create(nullptr, 0, backend_options(), &none, &message);
      if (status != vkd::Status::InvalidArgument) {
        ET_LOG(Error, "VkdBackend: no usable Vulkan device: %s", message.c_str());
      }
      return status == vkd::Status::InvalidArgument;
    }();
    return available;
  }

  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* processed,
                               ArrayRef<CompileSpec> /*compile_specs*/) const override {
    std::unique_ptr<vkd::Delegate> delegate;
    std::string message;
    const vkd::Status status = vkd::Delegate::create(processed->data(), processed->size(),
                                                     backend_options(), &delegate, &message);
    processed->Free();  // the delegate holds its own copy of everything it needs
    if (status != vkd::Status::Ok) {
      ET_LOG(Error, "VkdBackend: cannot load the delegate blob: %s (%s)", message.c_str(),
             vkd::status_name(status));
      return to_et_error(status);
    }
    VkdHandle* handle = context.get_runtime_allocator()->allocateInstance<VkdHandle>();
    if (handle == nullptr) {
      ET_LOG(Error, "VkdBackend: out of runtime memory for the delegate handle");
      return Error::MemoryAllocationFailed;
    }
    {
      const std::lock_guard<std::mutex> lock(g_device_mutex);
      g_device_name = delegate->device_name();
    }
    new (handle) VkdHandle();
    handle->delegate = std::move(delegate);
    return handle;
  }

  // `args` holds the delegate call's inputs, then its outputs (already allocated by ExecuTorch's
  // memory plan), in the order the blob lists them.
  Error execute(BackendExecutionContext& /*context*/, DelegateHandle* opaque,
                Span<EValue*> args) const override {
    VkdHandle& handle = *static_cast<VkdHandle*>(opaque);
    vkd::Delegate& delegate = *handle.delegate;
    const size_t n_in = delegate.input_count();
    const size_t n_out = delegate.output_count();
    if (args.size() != n_in + n_out) {
      ET_LOG(Error,
             "VkdBackend: the call passes %zu tensors, the blob has %zu inputs and %zu "
             "outputs",
             args.size(), n_in, n_out);
      return Error::InvalidArgument;
    }
    std::vector<vkd::ConstTensorView>& inputs = handle.inputs;
    std::vector<vkd::TensorView>& outputs = handle.outputs;
    std::vector<std::vector<int32_t>>& narrowed = handle.narrowed;
    inputs.resize(n_in);
    outputs.resize(n_out);
    narrowed.resize(n_in);
    for (size_t i = 0; i < n_in + n_out; ++i) {
      const bool is_input = i < n_in;
      const size_t index = is_input ? i : i - n_in;
      const char* role = is_input ? "input" : "output";
      if (!args[i]->isTensor()) {
        ET_LOG(Error, "VkdBackend: %s %zu is not a tensor", role, index);
        return Error::InvalidArgument;
      }
      Tensor& tensor = args[i]->toTensor();
      const vkd::TensorInfo info = is_input ? delegate.input(index) : delegate.output(index);
      if (!tensor_matches(tensor, info, is_input, index)) return Error::InvalidArgument;
      if (tensor.nbytes() > 0 && tensor.const_data_ptr() == nullptr) {
        ET_LOG(Error,
               "VkdBackend: %s %zu ('%s') has no memory (a .pte that does not plan its "
               "inputs or outputs wants them set before execute)",
               role, index, info.name.c_str());
        return Error::InvalidArgument;
      }
      if (is_input && tensor.scalar_type() == ScalarType::Long) {
        if (!narrow_ids(tensor, info, index, &narrowed[index])) return Error::InvalidArgument;
        inputs[index] = {narrowed[index].data(), narrowed[index].size() * sizeof(int32_t),
                         info.host_dtype, info.sizes};
      } else if (is_input) {
        inputs[index] = {tensor.const_data_ptr(), tensor.nbytes(), info.host_dtype, info.sizes};
      } else {
        outputs[index] = {tensor.mutable_data_ptr(), tensor.nbytes(), info.host_dtype, info.sizes};
      }
    }
    const vkd::Status status = delegate.execute(inputs, outputs);
    if (status != vkd::Status::Ok) {
      ET_LOG(Error, "VkdBackend: execute failed: %s (%s)", delegate.last_error().c_str(),
             vkd::status_name(status));
      return to_et_error(status);
    }
    // Under VKD_VALIDATION=1 a validation message fails the call, as it fails `vkd run`: the
    // layer reports what the driver may silently get wrong.
    if (delegate.validation_message_count() > 0) {
      ET_LOG(Error, "VkdBackend: %llu Vulkan validation message(s) (VKD_VALIDATION=1)",
             static_cast<unsigned long long>(delegate.validation_message_count()));
      return Error::Internal;
    }
    return Error::Ok;
  }

  // The handle's memory belongs to ExecuTorch's runtime allocator: only run the destructor.
  void destroy(DelegateHandle* opaque) const override {
    if (opaque != nullptr) static_cast<VkdHandle*>(opaque)->~VkdHandle();
  }
};

VkdBackend g_backend;
const Backend g_entry{"VkdBackend", &g_backend};
const Error g_registration = executorch::runtime::register_backend(g_entry);

}  // namespace

extern "C" int vkd_executorch_registration_error(void) { return static_cast<int>(g_registration); }

extern "C" const char* vkd_executorch_device_name(void) {
  const std::lock_guard<std::mutex> lock(g_device_mutex);
  return g_device_name.c_str();
}
