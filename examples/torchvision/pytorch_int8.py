"""PyTorch's own int8 execution of a converted PT2E model: ExecuTorch's XNNPACK backend.

In the PT2E world the graph convert_pt2e makes is a reference model (float ATen ops between
quantize / dequantize); what runs it in int8 is a backend that lowers the q/dq patterns to
integer kernels. run() exports the very converted model again, lowers it with ExecuTorch's
XnnpackPartitioner (to_edge_transform_and_lower), serializes it and runs it with ExecuTorch's
runtime, as a user of PyTorch on a CPU would. The program also returns every int8 tensor the
model quantizes (each quantize node's output, as `vkd run --intermediates` does for the
device), so the same lowering can be compared with the reference model layer by layer. It
says which ops XNNPACK took and which ran on ExecuTorch's portable kernels.
"""
import collections
import copy
import operator
import re
from time import perf_counter

import torch
import torch.fx


class Int8Run:
    """One run: `output` (numpy), `intermediates` ({quantize node name: int8 numpy array}),
    `delegated` / `portable` ({op name: count}, q/dq included) and `lower_s`, the seconds
    export + lowering + serialization took."""

    def __init__(self, output, intermediates, delegated, portable, lower_s):
        self.output = output
        self.intermediates = intermediates
        self.delegated = delegated
        self.portable = portable
        self.lower_s = lower_s

    def describe(self):
        """'XNNPACK: convolution x52, ...; portable kernels: none' (q/dq ops left out)."""
        def ops(counts):
            shown = {k: v for k, v in counts.items() if "quantize" not in k}
            return ", ".join(f"{k} x{v}" for k, v in sorted(shown.items())) or "none"
        return f"XNNPACK: {ops(self.delegated)}; portable kernels: {ops(self.portable)}"


def run(converted, inputs):
    """Int8Run of `converted` (a convert_pt2e GraphModule with one output, left untouched) on
    `inputs` (a tuple of tensors) through ExecuTorch's XNNPACK delegate. Raises whatever
    ExecuTorch raises when it cannot lower or run the model (the caller says so)."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
    from executorch.runtime import Runtime

    t = perf_counter()
    module, kept = with_quantized_outputs(converted)
    exported = torch.export.export(module, tuple(inputs))
    # no edge IR validity check: ExecuTorch's own lowering of its own ops (15% of the time)
    lowered = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()],
                                          compile_config=EdgeCompileConfig(
                                              _check_ir_validity=False))
    delegated, portable = ops_by_kernel(lowered.exported_program().graph_module)
    buffer = lowered.to_executorch().buffer
    lower_s = perf_counter() - t
    program = Runtime.get().load_program(buffer)  # kept alive while its method runs
    outputs = program.load_method("forward").execute(list(inputs))
    if len(outputs) != 1 + len(kept):
        raise RuntimeError(f"expected {1 + len(kept)} outputs, the ExecuTorch program "
                           f"returned {len(outputs)}")
    intermediates = {name: int8(t, dtype) for (name, dtype), t in zip(kept, outputs[1:])}
    return Int8Run(outputs[0].numpy(), intermediates, delegated, portable, lower_s)


# Ops that only move or select bytes: the quantize after one re-quantizes the values of an
# earlier quantize with its parameters (VkdQuantizer shares them), rounding nothing new.
BYTE_MOVES = {"view", "_unsafe_view", "reshape", "flatten", "squeeze", "unsqueeze", "permute",
              "transpose", "t", "clone", "contiguous", "dropout", "feature_dropout",
              "alpha_dropout", "feature_alpha_dropout", "pixel_shuffle", "pixel_unshuffle",
              "getitem"}


def with_quantized_outputs(converted):
    """A copy of `converted` that returns its output followed by the tensor of every per-tensor
    quantize of a computed value, and [(quantize node name, its dtype)] in that order. The
    quantizes after BYTE_MOVES are left out: they round nothing, and returning them all makes
    XNNPACK refuse the program when a partition would only pass one through ("Output node ...
    is already in the inputs": a ShuffleNet's channel shuffle and split)."""
    module = copy.deepcopy(converted)
    graph = module.graph
    kept = [n for n in graph.nodes if n.op == "call_function" and
            str(n.target).startswith("quantized_decomposed.quantize_per_tensor.") and
            op_name(getattr(n.args[0], "target", None)) not in BYTE_MOVES]
    output = next(n for n in graph.nodes if n.op == "output")
    leaves = output.args[0] if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    if len(leaves) != 1:
        raise RuntimeError(f"the model returns {len(leaves)} outputs; this comparison takes one")
    output.args = ((leaves[0], *kept),)
    graph._codegen = torch.fx.graph.CodeGen()  # a flat tuple out, not the model's structure
    for node in graph.nodes:
        # the provenance chains of export + prepare + convert, which every pass of the
        # lowering deep-copies into each node it makes (a tenth of its time on these models)
        node.meta.pop("from_node", None)
    module.recompile()
    return module, [(n.name, n.args[5]) for n in kept]


def int8(tensor, dtype):
    """A quantize's tensor on the graph IR's int8 scale (PyTorch's uint8 shifted by 128)."""
    return (tensor.to(torch.int32) - (128 if dtype == torch.uint8 else 0)).numpy().astype("int8")


def ops_by_kernel(graph_module):
    """({op: count} inside the XNNPACK delegate calls, {op: count} left to the portable
    kernels) of a lowered edge graph."""
    delegated, portable = collections.Counter(), collections.Counter()
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or "getitem" in str(node.target):
            continue
        if "executorch_call_delegate" in str(node.target):
            inner = getattr(graph_module, node.args[0].target).original_module.graph_module
            for op in inner.graph.nodes:
                if op.op == "call_function" and "getitem" not in str(op.target):
                    delegated[op_name(op.target)] += 1
        else:
            portable[op_name(node.target)] += 1
    return dict(delegated), dict(portable)


def op_name(target):
    """'convolution' for aten.convolution.default or its edge op (which prints as
    '<EdgeOpOverload: aten.convolution.default>: schema = ...'), 'quantize_per_tensor' for
    quantized_decomposed.quantize_per_tensor.default, 'getitem' for operator.getitem; anything
    else as it prints."""
    if target is operator.getitem:
        return "getitem"
    text = str(target)
    edge = re.match(r"<EdgeOpOverload: ([\w.]+)>", text)
    parts = (edge.group(1) if edge else text).split(".")
    return parts[1] if len(parts) == 3 else text
