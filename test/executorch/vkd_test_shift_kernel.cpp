// ExecuTorch's CPU kernel for vkd_test::shift.out (out = x + amount, float32): the custom op of
// test/python/cli_models.py, which no vkdelegate table knows, so a .pte leaves it between two
// VkdBackend delegates and ExecuTorch's runtime runs it here. Registered by a static initializer
// when the library is loaded: `vkd_et_runner --kernels`, or ctypes.CDLL from Python after
// `import executorch.runtime` (the registry lives in the libexecutorch both share).
#include <executorch/runtime/kernel/kernel_runtime_context.h>
#include <executorch/runtime/kernel/operator_registry.h>
#include <executorch/runtime/platform/log.h>

namespace {

using executorch::aten::ScalarType;
using executorch::aten::Tensor;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::Kernel;
using executorch::runtime::KernelRuntimeContext;
using executorch::runtime::Span;

// `stack`: x, amount, out, then the returned out (the schema's arguments, then its result).
void shift_out(KernelRuntimeContext& context, Span<EValue*> stack) {
  if (stack.size() < 3 || !stack[0]->isTensor() || !stack[1]->isDouble() || !stack[2]->isTensor()) {
    ET_LOG(Error, "vkd_test::shift.out: expected (Tensor x, float amount, Tensor out)");
    return context.fail(Error::InvalidArgument);
  }
  const Tensor& x = stack[0]->toTensor();
  Tensor& out = stack[2]->toTensor();
  if (x.scalar_type() != ScalarType::Float || out.scalar_type() != ScalarType::Float ||
      x.numel() != out.numel()) {
    ET_LOG(Error, "vkd_test::shift.out: x and out must be float32 tensors of one size");
    return context.fail(Error::InvalidArgument);
  }
  // As PyTorch's x + amount on a float32 tensor: the scalar rounded to float32 first.
  const float amount = static_cast<float>(stack[1]->toDouble());
  const float* in = x.const_data_ptr<float>();
  float* result = out.mutable_data_ptr<float>();
  for (ssize_t i = 0; i < x.numel(); ++i) result[i] = in[i] + amount;
}

const Kernel kShift("vkd_test::shift.out", shift_out);
const Error kRegistration = executorch::runtime::register_kernel(kShift);

}  // namespace
