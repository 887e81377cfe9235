"""vkdelegate as an ExecuTorch backend:

    from vkdelegate.executorch import VkdPartitioner
    ep = torch.export.export(quantized_model, example_inputs)
    et = to_edge_transform_and_lower(ep, partitioner=[VkdPartitioner()]).to_executorch()

VkdPartitioner delegates what `vkd compile` accepts; VkdBackend.preprocess compiles each
delegated partition into a vkdelegate blob. Importing this module registers VkdBackend with
ExecuTorch's lowering (it looks backends up among BackendDetails' subclasses by name) and, where
libvkd_executorch.so is built, with ExecuTorch's runtime in this process (executorch.runtime
then runs such a .pte). Without the library, lowering still works: a RuntimeWarning says why
running will not, and RUNTIME_BACKEND_ERROR holds the reason."""
import warnings

from .backend import VkdBackend
from .compiler_check import VkdLoweringError
from .partitioner import VkdPartitioner
from .runtime_library import load_runtime_backend

try:
    _runtime_backend = load_runtime_backend()
    RUNTIME_BACKEND_ERROR = None
except (ImportError, OSError, RuntimeError) as e:  # RuntimeError: LibraryNotFoundError
    _runtime_backend, RUNTIME_BACKEND_ERROR = None, str(e)
if RUNTIME_BACKEND_ERROR:
    warnings.warn("vkdelegate.executorch: VkdBackend is not registered with ExecuTorch's "
                  f"runtime ({RUNTIME_BACKEND_ERROR}); lowering to .pte works, running one "
                  "through executorch.runtime does not", RuntimeWarning, stacklevel=2)

__all__ = ["RUNTIME_BACKEND_ERROR", "VkdBackend", "VkdLoweringError", "VkdPartitioner"]
