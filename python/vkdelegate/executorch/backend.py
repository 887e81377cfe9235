"""VkdBackend: ExecuTorch's ahead-of-time half of the backend. preprocess walks one delegated
partition into the graph IR (the exporter's walk) and compiles it with the project's `vkd`;
the blob it returns is the delegate payload the runtime half (executorch_backend/) loads."""
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult

from .compiler_check import VkdLoweringError, compile_program


class VkdBackend(BackendDetails):
    """ExecuTorch finds a backend by its class name among BackendDetails' direct subclasses:
    the name VkdBackend is the delegate id in the .pte and in the runtime's registry."""

    @staticmethod
    def preprocess(edge_program, compile_specs):
        compiled = compile_program(edge_program, name="partition")
        if compiled.blob is None:
            # The partitioner's verdict came from the whole program; a partition compiled alone
            # can still fail (a fusion that crossed a CPU node): stop, naming the node.
            named = "; ".join(f"node '{name}' ({why})" for name, why in compiled.refused.items())
            raise VkdLoweringError(
                "VkdBackend: vkd compile refused a partition VkdPartitioner accepted: "
                + (named or compiled.messages))
        return PreprocessResult(processed_bytes=compiled.blob)
