"""vkdelegate as an ExecuTorch backend, ahead of time:

    from vkdelegate.executorch import VkdPartitioner
    ep = torch.export.export(quantized_model, example_inputs)
    et = to_edge_transform_and_lower(ep, partitioner=[VkdPartitioner()]).to_executorch()

VkdPartitioner delegates what `vkd compile` accepts; VkdBackend.preprocess compiles each
delegated partition into a vkdelegate blob. Importing this module registers VkdBackend with
ExecuTorch's lowering (it looks backends up among BackendDetails' subclasses by name)."""
from .backend import VkdBackend
from .compiler_check import VkdLoweringError
from .partitioner import VkdPartitioner

__all__ = ["VkdBackend", "VkdLoweringError", "VkdPartitioner"]
